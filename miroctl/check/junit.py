"""JUnit XML for `miroctl check --junit FILE`: one testcase per server, so CI systems can show it.

Built from the check's JSON document (already masked), so the XML says exactly what `--json` says.
An unhealthy server is a <failure>, a server allowed to fail is <skipped>, a healthy server whose
tools drifted from the lock file is a <failure> listing the changes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from miroctl.base.escaping import visible

SUITE = "miroctl check"
CLASSNAME = "miroctl.check"
# Characters XML 1.0 cannot carry at all; shown as visible escapes instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(value: Any) -> str:
    """Text XML can carry, with control, bidi and zero-width characters shown as escapes."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", visible(value))


def build(document: Mapping[str, Any]) -> ET.ElementTree:
    """The whole report as <testsuites><testsuite><testcase/>...</testsuite></testsuites>."""
    changes = _changes_by_server(document)
    cases = [testcase(server, changes.get(server["name"], [])) for server in document["servers"]]
    failures = sum(case.find("failure") is not None for case in cases)
    skipped = sum(case.find("skipped") is not None for case in cases)
    seconds = f"{document.get('duration_ms', 0) / 1000:.3f}"
    counts = {
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
        "time": seconds,
    }
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(
        root, "testsuite", {"name": SUITE, **counts, "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")}
    )
    _properties(suite, document)
    suite.extend(cases)
    ET.indent(root)
    return ET.ElementTree(root)


def write(path: str | Path, document: Mapping[str, Any]) -> None:
    build(document).write(path, encoding="utf-8", xml_declaration=True)


def testcase(server: Mapping[str, Any], changes: Sequence[Mapping[str, Any]]) -> ET.Element:
    """One server: passed, failed (with reason and stderr tail), skipped (allowed to fail), or drifted."""
    case = ET.Element(
        "testcase",
        {
            "classname": CLASSNAME,
            "name": xml_text(server["name"]),
            "time": f"{(server.get('duration_ms') or 0) / 1000:.3f}",
        },
    )
    failure = server.get("failure")
    if failure and server.get("allowed_failure"):
        element = ET.SubElement(case, "skipped", {"message": xml_text("allowed to fail: " + _reason(failure))})
        element.text = xml_text(_details(server, failure))
    elif failure:
        element = ET.SubElement(case, "failure", {"message": xml_text(_reason(failure)), "type": failure["kind"]})
        element.text = xml_text(_details(server, failure))
    elif changes:
        breaking = any(c["severity"] == "breaking" for c in changes)
        element = ET.SubElement(
            case, "failure", {"message": xml_text(_drift_message(changes)), "type": "breaking" if breaking else "drift"}
        )
        element.text = xml_text("\n".join([*(_change_line(c) for c in changes), *_lint_lines(server)]))
    elif _lint_lines(server):
        count = len(_lint_lines(server))
        message = f"{count} tool-schema portability finding{'' if count == 1 else 's'}"
        element = ET.SubElement(case, "failure", {"message": xml_text(message), "type": "lint"})
        element.text = xml_text("\n".join(_lint_lines(server)))
    out = ET.SubElement(case, "system-out")
    out.text = xml_text(_summary(server))
    return case


def _lint_lines(server: Mapping[str, Any]) -> list[str]:
    return [
        f"{f['tool']} {f['path']}: {f['problem']} [{','.join(f['providers'])}]; fix: {f['fix']}"
        for f in server.get("lint") or ()
        if not f.get("accepted")
    ]


def _changes_by_server(document: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    found: dict[str, list[Mapping[str, Any]]] = {}
    for change in (document.get("lock") or {}).get("changes") or []:
        found.setdefault(change["server"], []).append(change)
    return found


def _properties(suite: ET.Element, document: Mapping[str, Any]) -> None:
    props = ET.SubElement(suite, "properties")
    for name in ("config", "concurrency", "timeout", "smoke"):
        value = document.get(name)
        if value is not None:
            text = str(value).lower() if isinstance(value, bool) else xml_text(value)
            ET.SubElement(props, "property", {"name": name, "value": text})


def _reason(failure: Mapping[str, Any]) -> str:
    return f"{failure['kind']}: {failure['message']}"


def _details(server: Mapping[str, Any], failure: Mapping[str, Any]) -> str:
    lines = [_reason(failure)]
    if failure.get("hint"):
        lines.append(f"hint: {failure['hint']}")
    if failure.get("phase"):
        lines.append(f"phase: {failure['phase']}")
    lines.append("phases: " + _phase_line(server))
    tail = failure.get("stderr_tail") or []
    if tail:
        lines.append(f"server stderr (last {len(tail)} line{'s' if len(tail) > 1 else ''}):")
        lines.extend(f"| {line}" for line in tail)
    return "\n".join(lines)


def _drift_message(changes: Sequence[Mapping[str, Any]]) -> str:
    breaking = sum(c["severity"] == "breaking" for c in changes)
    return f"tool surface changed since the lock file: {breaking} breaking, {len(changes) - breaking} drift"


def _change_line(change: Mapping[str, Any]) -> str:
    where = change["tool"] or "(server)"
    return f"{change['severity']}: {where}: {change['detail']}"


def _summary(server: Mapping[str, Any]) -> str:
    facts = [f"status: {server['status']}", f"transport: {server['transport']}"]
    if server.get("protocol_version"):
        facts.append(f"protocol: {server['protocol_version']}")
    if server.get("server_version"):
        facts.append(f"server: {server.get('server_name') or ''} {server['server_version']}".replace("  ", " "))
    if server.get("tool_count") is not None:
        facts.append(f"tools: {server['tool_count']}")
    return "\n".join([*facts, "phases: " + _phase_line(server)])


def _phase_line(server: Mapping[str, Any]) -> str:
    parts = []
    for name, phase in server["phases"].items():
        if phase["status"] == "not_run":
            continue
        ms = f" {phase['ms']:.0f} ms" if phase.get("ms") is not None else ""
        parts.append(f"{name} {phase['status']}{ms}")
    return ", ".join(parts)
