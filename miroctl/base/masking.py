"""Keeping secrets out of output: plausible credentials become ****, as whole tokens, and so do URL credentials.

What counts as a credential: values named as one (a key, header or flag saying token, key, secret,
password, auth...), and long random-looking values whatever their name. Short and common values
(`true`, `1234`, `info`, `application/json`, a timezone) never do: masking them would corrupt output
(`{"ok": ****}`) without protecting anything. A secret is replaced only where it stands as a whole
token, so `info` could never turn "information" into "****rmation".
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, unquote, urlsplit

MASK = "****"
J = TypeVar("J")
MIN_SECRET_LENGTH = 6  # shorter values are never masked: they are words, flags, PINs of no use to anyone
RANDOM_MIN_LENGTH = 16  # an unnamed value must be this long (and look random) to be taken for a credential
_SECRET_KEY = re.compile(
    r"(token|secret|passw|pwd|(^|[_-])(key|pass|sig|signature)($|[_-])|apikey|private[_-]?key|auth(?!or(s|ity)?($|[^a-z]))|credential"
    r"|cookie|session[_-]?id)",
    re.IGNORECASE,
)
# Names that say secret but hold something else: where a token comes from, what kind it is, how many.
_NOT_SECRET_KEY = re.compile(
    r"([_-](url|uri|endpoint|host|file|path|dir|type|mode|method|kind|scheme|header|name|count|limit|ttl|expiry"
    r"|expires|enabled)s?$|^max[_-]|tokens$)",
    re.IGNORECASE,
)
_COMMON = frozenset(
    {"true", "false", "yes", "no", "on", "off", "null", "none", "bearer", "basic", "token", "oauth", "default"}
)
_TOKEN_CHAR = "A-Za-z0-9_"
_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^\s/@:\"'<>]*)(?::(?P<pw>[^\s/@\"'<>]*))?@")
_QUERY_VALUE = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&#\s\"'<>\\]+)")


def looks_secret(key: str) -> bool:
    """Whether a key name suggests its value is a secret (API_KEY, Authorization, db_password...)."""
    return bool(_SECRET_KEY.search(key)) and not _NOT_SECRET_KEY.search(key)


def random_looking(value: str) -> bool:
    """A long value with the mix of a generated token (letters and digits, case changes, high entropy)."""
    text = value.strip()
    if len(text) < RANDOM_MIN_LENGTH or any(c.isspace() for c in text) or _path_like(text) or "://" in text:
        return False
    letters = sum(c.isalpha() for c in text)
    digits = sum(c.isdigit() for c in text)
    changes = sum(_kind(a) != _kind(b) for a, b in pairwise(text) if a.isalnum() and b.isalnum())
    if letters >= 4 and digits >= 2:
        enough = changes >= max(4, len(text) // 5)
    else:  # letters only: case must change often, or it is words in CamelCase
        enough = any(c.islower() for c in text) and any(c.isupper() for c in text) and changes > len(text) // 3
    return enough and _entropy(text) >= 3.0


def plausible(value: str) -> bool:
    """Whether a value named as a secret can be one: not short, not a number, flag or well-known word."""
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH or text.lower() in _COMMON:
        return False
    return not text.replace(".", "").replace("-", "").isdigit()


def credentials(value: str, key: str | None = None) -> set[str]:
    """The credentials inside one configured value: itself, its `Scheme credential` part, or its URL's."""
    text = value.strip()
    if "://" in text:
        return url_credentials(text)
    found: set[str] = set()
    if key is not None and looks_secret(key) and plausible(text):
        found.add(text)
        scheme, _, credential = text.partition(" ")
        if scheme.isalpha() and plausible(credential):
            found.add(credential.strip())
    elif random_looking(text):
        found.add(text)
    else:
        scheme, _, credential = text.partition(" ")
        if scheme.isalpha() and random_looking(credential):
            found.add(credential.strip())
    return found


