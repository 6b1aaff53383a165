"""A fake Wayback Machine as archive.org documents it: the availability API (/wayback/available?url=&timestamp=
-> {"url", "archived_snapshots": {"closest": {"status", "available", "url", "timestamp"}}} or {}), the CDX
server (/cdx/search/cdx: url, output=json with a header row, fl, filter=[!]field:regex, from/to padded,
limit N or -N; [] when nothing matches), and snapshots (/web/TIMESTAMP/URL with the toolbar, /web/TIMESTAMPid_/URL
raw, a timestamp that is not a capture redirected to the closest one)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.base import FakeService, Reply, Seen, json_reply

FIELDS = ("urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length")
TOOLBAR = "<!-- BEGIN WAYBACK TOOLBAR INSERT --><div id='wm-ipp'>Wayback Machine toolbar</div><!-- END -->"


@dataclass(frozen=True)
class Capture:
    timestamp: str  # 14 digits
    original: str
    html: str
    statuscode: str = "200"
    mimetype: str = "text/html"


def key(url: str) -> str:
    """A capture key in the spirit of SURT: no scheme, no www., no default port, no trailing slash, lowercase host."""
    text = re.sub(r"^[a-z]+://", "", url.strip(), flags=re.I)
    host, _, path = text.partition("/")
    host = re.sub(r":(80|443)$", "", host.lower()).removeprefix("www.")
    return f"{host}/{path}".rstrip("/")


class FakeWayback(FakeService):
    def __init__(self) -> None:
        super().__init__()
        self.captures: dict[str, list[Capture]] = {}
        self.availability_blind = False  # the availability API is known to miss captures the CDX index has

    def capture(self, timestamp: str, original: str, html: str, **extra: str) -> Capture:
        found = Capture(timestamp, original, html, **extra)
        self.captures.setdefault(key(original), []).append(found)
        self.captures[key(original)].sort(key=lambda c: c.timestamp)
        return found

    def route(self, request: Seen) -> Reply:
        if request.path == "/wayback/available":
            return self._available(request.query)
        if request.path == "/cdx/search/cdx":
            return self._cdx(request.query)
        if request.path.startswith("/web/"):
            return self._snapshot(request.path[len("/web/") :])
        return Reply(404, "Not Found")

    def _available(self, q: dict[str, str]) -> Reply:
        url = q.get("url", "")
        answer: dict[str, Any] = {"url": url, "archived_snapshots": {}}
        if "timestamp" in q:
            answer["timestamp"] = q["timestamp"]
        good = [c for c in self.captures.get(key(url), []) if c.statuscode == "200"]
        if good and not self.availability_blind:
            wanted = int(q.get("timestamp", "99999999999999").ljust(14, "0")[:14])
            best = min(good, key=lambda c: abs(int(c.timestamp) - wanted))
            answer["archived_snapshots"]["closest"] = {
                "status": best.statuscode,
                "available": True,
                "url": f"{self.base}/web/{best.timestamp}/{best.original}",
                "timestamp": best.timestamp,
            }
        return json_reply(answer)

    def _cdx(self, q: dict[str, str]) -> Reply:
        rows = [self._row(c) for c in self.captures.get(key(q.get("url", "")), [])]
        if "from" in q:
            rows = [r for r in rows if r["timestamp"] >= q["from"].ljust(14, "0")]
        if "to" in q:
            rows = [r for r in rows if r["timestamp"] <= q["to"].ljust(14, "9")]
        if "filter" in q:
            invert = q["filter"].startswith("!")
            name, _, pattern = q["filter"].removeprefix("!").partition(":")
            rows = [r for r in rows if bool(re.fullmatch(pattern, r[name])) != invert]
        limit = int(q.get("limit", "150000"))
        rows = rows[:limit] if limit >= 0 else rows[limit:]
        fields = q.get("fl", ",".join(FIELDS)).split(",")
        table = [[r[f] for f in fields] for r in rows]
        if q.get("output") == "json":
            return json_reply([fields, *table] if table else [])
        return Reply(200, "".join(" ".join(row) + "\n" for row in table))

    def _row(self, capture: Capture) -> dict[str, str]:
        body = capture.html.encode()
        return {
            "urlkey": key(capture.original),
            "timestamp": capture.timestamp,
            "original": capture.original,
            "mimetype": capture.mimetype,
            "statuscode": capture.statuscode,
            "digest": f"DIGEST{len(body)}",
            "length": str(len(body)),
        }

    def _snapshot(self, rest: str) -> Reply:
        found = re.match(r"(\d{1,14})(id_)?/(.+)", rest)
        if not found:
            return Reply(404, "Not Found")
        stamp, raw, original = found.groups()
        captures = self.captures.get(key(original), [])
        if not captures:
            return Reply(404, "<html><body>Hrm. The Wayback Machine has not archived that URL.</body></html>")
        exact = next((c for c in captures if c.timestamp == stamp), None)
        if exact is None:
            wanted = int(stamp.ljust(14, "0"))
            best = min(captures, key=lambda c: abs(int(c.timestamp) - wanted))
            return Reply(302, b"", {"Location": f"/web/{best.timestamp}{raw or ''}/{best.original}"})
        html = exact.html if raw else exact.html.replace("<body>", "<body>" + TOOLBAR, 1)
        return Reply(int(exact.statuscode), html.encode(), {"Content-Type": f"{exact.mimetype}; charset=utf-8"})
