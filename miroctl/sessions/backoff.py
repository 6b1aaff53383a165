"""Waiting longer after each failure in a row: one object for every retry delay of the pool."""

from __future__ import annotations

import time


class Backoff:
    """Waits that double with each failure in a row, from `first` up to `cap`; a success starts afresh.

    The first `free` failures in a row cost no wait at all (a server that crashed once restarts at once).
    """

    def __init__(self, first: float, cap: float, free: int = 0) -> None:
        self.first, self.cap, self.free = first, cap, free
        self.failures = 0
        self._since = 0.0

    def failed(self) -> None:
        self.failures += 1
        self._since = time.monotonic()

    def succeeded(self) -> None:
        self.failures = 0

    @property
    def delay(self) -> float:
        """The wait after the latest failure."""
        if self.failures <= self.free:
            return 0.0
        return float(min(self.first * 2 ** (self.failures - self.free - 1), self.cap))

    def remaining(self) -> float:
        """Seconds still to wait before the next try (0 when it may be tried now)."""
        return max(0.0, self.delay - (time.monotonic() - self._since))
