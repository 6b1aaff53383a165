"""`miroctl auth SERVER`: log in to an HTTP server that needs OAuth, so that every other command can use it."""

from __future__ import annotations

import logging
import webbrowser
from typing import Annotated

import anyio
import typer

from miroctl.base.errors import AuthRequired, ConfigError, NotFound, ServerUnavailable
from miroctl.base.models import ServerSpec
from miroctl.base.text import unknown_server_hint
from miroctl.cli import boundary
from miroctl.cli.common import load_config, run
from miroctl.cli.helptext import LOGIN
from miroctl.cli.options import ConfigOpt, HeaderOpt, JsonOpt, UrlOpt, seconds
from miroctl.render.output import Output
from miroctl.sessions import oauth

DEFAULT_TIMEOUT = 300.0


def auth(
    server: Annotated[
        str | None,
        typer.Argument(help="The server to log in to (an HTTP or SSE server of the config).", metavar="SERVER"),
    ] = None,
    reset: Annotated[
        bool,
        typer.Option("--reset", rich_help_panel=LOGIN, help="Forget the stored tokens and client registration first."),
    ] = False,
    no_browser: Annotated[
        bool,
        typer.Option(
            "--no-browser",
            rich_help_panel=LOGIN,
            help="Print the authorization URL on stdout instead of opening a browser.",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            "-t",
            parser=seconds,
            metavar="SECONDS",
            rich_help_panel=LOGIN,
            help="Seconds to wait for the browser to come back.",
        ),
    ] = DEFAULT_TIMEOUT,
    json_mode: JsonOpt = False,
    config: ConfigOpt = None,
    url: UrlOpt = None,
    header: HeaderOpt = None,
) -> None:
    """Log in to a server with OAuth 2.1 (browser, PKCE); other commands then use and refresh the stored tokens."""
    out = boundary.output(json_mode)
    loaded = load_config(config, None, url, header, out)
    spec = _server(loaded.servers, server)
    done = run(lambda: _login(spec, out, reset=reset, browser=not no_browser, timeout=timeout))
    if json_mode:
        out.json(done.to_dict())
    elif not done.authorized:
        out.text(f"{spec.name}: the server did not ask for a login; nothing stored")
    else:
        details = [f"scope: {done.scope}"] if done.scope else []
        if done.expires_in is not None:
            details.append(f"expires in {done.expires_in}s")
        details.append("refreshable" if done.refreshable else "not refreshable")
        out.text(f"{spec.name}: authorized; tokens stored in the {done.store} store ({', '.join(details)})")


def _server(servers: tuple[ServerSpec, ...], name: str | None) -> ServerSpec:
    if name is None:
        remote = [spec for spec in servers if spec.url]
        if len(remote) != 1:
            raise ConfigError("auth needs a SERVER name", hint="miroctl list shows the configured servers")
        return remote[0]
    for spec in servers:
        if spec.name in (name, f"tool-{name}"):
            if spec.error:
                raise ConfigError(spec.error)
            return spec
    raise NotFound(f"no server named {name!r}", hint=unknown_server_hint(name, (s.name for s in servers)))


async def _login(spec: ServerSpec, out: Output, *, reset: bool, browser: bool, timeout: float) -> oauth.Login:
    import httpx2
    from mcp.client.auth import OAuthFlowError

    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # the SDK logs tracebacks for what miroctl reports

    async def show(authorization_url: str) -> None:
        if not browser:
            if out.json_mode:
                out.note(authorization_url, style="")
            else:
                out.text(authorization_url)
            return
        out.note(f"Opening a browser to log in to {spec.name}; if none opens, visit:", style="")
        out.note(authorization_url, style="")
        await anyio.to_thread.run_sync(webbrowser.open, authorization_url)

    def listening(redirect_uri: str) -> None:
        out.note(f"waiting up to {timeout:g}s for the login to come back to {redirect_uri}", style="dim")

    try:
        return await oauth.login(spec, show=show, timeout=timeout, reset=reset, on_listening=listening)
    except OAuthFlowError as exc:
        raise AuthRequired(f"login to {spec.name} failed: {_first_line(exc)}", hint=oauth.auth_hint(spec)) from None
    except httpx2.HTTPError as exc:
        raise ServerUnavailable(
            f"cannot reach {spec.url}: {_first_line(exc) or type(exc).__name__}",
            hint="is the server running and listening there?",
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot listen for the login's callback: {exc.strerror or exc}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""
