"""URL rules: benchmark answer pages are refused before the call, wherever the URL hides in the arguments."""

from __future__ import annotations

import anyio
import pytest
from typer.testing import CliRunner

from miroctl.base.models import CallRequest
from miroctl.base.webpages import PageError, fetch
from miroctl.cli.app import app
from miroctl.core.manager import Manager
from miroctl.policy.decisions import Policy
from miroctl.policy.urls import UrlRules, from_env, to_env
from tests.conftest import parse_json
from tests.policy_support import calls, memory_spec, pool, web_server, webtools_yaml

BLOCKED = [
    "https://huggingface.co/datasets/gaia-benchmark/GAIA",
    "https://huggingface.co/spaces/gaia-benchmark/leaderboard",
    "http://WWW.HuggingFace.co./%64atasets/x",
    "huggingface.co//datasets/x",
    "https://user:pw@huggingface.co:443/datasets/a?b=1",
    "https://hf.co/datasets/x",
    "https://gaia-benchmark-leaderboard.hf.space/",
    "https://huggingface.co/api/datasets/x/parquet",
    "https://huggingface.co/./datasets/x",
    "https://huggingface.co/api/../datasets/x",
    "https://huggingface.co/models/%2e%2e/datasets/x",
    "https://huggingface.co/%252e/datasets/x",
    "https://huggingface\u3002co/datasets/x",
    "https://huggingface\uff0eco/spaces/x",
    "https://%68uggingface.co/datasets/x",
    "\uff48\uff54\uff54\uff50\uff53\uff1a\uff0f\uff0fhuggingface.co/datasets/x",
    "https://HUGGINGFACE.CO:443/DATASETS/x",
    # spellings the WHATWG URL parser (browsers, Node) resolves to the same page
    "https:/huggingface.co/datasets/x",
    "https:huggingface.co/datasets/x",
    "HTTPS:huggingface.co/datasets/x",
    "https:///huggingface.co/datasets/x",
    "https:\\\\huggingface.co\\datasets\\x",
    "https:/\\huggingface.co/datasets/x",
    "ht\ttps://hugging\nface.co/data\tsets/x",
    " \x00https://huggingface.co/datasets/x",
    "https://user@huggingface.co./datasets/x",
    "https://huggingface.co:/datasets/x",
    "https://hugging\u00adface.co/datasets/x",
    "https://\uff48\uff55\uff47\uff47\uff49\uff4e\uff47\uff46\uff41\uff43\uff45.co/datasets/x",
    "https://%68%75ggingface.co/%64atasets/x",
    # URLs nested in another: archives, readers, redirectors, percent-encoded, several levels
    "https://web.archive.org/web/2024/https://huggingface.co/datasets/x",
    "https://web.archive.org/web/2024id_/huggingface.co/datasets/x",
    "web.archive.org/web/2024/https://huggingface.co/datasets/x",
    "https://r.jina.ai/https://huggingface.co/datasets/x",
    "https://r.jina.ai/hf.co/spaces/x",
    "https://example.com/?u=https://hf.co/spaces/x",
    "https://example.com/?u=huggingface.co/datasets",
    "https://example.com/?u=hf.co/spaces&lang=en",
    "https://www.google.com/url?q=https://huggingface.co/datasets/x&sa=D",
    "https://example.com/go?u=https%3A%2F%2Fhuggingface.co%2Fdatasets%2Fx",
    "https://example.com/go?u=https%253A%252F%252Fhuggingface.co%252Fdatasets%252Fx",
    "https://example.com/go#https:/hf.co/spaces/x",
    "view-source:https://huggingface.co/datasets/x",
    "https://r.jina.ai/https://web.archive.org/web/2/https://example.com/go?u=https%3A%2F%2Fhf.co%2Fspaces%2Fx",
]
ALLOWED = [
    "https://huggingface.co/models",
    "https://huggingface.co/datasetsfoo",
    "https://github.com/huggingface/datasets",
    "https://example.com/docs/huggingface.co.html",
    "https://web.archive.org/web/2024/https://huggingface.co/models",
    "https://example.com/?q=huggingface+datasets",
    "https://nothuggingface.co/datasets/x",
    "https://huggingface.co/datasets/../models",
]


@pytest.mark.parametrize("url", BLOCKED)
def test_default_rules_block_hugging_face_dataset_and_space_urls_in_any_spelling(url):
    assert UrlRules().blocked_by(url) is not None


@pytest.mark.parametrize("url", ALLOWED)
def test_default_rules_leave_other_urls_alone(url):
    assert UrlRules().blocked_by(url) is None


@pytest.mark.parametrize(
    "url", ["http://0x7f.1/private", "http://2130706433/private", "http://0177.0.0.1/private/x", "http://127.1/private"]
)
def test_a_custom_rule_on_an_address_blocks_every_spelling_of_that_address(url):
    assert UrlRules(("127.0.0.1/private",)).blocked_by(url) == "127.0.0.1/private"


@pytest.mark.parametrize(
    "text",
    [
        "x = fetch('https:/huggingface.co/datasets/x')",
        "see<https:hf.co/spaces/x>, then",
        "[the data](https://hf.co/spaces/x)",
        "curl -L 'https://web.archive.org/web/2024/https://huggingface.co/datasets/x' | head",
        "get https%3A%2F%2Fhuggingface.co%2Fdatasets%2Fx decoded",
        "ht\ntps://huggingface.co/datasets/x",
    ],
)
def test_a_blocked_url_is_found_at_any_offset_of_any_string_argument(text):
    assert UrlRules().first_blocked({"code": ["ok", {"body": text}]}) is not None


