"""winlog: Windows event logs, read-only: exported .evtx files on any system, and the live logs on Windows.

.evtx files are parsed with pyevtx-rs (`pip install 'miroctl[winlog]'`); live channels are read with Windows'
own `wevtutil`. Every answer is a summary first (how many events match, of how many, per level, provider and
event id, and from when to when), then the newest matches, one line each.

Settings (environment): WINLOG_DIR, where exported logs are looked for (list_channels without a path, and
relative file names); WINLOG_MAX_EVENTS, how many of a live channel's newest events a query reads (10000).
"""

from __future__ import annotations

import struct
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.base.version import __version__

from .helpers.common import human_bytes, number_setting, result, setting
from .helpers.eventlogs import LEVELS_OF, Query, Record, Summary, detail, from_xml, stamp

mcp = MCPServer("winlog", version=__version__, log_level="WARNING")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTALL_HINT = "pip install 'miroctl[winlog]'"
FILE_MAGIC, CHUNK_MAGIC = b"ElfFile\x00", b"ElfChnk\x00"
FILE_HEADER, CHUNK_SIZE = 4096, 65536
MAX_LISTED = 200
WEVTUTIL_TIMEOUT = 120.0


def is_windows() -> bool:
    return sys.platform == "win32"


@mcp.tool(annotations=READ_ONLY)
def list_channels(
    path: str | None = None, name: Annotated[str | None, Field(description="Only names containing this.")] = None
) -> CallToolResult:
    """List the Windows event logs that can be queried, with how many events each holds.

    `path`: an exported .evtx file, or a directory of them (default: WINLOG_DIR); each file is listed with
    its channel (System, Security, Application, ...), its number of records, its first event's time and size.
    Without a path and WINLOG_DIR, on Windows: the machine's live channels (wevtutil el). Pass a file or a
    channel name as `source` to query_events.
    """
    where = path or setting("WINLOG_DIR")
    if where is None:
        return _live_channels(name)
    target = _resolve(where)
    if target.is_dir():
        files = sorted(p for p in target.iterdir() if p.suffix.lower() == ".evtx" and p.is_file())
    elif target.is_file():
        files = [target]
    else:
        raise ToolError(f"no such file or directory: {where}")
    files = [f for f in files if not name or name.lower() in f.name.lower()]
    rows = [_file_row(f) for f in files[:MAX_LISTED]]
    lines = [f"{_plural(len(files), '.evtx file')} in {target}:"]
    lines += [
        f"{row['file']}: channel {row['channel'] or '(empty)'}, {_plural(row['records'], 'record')}, "
        f"first event {row['first_time'] or '-'}, {human_bytes(row['bytes'])}"
        for row in rows
    ]
    if len(files) > len(rows):
        lines.append(f"... {len(files) - len(rows)} more not shown: pass name= to narrow")
    return result("\n".join(lines), {"source": str(target), "files": rows, "total": len(files)})


@mcp.tool(annotations=READ_ONLY)
def query_events(
    source: Annotated[str, Field(description="An .evtx file, or on Windows a live channel such as System.")],
    levels: Annotated[list[str] | None, Field(description=f"Any of: {', '.join(LEVELS_OF)}.")] = None,
    providers: Annotated[list[str] | None, Field(description="Provider names, or parts of them.")] = None,
    event_ids: list[int] | None = None,
    since: Annotated[str | None, Field(description="ISO 8601, e.g. 2024-05-01T10:00:00Z (UTC if no zone).")] = None,
    until: Annotated[str | None, Field(description="ISO 8601; events at or before this time.")] = None,
    contains: Annotated[str | None, Field(description="Text in the event's data or message.")] = None,
    limit: Annotated[int, Field(ge=1, le=500)] = 50,
) -> CallToolResult:
    """Query a Windows event log: filter by level, provider, event id, time range and text.

    Returns how many events match of how many were read, the matches counted per level, provider and event
    id, the first and last matching times, and the newest `limit` matches (default 50), newest first, one
    line each: time, level, provider, event id, record id and the event's data. Use get_event for one
    event in full. Levels: critical, error, warning, information (includes LogAlways), verbose.
    """
    query = Query.build(levels or (), providers or (), event_ids or (), since, until, contains)
    summary = Summary(limit)
    path = _file_or_none(source)
    if path is not None:
        skipped = _scan_file(path, lambda record, _xml: summary.add(record, query))
        text, data = summary.report(str(path), query, skipped)
    else:
        for record, _xml in _live_events(source, query):
            summary.add(record, query)
        text, data = summary.report(f"live channel {source} (newest {summary.scanned} read)", query)
    return result(text, data)


@mcp.tool(annotations=READ_ONLY)
def get_event(source: str, record_id: Annotated[int, Field(ge=1)]) -> CallToolResult:
    """Show one event in full: every System field, every EventData item, the rendered message where the
    source has one, and the event's XML. `source` as for query_events; `record_id` from its lines."""
    path = _file_or_none(source)
    found: list[tuple[Record, str]] = []
    if path is not None:
        _scan_file(path, lambda record, xml: found.append((record, xml)), only=record_id)
    else:
        found = list(_live_events(source, None, record_id))
    if not found:
        raise ToolError(f"no event with record id {record_id} in {source}")
    text, data = detail(*found[0])
    return result(text, data)


# ---------------------------------------------------------------------------------------------- files


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _resolve(given: str) -> Path:
    path = Path(given).expanduser()
    base = setting("WINLOG_DIR")
    return path if path.is_absolute() or base is None else Path(base).expanduser() / path


