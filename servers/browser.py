"""browser: a real headless browser kept open across calls (the seeds' Playwright session).

Drives the Chromium or Google Chrome installed on the machine with the `playwright` package
(`pip install 'miroctl[research]'`; Playwright's own browser download is not needed). The browser is
found at start: BROWSER_EXECUTABLE, else chromium / google-chrome on PATH and their usual places. With
none, the server does not start and says what to install (`apt-get install -y chromium`), so
`miroctl check` shows it. Pages are read as accessibility snapshots whose `[ref=eN]` marks name the
elements that browser_click and browser_type act on. Every request the page makes is checked against
miroctl's URL rules. BROWSER_TIMEOUT bounds each action; BROWSER_MAX_SNAPSHOT caps a snapshot.
Its six tools take @playwright/mcp's names and parameters (`target` for the ref), so an agent prompted
for @playwright/mcp calls them unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from miroctl.base.version import __version__

from .helpers.browser_session import BrowserSession, find_browser, missing_browser_message
from .helpers.common import result
from .helpers.fetching import check_url


@asynccontextmanager
async def _lifespan(server: MCPServer[Any]) -> AsyncIterator[BrowserSession]:
    """One browser session per server run, launched on first use and closed with the server."""
    browser = BrowserSession()
    try:
        yield browser
    finally:
        await browser.close()


mcp = MCPServer("browser", version=__version__, log_level="WARNING", lifespan=_lifespan)

NAVIGATES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
ACTS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
Modifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]
READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)


def _session(ctx: Context) -> BrowserSession:
    session = ctx.request_context.lifespan_context
    assert isinstance(session, BrowserSession)
    return session


@mcp.tool(annotations=NAVIGATES)
async def browser_navigate(url: str, ctx: Context) -> CallToolResult:
    """Open an http(s) URL in the browser's page and return the page's title, URL and snapshot.

    The snapshot lists the page's headings, text, links, buttons and fields, each marked
    [ref=eN]: pass that ref as `target` to browser_click or browser_type. The page stays open for later calls.
    """
    page = await _session(ctx).page()
    await _session(ctx).go(page, check_url(url))
    return await _page_report(ctx, "navigated")


@mcp.tool(annotations=READS)
async def browser_snapshot(ctx: Context) -> CallToolResult:
    """Return the current page's title, URL and accessibility snapshot (elements marked [ref=eN]).

    Take a new snapshot after the page changed (a click, typing, a script) before using its refs.
    """
    return await _page_report(ctx, "snapshot")


@mcp.tool(annotations=ACTS)
async def browser_click(
    target: str,
    ctx: Context,
    element: str = "",
    doubleClick: bool = False,  # @playwright/mcp's name, which agents send
    button: Literal["left", "right", "middle"] = "left",
    modifiers: list[Modifier] | None = None,
) -> CallToolResult:
    """Click the element with this ref from the latest snapshot, then return the page's new snapshot.

    `target` is the [ref=eN] mark of a link, button or other element; `element` optionally says in
    words what it is (kept in the answer for the record). The parameters are @playwright/mcp's.
    """
    keys = list(modifiers or [])
    if doubleClick:
        await _session(ctx).act(target, lambda found: found.dblclick(button=button, modifiers=keys))
    else:
        await _session(ctx).act(target, lambda found: found.click(button=button, modifiers=keys))
    return await _page_report(ctx, f"{'double-' if doubleClick else ''}clicked {element or target}")


@mcp.tool(annotations=ACTS)
async def browser_type(
    target: str, text: str, ctx: Context, element: str = "", submit: bool = False, slowly: bool = False
) -> CallToolResult:
    """Type text into the field with this ref (replacing what it held), optionally pressing Enter,
    then return the page's new snapshot. `slowly` types one key at a time, for pages that react to keys."""

    async def fill(found: Any) -> None:
        if slowly:
            await found.fill("")
            await found.press_sequentially(text)
        else:
            await found.fill(text)
        if submit:
            await found.press("Enter")

    await _session(ctx).act(target, fill)
    return await _page_report(ctx, f"typed into {element or target}" + (" and pressed Enter" if submit else ""))


@mcp.tool(annotations=NAVIGATES)
async def browser_navigate_back(ctx: Context) -> CallToolResult:
    """Go back to the previous page in the browser's history and return its title, URL and snapshot.

    Fails when there is no previous page (the first page opened in this session)."""
    page = await _session(ctx).page()
    await _session(ctx).back(page)
    return await _page_report(ctx, "went back")


@mcp.tool(
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
)
async def browser_close(ctx: Context) -> CallToolResult:
    """Close the browser and forget its pages; the next browser call starts a fresh one."""
    closed = await _session(ctx).close()
    return result("The browser is closed." if closed else "No browser was open.", {"closed": closed})


async def _page_report(ctx: Context, what: str) -> CallToolResult:
    session = _session(ctx)
    title, url, snapshot, cut = await session.snapshot()
    text = f"Page: {title or '(no title)'}\nURL: {url}\n\n{snapshot}"
    if cut:
        text += f"\n[... {cut:,} characters of the snapshot cut (BROWSER_MAX_SNAPSHOT) ...]"
    return result(text, {"action": what, "title": title, "url": url, "snapshot": snapshot, "cut_chars": cut})


def _exit_without_a_browser() -> None:
    """Refuse to start, in one line on stderr, when no browser or no Playwright is there (check shows it)."""
    problem = missing_browser_message()
    if problem is not None:
        print(f"browser server cannot start: {problem}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    _exit_without_a_browser()
    mcp.run("stdio")


__all__ = ["find_browser", "mcp"]
