"""Rendering: server text stays literal, JSON stays parseable and safe, progress shows on terminals."""

import io
import json

import anyio
from rich.console import Console

from miroctl.base.masking import Masker
from miroctl.render.output import Output, dumps, literal


def test_control_characters_become_visible_escapes_but_newlines_and_tabs_stay():
    assert literal("a\x1b[31mb\x07c\td\ne\x9bf") == "a\\x1b[31mb\\x07c\td\ne\\x9bf"
    assert literal("bidi\u202eoverride") == "bidi\\u202eoverride"


def test_json_output_escapes_c1_controls_and_line_separators_but_keeps_unicode_readable():
    text = dumps({"t": "ünïcode \x9b\u2028 \x1b"})
    assert "\x9b" not in text and "\u2028" not in text and "\x1b" not in text
    assert "ünïcode" in text
    assert json.loads(text) == {"t": "ünïcode \x9b\u2028 \x1b"}


def test_every_line_of_output_is_masked(capsys):
    out = Output(masker=Masker(["hunter2-token"]))
    out.json({"error": "auth failed for hunter2-token", "env": {"API_KEY": "whatever"}})
    out.text("token=hunter2-token")
    out.error("bad hunter2-token", hint="hunter2-token", tail=["hunter2-token in stderr"])
    captured = capsys.readouterr()
    assert "hunter2-token" not in captured.out + captured.err
    assert json.loads(captured.out.splitlines()[0]) == {"error": "auth failed for ****", "env": {"API_KEY": "****"}}


def test_progress_is_drawn_on_a_terminal_and_silent_elsewhere():
    out = Output()
    buffer = io.StringIO()
    out.err = Console(file=buffer, force_terminal=True, width=100)

    async def report(update):
        await update(1, 4, "first quarter")

    with out.progress("crunch") as update:
        anyio.run(report, update)
    assert "first quarter" in buffer.getvalue()

    quiet = Output()
    quiet.err = Console(file=io.StringIO(), force_terminal=False)
    with quiet.progress("crunch") as update:
        anyio.run(report, update)
    assert quiet.err.file.getvalue() == ""
