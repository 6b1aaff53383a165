"""Turning a server template (miroctl's settings with `${oc.env:VAR}` references) into a ServerSpec.

Every editor's dialect (ecosystem.py, codex.py) is translated into such a template first, so one resolver
applies the same rules to them all, and `config import` writes the very same template as a yaml file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from miroctl.base.errors import ConfigError
from miroctl.base.masking import could_be_secret, credentials
from miroctl.base.models import ServerSpec
from miroctl.config import envrefs
from miroctl.config.servers import server_from_mapping


def spec_from_template(
    template: Mapping[str, object], *, name: str, where: str, inputs: Mapping[str, str] | None = None
) -> ServerSpec:
    """Resolve a template into a spec; any problem becomes the spec's `error`. `inputs` maps the variables
    standing for VS Code's `${input:ID}` prompts to their ids, so a missing one reads as "needs input ID"."""
    try:
        resolved = resolve(template, where, inputs or {})
        secrets = interpolated_values(template, resolved)
        return server_from_mapping(resolved, where=where, name=name, secrets=secrets, own_python=False)
    except ConfigError as exc:
        return ServerSpec(name=name, error=exc.message, source=where)


def resolve(template: Mapping[str, object], where: str, inputs: Mapping[str, str]) -> dict[str, object]:
    """The template's values with every `${oc.env:...}` read from the environment (ConfigError naming what
    is missing, by name only). A template with no `${` at all is taken as it is: OmegaConf (~0.1 s to
    import) is not loaded for a plain mcpServers file."""
    if not _interpolates(template):
        return {str(k): _plain(v) for k, v in template.items()}
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    missing = sorted(envrefs.missing(template, os.environ))
    asked = [inputs[name] for name in missing if name in inputs]
    if asked:
        names = ", ".join(f"{i} (set ${var})" for var, i in inputs.items() if var in missing)
        raise ConfigError(f"{where}: needs input {names}")
    if missing:
        noun = "variable" if len(missing) == 1 else "variables"
        raise ConfigError(f"{where}: missing environment {noun} {', '.join(missing)}")
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(dict(template)), resolve=True)
    except OmegaConfBaseException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{where}: cannot resolve {getattr(exc, 'full_key', None) or 'a value'}: {first}") from None
    assert isinstance(resolved, dict)
    return {str(k): v for k, v in resolved.items()}


def _interpolates(value: object) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, Mapping):
        return any(_interpolates(k) or _interpolates(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_interpolates(item) for item in value)
    return False


def _plain(value: object) -> object:
    """A copy of a template value as OmegaConf.to_container gives it back (plain dicts and lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def interpolated_values(raw: object, resolved: object, key: str | None = None) -> set[str]:
    """Credentials among the values that came from the environment (by their key's name, or their shape).
    A value made only of the file's own defaults (`${oc.env:URL,'https://...'}` with URL unset) is not one."""
    found: set[str] = set()
    if isinstance(raw, str) and "${" in raw and isinstance(resolved, str) and could_be_secret(resolved, key):
        if envrefs.used(raw, os.environ) or not envrefs.names(raw):
            found |= credentials(resolved, key)
    elif isinstance(raw, Mapping) and isinstance(resolved, Mapping):
        for name, item in raw.items():
            found |= interpolated_values(item, resolved.get(name), str(name))
    elif isinstance(raw, list) and isinstance(resolved, list):
        previous: object = None  # in args, `--token ${oc.env:T}`: the flag names the value
        for item, res in zip(raw, resolved):
            flag = previous.lstrip("-") if isinstance(previous, str) and previous.startswith("-") else key
            found |= interpolated_values(item, res, flag)
            previous = res
    return found
