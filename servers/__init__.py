"""The MCP servers bundled with miroctl, one module each, started as `python -P -m miroctl.servers NAME`
(`-P`: a `servers` package in the current directory cannot shadow them), which answers the handshake and
the tool list from a snapshot of the server's own answers before loading the SDK (helpers/quickstart.py);
`python -P -m miroctl.servers.NAME` runs one directly. Code they share is in `helpers`."""
