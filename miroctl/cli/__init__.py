"""The command line: the console entry (cheap: a call through a gateway imports neither Typer nor the mcp
SDK nor OmegaConf), the Typer app and its commands, and the one error boundary that turns errors into
messages and exit codes."""
