"""miroctl's console entry run in the test's process: the same code as `miroctl ARGV` from the help cache and
the early start to the Typer app, without a cold interpreter per command line."""

from __future__ import annotations

import subprocess

import pytest

from miroctl.launch import entry


def console_entry(capfd: pytest.CaptureFixture[str], *argv: str) -> subprocess.CompletedProcess[str]:
    """`miroctl ARGV` through launch.entry.run in this process: its exit code, and what it wrote to the file
    descriptors 1 and 2 (pipes to it, as to a piped process: neither is a terminal)."""
    capfd.readouterr()
    code = entry.run(list(argv))
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(argv, code, out, err)
