"""`call`, `read` and `prompt`: a result on stdout, notes and errors on stderr, saved files named."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from miroctl.base.models import CallOutcome
from miroctl.base.text import correction_note
from miroctl.render.blobs import Saved
from miroctl.render.output import Output

if TYPE_CHECKING:  # the type only: a call through a gateway must not load the session machinery
    from miroctl.core.catalog import Fetched


def call_result(out: Output, outcome: CallOutcome, saved: Saved | None = None) -> None:
    """A call's outcome for humans: the result on stdout, notes and errors on stderr."""
    if outcome.corrected_from is not None:  # on stderr only: stdout has the result without it
        used = outcome.server_name or ""
        out.note(outcome.correction or correction_note(outcome.corrected_from, outcome.tool_name, used))
    for note in outcome.notes:
        out.note(note)
    policy_notes(out, outcome)
    if outcome.ok:
        body = _pretty(outcome) if outcome.output is None else ""
        if body:
            out.text(body)
        resource_lines(out, outcome.content)
    else:
        tail = outcome.failure.stderr_tail if outcome.failure else ()
        out.error(outcome.error or "", outcome.hint, tail, label=outcome.error_kind or "error")
        if outcome.fallback is not None and not outcome.fallback.ok:
            out.note(f"the MarkItDown fallback failed too: {outcome.fallback.error}")
    saved_notes(out, saved)


def fetched_result(out: Output, fetched: Fetched, saved: Saved | None = None) -> None:
    """A resource's text contents, or a prompt's messages role by role; errors on stderr."""
    if not fetched.ok:
        tail = fetched.failure.stderr_tail if fetched.failure else ()
        out.error(fetched.error or "", fetched.hint, tail, label=fetched.error_kind or "error")
        return
    if fetched.what == "prompt" and fetched.description:
        out.note(fetched.description, style="dim")
    for item in fetched.content:
        block = item if fetched.what == "resource" else _object(item.get("content"))
        if fetched.what == "prompt":
            out.text(f"[{item.get('role', '')}]")
        text = block.get("text") if "text" in block else _object(block.get("resource")).get("text")
        if isinstance(text, str):
            out.text(text)
    saved_notes(out, saved)


def resource_lines(out: Output, content: Sequence[Mapping[str, Any]]) -> None:
    """Resource links and embedded resources of a result, one line each after its text: what and where."""
    for block in content:
        if block.get("type") == "resource_link":
            title = block.get("title") or block.get("name") or ""
            out.text(f"[resource link] {title}: {block.get('uri', '')}{_kind(block)}")
        elif block.get("type") == "resource" and isinstance(block.get("resource"), Mapping):
            resource = block["resource"]
            shown = " (its text is above)" if isinstance(resource.get("text"), str) else ""
            out.text(f"[resource] {resource.get('uri', '')}{_kind(resource)}{shown}")


def _kind(block: Mapping[str, Any]) -> str:
    return f" ({block['mimeType']})" if block.get("mimeType") else ""


def _object(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def saved_notes(out: Output, saved: Saved | None) -> None:
    """Where the binary parts of a result were saved, and the parts that could not be."""
    for path in saved.paths if saved else ():
        out.note(f"saved: {path}", style="green")
    for problem in saved.problems if saved else ():
        out.note(problem)


def policy_notes(out: Output, outcome: CallOutcome) -> None:
    """What the policy layer did to a call: fallback, cut, whole result written to a file."""
    fallback = outcome.fallback
    if fallback is not None and fallback.ok:
        out.note(
            f"{outcome.tool_name} failed ({fallback.original_error}); "
            f"this is {fallback.url} converted locally by MarkItDown"
        )
    cut = outcome.truncated
    if cut is not None:
        out.note(
            f"result cut to {cut.kept_chars} of {cut.original_chars} characters (max_result_chars); "
            "--output FILE writes all of it"
        )
    written = outcome.output
    if written is not None and written.error:
        out.note(f"{written.error}; the whole result ({written.chars} characters) is in {written.path}")
    elif written is not None:
        out.note(f"wrote the whole result ({written.chars} characters) to {written.path}", style="green")


def _pretty(outcome: CallOutcome) -> str:
    """The result's text exactly as the server sent it (a script sees the same bytes as with --json); only
    structured content without any text is drawn here, as indented JSON."""
    text = outcome.result or ""
    if outcome.correction:  # shown on stderr
        text = text.removeprefix(f"{outcome.correction} ")
    if outcome.structured_content is not None and not text.strip():
        return json.dumps(outcome.structured_content, indent=2, ensure_ascii=False)
    return text
