"""docker: read-only views of Docker containers: list and status, logs, inspect, resource usage (the ops tools).

Talks to the Docker Engine API with the official `docker` SDK (`pip install 'miroctl[research]'`),
wherever DOCKER_HOST points (default: the local socket; tcp:// and ssh:// work, with DOCKER_TLS_VERIFY
and DOCKER_CERT_PATH as the docker CLI reads them). DOCKER_TIMEOUT bounds each request. Nothing here
starts, stops or changes a container. Environment values that look secret are masked in `inspect`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.base.version import __version__

from .helpers.common import human_bytes, of_total, result
from .helpers.docker_engine import (
    cpu_percent,
    engine_call,
    masked_inspect,
    since_timestamp,
    summary_line,
)

mcp = MCPServer("docker", version=__version__, log_level="WARNING")

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
MAX_LOG_CHARS = 100_000


@mcp.tool(annotations=READS)
def list_containers(all: bool = True, name: str = "") -> CallToolResult:
    """List Docker containers with their state, status, image and published ports.

    `all` includes stopped containers (default true); `name` keeps only containers whose name
    contains it. Returns one line per container: short id, name, image, state ("running",
    "exited"...), status ("Up 2 hours", "Exited (1) 5 minutes ago"), ports.
    """
    filters = {"name": name.strip()} if name.strip() else None
    found = engine_call(lambda api: api.containers(all=all, filters=filters))
    rows = [_row(c) for c in found]
    if not rows:
        what = f" named like {name.strip()!r}" if name.strip() else ""
        return result(f"No containers{what}{'' if all else ' running'}.", {"containers": []})
    running = sum(1 for r in rows if r["state"] == "running")
    head = f"{len(rows)} container{'s' if len(rows) != 1 else ''} ({running} running):"
    return result("\n".join([head, *(summary_line(r) for r in rows)]), {"containers": rows})


@mcp.tool(annotations=READS)
def container_logs(
    container: str,
    tail: Annotated[int, Field(ge=1, le=10_000)] = 100,
    since: str = "",
    timestamps: bool = False,
) -> CallToolResult:
    """Read the last lines a container wrote to stdout and stderr.

    `container` is a name or (a prefix of) an id. `tail` is how many lines from the end (default
    100); `since` keeps only lines from a time on: a duration back from now ("30s", "10m", "2h",
    "1d"), an ISO date-time or a Unix timestamp. Returns the lines, oldest first (stdout and stderr
    interleaved as written), cut in the middle when very long.
    """
    key = _container(container)
    after = since_timestamp(since) if since.strip() else None
    raw = engine_call(lambda api: api.logs(key, tail=tail, since=after, timestamps=timestamps), key)
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
    window = f"last {tail} lines" + (f" since {since.strip()}" if after else "")
    if not text.strip():
        return result(f"{key}: no log lines ({window}).", {"container": key, "lines": 0, "logs": ""})
    if len(text) > MAX_LOG_CHARS:
        cut = len(text) - MAX_LOG_CHARS
        text = text[: MAX_LOG_CHARS // 3] + f"\n[... {cut:,} characters cut ...]\n" + text[-MAX_LOG_CHARS * 2 // 3 :]
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return result(f"{key}, {window}:\n{text.rstrip()}", {"container": key, "lines": lines, "logs": text})


@mcp.tool(annotations=READS)
def inspect_container(container: str) -> CallToolResult:
    """Show a container's configuration and state: image, command, restart policy and count, exit code,
    health, ports, networks, mounts and environment (values of secret-looking variables masked).

    `container` is a name or (a prefix of) an id. Returns a summary for reading and the full
    inspect document as structured data.
    """
    key = _container(container)
    data = masked_inspect(engine_call(lambda api: api.inspect_container(key), key))
    state = data.get("State") or {}
    config = data.get("Config") or {}
    host = data.get("HostConfig") or {}
    policy = (host.get("RestartPolicy") or {}).get("Name") or "no"
    command = " ".join([data.get("Path") or "", *(data.get("Args") or [])]).strip()
    lines = [
        f"{data.get('Name', '').lstrip('/')} ({str(data.get('Id', ''))[:12]}): {state.get('Status', '?')}"
        + (f", health {state['Health'].get('Status')}" if state.get("Health") else ""),
        f"image {config.get('Image', '?')}; command {command}",
        f"started {state.get('StartedAt', '?')}; finished {state.get('FinishedAt', '?')}; "
        f"exit code {state.get('ExitCode')}" + ("; OOM-killed" if state.get("OOMKilled") else ""),
        f"restart policy {policy}; restarted {data.get('RestartCount', 0)} times",
    ]
    ports = (data.get("NetworkSettings") or {}).get("Ports") or {}
    published = [f"{p['HostIp']}:{p['HostPort']}->{inner}" for inner, bound in ports.items() for p in bound or []]
    lines.append("ports " + (", ".join(published) if published else "none published"))
    lines += [
        f"mount {m.get('Source')} -> {m.get('Destination')} ({m.get('Mode') or 'rw'})" for m in data.get("Mounts") or []
    ]
    lines += [f"env {item}" for item in config.get("Env") or []]
    return result("\n".join(lines), data)


@mcp.tool(annotations=READS)
def container_stats(container: str) -> CallToolResult:
    """Measure a container's resource use once: CPU %, memory used of its limit, network and disk I/O, processes.

    `container` is a name or (a prefix of) an id. CPU % is over the engine's sampling interval and
    runs up to 100% per CPU; memory excludes the page cache, as `docker stats` shows it. A stopped
    container has no usage to report, and the answer says so.
    """
    key = _container(container)
    stats = engine_call(lambda api: api.stats(key, stream=False), key)
    memory = stats.get("memory_stats") or {}
    if not memory.get("usage"):
        return result(f"{key} is not running: no resource usage to report.", {"container": key, "running": False})
    cache = (memory.get("stats") or {}).get("inactive_file", 0)
    used, limit = memory["usage"] - cache, memory.get("limit") or 0
    cpu, cpus = cpu_percent(stats)
    net = stats.get("networks") or {}
    rx, tx = sum(n.get("rx_bytes", 0) for n in net.values()), sum(n.get("tx_bytes", 0) for n in net.values())
    blk = ((stats.get("blkio_stats") or {}).get("io_service_bytes_recursive")) or []
    read = sum(e.get("value", 0) for e in blk if str(e.get("op", "")).lower() == "read")
    wrote = sum(e.get("value", 0) for e in blk if str(e.get("op", "")).lower() == "write")
    pids = (stats.get("pids_stats") or {}).get("current")
    text = (
        f"{key}: CPU {cpu:.1f}% (of {cpus} CPU{'s' if cpus != 1 else ''}, up to {cpus * 100}%); "
        f"memory {of_total(used, limit)}; network {human_bytes(rx)} in / {human_bytes(tx)} out; "
        f"disk {human_bytes(read)} read / {human_bytes(wrote)} written; {pids} processes"
    )
    data = {
        "container": key,
        "running": True,
        "cpu_percent": round(cpu, 2),
        "online_cpus": cpus,
        "memory_bytes": used,
        "memory_limit_bytes": limit,
        "network_rx_bytes": rx,
        "network_tx_bytes": tx,
        "disk_read_bytes": read,
        "disk_write_bytes": wrote,
        "pids": pids,
        "read_at": stats.get("read"),
    }
    return result(text, data)


# ---------------------------------------------------------------------------------------------- helpers


def _container(given: str) -> str:
    key = given.strip().lstrip("/")
    if not key or len(key) > 256 or any(c.isspace() or c in "/?#%" for c in key):
        raise ToolError(f"not a container name or id: {given!r}")
    return key


def _row(summary: dict[str, Any]) -> dict[str, Any]:
    ports = [
        f"{p.get('IP', '')}:{p['PublicPort']}->{p['PrivatePort']}/{p.get('Type', 'tcp')}"
        if p.get("PublicPort")
        else f"{p.get('PrivatePort')}/{p.get('Type', 'tcp')}"
        for p in summary.get("Ports") or []
    ]
    created = summary.get("Created")
    return {
        "id": str(summary.get("Id", ""))[:12],
        "name": ",".join(n.lstrip("/") for n in summary.get("Names") or []),
        "image": summary.get("Image", ""),
        "state": summary.get("State", ""),
        "status": summary.get("Status", ""),
        "ports": ports,
        "created": datetime.fromtimestamp(created, UTC).isoformat() if isinstance(created, int) else None,
    }


if __name__ == "__main__":
    mcp.run("stdio")
