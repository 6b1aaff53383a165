"""`python -m miroctl` runs the command line."""

from miroctl.cli import app

app(prog_name="miroctl")
