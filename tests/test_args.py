"""Tool arguments: schema-driven coercion of key=value, the JSON base, validation, signatures."""

import io
import json
import math

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


LAX = ToolInfo(
    server="s",
    name="lax",
    input_schema={
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "text": {"type": "string"},
            "options": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "integer"}},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "words": {"anyOf": [{"type": "array"}, {"type": "string"}]},
            "point": {"$ref": "#/$defs/Point"},
        },
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}, "on": {"type": "boolean"}}}},
    },
)

# A string and the JSON type of a parameter: what pydantic's lax mode (the servers' validation) gives.
READINGS = [
    *(
        (text, "integer")
        for text in ("2024", "-3", "+5", " 42 ", "2_000", "2024.0", "00012", "2024.5", "1e3", "2024.", "_2", "0x10")
    ),
    *(
        (text, "number")
        for text in ("2.5", "2024", "1e3", "1E-2", ".5", "1.", "-0.25", " 7 ", "2_000.5", "inf", "nan", "1e999", "x")
    ),
    *(
        (text, "boolean")
        for text in ("true", "False", "YES", "no", "on", "Off", "1", "0", "y", "N", "t", "f", " true", "2", "maybe")
    ),
]


@pytest.mark.parametrize(("text", "kind"), READINGS)
def test_a_string_is_read_as_its_type_exactly_when_pydantics_lax_mode_reads_it_so(text, kind):
    from pydantic import TypeAdapter, ValidationError

    python_type = {"integer": int, "number": float, "boolean": bool}[kind]
    try:
        expected = TypeAdapter(python_type).validate_python(text)
    except ValidationError:
        expected = None
    tool = ToolInfo(server="s", name="t", input_schema={"type": "object", "properties": {"v": {"type": kind}}})
    values, notes = args.lenient(tool, {"v": text})
    if expected is None or (isinstance(expected, float) and not math.isfinite(expected)):
        assert (values, notes) == ({"v": text}, [])  # left as given: validation refuses it, as the server would
    else:
        assert values["v"] == expected and type(values["v"]) is not str
        assert notes == [
            f"argument v: {json.dumps(text)} sent as {json.dumps(values['v'])}, as the server would read it"
        ]


def test_json_strings_become_the_object_or_array_the_parameter_takes_and_say_so():
    values, notes = args.lenient(LAX, {"options": '{"a": 1}', "tags": "[1, 2]"})
    assert values == {"options": {"a": 1}, "tags": [1, 2]}
    assert notes == [
        "argument options: a JSON string sent as an object, as the server would read it",
        "argument tags: a JSON string sent as an array, as the server would read it",
    ]
    assert args.lenient(LAX, {"options": "[1]", "tags": '{"a": 1}'}) == ({"options": "[1]", "tags": '{"a": 1}'}, [])


def test_values_the_schema_admits_or_leaves_open_are_never_changed():
    given = {"count": 3, "ratio": 2, "flag": False, "text": "2024", "options": {}, "maybe": None, "extra": "7"}
    assert args.lenient(LAX, given) == (given, [])


def test_a_number_for_a_string_is_left_for_validation_to_refuse_as_the_server_does():
    assert args.lenient(LAX, {"text": 2024}) == ({"text": 2024}, [])
    with pytest.raises(ArgumentError, match="lax: text: 2024 is not of type 'string'"):
        args.validate(LAX, {"text": 2024})


def test_a_union_is_read_only_when_one_of_its_types_reads_the_string():
    values, notes = args.lenient(LAX, {"maybe": "7"})
    assert values == {"maybe": 7} and len(notes) == 1
    assert args.lenient(LAX, {"either": "1"}) == ({"either": "1"}, [])  # integer 1 or true: ambiguous
    assert args.lenient(LAX, {"words": "[1]"}) == ({"words": "[1]"}, [])  # a string is admitted as it is


def test_values_inside_objects_and_arrays_are_read_but_json_strings_only_at_the_top():
    values, notes = args.lenient(LAX, {"point": {"x": "3", "on": "yes"}, "tags": ["1", "2"]})
    assert values == {"point": {"x": 3, "on": True}, "tags": [1, 2]}
    assert [n.split(":")[0] for n in notes] == [
        "argument point.x",
        "argument point.on",
        "argument tags[0]",
        "argument tags[1]",
    ]
    nested = {"point": {"x": 1, "on": True}, "tags": [1]}
    assert args.lenient(LAX, {"point": '{"x": "3"}'})[0] == {"point": {"x": 3}}
    assert args.lenient(
        ToolInfo(
            server="s",
            name="n",
            input_schema={
                "type": "object",
                "properties": {"outer": {"type": "object", "properties": {"inner": {"type": "object"}}}},
            },
        ),
        {"outer": {"inner": "{}"}},
    ) == ({"outer": {"inner": "{}"}}, [])
    assert args.lenient(LAX, nested) == (nested, [])


def test_a_schema_that_cannot_be_used_changes_nothing():
    broken = ToolInfo(server="s", name="b", input_schema={"type": "object", "properties": {"n": {"type": 5}}})
    assert args.lenient(broken, {"n": "2"}) == ({"n": "2"}, [])


def test_a_list_of_values_is_never_read_leniently_since_a_literal_refuses_what_an_enum_takes():
    schema = {
        "type": "object",
        "properties": {
            "level": {"enum": [1, 2], "type": "integer"},
            "maybe": {"anyOf": [{"const": True}, {"type": "null"}]},
            "count": {"type": "integer"},
        },
    }
    tool = ToolInfo(server="s", name="e", input_schema=schema)
    values, notes = args.lenient(tool, {"level": "2", "maybe": "true", "count": "2"})
    assert values == {"level": "2", "maybe": "true", "count": 2} and len(notes) == 1


def test_values_nested_deeper_than_the_limit_are_sent_as_given_and_a_deep_tree_does_not_overflow():
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"n": {"type": "integer"}, "kid": {"$ref": "#/$defs/Node"}}}
        },
    }
    tool = ToolInfo(server="s", name="t", input_schema=schema)
    tree: dict[str, object] = {"n": "1"}
    for _ in range(900):
        tree = {"n": "1", "kid": tree}
    values, notes = args.lenient(tool, {"tree": tree})
    assert len(notes) == args.LAX_DEPTH  # tree.n at depth 1 down to the n at depth 32
    assert values["tree"]["n"] == 1
