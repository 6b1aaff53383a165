"""serve passes resources, resource templates and prompts through, namespaced and under the same policy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client, MCPError
from typer.testing import CliRunner

from miroctl.base.errors import UsageError
from miroctl.base.models import ServerSpec
from miroctl.cli.app import app
from miroctl.config.loader import Config, Profile
from miroctl.core.manager import Manager
from miroctl.gateway import toolmap
from miroctl.gateway.passthrough import expands, unwrap, wrap
from miroctl.gateway.server import Gateway, build_server
from miroctl.policy.decisions import Policy
from tests.conftest import ROOT, fixture_yaml
from tests.gateway_support import http_gateway_thread, pool_files, without_timing, write_pool
from tests.servers.fixture import build

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def memory(name: str, tools: str = "echo") -> ServerSpec:
    return ServerSpec(name=name, transport="memory", target=build(name, set(tools.split(","))))


@asynccontextmanager
async def gateway_client(
    *specs: ServerSpec, blacklist: frozenset[tuple[str, str]] = frozenset(), mode: str = "normal", plain: bool = False
) -> AsyncIterator[tuple[Gateway, Any]]:
    config = Config(
        servers=specs,
        profile=Profile(blacklist=blacklist, startup_timeout=30),
        default_names=tuple(s.name for s in specs),
    )
    policy = Policy.from_profile(config.profile).with_overrides(mode=mode)
    async with Manager(config, policy=policy) as manager:
        gateway = Gateway(manager, list(specs), plain=plain)
        await gateway.refresh()
        async with Client(build_server(gateway)) as client:
            yield gateway, client


def test_gateway_uris_round_trip_to_the_upstream_uri_verbatim():
    for uri in ("fixture://notes", "file:///a%20b/c?d=1#e", "https://x.test/{path}"):
        assert unwrap(wrap("tool-x", uri)) == ("tool-x", uri)
    assert unwrap("fixture://notes") is None
    assert unwrap("miroctl://alpha") is None


async def test_resources_are_listed_under_gateway_uris_and_read_back_from_their_server():
    async with gateway_client(memory("alpha"), memory("tool-beta")) as (_, client):
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        result = await client.read_resource("miroctl://beta/fixture://notes")
    assert {"miroctl://alpha/fixture://notes", "miroctl://beta/fixture://notes"} <= set(listed)
    assert listed["miroctl://alpha/fixture://notes"].description == "Plain notes.\nSecond line."
    assert result.contents[0].text == "notes of tool-beta"
    assert result.contents[0].uri == "miroctl://beta/fixture://notes"


async def test_a_resource_template_expanded_by_the_host_reads_the_expanded_upstream_uri():
    async with gateway_client(memory("alpha")) as (_, client):
        templates = (await client.list_resource_templates()).resource_templates
        template = next(t.uri_template for t in templates if t.name == "item")
        result = await client.read_resource(template.replace("{item}", "42"))
    assert template == "miroctl://alpha/fixture://items/{item}"
    assert result.contents[0].text == "item 42"


async def test_reading_a_uri_outside_the_gateway_is_a_resource_not_found_error():
    async with gateway_client(memory("alpha")) as (_, client):
        with pytest.raises(MCPError) as raised:
            await client.read_resource("fixture://notes")
    assert raised.value.code == -32002
    assert "miroctl://SERVER/URI (SERVER: alpha)" in raised.value.message


async def test_prompts_are_named_like_tools_and_filled_in_by_their_server():
    async with gateway_client(memory("alpha"), memory("beta")) as (_, client):
        names = {p.name for p in (await client.list_prompts()).prompts}
        result = await client.get_prompt("beta__review", {"code": "x = 1"})
    assert names == {"alpha__review", "beta__review"}
    assert result.messages[0].content.text == "Review this code for bugs:\nx = 1"


async def test_a_prompt_missing_a_required_argument_is_invalid_params_and_names_it():
    async with gateway_client(memory("alpha")) as (_, client):
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("alpha__review", {})
    assert raised.value.code == -32602
    assert "missing required argument code" in raised.value.message


async def test_blacklisted_prompts_and_resources_are_hidden_and_refused():
    blacklist = frozenset({("alpha", "review"), ("alpha", "notes"), ("alpha", "fixture://items/*")})
    async with gateway_client(memory("alpha"), blacklist=blacklist) as (_, client):
        prompts = (await client.list_prompts()).prompts
        uris = {r.uri for r in (await client.list_resources()).resources}
        with pytest.raises(MCPError) as raised:
            await client.read_resource("miroctl://alpha/fixture://items/7")
        with pytest.raises(MCPError):
            await client.get_prompt("alpha__review", {"code": "x"})
    assert prompts == []
    assert "miroctl://alpha/fixture://notes" not in uris
    assert "miroctl://alpha/fixture://pixel.png" in uris
    assert "denied by the policy" in raised.value.message


async def test_a_server_blacklisted_whole_offers_no_resources_or_prompts():
    async with gateway_client(memory("alpha"), memory("beta"), blacklist=frozenset({("alpha", "*")})) as (_, client):
        uris = {r.uri for r in (await client.list_resources()).resources}
        names = {p.name for p in (await client.list_prompts()).prompts}
    assert all(uri.startswith("miroctl://beta/") for uri in uris)
    assert names == {"beta__review"}


async def test_read_only_mode_keeps_resources_and_prompts_readable():
    async with gateway_client(memory("alpha", "echo,add"), mode="read_only") as (_, client):
        tools = {t.name for t in (await client.list_tools()).tools}
        result = await client.read_resource("miroctl://alpha/fixture://notes")
        prompt = await client.get_prompt("alpha__review", {"code": "y"})
    assert tools == {"alpha__echo"}
    assert result.contents[0].text == "notes of alpha"
    assert prompt.messages


async def test_plain_names_expose_tools_and_prompts_without_the_server_prefix():
    async with gateway_client(memory("alpha", "add"), memory("beta", "echo"), plain=True) as (gateway, client):
        tools = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert tools == {"add", "echo"}
    assert result.content[0].text == "5"
    assert gateway.map.collisions == ()


async def test_plain_names_shared_by_two_servers_are_a_usage_error_naming_both():
    async with gateway_client(memory("alpha", "echo"), memory("beta", "echo"), plain=True) as (gateway, _):
        with pytest.raises(UsageError) as raised:
            toolmap.check_plain(gateway.map.collisions)
    assert raised.value.message == "--plain-names: tool 'echo' is offered by both alpha and beta"


async def test_plain_names_expose_resources_and_templates_under_their_own_uris_and_read_them_back():
    async with gateway_client(memory("alpha"), plain=True) as (_, client):
        uris = {r.uri for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        notes = await client.read_resource("fixture://notes")
        item = await client.read_resource("fixture://items/42")
        namespaced = await client.read_resource("miroctl://alpha/fixture://notes")
    assert "fixture://notes" in uris and "fixture://items/{item}" in templates
    assert (notes.contents[0].uri, notes.contents[0].text) == ("fixture://notes", "notes of alpha")
    assert item.contents[0].text == "item 42"
    assert namespaced.contents[0].uri == "miroctl://alpha/fixture://notes"


async def test_plain_names_keep_a_uri_two_servers_offer_namespaced():
    async with gateway_client(memory("alpha"), memory("beta"), plain=True) as (_, client):
        uris = {r.uri for r in (await client.list_resources()).resources}
        with pytest.raises(MCPError) as raised:
            await client.read_resource("fixture://notes")
        beta = await client.read_resource("miroctl://beta/fixture://notes")
    assert "fixture://notes" not in uris
    assert {"miroctl://alpha/fixture://notes", "miroctl://beta/fixture://notes"} <= uris
    assert raised.value.code == -32002
    assert "a URI one server lists, or miroctl://SERVER/URI" in raised.value.message
    assert beta.contents[0].text == "notes of beta"


async def test_plain_names_refuse_a_uri_two_servers_list_even_when_only_one_has_a_matching_template():
    blacklist = frozenset({("beta", "fixture://items/*")})
    async with gateway_client(memory("alpha"), memory("beta"), blacklist=blacklist, plain=True) as (gateway, client):
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        item = await client.read_resource("fixture://items/7")
        gateway.catalog.owners["fixture://items/8"] = None  # as if alpha and beta both listed it
        with pytest.raises(MCPError) as raised:
            await client.read_resource("fixture://items/8")
    assert "fixture://items/{item}" in templates
    assert item.contents[0].text == "item 7"
    assert raised.value.code == -32002


def test_a_uri_matches_a_template_only_when_its_expressions_can_be_filled_in_to_make_it():
    assert expands("test://template/{id}/data", "test://template/123/data")
    assert not expands("test://template/{id}/data", "test://template/123/other")
    assert expands("file:///{+path}{?q}", "file:///a/b?q=1")
    assert not expands("fixture://items/{item}", "fixture://notes")
    assert expands("{a}", "") and not expands("ab{x}ba", "aba")


def test_a_hostile_template_costs_a_scan_of_the_uri_not_a_backtracking_search():
    # No clock: a backtracking search of forty expressions over 20,000 characters would not end in anyone's
    # lifetime, and the per-test timeout fails it.
    template = "{a}" + "a{b}" * 40 + "x"
    assert not expands(template, "a" * 20_000)


# ---------------------------------------------------------------------------------------------- --via read, prompt


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A gateway over HTTP serving alpha and beta; beta's prompt `review` is blacklisted."""
    config = write_pool(tmp_path_factory.mktemp("pass"), pool_files(), tool_blacklist=[["beta", "review"]])
    with http_gateway_thread(config) as url:
        yield {"config": str(config), "url": url}


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


