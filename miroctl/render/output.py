"""Where output goes: the Output object (stdout, stderr, masking, progress), and literal server text."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.prompt import Confirm
from rich.text import Text

from miroctl.base.masking import Masker

if TYPE_CHECKING:  # the type only: a call through a gateway must not load the core
    from miroctl.core.manager import Confirmation

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_C1_AND_SEPARATORS = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def literal(text: Any) -> str:
    """Server text made safe for a terminal: control characters become visible \\xNN escapes."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", str(text)
    )


def dumps(document: Any) -> str:
    """JSON with non-ASCII kept readable but C1 controls and line separators escaped."""
    text = json.dumps(document, ensure_ascii=False, default=str)
    return _C1_AND_SEPARATORS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class Output:
    """Where a command writes: stdout for results, stderr for diagnostics; secrets masked in both."""

    _bar: Any = None  # the live progress bar, paused while a question is asked

    def __init__(self, *, json_mode: bool = False, masker: Masker | None = None) -> None:
        self.json_mode = json_mode
        self.masker = masker or Masker()
        self.out = Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
        self.err = Console(stderr=True, markup=False, highlight=False, emoji=False, soft_wrap=True)

    def mask(self, text: str) -> str:
        return self.masker.text(text)

    def safe(self, text: Any) -> str:
        return literal(self.mask(str(text)))

    def json(self, document: Mapping[str, Any]) -> None:
        sys.stdout.write(dumps(self.masker.data(document)) + "\n")
        sys.stdout.flush()

    def text(self, text: str) -> None:
        """Result text on stdout, literally."""
        sys.stdout.write(self.safe(text) + ("" if text.endswith("\n") else "\n"))
        sys.stdout.flush()

    def note(self, message: str, style: str = "yellow") -> None:
        self.err.print(Text(self.safe(message), style=style))

    def error(self, message: str, hint: str | None = None, tail: Sequence[str] = (), label: str = "error") -> None:
        """A one-line reason on stderr, then its hint and the server's last stderr lines."""
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


async def _silent_progress(progress: float, total: float | None, message: str | None) -> None:
    return None
