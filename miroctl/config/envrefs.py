"""Which environment variables a config's `${oc.env:VAR}` references need and lack, by name.

OmegaConf reports a missing variable only when the value is read, and for a default that is itself an
interpolation (`${oc.env:KEY,${oc.env:OTHER}}`) only as a KeyError deep in its message. This walks the
interpolations with their nesting: VAR is needed when it has no default; a default is looked into only
when VAR is unset; other resolvers (`${oc.decode:${oc.env:T}}`) are looked into as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

ENV = "oc.env:"


def missing(value: object, environ: Mapping[str, str]) -> set[str]:
    """The unset variables that the interpolations anywhere in a yaml value need."""
    if isinstance(value, str):
        return _missing_in(value, environ)
    if isinstance(value, Mapping):
        return set().union(*(missing(item, environ) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(missing(item, environ) for item in value))
    return set()


def names(text: str) -> set[str]:
    """Every variable a string's interpolations name, defaults included."""
    found: set[str] = set()
    for inner in interpolations(text):
        if inner.startswith(ENV):
            name, _, default = _split_first(inner[len(ENV) :])
            found |= {name.strip()} | names(default)
        else:
            found |= names(inner)
    return found


def used(text: str, environ: Mapping[str, str]) -> bool:
    """Whether a string's value comes (in part) from the environment rather than only from its defaults."""
    return any(name in environ for name in names(text))


def _missing_in(text: str, environ: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    for inner in interpolations(text):
        if not inner.startswith(ENV):
            found |= _missing_in(inner, environ)
            continue
        name, comma, default = _split_first(inner[len(ENV) :])
        if name.strip() in environ:
            continue
        found |= _missing_in(default, environ) if comma else {name.strip()}
    return found


def interpolations(text: str) -> Iterator[str]:
    """The insides of the outermost `${...}` in a string, nested braces kept whole."""
    depth, start, index = 0, 0, 0
    while index < len(text):
        if text.startswith("${", index):
            if depth == 0:
                start = index + 2
            depth += 1
            index += 2
            continue
        if text[index] == "}" and depth:
            depth -= 1
            if depth == 0:
                yield text[start:index]
        index += 1


def _split_first(inner: str) -> tuple[str, str, str]:
    """`NAME,DEFAULT` split at the first comma outside nested interpolations."""
    depth = 0
    for index, char in enumerate(inner):
        if inner.startswith("${", index):
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == "," and depth == 0:
            return inner[:index], ",", inner[index + 1 :]
    return inner, "", ""
