"""An OAuth 2.1 authorization server and a protected MCP server in one process on 127.0.0.1.

    python tests/fakes/oauth_server.py PORT [--sse]

It is what a real remote MCP server behind OAuth looks like to a client, built on the SDK's own server
side (mcp.server.auth): 401 with a `WWW-Authenticate: Bearer resource_metadata=...` challenge, protected
resource metadata, authorization server metadata, dynamic client registration, /authorize with PKCE
(consent is automatic: it redirects straight back with a code), /token for codes and refresh tokens.
Refresh tokens rotate. Tests steer it through /_fake/* routes: `expire` makes every access token
issued so far invalid, `revoke` forgets every refresh token, `stats` counts what happened.
"""

from __future__ import annotations

import argparse
import secrets
import time
from collections import Counter
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

SCOPE = "tools"
ACCESS_TTL = 3600


class MemoryProvider:
    """An in-memory OAuthAuthorizationServerProvider."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.counts["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        found = self.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.counts["code_exchanges"] += 1
        return self._issue(client, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token was revoked")
        self.counts["refreshes"] += 1
        return self._issue(client, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"fake-access-{secrets.token_hex(16)}", f"fake-refresh-{secrets.token_hex(16)}"
        client_id = client.client_id or ""
        expires = int(time.time()) + ACCESS_TTL
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=ACCESS_TTL, refresh_token=refresh, scope=" ".join(scopes))


def build(port: int, sse: bool = False) -> MCPServer[Any]:
    base = f"http://127.0.0.1:{port}"
    provider = MemoryProvider()
    server: MCPServer[Any] = MCPServer(
        "protected",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/sse" if sse else f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE]),
            required_scopes=[SCOPE],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Say that the caller got through."""
        return "authorized"

    @server.tool()
    def leak() -> str:
        """A careless server that echoes the bearer token it was given."""
        token = get_access_token()
        return f"your token is {token.token if token else None}"

    @server.custom_route("/_fake/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        for token in provider.access.values():
            token.expires_at = int(time.time()) - 1
        return JSONResponse({"expired": len(provider.access)})

    @server.custom_route("/_fake/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        count = len(provider.refresh)
        provider.refresh.clear()
        return JSONResponse({"revoked": count})

    @server.custom_route("/_fake/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(dict(provider.counts))

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--sse", action="store_true")
    options = parser.parse_args()
    server = build(options.port, options.sse)
    if options.sse:
        server.run("sse", host="127.0.0.1", port=options.port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.port)


if __name__ == "__main__":
    main()
