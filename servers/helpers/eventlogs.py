"""Windows events as the winlog server reads them: one record from its XML (as an .evtx parser or wevtutil
renders it), the filters of a query, and the summary an agent reads (counts per level, provider and event id,
first and last times, the newest matches)."""

from __future__ import annotations

import heapq
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

# Event Viewer's names; level 0 (LogAlways) is shown as Information.
LEVEL_NAMES = {0: "information", 1: "critical", 2: "error", 3: "warning", 4: "information", 5: "verbose"}
LEVELS_OF = {"critical": {1}, "error": {2}, "warning": {3}, "information": {0, 4}, "verbose": {5}}
TOP = 10  # providers and event ids named in a summary
MAX_DATA_CHARS = 300  # of one event's data in a listed line
_FRACTION = re.compile(r"(\.\d{6})\d+")
EARLIEST = datetime.min.replace(tzinfo=UTC)  # where an event without a time sorts


@dataclass
class Record:
    """One event: the System fields an agent filters on, and its EventData (or UserData) as name -> text."""

    record_id: int
    time: datetime | None
    level: int
    provider: str
    event_id: int
    channel: str
    computer: str
    data: dict[str, str] = field(default_factory=dict)
    message: str = ""  # the rendered message, when the source has one (wevtutil /f:RenderedXml)

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES.get(self.level, f"level {self.level}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id,
            "time": stamp(self.time),
            "level": self.level_name,
            "level_number": self.level,
            "provider": self.provider,
            "event_id": self.event_id,
            "channel": self.channel,
            "computer": self.computer,
            "data": self.data,
            "message": self.message,
        }

    def line(self) -> str:
        """One line for a model: when, how bad, who, which event, and what it says (cut)."""
        said = self.message or "; ".join(f"{k}={v}" if k else v for k, v in self.data.items())
        said = " ".join(said.split())
        if len(said) > MAX_DATA_CHARS:
            said = said[:MAX_DATA_CHARS] + "..."
        head = f"{stamp(self.time)} {self.level_name} {self.provider} event {self.event_id} (record {self.record_id})"
        return f"{head}: {said}" if said else head


def stamp(time: datetime | None) -> str | None:
    """UTC in ISO 8601, with microseconds only when there are any."""
    if time is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if time.microsecond else "%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str, name: str) -> datetime:
    """An ISO 8601 time (a time without a zone is UTC); a tool error naming the argument otherwise."""
    try:
        value = datetime.fromisoformat(_FRACTION.sub(r"\1", text.strip()).replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"{name} must be an ISO 8601 time such as 2024-05-01T10:00:00Z, got {text!r}") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def from_xml(text: str | ET.Element) -> Record:
    """A record from one <Event> element's XML (namespaced or not)."""
    root = ET.fromstring(text) if isinstance(text, str) else text
    system = _child(root, "System")
    provider = _child(system, "Provider")
    created = _child(system, "TimeCreated")
    when = created.get("SystemTime") if created is not None else None
    return Record(
        record_id=_int(_text(system, "EventRecordID")),
        time=parse_time(when, "SystemTime") if when else None,
        level=_int(_text(system, "Level")),
        provider=(provider.get("Name") or provider.get("EventSourceName") or "") if provider is not None else "",
        event_id=_int(_text(system, "EventID")),
        channel=_text(system, "Channel"),
        computer=_text(system, "Computer"),
        data=_data(root),
        message=_text(_child(root, "RenderingInfo"), "Message"),
    )


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _child(parent: ET.Element | None, name: str) -> ET.Element | None:
    if parent is None:
        return None
    return next((child for child in parent if _local(child.tag) == name), None)


def _text(parent: ET.Element | None, name: str) -> str:
    found = _child(parent, name)
    return (found.text or "").strip() if found is not None else ""


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _data(root: ET.Element) -> dict[str, str]:
    """EventData's <Data Name=...> items (unnamed ones numbered), or UserData's leaves."""
    data: dict[str, str] = {}
    event_data = _child(root, "EventData")
    if event_data is not None:
        for number, item in enumerate(event_data):
            data[item.get("Name") or f"{_local(item.tag)}{number + 1}"] = (item.text or "").strip()
        return data
    user_data = _child(root, "UserData")
    for item in user_data.iter() if user_data is not None else ():
        if len(item) == 0 and (item.text or "").strip():
            data[_local(item.tag)] = item.text.strip() if item.text else ""
    return data


