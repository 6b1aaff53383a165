"""`check --strict`: tool-schema portability findings per provider, exit 7, in JSON, the table, JUnit and the lock."""

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from miroctl.base.errors import ExitCode, UsageError
from miroctl.base.models import ToolInfo
from miroctl.check import lint
from miroctl.check.lint_rules import portable_name
from miroctl.cli.app import app
from tests.conftest import HEALTHY_STARTUP, fixture_yaml, parse_json
from tests.gateway_support import READY, running
from tests.json_contract import validate
from tests.surface_support import surface_yaml

STRICT_OBJECT = {"type": "object", "additionalProperties": False}
PORTABLE = {
    "name": "read_file",
    "description": "Read a file.",
    "inputSchema": {**STRICT_OBJECT, "properties": {"path": {"type": "string"}}, "required": ["path"]},
}
UNPORTABLE = [
    {
        "name": "read file",
        "description": "Read a file.",
        "inputSchema": PORTABLE["inputSchema"],
    },
    {
        "name": "fetch",
        "description": "",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "format": "uri", "minLength": 1},
                "retries": {"type": "integer", "minimum": 0},
            },
            "required": ["url"],
        },
    },
    {
        "name": "pick",
        "description": "Pick one.",
        "inputSchema": {"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}}]},
    },
    {
        "name": "tag",
        "description": "Tag things.",
        "inputSchema": {
            **STRICT_OBJECT,
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "kind": {"type": ["string", "null"]},
                "my-param": {},
            },
            "required": ["labels", "kind", "my-param"],
        },
    },
]


@pytest.fixture
def profile(write_config, tmp_path):
    """A profile of surface servers: `bad` lists the unportable tools, `good` one portable tool."""

    def make(**servers):
        files = {name: surface_yaml(tmp_path, tools, name=name) for name, tools in servers.items()}
        return write_config(files, tool_config=list(servers))

    return make


def check(config, *args):
    # wide enough that a finding's line is never folded (piped output honours COLUMNS)
    return CliRunner().invoke(app, ["check", "--config", str(config), *args], env={"COLUMNS": "200"})


def findings_of(document, server):
    return next(s for s in document["servers"] if s["name"] == server)["lint"]


def test_strict_check_of_unportable_tools_exits_7_with_path_problem_and_fix_for_each(profile):
    result = check(profile(bad=UNPORTABLE), "--strict=openai,anthropic,gemini,openai-strict", "--json")
    assert result.exit_code == ExitCode.LINT == 7
    document = validate(parse_json(result.stdout))  # the check schema, lint findings included
    found = findings_of(document, "bad")
    by_place = {(f["tool"], f["path"], f["rule"]) for f in found}
    assert {
        ("read file", "name", "name"),
        ("fetch", "description", "description-empty"),
        ("fetch", "input_schema.additionalProperties", "openai-additional-properties"),
        ("fetch", "input_schema.required", "openai-required"),
        ("fetch", "input_schema.properties.url.minLength", "openai-keyword"),
        ("fetch", "input_schema.properties.url.format", "openai-format"),
        ("pick", "input_schema.anyOf", "root-composition"),
        ("tag", "input_schema.properties.labels.additionalProperties", "gemini-map"),
        ("tag", "input_schema.properties.kind.type", "gemini-type-list"),
        ("tag", "input_schema.properties.my-param", "gemini-parameter-name"),
        ("tag", "input_schema.properties.my-param.type", "missing-type"),
    } <= by_place
    assert all(f["problem"] and f["fix"] and f["providers"] for f in found)
    assert document["summary"]["lint_findings"] == len(found)
    assert document["strict"] == ["openai", "anthropic", "gemini", "openai-strict"]


def test_a_bare_strict_takes_optional_parameters_and_open_objects_as_every_provider_does_by_default(profile):
    optional = {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}
    result = check(profile(good=[{**PORTABLE, "inputSchema": optional}]), "--strict", "--json")
    assert result.exit_code == 0, result.stdout
    document = parse_json(result.stdout)
    assert document["strict"] == ["openai", "anthropic", "gemini"]
    assert findings_of(document, "good") == []
    strict_mode = check(profile(good=[{**PORTABLE, "inputSchema": optional}]), "--strict=openai-strict", "--json")
    assert strict_mode.exit_code == 7
    found = findings_of(parse_json(strict_mode.stdout), "good")
    assert {(f["rule"], tuple(f["providers"])) for f in found} == {
        ("openai-additional-properties", ("openai-strict",)),
        ("openai-required", ("openai-strict",)),
    }


