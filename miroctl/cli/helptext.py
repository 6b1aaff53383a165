"""What `--help` shows besides the options' own help: examples, exit codes, and types in words.

Every command is a `WordedCommand`: an option without a metavar of its own is described by a word (N,
NUMBER, TEXT), a flag by nothing at all, and an argument by its metavar alone, so no Python type name
(`<list[str]>`) reaches the help; help texts are escaped, so `[env: MIROCTL_URL]` prints as written.
"""

from __future__ import annotations

from typing import Any, get_args, get_origin

from typer import _click as click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from miroctl.launch.handoff import Launch
from miroctl.render.markup import as_typed

CONNECTION = "Connection"
OUTPUT = "Output"
POLICY = "Policy"
CALL = "Call"
CHECK = "Check"
SERVING = "Serving"
HTTP = "HTTP limits"
LOGIN = "Login"
LOAD = "Load"

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "miroctl": (
        ("miroctl list", "the default profile's servers and their tools"),
        ("miroctl call tool-system disk_usage path=/", "call one tool with one argument"),
        ("miroctl check --json", "probe every server, as JSON for a script"),
        ("miroctl --install-completion", "Tab completion of servers, tools and key="),
    ),
    "list": (
        ("miroctl list", "every default server and its tools"),
        ("miroctl list tool-system --schema", "one server, with each tool's input schema"),
        ('miroctl list --stdio "python my_server.py" --json', "an ad-hoc server, as JSON"),
    ),
    "call": (
        ("miroctl call tool-reading read_file uri=README.md", "SERVER TOOL key=value"),
        ("miroctl call tool-system.disk_usage path=/ --json", "SERVER.TOOL, the envelope as JSON"),
        ("miroctl call system cpu_usage sample_seconds:=0.5 -t 10", "key:=JSON, a timeout"),
    ),
    "read": (
        ("miroctl list tool-docs --resources", "find the URIs a server offers"),
        ("miroctl read tool-docs docs://readme", "print one resource's text"),
        ("miroctl read tool-docs docs://logo.png --save-dir out", "save binary contents to out/"),
    ),
    "prompt": (
        ("miroctl list tool-docs --prompts", "find the prompts a server offers"),
        ("miroctl prompt tool-docs review code='print(1)'", "fill one in with its arguments"),
        ("miroctl prompt tool-docs review code=x --json", "its messages as JSON"),
    ),
    "check": (
        ("miroctl check", "probe every default server phase by phase"),
        ("miroctl check --json --junit check.xml", "JSON on stdout, JUnit XML for CI"),
        ("miroctl check --lock tools.lock", "record the tools; later: --against tools.lock"),
    ),
    "serve": (
        ("miroctl serve --transport http --port 8765 --json", "HTTP, the ready line as JSON"),
        ("miroctl list --via http://127.0.0.1:8765", "its tools, through it"),
    ),
    "auth": (
        ("miroctl auth tracker", "log in to an OAuth server: opens the browser"),
        ("miroctl auth tracker --no-browser", "print the URL instead (a remote shell)"),
        ("miroctl auth tracker --reset", "forget the stored login and log in again"),
    ),
    "bench": (
        ("miroctl bench tool-system disk_usage path=/ -j 4 -n 200", "200 calls, 4 in flight"),
        ("miroctl bench tool-system disk_usage -d 30 --rate 50", "30 s at 50 calls/s"),
        ("miroctl bench system disk_usage -n 100 --json", "the report as JSON"),
    ),
    "help": (
        ("miroctl help connection", "--config, --stdio, --url, --via, ... in full"),
        ("miroctl help http", "serve's HTTP limits in full"),
        ("miroctl help", "the topics"),
    ),
    "replay": (
        ("miroctl call tool-system disk_usage --record run.ndjson", "record a session first"),
        ("miroctl replay run.ndjson", "answer from it as a stdio MCP server"),
        ("miroctl replay run.ndjson --transport http --port 8766", "or over HTTP"),
    ),
    "daemon": (
        ("miroctl daemon status", "each daemon: pid, config, servers, idle time"),
        ("miroctl daemon stop", "stop this config's daemon and its servers"),
    ),
    "daemon status": (
        ("miroctl daemon status", "each daemon: pid, config, servers, idle time"),
        ("miroctl daemon status --json", "the same as one JSON document"),
    ),
    "daemon stop": (
        ("miroctl daemon stop", "this directory's config's daemon and its servers"),
        ("miroctl daemon stop --all", "every daemon of this user"),
    ),
    "daemon logs": (
        ("miroctl daemon logs", "the last 50 lines of this config's daemon's log"),
        ("miroctl daemon logs --all -n 0", "every daemon's whole log"),
    ),
    "config": (
        ("miroctl config sources", "every client's MCP config found here and in HOME"),
        ("miroctl config import cursor", "write Cursor's servers as miroctl server files"),
        ("miroctl list -c claude-code", "or use one client's servers directly"),
    ),
    "install": (
        ("miroctl install claude-code", "add miroctl serve to Claude Code (~/.claude.json)"),
        ("miroctl install cursor --profile research --print", "show the entry; change nothing"),
        ("miroctl install vscode --scope project --remove", "take it out of .vscode/mcp.json"),
    ),
    "config sources": (
        ("miroctl config sources", "every client's MCP config found here and in HOME"),
        ("miroctl config sources --client cursor --json", "one client's, as JSON"),
        ("miroctl list -c cursor", "use one client's servers directly"),
    ),
    "config import": (
        ("miroctl config import cursor", "write Cursor's servers as config/tool/*.yaml"),
        ("miroctl config import .vscode/mcp.json --into tools", "a file, into another directory"),
        ("miroctl config import claude-code --force", "replace files that already exist"),
    ),
}