def _file_or_none(source: str) -> Path | None:
    """The .evtx file `source` names; None for a live channel (Windows); else a tool error saying why."""
    path = _resolve(source)
    if path.is_file():
        return path
    if path.suffix.lower() == ".evtx":
        raise ToolError(f"no such file: {source}")
    if not is_windows():
        raise ToolError(
            f"{source!r} is not an .evtx file, and live event logs can only be read on Windows "
            f"(this is {sys.platform}): export the log to an .evtx file and pass its path"
        )
    if not source.strip() or source.startswith(("/", "-")):  # never an option of wevtutil's
        raise ToolError(f"{source!r} is neither an .evtx file nor a channel name")
    return None


def _records_in(path: Path) -> int:
    """The number of records, from the chunk headers (no record is parsed)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(FILE_HEADER)
            if head[:8] != FILE_MAGIC:
                raise ToolError(f"{path.name} is not an EVTX file (no ElfFile header)")
            total, offset = 0, FILE_HEADER
            while (chunk := handle.read(CHUNK_SIZE))[:8] == CHUNK_MAGIC:
                first, last = struct.unpack_from("<QQ", chunk, 8)
                total += max(0, last - first + 1)
                offset += CHUNK_SIZE
            return total
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def _file_row(path: Path) -> dict[str, Any]:
    first: list[Record] = []
    records = _records_in(path)
    if records:
        _scan_file(path, lambda record, _xml: first.append(record), stop_after=1)
    return {
        "file": path.name,
        "path": str(path),
        "channel": first[0].channel if first else None,
        "records": records,
        "first_time": stamp(first[0].time) if first else None,
        "bytes": path.stat().st_size,
    }


def _scan_file(path: Path, take: Any, only: int | None = None, stop_after: int | None = None) -> int:
    """Hand each record of the file (or the one with record id `only`) to `take(record, xml)`; the number of
    records that could not be parsed."""
    _records_in(path)  # refuses a file that is not EVTX, in one line
    try:
        import evtx
    except ImportError:
        raise ToolError(f"reading .evtx files needs pyevtx-rs: {INSTALL_HINT}") from None
    taken = 0
    with warnings.catch_warnings(record=True) as skipped:
        warnings.simplefilter("always")
        try:
            for raw in evtx.PyEvtxParser(str(path), skip_errors=True).records():
                if raw is None or (only is not None and raw["event_record_id"] != only):
                    continue
                take(from_xml(raw["data"]), raw["data"])
                taken += 1
                if only is not None or (stop_after is not None and taken >= stop_after):
                    break
        except (RuntimeError, OSError, ET.ParseError) as exc:
            raise ToolError(f"cannot read {path.name} as an event log: {exc}") from None
    return sum(1 for w in skipped if issubclass(w.category, RuntimeWarning))


# ---------------------------------------------------------------------------------------------- live (Windows)


def _live_channels(name: str | None) -> CallToolResult:
    if not is_windows():
        raise ToolError(
            f"live event logs can only be listed on Windows (this is {sys.platform}): pass path= an exported "
            ".evtx file or a directory of them, or set WINLOG_DIR"
        )
    channels = [c for c in _wevtutil(["el"]).splitlines() if c.strip() and (not name or name.lower() in c.lower())]
    lines = [f"{_plural(len(channels), 'live channel')}:", *channels[:MAX_LISTED]]
    if len(channels) > MAX_LISTED:
        lines.append(f"... {len(channels) - MAX_LISTED} more not shown: pass name= to narrow")
    return result("\n".join(lines), {"source": "live", "channels": channels, "total": len(channels)})


def _live_events(channel: str, query: Query | None, record_id: int | None = None) -> Iterator[tuple[Record, str]]:
    """The newest WINLOG_MAX_EVENTS events of a live channel matching what XPath can select (the rest of the
    query is applied by the caller), or the one with `record_id`."""
    limit = int(number_setting("WINLOG_MAX_EVENTS", 10000, minimum=1))
    xpath = f"*[System[EventRecordID={record_id}]]" if record_id is not None else xpath_of(query or Query())
    out = _wevtutil(["qe", channel, f"/q:{xpath}", "/f:RenderedXml", "/rd:true", f"/c:{limit}"])
    try:
        events = ET.fromstring(f"<Events>{out}</Events>")
    except ET.ParseError as exc:
        raise ToolError(f"wevtutil's answer for {channel} is not XML: {exc}") from None
    for element in events:
        yield from_xml(element), ET.tostring(element, encoding="unicode")


def xpath_of(query: Query) -> str:
    """The part of a query that wevtutil's XPath subset can select: levels, event ids, the time range."""
    tests = []
    if query.levels:
        tests.append("(" + " or ".join(f"Level={n}" for n in sorted(query.levels)) + ")")
    if query.event_ids:
        tests.append("(" + " or ".join(f"EventID={n}" for n in sorted(query.event_ids)) + ")")
    times = []
    if query.since:
        times.append(f"@SystemTime>='{stamp(query.since)}'")
    if query.until:
        times.append(f"@SystemTime<='{stamp(query.until)}'")
    if times:
        tests.append(f"TimeCreated[{' and '.join(times)}]")
    return f"*[System[{' and '.join(tests)}]]" if tests else "*"


def _wevtutil(args: list[str]) -> str:
    try:
        done = subprocess.run(
            ["wevtutil", *args], capture_output=True, text=True, errors="replace", timeout=WEVTUTIL_TIMEOUT
        )
    except FileNotFoundError:
        raise ToolError("wevtutil was not found on PATH (it ships with Windows, in System32)") from None
    except subprocess.TimeoutExpired:
        raise ToolError(f"wevtutil {args[0]} took longer than {WEVTUTIL_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ToolError(f"wevtutil {' '.join(args[:2])} failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout


if __name__ == "__main__":
    mcp.run("stdio")
