"""`--help` a second time prints the bytes it printed the first time, without loading Typer or Rich."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from miroctl.launch import helpcache
from tests.entry_support import console_entry
from tests.test_prestart import counting_config


def miroctl(cache: Path, *words: str, importtime: bool = False, **env: str) -> subprocess.CompletedProcess[bytes]:
    flags = ["-X", "importtime"] if importtime else []
    environ = {**os.environ, "MIROCTL_CACHE_DIR": str(cache), "COLUMNS": "100", **env}
    return subprocess.run(
        [sys.executable, *flags, "-m", "miroctl", *words], capture_output=True, env=environ, timeout=60, check=False
    )


def imported(stderr: bytes) -> set[str]:
    lines = stderr.decode().splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time")}


def test_the_second_help_is_the_first_ones_bytes_without_typer_or_rich(tmp_path):
    first = miroctl(tmp_path, "call", "--help")
    assert first.returncode == 0, first.stderr
    assert b"Usage: miroctl call" in first.stdout
    second = miroctl(tmp_path, "call", "--help", importtime=True)
    assert second.returncode == 0
    assert second.stdout == first.stdout
    assert not {name for name in imported(second.stderr) if name.split(".")[0] in ("typer", "rich", "click")}


def test_another_terminal_width_is_rendered_anew_and_matches_an_uncached_rendering(tmp_path):
    miroctl(tmp_path, "list", "--help")
    wide = miroctl(tmp_path, "list", "--help", COLUMNS="160")
    fresh = miroctl(tmp_path / "elsewhere", "list", "--help", COLUMNS="160")
    assert wide.returncode == 0 and wide.stdout == fresh.stdout
    assert wide.stdout != miroctl(tmp_path, "list", "--help").stdout


@pytest.fixture
def cache_here(tmp_path, monkeypatch):
    """The help cache of the console entry run in this process (console_entry), in the test's directory."""
    monkeypatch.setenv("MIROCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path / "cache"


def test_a_usage_error_next_to_help_is_never_kept(cache_here, capfd):
    for _ in range(2):
        failed = console_entry(capfd, "list", "--no-such-option", "--help")
        assert failed.returncode == 2
        assert "No such option: --no-such-option" in failed.stderr
    assert not (cache_here / "help").exists() or not list((cache_here / "help").iterdir())


def test_a_call_whose_last_word_is_the_value_dash_h_reaches_its_server_every_time(tmp_path, cache_here, capfd):
    config, starts = counting_config(tmp_path)
    cache = cache_here
    for _ in range(2):
        done = console_entry(capfd, "call", "--config", str(config), "fx", "echo", "text=hi", "--task-id", "-h")
        assert done.returncode == 0, done.stderr
        assert done.stdout == "hi\n"
    assert len(starts.read_text().split()) == 2
    assert not list((cache / "help").glob("*"))


def test_a_help_planted_in_a_directory_others_can_write_to_or_behind_a_symlink_is_never_printed(tmp_path, capfd):
    words, environ = ["call", "--help"], {"MIROCTL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}
    path = helpcache._path(words, environ)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(b"kept help\n")
    assert helpcache.answer(words, environ)  # the user's own, in a private directory
    assert capfd.readouterr().out == "kept help\n"
    path.parent.chmod(0o777)  # a shared cache directory: anyone could have put it there
    assert not helpcache.answer(words, environ)
    path.parent.chmod(0o700)
    path.unlink()
    (tmp_path / "elsewhere").write_bytes(b"planted\n")
    path.symlink_to(tmp_path / "elsewhere")
    assert not helpcache.answer(words, environ)
    assert capfd.readouterr().out == ""


def test_nothing_is_kept_in_a_help_directory_others_can_write_to(tmp_path):
    words, environ = ["list", "--help"], {"MIROCTL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100"}
    path = helpcache._path(words, environ)
    path.parent.mkdir(parents=True)
    path.parent.chmod(0o777)
    recorder = helpcache.Recorder(io.StringIO())
    recorder.write("Usage: miroctl list\n")
    helpcache.keep(words, recorder, environ)
    assert not list(path.parent.iterdir())
    path.parent.chmod(0o700)
    helpcache.keep(words, recorder, environ)
    assert path.read_bytes() == b"Usage: miroctl list\n"
