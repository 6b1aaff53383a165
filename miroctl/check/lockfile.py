"""The tool-surface lock: what each healthy server's tools look like, and how that changed since.

`--lock FILE` writes names, descriptions and input schemas as sorted, indented JSON (stable, so it
diffs well in review). `--against FILE` compares a run with it: a removed tool, a removed or newly
required parameter, or a changed type of a required one is *breaking*; anything else that differs
(an added tool, a description, an optional parameter) is *drift*. Either fails the check.

With `check --strict`, the lock also records each server's lint findings (by tool, path and rule): a later
`--against` run accepts those as a known baseline, fails (exit 7) only on new ones, and lists the fixed ones.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict, cast

from miroctl.base import escaping
from miroctl.base.errors import ConfigError
from miroctl.base.text import counted
from miroctl.check.lint import Finding

if TYPE_CHECKING:
    from miroctl.check.report import ProbeReport

SCHEMA = "miroctl.lock/1"
Surface = dict[str, dict[str, dict[str, object]]]  # server -> tool -> {description, input_schema}


class LockedServer(TypedDict):
    """A server in a lock file: its tools as written ({description, input_schema}, read where compared)."""

    tools: dict[str, object]
    lint: NotRequired[object]  # the lint keys of a --strict run


class Lock(TypedDict):
    """A lock file (`miroctl.lock/1`), as `read` checked it."""

    schema: str
    servers: dict[str, LockedServer]


@dataclass(frozen=True)
class Change:
    """One difference between the lock file and what a server lists now."""

    server: str
    tool: str | None  # None: the change is about the whole server
    kind: str  # added | removed | changed
    severity: str  # breaking | drift
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {
            "server": self.server,
            "tool": self.tool,
            "kind": self.kind,
            "severity": self.severity,
            "detail": self.detail,
        }


@dataclass
class LockCheck:
    """What --lock and --against did in one run."""

    against: str | None = None
    written: str | None = None
    changes: list[Change] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # locked servers this run could not compare
    baseline: dict[str, set[str]] = field(default_factory=dict)  # server -> lint keys the lock file accepts
    lint_new: list[Finding] = field(default_factory=list)  # findings the baseline does not have
    lint_fixed: list[tuple[str, str]] = field(default_factory=list)  # (server, key) in the baseline, gone now

    def accepts(self, finding: Finding) -> bool:
        return finding.key in self.baseline.get(finding.server, set())

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.severity == "breaking"]

    @property
    def drift(self) -> list[Change]:
        return [c for c in self.changes if c.severity == "drift"]

    def to_dict(self) -> dict[str, object]:
        return {
            "against": self.against,
            "written": self.written,
            "ok": not self.changes,
            "breaking": len(self.breaking),
            "drift": len(self.drift),
            "changes": [c.to_dict() for c in self.changes],
            "unchecked": self.unchecked,
            **(
                {
                    "lint_new": [{"server": f.server, **f.to_dict()} for f in self.lint_new],
                    "lint_fixed": [{"server": server, "finding": key} for server, key in self.lint_fixed],
                }
                if self.baseline
                else {}
            ),
        }


# ---------------------------------------------------------------------------------------------- file


Tools = dict[str, dict[str, object]]  # tool -> {description, input_schema}


def surface(reports: Iterable[ProbeReport], mask: Callable[[Tools], Tools] | None = None) -> Surface:
    """The tools of every healthy server, as the lock records them (secrets masked by `mask`)."""
    found: Surface = {}
    for report in reports:
        if report.ok:
            tools: Tools = {
                t.name: {"description": t.description, "input_schema": dict(t.input_schema)} for t in report.tools
            }
            found[report.server] = mask(tools) if mask is not None else tools
    return found


def document(
    servers: Surface, previous: Lock | None = None, lint: Mapping[str, list[str]] | None = None
) -> dict[str, object]:
    """A lock document: these servers (with their lint keys, after --strict), plus the previous file's servers
    that this run did not see healthy."""
    kept: dict[str, object] = dict(previous["servers"]) if previous is not None else {}
    for name, tools in servers.items():
        kept[name] = {"tools": tools, **({"lint": lint[name]} if lint is not None and name in lint else {})}
    return {"schema": SCHEMA, "servers": kept}


def compare_lint(check: LockCheck, locked: Lock, findings: Mapping[str, list[Finding]]) -> None:
    """Findings against the lock's baseline (only servers whose lock entry recorded one, i.e. --strict)."""
    for server, found in sorted(findings.items()):
        entry = locked["servers"].get(server)
        recorded = entry.get("lint") if entry is not None else None
        if not isinstance(recorded, list):
            continue
        baseline = {str(key) for key in recorded}
        check.baseline[server] = baseline
        check.lint_new += [f for f in found if f.key not in baseline]
        current = {f.key for f in found}
        check.lint_fixed += [(server, key) for key in sorted(baseline - current)]


def dumps(lock: Mapping[str, object]) -> str:
    return escaping.dumps(lock, indent=2, sort_keys=True) + "\n"


