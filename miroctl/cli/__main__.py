"""`python -m miroctl.cli` runs the command line, as the `miroctl` command does."""

from miroctl.cli.entry import main

main()
