"""Result limits: long results are cut with a marker stating the original length; --output keeps all of it."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents
from typer.testing import CliRunner

from miroctl.base.masking import Masker
from miroctl.base.models import CallRequest
from miroctl.cli.app import app
from miroctl.core.manager import Manager
from miroctl.core.truncation import limit_result, text_length, write_full
from tests.conftest import parse_json
from tests.policy_support import memory_spec, pool, webtools_yaml


def result_of(*texts: str, resource: str | None = None) -> dict[str, Any]:
    """A CallToolResult as the sessions hand it to the core: the JSON the server sent."""
    content = [TextContent(type="text", text=t) for t in texts]
    if resource is not None:
        content.append(EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///r", text=resource)))
    model = CallToolResult(content=content, structured_content={"result": "".join(texts)})
    return model.model_dump(by_alias=True, exclude_none=True)


def test_a_cut_keeps_the_first_characters_across_blocks_and_ends_with_the_original_length():
    result = result_of("a" * 6, "b" * 6, "c" * 6)
    assert text_length(result) == 20
    cut = limit_result(result, 10)
    assert cut == {"original_chars": 20, "kept_chars": 10, "limit": 10, "structured_content_dropped": True}
    assert [b["text"].split("\n")[0] for b in result["content"]] == ["aaaaaa", "bbb"]
    assert result["content"][-1]["text"].endswith("[... truncated by miroctl: 10 of 20 characters shown]")
    assert result.get("structuredContent") is None


def test_text_resources_count_and_a_fitting_result_is_left_alone():
    result = result_of("short", resource="r" * 50)
    assert limit_result(result, 100) is None and text_length(result) == 56
    assert limit_result(result, 20)["original_chars"] == 56
    assert result["content"][1]["resource"]["text"].startswith("r" * 14)


def test_the_whole_text_goes_to_the_file_with_secrets_masked(tmp_path):
    target = tmp_path / "out.txt"
    written = write_full(str(target), result_of("one s3cr3t-v4lue", "two"), Masker(["s3cr3t-v4lue"]))
    assert target.read_text() == "one ****\ntwo"
    assert written == {"path": str(target), "chars": len("one ****\ntwo")}


def test_limits_apply_per_tool_per_server_and_globally_through_the_manager():
    server = memory_spec("web", tools={"*": {"max_result_chars": 40}, "big": {"max_result_chars": 10}})
    other = memory_spec("plainweb")

    async def main():
        async with Manager(pool(server, other, max_result_chars=25)) as manager:
            requests = [
                ("web", "big", {"chars": 100}),
                ("web", "env", {"name": "X" * 60}),
                ("plainweb", "big", {"chars": 100}),
                ("plainweb", "peek", {}),
            ]
            return [await manager.call(CallRequest(s, t, a)) for s, t, a in requests]

    big, env, global_big, small = anyio.run(main)
    assert big.truncated["limit"] == 10 and big.result.startswith("x" * 10 + "\n[... truncated")
    assert env.truncated is None  # "<unset>" fits in the server's 40
    assert global_big.truncated == {
        "original_chars": 100,
        "kept_chars": 25,
        "limit": 25,
        "structured_content_dropped": True,
    }
    assert small.truncated is None and small.result == "peeked"


def test_a_huge_result_gives_a_small_envelope_and_output_writes_all_of_it(write_config, tmp_path):
    target = tmp_path / "full.txt"
    path = write_config({"web": webtools_yaml("web")}, max_result_chars=1000)
    result = CliRunner().invoke(
        app, ["call", "-c", str(path), "web", "big", "chars=3000000", "--json", "--output", str(target)]
    )
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout) < 5000
    envelope = parse_json(result.stdout)
    assert envelope["truncated"]["original_chars"] == 3_000_000
    assert envelope["output"] == {"path": str(target), "chars": 3_000_000}
    assert len(json.dumps(envelope["content"])) < 2000
    assert target.stat().st_size == 3_000_000


def test_human_output_with_output_prints_a_note_instead_of_the_result(write_config, tmp_path):
    target = tmp_path / "full.txt"
    path = write_config({"web": webtools_yaml("web")})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "big", "chars=50", "-o", str(target)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "wrote the whole result (50 characters)" in result.stderr
    assert target.read_text() == "x" * 50


def test_human_output_notes_a_cut(write_config):
    path = write_config({"web": webtools_yaml("web", max_result_chars=20)})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "big", "chars=500"])
    assert result.exit_code == 0, result.stderr
    assert "truncated by miroctl: 20 of 500 characters shown" in result.stdout
    assert "result cut to 20 of 500 characters" in result.stderr


def test_output_into_a_missing_directory_exits_2_before_anything_starts(write_config, tmp_path):
    path = write_config({"web": webtools_yaml("web")})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "peek", "-o", str(tmp_path / "no" / "f")])
    assert result.exit_code == 2
    assert "directory does not exist" in result.stderr


def test_error_texts_keep_at_least_2000_characters_under_a_small_limit():
    async def main():
        async with Manager(pool(memory_spec("web", tools={"fail": {"max_result_chars": 10}}))) as manager:
            return (
                await manager.call(CallRequest("web", "fail", {"message": "m" * 100})),
                await manager.call(CallRequest("web", "fail", {"message": "m" * 3000})),
            )

    short, long = anyio.run(main)
    assert short.truncated is None and short.error.endswith("m" * 100)
    assert long.truncated["limit"] == 2000 and "2000 of 3035 characters shown" in long.error
