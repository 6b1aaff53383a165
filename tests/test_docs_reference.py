"""docs/commands.md's option reference is the Typer app's own (tests/docs_reference.py makes it, cog writes it).

MIROCTL_DOCS_UPDATE=1 rewrites the page instead of failing, as `cog -r -I . docs/commands.md` does.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cogapp import Cog

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


@pytest.mark.parametrize("command", ["list", "call", "check", "serve", "config import"])
def test_each_option_in_the_reference_is_one_that_the_console_script_help_shows(command: str, tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "miroctl", *command.split(), "--help"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    section = PAGE.read_text().split(f"### `miroctl {command}`", 1)[1].split("\n### ", 1)[0]
    named = set(re.findall(r"^\| [^|]+ \| `(?:-\w, )?(--[\w-]+)", section, re.MULTILINE))
    assert named, f"no options found in the section of {command}"
    shown = set(re.findall(r"--[\w-]+", done.stdout))
    for topic in re.findall(r"miroctl help (\w+)", done.stdout):  # options the help leaves to a topic
        explained = subprocess.run(
            [sys.executable, "-m", "miroctl", "help", topic], capture_output=True, text=True, env=env
        )
        assert explained.returncode == 0, explained.stderr
        shown |= set(re.findall(r"--[\w-]+", explained.stdout))
    assert named <= shown, f"in the reference but not in `miroctl {command} --help`: {sorted(named - shown)}"
