"""The one place miroctl reaches into anyio's private attributes (tests/test_private_apis.py watches it).

anyio's asyncio Process does not close its subprocess transport when the pipes are closed; left to the
garbage collector it warns ("unclosed transport") in whatever runs next. Closing it needs the private
`_process._transport`. If a new anyio moves it, the test fails loudly and this is a no-op meanwhile.
"""

from __future__ import annotations

from contextlib import suppress


def subprocess_transport(process: object) -> object:
    """The asyncio subprocess transport behind an anyio Process, or None where there is none."""
    return getattr(getattr(process, "_process", None), "_transport", None)


def close_transport(process: object) -> None:
    """Close the transport of a process that has exited, so no ResourceWarning follows it around."""
    close = getattr(subprocess_transport(process), "close", None)
    if callable(close):
        with suppress(Exception):
            close()
