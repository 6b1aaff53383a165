"""The python sandbox's seed tools: downloads from the internet into a sandbox, create_sandbox(timeout), and the
E2B backend's create and run retries against a fake E2B on 127.0.0.1 (the e2b SDK runs unchanged)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.bundled.conftest import memory_spec, session
from tests.fakes.e2b_api import CREATE, EXECUTE, E2BFake, error
from tests.fakes.web_files import FileSite

CSV = b"name,count\nalpha,1\nbeta,2\n"
BLOCKED = "https://huggingface.co/datasets/gaia-benchmark/GAIA/resolve/main/answers.csv"


@pytest.fixture
def local(state_dirs, monkeypatch):
    for key, value in state_dirs.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SANDBOX_BACKEND", "local")
    return memory_spec("python")


def download(sandbox: str, url: str, path: str | None = None) -> tuple[str, dict[str, str]]:
    arguments = {"sandbox_id": sandbox, "url": url} | ({"sandbox_file_path": path} if path else {})
    return ("download_file_from_internet_to_sandbox", arguments)


def test_files_from_the_internet_land_in_the_sandbox_where_code_can_read_them(local, state_dirs):
    with FileSite().running() as site:
        url = site.put("data.csv", CSV, "text/csv")
        sandbox = session(local, ("create_sandbox", {}))[0].structured_content["sandbox_id"]
        code = "import os; print(sorted(os.listdir('.')), open('in/renamed.csv').read().count(','))"
        got = session(
            local,
            download(sandbox, url),
            download(sandbox, url, "/home/user/inputs/"),
            download(sandbox, url, "in/renamed.csv"),
            ("run_python_code", {"sandbox_id": sandbox, "code_block": code}),
        )
    root = Path(state_dirs["SANDBOX_DIR"]) / sandbox
    assert [o.exit_code for o in got.outcomes] == [0, 0, 0, 0], [o.error for o in got.outcomes]
    assert (root / "data.csv").read_bytes() == CSV and (root / "inputs" / "data.csv").read_bytes() == CSV
    assert got[0].structured_content["bytes"] == len(CSV) and "(26 B, text/csv)" in got[0].result
    assert got[3].structured_content["stdout"].strip() == "['data.csv', 'in', 'inputs'] 3"


def test_downloads_keep_to_the_url_rules_the_size_cap_and_the_sandbox(local, monkeypatch):
    monkeypatch.setenv("SANDBOX_DOWNLOAD_MB", "1")
    with FileSite().running() as site:
        big = site.put("big.bin", b"0" * (2 * 2**20))
        sandbox = session(local, ("create_sandbox", {}))[0].structured_content["sandbox_id"]
        got = session(
            local,
            download(sandbox, BLOCKED),
            download(sandbox, site.redirect_to(BLOCKED)),
            download(sandbox, site.url + "/files/missing.csv"),
            download(sandbox, big),
            download(sandbox, site.put("a.csv", CSV), "../../escape.csv"),
            download("default", site.put("b.csv", CSV)),
            download(sandbox, "ftp://127.0.0.1/file"),
        )
    assert [o.exit_code for o in got.outcomes] == [5, 1, 1, 1, 1, 1, 1], [o.error for o in got.outcomes]
    assert f"{BLOCKED} is blocked by the url rule" in got[1].error
    assert "answered HTTP 404" in got[2].error and "larger than the 1.0 MB limit" in got[3].error
    assert "is outside the sandbox" in got[4].error and "'default' is not a sandbox id" in got[5].error
    assert "not an http(s) URL" in got[6].error


def test_a_sandbox_created_with_a_timeout_is_removed_once_unused_that_long(local, state_dirs):
    created = session(local, ("create_sandbox", {"timeout": 60}))
    sandbox = created[0].structured_content["sandbox_id"]
    root = Path(state_dirs["SANDBOX_DIR"])
    alive = session(local, ("run_command", {"sandbox_id": sandbox, "command": "true"}))
    past = time.time() - 120
    os.utime(root / sandbox, (past, past))
    gone = session(local, ("run_command", {"sandbox_id": sandbox, "command": "true"}))
    assert created[0].exit_code == 0 and "It is removed after 60 s unused." in created[0].result
    assert alive[0].exit_code == 0, alive[0].error
    assert gone[0].exit_code == 1 and f"no sandbox has id {sandbox!r}" in gone[0].error
    assert not (root / sandbox).exists() and not (root / f"{sandbox}.timeout").exists()


def test_create_sandbox_refuses_a_timeout_out_of_range_before_calling(state_dirs, monkeypatch):
    for key, value in state_dirs.items():
        monkeypatch.setenv(key, value)
    got = session(memory_spec("python"), ("create_sandbox", {"timeout": 5}))
    assert got[0].exit_code == 2 and got[0].error_kind == "arguments", got[0].error
    assert not any(Path(state_dirs["SANDBOX_DIR"]).iterdir()), "the server was called"


@pytest.fixture
def e2b(monkeypatch, state_dirs):
    with E2BFake().running() as fake:
        for key, value in state_dirs.items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("SANDBOX_BACKEND", "e2b")
        monkeypatch.setenv("E2B_API_KEY", fake.key)
        monkeypatch.setenv("E2B_API_URL", fake.url)
        monkeypatch.setenv("E2B_SANDBOX_URL", fake.url)
        monkeypatch.setenv("SANDBOX_RETRY_DELAY", "0.01")
        yield fake


def test_e2b_create_is_retried_as_in_the_seeds_and_gives_up_after_five_attempts(e2b):
    e2b.queue(CREATE, error(500, "internal error"), error(500, "internal error"))
    first = session(memory_spec("python"), ("create_sandbox", {"timeout": 300}))
    e2b.queue(CREATE, *[error(500, "internal error")] * 5)
    second = session(memory_spec("python"), ("create_sandbox", {}))
    bodies = [r.json() for r in e2b.seen(CREATE)]
    assert first[0].exit_code == 0, first[0].error
    assert (
        first[0].structured_content["backend"] == "e2b" and first[0].structured_content["sandbox_id"] in e2b.sandboxes
    )
    assert bodies[2]["timeout"] == 300 and bodies[3]["timeout"] == 600
    assert len(bodies) == 8
    assert second[0].exit_code == 1 and "E2B could not create a sandbox" in second[0].error
    assert "(after 5 attempts)" in second[0].error and e2b.key not in second[0].error


def test_e2b_runs_code_retries_a_failed_run_and_reports_exceptions(e2b):
    spec = memory_spec("python")
    sandbox = session(spec, ("create_sandbox", {}))[0].structured_content["sandbox_id"]
    e2b.queue(EXECUTE, error(500, "jupyter is restarting"))
    got = session(
        spec,
        ("run_python_code", {"sandbox_id": sandbox, "code_block": "print('hello')\nprint(42)"}),
        ("run_python_code", {"sandbox_id": sandbox, "code_block": "raise ValueError('bad value')"}),
    )
    sent = [r for r in e2b.seen(EXECUTE)]
    assert got[0].exit_code == 0, got[0].error
    assert got[0].structured_content["stdout"] == "hello\n42\n" and got[0].structured_content["sandbox_id"] == sandbox
    assert len(sent) == 3 and sent[0].headers["e2b-sandbox-id"] == sandbox
    assert got[1].exit_code == 1 and "ValueError: bad value" in got[1].error


def test_e2b_downloads_are_written_into_the_cloud_sandbox(e2b):
    spec = memory_spec("python")
    with FileSite().running() as site:
        url = site.put("data.csv", CSV, "text/csv")
        sandbox = session(spec, ("create_sandbox", {}))[0].structured_content["sandbox_id"]
        got = session(spec, download(sandbox, url, "inputs/"), download("sbx-unknown", url))
    assert got[0].exit_code == 0, got[0].error
    assert got[0].structured_content["sandbox_path"] == "/home/user/inputs/data.csv"
    assert e2b.sandboxes[sandbox] == {"/home/user/inputs/data.csv": CSV}
    assert got[1].exit_code == 1 and "no sandbox has id 'sbx-unknown'" in got[1].error
