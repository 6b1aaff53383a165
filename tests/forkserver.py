"""A warm start for the docs examples' `miroctl`: a process that has imported the heavy libraries once and
forks a child for each command line, which runs miroctl's real console entry.

Every `$ miroctl ...` of a page is still a command line run by bash: the `miroctl` on the scratch PATH is a
small client (`client_script`) that connects to this server's Unix socket and hands over its argv, working
directory, environment, umask, ignored signals and its stdin, stdout and stderr (SCM_RIGHTS). The server
forks a supervisor, which forks the command's process: it takes those fds as 0, 1 and 2, that directory and
environment, imports miroctl afresh (nothing of miroctl is loaded before the fork, so its module-level
state, such as the run marker, is the command's own) and runs `miroctl.launch.entry:main`, then exits as
Python would (non-daemon threads joined, atexit handlers run, streams flushed). The supervisor relays the
client's signals to it and its wait status back, and the client exits with that status (re-raising a signal
that killed the command), so bash sees the same exit code and `kill $PID` reaches miroctl. When the client
disappears (killed), the command gets SIGTERM, as miroctl would stop its servers when its terminal closes.

Only third-party modules are imported before the fork; this saves each command the interpreter's start and
their import (the mcp SDK alone costs more than a second of CPU).

Run as `python -P -m tests.forkserver SOCKET`: it prints one line when it listens.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import struct
import sys
import threading

# What every miroctl command would import (the Typer app, Rich, the SDK's client and server, the config).
PRELOAD = (
    "typer",
    "typer.main",
    "typer.rich_utils",
    "rich.console",
    "rich.table",
    "rich.markup",
    "rich.syntax",
    "anyio",
    "anyio._backends._asyncio",
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.server.lowlevel",
    "mcp.server.mcpserver",
    "omegaconf",
    "pydantic",
    "httpx2",
    "starlette.applications",
    "uvicorn",
    "jsonschema",
    "psutil",
    "yaml",
    "dotenv",
)
STATUS = struct.Struct("!i")
SIGNAL = struct.Struct("!B")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
MAX_REQUEST = 4 * 1024 * 1024


def client_script(socket_path: str) -> str:
    """The `miroctl` put on PATH: hands its command line and fds to the server, exits with its status."""
    forwarded = ", ".join(f"signal.{sig.name}" for sig in FORWARDED)
    return f"""#!{sys.executable} -IS
import json, os, signal, socket, struct, sys
conn = socket.socket(socket.AF_UNIX)
conn.connect({socket_path!r})
FORWARDED = ({forwarded},)
ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
mask = os.umask(0)
os.umask(mask)
request = json.dumps(
    {{"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask, "ignored": ignored}}
).encode()
socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
def forward(signum, frame):
    conn.send(struct.pack("!B", signum))
for sig in FORWARDED:
    if int(sig) not in ignored:
        signal.signal(sig, forward)
data = b""
while len(data) < 4:
    try:
        part = conn.recv(4 - len(data))
    except InterruptedError:
        continue
    if not part:
        sys.stderr.write("miroctl (docs test client): the fork server went away\\n")
        os._exit(70)
    data += part
status = struct.unpack("!i", data)[0]
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status))
"""


def main(socket_path: str) -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:  # forking a process with threads leaves their locks held in the child
        raise SystemExit(f"importing {PRELOAD} started threads: {threading.enumerate()}")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(socket_path)
    listener.listen(64)
    print("listening", flush=True)
    while True:
        conn, _ = listener.accept()
        _reap()
        if os.fork() == 0:
            listener.close()
            try:
                _supervise(conn)
            finally:
                os._exit(70)
        conn.close()


def _reap() -> None:
    """Collect the supervisors that have ended."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _supervise(conn: socket.socket) -> None:
    """One command line: receive it, run it in a child, relay signals to it and its wait status back."""
    head, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
    size = struct.unpack("!I", head[:4])[0]
    body = head[4:]
    while len(body) < size:
        body += conn.recv(size - len(body))
    request = json.loads(body)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_command(request, fds)
    for fd in fds:
        os.close(fd)
    process = os.pidfd_open(pid)
    while True:
        readable, _, _ = select.select([conn, process], [], [])
        if process in readable:
            _, status = os.waitpid(pid, 0)
            conn.sendall(STATUS.pack(status))
            return
        data = conn.recv(SIGNAL.size)
        os.kill(pid, SIGNAL.unpack(data)[0] if data else signal.SIGTERM)
        if not data:  # the client is gone: the command stops as on a closed terminal, and nobody waits for it
            os.waitpid(pid, 0)
            return


def _run_command(request: dict[str, object], fds: list[int]) -> None:
    """The command's process: the client's fds, directory, environment and signals, then miroctl's entry."""
    code = 70
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(str(request["cwd"]))
        os.umask(int(str(request["umask"])))
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        import tempfile

        tempfile.tempdir = None  # TMPDIR is the command's
        ignored = request["ignored"]
        assert isinstance(ignored, list)
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)
        argv = request["argv"]
        assert isinstance(argv, list)
        sys.argv = [str(word) for word in argv]
        code = _entry()
    finally:
        os._exit(code)


def _entry() -> int:
    """miroctl's console entry, ended as the interpreter ends a program."""
    try:
        from miroctl.launch.entry import main as miroctl_main

        miroctl_main()
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught exception
        sys.excepthook(*sys.exc_info())
        code = 1
    _finish()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _finish() -> None:
    threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads, as at interpreter exit
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    main(sys.argv[1])
