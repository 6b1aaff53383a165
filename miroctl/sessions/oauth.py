"""OAuth 2.1 for HTTP and SSE servers, on the mcp SDK's client auth (authorization code + PKCE, dynamic client
registration or a client ID metadata document, refresh).

Two ways in. `login` is `miroctl auth NAME`: it forgets the old tokens, lets the SDK discover the server's
authorization server, register a client and build the authorization URL, shows that URL (or opens it), takes
the code on a loopback callback, and stores what it got. `background_auth` is every other command: stored
tokens only, refreshed when they expire; whenever the SDK would need a person (no token, a refresh that
fails, a server that refuses the token) it raises AuthRequired at once instead of waiting for a browser.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from miroctl.base.errors import AuthRequired, ConfigError
from miroctl.base.models import OAuthSettings, ServerSpec
from miroctl.base.version import __version__
from miroctl.sessions import loopback
from miroctl.sessions.tokens import ServerTokens, TokenStore

if TYPE_CHECKING:  # the SDK and its HTTP client cost ~1 s to import: only the code paths that talk load them
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

EXPIRY_MARGIN = 30.0  # refresh this long before the stored expiry, so a token does not die in flight
PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"  # a redirect URI is required even where none is used


def auth_hint(spec: ServerSpec) -> str:
    if spec.source == "--url":  # an ad-hoc server has no name to log in to
        return f"run miroctl auth --url {shlex.quote(spec.url or '')}"
    return f"run miroctl auth {shlex.quote(spec.name)}"


def auth_required(spec: ServerSpec, why: str) -> AuthRequired:
    """The one error of a server that needs a login: `auth required: run miroctl auth NAME`."""
    return AuthRequired(f"auth required: {auth_hint(spec)}", hint=f"{why} ({spec.url})")


def oauth_challenge(www_authenticate: str | None) -> bool:
    """A Bearer challenge naming the server's protected-resource metadata, as MCP's authorization asks: the
    server wants an OAuth login. A bare Bearer challenge (or none) is a server that wants a token, which a login
    cannot get."""
    challenge = (www_authenticate or "").strip().lower()
    return challenge.startswith("bearer") and "resource_metadata=" in challenge


def send_token(spec: ServerSpec, what: str = "it") -> str:
    """How to send a server the token it wants: -H for a --url server, its file's headers otherwise."""
    if spec.source == "--url":
        return f"send {what} with -H 'Authorization: Bearer ...'"
    return f"send {what} in the headers: of {spec.source or 'the server file'} (Authorization: Bearer ...)"


def _flow_error(exc: BaseException) -> bool:
    return any(cls.__name__ == "OAuthFlowError" for cls in type(exc).__mro__)  # the SDK's, not imported here


def needs_oauth(spec: ServerSpec, store: TokenStore | None = None) -> bool:
    """Does this server use OAuth: declared (`auth: oauth`) or logged into with `miroctl auth`?"""
    if spec.transport not in ("streamable_http", "sse") or not spec.url:
        return False
    return spec.oauth is not None or (store or TokenStore()).has(spec.url)


def background_auth(spec: ServerSpec) -> httpx2.Auth | None:
    """The auth for a non-interactive session: stored tokens, refreshed; None for a server without OAuth."""
    store = TokenStore()
    if not needs_oauth(spec, store):
        return None
    assert spec.url is not None
    tokens = ServerTokens(store, spec.url)
    if tokens.record.tokens is None:
        raise auth_required(spec, "no token is stored for this server")

    async def refuse_redirect(url: str) -> None:
        raise auth_required(spec, "the stored token was refused and could not be refreshed")

    async def refuse_callback() -> AuthorizationCodeResult:
        raise auth_required(spec, "a login needs a person")

    registered = _redirect_uris(tokens)
    redirect = str(registered[0]) if registered else PLACEHOLDER_REDIRECT
    return _provider(spec, tokens, redirect, refuse_redirect, refuse_callback)


@dataclass(frozen=True)
class Login:
    """What `miroctl auth` did: never the tokens themselves."""

    server: str
    url: str
    authorized: bool  # False: the server did not ask for a login
    store: str
    scope: str | None = None
    expires_in: int | None = None
    refreshable: bool = False
    client: str = "dynamic"  # dynamic | metadata_document | static
    forgot: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"schema": "miroctl.auth/1", **vars(self)}


