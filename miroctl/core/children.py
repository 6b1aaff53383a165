"""What a stdio server is started with: its spec, plus the task id, the URL rules and the run's markers.

Its own module because the console script computes it before anything heavy is loaded (cli/prestart.py),
and must compute exactly what the Manager will, or its early start is not adopted.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from miroctl.base.models import ServerSpec
from miroctl.config import nesting
from miroctl.config.loader import Config
from miroctl.policy import urls as urlrules
from miroctl.policy.decisions import Policy
from miroctl.sessions.processes import RUN_MARKER


def child_spec(
    spec: ServerSpec, config: Config, policy: Policy, *, task_id: str | None = None, run_id: str | None = None
) -> ServerSpec:
    """A stdio server's spec with the task id and the URL rules (for bundled search tools) in its env: what
    the Manager starts (and what an early start, cli/prestart.py, must match to be adopted)."""
    if spec.transport != "stdio":
        return spec
    env = dict(spec.env)
    if task_id:
        env["TASK_ID"] = task_id
    env.setdefault(urlrules.ENV_VAR, urlrules.to_env(policy.url_rules))
    if run_id:
        env[RUN_MARKER] = run_id
    env[nesting.NESTING_ENV] = nesting.for_servers(config.source, config.servers)
    return replace(spec, env=MappingProxyType(env))
