"""The system server from config/tool/tool-system.yaml: in-process, and over stdio through the CLI once."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import psutil
import pytest

from tests.bundled.conftest import cli_call, memory_spec, session
from tests.conftest import refused_port


def test_cpu_memory_and_disk_numbers_come_with_their_context(tmp_path: Path):
    got = session(
        memory_spec("system"),
        ("cpu_usage", {"sample_seconds": 0.2}),
        ("memory_usage", {}),
        ("disk_usage", {"path": str(tmp_path)}),
        ("disk_usage", {}),
    )
    assert all(o.ok for o in got.outcomes), [o.error for o in got.outcomes]
    cores = psutil.cpu_count()
    assert re.search(rf"CPU: [\d.]+% busy over a 0.2 s sample, on {cores} logical cores", got[0].result)
    assert f"of {cores} cores" in got[0].result and "Load average (1/5/15 min)" in got[0].result
    assert re.search(r"Memory: [\d.]+ [KMGT]B available of [\d.]+ [KMGT]B \([\d.]+%\)", got[1].result)
    assert got[1].structured_content["total"] == psutil.virtual_memory().total
    assert re.search(r"[\d.]+ [KMGT]B free of [\d.]+ [KMGT]B \([\d.]+% free, [\d.]+% used\)", got[2].result)
    assert str(tmp_path) in got[2].result
    assert got[3].structured_content["disks"], got[3].result


def test_top_processes_ranks_by_memory_with_each_share_of_ram():
    got = session(
        memory_spec("system"),
        ("top_processes", {"sort_by": "memory", "limit": 5}),
        ("top_processes", {"limit": 3, "sample_seconds": 0.2}),
    )
    processes = got[0].structured_content["processes"]
    assert len(processes) == 5
    assert [p["rss"] for p in processes] == sorted((p["rss"] for p in processes), reverse=True)
    assert re.search(r"pid \d+ .+ \(user .+\): CPU [\d.]+%, memory [\d.]+ [KMGT]?B of [\d.]+ GB", got[0].result)
    assert "so CPU% runs up to" in got[1].result and len(got[1].structured_content["processes"]) == 3


def test_listening_ports_finds_a_socket_the_test_opened():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        got = session(
            memory_spec("system"),
            ("listening_ports", {"port": port}),
            ("listening_ports", {}),
            ("listening_ports", {"port": refused_port()}),
        )
    assert f"tcp 127.0.0.1:{port} (this machine only) pid {os.getpid()}" in got[0].result
    assert any(s["port"] == port for s in got[1].structured_content["listening"])
    assert got[2].result.startswith("Nothing is listening on port")


def test_a_missing_path_is_a_tool_error_and_the_server_keeps_running(tmp_path: Path):
    got = session(memory_spec("system"), ("disk_usage", {"path": str(tmp_path / "missing")}), ("memory_usage", {}))
    assert got[0].exit_code == 1
    assert got[0].error_kind == "tool_error" and "no such file or directory" in got[0].error
    assert got[1].ok and got.starts == 1


@pytest.mark.process
def test_miroctl_call_system_memory_usage_gives_text_and_numbers():
    code, envelope = cli_call("system", "memory_usage")
    assert code == 0, envelope
    assert envelope["result"].startswith("Memory: ")
    assert envelope["structured_content"]["total"] == psutil.virtual_memory().total


def test_an_out_of_range_argument_exits_2_before_calling():
    got = session(memory_spec("system"), ("top_processes", {"limit": 0}))
    assert got[0].exit_code == 2
    assert got[0].error_kind == "arguments" and "limit" in got[0].error
