"""The MCP servers bundled with miroctl, one module each, started as `python -P -m miroctl.servers.NAME`
(so a `servers` package in the current directory cannot shadow them). Code they share is in `helpers`."""
