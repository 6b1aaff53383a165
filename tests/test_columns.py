"""The column rules every table follows (render/columns.py): tokens whole, running text in the room left,
lines when a table cannot fit, and … only on a terminal."""

from __future__ import annotations

from miroctl.render.columns import PARAMETERS, Column, frame, parameters_header, shortened, widths, wrap


def test_tokens_keep_their_width_and_the_text_gets_half_of_what_they_leave():
    columns = [Column.tokens("tool", ["run_python_code"]), Column.text("description", ["x" * 200])]
    assert widths(columns, 100) == [15, 85]
    parameters = Column.folding(PARAMETERS, least=12, full=40)
    assert widths([columns[0], columns[1], parameters], 75) == [15, 30, 30]  # the types wrap first


def test_a_short_description_takes_no_more_room_than_it_needs():
    columns = [
        Column.tokens("tool", ["echo"]),
        Column.text("description", ["Echo."]),
        Column.folding(PARAMETERS, 6, 13),
    ]
    assert widths(columns, 60) == [4, 16, 23]  # room to spare: the parameters' header on one line
    assert widths([*columns[:1], Column.text("description", ["x" * 80]), columns[2]], 60) == [4, 43, 13]


def test_columns_that_cannot_fit_at_their_least_ask_for_lines_instead():
    columns = [Column.tokens("server", ["a-rather-long-server-name"]), Column.tokens("protocol", ["2026-07-28"])]
    assert widths(columns, 35) == [25, 10]
    assert widths(columns, 34) is None
    assert widths([columns[0], Column.text("reason", ["exited"])], 40) is None  # the text needs 16


def test_the_frames_of_the_heavy_and_the_light_table():
    assert (frame(3), frame(8, light=True)) == (10, 16)


def test_the_parameters_header_goes_on_two_lines_only_where_it_does_not_fit_on_one():
    assert parameters_header(23) == "parameters (* required)"
    assert parameters_header(22) == "parameters\n(* required)"
    short = Column.folding(PARAMETERS, least=3, full=5)
    assert short == Column(12, 12, header=23)  # "(* required)" is never split
    assert widths([Column.tokens("tool", ["t"]), short], 40) == [4, 23]  # one line where there is room


def test_text_wraps_between_words_only_and_is_shortened_only_on_a_terminal():
    url = "https://example.com/a-very-long-path-that-is-one-word"
    assert wrap(f"see {url} now", 20) == ["see", url, "now"]
    text = "one two three four five six seven eight nine ten"
    assert shortened(text, 10, 2, terminal=False) == text
    assert shortened(text, 10, 2, terminal=True) == "one two\nthree fou…"
