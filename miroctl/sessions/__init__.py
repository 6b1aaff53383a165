"""Sessions to MCP servers: stdio processes (spawned in their own process group, never outliving miroctl),
HTTP and SSE connections, the classification of every way they fail, and the pool that keeps one session
per server (restart, backoff)."""
