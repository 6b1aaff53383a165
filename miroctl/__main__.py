"""`python -m miroctl` runs the command line (a call through a gateway takes the warm path)."""

from miroctl.cli.entry import main

main()
