"""Where output goes: the Output object (stdout, stderr, masking, progress), and literal server text.

Rich is loaded when something needs it (a table, a styled note, an error, a terminal's live lines), not
when an Output is made: a plain result through a gateway (`--via`, piped) prints without it (~60 ms).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, cast

from miroctl.base import escaping
from miroctl.base.errors import OutputLost
from miroctl.base.escaping import visible
from miroctl.base.masking import Masker
from miroctl.launch import early

if TYPE_CHECKING:  # the types only: a call through a gateway must not load the core, nor Rich before it prints
    from rich.console import Console

    from miroctl.core.manager import Confirmation
    from miroctl.render.progress import ServerProgress

PROGRESS = "miroctl.render.progress"  # Rich's live lines; nothing is live before it is loaded


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
        self._out: Console | None = None
        self._err: Console | None = None
        if json_mode:  # the console entry could not tell: nothing of the live lines with --json
            _stop_live()
        elif early.drawn is not None:  # the entry's first line comes alive (a spinner, a clock)
            _live().adopt(self.err, early.drawn)

    @property
    def out(self) -> Console:
        """stdout as Rich writes it (tables); made when first used."""
        if self._out is None:
            self._out = _stdout_console()
        return self._out

    @out.setter
    def out(self, console: Console) -> None:
        self._out = console

    @property
    def err(self) -> Console:
        """stderr as Rich writes it: the live lines' console while they run; made when first used."""
        if self._err is None:
            live = _live()
            running = live.active() if not self.json_mode else None
            self._err = running.console if running is not None else live.stderr_console()
        return self._err

    @err.setter
    def err(self, console: Console) -> None:
        self._err = console

    def mask(self, text: str) -> str:
        return self.masker.text(text)

    def safe(self, text: Any) -> str:
        return literal(self.mask(str(text)))

    def json(self, document: Mapping[str, Any]) -> None:
        """One JSON document on stdout; one that reports an error has its reason (and hint) on stderr too,
        as without --json, so every command fails alike in both modes. An error document goes to stdout even
        for stdio `serve`, whose stdout carries MCP only once it serves (and then no error document follows)."""
        failed = document.get("is_error") is True and isinstance(document.get("error"), str)
        if failed:
            hint = document.get("hint")
            self.error(document["error"], hint if isinstance(hint, str) else None, label=_label(document))
        stream = sys.stderr if self.json_to_stderr and not failed else sys.stdout
        _written(stream, dumps(self.masker.data(document)) + "\n")
        self.documents += 1

    def text(self, text: str) -> None:
        """Result text on stdout, literally."""
        _written(sys.stdout, self.safe(text) + ("" if text.endswith("\n") else "\n"))

    def note(self, message: str, style: str = "yellow") -> None:
        from rich.text import Text  # noqa: PLC0415 - Rich only when something is drawn (see above)

        self.err.print(Text(self.safe(message), style=style))

    def error(self, message: str, hint: str | None = None, tail: Sequence[str] = (), label: str = "error") -> None:
        """A one-line reason on stderr, then its hint and the server's last stderr lines (each line once)."""
        from rich.text import Text  # noqa: PLC0415 - Rich only when something is drawn (see above)

        _stop_live()
        hint = without_tail_line(hint, tail)
        line = Text("miroctl: ", style="bold red")
        line.append(f"{label}: ", style="bold red")
        line.append(self.safe(message))
        self.err.print(line)
        if hint:
            self.err.print(Text(f"  hint: {self.safe(hint)}", style="yellow"))
        self.stderr_tail(tail)

    def stderr_tail(self, tail: Sequence[str], indent: str = "  ") -> None:
        from rich.text import Text  # noqa: PLC0415 - Rich only when something is drawn (see above)

        if tail:
            self.err.print(Text(f"{indent}server stderr (last {len(tail)} lines):", style="dim"))
            for line in tail:
                self.err.print(Text(f"{indent}| {self.safe(line)}", style="dim"))

    @contextmanager
    def live(self, label: str) -> Iterator[ServerProgress | None]:
        """Live per-server lines on stderr while the block runs (a terminal only, never with --json); erased
        at its end, so the result takes their place."""
        if self.json_mode or not self.err.is_terminal:
            _stop_live()
            yield None
            return
        view = _live().adopt(self.err, self.safe(label))
        self._bar = view
        try:
            yield view
        finally:
            self._bar = None
            _stop_live()

    def end_live(self) -> None:
        """Erase the live lines now: the result is printed while the servers are still being stopped."""
        self._bar = None
        _stop_live()

    @contextmanager
    def progress(self, label: str) -> Iterator[Any]:
        """A progress bar on stderr when it is a terminal; otherwise a callback that does nothing."""
        if self.json_mode or not self.err.is_terminal:
            yield _silent_progress
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415 - see above

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
        from rich.prompt import Confirm  # noqa: PLC0415 - Rich only when something is drawn (see above)
        from rich.text import Text  # noqa: PLC0415

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


def _label(document: Mapping[str, Any]) -> str:
    kind = document.get("error_kind")
    return kind if isinstance(kind, str) and kind else "error"


def without_tail_line(hint: str | None, tail: Sequence[str]) -> str | None:
    """A hint that only repeats the server's last stderr line is left out when that tail is shown anyway."""
    if hint and tail and hint.startswith("its stderr ends:"):
        return None
    return hint


def _live() -> Any:
    """render/progress.py (Rich's live lines), loaded when first needed."""
    from miroctl.render import progress  # noqa: PLC0415 - Rich only when something is drawn (see above)

    return progress


def _stdout_console() -> Console:
    """Rich's console on stdout, where a write stdout cannot take (a closed pipe, a full disk) is an OutputLost
    like any other: Rich's own handling of a closed pipe ends the process from wherever it prints."""
    from rich.console import Console  # noqa: PLC0415 - Rich only when something is drawn (see above)

    stdout = cast("TextIO", _Stdout())  # a text stream by its methods: write, flush, and stdout's own others
    return Console(file=stdout, markup=False, highlight=False, emoji=False, soft_wrap=False)


class _Stdout:
    """sys.stdout as it is at each write (a test may have replaced it), each write flushed (`_written`)."""

    def write(self, text: str) -> int:
        _written(sys.stdout, text)
        return len(text)

    def flush(self) -> None:  # every write was flushed
        return None

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding: stdout's own
        return getattr(sys.stdout, name)


def _written(stream: TextIO, text: str) -> None:
    """Write and flush; OutputLost when the stream cannot take it (its reader left, the disk is full)."""
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:
        raise OutputLost(exc) from None


def _stop_live() -> None:
    """End the live lines, if any run (none can before render/progress.py is loaded)."""
    if PROGRESS in sys.modules:
        sys.modules[PROGRESS].stop_active()


async def _silent_progress(progress: float, total: float | None, message: str | None) -> None:
    return None
