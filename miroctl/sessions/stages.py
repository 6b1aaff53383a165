"""How far each server has got, as data: the stages a session passes through, reported to whoever listens.

The pool and the manager report them; the command line draws them (render/progress.py) while it waits.
Reporting never blocks and never fails the work: a listener is a plain function called in the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

Stage = Literal["starting", "initialising", "listing", "calling", "done", "failed"]
FINAL: frozenset[str] = frozenset({"done", "failed"})


class TimeBudget(NamedTuple):
    """How long the wait a stage belongs to may take (`seconds`: the server's start-up timeout) and when that
    wait began (`since`, on time.perf_counter's clock): starting and initialising share one wait."""

    seconds: float
    since: float


@dataclass(frozen=True)
class StageEvent:
    """One server reached `stage`: `detail` is the failure's class or what is being asked; `ms` the time
    from its first stage to this one (for done and failed); `budget` the wait it is in, when it has one."""

    server: str
    stage: Stage
    detail: str = ""
    ms: float | None = None
    at: float = field(default_factory=time.perf_counter)
    budget: TimeBudget | None = None


StageFn = Callable[[StageEvent], None]


class StageClock:
    """Sends stage events to a listener, with each server's time since its first stage on the final ones."""

    def __init__(self, listener: StageFn | None = None) -> None:
        self.listener = listener
        self._began: dict[str, float] = {}

    def started(self, server: str) -> bool:
        """Whether `server` has reported a stage since its last final one."""
        return server in self._began

    def __call__(
        self, server: str, stage: Stage, detail: str = "", ms: float | None = None, budget: TimeBudget | None = None
    ) -> None:
        """Report a stage; a final one carries `ms`, by default the time since the server's first stage."""
        if self.listener is None:
            return
        now = time.perf_counter()
        began = self._began.setdefault(server, now)
        if stage in FINAL:
            ms = (now - began) * 1000 if ms is None else ms
            del self._began[server]
        self.listener(StageEvent(server, stage, detail, ms, now, budget))
