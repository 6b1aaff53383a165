"""Prometheus metrics of the HTTP gateway (/metrics), with prometheus-client (pip install 'miroctl[metrics]').

Label values are bounded: servers are the served ones, tools come only from the known tool map (any other
name a caller sends is counted as `other`), outcomes are miroctl's error kinds. No argument, result, URL or
header is ever a label, so nothing secret can reach a scrape. Each gateway has a registry of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from miroctl.base.errors import ErrorKind
from miroctl.base.models import CallOutcome

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from miroctl.gateway.server import Gateway

INSTALL_HINT = "pip install 'miroctl[metrics]'"
OTHER = "other"
STATES = ("idle", "connected", "backoff", "failed", "lost")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)


def available() -> bool:
    """Whether prometheus-client is installed."""
    try:
        import prometheus_client  # noqa: F401, PLC0415 - an optional extra, looked for when serving starts
    except ImportError:
        return False
    return True


class Metrics:
    """The gateway's counters and histograms, plus its upstreams' state read at each scrape."""

    def __init__(self, gateway: Gateway, sessions: Callable[[], int], inflight: Callable[[], int]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram  # noqa: PLC0415 - the optional extra

        self.gateway = gateway
        self._known_map: object = None
        self._known_pairs: frozenset[tuple[str, str]] = frozenset()
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "miroctl_calls",
            "Tool calls answered by the gateway.",
            ["server", "tool", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "miroctl_call_duration_seconds",
            "How long tool calls took, from the gateway's view.",
            ["server", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_StateCollector(gateway, sessions, inflight))

    def observe(self, outcome: CallOutcome) -> None:
        """Count one call's outcome and its duration."""
        server, tool = self.labels(outcome.server_name, outcome.tool_name)
        kind = outcome.error_kind if outcome.error_kind in ErrorKind.__members__.values() else "error"
        self.calls.labels(server, tool, "ok" if outcome.ok else kind).inc()
        self.latency.labels(server, tool).observe(outcome.duration_ms / 1000)

    def labels(self, server: str | None, tool: str) -> tuple[str, str]:
        """(server, tool) as labels: known names only, anything else `other`."""
        if server not in {spec.name for spec in self.gateway.specs}:
            return OTHER, OTHER
        return server or OTHER, tool if (server, tool) in self._known() else OTHER

    def _known(self) -> frozenset[tuple[str, str]]:
        """The (server, tool) pairs of the tool map, made again only when a listing made a new map: a call
        does not pay for every tool of the pool."""
        if self._known_map is not self.gateway.map:
            self._known_map = self.gateway.map
            self._known_pairs = frozenset((info.server, info.name) for info in self.gateway.map.tools.values())
        return self._known_pairs

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest  # noqa: PLC0415 - the optional extra

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _StateCollector:
    """Upstream state, sessions and readiness, read from the gateway when scraped."""

    def __init__(self, gateway: Gateway, sessions: Callable[[], int], inflight: Callable[[], int]) -> None:
        self.gateway, self.sessions, self.inflight = gateway, sessions, inflight

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily  # noqa: PLC0415

        up = GaugeMetricFamily(
            "miroctl_upstream_up", "1 when the upstream server's session is open.", labels=["server"]
        )
        state = GaugeMetricFamily(
            "miroctl_upstream_state", "The upstream's state (1 for the current one).", labels=["server", "state"]
        )
        tools = GaugeMetricFamily("miroctl_upstream_tools", "Tools the upstream exposes.", labels=["server"])
        starts = CounterMetricFamily("miroctl_upstream_starts", "Times the upstream was started.", labels=["server"])
        crashes = GaugeMetricFamily(
            "miroctl_upstream_crashes", "Sessions lost in a row without an answered call.", labels=["server"]
        )
        for server in self.gateway.health()["servers"]:
            name = server["name"]
            up.add_metric([name], 1 if server["state"] == "connected" else 0)
            for known in STATES:
                state.add_metric([name, known], 1 if server["state"] == known else 0)
            tools.add_metric([name], server["tool_count"])
            starts.add_metric([name], server["starts"])
            crashes.add_metric([name], server["crashes"])
        yield from (up, state, tools, starts, crashes)
        yield GaugeMetricFamily("miroctl_sessions", "MCP sessions open on /mcp.", value=self.sessions())
        yield GaugeMetricFamily("miroctl_inflight_requests", "HTTP requests being answered.", value=self.inflight())
        yield GaugeMetricFamily("miroctl_ready", "1 when /readyz answers 200.", value=1 if self.gateway.ready else 0)
        yield GaugeMetricFamily("miroctl_draining", "1 while stopping.", value=1 if self.gateway.draining else 0)
