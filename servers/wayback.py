"""wayback: the Wayback Machine's snapshot of a page closest to a date, as Markdown (no key).

The availability API is asked first; when it finds nothing (it is known to miss captures) or fails,
the CDX index is asked for the captures just before and after the date. The snapshot is fetched raw
(the `id_` form, without the archive's toolbar) and converted with MarkItDown. Settings (environment):
WAYBACK_AVAILABILITY_URL, WAYBACK_CDX_URL, WAYBACK_WEB_URL, WAYBACK_MAX_BYTES, WAYBACK_MAX_CHARS, HTTP_*.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from .helpers.common import number_setting, result, setting
from .helpers.markdown_convert import read_url
from .helpers.webapi import USER_AGENT, HttpSettings, call, page_url

mcp = MCPServer("wayback", version="0.1.0", log_level="WARNING")

ARCHIVE = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)
AVAILABILITY_URL = "https://archive.org/wayback/available"
CDX_URL = "https://web.archive.org/cdx/search/cdx"
WEB_URL = "https://web.archive.org/web"
_SNAPSHOT = re.compile(r"/web/(\d{1,14})/")


@dataclass
class Snapshot:
    """One capture: its 14-digit timestamp, the URL archived, where to read it, and how it was found."""

    timestamp: str
    original: str
    archived_url: str
    status: str
    found_by: str
    notes: list[str] = field(default_factory=list)

    @property
    def time(self) -> str:
        try:
            return dt.datetime.strptime(self.timestamp, "%Y%m%d%H%M%S").strftime("%Y-%m-%d %H:%M:%S UTC")
        except ValueError:
            return self.timestamp


@mcp.tool(annotations=ARCHIVE, structured_output=False)
def search_archived_webpage(
    url: str,
    year: Annotated[int, Field(ge=0, le=2100)],
    month: Annotated[int, Field(ge=0, le=12)],
    day: Annotated[int, Field(ge=0, le=31)],
) -> CallToolResult:
    """Find the Wayback Machine's (archive.org) snapshot of a web page closest to a date and read it.

    url: the page's address (https:// is assumed without a scheme).
    year, month, day: the date wanted (UTC); year 0 (or month 0) asks for the most recent snapshot.
    Returns the snapshot's time, its archive URL and the archived page converted to Markdown (cut at
    WAYBACK_MAX_CHARS characters). No snapshot, a URL the URL rules block, or a snapshot that cannot be
    fetched is a tool error saying which.
    """
    notes: list[str] = []
    target = _target(url, notes)
    wanted = _date(year, month, day, notes)
    snapshot = _find(target, wanted, notes)
    page = _read(snapshot)
    limit = int(number_setting("WAYBACK_MAX_CHARS", 100_000, minimum=100))
    text, cut = (page[:limit], len(page) - limit) if len(page) > limit else (page, 0)
    asked = wanted.isoformat() if wanted else "the most recent"
    head = [
        f"Archived snapshot of {target} closest to {asked} (found by the {snapshot.found_by})",
        f"Snapshot time: {snapshot.time} (timestamp {snapshot.timestamp})",
        f"Archived URL: {snapshot.archived_url}",
        *[f"Note: {n}" for n in notes + snapshot.notes],
    ]
    if cut:
        text += f"\n\n[... {cut:,} more characters not shown (WAYBACK_MAX_CHARS)]"
    data = {
        "url": target,
        "requested": asked,
        "timestamp": snapshot.timestamp,
        "time": snapshot.time,
        "archived_url": snapshot.archived_url,
        "status": snapshot.status,
        "found_by": snapshot.found_by,
        "notes": notes + snapshot.notes,
        "markdown_chars": len(page),
        "cut_chars": cut,
    }
    return result("\n".join(head) + "\n\n---\n\n" + text, data)


# ---------------------------------------------------------------------------------------------- input


def _target(url: str, notes: list[str]) -> str:
    target = page_url(
        url, notes, verb="look up", done="looked up", refusal="its archived copies may not be read either"
    )
    if (urlsplit(target).hostname or "").endswith("wikipedia.org"):
        notes.append("for a Wikipedia page, search_wiki_revision lists its edits month by month")
    return target


def _date(year: int, month: int, day: int, notes: list[str]) -> dt.date | None:
    """The date asked for, or None for the most recent; a day past the month's end becomes its last day."""
    if year == 0 or month == 0:
        return None
    used = dt.date(year, month, max(1, min(day, calendar.monthrange(year, month)[1])))
    if used.day != day:
        notes.append(f"{year}-{month:02d}-{day:02d} is not a date: used {used.isoformat()}")
    return used


