"""Live feedback on stderr while the core works: a line per server (starting, initialising, listing,
calling, done in N ms, failed: class), erased when the result is printed. A server still starting or
listing shows the time spent against its start-up budget (`initialising… 7.7 s / 30 s`).

Only on a terminal: nothing of it when stderr is piped or with --json. The first line is drawn by the
console entry before the slow imports (launch/early.py); this display takes it over (`adopt`) and fills
it from the core's stage events (sessions/stages.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from miroctl.base.escaping import visible
from miroctl.launch import early

if TYPE_CHECKING:  # the type only: the console entry draws the first line before the core is imported
    from miroctl.sessions.stages import StageEvent

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_WORDS = {"starting": "starting", "initialising": "initialising", "listing": "listing tools", "calling": "calling"}
MAX_ROWS = 30  # a pool this large shows its unfinished servers first, then a count of the rest


def stderr_console() -> Console:
    """The console diagnostics go to: stderr, server text never read as markup."""
    return Console(stderr=True, markup=False, highlight=False, emoji=False, soft_wrap=True)


class ServerProgress:
    """The live lines: a heading, then one line per server that reported a stage; `clock` is the clock of
    the stage events (time.perf_counter's)."""

    def __init__(self, console: Console, label: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self.console = console
        self.label = label
        self.clock = clock
        self.began = clock()
        self._rows: dict[str, StageEvent] = {}
        self._message = ""
        self._lock = threading.Lock()  # events arrive in the event loop, drawing happens in Rich's thread
        self._live = Live(
            console=console,
            get_renderable=self.renderable,
            transient=True,
            refresh_per_second=12,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.running = False

    def start(self) -> None:
        if not self.running:
            self.running = True
            self._live.start(refresh=True)

    def stop(self) -> None:
        """Erase the lines (the result takes their place)."""
        if self.running:
            self.running = False
            self._live.stop()

    def on_stage(self, event: StageEvent) -> None:
        """A server's new stage (the core's listener)."""
        with self._lock:
            self._rows[event.server] = event

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A tool's progress notifications, shown on the line of the server it runs on."""
        done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        with self._lock:
            self._message = f"{done} {visible(message or '')}".strip()

    def renderable(self) -> Group:
        with self._lock:
            rows = list(self._rows.values())
            message = self._message
        now = self.clock()
        frame = _SPINNER[int(now * 10) % len(_SPINNER)]
        head = Text(f"{frame} ", style="cyan")
        head.append(visible(self.label))
        finished = sum(1 for row in rows if row.stage in ("done", "failed"))
        if len(rows) > 1:
            head.append(f"  {finished} of {len(rows)} servers answered", style="dim")
        head.append(f"  {_seconds(now - self.began)}", style="dim")
        width = max((len(row.server) for row in rows), default=0)
        shown = sorted(rows, key=lambda row: row.stage in ("done", "failed"))[:MAX_ROWS]
        lines = [_row(row, width, frame, now, message) for row in sorted(shown, key=rows.index)]
        if len(rows) > len(shown):
            lines.append(Text(f"  … {len(rows) - len(shown)} more", style="dim"))
        return Group(head, *lines)


def _row(row: StageEvent, width: int, frame: str, now: float, message: str) -> Text:
    line = Text("  ")
    name = visible(row.server).ljust(width)
    if row.stage == "done":
        line.append(f"✓ {name}  ", style="green")
        line.append(f"done in {row.ms or 0:.0f} ms", style="green")
    elif row.stage == "failed":
        line.append(f"✗ {name}  ", style="red")
        line.append(f"failed: {visible(row.detail)}", style="red")
    else:
        line.append(f"{frame} {name}  ", style="cyan")
        what = _WORDS.get(row.stage, row.stage)
        line.append(f"{what} {visible(row.detail)}".strip() + "…")
        if row.stage == "calling" and message:
            line.append(f"  {message}", style="dim")
        line.append(f"  {_spent(row, now)}", style="dim")
    return line


def _spent(row: StageEvent, now: float) -> str:
    """The time in this stage, or in the wait it belongs to against that wait's budget (`7.7 s / 30 s`)."""
    if row.budget is None:
        return _seconds(now - row.at)
    return f"{_seconds(now - row.budget.since)} / {row.budget.seconds:g} s"


def _seconds(seconds: float) -> str:
    return f"{max(0.0, seconds):.1f} s"


_active: ServerProgress | None = None


def adopt(console: Console, label: str) -> ServerProgress:
    """The display a command fills with its servers' stages: the running one, or a new one (taking the
    place of the console entry's first line)."""
    global _active
    if _active is None:
        began = early.drawn is not None
        early.erase()
        _active = ServerProgress(console, label)
        if began:  # the clock of the first line goes on
            _active.began = early.STARTED
    _active.label = label
    _active.start()
    return _active


def active() -> ServerProgress | None:
    return _active


def stop_active() -> None:
    """Erase the live lines, if any (before a result or an error is printed)."""
    global _active
    early.erase()
    if _active is not None:
        _active.stop()
        _active = None
