"""A system keyring stand-in for tests: a keyring backend that keeps its passwords in a JSON file.

PYTHON_KEYRING_BACKEND=tests.fakes.keyring_backend.FileKeyring FAKE_KEYRING_FILE=/tmp/k.json miroctl ...
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1.0  # type: ignore[assignment]

    @property
    def _path(self) -> Path:
        return Path(os.environ["FAKE_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        return json.loads(self._path.read_text()) if self._path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\n{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\n{username}"] = password
        self._path.write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}\n{username}", None) is None:
            raise PasswordDeleteError(username)
        self._path.write_text(json.dumps(data))
