"""Set a sandbox run's limits, then become the program: `sandbox_launch.py SERVER_PID AS CPU FSIZE -- ARGV...`.

Run by path with `python -I -S` (no site, no environment) between fork and the program, instead of a
`preexec_fn`: the server runs tools in threads, where code between fork and exec may deadlock.
"""

import os
import resource
import sys


def clamp(kind: int, value: int, extra: int = 0) -> tuple[int, int]:
    """(soft, hard) for a limit, never above the hard limit already in force."""
    _, hard = resource.getrlimit(kind)
    if hard == resource.RLIM_INFINITY:
        return value, value + extra
    return min(value, hard), min(value + extra, hard)


def die_with_parent(server: int) -> None:
    """Ask Linux to kill this process when the server that started it dies (PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != server:  # the server died before the request took effect
        sys.exit(137)


def main(argv: list[str]) -> None:
    server, memory, cpu, fsize = (int(v) for v in argv[1:5])
    program = argv[argv.index("--") + 1 :]
    resource.setrlimit(resource.RLIMIT_AS, clamp(resource.RLIMIT_AS, memory))
    resource.setrlimit(resource.RLIMIT_CPU, clamp(resource.RLIMIT_CPU, cpu, extra=1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_FSIZE, clamp(resource.RLIMIT_FSIZE, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    die_with_parent(server)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"cannot start {program[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv)
