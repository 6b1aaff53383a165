"""reasoning: ask a strong model to think a hard question through (the seeds' reasoning server).

Backends: Anthropic's Messages API with extended thinking (ANTHROPIC_API_KEY), or any
OpenAI-compatible chat endpoint (OPENAI_API_KEY and/or OPENAI_BASE_URL: OpenAI, vLLM, OpenRouter, a
local server). REASONING_BACKEND picks one (auto: Anthropic when its key is set). Models:
REASONING_ANTHROPIC_MODEL, REASONING_OPENAI_MODEL; REASONING_MAX_TOKENS and REASONING_THINKING_BUDGET
bound the answer and the thinking (a budget of 0: adaptive thinking, the model decides). Client
settings as in helpers/models.py.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from miroctl.base.version import __version__

from .helpers import models
from .helpers.common import number_setting, result, setting

mcp = MCPServer("reasoning", version=__version__, log_level="WARNING")

ANTHROPIC_MODEL = "claude-sonnet-4-6"
OPENAI_MODEL = "o3"
MAX_QUESTION_CHARS = 200_000
ASKS_MODEL = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True)


@mcp.tool(annotations=ASKS_MODEL)
async def reasoning(question: str) -> CallToolResult:
    """Ask a strong reasoning model to think a hard problem through, step by step, and answer it.

    Use it for complex math, puzzles, riddles, logic, planning, and for integrating and weighing
    facts already collected; not for simple questions, and not for anything that needs the
    internet, files, code or images (the model sees only the text of `question`). Put every fact
    the model needs into `question`. Returns the model's answer (or, when the model gave only its
    thinking, that thinking, marked as such) and which model answered.
    """
    question = question.strip()
    if not question:
        raise ToolError("question is empty: write out the problem and every fact needed to solve it")
    if len(question) > MAX_QUESTION_CHARS:
        raise ToolError(f"question is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
    backend = _backend()
    if backend.api == "Anthropic":
        answer, thinking, model, usage = await _ask_anthropic(backend, question)
    else:
        answer, thinking, model, usage = await _ask_openai(backend, question)
    return _report(answer, thinking, model, backend, usage)


def _backend() -> models.Endpoint:
    choice = (setting("REASONING_BACKEND") or "auto").lower()
    if choice not in ("auto", "anthropic", "openai"):
        raise ToolError(f"REASONING_BACKEND must be auto, anthropic or openai, got {choice!r}")
    anthropic = models.anthropic_endpoint() if choice in ("auto", "anthropic") else None
    openai = models.openai_endpoint("REASONING") if choice in ("auto", "openai") else None
    chosen = anthropic or openai
    if chosen is None:
        wanted = {
            "anthropic": "set ANTHROPIC_API_KEY",
            "openai": "set OPENAI_API_KEY, and OPENAI_BASE_URL for a server other than OpenAI's",
        }.get(choice, "set ANTHROPIC_API_KEY (Anthropic) or OPENAI_API_KEY / OPENAI_BASE_URL (OpenAI-compatible)")
        raise ToolError(f"no reasoning model is configured: {wanted} in the server's environment")
    return chosen


async def _ask_anthropic(endpoint: models.Endpoint, question: str) -> tuple[str, str, str, dict[str, Any]]:
    model = setting("REASONING_ANTHROPIC_MODEL") or ANTHROPIC_MODEL
    max_tokens = int(number_setting("REASONING_MAX_TOKENS", 21000, minimum=1024))
    budget = int(number_setting("REASONING_THINKING_BUDGET", 19000, minimum=0))
    if budget and not 1024 <= budget < max_tokens:
        raise ToolError("REASONING_THINKING_BUDGET must be 0 (adaptive) or from 1024 to below REASONING_MAX_TOKENS")
    # Newer models decide how much to think themselves ("adaptive"); a budget asks for manual extended thinking.
    settings: dict[str, Any] = {"type": "enabled", "budget_tokens": budget} if budget else {"type": "adaptive"}
    try:
        async with models.anthropic_client(endpoint) as client:
            response = await client.messages.create(
                model=model,
                max_tokens=max_tokens,
                thinking=settings,
                messages=[{"role": "user", "content": [{"type": "text", "text": question}]}],
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    blocks = getattr(response, "content", None)
    if not isinstance(blocks, list):
        raise ToolError(f"{endpoint.where} sent a malformed response: it has no content blocks")
    answer = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text")
    thinking = "".join(getattr(b, "thinking", "") or "" for b in blocks if getattr(b, "type", "") == "thinking")
    usage = _usage(getattr(response, "usage", None), ("input_tokens", "output_tokens"))
    return answer, thinking, str(getattr(response, "model", None) or model), usage


async def _ask_openai(endpoint: models.Endpoint, question: str) -> tuple[str, str, str, dict[str, Any]]:
    model = setting("REASONING_OPENAI_MODEL") or OPENAI_MODEL
    try:
        async with models.openai_client(endpoint) as client:
            response = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": question}]
            )
    except Exception as exc:  # noqa: BLE001 - the SDK's errors, each explained by models.failure
        raise models.failure(exc, endpoint) from None
    answer = models.chat_text(response, endpoint)
    message = response.choices[0].message
    # vLLM and DeepSeek call the thinking reasoning_content; OpenRouter calls it reasoning.
    extra = getattr(message, "model_extra", None) or {}
    thinking = str(extra.get("reasoning_content") or extra.get("reasoning") or "")
    usage = _usage(getattr(response, "usage", None), ("prompt_tokens", "completion_tokens"))
    return answer, thinking, str(getattr(response, "model", None) or model), usage


def _usage(usage: Any, fields: tuple[str, str]) -> dict[str, Any]:
    if usage is None:
        return {}
    return {"input_tokens": getattr(usage, fields[0], None), "output_tokens": getattr(usage, fields[1], None)}


def _report(answer: str, thinking: str, model: str, endpoint: models.Endpoint, usage: dict[str, Any]) -> CallToolResult:
    data = {"model": model, "api": endpoint.api, "answer": answer, "thinking_only": False, "usage": usage}
    if answer.strip():
        return result(answer.strip(), data)
    if thinking.strip():
        data["thinking_only"] = True
        text = f"(the model gave no final answer; this is its thinking)\n\n{thinking.strip()}"
        return result(text, data)
    raise ToolError(f"{endpoint.where} returned an empty answer (model {model}): ask again, or rephrase the question")


if __name__ == "__main__":
    mcp.run("stdio")
