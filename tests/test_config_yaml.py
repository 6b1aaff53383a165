"""A yaml file is read as OmegaConf reads it, without OmegaConf's nodes where a file does not need them
(miroctl/config/loader.py `_Yaml`): as written and resolved, every value, type and error is OmegaConf's. And a
config file of any format (yaml, JSON, TOML) nested or aliased past what a config can be is one line, not a crash."""

import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import GrammarParseError
from typer.testing import CliRunner

from miroctl.base.errors import ConfigError
from miroctl.cli.app import app
from miroctl.config import envrefs
from miroctl.config import loader as config
from tests.conftest import ROOT

SHIPPED = sorted((ROOT / "config").rglob("*.yaml"))
ALIASES = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
    for prev, name in zip("abcde", "bcdef", strict=True)
)
CASES = {
    "plain": "name: srv\ncommand: python\nargs: [-m, x, '3']\nenv: {A: '1', B: 2}\nflag: true\nnothing: null\n",
    "numbers": "a: 1e3\nb: 1.5e-3\nc: .5\nd: 0x1F\ne: 1_000\nf: .inf\ng: -.nan\nh: 1.0\n",
    "dates and words": "when: 2024-01-01\nat: 2024-01-01T10:00:00Z\nyes_word: yes\noff_word: off\n",
    "missing marker": "a: ???\nb: [???]\n",
    "env": "a: ${oc.env:MIROCTL_T_SET}\nb: x-${oc.env:MIROCTL_T_SET}-y\nc: ['${oc.env:MIROCTL_T_UNSET,dflt}']\n",
    "env defaults": "a: ${oc.env:MIROCTL_T_UNSET,${oc.env:MIROCTL_T_SET}}\nb: ${oc.env:MIROCTL_T_UNSET,'q r'}\n"
    "c: ${oc.env:MIROCTL_T_UNSET,}\nd: ${oc.env:MIROCTL_T_UNSET,5}\ne: ${oc.env:MIROCTL_T_UNSET,null}\n",
    "escaped": "a: \\${oc.env:MIROCTL_T_SET}\nb: \\${x}\nc: $${oc.env:MIROCTL_T_SET}\n",
    "reference": "base: /srv\npath: ${base}/bin\nenvd: ${oc.env:MIROCTL_T_SET}\n",
    "other resolver": "a: ${oc.decode:'[1, 2]'}\nb: ${oc.env:MIROCTL_T_SET}\n",
    "select": "base: /srv\na: ${oc.select:base,fallback}\nb: ${oc.select:nowhere,fallback}\n",
    "number keys": "1: one\n2.5: two\nsub: {3: three}\n",
    "binary": "data: !!binary aGVsbG8=\n",
    "key with interpolation": "${oc.env:MIROCTL_T_SET}: v\n",
    "unicode": "name: 'ünï ☃'\nargs: ['日本']\n",
    "empty": "",
    "list at the top": "- a\n- b\n",
    "text at the top": "just words\n",
    "nested": "a: {b: {c: [1, {d: [x, '${oc.env:MIROCTL_T_SET}']}]}}\n",
    "duplicate keys": "a: 1\na: 2\n",
    "bad yaml": "a: [1, 2\n",
    "bad interpolation": "a: ${oc.env:}\n",
    "unclosed interpolation": "a: ${oc.env:MIROCTL_T_SET\n",
}


@pytest.fixture
def variables(monkeypatch):
    monkeypatch.setenv("MIROCTL_T_SET", "value")
    monkeypatch.delenv("MIROCTL_T_UNSET", raising=False)


