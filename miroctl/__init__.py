"""miroctl: run, probe, check and serve pools of MCP servers from the command line."""

__version__ = "0.1.0"
