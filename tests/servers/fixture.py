"""A configurable MCP server for miroctl's tests: healthy tools plus every way a server misbehaves.

    python tests/servers/fixture.py [--name N] [--http PORT] [--tools a,b] [--mode MODE] [--instructions TEXT]

Modes that break before the SDK is even imported (so they start fast): exit, hang, noise, flood.
"""

import argparse
import os
import sys
import time

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def misbehave(mode: str) -> None:
    if mode == "late" and not os.path.exists(os.environ.get("FIXTURE_READY_FILE", "")):
        print("fixture: not ready yet", file=sys.stderr)
        sys.exit(4)
    if mode == "exit":
        print("fixture: cannot start, FIXTURE_SECRET is " + os.environ.get("FIXTURE_SECRET", "unset"), file=sys.stderr)
        print("fixture: giving up", file=sys.stderr)
        sys.exit(3)
    if mode == "hang":
        print("fixture: hanging before initialize", file=sys.stderr, flush=True)
        time.sleep(3600)
    if mode == "noise":
        for i in range(5):
            print(f"hello from a chatty server, line {i}", flush=True)
        time.sleep(3600)
    if mode == "flood":
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    if mode == "ignore-term":
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)


def _logged(fn, environ):
    """Append each call's tool name to $FIXTURE_CALL_LOG, so tests can tell whether a call arrived."""
    import functools
    import inspect

    def record():
        path = environ.get("FIXTURE_CALL_LOG")
        if path:
            with open(path, "a") as log:
                log.write(fn.__name__ + "\n")

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            record()
            return await fn(*args, **kwargs)

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        record()
        return fn(*args, **kwargs)

    return wrapper


