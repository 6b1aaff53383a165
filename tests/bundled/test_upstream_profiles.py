"""The upstream-compatible profiles (`-c miroflow`, `-c mirothinker`): upstream's server and tool names on the
bundled servers (servers/group.py), failures delivered as upstream's servers deliver them (`[ERROR]: ...` text),
video questions on MiroThinker's tool-vqa. Servers run in this process unless the process is the point."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from miroctl import ToolManager
from miroctl.base.models import ServerSpec
from miroctl.cli.app import app
from miroctl.config import loader as config_
from miroctl.servers import group
from tests.bundled.conftest import session
from tests.bundled.files import tiny_png
from tests.fakes.gemini_api import GeminiFake
from tests.fakes.openai_api import CHAT, OpenAIFake
from tests.fakes.tencent import SECRET_ID, SECRET_KEY, FakeSearchPro, page

MIROFLOW = {
    "tool-searching": [
        "google_search",
        "wiki_get_page_content",
        "search_wiki_revision",
        "search_archived_webpage",
        "scrape_website",
    ],
    "tool-code": [
        "create_sandbox",
        "run_command",
        "run_python_code",
        "upload_file_from_local_to_sandbox",
        "download_file_from_internet_to_sandbox",
        "download_file_from_sandbox_to_local",
    ],
    "tool-image-video": ["visual_question_answering", "visual_audio_youtube_analyzing"],
    "tool-reading": ["read_file"],
    "tool-reasoning": ["reasoning"],
    "tool-audio": ["audio_transcription", "audio_question_answering"],
}
MIROTHINKER = {
    "search_and_scrape_webpage": ["google_search", "sogou_search"],
    "jina_scrape_llm_summary": ["scrape_and_extract_info"],
    "tool-python": MIROFLOW["tool-code"],
    "stateless_python": ["python"],
    "task_planner": ["add_todo", "list_todos", "complete_todo", "delete_todo"],
    "tool-google-search": ["google_search", "scrape_website"],
    "tool-sogou-search": ["sogou_search", "scrape_website"],
    "tool-vqa": ["visual_question_answering"],
    "tool-vqa-os": ["visual_question_answering"],
    "tool-transcribe": ["audio_transcription", "audio_question_answering"],
    "tool-transcribe-os": ["audio_transcription"],
    "tool-reasoning": ["reasoning"],
    "tool-reasoning-os": ["reasoning"],
    "tool-reader": ["convert_to_markdown"],
    "tool-reading": ["convert_to_markdown"],
}
KEYS = (
    "SERPER_API_KEY",
    "JINA_API_KEY",
    "E2B_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "TENCENTCLOUD_SECRET_ID",
    "TENCENTCLOUD_SECRET_KEY",
    "SUMMARY_LLM_BASE_URL",
    "VISION_API_KEY",
    "VISION_BASE_URL",
    "WHISPER_BASE_URL",
    "REASONING_API_KEY",
    "REASONING_BASE_URL",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./.env of the machine's


def in_memory(monkeypatch: pytest.MonkeyPatch, profile: str, name: str, **env: str) -> ServerSpec:
    """The profile's shipped server, built in this process from its own settings (laid over os.environ)."""
    spec = config_.load(profile).get(name)
    assert spec is not None and spec.error is None, spec and spec.error
    for key, value in {**spec.env, **env}.items():
        monkeypatch.setenv(key, value)
    server = group.build(spec.env["GROUP_NAME"], spec.env["GROUP_TOOLS"], spec.env["TOOL_ERRORS"])
    return replace(spec, transport="memory", target=server, command=None, args=(), requires_env=())


def listed(profile: str) -> dict[str, list[str]]:
    result = CliRunner().invoke(app, ["-c", profile, "list", "--json"])
    assert result.exit_code == 0, result.stderr
    return {s["name"]: [t["name"] for t in s["tools"]] for s in json.loads(result.stdout)["servers"]}