def test_a_blocked_url_in_an_argument_name_is_found_too():
    assert UrlRules().first_blocked({"https://hf.co/spaces/x": 1}) is not None


def test_an_argument_with_more_urls_than_can_be_checked_is_refused():
    many = " ".join(f"https://example.com/{i}" for i in range(20_000))
    decision = Policy().check_urls({"text": many})
    assert decision is not None and decision.reason == "url_blocked"
    assert decision.message == "the arguments hold more than 2,000 URLs to check: refused unchecked"
    long_url = "https://huggingface.co/" + "./" * 40_000 + "datasets/x"
    assert UrlRules().blocked_by(long_url) is not None


def test_urls_are_found_in_url_keys_nested_values_and_inside_any_text():
    rules = UrlRules()
    assert rules.first_blocked({"link": "hf.co/spaces/x"}) == ("hf.co/spaces/x", "hf.co/spaces")
    assert rules.first_blocked({"pages": ["https://a.org", "https://hf.co/datasets/y"]})[1] == "hf.co/datasets"
    code = 'requests.get("https://huggingface.co/datasets/x/resolve/main/a.csv")'
    assert rules.first_blocked({"code": code})[1] == "huggingface.co/datasets"
    assert rules.first_blocked({"query": "huggingface datasets gaia"}) is None


def test_glob_patterns_and_custom_rules_replace_the_defaults():
    rules = UrlRules(("*.internal.example/*", "intranet.example/admin"))
    assert rules.blocked_by("https://wiki.internal.example/page")
    assert rules.blocked_by("https://intranet.example/admin/users")
    assert not rules.blocked_by("https://intranet.example/public")
    assert not rules.blocked_by("https://huggingface.co/datasets/x")


def test_search_results_drop_blocked_links_and_servers_read_the_rules_from_their_env():
    rules = from_env({"MIROCTL_URL_BLOCK": to_env(UrlRules())})
    results = [{"link": "https://huggingface.co/datasets/x"}, {"link": "https://example.org"}, "https://hf.co/spaces/y"]
    assert rules.drop_blocked(results) == [{"link": "https://example.org"}]
    assert from_env({}) == UrlRules()


def test_a_blocked_url_is_refused_in_process_before_the_tool_is_called(tmp_path):
    record = tmp_path / "calls.txt"

    async def main():
        async with Manager(pool(memory_spec("web", record))) as manager:
            return await manager.call(CallRequest("web", "visit", {"pages": ["https://hf.co/datasets/a"]}))

    outcome = anyio.run(main)
    assert outcome.exit_code == 5
    assert outcome.decision["reason"] == "url_blocked"
    assert calls(record) == []


def test_call_with_a_hugging_face_dataset_url_exits_5_and_the_server_records_no_call(write_config, tmp_path):
    record = tmp_path / "calls.txt"
    path = write_config({"web": webtools_yaml("web", "--record", str(record))})
    runner = CliRunner()
    warm = runner.invoke(app, ["call", "-c", str(path), "web", "fetch", "url=https://example.org/", "--json"])
    assert warm.exit_code == 0, warm.stderr
    result = runner.invoke(
        app,
        ["call", "-c", str(path), "web", "scrape", "url=https://huggingface.co/datasets/gaia-benchmark/GAIA", "--json"],
    )
    assert result.exit_code == 5, result.stderr
    envelope = parse_json(result.stdout)
    assert envelope["error_kind"] == "denied"
    assert envelope["decision"]["reason"] == "url_blocked"
    assert envelope["fallback"] is None
    assert calls(record) == ['call fetch {"url": "https://example.org/"}']


def test_a_profile_can_replace_the_url_rules(write_config, tmp_path):
    path = write_config({"web": webtools_yaml("web")}, url_rules={"block": ["example.org/private"]})
    result = CliRunner().invoke(
        app, ["call", "-c", str(path), "web", "fetch", "url=https://example.org/private/x", "--json"]
    )
    assert result.exit_code == 5, result.stderr
    assert "example.org/private" in parse_json(result.stdout)["error"]


@pytest.mark.parametrize(
    "url",
    [
        "https://huggingface.co/./datasets/x",
        "https://huggingface.co/api/../datasets/x",
        "https://huggingface\u3002co/datasets/x",
        "https:/huggingface.co/datasets/x",
        "https://web.archive.org/web/2024/https://huggingface.co/datasets/x",
        "https://example.com/go?u=https%3A%2F%2Fhuggingface.co%2Fdatasets%2Fx",
    ],
)
def test_a_disguised_dataset_url_exits_5_and_the_server_records_no_call(write_config, tmp_path, url):
    record = tmp_path / "calls.txt"
    path = write_config({"web": webtools_yaml("web", "--record", str(record))})
    result = CliRunner().invoke(app, ["call", "-c", str(path), "web", "fetch", f"url={url}", "--json"])
    assert result.exit_code == 5, result.stderr
    assert parse_json(result.stdout)["decision"]["reason"] == "url_blocked"
    assert calls(record) == []


def test_a_redirect_to_a_dot_segment_spelling_of_a_blocked_url_is_refused_by_page_fetches():
    rules = from_env({"MIROCTL_URL_BLOCK": "127.0.0.1/private"})
    pages = {"/go": (302, "/public/%2e%2e/private/x", ""), "/private/x": (200, "text/plain", "the answers")}
    with web_server(pages) as base, pytest.raises(PageError, match=r"blocked by the url rule '127\.0\.0\.1/private'"):
        fetch(f"{base}/go", max_bytes=1000, timeout=10, user_agent="test", blocked_by=rules.blocked_by)
