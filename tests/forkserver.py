"""A warm start for the docs examples' `miroctl` and `python`: a process that has imported the heavy libraries
once and forks a child for each command line.

Every `$ miroctl ...` of a page is still a command line run by bash: the `miroctl` on the scratch PATH is a
small client (`client_script`) that connects to this server's Unix socket and hands over its argv, working
directory, environment, umask, ignored signals and its open descriptors (stdin, stdout, stderr and any other
it inherited, by SCM_RIGHTS). The server forks a supervisor, which forks the command's process: it takes those
descriptors at the client's numbers, that directory and environment, imports miroctl afresh (nothing of
miroctl is loaded before the fork, so its module-level state, such as the run marker, is the command's own)
and runs `miroctl.launch.entry:main`, then exits as Python would (non-daemon threads joined, atexit handlers
run, streams flushed). The supervisor relays the client's signals to it (to its process group when the client
leads one, as a server started in a session of its own does) and its wait status back, and the client exits
with that status (re-raising a signal that killed the command), so bash sees the same exit code and
`kill $PID` reaches miroctl. When the client disappears (killed), a miroctl command gets SIGTERM, as miroctl
would stop its servers when its terminal closes; a Python program gets SIGKILL, the one signal its client
could not relay.

The `python` on the scratch PATH is such a client too (`python_client_script`), and a forked command that
starts this interpreter (`tool_command: python`, the bundled servers, the daemon) starts that client instead,
so the servers and scripts of a page start warm as well. The server runs a script file, or a module of
miroctl.servers or miroctl.daemon, as the interpreter would: a fresh `__main__`, sys.argv and sys.path, the
standard streams buffered as -u or PYTHONUNBUFFERED say, -P, -B and their variables, a traceback without the
server's own frames. It declines anything else (another flag or module, `-c`, another PYTHON* variable, a
locale other than its own), and the client then runs the real interpreter in its own place (exec).

Only third-party modules are imported before the fork; this saves each command the interpreter's start and
their import (the mcp SDK alone costs more than a second of CPU).

Run as `python -P -m tests.forkserver SOCKET`: it prints one line when it listens.
"""

from __future__ import annotations

import builtins
import fcntl
import importlib
import importlib.machinery
import io
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import types
from dataclasses import dataclass
from types import TracebackType

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
ACCEPTED, DECLINED = b"+", b"-"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
MAX_REQUEST = 4 * 1024 * 1024
MAX_FDS = 64
MIROCTL, PYTHON = "miroctl", "python"
# What a forked `python` may be asked: these flags, then a script file or a module of these packages.
FLAGS = ("-P", "-u", "-B")
MODULES = ("miroctl.servers", "miroctl.daemon")
# The PYTHON* variables a forked program applies itself; any other changes how an interpreter starts.
APPLIED = {"PYTHONPATH", "PYTHONSAFEPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"}
LOCALE = ("LANG", "LC_ALL", "LC_CTYPE")


def client_script(socket_path: str, python: str | None = None) -> str:
    """The `miroctl` put on PATH: hands its command line and fds to the server, exits with its status. With
    `python` (the scratch PATH's), the interpreter's starts by the command go through that client."""
    return _client(socket_path, MIROCTL, python)


def python_client_script(socket_path: str, python: str) -> str:
    """The `python` put on PATH (at `python`): a program the server can run warm is run there, anything else
    by the real interpreter, in this process's place."""
    return _client(socket_path, PYTHON, python)


