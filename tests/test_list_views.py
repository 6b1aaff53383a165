"""`list --brief` (one signature line per tool), the detail view of one tool however the server was named
(SERVER TOOL, SERVER.TOOL, --stdio CMD TOOL, --url URL TOOL) with a call line that runs as pasted, and
tables that never break a tool name and never cut a description that goes to a file."""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from miroctl.config import loader
from miroctl.render.listing import first_sentence
from tests.conftest import FIXTURE, fixture_yaml, in_memory, parse_json
from tests.gateway_support import http_gateway_thread, run_entry
from tests.surface_support import surface_yaml, tool

ECHO = f"{sys.executable} {FIXTURE} --name alpha --tools echo,add"
TERMINAL = {"TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
LONG_NAME = "summarise_every_document_in_the_shared_folder"
INDENTED = """Summarise the documents.

    Each document of the folder is read and
    summarised in one paragraph.
    """


def invoke(*words: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(words), env=env)
    return result.exit_code, re.sub(r"\x1b\[[0-9;]*m", "", result.stdout), result.stderr


def example_line(stdout: str) -> str:
    return next(line.strip() for line in stdout.splitlines() if line.strip().startswith("miroctl call"))


def runs_as_pasted(line: str, cwd: Path, capfd: pytest.CaptureFixture[str]) -> dict:
    """The example line as a user pasting it runs it: its words as bash reads them (quotes, escapes, redirections)
    given to miroctl's console entry, --json added."""
    script = line.replace("miroctl", "printf '%s\\0'", 1)
    split = subprocess.run(["bash", "-c", script], capture_output=True, cwd=cwd, timeout=60, check=False)
    assert split.returncode == 0 and not split.stderr, split.stderr
    words = split.stdout.decode().split("\0")[:-1]
    capfd.readouterr()
    with contextlib.chdir(cwd):
        code = run_entry([*words, "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    return parse_json(out)


@pytest.fixture(autouse=True)
def adhoc_servers_in_memory(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """A --stdio fixture server runs in this process too, as a configured one does (conftest's
    servers_in_memory), unless the test is marked `process`."""
    if request.node.get_closest_marker("process"):
        return
    given = loader.adhoc_servers
    monkeypatch.setattr(loader, "adhoc_servers", lambda *args: [in_memory(spec) for spec in given(*args)])


@pytest.fixture
def long_tools(tmp_path, write_config):
    tools = [
        tool(
            LONG_NAME,
            description=INDENTED,
            inputSchema={"type": "object", "properties": {"folder": {"type": "string"}}},
        ),
        tool("ping", description="Answer pong. Nothing else.", inputSchema={"type": "object", "properties": {}}),
    ]
    return write_config({"docs": surface_yaml(tmp_path, tools, name="docs")})


def test_brief_prints_one_signature_line_per_tool_with_required_marks_and_the_first_sentence(write_config):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")})
    code, stdout, _ = invoke("list", "alpha", "--brief", "-c", str(path), env={"COLUMNS": "60"})
    assert code == 0
    assert stdout.splitlines()[1:] == [
        "echo(text*: string) — Echo the text back.",
        "add(a*: integer, b: integer) — Add two integers.",
    ]


def test_brief_on_a_narrow_terminal_wraps_under_itself_and_keeps_each_name_whole(long_tools):
    code, stdout, _ = invoke("list", "--brief", "-c", str(long_tools), env={"COLUMNS": "50", **TERMINAL})
    assert code == 0
    lines = stdout.splitlines()[1:]
    assert lines[0] == f"{LONG_NAME}(folder:"
    assert all(line.startswith("    ") for line in lines[1:-1])
    assert " ".join(line.strip() for line in lines[:-1]) == f"{LONG_NAME}(folder: string) — Summarise the documents."
    assert lines[-1] == "ping() — Answer pong."


def test_brief_and_schema_together_exit_2_before_anything_starts(write_config):
    path = write_config({"alpha": fixture_yaml("alpha")})
    code, stdout, stderr = invoke("list", "--brief", "--schema", "-c", str(path))
    assert code == 2
    assert stdout == ""
    assert "--brief and --schema do not go together" in stderr


@pytest.mark.parametrize("columns", [60, 40])
def test_a_table_never_breaks_a_tool_name_that_fits_the_screen_and_keeps_to_the_screen(long_tools, columns):
    code, stdout, _ = invoke("list", "-c", str(long_tools), env={"COLUMNS": str(columns)})
    assert code == 0
    fits = len(LONG_NAME) <= columns - 4  # a name longer than the screen cannot stay whole anywhere
    assert (LONG_NAME in stdout) is fits
    assert all(len(line) <= columns for line in stdout.splitlines()[1:] if LONG_NAME not in line)
    assert "…" not in stdout


def test_list_server_dot_tool_shows_the_detail_view_with_its_description_dedented(long_tools):
    code, stdout, _ = invoke("list", f"docs.{LONG_NAME}", "-c", str(long_tools), env={"COLUMNS": "100"})
    assert code == 0
    assert f"{LONG_NAME}  (docs)" in stdout
    assert (
        "  Summarise the documents.\n\n  Each document of the folder is read and summarised in one paragraph.\n"
        in stdout
    )
    assert "parameters (* required)\n└── folder  string\n" in stdout
    assert example_line(stdout) == f"miroctl call -c {long_tools} docs {LONG_NAME}"


def test_list_stdio_cmd_tool_shows_the_detail_view_and_its_example_runs_when_pasted(tmp_path, capfd):
    code, stdout, stderr = invoke("list", "--stdio", ECHO, "add")
    assert code == 0, stderr
    assert "add  (fixture)" in stdout
    line = example_line(stdout)
    assert line == f"miroctl call --stdio {shlex.quote(ECHO)} fixture add a=1"
    assert runs_as_pasted(line, tmp_path, capfd)["result"] == "1"


@pytest.mark.process
def test_list_url_tool_shows_the_detail_view_and_its_example_runs_when_pasted(http_fixture, tmp_path, capfd):
    url = http_fixture("web", "--tools", "echo")
    code, stdout, stderr = invoke("list", "--url", url, "echo")
    assert code == 0, stderr
    line = example_line(stdout)
    assert line.startswith(f"miroctl call --url {url} ")
    assert line.endswith(" echo text='<text>'")
    assert runs_as_pasted(line, tmp_path, capfd)["result"] == "<text>"


def _view(stdout: str) -> list[str]:
    """A detail view without what differs from one run to the next: the server's time, the example's connection."""
    lines = [re.sub(r" · [\d.]+ m?s$", "", line) for line in stdout.splitlines()]
    return [re.sub(r"^  miroctl call .* alpha add", "  miroctl call ... alpha add", line) for line in lines]


def test_list_via_a_gateway_shows_the_detail_view_of_list_server_tool_and_its_example_runs_when_pasted(
    write_config, tmp_path, capfd
):
    path = write_config({"alpha": fixture_yaml("alpha", "--tools", "echo,add")})
    direct = invoke("list", "alpha", "add", "-c", str(path), env={"COLUMNS": "100"})
    with http_gateway_thread(path) as url:
        views = [
            invoke("list", "--via", url, *words, env={"COLUMNS": "100"}) for words in (["alpha", "add"], ["alpha.add"])
        ]
        code, listed, _ = invoke("list", "--via", url, "alpha.add", "--json")
        line = example_line(views[0][1])
        assert line == f"miroctl call --via {url} alpha add a=1"
        assert runs_as_pasted(line, tmp_path, capfd)["result"] == "1"
    assert direct[0] == 0 and [code for code, _, _ in views] == [0, 0], views
    assert _view(views[0][1]) == _view(views[1][1]) == _view(direct[1])
    assert code == 0
    assert [[t["name"] for t in s["tools"]] for s in parse_json(listed)["servers"]] == [["add"]]


def test_a_word_that_is_no_tool_of_the_one_adhoc_server_exits_6_naming_its_tools():
    code, _, stderr = invoke("list", "--stdio", ECHO, "ad")
    assert code == 6
    assert "has no tool 'ad'" in stderr
    assert "add" in stderr


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("Add two integers. The second is optional.", "Add two integers."),
        ("Read a file (e.g. notes.md) and return it. More.", "Read a file (e.g. notes.md) and return it."),
        ("No full stop at all", "No full stop at all"),
        ("Is it up? Then say so.", "Is it up?"),
    ],
)
def test_the_first_sentence_ends_at_the_first_stop_that_a_new_sentence_follows(text, sentence):
    assert first_sentence(text) == sentence


def test_the_detail_view_at_60_columns_wraps_its_description_between_words_and_keeps_a_long_url_whole(
    tmp_path, write_config
):
    url = "https://docs.example.com/reference/tools/summarise-every-document-in-the-folder"
    described = tool("fetch", description=f"Fetch the page at {url} and summarise it in one paragraph of plain text.")
    path = write_config({"web": surface_yaml(tmp_path, [described], name="web")})
    code, stdout, _ = invoke("list", "web", "fetch", "-c", str(path), env={"COLUMNS": "60"})
    assert code == 0
    lines = stdout.splitlines()
    assert f"  {url}" in lines  # alone on its line, longer than the screen, never broken
    assert all(len(line) <= 60 for line in lines if url not in line and not line.startswith("  miroctl call"))
    assert "parameters (* required)" in lines
