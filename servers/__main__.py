"""`python -P -m miroctl.servers NAME`: the bundled server NAME behind its quick start (helpers/quickstart.py)."""

import sys

from .helpers.quickstart import main

main(sys.argv[1:])
