"""The browser server's session: the machine's Chromium or Chrome under Playwright, one page kept across calls."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urljoin

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.policy import urls

from .common import number_setting, setting
from .models import INSTALL_HINT

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
PLACES = ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/snap/bin/chromium", "/opt/google/chrome/chrome")
# A root, headless machine with a closed network: no sandbox (root), no GPU, and none of the background
# traffic (updates, sync, metrics) that would otherwise be refused over and over.
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--disable-quic",
)
_REF = re.compile(r"[a-z]+[0-9]+(?:[a-z]+[0-9]+)*")  # e12, and f1e3 inside frames
INSTALL_BROWSER = (
    "install Chromium (Debian/Ubuntu: apt-get install -y chromium) or Google Chrome, or set BROWSER_EXECUTABLE"
)


def find_browser() -> str | None:
    """The browser to drive: BROWSER_EXECUTABLE, else Chromium or Chrome on PATH or in their usual places."""
    given = setting("BROWSER_EXECUTABLE")
    if given is not None:
        return given if os.access(given, os.X_OK) else None
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return next((place for place in PLACES if os.access(place, os.X_OK)), None)


def missing_browser_message() -> str | None:
    """What is missing for the server to work, in words, or None."""
    try:
        import playwright.async_api  # noqa: F401 - only whether it imports
    except ImportError:
        return f"the playwright package is not installed: {INSTALL_HINT}"
    if find_browser() is None:
        given = setting("BROWSER_EXECUTABLE")
        if given is not None:
            return f"BROWSER_EXECUTABLE={given} is not an executable file: {INSTALL_BROWSER}"
        return f"no Chromium or Google Chrome found: {INSTALL_BROWSER}"
    return None


class BrowserSession:
    """Playwright, a browser and one page, started on first use; relaunched if the browser went away."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None
        self._page: Any = None

    @property
    def timeout_ms(self) -> float:
        return number_setting("BROWSER_TIMEOUT", 30.0, minimum=1.0) * 1000

    async def page(self) -> Any:
        """The open page, launching the browser first when needed."""
        if self._page is not None and not self._page.is_closed() and self._browser.is_connected():
            return self._page
        await self.close()
        problem = missing_browser_message()
        if problem is not None:
            raise ToolError(problem)
        from playwright.async_api import async_playwright

        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=find_browser(), headless=True, args=list(FLAGS), timeout=self.timeout_ms
            )
        except Exception as exc:  # noqa: BLE001 - Playwright's launch errors carry the browser's own words
            await self.close()
            raise ToolError(f"the browser did not start: {_first_line(exc)}") from None
        context = await self._browser.new_context()
        await context.route("**/*", _block_by_url_rules)
        self._page = await context.new_page()
        self._page.set_default_timeout(self.timeout_ms)
        return self._page

    async def go(self, page: Any, url: str) -> None:
        try:
            await page.goto(url, wait_until="domcontentloaded")
        except Exception as exc:  # noqa: BLE001 - net::ERR_* and timeouts, explained in one line
            raise ToolError(f"could not open {url}: {_first_line(exc)}") from None

    async def back(self, page: Any) -> None:
        try:
            went = await page.go_back(wait_until="domcontentloaded")
        except Exception as exc:  # noqa: BLE001
            raise ToolError(f"could not go back: {_first_line(exc)}") from None
        if went is None:
            raise ToolError("there is no previous page to go back to")

    async def act(self, ref: str, action: Callable[[Any], Awaitable[None]]) -> None:
        """Do `action` on the element a snapshot marked [ref=...]."""
        ref = ref.strip().strip("[]").removeprefix("ref=")
        if not _REF.fullmatch(ref):
            raise ToolError(f"not a ref from a snapshot: {ref!r} (refs look like e12)")
        page = await self.page()
        target = page.locator(f"aria-ref={ref}")
        try:
            if await target.count() == 0:
                raise ToolError(f"no element has ref {ref} on this page: take a new browser_snapshot")
            await action(target)
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - stale refs, hidden elements, timeouts
            raise ToolError(f"could not act on {ref}: {_first_line(exc)}") from None

    async def snapshot(self) -> tuple[str, str, str, int]:
        """(title, url, snapshot, characters cut) of the current page."""
        page = await self.page()
        limit = int(number_setting("BROWSER_MAX_SNAPSHOT", 40_000, minimum=1000))
        try:
            title = await page.title()
            text = await page.locator("body").aria_snapshot(mode="ai")
        except Exception as exc:  # noqa: BLE001
            raise ToolError(f"could not read the page: {_first_line(exc)}") from None
        cut = max(0, len(text) - limit)
        return title, page.url, text[:limit], cut

    async def close(self) -> bool:
        """Close the browser and Playwright; whether anything was open."""
        was_open = self._playwright is not None
        for closing in (self._browser, self._playwright):
            if closing is None:
                continue
            try:
                await (closing.close() if closing is self._browser else closing.stop())
            except Exception:  # noqa: BLE001 - already gone is as good as closed
                pass
        self._playwright = self._browser = self._page = None
        return was_open


async def _block_by_url_rules(route: Any) -> None:
    """Let a request through unless a URL rule blocks it, or blocks a hop of the redirects it leads to.

    The browser follows redirects of a fulfilled response without asking the route again, so the hops
    of a page's or frame's redirect chain are walked here first (without following them) and checked.
    """
    request = route.request
    rules = urls.from_env()
    if rules.blocked_by(request.url) is not None:
        await route.abort("blockedbyclient")
        return
    if not request.is_navigation_request():
        await route.continue_()
        return
    try:
        first = await route.fetch(max_redirects=0)
        status, location, here = first.status, first.headers.get("location"), request.url
        for _ in range(10):
            if not (300 <= status < 400 and location):
                break
            here = urljoin(here, location)
            if rules.blocked_by(here) is not None:
                await route.abort("blockedbyclient")
                return
            hop = await route.fetch(url=here, method="GET", max_redirects=0)
            status, location = hop.status, hop.headers.get("location")
    except Exception:  # noqa: BLE001 - let the browser meet the network error itself
        await route.continue_()
        return
    await route.fulfill(response=first)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip(" =")
        if line and not line.startswith("Call log"):
            return line[:300]
    return type(exc).__name__