async def login(
    spec: ServerSpec,
    *,
    show: Callable[[str], Awaitable[None]],
    timeout: float,
    reset: bool = False,
    on_listening: Callable[[str], None] | None = None,
) -> Login:
    """Log in to one server: the browser (or the user) visits the URL `show` gets; the loopback takes the code."""
    if spec.transport not in ("streamable_http", "sse") or not spec.url:
        raise ConfigError(f"{spec.name} is a {spec.transport} server: OAuth is for HTTP and SSE servers")
    store = TokenStore()
    forgot = store.forget(spec.url) if reset else False
    tokens = ServerTokens(store, spec.url)
    tokens.forget_tokens()
    settings = spec.oauth or OAuthSettings()
    try:
        return await _login(spec, store, tokens, settings, show, timeout, forgot, on_listening)
    except BaseExceptionGroup as group:  # the loopback's task group wraps what the flow raised
        raise _first_leaf(group) from None


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _login(
    spec: ServerSpec,
    store: TokenStore,
    tokens: ServerTokens,
    settings: OAuthSettings,
    show: Callable[[str], Awaitable[None]],
    timeout: float,
    forgot: bool,
    on_listening: Callable[[str], None] | None,
) -> Login:
    import httpx2

    port = settings.callback_port or _registered_port(tokens)
    async with _listen(port, settings) as callback:
        if on_listening is not None:
            on_listening(callback.redirect_uri)
        if settings.client_id:
            await tokens.set_client_info(_static_client(settings, callback.redirect_uri))
        elif not _registered_for(tokens, callback.redirect_uri):
            tokens.forget_client()  # registered for another port: register again

        async def redirect(url: str) -> None:
            callback.expect(parse_qs(urlsplit(url).query).get("state", [""])[0])
            await show(url)

        async def answer() -> AuthorizationCodeResult:
            from mcp.shared.auth import AuthorizationCodeResult

            got = await callback.wait(timeout)
            return AuthorizationCodeResult(code=got.code, state=got.state, iss=got.iss)

        provider = _provider(spec, tokens, callback.redirect_uri, redirect, answer)
        challenges: list[str] = []  # of the server's 401s, the first one's is the server's own

        async def note(response: httpx2.Response) -> None:
            if response.status_code == 401:
                challenges.append(response.headers.get("www-authenticate") or "")

        hooks = {"response": [note]}
        async with httpx2.AsyncClient(
            auth=provider, headers=dict(spec.headers), timeout=30.0, event_hooks=hooks
        ) as http:
            try:
                status = await _knock(http, spec)
            except Exception as exc:
                if challenges and not oauth_challenge(challenges[0]) and _flow_error(exc):
                    # No OAuth challenge, and discovery or registration failed: not an OAuth server at all.
                    raise AuthRequired(
                        f"{spec.name} asks for no OAuth login: its 401 carries no OAuth challenge",
                        hint=f"it wants a token of its own: {send_token(spec)}",
                    ) from None
                raise
    if tokens.record.tokens is None:
        return Login(spec.name, spec.url or "", authorized=False, store=store.kind, forgot=forgot)
    if status in (401, 403):
        raise AuthRequired(f"{spec.name} still refuses the new token (HTTP {status})", hint=auth_hint(spec))
    tokens.set_metadata(provider.context.oauth_metadata, provider.context.protected_resource_metadata)
    return _report(spec, tokens, store, settings, forgot)


def _report(spec: ServerSpec, tokens: ServerTokens, store: TokenStore, settings: OAuthSettings, forgot: bool) -> Login:
    got = tokens.record.tokens or {}
    client_id = (tokens.record.client_info or {}).get("client_id")
    kind = "static" if settings.client_id else "dynamic"
    if settings.client_metadata_url and client_id == settings.client_metadata_url:
        kind = "metadata_document"
    expires = tokens.record.expires_at
    return Login(
        spec.name,
        spec.url or "",
        authorized=True,
        store=store.kind,
        scope=scope if isinstance(scope := got.get("scope"), str) else None,
        expires_in=max(0, round(expires - time.time())) if expires else None,
        refreshable=bool(got.get("refresh_token")),
        client=kind,
        forgot=forgot,
    )


