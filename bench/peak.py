"""miroctl's own peak memory, for the curves: run its command line in this process and write the peak to
$BENCH_PEAK_FILE (a wrapper that execs it would count the largest server it waited for). Standard library only,
so that the measured process holds miroctl alone."""

from __future__ import annotations

import json
import os
import resource
import sys
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def inner(words: list[str]) -> int:
    """miroctl's command line in this process; its peak memory written to $BENCH_PEAK_FILE."""
    from miroctl.launch.entry import run

    try:
        return run(words)
    finally:
        sys.stdout.flush()
        Path(os.environ["BENCH_PEAK_FILE"]).write_text(json.dumps({"peak_mb": peak_mb()}))
