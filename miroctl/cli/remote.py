"""`call`, `list`, `read`, `prompt` and `call --batch` through a running gateway (--via URL or $MIROCTL_URL).

No Typer, no mcp SDK, no OmegaConf: the console entry answers these before loading the full command
line, and the Typer commands call the same functions for their own --via handling. Errors are raised
to the boundary like everywhere else.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import BinaryIO

from miroctl.base.errors import UsageError
from miroctl.core import toolcache
from miroctl.core.arguments import load_base
from miroctl.core.batch import pieces_of
from miroctl.remote import URL_ENV, GatewayClient, fetched_from_dict, list_from_dict, outcome_from_dict, readable
from miroctl.render import blobs
from miroctl.render.output import Output
from miroctl.render.results import call_result, fetched_result


def resolve_via(via: str | None, named_servers: bool) -> str | None:
    """The gateway to go through: --via, else $MIROCTL_URL unless servers were named another way."""
    if via and named_servers:
        raise UsageError(
            "--via goes through a gateway, which has its own servers", hint="drop --config/--stdio/--url, or drop --via"
        )
    if via or named_servers:
        return via
    return os.environ.get(URL_ENV) or None


def call(
    via: str,
    target: list[str],
    *,
    out: Output,
    args: str | None = None,
    timeout: float | None = None,
    no_autocorrect: bool = False,
    save_dir: str | None = None,
    task_id: str | None = None,
) -> int:
    """`miroctl call ... --via URL`: the gateway's envelope, printed as the direct path would; the exit code.
    The task id (--task-id, else $TASK_ID) goes with the call: the gateway gives it to the server as TASK_ID."""
    if not target:
        raise UsageError("call needs a tool: miroctl call SERVER TOOL [key=value ...]")
    blobs.check_dir(save_dir)
    body: dict[str, object] = {
        "target": target,
        "arguments": load_base(args),
        "timeout": timeout,
        "autocorrect": not no_autocorrect,
    }
    task = task_id or os.environ.get("TASK_ID")
    if task:
        body["task_id"] = task
    envelope = GatewayClient(via, timeout=timeout).call(body)
    outcome = readable(via, lambda: outcome_from_dict(envelope))
    if out.json_mode:
        out.json(envelope)
    else:
        call_result(out, outcome, blobs.save(outcome.content, outcome.tool_name, save_dir) if outcome.ok else None)
    if outcome.server_name and (outcome.ok or outcome.error_kind == "tool_error"):  # the tool exists
        toolcache.note_gateway_tool(via, outcome.server_name, outcome.tool_name)
    return int(outcome.exit_code)


def list_servers(via: str, servers: list[str], *, out: Output, schema: bool = False, brief: bool = False) -> int:
    """`miroctl list ... --via URL`: the gateway's list document, as `list` prints it; the exit code."""
    document = GatewayClient(via).list_tools(servers)
    entries = readable(via, lambda: list_from_dict(document))
    one_tool = bool(servers) and [entry.server for entry in entries] != servers  # the words named a tool
    if out.json_mode:
        out.json(document)
    else:
        from miroctl.render.listing import View, list_tables  # noqa: PLC0415 - Rich's tables only when a list is drawn

        list_tables(out, entries, View(schema=schema or one_tool, brief=brief, connection=("--via", via)))
    if not one_tool:  # for shell completion, as `list` does directly
        listed = {entry.server: entry.tools for entry in entries if entry.ok}
        toolcache.store_gateway(via, listed, every=not servers)
    return 0 if all(entry.healthy for entry in entries) else 1


def batch(via: str, source: BinaryIO, *, out: Output, jobs: int, timeout: float | None, no_autocorrect: bool) -> int:
    """`miroctl call --batch FILE --via URL`: the gateway's envelopes, one JSON line each, printed as they
    come; the exit code. The file is sent as it is read, never held whole."""
    failed = False
    for document in GatewayClient(via, timeout=timeout).batch(pieces_of(source), jobs, timeout, no_autocorrect):
        out.json(document)
        failed = failed or document.get("exit_code") != 0
    return 1 if failed else 0


def read(via: str, target: list[str], *, out: Output, timeout: float | None = None, save_dir: str | None = None) -> int:
    """`miroctl read [SERVER] URI --via URL`: the gateway's envelope, printed as the direct path would."""
    if not 1 <= len(target) <= 2:
        raise UsageError("read takes SERVER and URI (SERVER may be left out when there is only one)")
    return _fetched(via, "read", {"target": target, "timeout": timeout}, out, timeout, save_dir)


def prompt(
    via: str, words: list[str], *, out: Output, timeout: float | None = None, save_dir: str | None = None
) -> int:
    """`miroctl prompt [SERVER] NAME [k=v ...] --via URL`: the gateway's envelope, printed as directly."""
    if not words:
        raise UsageError("prompt takes SERVER and NAME, then key=value pairs")
    return _fetched(via, "prompt", {"words": words, "timeout": timeout}, out, timeout, save_dir)


def _fetched(
    via: str, command: str, body: dict[str, object], out: Output, timeout: float | None, save_dir: str | None
) -> int:
    blobs.check_dir(save_dir)
    client = GatewayClient(via, timeout=timeout)
    envelope = client.read(body) if command == "read" else client.prompt(body)
    fetched = readable(via, lambda: fetched_from_dict(envelope))
    if out.json_mode:
        out.json(envelope)
    else:
        stem = PurePosixPath(fetched.name).stem or fetched.what
        fetched_result(out, fetched, blobs.save(fetched.blocks(), stem, save_dir) if fetched.ok else None)
    return int(fetched.exit_code)
