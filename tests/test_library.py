"""The library's ToolManager, in memory: the seeds' shapes, the typed layer, task ids and loop changes."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from miroctl import CallOutcome, ToolManager, connect
from miroctl.base.models import ServerSpec
from miroctl.config.loader import Config, Profile
from miroctl.library import TASK_ID
from tests.servers.fixture import build


def memory_server(name: str) -> MCPServer:
    server = MCPServer(name, log_level="WARNING")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    @server.tool()
    def nothing() -> str:
        """Answer with an empty text."""
        return ""

    return server


def manager(*names: str, blacklist: frozenset[tuple[str, str]] = frozenset(), **options: object) -> ToolManager:
    specs = tuple(ServerSpec(name=n, transport="memory", target=memory_server(n)) for n in names)
    config = Config(servers=specs, profile=Profile(blacklist=blacklist), default_names=tuple(names))
    return ToolManager(config, **options)  # type: ignore[arg-type]


def test_importing_miroctl_does_not_load_the_library_layer():
    code = "import sys, miroctl; print('miroctl.library' in sys.modules, 'mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_definitions_have_the_seeds_shape_without_blacklisted_tools():
    tm = manager("one", blacklist=frozenset({("one", "nothing")}))
    defs = asyncio.run(tm.get_all_tool_definitions())
    assert [d["name"] for d in defs] == ["one"]
    (tool,) = defs[0]["tools"]
    assert tool["name"] == "shout" and tool["description"] == "Upper-case the text."
    assert type(tool["schema"]) is dict and tool["schema"]["properties"]["text"]["type"] == "string"
    defs += [{"name": "agent-x", "tools": []}]  # an orchestrator extends the list: ours stays as it was
    assert len(asyncio.run(tm.get_all_tool_definitions())) == 1


def test_a_call_returns_the_seeds_result_with_positional_arguments():
    tm = manager("one")
    assert asyncio.run(tm.execute_tool_call("one", "shout", {"text": "hi"})) == {
        "server_name": "one",
        "tool_name": "shout",
        "result": "HI",
    }


def test_a_wrong_server_is_corrected_with_the_seeds_note_in_the_result():
    tm = manager("one")
    answer = asyncio.run(tm.execute_tool_call(server_name="nope", tool_name="shout", arguments={"text": "a"}))
    assert answer["server_name"] == "one"
    assert answer["result"] == (
        "[Auto-corrected: Server 'nope' not found, but tool 'shout' was found only in server 'one', "
        "so automatically used 'one' instead] A"
    )


def test_a_short_server_name_reaches_the_tool_server_with_the_seeds_note_as_the_seeds_know_no_short_names():
    tm = manager("tool-one")
    answer = asyncio.run(tm.execute_tool_call("one", "shout", {"text": "a"}))
    assert answer["server_name"] == "tool-one"
    assert answer["result"] == (
        "[Auto-corrected: Server 'one' not found, but tool 'shout' was found only in server 'tool-one', "
        "so automatically used 'tool-one' instead] A"
    )
    exact = asyncio.run(tm.execute_tool_call("tool-one", "shout", {"text": "a"}))
    assert exact == {"server_name": "tool-one", "tool_name": "shout", "result": "A"}


def test_unparsed_arguments_are_an_error_and_nothing_is_sent():
    tm = manager("one")
    bad = {"error": "Failed to parse arguments", "raw": '{"text": '}
    answer = asyncio.run(tm.execute_tool_call("one", "shout", bad))
    assert set(answer) == {"server_name", "tool_name", "error"}
    assert "not valid JSON" in answer["error"] and '{"text": ' in answer["error"]


def test_a_blacklisted_tool_is_an_error_not_an_exception():
    tm = manager("one", blacklist=frozenset({("one", "shout")}))
    answer = asyncio.run(tm.execute_tool_call("one", "shout", {"text": "x"}))
    assert "blacklisted" in answer["error"]


def test_an_empty_result_says_so_as_the_seeds_do():
    answer = asyncio.run(manager("one").execute_tool_call("one", "nothing", {}))
    assert answer["result"].startswith("Tool 'nothing' completed but returned")


def test_bad_arguments_for_the_schema_come_back_as_an_error_with_the_usage():
    answer = asyncio.run(manager("one").execute_tool_call("one", "shout", {"text": 3, "loud": True}))
    assert "error" in answer and "result" not in answer


def test_the_typed_layer_returns_call_outcomes_and_server_tools():
    tm = manager("one", "two")

    async def work() -> tuple[CallOutcome, list[str]]:
        outcome = await tm.call("two", "shout", {"text": "ok"})
        listed = await tm.list_tools(["one"])
        return outcome, [t.name for t in listed[0].tools]

    outcome, names = asyncio.run(work())
    assert outcome.ok and outcome.result == "OK" and outcome.content[0]["type"] == "text"
    assert names == ["shout", "nothing"]


def test_an_unknown_server_in_list_tools_is_a_failed_entry():
    (entry,) = asyncio.run(manager("one").list_tools(["ghost"]))
    assert entry.failure is not None and "ghost" in entry.failure.message


def test_calls_from_many_tasks_at_once_all_get_their_answer():
    tm = manager("one")

    async def work() -> list[dict[str, object]]:
        return await asyncio.gather(*(tm.execute_tool_call("one", "shout", {"text": str(i)}) for i in range(20)))

    answers = asyncio.run(work())
    assert [a["result"] for a in answers] == [str(i) for i in range(20)]


def test_it_is_built_outside_a_loop_and_works_in_one_loop_after_another():
    tm = manager("one")
    first = asyncio.run(tm.execute_tool_call("one", "shout", {"text": "a"}))
    second = asyncio.run(tm.execute_tool_call("one", "shout", {"text": "b"}))
    assert (first["result"], second["result"]) == ("A", "B")


def test_close_works_from_another_task_than_the_one_that_opened():
    tm = manager("one")

    async def work() -> str:
        opened = await asyncio.create_task(tm.execute_tool_call("one", "shout", {"text": "x"}))
        await asyncio.create_task(tm.close())
        again = await tm.execute_tool_call("one", "shout", {"text": "y"})
        await tm.close()
        return f"{opened['result']}{again['result']}"

    assert asyncio.run(work()) == "XY"


def test_each_task_id_gets_a_manager_of_its_own_from_any_of_the_three_sources():
    upstream = contextvars.ContextVar[str | None]("CURRENT_TASK_ID", default=None)
    tm = manager("one")

    async def in_task(set_id: str) -> None:
        upstream.set(set_id)
        await tm.execute_tool_call("one", "shout", {"text": "x"})

    async def work() -> set[str | None]:
        await asyncio.gather(in_task("t1"), in_task("t2"))
        TASK_ID.set("t3")
        await tm.execute_tool_call("one", "shout", {"text": "x"})
        await tm.execute_tool_call("one", "shout", {"text": "x"}, task_id="t4")
        keys = set(tm._owners)
        await tm.close()
        return keys

    assert asyncio.run(work()) == {"t1", "t2", "t3", "t4"}


def test_the_synchronous_facade_works_inside_a_running_loop():
    specs = (ServerSpec(name="one", transport="memory", target=memory_server("one")),)
    sync = connect(Config(servers=specs, default_names=("one",)))

    async def notebook_cell() -> dict[str, object]:
        return sync.execute_tool_call("one", "shout", {"text": "nb"})

    with sync:
        assert asyncio.run(notebook_cell())["result"] == "NB"
        assert sync.get_all_tool_definitions()[0]["name"] == "one"


@pytest.mark.parametrize("value", ["sometimes", 3])
def test_a_session_key_other_than_kept_or_per_call_is_a_config_error(value: object):
    from miroctl.base.errors import ConfigError
    from miroctl.config.servers import server_from_mapping

    with pytest.raises(ConfigError, match="session must be kept or per_call"):
        server_from_mapping({"name": "x", "command": "srv", "session": value}, where="x.yaml")


def test_an_idle_tasks_servers_are_reaped_and_the_shared_ones_kept():
    tm = manager("one", idle_timeout=0.05)

    async def work() -> tuple[bool, bool]:
        await tm.execute_tool_call("one", "shout", {"text": "x"}, task_id="t1")
        await tm.list_tools()
        task_owner, shared = tm._owners["t1"], tm._owners[None]
        with anyio.fail_after(10):
            await task_owner._done.wait()
        finished = (task_owner.finished, shared.finished)
        await tm.close()
        return finished

    assert asyncio.run(work()) == (True, False)


def test_the_package_exports_exactly_what_the_library_exports_and_its_version():
    import miroctl
    import miroctl.library

    assert sorted(set(miroctl.__all__) - {"__version__"}) == sorted(miroctl.library.__all__)
    assert all(getattr(miroctl, name) is getattr(miroctl.library, name) for name in miroctl.library.__all__)


def test_the_tool_manager_reads_numeric_strings_as_integers_and_refuses_a_fraction(tmp_path):
    from tests.servers.fixture import build

    log = tmp_path / "calls.log"
    spec = ServerSpec(name="calc", transport="memory", target=build("calc", {"add"}, {"FIXTURE_CALL_LOG": str(log)}))
    tm = ToolManager(Config(servers=(spec,), profile=Profile(), default_names=("calc",)))

    async def work() -> tuple[dict[str, object], CallOutcome, CallOutcome]:
        seeds = await tm.execute_tool_call("calc", "add", {"a": "2", "b": "40"})
        read = await tm.call("calc", "add", {"a": "2", "b": 40})
        refused = await tm.call("calc", "add", {"a": "2.5"})
        await tm.close()
        return seeds, read, refused

    seeds, read, refused = asyncio.run(work())
    assert seeds == {"server_name": "calc", "tool_name": "add", "result": "42"}
    assert (read.result, read.notes) == ("42", ['argument a: "2" sent as 2, as the server would read it'])
    assert (int(refused.exit_code), refused.error) == (2, "add: a: \"2.5\" is not of type 'integer'")
    assert log.read_text().splitlines() == ["add", "add"]


def test_a_near_miss_on_the_named_server_loses_to_the_exact_tool_elsewhere_with_one_note():
    specs = (
        ServerSpec(name="tool-alpha", transport="memory", target=build("tool-alpha", {"echo", "sleep"})),
        ServerSpec(name="tool-beta", transport="memory", target=build("tool-beta", {"sleepy"})),
    )
    tm = ToolManager(Config(servers=specs, profile=Profile(), default_names=("tool-alpha", "tool-beta")))
    answer = asyncio.run(tm.execute_tool_call("tool-alpha", "sleepy", {}))
    assert answer == {
        "server_name": "tool-beta",
        "tool_name": "sleepy",
        "result": "[Auto-corrected: Server 'tool-alpha' has no tool 'sleepy', but tool 'sleepy' was found only in "
        "server 'tool-beta', so automatically used 'tool-beta' instead] sleepy on tool-beta",
    }


class LegacyParams:
    """The fields of mcp 1.x's StdioServerParameters, which an agent on mcp 1.x hands over."""

    def __init__(self) -> None:
        self.command = sys.executable
        self.args = ["-P", "server.py"]
        self.env = {"KEY": "value"}
        self.cwd = None


