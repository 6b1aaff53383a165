"""--record (JSON-RPC traffic per server as NDJSON, secrets masked, written as it happens) and `miroctl replay`
(an MCP server answering from a recording): record a real fixture session, replay it, same output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from miroctl.base.masking import MASK
from miroctl.cli.app import app
from miroctl.gateway import replay as replaying
from tests.conftest import ROOT, fixture_yaml
from tests.gateway_support import CRASHING, PLAINRPC

SECRET_ENV = "sk-live-Q2w9Zx7Lm4Np8Rt5Vb3K"
SECRET_ARG = "Xk93LmQp27ZrT8wA"  # random-looking: a credential by its shape, and the server's name
SECRET_HEADER = "hdr-9fK2mQ7xLp4Zr8Tw"
STARTUP = 90  # these record real sessions: a loaded machine must not fail the start


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_duration(document: dict) -> dict:
    return {k: v for k, v in document.items() if k != "duration_ms"}


def plain_yaml(name: str, log: Path) -> dict:
    """A server file for tests/servers/plainrpc.py, an MCP server on the standard library alone: what these tests
    record is miroctl's side of the traffic, whichever server answers."""
    return {"name": name, "tool_command": "python", "args": [PLAINRPC, "--log", str(log)], "startup_timeout": STARTUP}


def replay_yaml(tmp_path: Path, recording: Path, name: str = "fx") -> Path:
    """A server file that runs `miroctl replay RECORDING` as the stdio server NAME."""
    path = tmp_path / f"replay-{name}.yaml"
    spec = {"name": name, "command": sys.executable, "args": ["-m", "miroctl", "replay", str(recording)]}
    path.write_text(yaml.safe_dump({**spec, "env": {"PYTHONPATH": str(ROOT)}, "startup_timeout": STARTUP}))
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A recording of `call fx echo text=hello` against a real server (a process: a server in miroctl's own
    process has no traffic to record), and that call's output; the tests only read it."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump(plain_yaml("fx", tmp_path / "fx.log")))
    recording = tmp_path / "rec.ndjson"
    code, stdout, _ = invoke(
        "call", "fx", "echo", "text=hello", "--config", str(config), "--record", str(recording), "--json"
    )
    assert code == 0
    return recording, json.loads(stdout)


@pytest.mark.process
def test_record_writes_one_json_line_per_message_with_time_server_session_and_direction(recorded):
    recording, _ = recorded
    entries = lines(recording)
    assert entries[0]["schema"] == "miroctl.recording/1"
    messages = entries[1:]
    assert {e["server"] for e in messages} == {"fx"}
    assert {e["direction"] for e in messages} == {"to_server", "from_server"}
    assert all(e["time"].endswith("Z") and e["session"] == 1 for e in messages)
    sent = [e["message"]["method"] for e in messages if e["direction"] == "to_server" and "method" in e["message"]]
    assert sent[-1] == "tools/call" and "tools/list" in sent


@pytest.mark.process
def test_replay_over_stdio_gives_the_same_call_output_as_the_real_server(recorded, tmp_path):
    recording, original = recorded
    code, stdout, _ = invoke(
        "call", "fx", "echo", "text=hello", "--config", str(replay_yaml(tmp_path, recording)), "--json"
    )
    assert code == 0
    assert without_duration(json.loads(stdout)) == without_duration(original)


@pytest.mark.process
def test_a_request_missing_from_the_recording_gets_an_error_naming_the_closest(recorded, tmp_path):
    recording, _ = recorded
    code, stdout, _ = invoke(
        "call", "fx", "echo", "text=bye", "--config", str(replay_yaml(tmp_path, recording)), "--json"
    )
    assert code == 1
    error = json.loads(stdout)["error"]
    assert "not in the recording of fx" in error
    assert 'closest recorded: tools/call {"arguments":{"text":"hello"},"name":"echo"}' in error


@pytest.mark.process  # the stdio server is a process: one in miroctl's own has no traffic to record
def test_secrets_in_env_args_and_headers_never_reach_the_recording(tmp_path, http_fixture):
    url = http_fixture("web")
    (tmp_path / "tool").mkdir()
    stdio = fixture_yaml(SECRET_ARG, env={"API_KEY": SECRET_ENV}, startup_timeout=STARTUP)
    stdio["name"] = "local"
    (tmp_path / "tool/local.yaml").write_text(yaml.safe_dump(stdio))
    web = {"name": "web", "url": url, "headers": {"Authorization": f"Bearer {SECRET_HEADER}"}}
    (tmp_path / "tool/web.yaml").write_text(yaml.safe_dump(web))
    (tmp_path / "miroctl.yaml").write_text(yaml.safe_dump({"startup_timeout": STARTUP}))
    recording = tmp_path / "rec.ndjson"
    config = str(tmp_path / "miroctl.yaml")
    assert invoke("call", "local", "env", "name=API_KEY", "--config", config, "--record", str(recording))[0] == 0
    text = recording.read_text()
    assert {entry["server"] for entry in lines(recording)[1:]} == {"local"}  # the stdio traffic was recorded
    assert invoke("call", "web", "headers", "--config", config, "--record", str(recording))[0] == 0
    text += recording.read_text()
    assert SECRET_ENV not in text and SECRET_ARG not in text and SECRET_HEADER not in text
    assert MASK in text
    assert "authorization" in text  # the header's name was recorded, its value masked


