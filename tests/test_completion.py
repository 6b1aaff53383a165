"""Shell completion through Typer's machinery: servers, `SERVER TOOL`, `SERVER.TOOL`, `key=`, from the tool cache."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from miroctl.base.models import ServerSpec, ToolInfo
from miroctl.cli import completion
from miroctl.cli.app import app
from miroctl.config.loader import load
from miroctl.core import toolcache
from tests.conftest import ROOT, hostile_yaml, run_miroctl


def complete(*words: str) -> list[str]:
    """What bash would offer after `miroctl WORDS` (the last word is the one being completed)."""
    line = ["miroctl", *words]
    env = {"_MIROCTL_COMPLETE": "complete_bash", "COMP_WORDS": " ".join(line), "COMP_CWORD": str(len(line) - 1)}
    result = CliRunner().invoke(app, [], env=env, prog_name="miroctl")
    assert result.exit_code == 0, result.output
    return result.stdout.split()


@pytest.fixture
def pool(write_config, tmp_path, monkeypatch, leak_tag):
    """alpha and beta (tests/servers/hostile.py: quick to start, a dozen tools), and a `marker` server that
    would leave a file behind if it were ever started."""
    monkeypatch.chdir(tmp_path)
    env = {"MIROCTL_TEST_TAG": leak_tag}
    marker = {"name": "marker", "tool_command": "sh", "args": ["-c", f"touch {tmp_path / 'started'}; exit 1"]}
    path = write_config(
        {
            "alpha": hostile_yaml("alpha", env=env),
            "beta": hostile_yaml("beta", env=env),
            "marker": marker,
        },
        tool_config=["alpha", "beta", "marker"],
    )
    monkeypatch.setenv("MIROCTL_CONFIG", str(path))
    return path


def test_server_names_complete_from_the_config_and_a_tab_starts_no_server(pool, tmp_path):
    assert complete("call", "") == ["alpha", "beta", "marker"]
    assert complete("list", "b") == ["beta"]
    assert complete("check", "") == ["alpha", "beta", "marker"]
    assert complete("read", "al") == ["alpha"]
    assert complete("call", "alpha", "") == []  # not listed yet: no tools, and nothing started to find them
    assert not (tmp_path / "started").exists()


def test_after_list_tools_and_parameters_complete_in_both_spellings(pool):
    listed = CliRunner().invoke(app, ["list", "alpha"])
    assert listed.exit_code == 0, listed.output
    assert complete("call", "alpha", "e") == ["echo", "env"]
    assert complete("call", "alpha.te") == ["alpha.text"]
    assert complete("call", "alpha", "text", "") == ["text="]
    assert complete("call", "alpha.env", "") == ["name="]
    assert complete("call", "items", "") == ["points="]  # TOOL alone: the server that has it
    assert complete("call", "alpha", "text", "text=") == []  # values are the user's
    assert complete("call", "beta", "") == []  # beta was not listed


def test_parameters_already_given_are_not_offered_again(pool):
    spec = load(str(pool)).get("alpha")
    assert spec is not None
    toolcache.store(spec, [ToolInfo("alpha", "add", input_schema={"properties": {"a": {}, "b": {}}})])
    assert complete("call", "alpha", "add", "") == ["a=", "b="]
    assert complete("call", "alpha.add", "a=1", "") == ["b="]
    assert complete("call", "alpha", "add", "b:=2", "a=1", "") == []


def test_the_cache_is_private_holds_no_secret_and_a_changed_server_is_a_miss(write_config, tool_cache, monkeypatch):
    monkeypatch.setenv("CONTRACT_SECRET", "sk-contract-4f9a8b7c6d5e")
    keyed = hostile_yaml("keyed", env={"API_KEY": "${oc.env:CONTRACT_SECRET}"})
    path = write_config({"keyed": keyed})
    assert CliRunner().invoke(app, ["check", "--config", str(path)]).exit_code == 0
    (entry,) = tool_cache.iterdir()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert "sk-contract" not in entry.read_text() and "echo" in json.loads(entry.read_text())["tools"]
    assert complete("call", "--config", str(path), "keyed", "ec") == ["echo"]
    keyed["args"].append("--broken=prompts/list=error")  # another command line: what it lists is not known yet
    write_config({"keyed": keyed})
    assert complete("call", "--config", str(path), "keyed", "ec") == []


def test_a_corrupt_cache_completes_nothing_quietly_and_list_mends_it(pool, tool_cache):
    assert CliRunner().invoke(app, ["list", "alpha"]).exit_code == 0
    (entry,) = tool_cache.iterdir()
    for garbage in ("{not json", '{"version": 1, "tools": ["add"]}', "[]", json.dumps({"version": 99})):
        entry.write_text(garbage)
        assert complete("call", "alpha", "ec") == []
    assert CliRunner().invoke(app, ["list", "alpha"]).exit_code == 0
    assert complete("call", "alpha", "ec") == ["echo"]


def test_names_a_shell_cannot_take_are_never_offered():
    schema = {"properties": {"ok": {}, "two words": {}, "line\nbreak": {}, "\x1b[31m": {}}}
    tools = [ToolInfo("s", "fine", input_schema=schema), ToolInfo("s", "rm -rf"), ToolInfo("s", "a\nb")]
    assert toolcache.surface(tools) == {"fine": ["ok"]}


def test_a_cache_that_cannot_be_written_does_not_fail_the_command(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    toolcache.store(ServerSpec("s"), [ToolInfo("s", "t")], blocked / "tools")  # no exception
    assert toolcache.lookup(ServerSpec("s"), blocked / "tools") is None


def test_the_console_script_completes_tools_in_the_users_shell(pool):
    assert CliRunner().invoke(app, ["list", "alpha"]).exit_code == 0
    line = "miroctl call alpha.e"
    env = {
        "_MIROCTL_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": "2",
    }
    result = run_miroctl(env=env, cwd=os.getcwd())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["alpha.echo", "alpha.env"]


BASH_DRIVER = """
compopt() { local IFS=" "; echo "compopt $*"; }  # stands in for the builtin, which works only while readline completes
complete_line() {
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()
    _miroctl_completion miroctl
    printf 'reply %s\\n' "${COMPREPLY[@]}"
}
complete_line miroctl call alpha text te
echo ---
complete_line miroctl call alpha ec
echo ---
complete_line miroctl call alpha.te
"""


def test_in_bash_a_completed_key_is_followed_by_no_space_and_other_words_are(pool, tmp_path):
    assert CliRunner().invoke(app, ["list", "alpha"]).exit_code == 0
    shown = CliRunner().invoke(app, ["--show-completion", "bash"], prog_name="miroctl")
    assert shown.exit_code == 0, shown.output
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "miroctl").write_text(f'#!/bin/sh\nexec {sys.executable} -m miroctl.cli "$@"\n')
    (bin_dir / "miroctl").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    script = shown.stdout + "\n" + BASH_DRIVER
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    key, tools, dotted = result.stdout.split("---\n")
    assert key.splitlines() == ["compopt -o nospace", "reply text="]
    assert tools.splitlines() == ["reply echo"]
    assert dotted.splitlines() == ["reply alpha.text"]


@pytest.fixture
def bundled(tmp_path, monkeypatch):
    """The bundled default profile, on a machine where nothing was ever listed (an empty tool cache)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIROCTL_CONFIG", raising=False)
    monkeypatch.delenv("MIROCTL_URL", raising=False)


