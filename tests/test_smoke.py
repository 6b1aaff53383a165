"""The default config works from a fresh checkout: the quick-start line of the README."""

from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import parse_json


def test_list_on_the_bundled_config_shows_read_file_and_exits_0():
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.stderr
    document = parse_json(result.stdout)
    assert document["schema"] == "miroctl.list/1"
    tools = {t["name"] for s in document["servers"] for t in s["tools"]}
    assert "read_file" in tools
