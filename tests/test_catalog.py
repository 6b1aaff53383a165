"""Resources and prompts: `list --resources --prompts`, `read` and `prompt`, against real servers."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import LEGACY, fixture_yaml, parse_json

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def offers(write_config):
    """alpha offers resources, a template and a prompt; old (an older protocol) offers tools only."""
    old = {"name": "old", "tool_command": "python", "args": [LEGACY]}
    return write_config({"alpha": fixture_yaml("alpha", "--tools", "echo"), "old": old})


def invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_list_with_resources_and_prompts_adds_what_each_server_offers(offers):
    result = invoke("list", "--config", str(offers), "--resources", "--prompts", "--json")
    assert result.exit_code == 0, result.stderr
    servers = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    alpha, old = servers["alpha"], servers["old"]
    assert [r["uri"] for r in alpha["resources"]] == ["fixture://notes", "fixture://pixel.png", "fixture://slow"]
    assert alpha["resources"][0]["mimeType"] == "text/plain"
    assert [t["uriTemplate"] for t in alpha["resource_templates"]] == ["fixture://items/{item}"]
    assert alpha["prompts"] == [
        {
            "name": "review",
            "description": "Ask for a review of some code.",
            "arguments": [{"name": "code", "required": True}, {"name": "focus", "required": False}],
        }
    ]
    assert old["ok"] is True and old["resources"] == [] and old["prompts"] == []


def test_list_without_the_flags_leaves_resources_and_prompts_out(offers):
    result = invoke("list", "--config", str(offers), "--json")
    assert result.exit_code == 0, result.stderr
    assert all("resources" not in s and "prompts" not in s for s in parse_json(result.stdout)["servers"])


def test_list_human_output_shows_resources_templates_and_prompts_as_tables(offers):
    result = invoke("list", "--config", str(offers), "--resources", "--prompts")
    assert result.exit_code == 0, result.stderr
    assert "alpha  3 resources" in result.stdout and "fixture://pixel.png" in result.stdout
    assert "alpha  1 resource template" in result.stdout and "fixture://items/{item}" in result.stdout
    assert "alpha  1 prompt" in result.stdout and "code*, focus" in result.stdout
    assert "old  no resources" in result.stdout and "old  no prompts" in result.stdout


def test_list_resources_through_a_gateway_is_a_usage_error():
    result = invoke("list", "--resources", "--via", "http://127.0.0.1:9/")
    assert result.exit_code == 2
    assert "--resources and --prompts are not served through a gateway" in result.stderr


def test_read_prints_a_text_resource_and_a_template_filled_in(offers):
    notes = invoke("read", "--config", str(offers), "alpha", "fixture://notes")
    item = invoke("read", "--config", str(offers), "alpha", "fixture://items/42", "--json")
    assert notes.exit_code == 0, notes.stderr
    assert notes.stdout == "notes of alpha\n"
    assert item.exit_code == 0, item.stderr
    document = parse_json(item.stdout)
    assert document["schema"] == "miroctl.resource/1" and document["exit_code"] == 0
    assert document["server_name"] == "alpha" and document["uri"] == "fixture://items/42"
    assert document["contents"] == [{"uri": "fixture://items/42", "mimeType": "text/plain", "text": "item 42"}]


def test_read_saves_a_binary_resource_to_a_file(offers, tmp_path):
    result = invoke("read", "--config", str(offers), "alpha", "fixture://pixel.png", "--save-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    saved = tmp_path / "pixel-1.png"
    assert f"saved: {saved}" in result.stderr
    assert saved.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    ("server", "uri", "code", "reason"),
    [
        ("alpha", "fixture://nope", 6, "miroctl: not_found: alpha: Unknown resource: fixture://nope"),
        ("old", "fixture://notes", 6, "miroctl: not_found: server 'old' offers no resources"),
        ("alhpa", "fixture://notes", 6, "miroctl: not_found: no server named 'alhpa'"),
    ],
)
def test_read_of_what_is_not_there_exits_with_one_line_and_a_hint(offers, server, uri, code, reason):
    result = invoke("read", "--config", str(offers), server, uri)
    assert result.exit_code == code
    assert result.stderr.splitlines()[0] == reason
    assert result.stderr.splitlines()[1].startswith("  hint: ")


def test_read_outliving_its_timeout_exits_4(offers):
    result = invoke("read", "--config", str(offers), "alpha", "fixture://slow", "--timeout", "1", "--json")
    assert result.exit_code == 4
    document = parse_json(result.stdout)
    assert document["error_kind"] == "timeout" and "did not arrive within 1s" in document["error"]


def test_read_from_a_server_that_cannot_start_exits_3_with_its_stderr(write_config):
    path = write_config({"quitter": fixture_yaml("quitter", "--mode", "exit")})
    result = invoke("read", "--config", str(path), "quitter", "fixture://notes", "--json")
    assert result.exit_code == 3
    document = parse_json(result.stdout)
    assert document["error_kind"] == "unavailable"
    assert "fixture: giving up" in document["failure"]["stderr_tail"]


def test_prompt_fills_in_its_arguments_and_prints_the_messages(offers):
    human = invoke("prompt", "--config", str(offers), "alpha", "review", "code=print(1)", "focus=style")
    document = invoke("prompt", "--config", str(offers), "alpha", "review", "code=x", "--json")
    assert human.exit_code == 0, human.stderr
    assert human.stdout == "[user]\nReview this code for style:\nprint(1)\n"
    assert document.exit_code == 0, document.stderr
    body = parse_json(document.stdout)
    assert body["schema"] == "miroctl.prompt/1" and body["prompt"] == "review"
    assert body["description"] == "Ask for a review of some code."
    assert body["messages"] == [{"role": "user", "content": {"type": "text", "text": "Review this code for bugs:\nx"}}]


@pytest.mark.parametrize(
    ("args", "code", "reason", "hint"),
    [
        (["reviw"], 6, "miroctl: not_found: server 'alpha' has no prompt 'reviw'", "  hint: did you mean 'review'?"),
        (
            ["review", "focus=x"],
            2,
            "miroctl: usage: review: missing required argument code",
            "  hint: review takes code*, focus (* required)",
        ),
        (["review", "code"], 2, "miroctl: arguments: argument 'code' is not key=value (or key:=json)", None),
    ],
)
def test_prompt_mistakes_exit_with_one_line_and_a_hint(offers, args, code, reason, hint):
    result = invoke("prompt", "--config", str(offers), "alpha", *args)
    assert result.exit_code == code
    lines = result.stderr.splitlines()
    assert lines[0] == reason
    assert hint is None or lines[1] == hint
    assert result.stdout == ""


def test_read_shows_server_text_literally(offers):
    result = invoke("read", "--config", str(offers), "alpha", "fixture://items/[bold]x[bold]\x1b[31m")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "item [bold]x[bold]\\x1b[31m\n"
