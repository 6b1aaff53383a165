"""The warm path: a plain `call`, `list`, `read` or `prompt` through a gateway, read by the console entry with
the option table (miroctl.launch), answered by miroctl.cli.remote without Typer, the mcp SDK or OmegaConf."""

from __future__ import annotations

from collections.abc import Callable

from miroctl.cli import boundary, remote
from miroctl.launch.handoff import Launch
from miroctl.launch.options import seconds
from miroctl.launch.reader import Reading
from miroctl.render.output import Output


def run(launch: Launch, reading: Reading, url: str) -> int:
    """The exit code of a command line the warm path takes (`url`: --via, else $MIROCTL_URL)."""
    boundary.show_tracebacks(launch.traceback)
    out = boundary.output(json_mode=reading.flag("json_mode"))
    return boundary.guarded(work(reading, url, out))


def work(reading: Reading, url: str, out: Output) -> Callable[[], int]:
    """The command, through the gateway at `url` (an HTTP URL or a daemon's unix:PATH)."""
    words, text = list(reading.words), reading.text
    timeout = seconds(text("timeout") or "") if text("timeout") else None
    if reading.command == "call":
        return lambda: remote.call(
            url,
            words,
            out=out,
            args=text("args"),
            timeout=timeout,
            no_autocorrect=reading.flag("no_autocorrect"),
            save_dir=text("save_dir"),
            task_id=text("task_id"),
        )
    if reading.command == "read":
        return lambda: remote.read(url, words, out=out, timeout=timeout, save_dir=text("save_dir"))
    if reading.command == "prompt":
        return lambda: remote.prompt(url, words, out=out, timeout=timeout, save_dir=text("save_dir"))
    return lambda: remote.list_servers(url, words, out=out, schema=reading.flag("schema"), brief=reading.flag("brief"))