def test_miroflow_profile_lists_miroflows_server_and_tool_names_with_no_key_set(no_keys, bundled_servers_in_memory):
    assert listed("miroflow") == MIROFLOW


def test_mirothinker_profile_lists_mirothinkers_server_and_tool_names_with_no_key_set(
    no_keys, bundled_servers_in_memory
):
    assert listed("mirothinker") == MIROTHINKER


def test_miroflows_browser_is_named_playwright_and_kept_out_of_the_default_set():
    config = config_.load("miroflow")
    playwright = config.get("playwright")
    assert playwright is not None and playwright.error is None and playwright.persistent
    assert "playwright" not in config.default_names


def test_every_upstream_server_answers_failures_as_text_and_no_server_file_needs_a_key(no_keys):
    for profile in ("miroflow", "mirothinker"):
        config = config_.load(profile)
        for spec in config.select():
            assert spec.error is None and not spec.requires_env, spec.name
            assert spec.env["TOOL_ERRORS"] == "text" and spec.env["GROUP_NAME"] == spec.name


def test_a_failing_tool_answers_error_text_that_is_not_marked_an_error(monkeypatch, no_keys):
    spec = in_memory(monkeypatch, "mirothinker", "tool-google-search")
    outcome = session(spec, ("google_search", {"q": "   "}))[0]
    assert outcome.exit_code == 0 and not outcome.is_error
    assert outcome.result == "[ERROR]: q is empty: give the words to search for"


def test_a_missing_key_reaches_the_agent_as_error_text(monkeypatch, no_keys):
    spec = in_memory(monkeypatch, "mirothinker", "search_and_scrape_webpage")
    outcome = session(spec, ("sogou_search", {"q": "北京"}))[0]
    assert outcome.exit_code == 0
    assert outcome.result.startswith("[ERROR]: TENCENTCLOUD_SECRET_ID or TENCENTCLOUD_SECRET_KEY is not set")


def test_with_tool_errors_set_to_error_the_failure_is_an_error_result_again(monkeypatch, no_keys):
    spec = in_memory(monkeypatch, "mirothinker", "tool-google-search", TOOL_ERRORS="error")
    spec = replace(spec, target=group.build("tool-google-search", spec.env["GROUP_TOOLS"], "error"))
    outcome = session(spec, ("google_search", {"q": "   "}))[0]
    assert outcome.exit_code == 1 and outcome.is_error
    assert "q is empty" in outcome.error and "[ERROR]" not in outcome.error


def test_upstreams_forms_of_a_tool_carry_the_annotations_of_the_bundled_tool():
    server = group.build("t", "search.sogou_search_by_query=sogou_search python.stateless_python=python")

    async def listed() -> dict[str, object]:
        async with Client(server) as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = anyio.run(listed)
    sogou, python = tools["sogou_search"], tools["python"]
    assert sogou.annotations.read_only_hint and set(sogou.input_schema["properties"]) == {"Query", "Cnt"}
    assert python.annotations.destructive_hint and set(python.input_schema["properties"]) == {"code"}
    assert "one-shot sandbox" in python.description


def test_arguments_the_schema_refuses_and_unknown_tools_stay_error_results_as_upstreams_do():
    server = group.build("t", "search.google_search", "text")

    async def calls() -> list[tuple[bool, str]]:
        async with Client(server) as client:
            answers = [
                await client.call_tool("google_search", {"q": "x", "num": "many"}),
                await client.call_tool("nosuch", {}),
            ]
        return [(bool(a.is_error), a.content[0].text) for a in answers]

    (bad_argument, bad_argument_text), (unknown, unknown_text) = anyio.run(calls)
    assert bad_argument and "num" in bad_argument_text and not bad_argument_text.startswith("[ERROR]")
    assert unknown and unknown_text == "Unknown tool: nosuch"


