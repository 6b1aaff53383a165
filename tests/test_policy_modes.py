"""Permission modes through the Manager (in-process servers): what `list` shows and what `call` refuses."""

from __future__ import annotations

import anyio

from miroctl.base.models import CallRequest
from miroctl.core.manager import Manager
from tests.policy_support import calls, memory_spec, pool


def visible_and_called(record, tool: str, blacklist=(), **sections):
    """The tools `list` shows, and the outcome of calling `tool`, under these profile sections."""
    config = pool(memory_spec("web", record, tools={"note": {"risk": "high"}}), blacklist=blacklist, **sections)
    arguments = {"text": "x"} if tool == "note" else {}

    async def main():
        async with Manager(config) as manager:
            listed = await manager.list_tools()
            return {t.name for t in listed[0].tools}, await manager.call(CallRequest("web", tool, arguments))

    return anyio.run(main)


def test_normal_mode_hides_and_refuses_a_high_risk_tool_but_keeps_unannotated_ones(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "note")
    assert "note" not in shown and {"plain", "wipe", "env"} <= shown
    assert (outcome.exit_code, outcome.decision["reason"]) == (5, "guardrail_high")
    assert calls(tmp_path / "r") == []


def test_allow_high_lets_a_high_risk_tool_through_in_normal_mode(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "note", policy={"allow_high": ["web.note"]})
    assert "note" in shown and outcome.ok
    assert calls(tmp_path / "r") == ['call note {"text": "x"}']


def test_an_allowlist_refuses_unlisted_tools_with_reason_allowlist(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "plain", policy={"allowlist": ["web.wipe"]})
    assert shown == {"fetch", "visit", "peek", "wipe"}
    assert (outcome.exit_code, outcome.decision["reason"]) == (5, "allowlist")


def test_bypass_allows_a_high_risk_tool(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "note", policy={"mode": "bypass"})
    assert "note" in shown and outcome.ok


def test_the_blacklist_holds_even_in_bypass_mode_and_before_any_server_starts(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "wipe", blacklist=[("web", "wipe")], policy={"mode": "bypass"})
    assert "wipe" not in shown
    assert (outcome.exit_code, outcome.decision["reason"]) == (5, "blacklist")


def test_read_only_mode_refuses_writing_tools_and_keeps_read_only_ones(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "plain", policy={"mode": "read_only"})
    assert shown == {"fetch", "visit", "peek"}
    assert (outcome.exit_code, outcome.decision["reason"]) == (5, "mode_read_only")


def test_ask_mode_without_anyone_to_answer_refuses_a_destructive_tool(tmp_path):
    shown, outcome = visible_and_called(tmp_path / "r", "wipe", policy={"mode": "ask"})
    assert "wipe" in shown
    assert outcome.decision == {
        "allowed": False,
        "state": "deny",
        "reason": "mode_ask",
        "message": "web.wipe is destructive: mode ask needs a yes, and none was given",
    }
    assert calls(tmp_path / "r") == []


def notify_tools(**sections):
    """`note` marked category: notify (it is not destructive: a plain write that reaches people)."""
    return pool(memory_spec("web", None, tools={"note": {"category": "notify"}}), **sections)


def list_and_call_note(config, confirm=None):
    async def main():
        async with Manager(config, confirm=confirm) as manager:
            listed = await manager.list_tools()
            return {t.name for t in listed[0].tools}, await manager.call(CallRequest("web", "note", {"text": "x"}))

    return anyio.run(main)


def test_normal_mode_hides_and_refuses_a_notify_tool_with_reason_guardrail_notify():
    shown, outcome = list_and_call_note(notify_tools())
    assert "note" not in shown
    assert (outcome.exit_code, outcome.decision["reason"]) == (5, "guardrail_notify")
    assert outcome.error == "web.note is marked category: notify and policy.allow_notify does not name it"


def test_allow_notify_lets_a_notify_tool_through_in_normal_mode():
    shown, outcome = list_and_call_note(notify_tools(policy={"allow_notify": ["web.note"]}))
    assert "note" in shown and outcome.ok


def test_ask_mode_asks_for_a_notify_tool_that_allow_notify_does_not_name():
    asked = []

    async def confirm(question):
        asked.append(question.decision.message)
        return True

    shown, outcome = list_and_call_note(notify_tools(policy={"mode": "ask"}), confirm)
    assert "note" in shown and outcome.ok
    assert asked == ["web.note is a notify tool: mode ask needs a yes"]
    assert outcome.decision["confirmed_by"] == "prompt"
