"""The Docker Engine for the docker server: a client from the environment, failures in one line, small sums."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from miroctl.base.masking import MASK, looks_secret

from .common import number_setting, setting
from .models import INSTALL_HINT

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])", re.IGNORECASE)
_DURATIONS = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _sdk() -> Any:
    try:
        import docker
        import docker.errors
    except ImportError:
        raise ToolError(f"the docker client library is not installed: {INSTALL_HINT}") from None
    return docker


def engine() -> Any:
    """A low-level client (docker.APIClient) for DOCKER_HOST, or the local socket."""
    timeout = number_setting("DOCKER_TIMEOUT", 30.0, minimum=1.0)
    return _sdk().from_env(timeout=int(timeout)).api


def engine_call(action: Callable[[Any], Any], container: str | None = None) -> Any:
    """Run `action(api)` on a fresh client; the SDK's failures become tool errors that say what to check."""
    docker = _sdk()
    import requests

    where = setting("DOCKER_HOST") or "the local socket (unix:///var/run/docker.sock)"
    try:
        api = engine()
        try:
            return action(api)
        finally:
            api.close()
    except docker.errors.NotFound:
        raise ToolError(f"no such container: {container} (list_containers shows the names)") from None
    except docker.errors.APIError as exc:
        said = exc.explanation or str(exc)
        raise ToolError(f"the Docker Engine refused the request (HTTP {exc.status_code}): {said}") from None
    except requests.exceptions.Timeout:
        raise ToolError(f"the Docker Engine at {where} did not answer within the DOCKER_TIMEOUT") from None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ToolError(
            f"cannot reach the Docker Engine at {where}: {_reason(exc)} (is the daemon running? is DOCKER_HOST right?)"
        ) from None


def masked_inspect(data: dict[str, Any]) -> dict[str, Any]:
    """The inspect document with the values of secret-looking environment variables replaced by ****."""
    config = dict(data.get("Config") or {})
    env = []
    for item in config.get("Env") or []:
        key, sep, value = str(item).partition("=")
        env.append(f"{key}={MASK}" if sep and value and looks_secret(key) else item)
    config["Env"] = env
    return {**data, "Config": config}


def since_timestamp(text: str) -> float:
    """A Unix time from "10m" / "2h30m" (back from now), an ISO date-time, or a Unix timestamp."""
    given = text.strip()
    if given.replace(".", "", 1).isdigit():
        return float(given)
    compact = given.replace(" ", "")
    if _DURATIONS.fullmatch(compact):
        seconds = sum(float(n) * _SECONDS[u.lower()] for n, u in _DURATION.findall(compact))
        return time.time() - seconds
    try:
        moment = datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"since must be a duration such as 10m or 2h, an ISO date-time or a Unix timestamp, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


def cpu_percent(stats: dict[str, Any]) -> tuple[float, int]:
    """CPU % over the engine's sample, as `docker stats` computes it, and the number of CPUs."""
    now, before = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    cpus = now.get("online_cpus") or len((now.get("cpu_usage") or {}).get("percpu_usage") or []) or 1
    used = (now.get("cpu_usage") or {}).get("total_usage", 0) - (before.get("cpu_usage") or {}).get("total_usage", 0)
    system = now.get("system_cpu_usage", 0) - before.get("system_cpu_usage", 0)
    if used <= 0 or system <= 0:
        return 0.0, cpus
    return used / system * cpus * 100.0, cpus


def summary_line(row: dict[str, Any]) -> str:
    ports = ", ".join(row["ports"]) if row["ports"] else "no ports"
    return f"{row['id']} {row['name']}: {row['state']} ({row['status']}), image {row['image']}, {ports}"


def _reason(exc: BaseException) -> str:
    text = str(exc)
    if "Connection refused" in text:
        return "connection refused"
    if "No such file or directory" in text:
        return "no socket there"
    return text.splitlines()[0][:200] if text else type(exc).__name__
