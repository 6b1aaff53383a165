"""miroctl's start: the console entry, the option table and its reader, the early start's hand-off object,
the help cache and the first line on the terminal. Standard library and miroctl.base only (an import
contract in pyproject.toml), so that none of it waits for Typer, Rich, the SDK or OmegaConf to load."""
