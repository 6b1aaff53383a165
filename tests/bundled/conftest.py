"""Helpers for the bundled servers' tests: real specs from config/, calls through miroctl's Manager and CLI."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallOutcome, CallRequest, ServerSpec, ServerTools
from miroctl.cli.app import app
from miroctl.config import loader as config_
from miroctl.config import resolve
from miroctl.core.manager import Manager
from miroctl.servers import group
from miroctl.servers.helpers.quickstart import DIRECT
from tests.conftest import HEALTHY_STARTUP, ROOT

CONFIG = ROOT / "config" / "miroctl.yaml"
BUNDLED = ("tool-reading", "tool-python", "tool-planner", "tool-system", "tool-network")


def bundled_config() -> config_.Config:
    """The default profile and server files, exactly as shipped."""
    return config_.load(str(CONFIG))


def shipped_server(name: str) -> ServerSpec:
    """One shipped server file (`search` is tool/tool-search.yaml) read as the default profile reads it, without
    reading the profile's other 15 (tests/bundled/test_bundled_config.py holds the two equal)."""
    folder = CONFIG.parent / "tool"
    path = next((p for p in (folder / f"{name}.yaml", folder / f"tool-{name}.yaml") if p.is_file()), None)
    assert path is not None, f"no shipped server file for {name!r}"
    return config_.server_from_file(path)


def bundled_spec(name: str, env: Mapping[str, str] | None = None, *, rename: str | None = None) -> ServerSpec:
    """The shipped spec of a bundled server, with test settings laid over its env."""
    spec = shipped_server(name)
    assert spec.error is None, f"{name}: {spec.error}"
    return replace(spec, name=rename or spec.name, env={**spec.env, **(env or {})}, startup_timeout=HEALTHY_STARTUP)


def memory_spec(name: str) -> ServerSpec:
    """The shipped spec of a bundled server, run in this process (its settings come from os.environ). Its
    requires_env is dropped: these tests exercise the server's own checks, which hosts other than miroctl meet."""
    spec = bundled_spec(name)
    module = importlib.import_module(f"miroctl.servers.{spec.name.removeprefix('tool-')}")
    return replace(spec, transport="memory", target=module.mcp, command=None, args=(), requires_env=())


def bundled_in_memory(spec: ServerSpec) -> ServerSpec:
    """A shipped bundled server (`python -P -m miroctl.servers NAME`) as the same server in this process, reading
    this process's environment: what it lists is what its process lists. Its requires_env is kept (a server
    without its key is still a config failure). Unchanged: any other spec, a server that always starts for real
    (the browser: its start checks for Chromium), and a grouping whose settings its process would refuse."""
    if spec.error or spec.transport != "stdio" or spec.command != sys.executable:
        return spec
    if len(spec.args) != 4 or spec.args[:3] != ("-P", "-m", "miroctl.servers") or spec.args[3] in DIRECT:
        return spec
    name = spec.args[3]
    try:
        if name == "group":  # its settings read as its process reads them (servers/group.py's from_env)
            env = {key: value.strip() for key, value in spec.env.items()}
            target = group.build(
                env.get("GROUP_NAME") or "group", env.get("GROUP_TOOLS") or "", env.get("TOOL_ERRORS") or "error"
            )
        else:
            target = importlib.import_module(f"miroctl.servers.{name}").mcp
    except (ImportError, ValueError):
        return spec
    return replace(spec, transport="memory", target=target, command=None, args=())


@pytest.fixture
def bundled_servers_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled servers of every config the test loads (the shipped profiles, agent files) run in this
    process, as conftest's servers_in_memory runs the fixture servers: for tests of what they list and how the
    CLI reports it, where the server's process is not the point."""
    for module in (config_, resolve):
        original = module.server_from_mapping

        def converted(*args: Any, _original: Callable[..., ServerSpec] = original, **kwargs: Any) -> ServerSpec:
            return bundled_in_memory(_original(*args, **kwargs))

        monkeypatch.setattr(module, "server_from_mapping", converted)


