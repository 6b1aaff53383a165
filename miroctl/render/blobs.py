"""Saving the binary parts of a result (images, audio, blob resources) to files for human output.

Names come from the server (a tool's or resource's name, a MIME type): they are reduced to a safe ASCII
stem and extension. A file is only ever created new: an existing file or a symlink of that name (one
planted in a shared directory) is never followed or overwritten; the next free name is taken instead.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miroctl.base.errors import UsageError

_EXTRA_TYPES = {"image/webp": ".webp", "audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_EXTENSION = re.compile(r"\.[a-z0-9]{1,8}")
MAX_STEM = 64
MAX_TRIES = 1000


@dataclass
class Saved:
    """Where each binary part went, and the parts that could not be saved (with why)."""

    paths: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def binary_parts(content: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """(mime type, bytes) for every image, audio and blob-resource block of a result."""
    parts = []
    for block in content:
        data, mime = None, None
        if block.get("type") in ("image", "audio"):
            data, mime = block.get("data"), block.get("mimeType")
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            data, mime = block["resource"].get("blob"), block["resource"].get("mimeType")
        if isinstance(data, str):
            try:
                parts.append((str(mime or "application/octet-stream"), base64.b64decode(data, validate=True)))
            except (binascii.Error, ValueError):
                continue
    return parts


def check_dir(directory: str | None) -> None:
    """--save-dir must be a directory or creatable as one (exit 2 before anything is sent)."""
    if directory and Path(directory).expanduser().exists() and not Path(directory).expanduser().is_dir():
        raise UsageError(f"--save-dir {directory}: not a directory", hint="give a directory (it is created if new)")


def save(content: list[dict[str, Any]], name: str, directory: str | None) -> Saved:
    """Write each binary part to DIRECTORY (a new temp dir when None) under a safe, new file name."""
    parts, saved = binary_parts(content), Saved()
    if not parts:
        return saved
    try:
        target = Path(directory).expanduser() if directory else Path(tempfile.mkdtemp(prefix="miroctl-"))
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        saved.problems.append(f"cannot save into {directory}: {exc.strerror or exc}")
        return saved
    stem = safe_stem(name)
    for index, (mime, data) in enumerate(parts, start=1):
        try:
            saved.paths.append(str(_write_new(target, f"{stem}-{index}", _extension(mime), data)))
        except OSError as exc:
            saved.problems.append(f"cannot save part {index} ({mime}) in {target}: {exc.strerror or exc}")
    return saved


def safe_stem(name: str) -> str:
    """A file stem from server text: ASCII letters, digits, - and _ only, not hidden, not too long."""
    return _UNSAFE.sub("_", name).strip("_-.")[:MAX_STEM] or "result"


def _extension(mime: str) -> str:
    extension = _EXTRA_TYPES.get(mime) or mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"
    return extension if _EXTENSION.fullmatch(extension) else ".bin"


def _write_new(directory: Path, stem: str, extension: str, data: bytes) -> Path:
    """Create a file that did not exist (never through a symlink), taking the next free name if needed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for attempt in range(MAX_TRIES):
        path = directory / (f"{stem}{extension}" if attempt == 0 else f"{stem}.{attempt}{extension}")
        try:
            handle = os.open(path, flags, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return path
    raise FileExistsError(f"{MAX_TRIES} files named {stem}.*{extension} exist already")