EXIT_CODES = {
    "miroctl": "0 ok, 1 failed, 2 usage/config, 3 unavailable or auth required, 4 timeout, 5 denied, 6 not found, "
    "7 lint findings (check --strict), 70 a defect in miroctl, 130 interrupted",
    "list": "0 every server listed, 1 a server failed, 2 usage or config error",
    "call": "0 result, 1 tool error, 2 bad arguments, 3 unavailable, 4 timeout, 5 denied, 6 not found",
    "read": "0 read, 1 failed, 2 usage, 3 unavailable, 4 timeout, 6 no such server or resource",
    "prompt": "0 fetched, 1 failed, 2 usage or missing argument, 3 unavailable, 4 timeout, 6 not found",
    "check": "0 every server healthy (and no drift), 1 a server unhealthy or its tools drifted, 2 usage, "
    "7 only lint findings (--strict)",
    "serve": "0 stopped by end of input, 2 usage or config, 130/143 stopped by Ctrl-C/SIGTERM",
    "auth": "0 logged in (or no login needed), 2 usage, 3 the login failed or was refused, 4 no answer in time",
    "bench": "0 error rate within --max-error-rate, 1 above it, 2 usage, 3 unavailable, 5 denied, 6 not found, 130",
    "help": "0 printed, 2 no such topic",
    "replay": "0 stopped by end of input, 2 not a readable recording, 130/143 stopped by Ctrl-C/SIGTERM",
    "daemon": "0 done, 1 a daemon is dead or not answering, 2 usage, 4 a daemon did not stop in time",
    "daemon status": "0 every daemon answers (or none runs), 1 one is dead or not answering",
    "daemon stop": "0 stopped (or none was running), 2 usage or config, 4 a daemon did not exit in time",
    "daemon logs": "0 printed (or no log yet), 2 usage or config",
    "config": "0 done, 1 a source has a problem or nothing was written, 2 usage",
    "install": "0 added, replaced, already there or removed, 2 usage or unreadable file, 6 nothing to remove",
    "config sources": "0 every source read, 1 a source has a problem, 2 usage",
    "config import": "0 files written, 1 no server could be imported, 2 a file exists (use --force) or no such source",
}