def url_credentials(url: str) -> set[str]:
    """A URL's password (or token-like user name) and the values of its secret-looking query parameters."""
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return set()
    found = {unquote(password)} if password else set()
    if user and not password and random_looking(unquote(user)):
        found.add(unquote(user))
    for name, item in parse_qsl(parts.query):
        found |= {item} if looks_secret(name) and plausible(item) else set()
    return {f for f in found if len(f) >= MIN_SECRET_LENGTH}


def could_be_secret(value: str, key: str | None = None) -> bool:
    """Whether an interpolated value may be a credential: named as one, or random-looking; never a path
    of a file or directory that exists (a state dir, a root to read under)."""
    text = value.strip()
    if not credentials(text, key):
        return False
    try:
        return not os.path.exists(os.path.expanduser(text))
    except (OSError, ValueError):
        return True


def header_secrets(headers: Mapping[str, str]) -> set[str]:
    """Credentials among header values: named ones (Authorization, X-Api-Key...) and random-looking ones."""
    return {found for name, value in headers.items() for found in credentials(value, name)}


def secret_values(mapping: Mapping[str, str]) -> set[str]:
    """Credentials among the values of a mapping (a server's env): by key name or by shape."""
    return {found for key, value in mapping.items() if isinstance(value, str) for found in credentials(value, key)}


def argument_secrets(args: Sequence[str]) -> set[str]:
    """Credentials in a command line: `--token VALUE`, `--api-key=VALUE`, random-looking or URL values."""
    found: set[str] = set()
    previous = None
    for arg in args:
        flag, sep, inline = arg.partition("=")
        if arg.startswith("-") and sep:
            found |= credentials(inline, flag.lstrip("-"))
        else:
            found |= credentials(arg, previous.lstrip("-") if previous and previous.startswith("-") else None)
        previous = arg
    return found


class Masker:
    """Replaces every known secret where it stands as a whole token, raw or JSON-escaped, and URL credentials."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in secrets:
            if value and len(value) >= MIN_SECRET_LENGTH and value.lower() not in _COMMON:
                forms.add(value)
                forms.add(json.dumps(value)[1:-1])
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)
        alternatives = "|".join(re.escape(f) for f in self._forms)
        whole = rf"(?<![{_TOKEN_CHAR}])(?:{alternatives})(?![{_TOKEN_CHAR}])"
        self._pattern = re.compile(whole) if self._forms else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def with_secrets(self, secrets: Iterable[str]) -> Masker:
        return Masker([*self._forms, *secrets])

    def text(self, text: str) -> str:
        if not text:
            return text
        if self._pattern is not None:
            text = self._pattern.sub(MASK, text)
        return mask_url_credentials(text)

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


def mask_url_credentials(text: str) -> str:
    """`user:****@` for a URL's password, `?token=****` for secret-looking query parameters, in any text."""
    if "@" in text and "://" in text:
        text = _USERINFO.sub(_masked_userinfo, text)
    if "=" in text:
        text = _QUERY_VALUE.sub(_masked_query, text)
    return text


def _masked_userinfo(match: re.Match[str]) -> str:
    user, password = match.group("user"), match.group("pw")
    if password:
        return f"{match.group('head')}{user}:{MASK}@"
    if random_looking(unquote(user)):
        return f"{match.group('head')}{MASK}@"
    return match.group(0)


def _masked_query(match: re.Match[str]) -> str:
    if looks_secret(match.group("name")) and match.group("value") != MASK:
        return match.group("head") + MASK
    return match.group(0)


def _is_secret_item(key: Any, value: Any) -> bool:
    return isinstance(key, str) and isinstance(value, str) and looks_secret(key) and plausible(value)


def _kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.islower() else 2


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _path_like(text: str) -> bool:
    return text.startswith(("/", "~", "./", "../")) or (len(text) > 2 and text[1:3] in (":\\", ":/"))
