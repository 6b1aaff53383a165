"""Small things servers were seen to break: invisible characters, very long and odd tool names, error envelopes,
disabled files a profile names, drift reports, links and resources in results."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from typer.testing import CliRunner

from miroctl.base.models import ServerSpec
from miroctl.cli.app import app
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.gateway.server import Gateway, build_server
from tests.surface_support import PIXEL, SURFACE, echo, surface_yaml, text, tool

BIDI, ZERO_WIDTH = "\u202e", "\u200b"
SHY = f"Reads files{BIDI}gnp.exe"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def invoke(*words: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(words), env=env)


def test_bidi_and_zero_width_characters_are_escaped_in_json_lock_and_junit_and_visible_in_human_output(
    write_config, tmp_path
):
    tools = [tool("say", text(f"abc{ZERO_WIDTH}def{BIDI}ghi"), description=SHY)]
    path = write_config({"odd": surface_yaml(tmp_path, tools, name="odd", server_name="odd\u2066x")})
    outputs = {
        "json": invoke("call", "-c", str(path), "odd", "say", "--json").stdout,
        "human": invoke("call", "-c", str(path), "odd", "say").stdout,
        "list": invoke("list", "-c", str(path), env={"COLUMNS": "200"}).stdout,
    }
    lock, report = tmp_path / "tools.lock.json", tmp_path / "junit.xml"
    checked = invoke("check", "-c", str(path), "--lock", str(lock), "--junit", str(report))
    assert checked.exit_code == 0, checked.output
    outputs |= {"lock": lock.read_text(), "junit": report.read_text()}
    for where, shown in outputs.items():
        assert BIDI not in shown and ZERO_WIDTH not in shown and "\u2066" not in shown, where
    assert json.loads(outputs["json"])["result"] == f"abc{ZERO_WIDTH}def{BIDI}ghi"
    assert "abc\\u200bdef\\u202eghi" in outputs["human"] and "\\u202e" in outputs["list"]
    assert "Reads files\\u202egnp.exe" in outputs["lock"] and "odd\\u2066x" in outputs["junit"]


def test_one_very_long_tool_name_does_not_collapse_the_list_table(write_config, tmp_path):
    tools = [tool("x" * 300), tool("read_file", description="Read one file and return its text.", inputSchema=SCHEMA)]
    path = write_config({"files": surface_yaml(tmp_path, tools, name="files")})
    result = invoke("list", "-c", str(path), env={"COLUMNS": "100"})
    assert result.exit_code == 0
    row = next(line for line in result.stdout.splitlines() if "read_file" in line)
    assert "Read one file and return" in row and "path*: string" in row and row.endswith("│")


def test_tool_names_with_spaces_or_slashes_are_exposed_in_a_form_hosts_accept(tmp_path):
    tools = [tool("read file", text("read it")), tool("fs/read"), tool("a b"), tool("a_b"), tool("n" * 200)]
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"tools": tools}))
    spec = ServerSpec(name="s", command=sys.executable, args=(SURFACE, "--spec", str(spec_file)), startup_timeout=30)

    async def main() -> tuple[list[str], str, list[str]]:
        config = Config(servers=(spec,), profile=Profile(startup_timeout=30), default_names=("s",))
        async with Manager(config) as manager:
            gateway = Gateway(manager, [spec])
            await gateway.refresh()
            async with Client(build_server(gateway)) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                result = await client.call_tool("s__read_file", {})
            return names, result.content[0].text, [c.name for c in gateway.map.collisions]

    names, answer, collisions = anyio.run(main)
    assert {"s__read_file", "s__fs_read"} <= set(names) and "s__a_b" not in names
    (long,) = [name for name in names if name.startswith("s__nnn")]
    assert len(long) == 128 and long.startswith("s__" + "n" * 116 + "-")
    assert answer == "read it"
    assert collisions == ["s__a_b"]


def test_an_error_envelope_never_says_is_error_false(write_config, tmp_path):
    path = write_config(
        {"alpha": surface_yaml(tmp_path, [echo(), tool("wipe")], name="alpha")}, tool_blacklist=[["alpha", "wipe"]]
    )
    for words, code in ((["alpha", "nope"], 6), (["alpha", "wipe"], 5), (["alpha", "echo", "text:=1"], 2)):
        result = invoke("call", "-c", str(path), *words, "--json")
        assert result.exit_code == code
        envelope = json.loads(result.stdout)
        assert envelope["is_error"] is True and envelope["error"]


def test_a_disabled_server_file_that_tool_config_names_is_used(write_config, tmp_path):
    servers = {
        "a": surface_yaml(tmp_path, [echo()], name="a"),
        "b": surface_yaml(tmp_path, [tool("add", text("3"))], name="b", enabled=False),
    }
    path = write_config(servers, tool_config=["a", "b"])
    listed = invoke("list", "-c", str(path), "--json")
    assert listed.exit_code == 0
    assert [server["name"] for server in json.loads(listed.stdout)["servers"]] == ["a", "b"]
    routed = invoke("call", "-c", str(path), "add", "--json")
    assert routed.exit_code == 0 and json.loads(routed.stdout)["server_name"] == "b"


def test_resource_links_and_embedded_resources_of_a_result_are_shown_to_humans(write_config, tmp_path):
    content = [
        {"type": "text", "text": "see these"},
        {"type": "resource_link", "uri": "file:///r/notes.txt", "name": "notes", "mimeType": "text/plain"},
        {"type": "resource", "resource": {"uri": "fixture://data.json", "mimeType": "application/json", "text": "{}"}},
        {"type": "resource", "resource": {"uri": "fixture://pixel.png", "mimeType": "image/png", "blob": PIXEL}},
    ]
    path = write_config({"docs": surface_yaml(tmp_path, [tool("find", {"content": content})], name="docs")})
    result = invoke("call", "-c", str(path), "docs", "find", "--save-dir", str(tmp_path / "saved"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "see these",
        "{}",
        "[resource link] notes: file:///r/notes.txt (text/plain)",
        "[resource] fixture://data.json (application/json) (its text is above)",
        "[resource] fixture://pixel.png (image/png)",
    ]
    assert f"saved: {tmp_path / 'saved' / 'find-1.png'}" in result.stderr


def test_a_drift_report_shows_where_a_long_description_changed(write_config, tmp_path):
    before = "Read one document from the local disk or the web and return its full content as Markdown text."
    path = write_config({"docs": surface_yaml(tmp_path, [tool("read", description=before)], name="docs")})
    lock = tmp_path / "tools.lock.json"
    assert invoke("check", "-c", str(path), "--lock", str(lock)).exit_code == 0
    after = before.replace("as Markdown text", "as HTML")
    write_config({"docs": surface_yaml(tmp_path, [tool("read", description=after)], name="docs")})
    result = invoke("check", "-c", str(path), "--against", str(lock), "--json")
    assert result.exit_code == 1
    (change,) = json.loads(result.stdout)["lock"]["changes"]
    assert (
        change["detail"] == 'description changed: "…its full content as Markdown text." -> "…its full content as HTML."'
    )
