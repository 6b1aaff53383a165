"""One version number for miroctl and its bundled servers (pyproject.toml reads it from here)."""

__version__ = "0.1.0"
