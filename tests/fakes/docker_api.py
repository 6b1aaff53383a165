"""A fake Docker Engine API over tcp:// on 127.0.0.1, answering as the Engine API reference documents.

/_ping, /version, /containers/json, /containers/{id}/json, /containers/{id}/logs (the multiplexed
stream framing for containers without a TTY, the raw stream with one; tail, since, timestamps) and
/containers/{id}/stats?stream=false, each also under a /v1.NN prefix; unknown containers get 404
{"message": "No such container: x"}. Containers are found by name, full id or id prefix.
"""

from __future__ import annotations

import json
import re
import struct
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakes.scripted import FakeService, Reply, Request

API = r"(?:/v1\.\d+)?"
LOGS = API + r"/containers/([^/]+)/logs"
STATS = API + r"/containers/([^/]+)/stats"
INSPECT = API + r"/containers/([^/]+)/json"
LIST = API + r"/containers/json"


@dataclass
class Container:
    """One container of the fake engine; logs are (stream 1 or 2, unix time, line)."""

    name: str
    id: str
    image: str = "nginx:1.27"
    state: str = "running"
    status: str = "Up 2 hours"
    exit_code: int = 0
    tty: bool = False
    env: list[str] = field(default_factory=lambda: ["PATH=/usr/local/sbin:/usr/bin", "DB_PASSWORD=hunter2-secret"])
    ports: list[dict[str, Any]] = field(default_factory=list)
    logs: list[tuple[int, float, str]] = field(default_factory=list)
    health: str | None = None


def frame(stream: int, payload: bytes) -> bytes:
    """One frame of the multiplexed stream: [stream, 0, 0, 0, size (big-endian uint32)] then the payload."""
    return struct.pack(">BxxxL", stream, len(payload)) + payload


def rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


