"""`call`, `read` and `prompt`: a result on stdout, notes and errors on stderr, saved files named."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from miroctl.base.models import CallOutcome
from miroctl.render.output import Output

if TYPE_CHECKING:  # the type only: a call through a gateway must not load the session machinery
    from miroctl.core.catalog import Fetched


def call_result(out: Output, outcome: CallOutcome, saved: Sequence[str] = ()) -> None:
    """A call's outcome for humans: the result on stdout, notes and errors on stderr."""
    if outcome.corrected_from is not None:
        given = f"Server '{outcome.corrected_from}' not found or without that tool"
        out.note(f"[Auto-corrected: {given}; used '{outcome.server_name}' instead]")
    for note in outcome.notes:
        out.note(note)
    policy_notes(out, outcome)
    if outcome.ok and outcome.output is None:
        body = _pretty(outcome)
        if body:
            out.text(body)
    else:
        tail = outcome.failure.stderr_tail if outcome.failure else ()
        out.error(outcome.error or "", outcome.hint, tail, label=outcome.error_kind or "error")
        if outcome.fallback and not outcome.fallback.get("ok"):
            out.note(f"the MarkItDown fallback failed too: {outcome.fallback['error']}")
    for path in saved:
        out.note(f"saved: {path}", style="green")


def fetched_result(out: Output, fetched: Fetched, saved: Sequence[str] = ()) -> None:
    """A resource's text contents, or a prompt's messages role by role; errors on stderr."""
    if not fetched.ok:
        tail = fetched.failure.stderr_tail if fetched.failure else ()
        out.error(fetched.error or "", fetched.hint, tail, label=fetched.error_kind or "error")
        return
    if fetched.what == "prompt" and fetched.description:
        out.note(fetched.description, style="dim")
    for item in fetched.content:
        block = item if fetched.what == "resource" else item.get("content") or {}
        if fetched.what == "prompt":
            out.text(f"[{item.get('role', '')}]")
        text = block.get("text") if "text" in block else (block.get("resource") or {}).get("text")
        if isinstance(text, str):
            out.text(text)
    for path in saved:
        out.note(f"saved: {path}", style="green")


def policy_notes(out: Output, outcome: CallOutcome) -> None:
    """What the policy layer did to a call: fallback, cut, whole result written to a file."""
    fallback = outcome.fallback
    if fallback and fallback.get("ok"):
        out.note(
            f"{outcome.tool_name} failed ({fallback['original_error']}); "
            f"this is {fallback['url']} converted locally by MarkItDown"
        )
    cut = outcome.truncated
    if cut:
        out.note(
            f"result cut to {cut['kept_chars']} of {cut['original_chars']} characters (max_result_chars); "
            "--output FILE writes all of it"
        )
    if outcome.output:
        out.note(
            f"wrote the whole result ({outcome.output['chars']} characters) to {outcome.output['path']}", style="green"
        )


def _pretty(outcome: CallOutcome) -> str:
    text = outcome.result or ""
    if outcome.structured_content is not None and not text.strip():
        return json.dumps(outcome.structured_content, indent=2, ensure_ascii=False)
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text
