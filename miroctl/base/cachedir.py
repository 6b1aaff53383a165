"""Where miroctl keeps what it may forget: $MIROCTL_CACHE_DIR, else $XDG_CACHE_HOME/miroctl/tools, else
~/.cache/miroctl/tools (standard library only: the console script reads it before anything is loaded)."""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Mapping
from pathlib import Path

CACHE_ENV = "MIROCTL_CACHE_DIR"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$MIROCTL_CACHE_DIR, else $XDG_CACHE_HOME/miroctl/tools, else ~/.cache/miroctl/tools."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "miroctl" / "tools"


def cache_home(env: Mapping[str, str] | None = None) -> Path | None:
    """The user's cache directory: $XDG_CACHE_HOME (an absolute path), else $HOME/.cache, else the home the
    password database gives this user (HOME is unset under cron, systemd units and `env -i`); None when there
    is none. Never a directory shared by every user, such as the temporary directory."""
    env = os.environ if env is None else env
    given = env.get("XDG_CACHE_HOME")
    if given and os.path.isabs(given):
        return Path(given)
    home = env.get("HOME")
    if not home:
        try:
            home = pwd.getpwuid(os.geteuid()).pw_dir
        except (KeyError, OSError):
            return None
    return Path(home) / ".cache" if home and os.path.isabs(home) else None


def private_to_user(entry: os.stat_result, directory: os.stat_result, uid: int | None = None) -> bool:
    """Whether a cached file may be trusted: a regular file owned by this user, in a directory owned by this
    user (or root) that no group or other user can write to (where no one else could have put or replaced it)."""
    uid = os.geteuid() if uid is None else uid
    return stat.S_ISREG(entry.st_mode) and entry.st_uid == uid and private_directory(directory, uid)


def private_directory(directory: os.stat_result, uid: int | None = None) -> bool:
    """A directory owned by this user (or root) that no group or other user can write to."""
    uid = os.geteuid() if uid is None else uid
    return (
        stat.S_ISDIR(directory.st_mode)
        and directory.st_uid in (uid, 0)
        and not directory.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def read_private(path: Path) -> bytes | None:
    """The bytes of `path` when `private_to_user` trusts it (a symlink is not followed); None otherwise."""
    try:
        directory = os.stat(path.parent)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not private_to_user(os.fstat(fd), directory):
            return None
        return file.read()
