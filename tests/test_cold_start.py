"""A cold command starts its stdio servers while it loads the SDK, and never leaves one behind."""

import json

from tests.conftest import fixture_yaml, run_miroctl
from tests.test_lean import PLAIN


def test_a_server_whose_start_times_out_while_miroctl_loads_the_sdk_is_stopped(write_config, leak_tag):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    path = write_config({"alpha": fixture_yaml("alpha", "--mode", "hang", env=env)})
    # The server never answers, so the 50 ms start budget runs out however fast the machine is (a server
    # that answers could beat it once the early start has given it a head start); the server was spawned
    # before miroctl loaded the rest of itself, so the start's own clean-up must stop it (leak_tag checks
    # that nothing survives).
    result = run_miroctl("list", "--json", "--startup-timeout", "0.05", "--config", str(path))
    assert result.returncode == 1, result.stderr
    (server,) = json.loads(result.stdout)["servers"]
    assert server["failure"]["kind"] == "timeout"
    assert "no answer to initialize within 0.05s" in server["failure"]["message"]


def test_a_cold_call_answers_after_starting_its_server_before_the_sdk(write_config, leak_tag, tmp_path):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    # A plain JSON-RPC server (no SDK of its own to import): the cold path is miroctl's, not the server's.
    plain = {"name": "alpha", "tool_command": "python", "args": [PLAIN, "--log", str(tmp_path / "rpc")], "env": env}
    path = write_config({"alpha": plain})
    result = run_miroctl("call", "--json", "--config", str(path), "alpha", "echo", "text=cold")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == "cold"