def write(path: str | Path, lock: Mapping[str, object]) -> None:
    """Write atomically, so an interrupted run never leaves half a lock file."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(dumps(lock))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | Path) -> Lock:
    """A lock file, or ConfigError (exit 2) saying in one line why it cannot be used."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"lock file not found: {path}", hint="write one with: miroctl check --lock FILE") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read lock file {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"bad JSON in lock file {path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("servers"), dict):
        raise ConfigError(f'{path} is not a miroctl lock file (expected "schema": "{SCHEMA}")')
    for name, entry in data["servers"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("tools"), dict):
            raise ConfigError(f"{path}: server {name!r} has no tools mapping")
    return cast("Lock", data)  # its schema, servers and their tools mappings are checked above


# ---------------------------------------------------------------------------------------------- compare


def compare(locked: Lock, current: Surface) -> LockCheck:
    """Differences between a lock document and the current surface of the healthy servers."""
    result = LockCheck()
    locked_servers = locked["servers"]
    for server in sorted(current):
        if server not in locked_servers:
            count = len(current[server])
            result.changes.append(
                Change(server, None, "added", "drift", f"server is not in the lock file ({counted(count, 'tool')})")
            )
            continue
        result.changes.extend(compare_tools(server, locked_servers[server]["tools"], current[server]))
    result.unchecked = sorted(s for s in locked_servers if s not in current)
    return result


def compare_tools(server: str, old: Mapping[str, object], new: Mapping[str, Mapping[str, object]]) -> list[Change]:
    changes = [Change(server, name, "removed", "breaking", "tool removed") for name in sorted(set(old) - set(new))]
    changes += [Change(server, name, "added", "drift", "tool added") for name in sorted(set(new) - set(old))]
    for name in sorted(set(old) & set(new)):
        for severity, detail in tool_changes(old[name], new[name]):
            changes.append(Change(server, name, "changed", severity, detail))
    return changes


def tool_changes(locked: object, new: Mapping[str, object]) -> list[tuple[str, str]]:
    old = _mapping(locked)
    found = []
    if (old.get("description") or "") != (new.get("description") or ""):
        found.append(("drift", "description changed: " + _before_after(old.get("description"), new.get("description"))))
    return found + schema_changes(_mapping(old.get("input_schema")), _mapping(new.get("input_schema")))


def _mapping(value: object) -> Mapping[str, object]:
    """A part of a tool as recorded; anything but an object (a hand-edited file) as an empty one."""
    return value if isinstance(value, Mapping) else {}


def schema_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[tuple[str, str]]:
    """Parameter-level differences of two input schemas, each with its severity."""
    old_props, new_props = _properties(old), _properties(new)
    old_req, new_req = _required(old), _required(new)
    found = [("breaking", f"parameter {p!r} removed") for p in sorted(set(old_props) - set(new_props))]
    for name in sorted(set(new_props) - set(old_props)):
        required = name in new_req
        label = "required" if required else "optional"
        found.append(("breaking" if required else "drift", f"new {label} parameter {name!r}"))
    for name in sorted(set(old_props) & set(new_props)):
        found += _parameter_changes(name, old_props[name], new_props[name], name in old_req, name in new_req)
    if _rest(old) != _rest(new):
        found.append(("drift", "input schema changed outside its parameters"))
    return found


def _parameter_changes(
    name: str, old: object, new: object, was_required: bool, required: bool
) -> list[tuple[str, str]]:
    found = []
    if required and not was_required:
        found.append(("breaking", f"parameter {name!r} is now required"))
    elif was_required and not required:
        found.append(("drift", f"parameter {name!r} is now optional"))
    if old == new:
        return found
    old_type, new_type = _type(old), _type(new)
    if old_type != new_type:
        severity = "breaking" if required else "drift"
        found.append((severity, f"parameter {name!r} type changed: {old_type} -> {new_type}"))
    else:
        found.append(("drift", f"parameter {name!r} schema changed"))
    return found


def _properties(schema: Mapping[str, object]) -> dict[str, object]:
    props = schema.get("properties")
    return dict(props) if isinstance(props, Mapping) else {}


def _required(schema: Mapping[str, object]) -> set[str]:
    required = schema.get("required")
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def _rest(schema: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in schema.items() if k not in ("properties", "required")}


def _type(prop: object) -> str:
    if not isinstance(prop, Mapping):
        return "any"
    if "type" in prop:
        kind = prop["type"]
        return "|".join(kind) if isinstance(kind, list) else str(kind)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            return "|".join(_type(option) for option in prop[key])
    return "any"


def _before_after(old: object, new: object, width: int = 60) -> str:
    """Old and new text side by side, each cut to `width` around the first place they differ (a change
    past the first 60 characters is shown, not two identical beginnings)."""
    before, after = (" ".join(str(text or "").split()) for text in (old, new))
    if before == after:
        return f"{_window(before, 0, width)} (only whitespace changed)"
    differs = next((i for i, (x, y) in enumerate(zip(before, after)) if x != y), min(len(before), len(after)))
    start = 0 if differs < width * 2 // 3 else differs - width // 3
    return f"{_window(before, start, width)} -> {_window(after, start, width)}"


def _window(text: str, start: int, width: int) -> str:
    piece = ("…" if start else "") + text[start : start + width] + ("…" if start + width < len(text) else "")
    return json.dumps(piece, ensure_ascii=False)
