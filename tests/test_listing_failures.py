"""A server whose listing breaks is reported in place: never a traceback, never the other servers' loss."""

import sys

import anyio
from typer.testing import CliRunner

from miroctl.base.models import CallRequest, ServerSpec
from miroctl.cli.app import app
from miroctl.config.loader import Config
from miroctl.core.manager import Manager
from miroctl.gateway.server import Gateway
from tests.conftest import HOSTILE, LEGACY, hostile_yaml, parse_json
from tests.json_contract import one_document

REJECTED = ["#2 (no name)", "no_schema", "null_schema", "string_schema", "array_schema"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_one_malformed_tool_is_named_while_the_servers_valid_tools_are_listed_and_callable(write_config):
    path = write_config({"odd": hostile_yaml("odd", "tools/list=malformed")})
    listed = invoke("list", "--json", "--config", str(path))
    assert listed.exit_code == 1, listed.stderr
    (server,) = parse_json(listed.stdout)["servers"]
    assert server["ok"] and server["failure"] is None
    assert {"echo", "text", "model"} <= {tool["name"] for tool in server["tools"]}
    assert [item["name"] for item in server["rejected_tools"]] == REJECTED
    assert server["rejected_tools"][1]["reason"] == "inputSchema: Field required"
    assert server["rejected_tools"][4]["reason"] == "inputSchema.type: Input should be 'object'"
    human = invoke("list", "--config", str(path))
    assert "5 listed tools rejected (not callable)" in human.stdout and "no_schema: inputSchema" in human.stdout
    called = invoke("call", "--config", str(path), "odd", "echo", "text=still works")
    assert called.exit_code == 0, called.stderr
    assert called.stdout == "still works\n"


def test_each_way_a_listing_fails_is_that_servers_row_and_a_call_to_another_server_still_works(write_config):
    servers = {
        "erring": hostile_yaml("erring", "tools/list=error"),
        "dying": hostile_yaml("dying", "tools/list=die"),
        "garbled": hostile_yaml("garbled", "tools/list=garbage"),
        "looping": hostile_yaml("looping", "tools/list=loop"),
        "good": {"name": "good", "tool_command": "python", "args": [LEGACY, "--name", "good"]},
    }
    path = write_config(servers)
    listed = invoke("list", "--json", "--config", str(path))
    assert listed.exit_code == 1, listed.stderr
    rows = {s["name"]: s for s in parse_json(listed.stdout)["servers"]}
    errors = {name: (row["failure"] or {}) for name, row in rows.items()}
    assert {name: error.get("kind") for name, error in errors.items()} == {
        "erring": "protocol",
        "dying": "exited",
        "garbled": "protocol",
        "looping": "protocol",
        "good": None,
    }
    assert errors["erring"]["message"] == "tools/list failed: tools/list is broken today (error -32603)"
    assert "exited with code 5" in errors["dying"]["message"] and "dying on tools/list" in errors["dying"]["hint"]
    assert errors["garbled"]["message"] == "the answer to tools/list is not a page of tools: tools is str"
    assert errors["looping"]["message"] == "tools/list gave the cursor 'again' twice after 2 pages: a loop"
    assert [t["name"] for t in rows["good"]["tools"]] == ["echo", "fail", "add"]
    called = invoke("call", "--json", "--config", str(path), "add", "a=40", "b=2")
    assert called.exit_code == 0, called.stderr
    assert parse_json(called.stdout)["result"] == "42"


def test_an_endless_listing_stops_at_the_bound_and_says_so(write_config, monkeypatch):
    monkeypatch.setattr("miroctl.sessions.exchange.MAX_PAGES", 25)
    path = write_config({"endless": hostile_yaml("endless", "tools/list=endless")})
    listed = invoke("list", "--json", "--config", str(path))
    assert listed.exit_code == 1
    (server,) = parse_json(listed.stdout)["servers"]
    assert server["failure"]["message"] == "tools/list still had more after 25 pages"


def test_check_finds_rejected_tools_and_looping_listings_unhealthy(write_config):
    path = write_config(
        {"odd": hostile_yaml("odd", "tools/list=malformed"), "looping": hostile_yaml("looping", "tools/list=loop")}
    )
    result = invoke("check", "--json", "--config", str(path))
    assert result.exit_code == 1, result.stderr
    rows = {s["name"]: s for s in parse_json(result.stdout)["servers"]}
    assert rows["odd"]["phases"]["tools"]["status"] == "failed"
    assert rows["odd"]["failure"]["message"] == (
        "tools/list: 5 tools the protocol rejects: #2 (no name), no_schema, null_schema, string_schema, array_schema"
    )
    assert "echo" in rows["odd"]["tools"]
    assert rows["looping"]["failure"]["message"] == "tools/list gave the cursor 'again' twice after 2 pages: a loop"


def test_a_failing_resources_or_prompts_listing_is_reported_in_place_and_the_servers_tools_still_listed(write_config):
    path = write_config(
        {
            "plain": hostile_yaml("plain", "resources/templates/list=missing"),
            "looping": hostile_yaml("looping", "prompts/list=loop"),
            "erring": hostile_yaml("erring", "resources/list=error"),
            "dying": hostile_yaml("dying", "prompts/list=die"),
        }
    )
    result = invoke("list", "--resources", "--prompts", "--json", "--config", str(path))
    assert result.exit_code == 1, result.stderr
    document = one_document(result.stdout)  # list_failures is part of the list schema
    rows = {s["name"]: s for s in document["servers"]}
    assert document["ok"] is False and all(row["ok"] and row["failure"] is None for row in rows.values())
    assert all("echo" in [t["name"] for t in row["tools"]] for row in rows.values())
    plain = rows["plain"]
    assert "list_failures" not in plain
    assert (plain["resources"][0]["uri"], plain["resource_templates"], plain["prompts"][0]["name"]) == (
        "hostile://notes",
        [],
        "greet",
    )
    looping = rows["looping"]
    assert list(looping["list_failures"]) == ["prompts"] and "prompts" not in looping
    assert (
        looping["list_failures"]["prompts"]["message"]
        == "prompts/list gave the cursor 'again' twice after 2 pages: a loop"
    )
    assert looping["resources"][0]["uri"] == "hostile://notes"
    erring = rows["erring"]
    assert list(erring["list_failures"]) == ["resources"] and "resources" not in erring
    assert erring["list_failures"]["resources"]["kind"] == "protocol"
    assert "resources/list is broken today" in erring["list_failures"]["resources"]["message"]
    assert (erring["resource_templates"][0]["name"], erring["prompts"][0]["name"]) == ("item", "greet")
    dying = rows["dying"]["list_failures"]
    assert {key: failure["kind"] for key, failure in dying.items()} == dict.fromkeys(
        ("prompts", "resources", "resource_templates"), "exited"
    )
    assert dying["resources"]["message"].endswith("during prompts/list")
    prompt = invoke("prompt", "--json", "--config", str(path), "looping", "greet", "who=x")
    assert prompt.exit_code == 1, prompt.stderr
    assert (
        parse_json(prompt.stdout)["error"]
        == "looping: prompts/list gave the cursor 'again' twice after 2 pages: a loop"
    )


def test_the_table_shows_a_section_that_failed_to_list_in_its_place_with_the_reason(write_config):
    path = write_config({"erring": hostile_yaml("erring", "resources/list=error")})
    result = invoke("list", "--resources", "--prompts", "--config", str(path))
    assert result.exit_code == 1, result.stderr
    text = " ".join(result.stdout.split())
    assert "echo" in text and "erring 1 prompt" in text and "greet" in text
    assert "✗ erring resources not listed: protocol: resources/list failed: resources/list is broken today" in text


def test_a_running_gateway_keeps_a_relisted_servers_valid_tools_drops_it_when_relisting_fails_and_stays_up():
    specs = [ServerSpec(name, command=sys.executable, args=(HOSTILE, "--name", name)) for name in ("flaky", "steady")]
    config = Config(servers=tuple(specs), default_names=("flaky", "steady"))

    async def main() -> None:
        with anyio.fail_after(60):
            async with Manager(config, follow_changes=True) as manager:
                await serve_through_a_broken_relisting(Gateway(manager, specs))

    anyio.run(main)


async def serve_through_a_broken_relisting(gateway: Gateway) -> None:
    await gateway.refresh()
    assert {"flaky__echo", "steady__echo"} <= set(gateway.map.tools)
    broken = await gateway.call(CallRequest("flaky", "break_listing"))
    assert broken.ok, broken.error
    assert await gateway.manager.next_change(timeout=30)
    await gateway.refresh()  # malformed: the valid tools stay served, the others are named
    assert {"flaky__echo", "steady__echo"} <= set(gateway.map.tools)
    flaky = next(e for e in gateway.entries if e.server == "flaky")
    assert "no_schema" in [item.name for item in flaky.rejected]
    echoed = await gateway.call(CallRequest("flaky", "echo", {"text": "after the relisting"}))
    assert echoed.result == "after the relisting", echoed.error
    again = await gateway.call(CallRequest("flaky", "break_listing"))  # announces another change
    assert again.ok, again.error
    assert await gateway.manager.next_change(timeout=30)
    await gateway.refresh()  # now the listing fails: the server is dropped, the gateway serves on
    assert not any(name.startswith("flaky__") for name in gateway.map.tools)
    assert "steady__echo" in gateway.map.tools
    flaky = next(e for e in gateway.entries if e.server == "flaky")
    assert (
        flaky.failure is not None
        and flaky.failure.message == "tools/list failed: tools/list is broken today (error -32603)"
    )
    still = await gateway.call(CallRequest("steady", "echo", {"text": "still here"}))
    assert still.result == "still here"
