"""The gateway: the pool served as one MCP server (`miroctl serve`) over stdio or streamable HTTP, the
exposed-name tool map, the HTTP app with its security checks, and the JSON API that `--via` uses."""
