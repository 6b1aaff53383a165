"""A fixture MCP server for the policy layer's tests: a failing scrape, URL-taking tools, annotated tools.

    python tests/servers/webtools.py [--name N] [--record FILE] [--fail-starts K] [--scrape-error MSG]

Every start and every call is appended to the --record file ("start", "call TOOL ARGS"), so a test can
tell whether a call reached the server. --fail-starts K makes the first K starts exit at once.
"""

import argparse
import json
import os
import sys


def record(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\n")


def count(path: str | None, line: str) -> int:
    if not path or not os.path.exists(path):
        return 0
    with open(path) as handle:
        return sum(1 for text in handle if text.rstrip("\n") == line)


def build(name: str, opts: argparse.Namespace, environ=None):
    """The server. Given `environ` it runs in the test's own process (the memory transport): `env` reads it
    instead of the process's, and the tools that kill their server refuse."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer(name, version="1.0.0", log_level="WARNING")

    def called(tool: str, **arguments) -> None:
        record(opts.record, f"call {tool} {json.dumps(arguments, sort_keys=True)}")

    @server.tool()
    def scrape(url: str) -> str:
        """Scrape a web page (always fails here, with a message of its own)."""
        called("scrape", url=url)
        raise ToolError(opts.scrape_error)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def fetch(url: str) -> str:
        """Pretend to fetch a URL."""
        called("fetch", url=url)
        return f"fetched {url}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def visit(pages: list[str]) -> str:
        """Pretend to visit several pages."""
        called("visit", pages=pages)
        return f"visited {len(pages)} pages"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def peek() -> str:
        """A read-only tool."""
        called("peek")
        return "peeked"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def wipe() -> str:
        """A destructive tool."""
        called("wipe")
        return "wiped"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def note(text: str) -> str:
        """A tool that writes, but destroys nothing."""
        called("note", text=text)
        return "noted"

    @server.tool()
    def plain() -> str:
        """A tool without annotations."""
        called("plain")
        return "plain"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    def crash_once_idempotent() -> str:
        """Kill the server on the first call, answer on the next (idempotent)."""
        return _crash_once("crash_once_idempotent")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False))
    def crash_once() -> str:
        """Kill the server on the first call, answer on the next (not idempotent)."""
        return _crash_once("crash_once")

    @server.tool()
    def crash_once_unannotated() -> str:
        """Kill the server on the first call, answer on the next (no annotations)."""
        return _crash_once("crash_once_unannotated")

    def _crash_once(tool: str) -> str:
        if environ is not None:
            raise ToolError(f"{tool} needs a server process: mark the test `process`")
        first = count(opts.record, f"call {tool} {{}}") == 0
        called(tool)
        if first:
            os._exit(9)
        return "answered"

    @server.tool()
    async def hold(seconds: float, tag: str) -> str:
        """Record entering, wait, record leaving: shows whether calls overlapped."""
        import anyio

        record(opts.record, f"enter {tag}")
        await anyio.sleep(seconds)
        record(opts.record, f"leave {tag}")
        return tag

    @server.tool()
    def env(name: str) -> str:
        """Return an environment variable of the server process."""
        called("env", name=name)
        return (os.environ if environ is None else environ).get(name, "<unset>")

    @server.tool()
    def fail(message: str) -> str:
        """Fail, echoing the message."""
        called("fail", message=message)
        raise ToolError(f"failed: {message}")

    @server.tool()
    def big(chars: int) -> str:
        """Return `chars` characters."""
        return "x" * chars

    return server


def options(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="webtools")
    parser.add_argument("--record", default=None)
    parser.add_argument("--fail-starts", type=int, default=0)
    parser.add_argument("--scrape-error", default="upstream refused the page (HTTP 451)")
    return parser.parse_args(argv)


def main() -> None:
    opts = options()
    starts = count(opts.record, "start")
    record(opts.record, "start")
    if starts < opts.fail_starts:
        print(
            f"webtools: failing start {starts + 1} on purpose, secret {os.environ.get('FIXTURE_SECRET', '-')}",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(4)
    build(opts.name, opts).run("stdio")


if __name__ == "__main__":
    main()
