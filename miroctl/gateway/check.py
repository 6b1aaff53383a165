"""POST /v1/check: fresh phased probes of the served servers, as `miroctl check` would make them.

The probes run on a Manager of their own, built from the gateway's config and policy, whose stdio
servers carry a marker of their own: probing stops each probed server and sweeps that Manager's
escaped orphans, and neither may touch the sessions the gateway keeps warm for its callers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from miroctl.base.errors import UsageError
from miroctl.base.models import ServerSpec
from miroctl.base.text import suggest
from miroctl.check import lockfile
from miroctl.check.probe import probe_all, warm_up
from miroctl.check.report import CheckRun
from miroctl.core.bodies import Body
from miroctl.core.manager import Manager
from miroctl.gateway.api import served
from miroctl.gateway.server import Gateway
from miroctl.sessions.processes import sub_run_id

CHECK_KEYS = {"servers", "timeout", "concurrency", "smoke", "allow_fail", "surface"}


@dataclass(frozen=True)
class CheckRequest:
    """One check as a caller asked for it, its names resolved to served servers."""

    specs: list[ServerSpec]
    timeout: float | None
    concurrency: int
    smoke: bool = False
    allow_fail: tuple[str, ...] = ()
    surface: bool = False  # also answer each healthy server's tool surface, for the caller's lock file


def check_request(data: object, gateway: Gateway) -> CheckRequest:
    """A CheckRequest from {servers, timeout, concurrency, smoke, allow_fail, surface}; UsageError if it is wrong."""
    body = Body({} if data is None else data, CHECK_KEYS, "the check")
    named = [served(name, gateway) for name in body.strings("servers")] or gateway.specs
    specs = list({spec.name: spec for spec in named}.values())
    if not specs:
        raise UsageError(
            f"no servers to check in {gateway.manager.config.source}", hint="name some, or add server files"
        )
    return CheckRequest(
        specs,
        body.seconds("timeout"),
        body.whole("concurrency", 1) or gateway.manager.config.profile.concurrency,
        smoke=body.flag("smoke", False),
        allow_fail=_allowed(body.strings("allow_fail"), specs, gateway),
        surface=body.flag("surface", False),
    )


def _allowed(names: list[str], specs: list[ServerSpec], gateway: Gateway) -> tuple[str, ...]:
    """allow_fail names as the checked servers' names; the same error as `check --allow-fail` for others."""
    selected = [spec.name for spec in specs]
    allowed = []
    for name in names:
        spec = gateway.manager.config.get(name)
        if spec is None or spec.name not in selected:
            raise UsageError(f"--allow-fail {name}: no such server among those checked", hint=suggest(name, selected))
        allowed.append(spec.name)
    return tuple(allowed)


def probe_manager(gateway: Gateway) -> Manager:
    """A Manager with the gateway's config, policy, task id and log, its servers apart from the served ones."""
    served = gateway.manager
    return Manager(
        served.config,
        policy=served.policy,
        log_path=served.log_path,
        task_id=served.task_id,
        run_id=sub_run_id("check"),
    )


async def run_check(request: CheckRequest, gateway: Gateway) -> CheckRun:
    """Probe every requested server afresh, exactly as a direct `check` does, with the gateway's policy."""
    warm_up(request.specs)
    started = time.perf_counter()
    async with probe_manager(gateway) as manager:
        reports = await probe_all(
            manager, request.specs, timeout=request.timeout, concurrency=request.concurrency, smoke=request.smoke
        )
    run = CheckRun(
        reports,
        gateway.manager.config.source,
        duration_ms=(time.perf_counter() - started) * 1000,
        concurrency=request.concurrency,
        timeout=request.timeout,
        smoke=request.smoke,
    )
    run.allow(request.allow_fail)
    return run


async def check_document(body: object, gateway: Gateway) -> dict[str, object]:
    """The document of `check --json` (with allow_fail applied), plus `surface` when asked for; masked."""
    request = check_request(body, gateway)
    run = await run_check(request, gateway)
    document = run.to_dict()
    if request.surface:
        document["surface"] = lockfile.surface(run.reports)
    return gateway.masker.data(document)