def test_strict_for_some_providers_reports_only_what_they_reject(profile):
    result = check(profile(bad=UNPORTABLE), "--strict=gemini", "--json")
    assert result.exit_code == 7
    found = findings_of(parse_json(result.stdout), "bad")
    assert found and all(f["providers"] == ["gemini"] for f in found)
    assert not any(f["rule"].startswith("openai") for f in found)


def test_strict_check_of_portable_tools_exits_0_with_an_empty_lint_list(profile):
    result = check(profile(good=[PORTABLE]), "--strict", "--json")
    assert result.exit_code == 0, result.stdout
    assert findings_of(parse_json(result.stdout), "good") == []


def test_without_strict_unportable_tools_pass_and_there_is_no_lint_key(profile):
    result = check(profile(bad=UNPORTABLE), "--json")
    assert result.exit_code == 0
    document = parse_json(result.stdout)
    assert "lint" not in document["servers"][0] and "strict" not in document


def test_an_unhealthy_server_keeps_exit_1_when_another_has_findings(write_config, tmp_path):
    config = write_config(
        {"bad": surface_yaml(tmp_path, UNPORTABLE, name="bad"), "broken": fixture_yaml("broken", "--mode", "exit")},
        tool_config=["bad", "broken"],
    )
    result = check(config, "--strict", "--json")
    assert result.exit_code == 1
    document = parse_json(result.stdout)
    assert findings_of(document, "bad")
    assert next(s for s in document["servers"] if s["name"] == "broken").get("lint") is None


def test_a_tool_name_two_servers_share_is_a_finding_on_both(profile):
    result = check(profile(one=[PORTABLE], two=[PORTABLE]), "--strict", "--json")
    assert result.exit_code == 7
    document = parse_json(result.stdout)
    for server, other in (("one", "two"), ("two", "one")):
        (finding,) = findings_of(document, server)
        assert finding["rule"] == "duplicate-name" and other in finding["problem"]


def test_an_unknown_provider_is_a_usage_error_before_any_server_starts(profile):
    result = check(profile(good=[PORTABLE]), "--strict=openai,bogus")
    assert result.exit_code == 2
    assert "'bogus' is not a provider" in result.stderr


def test_the_table_lists_each_finding_with_its_fix(profile):
    result = check(profile(bad=UNPORTABLE), "--strict=anthropic")
    assert result.exit_code == 7
    assert "schema lint (anthropic): 3 findings" in result.stdout
    assert "fix: rename it to 'read_file'" in result.stdout
    assert "3 lint findings" in result.stdout


