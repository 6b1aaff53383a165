"""The call log: one JSON object per line for every step of a call, secrets masked, appended to a file.

Lines carry at least `ts` (UTC, ISO 8601) and `event` (call_start, decision, autocorrect, server_retry,
fallback, call_success, call_error, server_failed, tools_changed, ...), plus the step's fields: server, tool,
duration_ms, arguments. Whole results are never logged (`call_end` is left out for that reason).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from miroctl.base import escaping
from miroctl.base.errors import ConfigError
from miroctl.base.masking import Masker

SKIPPED = frozenset({"call_end"})


class CallLog:
    """An append-only JSON-lines file; each line is flushed as it is written."""

    def __init__(self, path: str, masker: Masker | None = None, task_id: str | None = None) -> None:
        self.path = path
        self.masker = masker or Masker()
        self.task_id = task_id
        self._lock = threading.Lock()
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO | None = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise ConfigError(f"cannot open the call log {path}: {exc.strerror or exc}") from None

    def write(self, event: str, fields: Mapping[str, object]) -> None:
        if event in SKIPPED or self._file is None:
            return
        line: dict[str, object] = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event}
        if self.task_id:
            line["task_id"] = self.task_id
        line.update(self.masker.data(dict(fields)))
        text = escaping.dumps(line)  # strict JSON: a NaN from a server never breaks the log
        with self._lock:
            self._file.write(text + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
