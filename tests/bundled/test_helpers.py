"""The servers' shared helpers: sizes in words, cutting long text, bounded output capture."""

from __future__ import annotations

import pytest

from miroctl.servers.helpers.common import cut_middle, human_bytes, of_total, percent
from miroctl.servers.helpers.sandbox_run import Capture
from miroctl.servers.planner import task_file_name


@pytest.mark.parametrize(
    ("count", "words"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KB"), (8 * 1024**3, "8.0 GB"), (512 * 1024**2, "512.0 MB")],
)
def test_human_bytes_uses_binary_units(count: int, words: str):
    assert human_bytes(count) == words


def test_a_share_is_shown_with_its_total():
    assert of_total(512 * 1024**2, 8 * 1024**3) == "512.0 MB of 8.0 GB (6.2%)"
    assert percent(1, 0) == "0.0%"


def test_cut_middle_keeps_head_and_tail_and_counts_the_cut():
    text, cut = cut_middle("a" * 100 + "b" * 100, 30)
    assert text.startswith("a" * 20) and text.endswith("b" * 10)
    assert cut == 170 and "[... 170 characters cut ...]" in text
    assert cut_middle("short", 30) == ("short", 0)


def test_capture_keeps_bounded_head_and_tail_of_a_stream():
    capture = Capture(limit=30)
    for _ in range(1000):
        capture.feed(b"0123456789")
    assert capture.total == 10_000 and capture.dropped == 10_000 - 30
    assert capture.text().startswith("01234567890123456789") and "bytes of output cut" in capture.text()


def test_task_ids_become_safe_file_names():
    assert task_file_name("task-42") == "task-42"
    unsafe = task_file_name("../../etc/passwd")
    assert unsafe.startswith("task-") and "/" not in unsafe and unsafe == task_file_name("../../etc/passwd")
