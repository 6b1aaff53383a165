"""`python -m miroctl.daemon`: what the CLI starts in the background (see miroctl/daemon/service.py)."""

from __future__ import annotations

import sys

from miroctl.daemon.service import main

if __name__ == "__main__":
    sys.exit(main())