def build(name: str, only: set[str] | None, environ=None, cwd=None, instructions=None):
    """The server. Given `environ` (and `cwd`) it runs in the test's own process (the memory transport): its
    tools read those instead of the process's, and the tools that need a process of their own refuse.
    `instructions` is what its handshake tells clients about using it."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ImageContent, TextContent, ToolAnnotations

    server = MCPServer(name, version="9.9.9", log_level="WARNING", instructions=instructions)
    in_process = environ is not None
    environ = os.environ if environ is None else environ

    def needs_a_process(tool_name):
        if in_process:
            raise ToolError(f"{tool_name} needs a server process: mark the test `process`")

    def tool(fn=None, **kwargs):
        def register(f):
            if only is None or f.__name__ in only:
                server.tool(**kwargs)(_logged(f, environ))
            return f

        return register(fn) if fn else register

    @tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Echo the text back.

        Returns exactly what it was given."""
        return text

    @tool()
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    @tool()
    def config_echo(options: dict, tags: list[str], flag: bool = False, ratio: float = 1.0) -> dict:
        """Return the arguments it received, to check coercion."""
        return {"options": options, "tags": tags, "flag": flag, "ratio": ratio}

    @tool()
    async def progress(steps: int, ctx: Context) -> str:
        """Report progress `steps` times, then finish."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return f"did {steps} steps"

    @tool()
    async def sleep(seconds: float) -> str:
        """Sleep for a while."""
        import anyio

        await anyio.sleep(seconds)
        return "awake"

    @tool()
    def crash(code: int = 7) -> str:
        """Exit the server process mid-call."""
        needs_a_process("crash")
        print("fixture: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(code)

    @server.resource("fixture://notes", name="notes", description="Plain notes.\nSecond line.", mime_type="text/plain")
    def notes() -> str:
        return f"notes of {name}"

    @server.resource("fixture://pixel.png", name="pixel", description="A one-pixel image.", mime_type="image/png")
    def pixel() -> bytes:
        import base64

        return base64.b64decode(PIXEL)

    @server.resource("fixture://items/{item}", name="item", description="One item by its id.")
    def item(item: str) -> str:
        return f"item {item}"

    @server.resource("fixture://slow", name="slow", description="Arrives after a minute.")
    async def slow() -> str:
        import anyio

        await anyio.sleep(60)
        return "late"

    @server.prompt(name="review", description="Ask for a review of some code.")
    def review(code: str, focus: str = "bugs") -> str:
        return f"Review this code for {focus}:\n{code}"

    @tool()
    async def grow(tool_name: str, ctx: Context) -> str:
        """Add a tool that echoes its text, and announce that the tool list changed."""
        server.add_tool(lambda text: text, name=tool_name, description="Added while running.")
        await ctx.notify_tools_changed()
        return f"added {tool_name}"

    @tool()
    def fail(message: str = "it broke") -> str:
        """Report a tool error."""
        raise ToolError(message)

    @tool()
    def env(name: str) -> str:
        """Return an environment variable of the server process."""
        return environ.get(name, "<unset>")

    @tool()
    def cwd() -> str:
        """Return the server process's working directory."""
        return (cwd or os.getcwd()) if in_process else os.getcwd()

    @tool()
    def spawn_child(seconds: float = 3600, detach: bool = False) -> str:
        """Start a grandchild process that sleeps (in a session of its own if detach), and return its pid."""
        import subprocess

        needs_a_process("spawn_child")
        child = subprocess.Popen(
            [sys.executable, "-c", f"import time; time.sleep({seconds})"], start_new_session=detach
        )
        return str(child.pid)

    @tool()
    def image() -> list:
        """Return a tiny PNG and a caption."""
        return [TextContent(type="text", text="a pixel"), ImageContent(type="image", data=PIXEL, mimeType="image/png")]

    @tool()
    def escape() -> str:
        """Return text full of terminal escapes and Rich markup."""
        return "\x1b[31mred\x1b[0m [bold]not bold[/bold] \x1b]0;title\x07 done"

    @tool(description="[red]markup[/red] and \x1b[31mANSI red\x1b[0m in a description")
    def nasty() -> str:
        return "[bold]not bold[/bold]"

    calls = {"count": 0}

    @tool()
    def counter() -> int:
        """Count the calls this server process has answered (state that lives in the session)."""
        calls["count"] += 1
        return calls["count"]

    @tool()
    def big(chars: int) -> str:
        """Return a string of `chars` characters."""
        return "x" * chars

    @tool()
    async def wait_cancel(seconds: float, marker: str) -> str:
        """Sleep, writing "started" to the file `marker`, and "cancelled" there if the call is cancelled."""
        import anyio

        await anyio.Path(marker).write_text("started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.Path(marker).write_text("cancelled")
            raise
        return "finished"

    @tool()
    def headers(ctx: Context) -> dict:
        """Return the HTTP request headers this call arrived with (empty over stdio)."""
        return {k.lower(): v for k, v in (ctx.headers or {}).items()}

    @tool()
    def ghost() -> str:
        """Listed, but the server claims not to know it when called (unless started with --ghost-real)."""
        if environ.get("FIXTURE_GHOST_REAL"):
            return f"boo from {name}"
        raise ToolError("Unknown tool: ghost")

    def sleepy() -> str:
        """Say it is sleepy (listed only when named in --tools: a near miss of `sleep`)."""
        return f"sleepy on {name}"

    if only is not None and "sleepy" in only:
        server.tool()(_logged(sleepy, environ))

    async def hold(path: str) -> str:
        """Answer once the file `path` exists: a call in flight for as long as the test wants (listed only when
        named in --tools)."""
        import anyio

        while not await anyio.Path(path).exists():
            await anyio.sleep(0.01)
        return "released"

    if only is not None and "hold" in only:
        server.tool()(_logged(hold, environ))

    return server


def options(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="fixture")
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--tools", default="")
    parser.add_argument("--instructions", default=None)
    return parser.parse_args(argv)


def main() -> None:
    opts = options()
    misbehave(opts.mode)
    only = set(opts.tools.split(",")) if opts.tools else None
    server = build(opts.name, only, instructions=opts.instructions)
    print(f"fixture {opts.name}: ready", file=sys.stderr, flush=True)
    if opts.http:
        server.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
