"""Set a sandbox run's limits, then run the program: `sandbox_launch.py SERVER_PID AS CPU FSIZE -- ARGV...`.

Run by path with `python -I -S` (no site, no environment) between fork and the program, instead of a
`preexec_fn`: the server runs tools in threads, where code between fork and exec may deadlock.

On Linux the launcher stays as the run's keeper: it makes itself a child subreaper
(PR_SET_CHILD_SUBREAPER), so that whatever the program starts and leaves behind, even in a session of its
own with an empty environment, is re-parented to it rather than to init; when the program ends (or the
server asks with SIGTERM) it kills every process left under it, then ends the way the program ended. The
launcher dies with the server (PR_SET_PDEATHSIG) and the program with the launcher. Elsewhere it execs
the program, whose process group is all the server can stop.
"""

import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def clamp(kind: int, value: int, extra: int = 0) -> tuple[int, int]:
    """(soft, hard) for a limit, never above the hard limit already in force."""
    _, hard = resource.getrlimit(kind)
    if hard == resource.RLIM_INFINITY:
        return value, value + extra
    return min(value, hard), min(value + extra, hard)


def prctl(option: int, value: int) -> bool:
    """prctl(2) on Linux; False where it is not there or refused."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def die_with(parent: int) -> None:
    """Ask Linux to kill this process when `parent` dies; exit at once if it already has."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(137)


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def reap() -> None:
    """Collect every child that has ended."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep() -> None:
    """Kill every process left under this one: its children, then the orphans that come to it, until none."""
    me = os.getpid()
    while True:
        reap()
        left = children(me)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            pass


def keep(program: list[str]) -> None:
    """Run the program as a child, sweep what it leaves, and end as it ended (its code, or its signal)."""
    launcher = os.getpid()
    child = os.fork()
    if child == 0:
        die_with(launcher)
        try:
            os.execvp(program[0], program)
        except OSError as exc:
            print(f"cannot start {program[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)

    def stop(signum: int, frame: object) -> None:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, stop)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)  # orphans that come to this process are reaped here as they end
        except ChildProcessError:
            status = 0
            break
        if pid == child:
            break
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the sweep runs to its end
    sweep()
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    server, memory, cpu, fsize = (int(v) for v in argv[1:5])
    program = argv[argv.index("--") + 1 :]
    resource.setrlimit(resource.RLIMIT_AS, clamp(resource.RLIMIT_AS, memory))
    resource.setrlimit(resource.RLIMIT_CPU, clamp(resource.RLIMIT_CPU, cpu, extra=1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_FSIZE, clamp(resource.RLIMIT_FSIZE, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    die_with(server)
    if prctl(PR_SET_CHILD_SUBREAPER, 1):
        keep(program)
        return
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"cannot start {program[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv)