def test_on_a_fresh_machine_the_bundled_servers_complete_by_their_short_names_tools_and_parameters(bundled):
    assert complete("call", "sys") == ["system"]
    assert "tool-system" in complete("call", "") and "reading" in complete("call", "")
    assert complete("call", "system", "top") == ["top_processes"]
    assert complete("call", "reading", "read_file", "") == ["uri="]
    assert complete("call", "system.top_processes", "sort_by=cpu", "") == ["limit=", "sample_seconds="]


def test_after_key_equals_the_values_of_an_enum_complete(bundled):
    assert complete("call", "system", "top_processes", "sort_by=") == ["sort_by=cpu", "sort_by=memory"]
    assert complete("call", "tool-system", "top_processes", "sort_by=m") == ["sort_by=memory"]
    assert complete("call", "system", "top_processes", "limit=") == []  # no enum: nothing to offer


def test_a_tab_after_key_equals_reads_the_configuration_once(bundled, monkeypatch):
    """The bundled profile costs 0.15-0.2 s to read: a completion reads it once, not once per question."""
    reads: list[object] = []

    def counted(*args, **kwargs):
        reads.append(args)
        return load(*args, **kwargs)

    monkeypatch.setattr(completion, "load", counted)
    assert complete("call", "system", "top_processes", "sort_by=") == ["sort_by=cpu", "sort_by=memory"]
    assert len(reads) == 1
