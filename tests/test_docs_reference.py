"""docs/commands.md's option reference is the Typer app's own (tests/docs_reference.py makes it, cog writes it).

MIROCTL_DOCS_UPDATE=1 rewrites the page instead of failing, as `cog -r -I . docs/commands.md` does.
"""

from __future__ import annotations

import difflib
import os
import re
import signal
from pathlib import Path

import pytest
from cogapp import Cog

from miroctl.launch import entry
from tests import docs_reference

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "commands.md"
UPDATE = os.environ.get("MIROCTL_DOCS_UPDATE") == "1"


def regenerated(text: str) -> str:
    return str(Cog().process_string(text, fname=str(PAGE)))


def test_the_option_reference_of_the_commands_page_is_what_the_app_defines() -> None:
    shown = PAGE.read_text()
    made = regenerated(shown)
    if UPDATE and made != shown:
        PAGE.write_text(made)
        return
    changes = difflib.unified_diff(shown.split("\n"), made.split("\n"), "docs/commands.md", "the app", lineterm="")
    assert made == shown, (
        "\n".join(changes) + "\n(`cog -r -I . docs/commands.md` or MIROCTL_DOCS_UPDATE=1 rewrites the reference)"
    )


def test_a_reference_missing_one_option_is_found_stale() -> None:
    shown = PAGE.read_text()
    row = next(line for line in shown.split("\n") if line.startswith("| Check | `--against FILE`"))
    assert regenerated(shown.replace(row + "\n", "")) == shown


def test_every_command_and_every_visible_option_has_its_place_in_the_reference() -> None:
    shown = PAGE.read_text()
    found = list(docs_reference.commands(docs_reference.root()))
    names = {" ".join(path) for path, _ in found}
    assert names >= {"list", "call", "read", "prompt", "check", "serve", "config import"}
    for path, command in found:
        heading = f"### `miroctl {' '.join(path)}`"
        assert heading in shown, f"docs/commands.md has no section {heading}"
        section = shown.split(heading, 1)[1].split("\n### ", 1)[0]
        for param in command.params:
            if getattr(param, "hidden", False) or not param.opts[0].startswith("-"):
                continue
            assert f"{param.opts[0]}" in section, f"{heading} lacks {param.opts[0]}"


def console_help(words: list[str], capfd: pytest.CaptureFixture[str]) -> str:
    """What the console entry (launch/entry.py, the `miroctl` script's `main`) prints for `miroctl WORDS`, run in
    this process; the signal handlers a command line takes over are given back."""
    taken = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = entry.run(words)
    finally:
        for signum, handler in taken.items():
            signal.signal(signum, handler)
    printed = capfd.readouterr()
    assert code == 0, printed.err
    return printed.out


@pytest.mark.parametrize("command", ["list", "call", "check", "serve", "config import"])
def test_each_option_in_the_reference_is_one_that_the_console_script_help_shows(
    command: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    for name, value in {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}.items():
        monkeypatch.setenv(name, value)
    printed = console_help([*command.split(), "--help"], capfd)
    section = PAGE.read_text().split(f"### `miroctl {command}`", 1)[1].split("\n### ", 1)[0]
    named = set(re.findall(r"^\| [^|]+ \| `(?:-\w, )?(--[\w-]+)", section, re.MULTILINE))
    assert named, f"no options found in the section of {command}"
    shown = set(re.findall(r"--[\w-]+", printed))
    for topic in re.findall(r"miroctl help (\w+)", printed):  # options the help leaves to a topic
        shown |= set(re.findall(r"--[\w-]+", console_help(["help", topic], capfd)))
    assert named <= shown, f"in the reference but not in `miroctl {command} --help`: {sorted(named - shown)}"
