"""URL decoding of search results (upstream's decode_http_urls_in_dict): readable, pointing at the same place."""

from __future__ import annotations

import pytest

from miroctl.servers.helpers.urldecode import decode_urls, unquote_safely


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://zh.wikipedia.org/wiki/%E5%8C%97%E4%BA%AC", "https://zh.wikipedia.org/wiki/北京"),
        ("https://x.org/caf%C3%A9%2Fmenu", "https://x.org/café%2Fmenu"),  # an encoded slash stays a character
        ("https://x.org/?a=%26b%3Dc&d=%E4%B8%AD", "https://x.org/?a=%26b%3Dc&d=中"),
        ("https://x.org/100%25%20off", "https://x.org/100%25%20off"),  # the percent sign and space stay encoded
        ("https://x.org/%7Euser", "https://x.org/~user"),
        ("https://x.org/%0A%0Dheader", "https://x.org/%0A%0Dheader"),  # control characters are never decoded
        ("https://x.org/%E5%8C", "https://x.org/%E5%8C"),  # a broken UTF-8 run is left as it was
        ("https://x.org/%zz%4", "https://x.org/%zz%4"),
    ],
)
def test_unquote_safely_decodes_only_what_leaves_the_url_pointing_at_the_same_place(given, expected):
    assert unquote_safely(given) == expected


def test_decode_urls_walks_nested_lists_and_mappings_and_leaves_other_values_alone():
    data = {
        "organic": [{"link": "https://x.org/%E4%B8%AD", "position": 1, "snippet": "100%E4 not a url"}],
        "n": 3,
        "ok": True,
    }
    assert decode_urls(data) == {
        "organic": [{"link": "https://x.org/中", "position": 1, "snippet": "100%E4 not a url"}],
        "n": 3,
        "ok": True,
    }