def _client(socket_path: str, kind: str, python: str | None) -> str:
    forwarded = ", ".join(f"signal.{sig.name}" for sig in FORWARDED)
    return f"""#!{sys.executable} -IS
import json, os, signal, socket, struct, sys
FORWARDED = ({forwarded},)
fds = [0, 1, 2]  # and every other descriptor this process inherited (a daemon's ready pipe)
for name in os.listdir("/proc/self/fd"):
    try:
        if int(name) > 2 and os.fstat(int(name)):
            fds.append(int(name))
    except OSError:
        pass  # the listing's own descriptor, closed by now
conn = socket.socket(socket.AF_UNIX)
conn.connect({socket_path!r})
ignored = [int(s) for s in FORWARDED if signal.getsignal(s) == signal.SIG_IGN]
mask = os.umask(0)
os.umask(mask)
request = json.dumps(
    {{"kind": {kind!r}, "argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": mask,
      "ignored": ignored, "leader": os.getpgrp() == os.getpid(), "fds": fds, "python": {python!r}}}
).encode()
socket.send_fds(conn, [struct.pack("!I", len(request)) + request], fds)
pending = []
def forward(signum, frame):
    pending.append(signum)
    try:
        conn.send(struct.pack("!B", signum))
    except OSError:
        pass
for sig in FORWARDED:
    if int(sig) not in ignored:
        signal.signal(sig, forward)
def receive(size):
    data = b""
    while len(data) < size:
        part = conn.recv(size - len(data))
        if not part:
            sys.stderr.write("{kind} (docs test client): the fork server went away\\n")
            os._exit(70)
        data += part
    return data
if receive(1) == {DECLINED!r}:  # the real interpreter, in this process's place
    conn.close()
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN if int(sig) in ignored else signal.SIG_DFL)
    if pending:  # a signal that came while the server decided: it would have ended the interpreter's start
        os.kill(os.getpid(), pending[0])
    os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])
status = struct.unpack("!i", receive(4))[0]
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Program:
    """A `python` command line the server runs itself: a script file or a module, its arguments, its flags."""

    script: str | None
    module: str | None
    args: list[str]
    safe_path: bool
    unbuffered: bool
    no_bytecode: bool


def program(argv: list[str], cwd: str, env: dict[str, str]) -> Program | None:
    """What `python ARGS` asks for, when the server can run it as the interpreter would; else None."""
    if any(env.get(name) != os.environ.get(name) for name in LOCALE):
        return None
    if any(name.startswith("PYTHON") and value and name not in APPLIED for name, value in env.items()):
        return None
    words = argv[1:]
    flags = set()
    while words and words[0] in FLAGS:
        flags.add(words.pop(0))
    script = module = None
    if words[:1] == ["-m"] and len(words) > 1 and any(words[1].startswith(f"{m}.") or words[1] == m for m in MODULES):
        module, words = words[1], words[2:]
    elif words and not words[0].startswith("-") and os.path.isfile(os.path.join(cwd, words[0])):
        script, words = words[0], words[1:]
    else:
        return None
    return Program(
        script,
        module,
        words,
        safe_path="-P" in flags or bool(env.get("PYTHONSAFEPATH")),
        unbuffered="-u" in flags or bool(env.get("PYTHONUNBUFFERED")),
        no_bytecode="-B" in flags or bool(env.get("PYTHONDONTWRITEBYTECODE")),
    )


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
    head, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, MAX_FDS)
    size = struct.unpack("!I", head[:4])[0]
    body = head[4:]
    while len(body) < size:
        body += conn.recv(size - len(body))
    request = json.loads(body)
    run = None
    if request["kind"] == PYTHON:
        run = program(request["argv"], request["cwd"], request["env"])
        if run is None:
            conn.sendall(DECLINED)
            return
    conn.sendall(ACCEPTED)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_command(request, dict(zip(request["fds"], fds, strict=True)), run)
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
        # The client is gone (killed): a miroctl command stops as on a closed terminal, a program as its client
        # was stopped, most likely (SIGKILL, which no client can relay).
        gone = signal.SIGKILL if run is not None else signal.SIGTERM
        _signal(pid, SIGNAL.unpack(data)[0] if data else gone, group=request["leader"])
        if not data:  # and nobody waits for it
            os.waitpid(pid, 0)
            return


def _signal(pid: int, signum: int, group: bool) -> None:
    """A signal to the command, or to its process group when it leads one (as its client did; until the
    command has made its group, the command alone)."""
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        if group:
            _signal(pid, signum, group=False)


def _run_command(request: dict[str, object], fds: dict[int, int], run: Program | None) -> None:
    """The command's process: the client's fds (at the client's numbers), directory, environment and signals,
    then miroctl's entry or the Python program."""
    code = 70
    try:
        _take(fds)
        if request["leader"]:
            os.setsid()
        os.chdir(str(request["cwd"]))
        os.umask(int(str(request["umask"])))
        env = request["env"]
        assert isinstance(env, dict)
        startup_path = os.environ.get("PYTHONPATH", "")
        os.environ.clear()
        os.environ.update(env)
        import tempfile

        tempfile.tempdir = None  # TMPDIR is the command's
        ignored = request["ignored"]
        assert isinstance(ignored, list)
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)
        if request["python"]:
            _start_python_through(str(request["python"]))
        argv = request["argv"]
        assert isinstance(argv, list)
        if run is None:
            sys.argv = [str(word) for word in argv]
            code = _entry()
        else:
            sys.orig_argv = [sys.executable, *(str(word) for word in argv[1:])]
            code = _run_python(run, startup_path)
    finally:
        os._exit(code)