READS = {
    "text": ["read", "alpha", "fixture://notes"],
    "template": ["read", "alpha", "fixture://items/9"],
    "no such resource": ["read", "alpha", "fixture://nothing"],
    "no such server": ["read", "gamma", "fixture://notes"],
    "prompt": ["prompt", "alpha", "review", "code=x = 1", "focus=style"],
    "prompt missing an argument": ["prompt", "alpha", "review"],
    "no such prompt": ["prompt", "alpha", "reviw", "code=x"],
}


@pytest.mark.parametrize("words", READS.values(), ids=READS.keys())
def test_read_and_prompt_via_give_the_envelope_and_exit_code_of_the_direct_path(pool, words):
    direct = invoke(*words, "--json", "--config", pool["config"])
    warm = invoke(*words, "--json", "--via", pool["url"])
    assert warm.exit_code == direct.exit_code, warm.stderr
    assert without_timing(json.loads(warm.stdout)) == without_timing(json.loads(direct.stdout))


def test_read_via_prints_the_text_as_the_direct_path_does(pool):
    result = invoke("read", "alpha", "fixture://notes", "--via", pool["url"])
    assert result.exit_code == 0
    assert result.stdout == invoke("read", "alpha", "fixture://notes", "--config", pool["config"]).stdout


def test_read_via_takes_a_gateway_uri_as_a_host_sees_it(pool):
    result = invoke("read", "miroctl://beta/fixture://notes", "--json", "--via", pool["url"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["contents"][0]["text"] == "notes of beta"


def test_prompt_via_denied_by_the_blacklist_exits_5(pool):
    result = invoke("prompt", "beta", "review", "code=x", "--json", "--via", pool["url"])
    assert result.exit_code == 5
    assert json.loads(result.stdout)["error_kind"] == "denied"


def test_read_and_prompt_via_take_the_warm_path_without_typer_or_the_sdk(pool):
    code = (
        "import sys; from miroctl.launch import entry; "
        f"c = entry.run(['prompt', 'alpha', 'review', 'code=z', '--via', {pool['url']!r}]); "
        "assert not {'typer', 'mcp', 'omegaconf'} & set(sys.modules), sorted(sys.modules); sys.exit(c)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[user]\nReview this code for bugs:\nz\n"


def test_serve_with_plain_names_that_clash_exits_2_naming_both_servers(write_config, leak_tag):
    env = {"MIROCTL_TEST_TAG": leak_tag}
    config = write_config(
        {"alpha": fixture_yaml("alpha", "--tools", "echo", env=env), "beta": fixture_yaml("beta", env=env)},
        tool_config=["alpha", "beta"],
    )
    result = invoke("serve", "--config", str(config), "--plain-names")
    assert result.exit_code == 2
    assert "--plain-names: tool 'echo' is offered by both alpha and beta" in result.stderr