def omegaconfs(path: Path, resolve: bool) -> object:
    """What OmegaConf itself reads, or the type of what it raises (with the warning miroctl silences silenced:
    `${oc.env:KEY,}` is upstream's way to say an empty default)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="In the sequence", category=UserWarning)
            return OmegaConf.to_container(OmegaConf.load(path), resolve=resolve)
    except Exception as exc:  # noqa: BLE001 - compared by kind below
        return type(exc)


def ours(path: Path, resolve: bool) -> object:
    try:
        read = config._read_yaml(path)
        return read.resolved() if resolve else read.raw
    except ConfigError:
        return ConfigError


def same(mine: object, theirs: object) -> bool:
    """Equal values of equal types (a NaN equal to a NaN), or a ConfigError where OmegaConf raised."""
    if isinstance(theirs, type) and issubclass(theirs, BaseException):
        return mine is ConfigError
    if isinstance(theirs, float) and theirs != theirs:
        return isinstance(mine, float) and mine != mine
    if isinstance(theirs, dict):
        return isinstance(mine, dict) and list(mine) == list(theirs) and all(same(mine[k], theirs[k]) for k in theirs)
    if isinstance(theirs, list):
        return isinstance(mine, list) and len(mine) == len(theirs) and all(map(same, mine, theirs))
    return type(mine) is type(theirs) and mine == theirs


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("resolve", [False, True], ids=["as written", "resolved"])
def test_a_yaml_file_reads_as_omegaconf_reads_it(case, resolve, tmp_path, variables):
    path = tmp_path / "case.yaml"
    path.write_text(CASES[case])
    theirs = omegaconfs(path, resolve)
    if not resolve and theirs is GrammarParseError:  # OmegaConf refuses it at once; miroctl when it is resolved
        assert ours(path, resolve=True) is ConfigError
        return
    assert same(ours(path, resolve), theirs), (ours(path, resolve), theirs)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_yaml_file_reads_as_omegaconf_reads_it(path, monkeypatch):
    named = set().union(*(envrefs.names(line) for line in path.read_text().splitlines()))
    for index, name in enumerate(sorted(named)):
        if index % 2:
            monkeypatch.setenv(name, f"set-{index}")
        else:
            monkeypatch.delenv(name, raising=False)
    for resolve in (False, True):
        theirs = omegaconfs(path, resolve)
        assert same(ours(path, resolve), theirs), (resolve, ours(path, resolve), theirs)


@pytest.mark.parametrize("case", ["plain", "env", "env defaults", "nested", "unicode"])
def test_a_file_of_plain_values_and_env_references_is_resolved_without_omegaconfs_nodes(case, tmp_path, variables):
    path = tmp_path / "case.yaml"
    path.write_text(CASES[case])
    read = config._read_yaml(path)
    read.resolved()
    assert read._node is None


def test_an_error_in_an_env_reference_names_its_key_as_omegaconf_does(tmp_path, variables):
    path = tmp_path / "case.yaml"
    path.write_text("fine: ${oc.env:MIROCTL_T_SET}\nbroken: ${oc.env:MIROCTL_T_SET,'unclosed}\n")
    with pytest.raises(ConfigError) as raised:
        config._read_yaml(path).resolved()
    assert raised.value.message.startswith(f"{path}: cannot resolve broken: ")


DEEP = {
    "deep.yaml": "a:\n" + "".join("  " * (i + 1) + "k:\n" for i in range(400)) + "  " * 402 + "v\n",
    "deep-list.yaml": "a: " + "[" * 300 + "]" * 300 + "\n",
    "deep.toml": '[mcp_servers.a]\ncommand = "x"\nargs = ' + "[" * 3000 + "]" * 3000 + "\n",
    "deep-table.toml": '[mcp_servers.a]\ncommand = "x"\nenv = ' + "{k = " * 100 + "1" + "}" * 100 + "\n",
    "deep.json": '{"mcpServers": {"a": {"command": "x", "env": ' + '{"k": ' * 900 + "1" + "}" * 900 + "}}}",
}


@pytest.mark.parametrize("name", DEEP)
def test_a_config_nested_too_deeply_is_refused_in_one_line(name, tmp_path):
    path = tmp_path / name
    path.write_text(DEEP[name])
    result = CliRunner().invoke(app, ["list", "--config", str(path), "--json"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"miroctl: config: {path}: nested too deeply to be a config (over 64 levels)"]


def test_a_yaml_file_whose_aliases_stand_for_a_million_values_is_refused_in_one_line(tmp_path):
    path = tmp_path / "aliases.yaml"
    path.write_text(ALIASES)  # six lines, 10**6 values once its aliases are expanded
    result = CliRunner().invoke(app, ["list", "--config", str(path), "--json"])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("miroctl: config: ") and str(path) in line


def test_an_agent_files_default_nested_too_deeply_is_refused_in_one_line(tmp_path):
    (tmp_path / "main.yaml").write_text("defaults:\n  - deep\nmain_agent:\n  tool_config: []\n")
    (tmp_path / "deep.yaml").write_text(DEEP["deep.yaml"])
    result = CliRunner().invoke(app, ["list", "--config", str(tmp_path / "main.yaml")])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"miroctl: config: {tmp_path / 'deep.yaml'}: nested too deeply to be a config (over 64 levels)"
    ]


def test_a_yaml_config_past_the_size_of_any_config_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("servers:\n" + "  # a comment line of a config far too big\n" * 250_000)  # ~11 MB
    result = CliRunner().invoke(app, ["list", "--config", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"miroctl: config: {path}: too large for a config (over 8 MB)"]
