"""Helpers for the bundled servers' tests: real specs from config/, calls through miroctl's Manager and CLI."""

from __future__ import annotations

import importlib
import json
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
from miroctl.core.manager import Manager
from tests.conftest import HEALTHY_STARTUP, ROOT

CONFIG = ROOT / "config" / "miroctl.yaml"
BUNDLED = ("tool-reading", "tool-python", "tool-planner", "tool-system", "tool-network")


def bundled_config() -> config_.Config:
    """The default profile and server files, exactly as shipped."""
    return config_.load(str(CONFIG))


def bundled_spec(name: str, env: Mapping[str, str] | None = None, *, rename: str | None = None) -> ServerSpec:
    """The shipped spec of a bundled server, with test settings laid over its env."""
    spec = bundled_config().get(name)
    assert spec is not None and spec.error is None, f"{name}: {spec and spec.error}"
    return replace(spec, name=rename or spec.name, env={**spec.env, **(env or {})}, startup_timeout=HEALTHY_STARTUP)


def memory_spec(name: str) -> ServerSpec:
    """The shipped spec of a bundled server, run in this process (its settings come from os.environ). Its
    requires_env is dropped: these tests exercise the server's own checks, which hosts other than miroctl meet."""
    spec = bundled_spec(name)
    module = importlib.import_module(f"miroctl.servers.{spec.name.removeprefix('tool-')}")
    return replace(spec, transport="memory", target=module.mcp, command=None, args=(), requires_env=())


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
