"""Where the daemons live: one 0700 directory per user, and per daemon its socket, lock, record and log
(standard library only: the console entry's decision reads it)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miroctl.base.errors import UsageError
from miroctl.base.rundir import runtime_dir

__all__ = ["Place", "places", "private_dir", "runtime_dir"]

SOCKET_LIMIT = 107  # bytes in a Unix socket's path (sun_path, less its terminating NUL)
LOG_LIMIT = 5 * 2**20  # bytes of a daemon's log before it is moved to KEY.log.1 (one old log is kept)


def private_dir(path: Path) -> Path:
    """The directory, made 0700 if new; one of another user's, or open to others, is refused."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise UsageError(f"{path} is not a directory of this user's", hint="set XDG_RUNTIME_DIR to one that is")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


@dataclass(frozen=True)
class Place:
    """One daemon's files, named by its configuration key."""

    directory: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.key}.lock"

    @property
    def in_use(self) -> Path:
        """Held shared by each command between finding the daemon and its answer; the daemon leaves when idle
        only if it can hold it alone."""
        return self.directory / f"{self.key}.use"

    @property
    def record(self) -> Path:
        return self.directory / f"{self.key}.json"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"

    @property
    def old_log(self) -> Path:
        return self.directory / f"{self.key}.log.1"

    def rotate_log(self, into: tuple[int, ...] = ()) -> bool:
        """Move a log of LOG_LIMIT bytes or more to `old_log` (replacing the one there) and start a new one,
        made the descriptors `into` (the daemon's stdout and stderr); whether it did."""
        try:
            if self.log.stat().st_size < LOG_LIMIT:
                return False
            os.replace(self.log, self.old_log)
        except OSError:  # none yet, or another process has just moved it
            return False
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for target in into:
            os.dup2(fd, target)
        os.close(fd)
        return True

    def checked(self) -> Place:
        """This place, its directory made private; a socket path too long for the system is a usage error."""
        if len(os.fsencode(self.socket)) > SOCKET_LIMIT:
            raise UsageError(
                f"the daemon's socket path would be too long: {self.socket}",
                hint="set XDG_RUNTIME_DIR to a shorter directory, or use --no-daemon",
            )
        private_dir(self.directory)
        return self

    def read_record(self) -> dict[str, Any]:
        """What the daemon wrote about itself (pid, origin, config), or {}."""
        try:
            data = json.loads(self.record.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


def places(directory: Path) -> list[Place]:
    """Every daemon that left a record in `directory`, oldest first."""
    found = []
    for record in directory.glob("*.json"):
        try:
            found.append((record.stat().st_mtime, record.stem))
        except OSError:  # removed meanwhile: that daemon has just exited
            continue
    return [Place(directory, key) for _, key in sorted(found)]