def test_the_seeds_params_may_be_any_stdio_like_object_or_a_url_the_path_choosing_sse():
    configs = [
        {"name": "old", "params": LegacyParams()},
        {"name": "events", "params": "http://127.0.0.1:9/sse"},
        {"name": "stream", "params": "https://127.0.0.1:9/mcp"},
    ]
    specs = {spec.name: spec for spec in ToolManager(configs).config.servers}
    old = specs["old"]
    assert (old.transport, old.command, tuple(old.args), dict(old.env), old.cwd) == (
        "stdio",
        sys.executable,
        ("-P", "server.py"),
        {"KEY": "value"},
        None,
    )
    assert (specs["events"].transport, specs["stream"].transport) == ("sse", "streamable_http")


def test_params_that_are_neither_stdio_nor_http_list_as_that_servers_error_and_start_nothing():
    tm = ToolManager([{"name": "ftp", "params": "ftp://127.0.0.1/x"}, {"name": "odd", "params": object()}])
    defs = asyncio.run(tm.get_all_tool_definitions())
    assert [d["name"] for d in defs] == ["ftp", "odd"]
    assert defs[0]["tools"] == [
        {"error": "server 'ftp': params must be an http(s) URL or stdio parameters, got 'ftp://127.0.0.1/x'"}
    ]
    assert defs[1]["tools"] == [{"error": "server 'odd': unknown server params type object (no command)"}]
    answer = asyncio.run(tm.execute_tool_call("odd", "anything", {}))
    assert set(answer) == {"server_name", "tool_name", "error"} and "no command" in answer["error"]