class DockerFake(FakeService):
    """A Docker Engine with the containers given; `host` is the DOCKER_HOST to use."""

    def __init__(self, *containers: Container) -> None:
        super().__init__()
        self.containers = list(containers)
        self.route(
            "GET",
            API + r"/_ping",
            lambda r, m: Reply(200, body=b"OK", content_type="text/plain", headers=self._api_headers()),
        )
        self.route("GET", API + r"/version", lambda r, m: Reply(200, self._version(), headers=self._api_headers()))
        self.route("GET", LIST, self._list)
        self.route("GET", INSPECT, self._inspect)
        self.route("GET", LOGS, self._logs)
        self.route("GET", STATS, self._stats)

    @property
    def host(self) -> str:
        return self.url.replace("http://", "tcp://")

    def _api_headers(self) -> dict[str, str]:
        return {
            "Api-Version": "1.50",
            "Docker-Experimental": "false",
            "Ostype": "linux",
            "Server": "Docker/28.2.2 (linux)",
        }

    def _version(self) -> dict[str, Any]:
        return {
            "Platform": {"Name": "Docker Engine - Community"},
            "Version": "28.2.2",
            "ApiVersion": "1.50",
            "MinAPIVersion": "1.24",
            "GitCommit": "45873be",
            "GoVersion": "go1.24.3",
            "Os": "linux",
            "Arch": "amd64",
            "KernelVersion": "6.1.0-37-amd64",
            "BuildTime": "2025-05-30T12:07:26.000000000+00:00",
        }

    def find(self, key: str) -> Container | None:
        for container in self.containers:
            if key in (container.name, "/" + container.name, container.id) or container.id.startswith(key):
                return container
        return None

    def not_found(self, request: Request) -> Reply:
        return Reply(404, {"message": "page not found"})

    def _missing(self, key: str) -> Reply:
        return Reply(404, {"message": f"No such container: {key}"})

    def _list(self, request: Request, match: re.Match[str]) -> Reply:
        show_all = request.query.get("all", ["0"])[0] in ("1", "true", "True")
        filters = json.loads(request.query.get("filters", ["{}"])[0])
        names = filters.get("name") or []  # the Engine matches a name filter anywhere in the name
        wanted = [
            c for c in self.containers if (show_all or c.state == "running") and all(part in c.name for part in names)
        ]
        return Reply(200, [self._summary(c) for c in wanted])

    def _summary(self, c: Container) -> dict[str, Any]:
        return {
            "Id": c.id,
            "Names": ["/" + c.name],
            "Image": c.image,
            "ImageID": "sha256:" + "a" * 64,
            "Command": "/docker-entrypoint.sh nginx -g 'daemon off;'",
            "Created": 1764570000,
            "Ports": c.ports,
            "Labels": {},
            "State": c.state,
            "Status": c.status,
            "HostConfig": {"NetworkMode": "bridge"},
            "NetworkSettings": {"Networks": {"bridge": {"IPAddress": "172.17.0.2"}}},
            "Mounts": [],
        }

    def _inspect(self, request: Request, match: re.Match[str]) -> Reply:
        c = self.find(match.group(1))
        if c is None:
            return self._missing(match.group(1))
        state = {
            "Status": c.state,
            "Running": c.state == "running",
            "Paused": False,
            "Restarting": False,
            "OOMKilled": c.exit_code == 137,
            "Dead": False,
            "Pid": 4242 if c.state == "running" else 0,
            "ExitCode": c.exit_code,
            "Error": "",
            "StartedAt": "2026-12-01T03:00:00.000000000Z",
            "FinishedAt": "0001-01-01T00:00:00Z" if c.state == "running" else "2026-12-01T04:00:00.000000000Z",
        }
        if c.health:
            state["Health"] = {"Status": c.health, "FailingStreak": 0, "Log": []}
        bound = {
            f"{p['PrivatePort']}/{p['Type']}": [{"HostIp": p["IP"], "HostPort": str(p["PublicPort"])}]
            for p in c.ports
            if "PublicPort" in p
        }
        return Reply(
            200,
            {
                "Id": c.id,
                "Created": "2026-12-01T02:59:58.000000000Z",
                "Path": "/docker-entrypoint.sh",
                "Args": ["nginx", "-g", "daemon off;"],
                "State": state,
                "Image": "sha256:" + "a" * 64,
                "Name": "/" + c.name,
                "RestartCount": 2,
                "Config": {"Hostname": c.id[:12], "Env": c.env, "Image": c.image, "Tty": c.tty, "Labels": {}},
                "HostConfig": {"RestartPolicy": {"Name": "unless-stopped", "MaximumRetryCount": 0}, "Memory": 0},
                "NetworkSettings": {"Ports": bound, "Networks": {"bridge": {"IPAddress": "172.17.0.2"}}},
                "Mounts": [
                    {
                        "Type": "bind",
                        "Source": "/srv/www",
                        "Destination": "/usr/share/nginx/html",
                        "Mode": "ro",
                        "RW": False,
                    }
                ],
            },
        )

    def _logs(self, request: Request, match: re.Match[str]) -> Reply:
        c = self.find(match.group(1))
        if c is None:
            return self._missing(match.group(1))
        q = {k: v[0] for k, v in request.query.items()}
        streams = {1} if q.get("stdout") in ("1", "true") else set()
        streams |= {2} if q.get("stderr") in ("1", "true") else set()
        since = float(q.get("since", "0") or 0)
        lines = [line for line in c.logs if line[0] in streams and line[1] >= since]
        tail = q.get("tail", "all")
        if tail != "all":
            lines = lines[-int(tail) :] if int(tail) else []
        stamp = q.get("timestamps") in ("1", "true")
        payloads = [(s, ((rfc3339(t) + " ") if stamp else "") + text + "\n") for s, t, text in lines]
        if c.tty:
            body = "".join(p for _, p in payloads).encode()
            return Reply(200, body=body, content_type="application/vnd.docker.raw-stream")
        body = b"".join(frame(s, p.encode()) for s, p in payloads)
        return Reply(200, body=body, content_type="application/vnd.docker.multiplexed-stream")

    def _stats(self, request: Request, match: re.Match[str]) -> Reply:
        c = self.find(match.group(1))
        if c is None:
            return self._missing(match.group(1))
        if c.state != "running":
            return Reply(
                200,
                {
                    "read": "0001-01-01T00:00:00Z",
                    "name": "/" + c.name,
                    "id": c.id,
                    "pids_stats": {},
                    "cpu_stats": {"cpu_usage": {"total_usage": 0}, "throttling_data": {}},
                    "precpu_stats": {"cpu_usage": {"total_usage": 0}, "throttling_data": {}},
                    "memory_stats": {},
                    "blkio_stats": {},
                    "networks": {},
                },
            )
        return Reply(200, running_stats(c))


def running_stats(c: Container) -> dict[str, Any]:
    """A stats document for a running container: 25% of 2 CPUs' time in the sample (50% as docker shows it)."""
    return {
        "read": rfc3339(time.time()),
        "preread": rfc3339(time.time() - 1),
        "name": "/" + c.name,
        "id": c.id,
        "pids_stats": {"current": 5, "limit": 4096},
        "cpu_stats": {
            "cpu_usage": {"total_usage": 1_500_000_000, "usage_in_kernelmode": 0, "usage_in_usermode": 0},
            "system_cpu_usage": 104_000_000_000,
            "online_cpus": 2,
            "throttling_data": {"periods": 0, "throttled_periods": 0, "throttled_time": 0},
        },
        "precpu_stats": {
            "cpu_usage": {"total_usage": 1_000_000_000},
            "system_cpu_usage": 102_000_000_000,
            "online_cpus": 2,
            "throttling_data": {},
        },
        "memory_stats": {"usage": 150 * 2**20, "limit": 1024 * 2**20, "stats": {"inactive_file": 22 * 2**20}},
        "blkio_stats": {
            "io_service_bytes_recursive": [
                {"major": 8, "minor": 0, "op": "read", "value": 4 * 2**20},
                {"major": 8, "minor": 0, "op": "write", "value": 2**20},
            ]
        },
        "networks": {"eth0": {"rx_bytes": 2048, "tx_bytes": 1024, "rx_packets": 10, "tx_packets": 8}},
    }
