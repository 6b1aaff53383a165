"""system: read-only diagnostics of this machine: CPU, memory, disks, top processes, listening ports.

Every number comes with its context (of what total, over what interval, on how many cores), so a
reader can tell whether it is a problem without asking another question.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from miroctl.base.version import __version__

from .helpers.common import human_bytes, of_total, percent, result

mcp = MCPServer("system", version=__version__, log_level="WARNING")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
NEARLY_FULL = 90.0
SKIPPED_FS = {"squashfs", "tmpfs", "devtmpfs", "overlay", "proc", "sysfs", "cgroup", "cgroup2", "nsfs", "tracefs"}


@mcp.tool(annotations=READ_ONLY)
def cpu_usage(sample_seconds: Annotated[float, Field(ge=0.1, le=10.0)] = 1.0) -> CallToolResult:
    """Measure how busy this machine's CPUs are right now, over a short sample.

    Returns the overall busy percentage and each core's over `sample_seconds` (default 1 s), the
    number of logical and physical cores, and the 1/5/15-minute load averages with the share of
    the cores they represent (a load equal to the core count means fully busy).
    """
    import psutil

    per_core = psutil.cpu_percent(interval=sample_seconds, percpu=True)
    cores = psutil.cpu_count() or len(per_core) or 1
    physical = psutil.cpu_count(logical=False)
    overall = sum(per_core) / len(per_core) if per_core else 0.0
    load = psutil.getloadavg()
    lines = [
        f"CPU: {overall:.1f}% busy over a {sample_seconds:g} s sample, on {cores} logical cores"
        + (f" ({physical} physical)" if physical else ""),
        "Per core: " + ", ".join(f"#{i} {p:.0f}%" for i, p in enumerate(per_core)),
        "Load average (1/5/15 min): "
        + " / ".join(f"{v:.2f}" for v in load)
        + f" = {' / '.join(percent(v, cores) for v in load)} of {cores} cores",
    ]
    data = {
        "percent": round(overall, 1),
        "per_core": per_core,
        "logical_cores": cores,
        "physical_cores": physical,
        "load_average": list(load),
        "sample_seconds": sample_seconds,
    }
    return result("\n".join(lines), data)


@mcp.tool(annotations=READ_ONLY)
def memory_usage() -> CallToolResult:
    """Report this machine's memory (RAM) and swap: how much is available and used, of what total.

    "Available" is what new programs can get without swapping (it counts reclaimable cache).
    Returns e.g. "Memory: 512.0 MB available of 8.0 GB (6.2%); 7.5 GB in use (93.8%)".
    """
    import psutil

    memory, swap = psutil.virtual_memory(), psutil.swap_memory()
    used = memory.total - memory.available
    ram = (
        f"Memory: {human_bytes(memory.available)} available of {human_bytes(memory.total)} "
        f"({percent(memory.available, memory.total)}); {human_bytes(used)} in use ({percent(used, memory.total)})"
    )
    swapped = (
        f"Swap: {human_bytes(swap.used)} used of {human_bytes(swap.total)} ({percent(swap.used, swap.total)})"
        if swap.total
        else "Swap: none configured"
    )
    lines = [ram, swapped]
    data = {
        "total": memory.total,
        "available": memory.available,
        "used_percent": memory.percent,
        "swap_total": swap.total,
        "swap_used": swap.used,
    }
    return result("\n".join(lines), data)


@mcp.tool(annotations=READ_ONLY)
def disk_usage(path: str | None = None) -> CallToolResult:
    """Report free and used space of this machine's disks (mounted file systems).

    Without `path`, every real mounted file system is listed; with `path` (any file or directory),
    only the file system holding it. Each line gives free space of the total with percentages, the
    mount point, the device and the file-system type; file systems over 90% full are flagged.
    """
    mounts = [_mount_for(path)] if path else _real_mounts()
    rows = [_disk_row(*mount) for mount in mounts]
    lines = [row["line"] for row in rows] or ["No mounted file systems found."]
    return result("\n".join(lines), {"disks": [{k: v for k, v in r.items() if k != "line"} for r in rows]})


def _real_mounts() -> list[tuple[str, str, str, str]]:
    import psutil

    seen, found = set(), []
    for part in psutil.disk_partitions(all=False):
        if part.fstype in SKIPPED_FS or part.device in seen or part.mountpoint.startswith("/snap/"):
            continue
        seen.add(part.device)
        found.append((part.mountpoint, part.device, part.fstype, part.mountpoint))
    return found or [("/", "", "", "/")]


def _mount_for(path: str) -> tuple[str, str, str, str]:
    """The file system holding `path`: its mount point, device and type, and a label naming the path."""
    import psutil

    target = os.path.realpath(os.path.expanduser(path))
    if not os.path.exists(target):
        raise ToolError(f"no such file or directory: {path}")
    mount, device, fstype = "/", "", ""
    for part in psutil.disk_partitions(all=True):
        holds = target == part.mountpoint or target.startswith(part.mountpoint.rstrip("/") + "/")
        if holds and len(part.mountpoint) >= len(mount):
            mount, device, fstype = part.mountpoint, part.device, part.fstype
    label = mount if target == mount else f"{path} (on {mount})"
    return target, device, fstype, label


def _disk_row(location: str, device: str, fstype: str, label: str) -> dict[str, Any]:
    import psutil

    try:
        usage = psutil.disk_usage(location)
    except OSError as exc:
        raise ToolError(f"cannot read the usage of {label}: {exc.strerror or exc}") from None
    where = ", ".join(x for x in (fstype, device) if x)
    line = (
        f"{label}{f' ({where})' if where else ''}: {human_bytes(usage.free)} free of "
        f"{human_bytes(usage.total)} ({percent(usage.free, usage.total)} free, {usage.percent:.1f}% used)"
    )
    if usage.percent >= NEARLY_FULL:
        line += " <- nearly full"
    return {
        "line": line,
        "path": label,
        "device": device,
        "fstype": fstype,
        "total": usage.total,
        "free": usage.free,
        "used_percent": usage.percent,
    }


@mcp.tool(annotations=READ_ONLY)
def top_processes(
    sort_by: Literal["cpu", "memory"] = "cpu",
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    sample_seconds: Annotated[float, Field(ge=0.1, le=5.0)] = 0.5,
) -> CallToolResult:
    """List the processes using the most CPU or memory on this machine right now.

    `sort_by` is "cpu" (measured over `sample_seconds`) or "memory" (resident memory). Each line
    gives the pid, name, user, CPU% (100% = one full core; the machine has N cores, so up to N x 100%)
    and resident memory with its share of total RAM.
    """
    import psutil

    procs = _sampled_processes(sample_seconds)
    key = (lambda p: p["cpu_percent"]) if sort_by == "cpu" else (lambda p: p["rss"])
    chosen = sorted(procs, key=key, reverse=True)[:limit]
    total, cores = psutil.virtual_memory().total, psutil.cpu_count() or 1
    heading = (
        f"Top {len(chosen)} of {len(procs)} processes by {sort_by} ({cores} cores, so CPU% runs up to "
        f"{cores * 100}%; memory is resident, of {human_bytes(total)} RAM):"
    )
    lines = [heading]
    lines += [
        f"pid {p['pid']} {p['name']} (user {p['user']}): CPU {p['cpu_percent']:.1f}%, memory "
        f"{of_total(p['rss'], total)}"
        for p in chosen
    ]
    return result(
        "\n".join(lines), {"sort_by": sort_by, "processes": chosen, "logical_cores": cores, "memory_total": total}
    )


def _sampled_processes(sample_seconds: float) -> list[dict[str, Any]]:
    import psutil

    procs = list(psutil.process_iter(["pid", "name", "username", "memory_info"]))
    for proc in procs:
        try:
            proc.cpu_percent(None)  # the first reading only starts the measurement
        except psutil.Error:
            continue
    time.sleep(sample_seconds)
    rows = []
    for proc in procs:
        try:
            cpu = proc.cpu_percent(None)
        except psutil.Error:
            continue
        info = proc.info
        rss = info["memory_info"].rss if info.get("memory_info") else 0
        rows.append(
            {
                "pid": info["pid"],
                "name": info.get("name") or "?",
                "user": info.get("username") or "?",
                "cpu_percent": cpu,
                "rss": rss,
            }
        )
    return rows


@mcp.tool(annotations=READ_ONLY)
def listening_ports(port: Annotated[int, Field(ge=1, le=65535)] | None = None) -> CallToolResult:
    """List the TCP ports this machine is listening on (and bound UDP ports), with the owning process.

    With `port`, only that port: the answer then says plainly whether anything listens on it.
    Each line gives protocol, address (0.0.0.0 / :: = all interfaces, 127.0.0.1 = this machine
    only), port, pid and process name (unknown for other users' processes unless run as root).
    """
    sockets = [s for s in _listening() if port is None or s["port"] == port]
    sockets.sort(key=lambda s: (s["port"], s["protocol"], s["address"]))
    if port is not None and not sockets:
        return result(f"Nothing is listening on port {port}.", {"port": port, "listening": []})
    lines = [f"{len(sockets)} listening socket{'s' if len(sockets) != 1 else ''}:"]
    lines += [
        f"{s['protocol']} {_address(s['address'])}:{s['port']} ({_scope(s['address'])}) {_owner(s)}" for s in sockets
    ]
    return result("\n".join(lines), {"port": port, "listening": sockets})


def _listening() -> list[dict[str, Any]]:
    import psutil

    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        raise ToolError("the system refused to list sockets to this user (on macOS this needs root)") from None
    names: dict[int, str] = {}
    found = []
    for conn in connections:
        listening = conn.status == psutil.CONN_LISTEN or (conn.type == socket.SOCK_DGRAM and not conn.raddr)
        if not listening or not conn.laddr:
            continue
        protocol = ("tcp" if conn.type == socket.SOCK_STREAM else "udp") + (
            "6" if conn.family == socket.AF_INET6 else ""
        )
        found.append(
            {
                "protocol": protocol,
                "address": conn.laddr.ip,
                "port": conn.laddr.port,
                "pid": conn.pid,
                "process": _process_name(conn.pid, names),
            }
        )
    return found


def _process_name(pid: int | None, cache: dict[int, str]) -> str | None:
    import psutil

    if pid is None:
        return None
    if pid not in cache:
        try:
            cache[pid] = psutil.Process(pid).name()
        except psutil.Error:
            cache[pid] = "?"
    return cache[pid]


def _address(ip: str) -> str:
    return f"[{ip}]" if ":" in ip else ip


def _scope(ip: str) -> str:
    if ip in ("0.0.0.0", "::"):
        return "all interfaces"
    if ip.startswith("127.") or ip == "::1":
        return "this machine only"
    return "one interface"


def _owner(sock: dict[str, Any]) -> str:
    if sock["pid"] is None:
        return "pid unknown (another user's process, or one outside this container)"
    return f"pid {sock['pid']} {sock['process']}"


if __name__ == "__main__":
    mcp.run("stdio")
