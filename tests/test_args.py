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


def test_a_required_parameter_with_a_default_is_left_for_the_server_to_fill():
    schema = {
        "type": "object",
        "properties": {"scale": {"type": "string", "default": "css"}, "name": {"type": "string"}},
        "required": ["scale", "name"],
    }
    tool = ToolInfo(server="s", name="shot", input_schema=schema)
    assert args.validate(tool, {"name": "x"}) == []
    with pytest.raises(ArgumentError) as raised:
        args.validate(tool, {})
    assert raised.value.message == "shot: missing required argument name"


def test_argument_errors_spell_values_as_json_not_python():
    with pytest.raises(ArgumentError) as raised:
        args.validate(TOOL, {"text": "x", "count": 1, "ratio": None})
    assert raised.value.message == "demo: ratio: null is not of type 'number'"
    with pytest.raises(ArgumentError) as raised:
        args.validate(TOOL, {"text": "x", "count": 1, "mode": True})
    assert raised.value.message == 'demo: mode: true is not one of ["fast", "slow"]'


def test_schema_violations_name_the_failing_path():
    with pytest.raises(ArgumentError, match=r"demo: tags\[1\]: 5 is not of type 'string'"):
        args.validate(TOOL, {"text": "x", "count": 1, "tags": ["a", 5]})


def test_an_unknown_argument_gets_a_did_you_mean():
    with pytest.raises(ArgumentError) as raised:
        args.validate(TOOL, {"text": "x", "count": 1, "cuont": 2})
    assert raised.value.message == "demo: unknown argument 'cuont'"
    assert "did you mean 'count'" in raised.value.hint


def test_unknown_arguments_pass_with_a_note_when_the_schema_allows_extra_properties():
    loose = ToolInfo(server="s", name="loose", input_schema={**SCHEMA, "additionalProperties": True})
    notes = args.validate(loose, {"text": "x", "count": 1, "anything": 2})
    assert notes == ["'anything' is not a declared parameter of loose; sent as given"]
    assert args.validate(TOOL, {"text": "x", "count": 1}) == []


def test_a_repeated_key_is_an_error_unless_the_parameter_takes_a_list():
    with pytest.raises(ArgumentError) as raised:
        args.build(SCHEMA, {}, ["count=1", "count=2"])
    assert raised.value.message == "argument count is given twice, and it takes one value"
    with pytest.raises(ArgumentError, match="argument text is given twice"):
        args.build(SCHEMA, {}, ["text=a", 'text:="b"'])
    assert args.build(SCHEMA, {}, ["tags=a", "tags=b"]) == {"tags": ["a", "b"]}


def test_one_object_given_for_a_list_of_objects_is_wrapped():
    schema = {"properties": {"points": {"type": "array", "items": {"type": "object"}}}}
    assert args.build(schema, {}, ['points={"x": 1}']) == {"points": [{"x": 1}]}
    assert args.build(schema, {}, ['points=[{"x": 1}, {"x": 2}]']) == {"points": [{"x": 1}, {"x": 2}]}


def test_text_that_only_looks_like_json_stays_text_where_the_schema_takes_text():
    schema = {"properties": {"q": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}}}
    assert args.build(schema, {}, ["q=[not json"]) == {"q": "[not json"}
    assert args.build(schema, {}, ['q=["a"]']) == {"q": ["a"]}
    with pytest.raises(ArgumentError) as raised:
        args.build(SCHEMA, {}, ["options={oops"])
    assert "options:=" in raised.value.hint


def test_pairs_follow_local_refs_to_the_type_they_point_at():
    schema = {
        "properties": {"p": {"$ref": "#/$defs/P"}, "n": {"$ref": "#/definitions/N"}},
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "definitions": {"N": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    }
    assert args.build(schema, {}, ['p={"x": 3}', "n=4"]) == {"p": {"x": 3}, "n": 4}


def test_a_dotted_target_takes_the_longest_server_name_that_exists(write_config):
    from miroctl.config.loader import load
    from tests.conftest import hostile_yaml

    loaded = load(str(write_config({"api": hostile_yaml("api"), "api.v2": hostile_yaml("api.v2")})))
    assert args.split_target(["api.v2.search", "q=x"], loaded) == ("api.v2", "search", ["q=x"])
    assert args.split_target(["api.search"], loaded) == ("api", "search", [])
    assert args.split_target(["api.v2.tools.get"], loaded) == ("api.v2", "tools.get", [])


def test_a_broken_schema_from_the_server_leaves_judgement_to_the_server():
    broken = ToolInfo(server="s", name="b", input_schema={"type": "object", "properties": {"a": {"type": 5}}})
    assert args.validate(broken, {"a": 1}) == ["b's input schema is not valid JSON Schema: arguments sent unchecked"]


def test_signature_marks_optional_parameters_with_their_defaults():
    assert "flag?: boolean = false" in args.signature(TOOL)
    assert "maybe?: integer | null = null" in args.signature(TOOL)
    assert 'mode?: "fast" | "slow"' in args.signature(TOOL)
