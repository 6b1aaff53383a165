"""The per-user keep-alive daemon: the gateway on a Unix socket, which the CLI starts, reuses and ends by itself
so that a persistent server's state (a browser page, a sandbox's files) lasts across separate commands."""
