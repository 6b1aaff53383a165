"""`--help` printed again from what it printed before, without loading Typer, Rich or the commands.

A command's help is the same every time for the same miroctl, command line and terminal, yet rendering
it costs ~0.4 s (Typer reads every command, Rich lays the panels out). The first `--help` of a command
line is rendered as usual and its bytes kept in the cache (`help/` in miroctl's cache directory); later
ones with the same key print those bytes. Only what Typer printed as a help is kept: a command line
ending in `-h` as an option's value (`call ... --task-id -h`) runs the command and keeps nothing. The key
holds everything the rendering reads: miroctl's version, the size and time of every file of the CLI (and
of this package) and of Typer's, Rich's and click's own, the words,
whether stdout is a terminal and its size, and the environment that changes Rich's output (COLUMNS,
LINES, TERM, COLORTERM, NO_COLOR, FORCE_COLOR, TTY_COMPATIBLE, TTY_INTERACTIVE). Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from miroctl.base import stamps
from miroctl.base.cachedir import cache_dir, private_directory, read_private
from miroctl.base.version import __version__

HELP = ("--help", "-h")
RENDERING_ENV = ("COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE",
                 "TTY_INTERACTIVE")  # fmt: skip
PACKAGE = Path(__file__).resolve().parent.parent
CODE = ("cli", "launch")  # the packages whose files make the help: the Typer app's and this one
MAX_BYTES = 256 * 1024
KEEP = 200  # help renderings kept (the most recent): terminals and command lines come and go


def wanted(words: Sequence[str]) -> bool:
    """A command line that may ask only for help (its last word is --help or -h, and no `--` before it).

    Only a help that Typer rendered is kept (`Launch.help_rendered`): `call ... --task-id -h` is a call."""
    return bool(words) and words[-1] in HELP and "--" not in words


def _key(words: Sequence[str], environ: Mapping[str, str]) -> str:
    digest = hashlib.sha256(f"{__version__}\0{sys.version}\0".encode())
    code = [path for name in CODE for path in sorted((PACKAGE / name).glob("*.py"))]
    stamps.add_files(digest, [*code, *stamps.package_files(("typer", "rich", "click"))], PACKAGE)
    terminal = ""
    if os.isatty(1):
        with suppress(OSError):
            terminal = "x".join(str(n) for n in os.get_terminal_size(1))
    digest.update(f"{terminal}\0{os.isatty(1)}\0".encode())
    for name in RENDERING_ENV:
        digest.update(f"{name}={environ.get(name, '')}\0".encode("utf-8", "surrogateescape"))
    for word in words:
        digest.update(word.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()[:40]


def _path(words: Sequence[str], environ: Mapping[str, str]) -> Path:
    return cache_dir(environ) / "help" / _key(words, environ)


def answer(words: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Print the kept help of this command line, if there is one; True when it was printed. Only a file
    this user wrote in a directory no one else can write to is printed (a shared cache directory could hold
    another user's planted "help"); a symlink is not followed."""
    environ = os.environ if environ is None else environ
    if not wanted(words):
        return False
    data = read_private(_path(words, environ))
    if data is None:
        return False
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]
    return True


class Recorder:
    """sys.stdout as it was, keeping a copy of what is written (Rich sees the same terminal through it)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.parts: list[bytes] = []
        self.encoding = getattr(stream, "encoding", None) or "utf-8"

    @classmethod
    def install(cls, system: Any) -> Recorder:
        recorder = cls(system.stdout)
        system.stdout = recorder
        return recorder

    def uninstall(self, system: Any) -> None:
        system.stdout = self.stream

    def write(self, text: str | bytes) -> int:
        self.parts.append(text if isinstance(text, bytes) else text.encode(self.encoding, "surrogateescape"))
        return int(self.stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def keep(words: Sequence[str], recorder: Recorder, environ: Mapping[str, str] | None = None) -> None:
    """Keep what a help rendering printed (written atomically; a cache that cannot be written is no error)."""
    environ = os.environ if environ is None else environ
    data = b"".join(recorder.parts)
    if not data or len(data) > MAX_BYTES:
        return
    path = _path(words, environ)
    with suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private_directory(os.stat(path.parent)):
            return  # others could replace what is kept there: keep nothing
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".help-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
        kept = sorted(path.parent.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[KEEP:]:
            old.unlink()
