"""Tool arguments: schema-driven coercion of key=value, the JSON base, validation, signatures."""

import io

import pytest

from miroctl.base.errors import ArgumentError
from miroctl.base.models import ToolInfo
from miroctl.core import arguments as args

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "options": {"type": "object"},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "mode": {"enum": ["fast", "slow"]},
    },
    "required": ["text", "count"],
}
TOOL = ToolInfo(server="s", name="demo", input_schema=SCHEMA)


def test_pairs_are_coerced_to_the_types_the_schema_asks_for():
    built = args.build(
        SCHEMA, {}, ["text=42", "count=7", "ratio=0.5", "flag=yes", 'options={"a": 1}', "maybe=null", "mode=fast"]
    )
    assert built == {
        "text": "42",
        "count": 7,
        "ratio": 0.5,
        "flag": True,
        "options": {"a": 1},
        "maybe": None,
        "mode": "fast",
    }


def test_repeated_array_keys_accumulate_and_json_arrays_are_taken_whole():
    assert args.build(SCHEMA, {}, ["tags=a", "tags=b", "sizes=[1,2]"]) == {"tags": ["a", "b"], "sizes": [1, 2]}
    assert args.build(SCHEMA, {}, ["sizes=3", "sizes=4"]) == {"sizes": [3, 4]}


def test_raw_json_pairs_bypass_coercion():
    assert args.build(SCHEMA, {}, ['text:="x"', "count:=3", "extra:=[true]"]) == {
        "text": "x",
        "count": 3,
        "extra": [True],
    }


def test_pairs_override_the_json_base():
    assert args.build(SCHEMA, {"text": "base", "count": 1}, ["count=2"]) == {"text": "base", "count": 2}


def test_a_value_that_is_not_the_schema_type_is_a_one_line_argument_error():
    with pytest.raises(ArgumentError, match="argument count: expected integer, got 'many'"):
        args.build(SCHEMA, {}, ["count=many"])


def test_invalid_json_for_an_object_names_the_argument():
    with pytest.raises(ArgumentError, match="argument options: invalid JSON"):
        args.build(SCHEMA, {}, ["options={oops"])


def test_a_pair_without_equals_is_rejected():
    with pytest.raises(ArgumentError, match="'count' is not key=value"):
        args.split_pair("count")


def test_base_json_comes_inline_from_a_file_or_from_stdin(tmp_path):
    (tmp_path / "a.json").write_text('{"text": "file"}')
    assert args.load_base('{"text": "inline"}') == {"text": "inline"}
    assert args.load_base(f"@{tmp_path / 'a.json'}") == {"text": "file"}
    assert args.load_base("-", io.StringIO('{"text": "stdin"}')) == {"text": "stdin"}


def test_base_json_errors_say_where_and_what():
    with pytest.raises(ArgumentError, match=r"--args: invalid JSON at line 1 column 2"):
        args.load_base("{x")
    with pytest.raises(ArgumentError, match="expected a JSON object, got list"):
        args.load_base("[1]")
    with pytest.raises(ArgumentError, match="cannot read"):
        args.load_base("@/nonexistent/args.json")


def test_missing_required_arguments_are_named_and_the_signature_is_the_hint():
    with pytest.raises(ArgumentError) as raised:
        args.validate(TOOL, {"text": "x"})
    assert raised.value.message == "demo: missing required argument count"
    assert raised.value.hint.startswith("usage: demo(text: string, count: integer, ratio?: number")


def test_schema_violations_name_the_failing_path():
    with pytest.raises(ArgumentError, match=r"demo: tags\[1\]: 5 is not of type 'string'"):
        args.validate(TOOL, {"text": "x", "count": 1, "tags": ["a", 5]})


def test_an_unknown_argument_gets_a_did_you_mean():
    with pytest.raises(ArgumentError) as raised:
        args.validate(TOOL, {"text": "x", "count": 1, "cuont": 2})
    assert raised.value.message == "demo: unknown argument 'cuont'"
    assert "did you mean 'count'" in raised.value.hint


def test_unknown_arguments_pass_when_the_schema_allows_extra_properties():
    loose = ToolInfo(server="s", name="loose", input_schema={**SCHEMA, "additionalProperties": True})
    args.validate(loose, {"text": "x", "count": 1, "anything": 2})


def test_a_broken_schema_from_the_server_leaves_judgement_to_the_server():
    broken = ToolInfo(server="s", name="b", input_schema={"type": "object", "properties": {"a": {"type": 5}}})
    args.validate(broken, {"a": 1})


def test_signature_marks_optional_parameters_with_their_defaults():
    assert "flag?: boolean = false" in args.signature(TOOL)
    assert "maybe?: integer | null = null" in args.signature(TOOL)
    assert 'mode?: "fast" | "slow"' in args.signature(TOOL)