def test_a_successful_call_is_unchanged_in_text_mode(monkeypatch, no_keys, tmp_path: Path):
    monkeypatch.setenv("PLANNER_STATE_DIR", str(tmp_path / "plans"))
    spec = in_memory(monkeypatch, "mirothinker", "task_planner", PLANNER_STATE_DIR=str(tmp_path / "plans"))
    outcome = session(spec, ("add_todo", {"titles": ["Read the paper"]}), ("list_todos", {}))[1]
    assert outcome.exit_code == 0 and "Read the paper" in outcome.result
    assert outcome.structured_content["total"] == 1


def test_stateless_python_runs_code_under_upstreams_tool_and_parameter_name(monkeypatch, no_keys, tmp_path: Path):
    spec = in_memory(monkeypatch, "mirothinker", "stateless_python", SANDBOX_DIR=str(tmp_path / "sandboxes"))
    outcome = session(spec, ("python", {"code": "print(6 * 7)"}))[0]
    assert outcome.exit_code == 0, outcome.error
    assert "42" in outcome.result


def test_a_video_file_is_sent_to_gemini_inline_as_video(monkeypatch, model_env, no_keys, tmp_path: Path):
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(64))
    with GeminiFake().running() as fake:
        spec = in_memory(monkeypatch, "mirothinker", "tool-vqa", GEMINI_API_KEY=fake.key, GEMINI_BASE_URL=fake.base_url)
        arguments = {"media_path_or_url": str(video), "question": "What happens at the end?"}
        outcome = session(spec, ("visual_question_answering", arguments))[0]
        parts = fake.last_parts()
    assert outcome.exit_code == 0 and outcome.result == "A cat sits on a red mat.", outcome.result
    assert "video/mp4" in parts[0]["inlineData"].values()
    assert parts[1]["text"] == "Answer the question: What happens at the end?"


def test_a_video_without_gemini_says_what_to_set(monkeypatch, model_env, no_keys, tmp_path: Path):
    video = tmp_path / "clip.webm"
    video.write_bytes(bytes(64))
    spec = in_memory(monkeypatch, "mirothinker", "tool-vqa")
    outcome = session(spec, ("visual_question_answering", {"media_path_or_url": str(video), "question": "Who?"}))[0]
    assert (
        outcome.result
        == "[ERROR]: a video needs Gemini, which can watch it: set GEMINI_API_KEY in the server's environment"
    )


def test_an_image_on_the_media_form_goes_to_the_image_model(monkeypatch, model_env, no_keys, tmp_path: Path):
    png = tiny_png(tmp_path / "red.png")
    with OpenAIFake().running() as fake:
        spec = in_memory(monkeypatch, "mirothinker", "tool-vqa", OPENAI_API_KEY=fake.key, OPENAI_BASE_URL=fake.base_url)
        outcome = session(spec, ("visual_question_answering", {"media_path_or_url": str(png), "question": "Colour?"}))[
            0
        ]
        asked = len(fake.seen(CHAT))
    assert outcome.exit_code == 0 and outcome.result == "The answer is 42." and asked == 1


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        ("search", "GROUP_TOOLS entry 'search' is not module.function or module.function=name"),
        ("nosuch.tool", "'nosuch' is not a bundled server module"),
        ("group.build", "'group' is not a bundled server module"),
        ("search.google_search wiki.wiki_get_page_content=google_search", "names google_search more than once"),
        ("", "GROUP_TOOLS is empty"),
        ("search.no_function", "search.no_function: the module has no such tool"),
        ("search.search_rules", "search.search_rules: the module has no such tool"),  # a helper, not a tool
        ("../etc.passwd", "is not module.function"),
    ],
)
def test_a_bad_group_setting_is_refused_with_its_reason(tools, reason):
    with pytest.raises(ValueError) as raised:
        group.build("g", tools)
    assert reason in str(raised.value)


