"""No server outlives the agent: at exit, and on SIGTERM or SIGHUP, every server the library started is killed.

An agent may never close its ToolManager (the seeds' never do), may tear its event loop down with servers
open, or may be stopped by a supervisor. Every stdio server the library starts carries a marker under
LIBRARY_RUN in its environment (sessions/processes.py), so one sweep finds them all, grandchildren included.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType

from miroctl.sessions.processes import sub_run_id, sweep_orphans

LIBRARY_RUN = sub_run_id("library")  # the marker of every server started through the library in this process
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_armed = False
_lock = threading.Lock()


def arm() -> None:
    """Sweep at exit and on a stop signal, from the first server on (once per process). A signal handler the
    agent installed itself is left alone: its own exit still runs the atexit sweep."""
    global _armed
    with _lock:
        if _armed:
            return
        _armed = True
    atexit.register(_sweep_quietly)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _on_signal)


def _sweep_quietly() -> None:
    try:
        sweep_orphans(LIBRARY_RUN)
    except Exception:  # noqa: BLE001 - at exit, a failed sweep must not turn into a traceback of its own
        return


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Kill the servers, then die of the signal as if no handler had been installed."""
    _sweep_quietly()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
