"""MCP servers that ship with miroctl, each runnable as `python -m servers.NAME`."""