def _take(fds: dict[int, int]) -> None:
    """Put each received descriptor at the number it had in the client (`fds`: that number -> the received
    one), first out of the way of every such number, so that none overwrites another before it moved."""
    above = max([*fds, *fds.values()]) + 1
    moved = {}
    for number, received in fds.items():
        moved[number] = fcntl.fcntl(received, fcntl.F_DUPFD, above)
        os.close(received)
    for number, fd in moved.items():
        os.dup2(fd, number)
        os.close(fd)


def _start_python_through(client: str) -> None:
    """From here on, a process started with this interpreter (a server of `tool_command: python`, a bundled
    server) starts as `client`, the scratch PATH's `python`, so that it too runs warm when it can."""
    import subprocess

    execute = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def through_client(self: subprocess.Popen[bytes], args: object, executable: object, *rest: object) -> object:
        if executable is None and isinstance(args, list | tuple) and args and os.fspath(args[0]) == sys.executable:
            args = [client, *args[1:]]
        return execute(self, args, executable, *rest)

    subprocess.Popen._execute_child = through_client  # type: ignore[attr-defined]


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


def _run_python(run: Program, startup_path: str) -> int:
    """A script or a module as `python` runs it: a fresh `__main__`, its sys.argv and sys.path, standard
    streams buffered as the environment says; exited as the interpreter exits."""
    own = sys.modules["__main__"]  # this server's module, kept alive: its functions still run below
    sys.modules["__main__"] = main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    sys.dont_write_bytecode = run.no_bytecode
    sys.path[:] = _search_path(run, startup_path)
    _fresh_streams(run.unbuffered)
    try:
        if run.module is not None:
            sys.argv = ["-m", *run.args]
            runpy._run_module_as_main(run.module)  # type: ignore[attr-defined]  # what `python -m` runs
        else:
            sys.argv = [str(run.script), *run.args]
            _run_script(main_module, os.path.abspath(str(run.script)))
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        _report(*sys.exc_info())
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught exception
        _report(*sys.exc_info())
        code = 1
    del own
    _finish()
    return code


def _run_script(module: types.ModuleType, path: str) -> None:
    with io.open_code(path) as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    loader = importlib.machinery.SourceFileLoader("__main__", path)
    module.__dict__.update(__file__=path, __cached__=None, __loader__=loader)
    exec(code, module.__dict__)


def _search_path(run: Program, startup_path: str) -> list[str]:
    """sys.path as an interpreter started for `run` in this directory and environment would have it."""
    base = list(sys.path)
    for entry in [p for p in startup_path.split(os.pathsep) if p]:  # this server's own PYTHONPATH
        if base and base[0] == os.path.abspath(entry):
            base.pop(0)
    given = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    first = [] if run.safe_path else [os.path.dirname(os.path.abspath(run.script)) if run.script else os.getcwd()]
    return [*first, *given, *(entry for entry in base if entry not in given)]


def _fresh_streams(unbuffered: bool) -> None:
    """sys.stdin, stdout and stderr over fds 0-2 as the interpreter makes them at its start."""
    made = []
    for fd, old in enumerate((sys.stdin, sys.stdout, sys.stderr)):
        writes = fd > 0
        mode, buffering = ("wb", 0 if unbuffered else -1) if writes else ("rb", -1)
        raw = open(fd, mode, buffering=buffering, closefd=False)  # noqa: SIM115 - open for the program's life
        line_buffering = not unbuffered and (os.isatty(fd) or fd == 2)
        made.append(
            io.TextIOWrapper(
                raw,
                encoding=old.encoding,
                errors=old.errors,
                newline="\n",
                line_buffering=line_buffering,
                write_through=unbuffered and writes,
            )
        )
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def _report(kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
    """An uncaught exception as the interpreter prints it: without this server's frames."""
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    if kind is not None and value is not None:
        sys.excepthook(kind, value.with_traceback(tb), tb)


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
