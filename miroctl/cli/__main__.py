"""`python -m miroctl.cli` runs the command line, as the `miroctl` command does."""

from miroctl.launch.entry import main

main()
