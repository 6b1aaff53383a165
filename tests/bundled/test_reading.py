"""The reading server from config/tool/tool-reading.yaml: over stdio, and in-process where the process is not
the point (settings then come from this process's environment)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from tests.bundled.conftest import bundled_spec, cli_call, memory_spec, session
from tests.bundled.files import hide_module, minimal_pdf
from tests.bundled.web import serve
from tests.conftest import refused_port


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A reading root with a few documents, a subdirectory, and a secret file beside it."""
    base = tmp_path / "root"
    (base / "sub").mkdir(parents=True)
    (base / "notes.txt").write_text("plain notes\n")
    (base / "table.csv").write_text("name,count\nalpha,1\nbeta,2\n")
    (base / "data.json").write_text('{"answer": 42}\n')
    (base / "page.html").write_text("<html><body><h1>Title here</h1><ul><li>one</li></ul></body></html>")
    (tmp_path / "secret.txt").write_text("do not read\n")
    (base / "link.txt").symlink_to(tmp_path / "secret.txt")
    return base


def test_read_file_converts_text_csv_json_and_html_to_markdown(root: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(root))
    spec = memory_spec("reading")
    got = session(
        spec,
        ("read_file", {"uri": "notes.txt"}),
        ("read_file", {"uri": "table.csv"}),
        ("read_file", {"uri": str(root / "data.json")}),
        ("read_file", {"uri": (root / "page.html").as_uri()}),
    )
    assert [o.exit_code for o in got.outcomes] == [0, 0, 0, 0], [o.error for o in got.outcomes]
    assert got[0].result.strip() == "plain notes"
    assert "| name | count |" in got[1].result and "| beta | 2 |" in got[1].result
    assert '"answer": 42' in got[2].result
    assert "# Title here" in got[3].result and "* one" in got[3].result


def test_paths_outside_the_root_are_refused_including_symlinks_and_dotdot(root: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(root))
    spec = memory_spec("reading")
    refused = ["../secret.txt", "link.txt", str(root.parent / "secret.txt"), "/etc/passwd", "sub/../../secret.txt"]
    got = session(spec, *[("read_file", {"uri": uri}) for uri in refused], ("read_file", {"uri": "notes.txt"}))
    for outcome in got.outcomes[:-1]:
        assert outcome.error_kind == "tool_error" and outcome.exit_code == 1
        assert "outside READING_ROOT" in outcome.error
        assert "do not read" not in outcome.error
    assert got[-1].result.strip() == "plain notes" and got.starts == 1


def test_missing_files_directories_and_odd_uris_are_clear_tool_errors(root: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(root))
    spec = memory_spec("reading")
    got = session(
        spec,
        ("read_file", {"uri": "missing.txt"}),
        ("read_file", {"uri": "sub"}),
        ("read_file", {"uri": "ftp://example.org/file"}),
        ("read_file", {"uri": "  "}),
        ("read_file", {"uri": "notes.txt"}),
    )
    assert [o.error_kind for o in got.outcomes[:4]] == ["tool_error"] * 4
    assert "no such file: missing.txt" in got[0].error
    assert "is a directory" in got[1].error
    assert "unsupported URI scheme 'ftp'" in got[2].error
    assert "uri is empty" in got[3].error
    assert got[4].ok and got.starts == 1


def test_urls_are_fetched_and_http_failures_are_reported(monkeypatch):
    monkeypatch.setenv("READING_HTTP_TIMEOUT", "10")
    spec = memory_spec("reading")
    with serve() as base:
        got = session(
            spec,
            ("read_file", {"uri": f"{base}/"}),
            ("read_file", {"uri": f"{base}/data.csv"}),
            ("read_file", {"uri": f"{base}/missing"}),
            ("read_file", {"uri": f"http://127.0.0.1:{refused_port()}/"}),
            ("read_file", {"uri": "http://nonexistent.invalid/"}),
        )
    assert "# Hello page" in got[0].result and "[link](/next)" in got[0].result
    assert "| alpha | 1 |" in got[1].result
    assert got[2].error_kind == "tool_error" and "answered HTTP 404" in got[2].error
    assert got[3].error_kind == "tool_error" and "Connection refused" in got[3].error
    assert got[4].error_kind == "tool_error" and "cannot reach http://nonexistent.invalid/" in got[4].error


def test_convert_to_markdown_reads_file_uris_urls_and_data_uris(root: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(root))
    html = base64.b64encode(b"<html><body><h1>From data</h1><p>para</p></body></html>").decode()
    with serve() as base:
        got = session(
            memory_spec("reading"),
            ("convert_to_markdown", {"uri": (root / "table.csv").as_uri()}),
            ("convert_to_markdown", {"uri": f"{base}/"}),
            ("convert_to_markdown", {"uri": f"data:text/html;base64,{html}"}),
            ("convert_to_markdown", {"uri": "data:text/csv,name%2Ccount%0Aalpha%2C1%0A"}),
            ("convert_to_markdown", {"uri": "data:,plain%20words"}),
        )
    assert all(outcome.ok for outcome in got.outcomes), [o.error for o in got.outcomes]
    assert "| alpha | 1 |" in got[0].result
    assert "# Hello page" in got[1].result
    assert "# From data" in got[2].result and "para" in got[2].result
    assert "| alpha | 1 |" in got[3].result
    assert got[4].result.strip() == "plain words"


