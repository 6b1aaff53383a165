"""Keeping secrets out of output: known secret values and values of secret-looking keys become ****."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast

MASK = "****"
J = TypeVar("J")
MIN_SECRET_LENGTH = 3
_SECRET_KEY = re.compile(
    r"(token|secret|passw|pwd|(^|[_-])key($|[_-])|apikey|private[_-]?key|auth|credential|cookie|session[_-]?id)",
    re.IGNORECASE,
)


def looks_secret(key: str) -> bool:
    """Whether a key name suggests its value is a secret (API_KEY, Authorization, db_password...)."""
    return bool(_SECRET_KEY.search(key))


class Masker:
    """Replaces every known secret value in text, in raw and JSON-escaped form."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in secrets:
            if value and len(value) >= MIN_SECRET_LENGTH:
                forms.add(value)
                forms.add(json.dumps(value)[1:-1])
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(f) for f in self._forms)) if self._forms else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def with_secrets(self, secrets: Iterable[str]) -> Masker:
        return Masker([*self._forms, *secrets])

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def data(self, value: J) -> J:
        """Mask secrets inside any JSON-like value (same shape back); values of secret-looking keys whole."""
        return cast(J, self._data(value))

    def _data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: (MASK if _is_secret_item(k, v) else self._data(v)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._data(v) for v in value]
        return value


def _is_secret_item(key: Any, value: Any) -> bool:
    return isinstance(key, str) and isinstance(value, str) and bool(value) and looks_secret(key)


def header_secrets(headers: Mapping[str, str]) -> set[str]:
    """Header values, and the credential alone of `Scheme credential` values (Bearer, Basic, Token...)."""
    found = set()
    for value in headers.values():
        found.add(value)
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme.isalpha():
            found.add(credential.strip())
    return found


def could_be_secret(value: str) -> bool:
    """False for interpolated values that cannot be credentials and would only mangle output if masked:
    numbers, booleans, and paths of files or directories that exist (a state dir, a root to read under)."""
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH or text.lower() in ("true", "false") or text.replace(".", "").isdigit():
        return False
    try:
        return not os.path.exists(os.path.expanduser(text))
    except (OSError, ValueError):
        return True


def secret_values(mapping: Mapping[str, str]) -> set[str]:
    """The values of a mapping whose keys look secret."""
    return {v for k, v in mapping.items() if isinstance(v, str) and looks_secret(k)}
