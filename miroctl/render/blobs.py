"""Saving the binary parts of a result (images, audio, blob resources) to files for human output."""

from __future__ import annotations

import base64
import binascii
import mimetypes
import tempfile
from pathlib import Path
from typing import Any

_EXTRA_TYPES = {"image/webp": ".webp", "audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav"}


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
                parts.append((mime or "application/octet-stream", base64.b64decode(data, validate=True)))
            except (binascii.Error, ValueError):
                continue
    return parts


def save(content: list[dict[str, Any]], tool: str, directory: str | None) -> list[str]:
    """Write each binary part to DIRECTORY (a new temp dir when None) and return the paths."""
    parts = binary_parts(content)
    if not parts:
        return []
    target = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="miroctl-"))
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in tool) or "result"
    for index, (mime, data) in enumerate(parts, start=1):
        extension = _EXTRA_TYPES.get(mime) or mimetypes.guess_extension(mime) or ".bin"
        path = target / f"{stem}-{index}{extension}"
        path.write_bytes(data)
        paths.append(str(path))
    return paths
