"""Which command lines go to a daemon (cli/prestart.py's `for_daemon`), decided from the command line and the
configuration alone: nothing is started here."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.cli.prestart import for_daemon
from miroctl.config.loader import load
from miroctl.daemon.routes import write_route
from miroctl.daemonclient.places import Place
from miroctl.launch.handoff import Launch
from miroctl.launch.shortcut import route_path

# A stdio server the decision reads but never starts (the in-memory conversion of tests leaves it a process).
QUIET = {"tool_command": "python", "args": ["-c", "pass"]}


@pytest.fixture
def profile(write_config: Callable[..., Path]) -> Callable[..., str]:
    def write(**profile: object) -> str:
        servers = {
            "keeper": {"name": "keeper", **QUIET, "persistent": True},
            "plain": {"name": "plain", **QUIET},
        }
        return str(write_config(servers, tool_config=["keeper", "plain"], **profile))

    return write


def goes(words: list[str], **environ: str) -> bool:
    return for_daemon(Launch(words), environ) is not None


def test_a_call_of_a_persistent_server_goes_to_the_daemon_and_one_of_another_does_not(profile) -> None:
    config = profile()
    assert goes(["call", "keeper", "tool", "a=1", "-c", config])
    assert goes(["call", "keeper", "tool", "--json", "--timeout", "5", "--args", "{}", "-c", config])
    assert not goes(["call", "plain", "tool", "-c", config])


def test_no_daemon_never_and_the_profiles_never_keep_a_command_in_process(profile) -> None:
    assert not goes(["call", "keeper", "tool", "--no-daemon", "-c", profile()])
    assert not goes(["call", "keeper", "tool", "-c", profile()], MIROCTL_DAEMON="never")
    assert not goes(["call", "keeper", "tool", "-c", profile(daemon="never")])


def test_always_and_the_profiles_auto_send_every_server_and_a_bare_list(profile) -> None:
    assert goes(["call", "plain", "tool", "-c", profile()], MIROCTL_DAEMON="always")
    assert goes(["list", "-c", profile(daemon="auto")])
    assert not goes(["list", "-c", profile()])  # listing every server keeps no state


def test_list_read_and_prompt_of_a_persistent_server_go_to_the_daemon(profile) -> None:
    config = profile()
    assert goes(["list", "keeper", "-c", config])
    assert goes(["read", "keeper", "mem://notes", "-c", config])
    assert goes(["prompt", "keeper", "review", "-c", config])


def test_options_that_change_the_servers_or_the_policy_keep_the_command_in_process(profile) -> None:
    config = profile()
    for option in (["--mode", "bypass"], ["--yes"], ["--env", "A=1"], ["--log", "x.log"], ["--stdio", "cat"]):
        assert not goes(["call", "keeper", "tool", *option, "-c", config]), option


def test_a_gateway_an_unknown_server_or_a_blacklisted_tool_sends_nothing_to_a_daemon(profile) -> None:
    config = profile(tool_blacklist=[["keeper", "secret"]])
    assert not goes(["call", "keeper", "tool", "-c", config], MIROCTL_URL="http://127.0.0.1:1")
    assert not goes(["call", "nobody", "tool", "-c", config])
    assert not goes(["call", "keeper", "secret", "-c", config])


def test_the_configuration_read_for_the_decision_is_handed_to_the_command(profile) -> None:
    launch = Launch(["call", "plain", "tool", "-c", profile()])
    assert for_daemon(launch, {}) is None
    assert launch.take_config(launch.words[-1]) is not None


@pytest.mark.parametrize(("key", "value"), [("daemon", "sometimes"), ("daemon_idle", -1)])
def test_a_bad_daemon_key_in_the_profile_is_a_config_error(profile, key: str, value: object) -> None:
    done = CliRunner().invoke(app, ["call", "plain", "tool", "-c", profile(**{key: value})])
    assert done.exit_code == 2
    assert key in done.stderr


LOADED = """
import sys
from miroctl.launch.entry import run
code = run(sys.argv[1:])
print(code, sorted(m for m in sys.modules if m.startswith(("miroctl.daemon", "miroctl.cli.keepalive"))))
"""


@pytest.mark.process
def test_a_command_that_needs_no_daemon_loads_none_of_its_modules(profile) -> None:
    argv = [sys.executable, "-c", LOADED, "call", "plain", "tool", "-c", profile()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.stdout.split(" ", 1) == ["3", "[]\n"], done.stderr  # the quiet server exits: unavailable


def test_a_route_is_written_beside_one_another_writer_left_or_is_writing_and_never_fails_the_command(
    profile, tmp_path: Path, monkeypatch
) -> None:
    # Two first calls at once each leave the route: each writes a temporary file of its own, so neither finds
    # its file already moved by the other (a FileNotFoundError, exit 70, before the call was made).
    config = profile()
    monkeypatch.chdir(Path(config).parent)
    loaded = load(config)
    place = Place(tmp_path / "run", "k" * 16)
    place.directory.mkdir(mode=0o700)
    target = route_path(place.directory, config, os.getcwd())
    target.with_suffix(".tmp").mkdir()  # where a writer sharing one temporary name would write: not writable
    write_route(place, loaded, config, False, {})
    assert json.loads(target.read_text())["servers"] == ["keeper"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    (place.directory / "gone").mkdir()
    write_route(Place(place.directory / "gone" / "nowhere", place.key), loaded, config, False, {})  # no error
    assert sorted(p.name for p in place.directory.iterdir()) == sorted([target.name, "gone", f"{target.stem}.tmp"])
