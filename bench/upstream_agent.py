"""Upstream MiroFlow's single-task path on miroctl's ToolManager, its LLM a scripted one on 127.0.0.1.

    python bench/upstream_agent.py CHECKOUT [--server-python PY] [--config agent_quickstart_reading]

CHECKOUT is a MiroFlow checkout (never part of miroctl). Run this with an interpreter that has miroctl and
MiroFlow's requirements (its mcp is then miroctl's 2.x); `--server-python` (or MIROCTL_PYTHON) is an
interpreter whose environment has MiroFlow's own requirements with mcp 1.x, which its servers need
(`mcp.server.fastmcp`, `fastmcp` 2.x): upstream turns `tool_command: python` into the agent's own interpreter,
and miroctl's ToolManager replaces that with this one.

What it does, as `main.py trace --config_file_name=agent_quickstart_reading --task=... --task_file_name=...`
does: upstream's `utils.trace_single_task.main`, with `src.core.pipeline`'s ToolManager switched to miroctl's
(the one changed import) and the LLM client's base URL pointed at a scripted OpenAI-compatible server. That
server answers the first turn with MiroFlow's `<use_mcp_tool>` text calling `tool-reading`'s `read_file` on
the task's file (and once more by a wrong server name, which the seeds' ToolManager corrects with a note),
then, from the tool result it is sent, the first country whose name starts with "Co" as
`\\boxed{...}`. It prints what the LLM saw and answered; exit 0 when the answer is the one in upstream's README.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from miroctl import ToolManager

TASK = "What is the first country listed in the XLSX file that have names starting with Co?"
TASK_FILE = "data/FSI-2023-DOWNLOAD.xlsx"
EXPECTED = "Congo Democratic Republic"  # upstream README's expected output
TOOL_CALL = """<use_mcp_tool>
<server_name>{server}</server_name>
<tool_name>read_file</tool_name>
<arguments>
{arguments}
</arguments>
</use_mcp_tool>"""
CORRECTED = "[Auto-corrected: Server 'reading' not found"  # the seeds' note, for the call to a misnamed server


class ScriptedLLM:
    """chat.completions answers: a read_file call first, then the answer taken from the tool result."""

    def __init__(self, task_file: str) -> None:
        self.task_file = task_file
        self.requests: list[dict[str, Any]] = []
        self.answers: list[str] = []
        self.tool_result = ""

    def answer(self, request: dict[str, Any]) -> str:
        self.requests.append(request)
        messages = request.get("messages", [])
        if not any(m.get("role") == "assistant" for m in messages):
            arguments = json.dumps({"uri": self.task_file})
            calls = [TOOL_CALL.format(server=server, arguments=arguments) for server in ("tool-reading", "reading")]
            text = "I will read the file first (twice: once by a wrong server name).\n\n" + "\n\n".join(calls)
        else:
            self.tool_result = self.tool_result or _last_user_text(messages)
            found = [name for name in _first_column(self.tool_result) if name.startswith("Co")]
            country = found[0] if found else "no country starting with Co in the tool result"
            text = f"The first such country in the file is {country}.\n\n\\boxed{{{country}}}"
        self.answers.append(text)
        return text

    def system_prompt(self) -> str:
        first = self.requests[0]["messages"] if self.requests else []
        return "\n".join(_text(m.get("content")) for m in first if m.get("role") == "system")


def _first_column(markdown: str) -> list[str]:
    """The first cell of every row of the markdown tables in `markdown`, header rows left out."""
    cells: list[str] = []
    header = True
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = True  # the next table starts with its header
            continue
        cell = line.split("|")[1].strip()
        if re.fullmatch(r":?-+:?", cell):
            header = False
        elif not header:
            cells.append(cell)
    return cells


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def serve_llm(llm: ScriptedLLM) -> ThreadingHTTPServer:
    """The scripted LLM on 127.0.0.1 (a free port), answering POST .../chat/completions as OpenAI does."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            text = llm.answer(body)
            self._send(200, _completion(body.get("model", "scripted"), text))

        def _send(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the driver prints what matters
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def stand_in_for_uv(server_python: str) -> None:
    """Upstream's reading server starts markitdown-mcp as `uv run --active -- markitdown-mcp`: where uv is not
    installed, a stand-in runs the command after `--`, found beside the servers' interpreter."""
    if shutil.which("uv"):
        return
    bin_dir = Path(tempfile.mkdtemp(prefix="uv-stand-in-"))
    script = bin_dir / "uv"
    script.write_text('#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$@"\n')
    script.chmod(0o755)
    servers_bin = str(Path(server_python).parent)
    os.environ["PATH"] = os.pathsep.join([str(bin_dir), os.environ.get("PATH", ""), servers_bin])


def run_upstream(checkout: Path, config: str, base_url: str, logs: str) -> None:
    """Upstream's `main.py trace`, with its pipeline's ToolManager import switched to miroctl's."""
    os.chdir(checkout)
    sys.path.insert(0, str(checkout))
    os.environ.update({"OPENROUTER_BASE_URL": base_url, "OPENROUTER_API_KEY": "scripted", "LOGGER_LEVEL": "INFO"})
    # upstream's code, found only once CHECKOUT is on the path
    import src.core.pipeline as pipeline
    import utils.trace_single_task as trace

    pipeline.ToolManager = ToolManager  # the one changed import: `from src.tool.manager import ToolManager`
    trace.main(f"output_dir={logs}", task=TASK, task_file_name=TASK_FILE, config_file_name=config)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path, help="a MiroFlow checkout")
    parser.add_argument("--server-python", help="the interpreter of MiroFlow's servers (else $MIROCTL_PYTHON)")
    parser.add_argument("--config", default="agent_quickstart_reading", help="upstream's agent config")
    parser.add_argument("--transcript", type=Path, help="write every request the LLM got, and its answers, here")
    options = parser.parse_args()
    if options.server_python:
        os.environ["MIROCTL_PYTHON"] = options.server_python
    stand_in_for_uv(os.environ.get("MIROCTL_PYTHON") or sys.executable)
    llm = ScriptedLLM(TASK_FILE)
    server = serve_llm(llm)
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    with tempfile.TemporaryDirectory(prefix="miroflow-logs-") as logs:
        started = time.perf_counter()
        run_upstream(options.checkout.resolve(), options.config, base_url, logs)
        seconds = time.perf_counter() - started
        server.shutdown()
        if options.transcript:
            transcript = {"requests": llm.requests, "answers": llm.answers}
            options.transcript.write_text(json.dumps(transcript, indent=1, default=str))
        return report(llm, seconds, Path(logs))