def test_junit_reports_the_findings_as_a_lint_failure(profile, tmp_path):
    report = tmp_path / "junit.xml"
    result = check(profile(bad=UNPORTABLE), "--strict=anthropic", "--junit", str(report))
    assert result.exit_code == 7
    failure = ET.parse(report).getroot().find("./testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == "lint"
    assert "read file name: tool name 'read file' is not a valid function name" in failure.text


def test_the_lock_records_findings_and_against_fails_only_on_new_ones(profile, tmp_path):
    config = profile(bad=UNPORTABLE)
    lock = tmp_path / "tools.lock.json"
    assert check(config, "--strict=anthropic", "--lock", str(lock)).exit_code == 7
    recorded = json.loads(lock.read_text())["servers"]["bad"]["lint"]
    assert "read file name name" in recorded

    same = check(config, "--strict=anthropic", "--against", str(lock), "--json")
    assert same.exit_code == 0, same.stdout
    assert parse_json(same.stdout)["lock"]["lint_new"] == []

    wider = check(config, "--strict", "--against", str(lock), "--json")
    assert wider.exit_code == 7
    new = validate(parse_json(wider.stdout))["lock"]["lint_new"]
    assert new and all("anthropic" not in f["providers"] for f in new)


def test_findings_a_lock_no_longer_sees_are_listed_in_the_diff(profile, tmp_path):
    config = profile(bad=UNPORTABLE)
    lock = tmp_path / "tools.lock.json"
    check(config, "--strict=all,openai-strict", "--lock", str(lock))
    narrower = check(config, "--strict=anthropic", "--against", str(lock))
    assert narrower.exit_code == 0, narrower.stdout
    assert "lint finding no longer reported: fetch input_schema.properties.url.format openai-format" in narrower.stdout


def test_strict_check_through_a_gateway_lints_its_servers_tools(profile):
    config = profile(bad=UNPORTABLE)
    with running("--config", str(config), "--transport", "http", "--port", "0") as gateway:
        result = CliRunner().invoke(app, ["check", "--via", started(gateway), "--strict=anthropic", "--json"])
    assert result.exit_code == 7, result.stderr
    assert {f["rule"] for f in findings_of(parse_json(result.stdout), "bad")} == {
        "name",
        "description-empty",
        "root-composition",
    }


# ---------------------------------------------------------------------------------------------- the rules


def tool(schema, name="t", description="Does t."):
    return ToolInfo("s", name, description, schema)


def rules(found):
    return sorted({f.rule for f in found})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("all", ("openai", "anthropic", "gemini")), ("gemini,openai", ("openai", "gemini")), (" Gemini ", ("gemini",))],
)
def test_providers_are_all_or_a_comma_list(text, expected):
    assert lint.parse_providers(text) == expected


def test_an_unknown_provider_suggests_the_closest():
    with pytest.raises(UsageError) as caught:
        lint.parse_providers("opnai")
    assert caught.value.hint and "openai" in caught.value.hint


@pytest.mark.parametrize(("name", "fixed"), [("read file", "read_file"), ("9lives", "_9lives"), ("x" * 80, "x" * 64)])
def test_the_suggested_name_is_accepted_by_every_provider(name, fixed):
    assert portable_name(name) == fixed
    assert not list(lint.lint_tool(tool({**STRICT_OBJECT, "properties": {}}, name=fixed), lint.PROVIDERS))


def test_a_gemini_name_may_hold_a_dot_that_openai_rejects():
    (finding,) = lint.lint_tool(tool({**STRICT_OBJECT, "properties": {}}, name="fs.read"), lint.PROVIDERS)
    assert finding.providers == ("openai", "anthropic", "openai-strict")


def test_a_huge_description_is_a_finding_for_every_provider():
    found = lint.lint_tool(tool({**STRICT_OBJECT, "properties": {}}, description="x" * 5000), ["gemini"])
    assert rules(found) == ["description-huge"]


def test_ref_and_defs_are_fine_for_openai_but_not_for_gemini():
    schema = {
        **STRICT_OBJECT,
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "required": ["p"],
        "$defs": {"P": {"type": "string"}},
    }
    assert lint.lint_tool(tool(schema), ["openai", "openai-strict"]) == []
    assert rules(lint.lint_tool(tool(schema), ["gemini"])) == ["gemini-keyword"]


def test_a_hostile_deeply_nested_schema_is_walked_without_blowing_the_stack():
    schema: dict = {"type": "string"}
    for _ in range(3000):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": False}
    found = lint.lint_tool(tool(schema), ["openai-strict"])
    assert rules(found) == ["openai-depth"]


def test_a_schema_that_breaks_every_rule_is_summed_up_after_fifty_findings():
    properties = {f"p{i}": {"type": "string", "maxLength": 3} for i in range(80)}
    found = lint.lint_tool(
        tool({**STRICT_OBJECT, "properties": properties, "required": list(properties)}), ["openai-strict"]
    )
    assert len(found) == lint.MAX_PER_TOOL + 1
    assert found[-1].problem == "30 more"


def started(gateway):
    """The gateway's URL once it is ready (a loaded CI machine may take minutes to start its servers)."""
    return gateway.wait_for(READY.pattern, timeout=HEALTHY_STARTUP * 6).group(1)