def test_convert_to_markdown_keeps_read_files_rules_and_caps_data_uris(root: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(root))
    monkeypatch.setenv("READING_MAX_BYTES", "1000")
    (root / "big.txt").write_text("x" * 5000)
    got = session(
        memory_spec("reading"),
        ("convert_to_markdown", {"uri": (root / "link.txt").as_uri()}),
        ("convert_to_markdown", {"uri": (root / "big.txt").as_uri()}),
        ("convert_to_markdown", {"uri": "data:text/plain;base64," + base64.b64encode(b"x" * 5000).decode()}),
        ("convert_to_markdown", {"uri": "data:text/plain;base64,not*base64"}),
        ("convert_to_markdown", {"uri": "data:text/plain"}),
        ("convert_to_markdown", {"uri": "ftp://example.org/file"}),
        ("read_file", {"uri": "data:,hello"}),
    )
    assert [o.error_kind for o in got.outcomes] == ["tool_error"] * 7
    assert "outside READING_ROOT" in got[0].error
    assert "over the" in got[1].error and "READING_MAX_BYTES" in got[1].error
    assert "the data: URI holds" in got[2].error and "READING_MAX_BYTES" in got[2].error
    assert "not valid base64" in got[3].error
    assert "has no comma" in got[4].error
    assert "unsupported URI scheme 'ftp'" in got[5].error and "data: URI" in got[5].error
    assert "unsupported URI scheme 'data'" in got[6].error  # read_file itself is unchanged


@pytest.mark.process  # the extra is hidden from a fresh interpreter: this one may have imported it already
def test_a_pdf_converts_and_a_missing_extra_is_named_in_the_error(root: Path, tmp_path: Path, monkeypatch):
    minimal_pdf(root / "doc.pdf", "Hello PDF")
    monkeypatch.setenv("READING_ROOT", str(root))
    with_extra = session(memory_spec("reading"), ("read_file", {"uri": "doc.pdf"}))
    hidden = hide_module(tmp_path / "shadow", "pdfminer")
    without = bundled_spec("reading", {"READING_ROOT": str(root), "PYTHONPATH": hidden})
    got = session(without, ("read_file", {"uri": "doc.pdf"}), ("read_file", {"uri": "notes.txt"}))
    assert with_extra[0].result.strip() == "Hello PDF"
    assert got[0].error_kind == "tool_error"
    assert "optional 'pdf' extra is not installed (pip install 'markitdown[pdf]')" in got[0].error
    assert got[1].ok and got.starts == 1


@pytest.mark.process  # the extra is hidden from a fresh interpreter: this one has imported it already
def test_without_the_markitdown_extra_text_csv_json_and_html_still_read_and_a_pdf_names_the_extra(
    root: Path, tmp_path: Path
):
    minimal_pdf(root / "doc.pdf", "Hello PDF")
    (root / "notes.md").write_text("# Notes\n\nMeet at *noon*.\n")
    hidden = hide_module(tmp_path / "shadow", "markitdown")
    lean = bundled_spec("reading", {"READING_ROOT": str(root), "PYTHONPATH": hidden})
    got = session(
        lean,
        ("read_file", {"uri": "notes.md"}),
        ("read_file", {"uri": "table.csv"}),
        ("read_file", {"uri": "data.json"}),
        ("read_file", {"uri": "page.html"}),
        ("convert_to_markdown", {"uri": "data:text/html,<p><b>bold</b></p>"}),
        ("read_file", {"uri": "doc.pdf"}),
    )
    assert [o.exit_code for o in got.outcomes[:5]] == [0] * 5, [o.error for o in got.outcomes]
    assert got[0].result == "# Notes\n\nMeet at *noon*.\n"
    assert "| name | count |" in got[1].result and "| beta | 2 |" in got[1].result
    assert '"answer": 42' in got[2].result
    assert "# Title here" in got[3].result and "* one" in got[3].result
    assert got[4].result.strip() == "**bold**"
    assert got[5].error_kind == "tool_error"
    assert "(application/pdf) without MarkItDown: pip install 'miroctl[markitdown]'" in got[5].error
    assert got.starts == 1


def test_a_file_over_the_size_limit_is_refused(root: Path, monkeypatch):
    (root / "big.txt").write_text("x" * 5000)
    monkeypatch.setenv("READING_ROOT", str(root))
    monkeypatch.setenv("READING_MAX_BYTES", "1000")
    got = session(memory_spec("reading"), ("read_file", {"uri": "big.txt"}))
    assert got[0].error_kind == "tool_error" and "over the" in got[0].error and "limit" in got[0].error


@pytest.mark.process
def test_miroctl_call_reading_prints_the_markdown_envelope(root: Path):
    code, envelope = cli_call("reading", "read_file", f"uri={root / 'table.csv'}")
    assert code == 0, envelope
    assert envelope["server_name"] == "tool-reading" and envelope["tool_name"] == "read_file"
    assert "| alpha | 1 |" in envelope["result"]


def test_reading_a_missing_file_exits_1_with_the_reason(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("READING_ROOT", str(tmp_path))
    got = session(memory_spec("reading"), ("read_file", {"uri": str(tmp_path / "nope.txt")}))
    assert got[0].exit_code == 1
    assert got[0].error_kind == "tool_error" and "no such file" in got[0].error
    assert os.path.basename(str(tmp_path / "nope.txt")) in got[0].error
