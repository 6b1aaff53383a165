"""Server-name auto-correction as in the seeds: only when exactly one server has the tool."""

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import fixture_yaml, parse_json
from tests.json_contract import one_document

SLEEPY_NOTE = (
    "[Auto-corrected: Server 'tool-alpha' has no tool 'sleepy', but tool 'sleepy' was found only in server "
    "'tool-beta', so automatically used 'tool-beta' instead] "
)


@pytest.fixture
def pool(write_config):
    return write_config(
        {
            "alpha": fixture_yaml("alpha", "--tools", "add,echo,ghost"),
            "beta": fixture_yaml("beta", "--tools", "echo,sleep"),
            "gamma": fixture_yaml("gamma", "--tools", "ghost,env", env={"FIXTURE_GHOST_REAL": "1"}),
        }
    )


def call(path, *words):
    return CliRunner().invoke(app, ["call", "--config", str(path), *words])


def test_unknown_server_is_corrected_when_exactly_one_server_has_the_tool(pool):
    result = call(pool, "maths", "add", "a=1", "b=2", "--json")
    assert result.exit_code == 0
    envelope = parse_json(result.stdout)
    assert (envelope["server_name"], envelope["corrected_from"]) == ("alpha", "maths")
    assert envelope["result"] == (
        "[Auto-corrected: Server 'maths' not found, but tool 'add' was found only in server 'alpha', "
        "so automatically used 'alpha' instead] 3"
    )


def test_human_output_marks_the_correction_as_the_seeds_do(pool):
    result = call(pool, "maths", "add", "a=1")
    assert result.exit_code == 0
    assert result.stderr.count("[Auto-corrected: Server 'maths' not found") == 1
    assert "so automatically used 'alpha' instead]" in result.stderr
    assert result.stdout == "1\n"


def test_a_tool_on_several_servers_is_never_guessed(pool):
    result = call(pool, "maths", "echo", "text=x", "--json")
    assert result.exit_code == 6
    envelope = parse_json(result.stdout)
    assert envelope["candidates"] == ["alpha", "beta"]
    assert "tool 'echo' is on several servers: alpha, beta" in envelope["error"]


def test_a_tool_on_no_server_hints_at_a_server_tool_mixup(pool):
    result = call(pool, "add", "alpha", "--json")
    assert result.exit_code == 6
    envelope = parse_json(result.stdout)
    assert envelope["error"] == "no server named 'add', and no server has a tool named 'alpha'"
    assert envelope["hint"] == "server and tool swapped? try: miroctl call alpha add"


def test_an_existing_server_without_the_tool_reroutes_to_the_one_that_has_it(pool):
    result = call(pool, "beta", "add", "a=5", "--json")
    assert result.exit_code == 0
    envelope = parse_json(result.stdout)
    assert (envelope["server_name"], envelope["corrected_from"]) == ("alpha", "beta")


def test_a_server_answering_unknown_tool_is_rerouted_to_the_one_other_holder(pool):
    result = call(pool, "alpha", "ghost", "--json")
    assert result.exit_code == 0
    envelope = parse_json(result.stdout)
    assert envelope["corrected_from"] == "alpha"
    assert envelope["result"].startswith("[Auto-corrected: Server 'alpha' has no tool 'ghost', but tool 'ghost'")
    assert envelope["result"].endswith("so automatically used 'gamma' instead] boo from gamma")


def test_no_autocorrect_keeps_the_servers_unknown_tool_answer(pool):
    result = call(pool, "alpha", "ghost", "--no-autocorrect", "--json")
    assert result.exit_code == 1
    assert "Unknown tool: ghost" in parse_json(result.stdout)["error"]


def test_no_autocorrect_refuses_a_server_without_the_tool(pool):
    result = call(pool, "beta", "add", "a=5", "--no-autocorrect")
    assert result.exit_code == 6
    assert "server 'beta' has no tool 'add'" in result.stderr


def test_a_tool_alone_is_sent_to_the_one_server_that_has_it_without_a_correction_note(pool):
    result = call(pool, "sleep", "seconds=0", "--json")
    assert result.exit_code == 0
    envelope = parse_json(result.stdout)
    assert envelope["server_name"] == "beta" and envelope["corrected_from"] is None


def test_a_blacklisted_tool_is_not_a_correction_candidate(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "add")}, tool_blacklist=[["alpha", "add"]])
    result = call(path, "maths", "add", "a=1")
    assert result.exit_code == 6


@pytest.fixture
def near_miss_pool(write_config):
    return write_config(
        {
            "tool-alpha": fixture_yaml("tool-alpha", "--tools", "echo,sleep"),
            "tool-beta": fixture_yaml("tool-beta", "--tools", "sleepy"),
        }
    )


def test_a_tool_of_exactly_that_name_on_one_other_server_beats_a_near_miss_on_the_named_one(near_miss_pool):
    result = call(near_miss_pool, "tool-alpha", "sleepy", "--json")
    assert result.exit_code == 0, result.output
    envelope = one_document(result.stdout)
    assert (envelope["server_name"], envelope["corrected_from"]) == ("tool-beta", "tool-alpha")
    assert envelope["result"] == SLEEPY_NOTE + "sleepy on tool-beta"


def test_human_output_of_a_corrected_call_shows_the_note_once_on_stderr_and_the_bare_result(near_miss_pool):
    result = call(near_miss_pool, "tool-alpha", "sleepy")
    assert result.exit_code == 0, result.output
    assert result.stdout == "sleepy on tool-beta\n"
    assert result.stderr.count("[Auto-corrected:") == 1 and SLEEPY_NOTE.strip() in result.stderr


def test_without_autocorrect_the_near_miss_on_the_named_server_is_suggested(near_miss_pool):
    result = call(near_miss_pool, "tool-alpha", "sleepy", "--no-autocorrect", "--json")
    assert result.exit_code == 6
    envelope = parse_json(result.stdout)
    assert envelope["error"] == "server 'tool-alpha' has no tool 'sleepy'"
    assert "sleep" in envelope["hint"] and envelope["corrected_from"] is None


def test_a_near_miss_is_suggested_when_no_server_has_the_exact_name(near_miss_pool):
    result = call(near_miss_pool, "tool-alpha", "slep", "--json")
    assert result.exit_code == 6
    envelope = parse_json(result.stdout)
    assert envelope["error"] == "server 'tool-alpha' has no tool 'slep'"
    assert "sleep" in envelope["hint"]
