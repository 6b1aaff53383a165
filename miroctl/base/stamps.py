"""Keys that change when code changes: the size and modification time of files, and of installed packages'
own `__init__` (found without importing them). Standard library only: the console script's help cache and
the bundled servers' quick start compute them before anything heavy is loaded."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path


def package_files(names: Iterable[str]) -> list[Path]:
    """The file each installed package is imported from (its `__init__.py`), for the packages found."""
    found = []
    for name in names:
        with suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin:
                found.append(Path(spec.origin))
    return found


def add_files(digest: hashlib._Hash, files: Iterable[Path], root: Path | None = None) -> None:
    """Each file's name (relative to `root`, else its own), size and modification time, into `digest`."""
    for path in files:
        with suppress(OSError):
            stat = path.stat()
            name = path.relative_to(root) if root is not None and path.is_relative_to(root) else path.name
            digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
