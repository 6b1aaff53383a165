"""One verdict on a tool's result, whichever session read it: the lean client's checks are the SDK's."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.config.loader import Config
from miroctl.core.manager import Manager
from miroctl.sessions import connectors, lean
from tests.conftest import HEALTHY_STARTUP, HOSTILE

TEXT = {"type": "text", "text": "x"}
RESULTS: list[Any] = [
    {"content": [TEXT]},
    {"content": []},
    {},
    {"content": [{**TEXT, "annotations": {"audience": ["user"], "priority": 0.5}}]},
    {"content": [{**TEXT, "annotations": {"audience": ["robot"]}}]},
    {"content": [{**TEXT, "annotations": {"audience": "user"}}]},
    {"content": [{**TEXT, "annotations": {"priority": 2}}]},
    {"content": [{**TEXT, "annotations": {"priority": -0.1}}]},
    {"content": [{**TEXT, "annotations": {"priority": "high"}}]},
    {"content": [{**TEXT, "annotations": {"priority": True}}]},
    {"content": [{**TEXT, "annotations": {"lastModified": 5}}]},
    {"content": [{**TEXT, "annotations": {"lastModified": "2025-01-01T00:00:00Z", "other": 1}}]},
    {"content": [{**TEXT, "annotations": "important"}]},
    {"content": [{**TEXT, "annotations": None}]},
    {"content": [{**TEXT, "_meta": []}]},
    {"content": [{**TEXT, "_meta": {"k": 1}}]},
    {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png", "annotations": {"priority": 9}}]},
    {"content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav", "annotations": []}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n"}]},  # every optional field left out
    {"content": [{"type": "resource", "resource": {"uri": "u", "text": "t"}}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n", "size": "big"}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n", "size": 3, "title": 4}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n", "description": 1}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n", "mimeType": 1}]},
    {"content": [{"type": "resource_link", "uri": "u", "name": "n", "annotations": {"audience": [1]}}]},
    {"content": [{"type": "resource", "resource": {"uri": "u", "text": "t", "mimeType": 3}}]},
    {"content": [{"type": "resource", "resource": {"uri": "u", "text": "t"}, "annotations": {"priority": 5}}]},
    {"content": [{"type": "resource", "resource": {"uri": "u", "blob": "AA==", "_meta": 1}}]},
    {"content": [TEXT], "isError": "yes"},
    {"content": [TEXT], "isError": 1},
    {"content": [TEXT], "_meta": 3},
    {"content": [TEXT], "structuredContent": [1]},
    {"content": "x"},
    {"content": [{"type": "video"}]},
    {"content": [{"type": "text", "text": 3}]},
]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("result", RESULTS, ids=range(len(RESULTS)))
def test_a_call_result_is_taken_or_refused_exactly_as_the_sdk_takes_or_refuses_it(result, version):
    from mcp.client.session import _CallToolResultAdapter
    from mcp_types.methods import validate_server_result
    from pydantic import ValidationError

    try:
        validate_server_result("tools/call", version, result)
        _CallToolResultAdapter.validate_python(result, by_name=False)
        sdk = None
    except ValidationError as exc:
        sdk = exc
    try:
        lean.check_call_result(result, version)
        ours = None
    except lean.InvalidResult as exc:
        ours = exc
    assert (ours is None) == (sdk is None), f"sdk: {sdk}; miroctl: {ours}"


async def _annotated(connector: connectors.Connector, annotations: str) -> Any:
    spec = ServerSpec(name="hostile", command=sys.executable, args=(HOSTILE,), startup_timeout=HEALTHY_STARTUP)
    async with Manager(Config(servers=(spec,)), connector=connector) as manager:
        return await manager.call(CallRequest("hostile", "annotated", {"annotations": annotations}, timeout=30))


@pytest.mark.parametrize("annotations", ['{"audience": ["robot"]}', '{"priority": 0.5}'])
def test_the_lean_and_the_sdk_session_give_one_verdict_on_a_result_and_a_refusal_is_one_line(annotations):
    ours = anyio.run(_annotated, connectors.LEAN, annotations)
    sdk = anyio.run(_annotated, connectors.SDK, annotations)
    assert ours.exit_code == sdk.exit_code
    assert ours.result == sdk.result
    for outcome in (ours, sdk) if ours.error is not None else ():
        assert outcome.error.startswith("the answer to annotated was not a valid result: content.0.")
        assert "audience" in outcome.error and "\n" not in outcome.error
