"""backends/_json.py: the bounded repair of broken JSON tool arguments."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends import ArgumentsError, parse_json_object, repair_json
from backends._json import MAX_CHARS, MAX_DEPTH

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
JSON_OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5)


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here you go:\n```json\n{"a": 1}\n```\nAnything else?', {"a": 1}),
        ('{"a": 1,}', {"a": 1}),
        ('{"a": [1, 2,],}', {"a": [1, 2]}),
        ("{'a': 'b'}", {"a": "b"}),
        ("{'a': 'it\\'s'}", {"a": "it's"}),
        ("{'a': 'say \"hi\"'}", {"a": 'say "hi"'}),
        ("{'a': True, 'b': False, 'c': None}", {"a": True, "b": False, "c": None}),
        ('{query: "x", limit: 3}', {"query": "x", "limit": 3}),
        ('{"a": 1 "b": 2}', {"a": 1, "b": 2}),
        ('{"a": "line\nbreak\ttab"}', {"a": "line\nbreak\ttab"}),
        ('{"a": "x\\qy"}', {"a": "x\\qy"}),
        ('{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
        ('{"a": "unfinished', {"a": "unfinished"}),
        ('{"a": "dangling escape\\', {"a": "dangling escape"}),
        ('{"a": 1, "b"', {"a": 1, "b": None}),
        ('{"a": 1, "b":', {"a": 1, "b": None}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": [1, 2}', {"a": [1, 2]}),
        ('Sure! {"query": "x"} Hope this helps.', {"query": "x"}),
        ('I will call it with {"query": "a {b} c"}. Done}', {"query": "a {b} c"}),
        ('  {"a": 1}  ', {"a": 1}),
    ],
)
def test_common_breakages_are_repaired(broken: str, expected: dict[str, object]) -> None:
    value, repaired = parse_json_object(broken)
    assert value == expected
    assert repaired is not _is_json(broken)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("no json here", "hold no JSON object"),
        ('{"a": 1 2}', "not valid JSON"),
        ("[1, 2, 3]", "must be a JSON object: got a list"),
        ('"just a string"', "must be a JSON object: got a string"),
        ("42", "must be a JSON object: got a number"),
        ("null", "must be a JSON object: got a literal"),
        ("{" * (MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} levels"),
        ("{" + "x" * (MAX_CHARS + 1), "too long to repair"),
    ],
)
def test_what_cannot_be_repaired_is_a_clear_error(text: str, fragment: str) -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_json_object(text)
    message = caught.value.message
    assert fragment in message
    assert "\n" not in message
    assert not message[0].isupper()
    assert caught.value.hint is not None and "JSON object" in caught.value.hint


def test_the_error_quotes_a_short_excerpt() -> None:
    with pytest.raises(ArgumentsError) as caught:
        parse_json_object('{"a": 1 2} ' + "x" * 500)
    assert len(caught.value.message) < 200
    assert '`{"a": 1 2}' in caught.value.message


def test_empty_arguments_are_an_empty_object() -> None:
    assert parse_json_object("") == ({}, False)
    assert parse_json_object("  \n") == ({}, False)


def test_non_text_is_an_error_not_a_crash() -> None:
    with pytest.raises(ArgumentsError, match="must be JSON text"):
        repair_json(b"{}")  # type: ignore[arg-type]


def test_valid_json_of_any_size_is_accepted() -> None:
    big = json.dumps({"data": "x" * (MAX_CHARS + 10)})
    assert repair_json(big) is big


@given(JSON_VALUES)
def test_repair_of_valid_json_is_identity(value: object) -> None:
    text = json.dumps(value)
    assert repair_json(text) == text
    assert repair_json(json.dumps(value, indent=2)) == json.dumps(value, indent=2)


@given(JSON_OBJECTS)
def test_valid_objects_parse_unrepaired(value: dict[str, object]) -> None:
    assert parse_json_object(json.dumps(value)) == (value, False)


@given(st.text(max_size=300))
def test_repair_terminates_bounded_and_valid_or_fails_clearly(text: str) -> None:
    try:
        repaired = repair_json(text)
    except ArgumentsError as error:
        assert "\n" not in error.message
        return
    json.loads(repaired)
    assert len(repaired) <= 6 * len(text) + 8


@given(JSON_OBJECTS, st.data())
def test_a_cut_off_object_is_repaired_or_refused_never_crashes(
    value: dict[str, object], data: st.DataObject
) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(text)))
    try:
        repaired, _ = parse_json_object(text[:cut])
    except ArgumentsError:
        return
    assert isinstance(repaired, dict)


@given(JSON_OBJECTS, st.text(alphabet=st.characters(exclude_characters="{}[]\"'`"), max_size=40))
def test_an_object_in_prose_is_found(value: dict[str, object], prose: str) -> None:
    text = f"{prose} {json.dumps(value)} {prose}"
    assert parse_json_object(text)[0] == value


@given(JSON_OBJECTS)
def test_an_object_in_a_fence_is_found(value: dict[str, object]) -> None:
    assert parse_json_object(f"```json\n{json.dumps(value, indent=1)}\n```")[0] == value