@dataclass
class Session:
    """What a sequence of calls on one server got back, and how often the server had to start."""

    outcomes: list[CallOutcome]
    starts: int

    def __getitem__(self, index: int) -> CallOutcome:
        return self.outcomes[index]


async def call_all(spec: ServerSpec, calls: list[tuple[str, dict[str, Any]]], timeout: float = 60) -> Session:
    """Make the calls one after another on one session of the server."""
    config = config_.Config(servers=(spec,), default_names=(spec.name,))
    async with Manager(config) as manager:
        outcomes = [
            await manager.call(CallRequest(spec.name, tool, arguments, timeout=timeout, autocorrect=False))
            for tool, arguments in calls
        ]
        return Session(outcomes, manager.handle(spec).starts)


def session(spec: ServerSpec, *calls: tuple[str, dict[str, Any]], timeout: float = 60) -> Session:
    """call_all, from synchronous test code."""
    return anyio.run(call_all, spec, list(calls), timeout)


Calls = list[tuple[str, dict[str, Any]]]


def session_then(
    spec: ServerSpec, first: tuple[str, dict[str, Any]], then: Callable[[CallOutcome], Calls], timeout: float = 60
) -> tuple[CallOutcome, Session]:
    """A first call, then the calls `then` makes of its answer (a page's refs, an id), on one session of the
    server: the first outcome, and what the rest got back."""

    async def calls() -> tuple[CallOutcome, Session]:
        config = config_.Config(servers=(spec,), default_names=(spec.name,))
        async with Manager(config) as manager:

            async def call(tool: str, arguments: dict[str, Any]) -> CallOutcome:
                return await manager.call(CallRequest(spec.name, tool, arguments, timeout=timeout, autocorrect=False))

            opened = await call(*first)
            outcomes = [await call(tool, arguments) for tool, arguments in then(opened)]
            return opened, Session(outcomes, manager.handle(spec).starts)

    return anyio.run(calls)


def listed_tools(specs: list[ServerSpec]) -> list[ServerTools]:
    """What each server answers to tools/list, through the Manager."""

    async def listing() -> list[ServerTools]:
        config = config_.Config(servers=tuple(specs), default_names=tuple(s.name for s in specs))
        async with Manager(config) as manager:
            return await manager.list_tools(specs)

    return anyio.run(listing)


def cli_call(*words: str, env: Mapping[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """`miroctl call --json` on the shipped config: the exit code and the parsed envelope."""
    result = CliRunner().invoke(app, ["call", "--config", str(CONFIG), *words, "--json"], env=dict(env or {}))
    assert result.stdout.strip(), f"no JSON on stdout (exit {result.exit_code}): {result.stderr}"
    return result.exit_code, json.loads(result.stdout)


def text_of(outcome: CallOutcome) -> str:
    """The result or the error text of an envelope."""
    return outcome.result if outcome.ok else (outcome.error or "")


@pytest.fixture
def state_dirs(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Private state and scratch directories for the servers of one test."""
    dirs = {name: tmp_path / name for name in ("planner", "sandboxes", "downloads")}
    for path in dirs.values():
        path.mkdir()
    yield {
        "PLANNER_STATE_DIR": str(dirs["planner"]),
        "SANDBOX_DIR": str(dirs["sandboxes"]),
        "SANDBOX_DOWNLOAD_DIR": str(dirs["downloads"]),
    }


MODEL_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "REASONING_OPENAI_API_KEY",
    "REASONING_OPENAI_BASE_URL",
    "VISION_OPENAI_API_KEY",
    "VISION_OPENAI_BASE_URL",
    "AUDIO_OPENAI_API_KEY",
    "AUDIO_OPENAI_BASE_URL",
    "REASONING_BACKEND",
    "VISION_BACKEND",
    "MIROCTL_URL_BLOCK",
)


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """No model API settings from the machine; call it with NAME=value to set some for an in-process server."""
    for name in MODEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MODEL_MAX_RETRIES", "0")

    def setenv(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    yield setenv