@pytest.mark.process
def test_a_group_server_with_a_bad_setting_exits_and_its_reason_is_shown(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = f"{shlex.quote(sys.executable)} -P -m miroctl.servers group"  # this environment, not PATH's python
    result = CliRunner().invoke(app, ["list", "--stdio", command, "--env", "GROUP_TOOLS=search", "--json"])
    assert result.exit_code == 1
    (server,) = json.loads(result.stdout)["servers"]
    assert "group: GROUP_TOOLS entry 'search' is not module.function" in json.dumps(server)


@pytest.mark.process
def test_each_grouping_keeps_its_own_snapshot_and_a_call_after_one_reaches_the_real_server(
    no_keys, tmp_path: Path, monkeypatch
):
    monkeypatch.setenv("MIROCTL_SERVER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SANDBOX_DIR", str(tmp_path / "sandboxes"))
    first = listed_names("stateless_python", "task_planner")
    assert first == {"stateless_python": ["python"], "task_planner": MIROTHINKER["task_planner"]}
    assert len(list((tmp_path / "cache").glob("group-*.json"))) == 2  # one per grouping: its settings differ
    assert listed_names("stateless_python", "task_planner") == first
    result = CliRunner().invoke(app, ["-c", "mirothinker", "call", "stateless_python", "python", "code=print(6 * 7)"])
    assert result.exit_code == 0, result.stderr
    assert "42" in result.stdout


def listed_names(*servers: str) -> dict[str, list[str]]:
    result = CliRunner().invoke(app, ["-c", "mirothinker", "list", *servers, "--json"])
    assert result.exit_code == 0, result.stderr
    return {s["name"]: [t["name"] for t in s["tools"]] for s in json.loads(result.stdout)["servers"]}


def test_mirothinkers_sogou_server_takes_upstreams_query_and_count_parameters(monkeypatch, no_keys):
    fake = FakeSearchPro()
    fake.index["上海"] = [page("上海", "https://example.cn/sh")]
    with fake.serve() as base:
        spec = in_memory(
            monkeypatch,
            "mirothinker",
            "tool-sogou-search",
            TENCENTCLOUD_SECRET_ID=SECRET_ID,
            TENCENTCLOUD_SECRET_KEY=SECRET_KEY,
            SOGOU_BASE_URL=base,
        )
        outcome = session(spec, ("sogou_search", {"Query": "上海", "Cnt": 10}))[0]
    assert outcome.exit_code == 0, outcome.error
    assert json.loads(outcome.result)["Pages"][0]["url"] == "https://example.cn/sh"
    assert fake.seen()[0].json() == {"Query": "上海", "Mode": 0, "Cnt": 10}


def test_the_seeds_toolmanager_hands_an_upstream_failure_to_the_agent_as_its_result(monkeypatch, no_keys):
    spec = in_memory(monkeypatch, "mirothinker", "tool-google-search")
    manager = ToolManager(config_.Config(servers=(spec,), default_names=(spec.name,)))

    async def call() -> dict[str, object]:
        return await manager.execute_tool_call("tool-google-search", "google_search", {"q": " "})

    answer = anyio.run(call)
    assert answer == {
        "server_name": "tool-google-search",
        "tool_name": "google_search",
        "result": "[ERROR]: q is empty: give the words to search for",
    }


def test_a_mirothinker_agent_file_lists_its_servers_from_the_profile_less_its_blacklisted_tools(
    no_keys, bundled_servers_in_memory
):
    agent = Path(__file__).parents[1] / "fixtures" / "upstream" / "mirothinker" / "conf" / "agent" / "demo.yaml"
    result = CliRunner().invoke(app, ["-c", str(agent), "list", "--json"])
    assert result.exit_code == 0, result.stderr
    servers = {s["name"]: [t["name"] for t in s["tools"]] for s in json.loads(result.stdout)["servers"]}
    assert servers == {
        "search_and_scrape_webpage": ["google_search"],  # the agent blacklists sogou_search
        "jina_scrape_llm_summary": ["scrape_and_extract_info"],
        "tool-python": [t for t in MIROTHINKER["tool-python"] if t != "download_file_from_sandbox_to_local"],
    }
