"""Where output goes: the Output object (stdout, stderr, masking, progress), and literal server text."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.prompt import Confirm
from rich.text import Text

from miroctl.base import escaping
from miroctl.base.escaping import visible
from miroctl.base.masking import Masker
from miroctl.render import early
from miroctl.render import progress as live_progress
from miroctl.render.progress import ServerProgress

if TYPE_CHECKING:  # the type only: a call through a gateway must not load the core
    from miroctl.core.manager import Confirmation


def literal(text: Any) -> str:
    """Server text made safe for a terminal: control, bidi and zero-width characters become visible escapes."""
    return visible(text)


def dumps(document: Any) -> str:
    """Strict JSON with non-ASCII kept readable but control, bidi and zero-width characters escaped."""
    return escaping.dumps(document)


class Output:
    """Where a command writes: stdout for results, stderr for diagnostics; secrets masked in both."""

    _bar: Any = None  # the live progress bar, paused while a question is asked

    def __init__(self, *, json_mode: bool = False, masker: Masker | None = None, json_to_stderr: bool = False) -> None:
        self.json_mode = json_mode
        self.masker = masker or Masker()
        self.json_to_stderr = json_to_stderr  # `serve --transport stdio --json`: stdout is the MCP channel
        self.documents = 0  # JSON documents written: an error after one must not add a second
        self.out = Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
        running = live_progress.active()
        if json_mode:  # the console entry could not tell: nothing of the live lines with --json
            live_progress.stop_active()
            running = None
        self.err = running.console if running is not None else live_progress.stderr_console()
        if not json_mode and early.drawn is not None:  # the entry's first line comes alive (a spinner, a clock)
            live_progress.adopt(self.err, early.drawn)

    def mask(self, text: str) -> str:
        return self.masker.text(text)

    def safe(self, text: Any) -> str:
        return literal(self.mask(str(text)))

    def json(self, document: Mapping[str, Any]) -> None:
        stream = sys.stderr if self.json_to_stderr else sys.stdout
        stream.write(dumps(self.masker.data(document)) + "\n")
        stream.flush()
        self.documents += 1

    def text(self, text: str) -> None:
        """Result text on stdout, literally."""
        sys.stdout.write(self.safe(text) + ("" if text.endswith("\n") else "\n"))
        sys.stdout.flush()

    def note(self, message: str, style: str = "yellow") -> None:
        self.err.print(Text(self.safe(message), style=style))

    def error(self, message: str, hint: str | None = None, tail: Sequence[str] = (), label: str = "error") -> None:
        """A one-line reason on stderr, then its hint and the server's last stderr lines (each line once)."""
        live_progress.stop_active()
        hint = without_tail_line(hint, tail)
        line = Text("miroctl: ", style="bold red")
        line.append(f"{label}: ", style="bold red")
        line.append(self.safe(message))
        self.err.print(line)
        if hint:
            self.err.print(Text(f"  hint: {self.safe(hint)}", style="yellow"))
        self.stderr_tail(tail)

    def stderr_tail(self, tail: Sequence[str], indent: str = "  ") -> None:
        if tail:
            self.err.print(Text(f"{indent}server stderr (last {len(tail)} lines):", style="dim"))
            for line in tail:
                self.err.print(Text(f"{indent}| {self.safe(line)}", style="dim"))

    @contextmanager
    def live(self, label: str) -> Iterator[ServerProgress | None]:
        """Live per-server lines on stderr while the block runs (a terminal only, never with --json); erased
        at its end, so the result takes their place."""
        if self.json_mode or not self.err.is_terminal:
            live_progress.stop_active()
            yield None
            return
        view = live_progress.adopt(self.err, self.safe(label))
        self._bar = view
        try:
            yield view
        finally:
            self._bar = None
            live_progress.stop_active()

    @contextmanager
    def progress(self, label: str) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal; otherwise a callback that does nothing."""
        if self.json_mode or not self.err.is_terminal:
            yield _silent_progress
            return
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[message]}"),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        )
        task = bar.add_task(self.safe(label), total=None, message="")

        async def update(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, message=self.safe(message or ""))

        self._bar = bar
        try:
            with bar:
                yield update
        finally:
            self._bar = None

    def confirm(self, question: Confirmation) -> bool:
        """Ask mode ask's question on the terminal (stderr); anything but yes is no."""
        prompt = Text("miroctl: ", style="bold yellow")
        prompt.append(self.safe(f"{question.decision.message}. Run {question.server}.{question.tool}"))
        arguments = self.mask(dumps(self.masker.data(dict(question.arguments))))
        prompt.append(self.safe(f" with {arguments[:300]}?" if question.arguments else "?"))
        if self._bar is not None:
            self._bar.stop()
        try:
            return Confirm.ask(prompt, console=self.err, default=False)
        except (EOFError, KeyboardInterrupt):
            return False
        finally:
            if self._bar is not None:
                self._bar.start()


def without_tail_line(hint: str | None, tail: Sequence[str]) -> str | None:
    """A hint that only repeats the server's last stderr line is left out when that tail is shown anyway."""
    if hint and tail and hint.startswith("its stderr ends:"):
        return None
    return hint


async def _silent_progress(progress: float, total: float | None, message: str | None) -> None:
    return None
