"""What the console entry hands to the command it runs: one object, passed along, never a module global.

It carries the command line as the entry read it, what the early start did (the configuration it read,
the servers it started and how to stop them), whether Typer rendered a help, and the stop signals: from
before the first server is started early, SIGTERM and SIGHUP end miroctl the way Ctrl-C does (every
server stopped, one line) instead of killing it with the servers left running.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from miroctl.base.errors import behind
from miroctl.launch.reader import Reading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def ignored(signum: int) -> bool:
    """Whether the signal is ignored, as miroctl found it: `nohup` ignores SIGHUP, a shell script's background
    job SIGINT. miroctl leaves such a signal ignored, never taking it over (Python does the same for SIGINT)."""
    return signal.getsignal(signum) is signal.SIG_IGN


class Stopped(BaseException):
    """A stop signal arrived outside the core's own handling (which turns it into `Interrupted`).

    A BaseException, as KeyboardInterrupt is, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop_in(exc: BaseException) -> Stopped | KeyboardInterrupt | None:
    """The stop signal or Ctrl-C behind an error, if one is behind it; None if none is.

    A signal raises where Python happens to be, and Python 3.11 wraps an exception raised while a class is
    being made (a descriptor's `__set_name__`, as in any dataclass) in a RuntimeError: a signal that lands
    while a module is being imported can come out as that RuntimeError, with the signal as its cause; one
    that lands in a task group comes out as a member of its exception group."""
    return next((found for found in behind(exc) if isinstance(found, Stopped | KeyboardInterrupt)), None)


class Launch:
    """One run of the console entry, from the command line to its exit code."""

    def __init__(self, words: list[str], traceback: bool = False) -> None:
        self.words = words
        self.traceback = traceback  # --traceback was on the command line (it is taken off `words`)
        self.early: Reading | None = None  # a cold call or list as the early start read it
        self.config: object | None = None  # the configuration the early start read,
        self.config_name: str | None = None  # for this --config (None: the default)
        self.help_rendered = False  # Typer printed a command's help (only that is kept in the help cache)
        self.started = 0  # servers started early
        self.early_servers: object | None = None  # those servers, for the session that adopts each
        self._stops: list[Callable[[], None]] = []
        self._holding = False
        self._interrupts: signal.Handlers | Callable[[int, FrameType | None], object] | int | None = None
        self._pending: int | None = None

    def take_config(self, name: str | None) -> object | None:
        """The configuration the early start read for this --config, once (reading the bundled profile again
        costs ~0.07 CPU-s); None when it read none or another."""
        config, self.config = self.config, None
        return config if config is not None and self.config_name == (name or None) else None

    def at_exit(self, stop: Callable[[], None]) -> None:
        """Run `stop` when the command has run, however it ended (the last registered runs first)."""
        self._stops.append(stop)

    def close(self) -> None:
        """Run what `at_exit` registered, each once."""
        while self._stops:
            self._stops.pop()()

    def catch_stop_signals(self) -> None:
        """From now on SIGTERM and SIGHUP raise `Stopped` (the core takes them over while it runs)."""
        for signum in STOP_SIGNALS:
            if not ignored(signum):
                signal.signal(signum, self._on_signal)

    def catch_interrupts(self) -> None:
        """Until `release_interrupts`, Ctrl-C raises `Stopped` too: Typer turns a KeyboardInterrupt while it
        reads the command line into a silent exit 130, and a Ctrl-C then must still say what it stopped."""
        if self._interrupts is None and not ignored(signal.SIGINT):
            self._interrupts = signal.signal(signal.SIGINT, self._on_signal) or signal.default_int_handler

    def release_interrupts(self) -> None:
        """Ctrl-C as before `catch_interrupts` (a KeyboardInterrupt): the command's error boundary reports it."""
        if self._interrupts is not None:
            signal.signal(signal.SIGINT, self._interrupts)
            self._interrupts = None

    @contextmanager
    def holding_signals(self) -> Iterator[None]:
        """Stop signals (and Ctrl-C) wait until the block is done: a server started in it is registered
        to be stopped before the signal ends the run."""
        previous = None if ignored(signal.SIGINT) else signal.signal(signal.SIGINT, self._on_signal)
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        pending, self._pending = self._pending, None
        if pending == signal.SIGINT and self._interrupts is None:
            raise KeyboardInterrupt
        if pending is not None:
            raise Stopped(pending)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._holding:
            self._pending = self._pending or signum
            return
        if signum == signal.SIGINT and self._interrupts is None:
            raise KeyboardInterrupt
        raise Stopped(signum)