# ---------------------------------------------------------------------------------------------- finding


def _find(target: str, wanted: dt.date | None, notes: list[str]) -> Snapshot:
    """The availability API's closest snapshot, else the CDX index's nearest capture with status 200."""
    try:
        found = _available(target, wanted)
    except ToolError as failure:
        found = None
        notes.append(f"the availability API failed ({failure}); the CDX index was asked instead")
    if found is None:
        found = _cdx_nearest(target, wanted)
    if found is None:
        raise ToolError(
            f"the Wayback Machine has no snapshot of {target} (asked the availability API and the CDX index): "
            "check the address, or try the site's home page"
        )
    return found


def _available(target: str, wanted: dt.date | None) -> Snapshot | None:
    params = {"url": target, **({"timestamp": wanted.strftime("%Y%m%d")} if wanted else {})}
    answer = call(
        "Wayback availability API",
        "GET",
        setting("WAYBACK_AVAILABILITY_URL") or AVAILABILITY_URL,
        HttpSettings.from_env(),
        params=params,
    )
    data = answer.json("Wayback availability API")
    snapshots = data.get("archived_snapshots") if isinstance(data, Mapping) else None
    if not isinstance(snapshots, Mapping):
        raise ToolError("Wayback availability API sent a malformed answer: no archived_snapshots")
    closest = snapshots.get("closest")
    if not isinstance(closest, Mapping) or not closest.get("available", True) or not closest.get("url"):
        return None
    archived = str(closest["url"])
    found = _SNAPSHOT.search(archived)
    stamp = str(closest.get("timestamp") or (found.group(1) if found else ""))
    original = archived[found.end() :] if found else target
    return Snapshot(stamp, original, archived, str(closest.get("status", "?")), "availability API")


def _cdx_nearest(target: str, wanted: dt.date | None) -> Snapshot | None:
    """The capture nearest the date from the CDX index: the last one up to that day and the first one after."""
    base = {"url": target, "output": "json", "fl": "timestamp,original,statuscode,mimetype", "filter": "statuscode:200"}
    if wanted is None:
        rows = _cdx({**base, "limit": "-1"})
        goal = float("inf")
    else:
        day = wanted.strftime("%Y%m%d")
        rows = _cdx({**base, "to": day, "limit": "-1"}) + _cdx({**base, "from": day, "limit": "1"})
        goal = _seconds(day + "120000")
    if not rows:
        return None
    best = min(rows, key=lambda row: abs(_seconds(row["timestamp"]) - goal)) if wanted else rows[-1]
    web = (setting("WAYBACK_WEB_URL") or WEB_URL).rstrip("/")
    archived = f"{web}/{best['timestamp']}/{best['original']}"
    return Snapshot(best["timestamp"], best["original"], archived, best.get("statuscode", "?"), "CDX index")


def _cdx(params: Mapping[str, str]) -> list[dict[str, str]]:
    where = setting("WAYBACK_CDX_URL") or CDX_URL
    answer = call("Wayback CDX API", "GET", where, HttpSettings.from_env(), params=params)
    data = answer.json("Wayback CDX API")
    if data == []:
        return []
    if not (isinstance(data, list) and all(isinstance(row, list) for row in data) and data[0]):
        raise ToolError("Wayback CDX API sent a malformed answer: not a JSON table")
    header = [str(name) for name in data[0]]
    rows = [dict(zip(header, map(str, row))) for row in data[1:] if len(row) == len(header)]
    return [row for row in rows if re.fullmatch(r"\d{14}", row.get("timestamp", "")) and row.get("original")]


def _seconds(stamp: str) -> float:
    padded = stamp.ljust(14, "0")[:14]
    try:
        return dt.datetime.strptime(padded, "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return float("inf")


# ---------------------------------------------------------------------------------------------- reading


def _read(snapshot: Snapshot) -> str:
    """The snapshot as Markdown, fetched raw (`TIMESTAMPid_`) so the archive's toolbar is not in it."""
    raw = _SNAPSHOT.sub(lambda m: f"/web/{m.group(1)}id_/", snapshot.archived_url, count=1)
    try:
        page = read_url(
            raw, max_bytes_setting="WAYBACK_MAX_BYTES", timeout_setting="HTTP_TIMEOUT", user_agent=USER_AGENT
        )
    except ToolError as failure:
        raise ToolError(
            f"found a snapshot of {snapshot.original} from {snapshot.time} ({snapshot.archived_url}) "
            f"but could not read it: {failure}"
        ) from None
    return page.strip()


if __name__ == "__main__":
    mcp.run("stdio")
