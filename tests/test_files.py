"""Files miroctl writes: --output is checked before anything is sent and never loses a result; --save-dir
never follows a symlink, never overwrites a file, and names files safely."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miroctl.cli.app import app
from tests.surface_support import PIXEL, echo, surface_yaml, tool

IMAGE = {"content": [{"type": "image", "data": PIXEL, "mimeType": "image/png"}]}


def invoke(*words: str):
    return CliRunner().invoke(app, list(words))


@pytest.fixture
def logged(write_config, tmp_path):
    """A server that appends the name of every call it receives to a file."""
    log = tmp_path / "calls.log"
    path = write_config({"alpha": surface_yaml(tmp_path, [echo()], name="alpha", record=log)})
    return path, log


@pytest.mark.parametrize("where", ["a-directory", "a-file/out.txt", "x" * 300, "missing-dir/out.txt"])
def test_an_output_path_that_cannot_be_written_exits_2_before_the_call_is_sent(logged, tmp_path, where):
    path, log = logged
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "a-file").write_text("keep")
    result = invoke("call", "-c", str(path), "alpha", "echo", "text=hi", "-o", str(tmp_path / where))
    assert result.exit_code == 2
    assert "--output" in result.stderr and "cannot write there" in result.stderr
    assert not log.exists()
    assert (tmp_path / "a-file").read_text() == "keep"


def test_an_output_check_leaves_no_file_behind_when_the_call_fails(logged, tmp_path):
    path, _ = logged
    target = tmp_path / "out.txt"
    result = invoke("call", "-c", str(path), "alpha", "nope", "-o", str(target))
    assert result.exit_code == 6
    assert not target.exists()


def test_a_write_that_fails_after_the_call_keeps_the_result_in_a_temp_file_it_names(logged):
    path, _ = logged
    result = invoke("call", "-c", str(path), "alpha", "echo", "text=precious", "-o", "/dev/full", "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)["output"]
    assert written["requested"] == "/dev/full" and "cannot write /dev/full" in written["error"]
    assert Path(written["path"]).read_text() == "precious"
    human = invoke("call", "-c", str(path), "alpha", "echo", "text=again", "-o", "/dev/full")
    assert human.exit_code == 0
    kept = human.stderr.split("is in ")[-1].split()[0]
    assert "cannot write /dev/full" in human.stderr and Path(kept).read_text() == "again"
    os.unlink(written["path"])
    os.unlink(kept)


def test_a_successful_call_with_output_prints_no_error_line(logged, tmp_path):
    path, _ = logged
    result = invoke("call", "-c", str(path), "alpha", "echo", "text=fine", "-o", str(tmp_path / "out.txt"))
    assert result.exit_code == 0
    assert "error" not in result.stderr and "wrote the whole result (4 characters)" in result.stderr
    assert result.stdout == ""


def test_save_dir_never_follows_a_planted_symlink_nor_overwrites_a_file(write_config, tmp_path):
    path = write_config({"pics": surface_yaml(tmp_path, [tool("snap", IMAGE)], name="pics")})
    saves = tmp_path / "saves"
    saves.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    (saves / "snap-1.png").symlink_to(victim)
    (saves / "snap-1.1.png").write_text("an earlier file")
    result = invoke("call", "-c", str(path), "pics", "snap", "--save-dir", str(saves))
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "do not touch" and (saves / "snap-1.1.png").read_text() == "an earlier file"
    assert f"saved: {saves / 'snap-1.2.png'}" in result.stderr
    assert (saves / "snap-1.2.png").read_bytes().startswith(b"\x89PNG")


def test_saved_file_names_from_hostile_tool_names_and_types_stay_inside_the_directory(write_config, tmp_path):
    hostile = {"content": [{"type": "image", "data": PIXEL, "mimeType": "image/../../x"}]}
    path = write_config({"pics": surface_yaml(tmp_path, [tool("../.hidden shot", hostile)], name="pics")})
    saves = tmp_path / "saves"
    result = invoke("call", "-c", str(path), "pics", "../.hidden shot", "--save-dir", str(saves))
    assert result.exit_code == 0, result.output
    assert [p.name for p in saves.iterdir()] == ["hidden_shot-1.bin"]
    assert list(tmp_path.glob("*.bin")) == []


def test_a_save_dir_that_is_a_file_exits_2_before_the_call(logged, tmp_path):
    path, log = logged
    (tmp_path / "plain").write_text("")
    result = invoke("call", "-c", str(path), "alpha", "echo", "text=hi", "--save-dir", str(tmp_path / "plain"))
    assert result.exit_code == 2
    assert "not a directory" in result.stderr and not log.exists()
