"""`python -m miroctl` runs the command line (a call through a gateway takes the warm path)."""

from miroctl.launch.entry import main

main()