def report(llm: ScriptedLLM, seconds: float, logs: Path) -> int:
    listed = "read_file" in llm.system_prompt() and "tool-reading" in llm.system_prompt()
    answer = llm.answers[-1] if llm.answers else ""
    print(f"\n--- upstream MiroFlow on miroctl's ToolManager: {len(llm.requests)} LLM requests in {seconds:.1f} s")
    print(f"tool-reading's read_file in the system prompt: {listed}")
    print("tool result the LLM was sent (first lines):")
    for line in llm.tool_result.strip().splitlines()[:4]:
        print(f"  {line[:110]}")
    corrected = CORRECTED in llm.tool_result
    print(f"the call to the wrong server name came back corrected, with the seeds' note: {corrected}")
    print(f"final answer: {answer.splitlines()[-1] if answer else '(none)'}")
    boxed = []
    for log in sorted(logs.glob("*.log")):  # upstream's task log: one JSON document
        document = json.loads(log.read_text())
        boxed.append(document.get("final_boxed_answer"))
        print(f"upstream's task log: status={document.get('status')!r}, final_boxed_answer={boxed[-1]!r}")
    ok = listed and corrected and f"\\boxed{{{EXPECTED}}}" in answer and boxed == [EXPECTED]
    print("OK" if ok else f"FAILED: expected \\boxed{{{EXPECTED}}}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
