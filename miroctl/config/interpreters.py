"""Which interpreter `tool_command: python` (or `python3`) runs, for the CLI and the library alike.

The first that is set wins: the server file's `python:`, the profile's `python:`, $MIROCTL_PYTHON, an active
virtualenv ($VIRTUAL_ENV with a bin/python), else the interpreter running miroctl. A path named in a file is
relative to that file; one that is missing or not executable is a ConfigError naming where it was given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from miroctl.base.errors import ConfigError

PYTHON_ENV = "MIROCTL_PYTHON"
VENV_ENV = "VIRTUAL_ENV"
PYTHON_COMMANDS = ("python", "python3")


def interpreter(value: object, origin: str, base: Path | None = None) -> str:
    """`value` as an interpreter to run: `~` expanded, a relative path taken from `base` (the directory of the
    file that names it; else the working directory). Not resolved further: a virtualenv's python is a link
    to its base interpreter, and only through the link does it run in the virtualenv."""
    text = str(value).strip()
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    if not path.exists():
        raise ConfigError(f"{origin}: {text} does not exist")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise ConfigError(f"{origin}: {text} is not an executable file")
    return os.path.normpath(path)


def default_python(profile_python: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """What `python` means for a server file that names no `python:` of its own: the profile's (already
    checked), $MIROCTL_PYTHON, the active virtualenv's, else miroctl's own interpreter."""
    environ = os.environ if environ is None else environ
    if profile_python:
        return profile_python
    given = env_python(environ)
    if given:
        return given
    venv = environ.get(VENV_ENV, "").strip()
    if venv:
        candidate = Path(venv) / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        if candidate.is_file() and os.access(candidate, os.X_OK) and not is_own(str(candidate)):
            return str(candidate)
    return sys.executable


def env_python(environ: Mapping[str, str] | None = None) -> str | None:
    """$MIROCTL_PYTHON checked, or None when it is not set."""
    given = (os.environ if environ is None else environ).get(PYTHON_ENV, "").strip()
    return interpreter(given, f"${PYTHON_ENV}") if given else None


def is_own(command: str | None) -> bool:
    """Whether running `command` is running miroctl's own interpreter: the same program in the same
    environment (two virtualenvs made from one Python link to the same binary, yet are different)."""
    if not command:
        return False
    if command == sys.executable:
        return True
    try:
        return _environment(Path(command)) == _environment(Path(sys.executable))
    except OSError:
        return False


def _environment(program: Path) -> Path:
    """A virtualenv's directory for its interpreters, else the program itself, links followed."""
    program = Path(os.path.abspath(program))
    venv = program.parent.parent
    return venv.resolve() if (venv / "pyvenv.cfg").is_file() else program.resolve()
