"""A real third-party MCP server from PyPI (markitdown-mcp), over stdio, streamable HTTP and SSE."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.conftest import parse_json, serve_on_a_free_port


def markitdown_mcp() -> str:
    found = shutil.which("markitdown-mcp") or str(Path(sys.executable).parent / "markitdown-mcp")
    assert Path(found).exists(), "markitdown-mcp is a test dependency: pip install -e '.[test]'"
    return found


@pytest.fixture
def page(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("<html><body><h1>Quarterly report</h1><p>Revenue <b>grew</b>.</p></body></html>")
    return path


def test_call_converts_a_file_with_markitdown_mcp_over_stdio(page):
    result = CliRunner().invoke(
        app, ["call", "--stdio", markitdown_mcp(), "convert_to_markdown", f"uri={page.as_uri()}", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    envelope = parse_json(result.stdout)
    assert envelope["server_name"] == "markitdown-mcp"
    assert "# Quarterly report" in envelope["result"] and "**grew**" in envelope["result"]


@pytest.fixture
def markitdown_http():
    proc, port = serve_on_a_free_port(
        lambda port: [markitdown_mcp(), "--http", "--port", str(port)],
        timeout=120,  # markitdown's imports are heavy on a busy machine
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_list_and_call_markitdown_mcp_over_both_http_transports(markitdown_http, page):
    # One server serves both endpoints and keeps nothing between requests: its start (markitdown's heavy
    # imports) is most of what this costs, so both transports share it.
    for path, transport in (("/mcp", "streamable_http"), ("/sse", "sse")):
        url = markitdown_http + path
        listed = CliRunner().invoke(app, ["list", "--url", url, "--json"])
        assert listed.exit_code == 0, listed.stdout
        server = parse_json(listed.stdout)["servers"][0]
        assert server["transport"] == transport
        assert [t["name"] for t in server["tools"]] == ["convert_to_markdown"]
        called = CliRunner().invoke(app, ["call", "--url", url, "convert_to_markdown", f"uri={page.as_uri()}"])
        assert called.exit_code == 0, called.stderr
        assert "# Quarterly report" in called.stdout, transport
