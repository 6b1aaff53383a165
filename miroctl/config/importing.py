"""`config import`: an editor's servers written as miroctl server files (one yaml per server).

The files hold the same templates miroctl resolves when it reads the editor's config directly, so what
the client took from the environment stays a `${oc.env:VAR}` reference. A credential the client's file
holds literally is kept (the server would not work without it) and named in a warning.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from miroctl.base.errors import ConfigError, UsageError
from miroctl.base.masking import argument_secrets, credentials
from miroctl.config.ecosystem import Template

ORDER = (
    "name",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "transport",
    "headers",
    "enabled",
    "timeout",
    "startup_timeout",
)


@dataclass
class Planned:
    """One server file to write, and what the user should know about it."""

    name: str
    path: Path
    text: str
    literal_secrets: list[str] = field(default_factory=list)  # where (env.KEY, headers.X, args) only


@dataclass
class Plan:
    files: list[Planned] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "NAME: why"


def plan(templates: Sequence[Template], into: Path, *, force: bool = False) -> Plan:
    """The files to write; UsageError naming the files that exist when not forced (nothing is written)."""
    result = Plan()
    merged: dict[str, Template] = {t.name: t for t in templates}  # a later scope wins a name, as in the client
    for template in merged.values():
        if template.error:
            result.skipped.append(f"{template.name}: {template.error}")
            continue
        document = {"name": template.name, **template.settings}
        ordered = {k: document[k] for k in ORDER if k in document} | document
        path = into / f"{_file_name(template.name)}.yaml"
        result.files.append(Planned(template.name, path, _dump(ordered), _literal_secrets(template.settings)))
    existing = [str(p.path) for p in result.files if os.path.lexists(p.path)]  # a dangling symlink too
    if existing and not force:
        raise UsageError(f"would overwrite {', '.join(existing)}", hint="add --force to replace them")
    return result


def write(result: Plan) -> None:
    """Write every planned file; a file with a literal credential is readable by its owner only.

    Each file is written beside its place and renamed onto it, so what stood there (a symlink to a file
    elsewhere, say) is replaced, never written through."""
    for planned in result.files:
        try:
            planned.path.parent.mkdir(parents=True, exist_ok=True)
            mode = 0o600 if planned.literal_secrets else 0o644
            fd, temporary = tempfile.mkstemp(dir=planned.path.parent, prefix=f".{planned.path.name}-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    os.fchmod(handle.fileno(), mode)
                    handle.write(planned.text)
                os.replace(temporary, planned.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as exc:
            raise ConfigError(f"cannot write {planned.path}: {exc.strerror or exc}") from None


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-") or "server"


def _dump(document: Mapping[str, object]) -> str:
    import yaml

    return yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, default_flow_style=False)


def _literal_secrets(settings: Mapping[str, object]) -> list[str]:
    """Where a credential stands literally (not from the environment): `env.API_KEY`, `headers.Authorization`."""
    found = []
    for section in ("env", "headers"):
        values = settings.get(section)
        for key, value in values.items() if isinstance(values, Mapping) else ():
            if isinstance(value, str) and "${oc.env:" not in value and credentials(value, str(key)):
                found.append(f"{section}.{key}")
    given = settings.get("args")
    args = [str(a) for a in given] if isinstance(given, list) else []
    if argument_secrets([a for a in args if "${oc.env:" not in a]):
        found.append("args")
    url = settings.get("url")
    if isinstance(url, str) and "${oc.env:" not in url and credentials(url):
        found.append("url")
    return found
