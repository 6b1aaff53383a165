"""`python -m miroctl.cli` runs the command line."""

from miroctl.cli import app

app(prog_name="miroctl")