@dataclass(frozen=True)
class Query:
    """What a query_events call asks for; empty fields match everything."""

    levels: frozenset[int] = frozenset()
    providers: tuple[str, ...] = ()  # case-insensitive substrings
    event_ids: frozenset[int] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    contains: str = ""

    @classmethod
    def build(
        cls,
        levels: Iterable[str],
        providers: Iterable[str],
        event_ids: Iterable[int],
        since: str | None,
        until: str | None,
        contains: str | None,
    ) -> Query:
        wanted: set[int] = set()
        for name in levels:
            key = name.strip().lower()
            if key not in LEVELS_OF:
                raise ToolError(f"unknown level {name!r}: use {', '.join(LEVELS_OF)}")
            wanted |= LEVELS_OF[key]
        query = cls(
            frozenset(wanted),
            tuple(p.strip().lower() for p in providers if p.strip()),
            frozenset(event_ids),
            parse_time(since, "since") if since else None,
            parse_time(until, "until") if until else None,
            (contains or "").strip().lower(),
        )
        if query.since and query.until and query.since > query.until:
            raise ToolError(f"since ({stamp(query.since)}) is after until ({stamp(query.until)})")
        return query

    def matches(self, record: Record) -> bool:
        if self.levels and record.level not in self.levels:
            return False
        if self.providers and not any(p in record.provider.lower() for p in self.providers):
            return False
        if self.event_ids and record.event_id not in self.event_ids:
            return False
        if (self.since or self.until) and record.time is None:
            return False
        if self.since and record.time and record.time < self.since:
            return False
        if self.until and record.time and record.time > self.until:
            return False
        return not self.contains or self.contains in " ".join([record.message, *record.data.values()]).lower()

    def describe(self) -> str:
        parts = []
        if self.levels:
            parts.append("level " + "/".join(sorted({LEVEL_NAMES[n] for n in self.levels})))
        if self.providers:
            parts.append("provider ~ " + " or ".join(self.providers))
        if self.event_ids:
            parts.append("event id " + ", ".join(str(i) for i in sorted(self.event_ids)))
        if self.since:
            parts.append(f"since {stamp(self.since)}")
        if self.until:
            parts.append(f"until {stamp(self.until)}")
        if self.contains:
            parts.append(f"text ~ {self.contains!r}")
        return ", ".join(parts) or "no filter"


class Summary:
    """Counts over every matching record, and the newest `limit` of them."""

    def __init__(self, limit: int) -> None:
        self.scanned = self.matched = 0
        self.levels: Counter[str] = Counter()
        self.providers: Counter[str] = Counter()
        self.event_ids: Counter[int] = Counter()
        self.channels: Counter[str] = Counter()
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.limit = limit
        self.newest: list[tuple[tuple[datetime, int], int, Record]] = []  # a min-heap of the newest `limit`

    def add(self, record: Record, query: Query) -> None:
        self.scanned += 1
        if not query.matches(record):
            return
        self.matched += 1
        self.levels[record.level_name] += 1
        self.providers[record.provider] += 1
        self.event_ids[record.event_id] += 1
        self.channels[record.channel] += 1
        if record.time is not None:
            self.first = record.time if self.first is None else min(self.first, record.time)
            self.last = record.time if self.last is None else max(self.last, record.time)
        entry = ((record.time or EARLIEST, record.record_id), self.scanned, record)  # read in either order
        if len(self.newest) < self.limit:
            heapq.heappush(self.newest, entry)
        elif entry[0] > self.newest[0][0]:
            heapq.heapreplace(self.newest, entry)

    def report(self, source: str, query: Query, skipped: int = 0) -> tuple[str, dict[str, Any]]:
        """The text for a model and the same facts as data."""
        shown = [record for _, _, record in sorted(self.newest, key=lambda entry: entry[:2], reverse=True)]
        lines = [f"{self.matched} of {self.scanned} events in {source} match ({query.describe()})."]
        if skipped:
            lines.append(f"{skipped} records could not be parsed and were skipped.")
        if self.matched:
            lines.append(f"Time range: {stamp(self.first)} to {stamp(self.last)}.")
            lines.append("By level: " + _counts(self.levels.most_common()))
            lines.append("By provider: " + _counts(self.providers.most_common(TOP), len(self.providers)))
            lines.append("By event id: " + _counts(self.event_ids.most_common(TOP), len(self.event_ids)))
            lines.append(f"Newest {len(shown)} of {self.matched}, newest first:")
            lines.extend(record.line() for record in shown)
            if len(shown) < self.matched:
                older = self.matched - len(shown)
                lines.append(
                    f"... {older} older match{'' if older == 1 else 'es'} not shown: narrow the query or raise limit"
                )
        data = {
            "source": source,
            "query": query.describe(),
            "scanned": self.scanned,
            "matched": self.matched,
            "skipped": skipped,
            "first_time": stamp(self.first),
            "last_time": stamp(self.last),
            "by_level": dict(self.levels.most_common()),
            "by_provider": dict(self.providers.most_common()),
            "by_event_id": {str(k): v for k, v in self.event_ids.most_common()},
            "by_channel": dict(self.channels.most_common()),
            "events": [record.to_dict() for record in shown],
            "truncated": len(shown) < self.matched,
        }
        return "\n".join(lines), data


def _counts(pairs: list[tuple[Any, int]], total_kinds: int | None = None) -> str:
    text = ", ".join(f"{name} {count}" for name, count in pairs)
    if total_kinds is not None and total_kinds > len(pairs):
        text += f" (and {total_kinds - len(pairs)} more)"
    return text


def detail(record: Record, xml: str | None) -> tuple[str, Mapping[str, Any]]:
    """One event in full: every field and data item, and its XML."""
    lines = [record.line().split(": ", 1)[0], f"Channel {record.channel}, computer {record.computer}"]
    if record.message:
        lines.append(f"Message: {record.message}")
    lines.extend(f"  {name}: {value}" for name, value in record.data.items())
    body = record.to_dict()
    if xml is not None:
        body["xml"] = xml
    return "\n".join(lines), body
