"""`--record FILE`: every JSON-RPC message between miroctl and its servers, one JSON object per line.

Each line is `{"time", "server", "session", "direction", "message"}`: `direction` is `to_server` or
`from_server`, `session` counts the server's sessions (a restarted server starts a new one, its ids anew).
Lines are written and flushed as the messages pass, so a crash keeps what was seen; secrets are masked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from miroctl.base.errors import UsageError
from miroctl.base.masking import Masker

if TYPE_CHECKING:
    from pydantic import BaseModel

SCHEMA = "miroctl.recording/1"
TO_SERVER = "to_server"
FROM_SERVER = "from_server"
TapFn = Callable[[str, "Mapping[str, object] | BaseModel"], None]  # a message: the lean client's JSON, or the SDK's


class Recorder:
    """Appends the messages of every server's sessions to one NDJSON file (readable by its owner only)."""

    def __init__(self, path: str, masker: Masker | None = None) -> None:
        self.path = path
        self.masker = masker or Masker()
        self._sessions: dict[str, int] = {}
        try:
            fd = os.open(os.path.expanduser(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as exc:
            raise UsageError(f"--record {path}: cannot write there: {exc.strerror or exc}") from None
        os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self._line({"schema": SCHEMA, "time": _now()})

    def tap(self, server: str) -> TapFn:
        """A function recording the messages of a new session of `server` (the SDK's message objects, or the
        lean client's dicts)."""
        self._sessions[server] = session = self._sessions.get(server, 0) + 1

        def record(direction: str, message: Mapping[str, object] | BaseModel) -> None:
            data = (
                message
                if isinstance(message, Mapping)
                else message.model_dump(mode="json", by_alias=True, exclude_unset=True)
            )
            self._line({"time": _now(), "server": server, "session": session, "direction": direction, "message": data})

        return record

    def _line(self, entry: dict[str, object]) -> None:
        if self._file.closed:
            return
        try:
            self._file.write(json.dumps(self.masker.data(entry), ensure_ascii=False, separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError:  # a full disk ends the recording, never the session it records
            with suppress(OSError):
                self._file.close()

    def close(self) -> None:
        self._file.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
