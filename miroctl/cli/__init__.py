"""The miroctl command line: each command parses, loads the config, asks the core, renders, exits.

The package is the one error boundary: only here do exceptions become exit codes.
"""

from miroctl.cli import check, commands, fetch, serve  # noqa: F401 - importing a command module registers it
from miroctl.cli.base import app, run
from miroctl.cli.commands import split_target

__all__ = ["app", "run", "split_target"]
