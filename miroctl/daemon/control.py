"""`miroctl daemon status|stop|logs`: what each daemon of this user says of itself, and ending them."""

from __future__ import annotations

from typing import Any

from miroctl.base.errors import MiroctlError
from miroctl.daemonclient.places import Place, places
from miroctl.daemonclient.starter import answers, stop
from miroctl.remote import GatewayClient

STATUS_WAIT = 10.0  # seconds a daemon may take to say how it is


def status(place: Place) -> dict[str, Any]:
    """The daemon's own status document; one that does not answer is described from its record."""
    record = place.read_record()
    if answers(place):
        try:
            document = GatewayClient(f"unix:{place.socket}", timeout=STATUS_WAIT).request("/v1/daemon/status")
        except MiroctlError as exc:
            return {**_from_record(place, record), "state": "not answering", "error": exc.message}
        return {**document, "state": "running"}
    return {**_from_record(place, record), "state": "dead"}


def _from_record(place: Place, record: dict[str, Any]) -> dict[str, Any]:
    return {
        "pid": record.get("pid"),
        "id": place.key,
        "config": record.get("source") or record.get("config"),
        "cwd": record.get("cwd"),
        "socket": str(place.socket),
        "log": str(place.log),
        "servers": [],
    }


def statuses(directory: Any) -> list[dict[str, Any]]:
    """Every daemon of this user (those whose record is left), oldest first."""
    return [status(place) for place in places(directory)]


def forget(place: Place) -> None:
    """Remove what a dead daemon left behind (its socket and record; the log stays for `daemon logs`)."""
    if not answers(place):
        place.socket.unlink(missing_ok=True)
        place.record.unlink(missing_ok=True)


def stop_daemon(place: Place) -> int | None:
    """Ask one daemon to stop; its pid (None: none answered, and its leftovers are removed)."""
    pid = stop(place)
    if pid is None:
        forget(place)
    return pid
