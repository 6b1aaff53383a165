"""Where OAuth tokens live between runs: one record per server URL, readable by the user alone.

A record is a JSON file in a 0700 directory (`$MIROCTL_AUTH_DIR`, else `$XDG_DATA_HOME/miroctl/auth`, else
`~/.local/share/miroctl/auth`), written atomically with mode 0600. It holds what a later run needs to use
and refresh the tokens without a browser: the tokens and when the access token expires, the registered
client, and the authorization server's metadata (its token endpoint). With the `keyring` extra and a
working system keyring (or `MIROCTL_AUTH_STORE=keyring`), the tokens and the client go to the keyring and
the file keeps only the public part, so that finding out whether a server has a login never unlocks it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from miroctl.base.errors import ConfigError

if TYPE_CHECKING:  # pydantic models of the SDK: loaded only by the code paths that use tokens
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from pydantic import BaseModel

KEYRING_SERVICE = "miroctl-oauth"
SECRET_FIELDS = ("tokens", "client_info")


def auth_dir() -> Path:
    """The directory of the token records (not created here)."""
    explicit = os.environ.get("MIROCTL_AUTH_DIR")
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "miroctl" / "auth"


def store_kind() -> str:
    """`keyring` when asked for (MIROCTL_AUTH_STORE) or when the extra is installed with a usable backend."""
    wanted = os.environ.get("MIROCTL_AUTH_STORE", "auto").strip().lower()
    if wanted not in ("auto", "file", "keyring"):
        raise ConfigError(f"MIROCTL_AUTH_STORE={wanted!r}: use file, keyring or auto")
    if wanted == "file":
        return "file"
    usable = _keyring_usable()
    if wanted == "keyring" and not usable:
        raise ConfigError(
            "MIROCTL_AUTH_STORE=keyring but no usable system keyring was found",
            hint="pip install 'miroctl[keyring]' and unlock a keyring, or use MIROCTL_AUTH_STORE=file",
        )
    return "keyring" if usable else "file"


def _keyring_usable() -> bool:
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    backend = keyring.get_keyring()
    return not isinstance(backend, fail.Keyring) and getattr(backend, "priority", 0) > 0


@dataclass
class Record:
    """What is stored for one server URL; the secret fields may live in the keyring instead."""

    url: str
    store: str = "file"
    tokens: dict[str, object] | None = None
    expires_at: float | None = None
    client_info: dict[str, object] | None = None
    oauth_metadata: dict[str, object] | None = None
    resource_metadata: dict[str, object] | None = None

    def public(self) -> dict[str, object]:
        body = {key: value for key, value in vars(self).items() if value is not None}
        if self.store == "keyring":
            for key in SECRET_FIELDS:
                body.pop(key, None)
        return body


class TokenStore:
    """The records of every server URL, in files (and the keyring)."""

    def __init__(self, directory: Path | None = None, kind: str | None = None) -> None:
        self.directory = directory or auth_dir()
        self._kind = kind

    @property
    def kind(self) -> str:
        if self._kind is None:
            self._kind = store_kind()
        return self._kind

    def path(self, url: str) -> Path:
        return self.directory / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"

    def has(self, url: str) -> bool:
        """Is anything stored for this URL? A file check only: never touches the keyring."""
        return self.path(url).is_file()

    def load(self, url: str) -> Record | None:
        try:
            data = json.loads(self.path(url).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"unreadable token record {self.path(url)}: {type(exc).__name__}",
                hint="miroctl auth NAME --reset logs in again",
            ) from None
        if not isinstance(data, dict) or data.get("url") != url:
            return None
        record = Record(
            url=url,
            store=str(data.get("store") or "file"),
            tokens=_object(data.get("tokens")),
            expires_at=_number(data.get("expires_at")),
            client_info=_object(data.get("client_info")),
            oauth_metadata=_object(data.get("oauth_metadata")),
            resource_metadata=_object(data.get("resource_metadata")),
        )
        if record.store == "keyring":
            secret = _keyring_get(url)
            for key in SECRET_FIELDS:
                setattr(record, key, secret.get(key))
        return record

    def save(self, record: Record) -> None:
        if record.store == "keyring":
            _keyring_set(record.url, {key: getattr(record, key) for key in SECRET_FIELDS})
        _write_private(self.path(record.url), json.dumps(record.public(), indent=2, sort_keys=True))

    def forget(self, url: str) -> bool:
        """Drop everything stored for this URL; True if there was something."""
        record = None
        with contextlib.suppress(ConfigError):
            record = self.load(url)
        if record is not None and record.store == "keyring":
            _keyring_delete(url)
        try:
            self.path(url).unlink()
        except FileNotFoundError:
            return record is not None
        return True


def stored_secrets(urls: Iterable[str], store: TokenStore | None = None) -> set[str]:
    """The tokens and client secrets stored for these URLs, so that output can mask them."""
    store = store or TokenStore()
    found: set[str] = set()
    for url in urls:
        if not store.has(url):
            continue
        try:
            record = store.load(url)
        except ConfigError:
            continue
        if record is None:
            continue
        values = [(record.tokens or {}).get(key) for key in ("access_token", "refresh_token", "id_token")]
        values.append((record.client_info or {}).get("client_secret"))
        found.update(str(value) for value in values if value)
    return found


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` atomically, mode 0600, in a 0700 directory."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


@contextlib.contextmanager
def _keyring_errors() -> Iterator[None]:
    """A locked or broken keyring is a one-line error with a way around it, not a traceback."""
    from keyring.errors import KeyringError

    try:
        yield
    except KeyringError as exc:
        raise ConfigError(
            f"the system keyring failed: {type(exc).__name__}: {str(exc)[:200]}",
            hint="unlock it, or use MIROCTL_AUTH_STORE=file",
        ) from None


def _object(value: object) -> dict[str, object] | None:
    """A stored JSON object; anything else in its place (a hand-edited file) counts as nothing stored."""
    return value if isinstance(value, dict) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _keyring_get(url: str) -> dict[str, object]:
    import keyring

    with _keyring_errors():
        raw = keyring.get_password(KEYRING_SERVICE, url)
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def _keyring_set(url: str, secret: dict[str, object]) -> None:
    import keyring

    with _keyring_errors():
        keyring.set_password(KEYRING_SERVICE, url, json.dumps(secret))


def _keyring_delete(url: str) -> None:
    import keyring
    from keyring.errors import PasswordDeleteError

    with _keyring_errors(), contextlib.suppress(PasswordDeleteError):
        keyring.delete_password(KEYRING_SERVICE, url)


class ServerTokens:
    """The SDK's TokenStorage for one server URL, over a TokenStore."""

    def __init__(self, store: TokenStore, url: str) -> None:
        self.store = store
        self.url = url
        self.record = store.load(url) or Record(url=url)
        self.record.store = store.kind  # a record moves to the keyring (or back) when next written

    def forget_tokens(self) -> None:
        """Start a login from scratch (in memory: the stored record changes when new tokens arrive)."""
        self.record.tokens, self.record.expires_at = None, None

    def forget_client(self) -> None:
        self.record.client_info = None

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        return OAuthToken.model_validate(self.record.tokens) if self.record.tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.record.tokens = tokens.model_dump(mode="json", exclude_none=True)
        self.record.expires_at = time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None
        self.store.save(self.record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        return OAuthClientInformationFull.model_validate(self.record.client_info) if self.record.client_info else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.record.client_info = client_info.model_dump(mode="json", exclude_none=True)
        self.store.save(self.record)

    def set_metadata(self, oauth_metadata: BaseModel | None, resource_metadata: BaseModel | None) -> None:
        """Keep the discovered metadata, so a later run refreshes at the right token endpoint."""
        self.record.oauth_metadata = _dump(oauth_metadata)
        self.record.resource_metadata = _dump(resource_metadata)
        self.store.save(self.record)


def _dump(model: BaseModel | None) -> dict[str, object] | None:
    return model.model_dump(mode="json", exclude_none=True) if model is not None else None
