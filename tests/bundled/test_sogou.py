"""sogou_search against a fake Tencent Cloud SearchPro on 127.0.0.1 that checks the TC3-HMAC-SHA256 signature
as Tencent documents it; Tencent's own SDK signs the requests, the server runs in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.bundled.conftest import memory_spec, session, text_of
from tests.bundled.research import payload, quick_retries
from tests.conftest import refused_port
from tests.fakes.tencent import SECRET_ID, SECRET_KEY, FakeSearchPro, failure, page


@pytest.fixture
def searchpro(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSearchPro]:
    fake = FakeSearchPro()
    fake.index["北京 天气"] = [
        page("北京天气预报", "https://weather.example.cn/%E5%8C%97%E4%BA%AC?city=%E5%8C%97%E4%BA%AC%26x"),
        page("Mirror", "https://unifuncs.example.com/page/1"),
        page("Dataset", "https://huggingface.co/datasets/some/answers"),
    ]
    with fake.serve() as base:
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
        monkeypatch.setenv("SOGOU_BASE_URL", base)
        monkeypatch.delenv("MIROCTL_URL_BLOCK", raising=False)
        quick_retries(monkeypatch)
        yield fake


def sogou(**arguments: object):
    return session(memory_spec("search"), ("sogou_search", arguments))[0]


def test_sogou_search_sends_a_signed_searchpro_request_and_returns_the_pages_reduced(searchpro):
    outcome = sogou(q=" 北京 天气 ", num=20)
    data = payload(outcome)
    (request,) = searchpro.seen()
    assert request.headers["x-tc-action"] == "SearchPro" and request.headers["x-tc-version"] == "2025-05-08"
    assert request.headers["authorization"].startswith(f"TC3-HMAC-SHA256 Credential={SECRET_ID}/")
    assert request.json() == {"Query": "北京 天气", "Mode": 0, "Cnt": 20}
    assert data["Query"] == "北京 天气"
    assert [p["title"] for p in data["Pages"]] == ["北京天气预报"]
    assert set(data["Pages"][0]) == {"title", "url", "passage", "date", "site"}


def test_sogou_search_decodes_urls_but_keeps_the_encodings_that_carry_meaning(searchpro):
    data = payload(sogou(q="北京 天气"))
    assert data["Pages"][0]["url"] == "https://weather.example.cn/北京?city=北京%26x"


def test_sogou_search_drops_unifuncs_mirrors_and_blocked_dataset_pages_and_counts_them(searchpro):
    data = payload(sogou(q="北京 天气"))
    assert data["dropped_by_url_rules"] == 2
    assert all("unifuncs" not in p["url"] and "huggingface" not in p["url"] for p in data["Pages"])


def test_a_wrong_secret_key_fails_the_signature_check_and_says_which_credentials(searchpro, monkeypatch):
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "not-the-key")
    outcome = sogou(q="北京 天气")
    assert outcome.exit_code == 1
    assert "Tencent Cloud refused the credentials (AuthFailure.SignatureFailure" in outcome.error
    assert "not-the-key" not in outcome.error


def test_a_rate_limited_request_is_tried_again_and_then_answers(searchpro):
    searchpro.script(failure("RequestLimitExceeded", "Your request frequency has exceeded the limit."))
    outcome = sogou(q="北京 天气")
    assert outcome.exit_code == 0, outcome.error
    assert len(searchpro.seen()) == 2


def test_missing_credentials_are_a_tool_error_and_nothing_is_sent(searchpro, monkeypatch):
    monkeypatch.delenv("TENCENTCLOUD_SECRET_KEY")
    outcome = sogou(q="北京 天气")
    assert outcome.exit_code == 1
    assert "TENCENTCLOUD_SECRET_ID or TENCENTCLOUD_SECRET_KEY is not set" in text_of(outcome)
    assert searchpro.seen() == []


@pytest.mark.parametrize("num", [5, 15, 60])
def test_a_count_searchpro_does_not_offer_is_refused_before_sending(searchpro, num):
    outcome = sogou(q="北京 天气", num=num)
    assert outcome.exit_code == 1 and "num must be one of 10, 20, 30, 40 or 50" in outcome.error
    assert searchpro.seen() == []


def test_an_unreachable_endpoint_is_tried_again_then_a_tool_error_saying_so(searchpro, monkeypatch):
    monkeypatch.setenv("SOGOU_BASE_URL", f"http://127.0.0.1:{refused_port()}")
    outcome = sogou(q="北京 天气")
    assert outcome.exit_code == 1
    assert "Tencent Cloud SearchPro failed after 3 attempts (ClientNetworkError" in outcome.error


def test_a_base_url_that_is_no_http_url_is_a_tool_error_naming_the_setting(searchpro, monkeypatch):
    monkeypatch.setenv("SOGOU_BASE_URL", "ftp://wsa.example")
    outcome = sogou(q="北京 天气")
    assert outcome.exit_code == 1 and "SOGOU_BASE_URL must be an http(s) URL" in outcome.error
