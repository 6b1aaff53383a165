"""The policy's pure rules: metadata merge, glob settings, modes and reason types, limits."""

from __future__ import annotations

import pytest

from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.config.loader import Profile
from miroctl.config.sections import Sections
from miroctl.policy.decisions import Policy, merge_meta, tool_settings


def tool(name: str, **annotations: bool) -> ToolInfo:
    return ToolInfo(server="srv", name=name, annotations=annotations)


def spec(**tools: dict) -> ServerSpec:
    return ServerSpec(name="tool-srv", command="x", tools=tools)


def policy(**rules: object) -> Policy:
    return Policy.from_profile(Profile(sections=Sections.parse({"policy": rules})), environ={})


def test_an_unannotated_unconfigured_tool_gets_the_mcp_defaults():
    meta = merge_meta({}, {})
    assert (meta.read_only, meta.destructive, meta.idempotent, meta.open_world) == (False, True, False, True)
    assert (meta.risk, meta.concurrency_safe, meta.max_result_chars) == ("normal", True, None)


def test_annotations_describe_a_tool_the_config_says_nothing_about():
    meta = merge_meta({}, {"readOnlyHint": True, "openWorldHint": False})
    assert meta.read_only and not meta.destructive and not meta.open_world


def test_an_annotation_cannot_make_a_tool_more_trusted_than_its_config():
    meta = merge_meta(
        {"read_only": False, "destructive": True, "idempotent": False},
        {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    )
    assert not meta.read_only and meta.destructive and not meta.idempotent


def test_an_annotation_can_make_a_tool_less_trusted_than_its_config():
    meta = merge_meta({"read_only": True, "idempotent": True}, {"readOnlyHint": False, "idempotentHint": False})
    assert not meta.read_only and meta.destructive and not meta.idempotent


def test_config_alone_sets_risk_limits_and_concurrency():
    meta = merge_meta({"risk": "high", "max_result_chars": 50, "concurrency_safe": False}, {"readOnlyHint": True})
    assert (meta.risk, meta.max_result_chars, meta.concurrency_safe) == ("high", 50, False)


def test_tool_settings_layer_globs_under_the_tools_own_entry():
    settings = tool_settings(
        spec(
            **{
                "*": {"max_result_chars": 10, "risk": "low"},
                "write_*": {"risk": "high"},
                "write_file": {"max_result_chars": 99},
            }
        ),
        "write_file",
    )
    assert settings == {"max_result_chars": 99, "risk": "high"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("bypass", {"peek": "ok", "note": "ok", "wipe": "ok", "risky": "ok"}),
        ("read_only", {"peek": "ok", "note": "mode_read_only", "wipe": "mode_read_only", "risky": "guardrail_high"}),
        ("normal", {"peek": "ok", "note": "ok", "wipe": "ok", "risky": "guardrail_high"}),
        ("ask", {"peek": "ok", "note": "ok", "wipe": "mode_ask", "risky": "mode_ask"}),
    ],
)
def test_each_mode_decides_each_kind_of_tool_with_its_reason(mode, expected):
    rules = policy(mode=mode)
    server = spec(risky={"risk": "high", "read_only": True})
    tools = {
        "peek": tool("peek", readOnlyHint=True),
        "note": tool("note", readOnlyHint=False, destructiveHint=False),
        "wipe": tool("wipe", destructiveHint=True),
        "risky": tool("risky", readOnlyHint=True),
    }
    reasons = {name: rules.decide(server, name, info).reason for name, info in tools.items()}
    assert reasons == expected


def test_ask_leaves_tools_visible_but_not_allowed_until_someone_says_yes():
    decision = policy(mode="ask").decide(spec(), "wipe", tool("wipe"))
    assert decision.state == "ask" and not decision.allowed
    assert policy(mode="ask").visible(spec(), tool("wipe"))
    assert decision.confirmed("yes").to_dict()["state"] == "allow"


def test_normal_mode_lets_an_unannotated_third_party_tool_through():
    assert policy().decide(spec(), "anything", tool("anything")).allowed


def test_allow_high_names_the_high_risk_tools_normal_mode_lets_through():
    server = spec(run_command={"risk": "high"})
    assert policy(allow_high=["srv.run_*"]).decide(server, "run_command", tool("run_command")).allowed
    assert policy(allow_high=["tool-srv.run_command"]).decide(server, "run_command", tool("run_command")).allowed
    assert not policy(allow_high=["other.*"]).decide(server, "run_command", tool("run_command")).allowed


def test_an_allowlist_walls_off_other_tools_but_lets_read_only_ones_pass():
    rules = policy(allowlist=["srv.note"])
    assert rules.decide(spec(), "note", tool("note")).allowed
    assert rules.decide(spec(), "peek", tool("peek", readOnlyHint=True)).allowed
    denied = rules.decide(spec(), "wipe", tool("wipe"))
    assert (denied.allowed, denied.reason) == (False, "allowlist")


def test_the_blacklist_wins_over_every_mode_and_accepts_globs():
    rules = Policy.from_profile(
        Profile(blacklist=frozenset({("srv", "rm_*")}), sections=Sections.parse({"policy": {"mode": "bypass"}})),
        environ={},
    )
    assert rules.decide(spec(), "rm_rf", tool("rm_rf")).reason == "blacklist"
    assert rules.decide(spec(), "ls", tool("ls")).allowed


def test_before_the_server_is_asked_only_what_no_annotation_could_allow_is_denied():
    rules = policy(mode="read_only")
    assert rules.decide(spec(), "unknown").state == "allow"  # an annotation may still say read-only
    assert rules.decide(spec(w={"read_only": False}), "w").reason == "mode_read_only"


def test_a_url_argument_matching_a_rule_is_blocked_in_every_mode():
    for mode in ("bypass", "normal"):
        decision = policy(mode=mode).decide(
            spec(), "fetch", tool("fetch"), {"url": "https://huggingface.co/datasets/gaia-benchmark/GAIA"}
        )
        assert (decision.allowed, decision.reason) == (False, "url_blocked")
        assert "huggingface.co/datasets" in decision.message


def test_result_limits_come_from_the_tool_then_the_server_then_the_profile():
    rules = Policy.from_profile(Profile(sections=Sections.parse({"max_result_chars": 1000})), environ={})
    server = spec(**{"*": {"max_result_chars": 100}, "long": {"max_result_chars": 10}})
    assert rules.result_limit(server, "long") == 10
    assert rules.result_limit(server, "other") == 100
    assert rules.result_limit(spec(), "other") == 1000
    assert policy().result_limit(spec(), "other") is None


def test_demo_mode_cuts_scrape_results_at_20000_characters_as_in_the_seeds():
    demo = Policy.from_profile(Profile(), environ={"DEMO_MODE": "1"})
    assert demo.result_limit(spec(), "scrape_website") == 20_000
    assert demo.result_limit(spec(), "read_file") is None


def test_command_line_overrides_replace_the_profiles_mode_and_yes():
    rules = policy(mode="read_only").with_overrides(mode="ask", assume_yes=True)
    assert (rules.mode, rules.assume_yes) == ("ask", True)
    assert policy(mode="ask").with_overrides().mode == "ask"