@pytest.mark.process
def test_a_crashing_server_leaves_what_was_seen_in_the_recording(tmp_path):
    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump({"name": "fx", "tool_command": "python", "args": [CRASHING]}))
    recording = tmp_path / "rec.ndjson"
    code, _, _ = invoke("call", "fx", "crash", "--config", str(config), "--record", str(recording), "--json")
    assert code == 3
    calls = [e for e in lines(recording)[1:] if e["message"].get("method") == "tools/call"]
    assert calls and calls[0]["message"]["params"]["name"] == "crash"


@pytest.mark.process
def test_list_and_check_record_the_listing(tmp_path):
    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump(fixture_yaml("fx", startup_timeout=STARTUP)))
    for command in ("list", "check"):
        recording = tmp_path / f"{command}.ndjson"
        assert invoke(command, "--config", str(config), "--record", str(recording), "--json")[0] == 0
        methods = [e["message"].get("method") for e in lines(recording)[1:]]
        assert "tools/list" in methods, command


def test_record_through_a_gateway_is_a_usage_error(tmp_path):
    code, _, stderr = invoke("list", "--via", "http://127.0.0.1:9/", "--record", str(tmp_path / "r.ndjson"))
    assert code == 2
    assert "--record sees the traffic of servers miroctl runs itself" in stderr


def test_replay_of_a_file_that_is_no_recording_is_a_one_line_usage_error(tmp_path):
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"schema": "miroctl.recording/1"}\nnot json\n')
    code, _, stderr = invoke("replay", str(bad))
    assert code == 2
    assert f"{bad}:2: not a JSON line of a recording" in stderr
    assert invoke("replay", str(tmp_path / "missing.ndjson"))[0] == 2


def exchange(method: str, params: dict, result: object, session: int = 1, ident: int = 1) -> list[dict]:
    out = {"server": "s", "session": session, "direction": "to_server"}
    back = {"server": "s", "session": session, "direction": "from_server"}
    return [
        {**out, "message": {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}},
        {**back, "message": {"jsonrpc": "2.0", "id": ident, "result": result}},
    ]


def write_recording(tmp_path: Path, *entries: list[dict]) -> Path:
    path = tmp_path / "r.ndjson"
    path.write_text("\n".join(json.dumps(e) for group in entries for e in group) + "\n")
    return path


def test_replay_answers_a_repeated_request_in_recorded_order_and_ignores_ids_and_meta(tmp_path):
    path = write_recording(
        tmp_path,
        exchange("tools/call", {"name": "counter"}, {"n": 1}, ident=5),
        exchange("tools/call", {"name": "counter"}, {"n": 2}, ident=6),
    )
    replay = replaying.load(str(path))
    ask = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "counter", "_meta": {"progressToken": 9}}}
    answers = [replay.answer({**ask, "id": i})["result"]["n"] for i in ("a", "b", "c")]
    assert answers == [1, 2, 2]
    assert replay.answer({**ask, "id": "z"})["id"] == "z"


def test_a_masked_recorded_value_matches_any_string(tmp_path):
    path = write_recording(
        tmp_path, exchange("tools/call", {"name": "login", "arguments": {"token": MASK}}, {"ok": True})
    )
    replay = replaying.load(str(path))
    answer = replay.answer(
        {"id": 1, "method": "tools/call", "params": {"name": "login", "arguments": {"token": "abc"}}}
    )
    assert answer["result"] == {"ok": True}


def test_a_recording_of_several_servers_needs_server(tmp_path):
    path = write_recording(tmp_path, exchange("ping", {}, {}), [{**e, "server": "t"} for e in exchange("ping", {}, {})])
    code, _, stderr = invoke("replay", str(path))
    assert code == 2
    assert "records 2 servers: s, t" in stderr


@pytest.mark.process
@pytest.mark.anyio
async def test_serve_records_the_traffic_of_its_servers(tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config = tmp_path / "fx.yaml"
    config.write_text(yaml.safe_dump(plain_yaml("fx", tmp_path / "fx.log")))
    recording = tmp_path / "rec.ndjson"
    args = ["-m", "miroctl", "serve", "--config", str(config), "--record", str(recording)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    with (tmp_path / "err").open("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            answer = await client.call_tool("fx__echo", {"text": "through serve"})
    assert answer.content[0].text == "through serve"
    calls = [e for e in lines(recording)[1:] if e["message"].get("method") == "tools/call"]
    assert calls[0]["message"]["params"]["arguments"] == {"text": "through serve"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