CONNECTED = ("list", "call", "read", "prompt", "check", "serve", "bench")  # the commands with a Connection panel
# What a command's help leaves to `miroctl help TOPIC` or the docs, under its examples (at most 60 columns).
MORE: dict[str, tuple[str, ...]] = {
    **{name: ("Connection options in full: miroctl help connection",) for name in CONNECTED},
    "serve": (
        "An MCP host (Claude Desktop, Cursor, ...) starts it so:",
        '  {"mcpServers": {"miroctl": {"command": "miroctl",',
        '                              "args": ["serve"]}}}',
        "HTTP limits (--max-body, ...): miroctl help http",
        "Connection options in full: miroctl help connection",
    ),
    "miroctl": ("Options that several commands share: miroctl help",),
}


def epilog(command: str) -> str:
    """Examples, each under a comment saying what it does, what is explained elsewhere, and the exit codes;
    short lines, so none wraps.

    The last line starts at column 0: Typer dedents the epilog by its common indent, which keeps the examples'."""
    lines = [f"  # {what}\n  {line}" for line, what in EXAMPLES[command]]
    return "\n".join(["Examples:", *lines, *MORE.get(command, ()), f"Exit codes: {EXIT_CODES[command]}."])


def _word(param: click.Parameter) -> str | None:
    """The metavar of a parameter that has none: nothing for a flag, else a word for its type."""
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return ""
    descriptor = getattr(param, "type_descriptor", None)
    if getattr(descriptor, "is_choice", False):
        return None  # Typer shows the choices themselves
    annotation: Any = getattr(descriptor, "annotation", None)
    inner = get_args(annotation)[0] if get_origin(annotation) is list else annotation
    return "N" if inner is int else "NUMBER" if inner is float else "TEXT"


class _Argument(TyperArgument):
    """An argument shown by its metavar alone, without a type column (`<list[str]>`)."""

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None


def in_words(params: list[click.Parameter]) -> None:
    """Give every parameter a metavar in words and help that prints as written."""
    for param in params:
        if getattr(param, "_worded", False):
            continue
        param._worded = True  # type: ignore[attr-defined]  # a mark of this module's own on click's Parameter
        if param.metavar is None:
            param.metavar = _word(param)
        if isinstance(param, (TyperOption, TyperArgument)) and param.help:
            param.help = as_typed(param.help)
        if type(param) is TyperArgument:
            param.__class__ = _Argument  # the only way to drop Typer's type column for one argument


class _InWords:
    """Help that names types in words (see the module's docstring), for a command and for the group."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params: list[click.Parameter] = super().get_params(ctx)  # type: ignore[misc]  # with --help, added here
        in_words(params)
        if any(getattr(param, "rich_help_panel", None) == OUTPUT for param in params):
            for param in params:  # --help joins the Output panel rather than take a panel of its own
                if param.name == "help":
                    param.rich_help_panel = OUTPUT  # type: ignore[attr-defined]  # read by Typer's rich_utils
        return params

    def get_help(self, ctx: click.Context) -> str:
        """The help, noted on the console entry's `Launch`: only a help Typer rendered is kept in the cache."""
        launch = ctx.find_root().obj
        if isinstance(launch, Launch):
            launch.help_rendered = True
        text: str = super().get_help(ctx)  # type: ignore[misc]  # click.Command's, after this mixin
        return text


class WordedCommand(_InWords, TyperCommand):
    """A command whose help names types in words and ends with examples (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = as_typed(self.help)
        if self.epilog:
            self.epilog = as_typed(self.epilog)


class WordedGroup(_InWords, TyperGroup):
    """The top-level group, worded the same way; Typer's two completion options are left to the examples,
    where `--install-completion` is shown whole (in the options table a 60-column screen cuts it)."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        for param in params:
            if param.name in ("install_completion", "show_completion") and hasattr(param, "hidden"):
                param.hidden = True
        return params

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.epilog:
            self.epilog = as_typed(self.epilog)
