"""`python -m miroctl.daemon.keeper RUN_ID`: the daemon's keeper, so that no server's child outlives the daemon.

The daemon starts it with a pipe as its stdin whose other end only the daemon holds. However the daemon ends
(a SIGKILL or the out-of-memory killer too, where it stops nothing itself), the pipe then ends, and the keeper
kills every process that still carries the daemon's run marker: its servers, and whatever they started that
left their process group (a detached browser, a daemonizing launcher).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from miroctl.sessions.processes import sweep_orphans

KEEPER_WAIT = 10.0  # seconds the daemon waits, as it exits, for its keeper's last sweep


def start(run_id: str) -> tuple[int, subprocess.Popen[bytes]]:
    """Start the keeper of `run_id` in a session of its own; the pipe's end to hold open, and the process."""
    read_end, write_end = os.pipe()  # not inherited by the servers (close-on-exec)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "miroctl.daemon.keeper", run_id], stdin=read_end, start_new_session=True
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return write_end, process


def stop(write_end: int, process: subprocess.Popen[bytes]) -> None:
    """As the daemon exits: end the pipe and wait for the keeper's sweep (killed if it takes too long)."""
    os.close(write_end)
    try:
        process.wait(KEEPER_WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1 or not args[0]:
        raise SystemExit("usage: python -m miroctl.daemon.keeper RUN_ID (the daemon starts it)")
    while os.read(0, 4096):  # until the daemon is gone: nothing is written, only the end counts
        continue
    sweep_orphans(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