def forget(spec: ServerSpec) -> bool:
    """Drop the stored tokens and client of a server; True if there were any."""
    return bool(spec.url) and TokenStore().forget(spec.url or "")


async def _knock(http: httpx2.AsyncClient, spec: ServerSpec) -> int:
    """One request the server must authorize (an MCP initialize, or the SSE stream); the status of its answer."""
    url = spec.url or ""
    if spec.transport == "sse":
        async with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as response:
            return response.status_code
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "miroctl", "version": __version__},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    async with http.stream("POST", url, json=body, headers=headers) as response:
        status = response.status_code
        session = response.headers.get("mcp-session-id")
    if session and status < 300:
        try:
            await http.delete(url, headers={"mcp-session-id": session})
        except httpx2.HTTPError:
            pass
    return status


def _listen(port: int | None, settings: OAuthSettings) -> AbstractAsyncContextManager[loopback.Loopback]:
    """The loopback listener: on the configured port, or the registered one when it is free, else any port."""
    if settings.callback_port:
        return loopback.listening(settings.callback_port)
    return loopback.listening(port, 0) if port else loopback.listening(0)


def _registered_port(tokens: ServerTokens) -> int | None:
    for uri in _redirect_uris(tokens):
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return None


def _registered_for(tokens: ServerTokens, redirect_uri: str) -> bool:
    return redirect_uri in _redirect_uris(tokens)


def _redirect_uris(tokens: ServerTokens) -> list[object]:
    """The redirect URIs of the stored client registration (none when nothing usable is stored)."""
    uris = (tokens.record.client_info or {}).get("redirect_uris")
    return uris if isinstance(uris, list) else []


def _static_client(settings: OAuthSettings, redirect_uri: str) -> OAuthClientInformationFull:
    from mcp.shared.auth import OAuthClientInformationFull

    return OAuthClientInformationFull(
        client_id=settings.client_id or "",
        client_secret=settings.client_secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic validates the str into its AnyUrl
        token_endpoint_auth_method="client_secret_post" if settings.client_secret else "none",
    )


def client_metadata(spec: ServerSpec, redirect_uri: str) -> OAuthClientMetadata:
    """How miroctl registers itself: a native public client with a loopback redirect, PKCE, refresh."""
    from mcp.shared.auth import OAuthClientMetadata

    settings = spec.oauth or OAuthSettings()
    return OAuthClientMetadata(
        client_name="miroctl",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic validates the str into its AnyUrl
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if settings.client_secret else "none",
        scope=" ".join(settings.scopes) or None,
        software_id="miroctl",
        software_version=__version__,
    )


def _provider(
    spec: ServerSpec,
    tokens: ServerTokens,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> OAuthClientProvider:
    settings = spec.oauth or OAuthSettings()
    try:
        return stored_provider_class()(
            spec.url or "",
            client_metadata(spec, redirect_uri),
            tokens,
            redirect_handler=redirect,
            callback_handler=callback,
            client_metadata_url=settings.client_metadata_url,
        )
    except ValueError as exc:  # a client_metadata_url the SDK does not accept
        raise ConfigError(f"{spec.name}: {exc}") from None


@cache
def stored_provider_class() -> type[OAuthClientProvider]:
    """The SDK's provider, made to resume a stored login (built on first use: the SDK is heavy to import).

    The SDK's provider loads stored tokens but not when they expire nor where the authorization server's
    token endpoint is, so a new process would never refresh: it would send the dead token, get a 401 and
    start a browser login. This subclass restores both from the record (tests/test_private_apis.py checks
    the one private method it extends)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

    class StoredOAuth(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            if not isinstance(storage, ServerTokens):
                return
            record = storage.record
            if record.expires_at is not None and self.context.current_tokens is not None:
                self.context.token_expiry_time = record.expires_at - EXPIRY_MARGIN
            if record.oauth_metadata and self.context.oauth_metadata is None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(record.oauth_metadata)
            if record.resource_metadata and self.context.protected_resource_metadata is None:
                resource = ProtectedResourceMetadata.model_validate(record.resource_metadata)
                self.context.protected_resource_metadata = resource
                if resource.authorization_servers:
                    self.context.auth_server_url = str(resource.authorization_servers[0])

    return StoredOAuth
