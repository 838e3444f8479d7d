"""The condition language at its edges: parameters from each source, the parser's and the
type check's errors, run values bound from a state, undefined values failing closed, and
the Python handles building what the text says."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest
from pydantic import BaseModel

from ruleengine.conditions import (
    _z3,
    arg,
    check,
    input_text,
    last,
    length,
    matches,
    outputs,
    parameters_from_model,
    parameters_from_schema,
    parameters_from_spec,
    parse,
    text,
)
from ruleengine.conditions.bind import bind
from ruleengine.conditions.evaluate import Undefined, holds
from ruleengine.conditions.regex import parse_pattern, python_pattern
from ruleengine.conditions.terms import Term
from ruleengine.conditions.typecheck import Scope
from ruleengine.conditions.types import ParamType
from ruleengine.errors import PolicyError
from ruleengine.state import RunState

REFUND = parameters_from_spec(
    {"order_id": "string", "amount": "number", "note": "string", "urgent": "boolean"},
    owner="tool `refund`",
)
SCOPE = Scope("refund", REFUND, {"refund": REFUND, "lookup_order": None, "search": None})


def typed(source: str) -> Term:
    return check(parse(source, where="w"), SCOPE, where="w")


def decide(source: str, call: dict[str, Any], state: RunState | None = None) -> bool | Undefined:
    bound = bind(typed(source), state or RunState())
    if isinstance(bound, Undefined):
        return bound
    return holds(bound, call, REFUND)


# -- parameters ---------------------------------------------------------------------------


def test_the_short_form_gives_each_kind() -> None:
    params = parameters_from_spec(
        {
            "a": "string",
            "b": "integer",
            "c": "number",
            "d": "boolean",
            "e": ["x", "y"],
            "f": ["string"],
        },
        owner="tool `t`",
    )
    assert params["a"] == ParamType("string")
    assert params["e"] == ParamType("string", ("x", "y"))
    assert params["f"] == ParamType("strings")
    assert str(params["e"]) == "one of 'x', 'y'"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("amount", "is not a mapping of names to types"),
        ({"a": "float"}, "type `float` is not one of string, integer, number, boolean"),
        ({"a": []}, "an enum needs at least one value"),
        ({"a": ["x", 1]}, "enum values mix integer and string"),
        ({"a": [1.5]}, "enum value `1.5` is not a string, integer or boolean"),
        ({"a b": "string"}, "parameter name `'a b'` is not an identifier"),
        ({"a": {"type": "string"}}, "is not a type"),
    ],
)
def test_bad_short_forms_are_named(spec: object, message: str) -> None:
    with pytest.raises(PolicyError, match="tool `t`") as caught:
        parameters_from_spec(spec, owner="tool `t`")
    assert message in caught.value.message


def test_a_schema_gives_kinds_required_and_opaque() -> None:
    schema = {
        "type": "object",
        "properties": {
            "to": {"type": "string"},
            "cc": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "amount": {"type": "number"},
            "level": {"enum": [1, 2, 3]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object"},
            "ref": {"$ref": "#/$defs/Kind"},
        },
        "required": ["to", "amount"],
        "$defs": {"Kind": {"enum": ["a", "b"]}},
    }
    params = parameters_from_schema(schema, owner="tool `t`")
    assert params["to"] == ParamType("string")
    assert params["cc"] == ParamType("string", required=False)
    assert params["level"] == ParamType("integer", (1, 2, 3), required=False)
    assert params["tags"].kind == "strings"
    assert params["meta"].kind == "opaque"
    assert params["ref"] == ParamType("string", ("a", "b"), required=False)
    with pytest.raises(PolicyError, match="has type `'array'`, not `object`"):
        parameters_from_schema({"type": "array"}, owner="tool `t`")
    with pytest.raises(PolicyError, match="is not a JSON Schema object"):
        parameters_from_schema("nope", owner="tool `t`")


def test_a_pydantic_model_gives_its_fields() -> None:
    class Refund(BaseModel):
        order_id: str
        amount: float
        reason: str | None = None

    params = parameters_from_model(Refund, owner="tool `refund`")
    assert params == {
        "order_id": ParamType("string"),
        "amount": ParamType("number"),
        "reason": ParamType("string", required=False),
    }
    with pytest.raises(PolicyError, match="is not a pydantic model class"):
        parameters_from_model(42, owner="tool `refund`")


# -- the parser and the type check --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("arg.amount **2", "the operator `**` is not part of the language (column 1)"),
        ("eval('1')", "`eval(...)` is not part of the language (column 1)"),
        ("__import__('os').system('x')", "is not part of the language"),
        ("lambda: 1", "`lambda: 1` is not part of the language"),
        ("arg.amount >", "not valid syntax"),
        ("arg", "`arg` alone is not a value"),
        ("amount > 1", "unknown name `amount`"),
        ("arg.amount * arg.amount > 1", "`*` needs a number literal on one side"),
        ("arg.amount is 3", "`is` is not part of the language here"),
        ("input is None", "only an argument can be left out"),
        ("last('lookup_order')", "`last(...)` needs `.arguments.NAME` or `.output`"),
        ("last(x).output.a == 1", "`last` takes one tool name in quotes"),
        (
            "last('lookup_order').price == 1",
            "after `last(...)` comes `.arguments.NAME` or `.output`",
        ),
        ("matches(arg.note, '^a')", "anchors are not supported"),
        ("matches(arg.note, arg.note)", "a pattern must be a string literal"),
        ("arg.amount in [arg.amount]", "a list holds literals only"),
        ("arg.note[0] == 'a'", "an argument is `arg.NAME`"),
        ("1 / 0 > arg.amount", "division by zero"),
        ("", "a condition must not be empty"),
    ],
)
def test_text_outside_the_language_is_named_with_its_column(source: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        typed(source)
    assert caught.value.message.startswith("w: ")
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("arg.nope > 1", "`refund` has no parameter `nope`"),
        ("arg.amount.startswith('x')", "`arg.amount` is a number, not a string"),
        ("arg.note < 'b'", "`<` orders numbers"),
        ("arg.note == 1", "`1` is an integer, not a string"),
        ("arg.amount + 1", "is a number, not a boolean"),
        ("last('zzz').output.x == 1", "unknown tool `zzz`"),
        ("last('lookup_order').output.a == last('search').output.b", "compares two run values"),
        ("len(arg.amount) > 1", "`len` of `arg.amount`, a number"),
        ("arg.urgent in 'yes'", "is a boolean, not a string"),
        ("arg.amount in ['a', 1]", "mixes types"),
        ("arg.note in arg.amount", "`in` needs a list or a string"),
    ],
)
def test_type_errors_are_named_at_load_time(source: str, message: str) -> None:
    with pytest.raises(PolicyError, match=r"^w: condition `") as caught:
        typed(source)
    assert message in caught.value.message


def test_an_opaque_parameter_cannot_be_named() -> None:
    params = {"meta": ParamType("opaque")}
    with pytest.raises(PolicyError, match="a type conditions cannot reason about"):
        check(parse("arg.meta == 1", where="w"), Scope("t", params, {"t": params}), where="w")


def test_wrong_types_and_huge_input_are_errors_not_crashes() -> None:
    with pytest.raises(PolicyError, match="a condition is text, not `42`"):
        parse(42, where="w")
    with pytest.raises(PolicyError, match="at most 10000 characters"):
        parse("arg.amount > 1 and " * 1000 + "True", where="w")
    deep = "not " * 3000 + "arg.urgent"
    with pytest.raises(PolicyError):
        parse(deep, where="w")
    with pytest.raises(PolicyError, match="more than 2000 parts"):
        parse("arg.amount in [" + "1," * 2100 + "1]", where="w")
    deep = arg.amount + 1
    for _ in range(3000):
        deep = deep + 1
    with pytest.raises(PolicyError, match="nested more than 100 deep"):
        check((deep > 0).term, SCOPE, where="w")


# -- evaluation, run values, undefined ----------------------------------------------------

LOOKED_UP = RunState.from_trace(
    [
        {
            "tool": "lookup_order",
            "arguments": {"id": "o1"},
            "output": {"price": 42.5, "items": ["a"]},
        },
        {"tool": "lookup_order", "status": "error", "error": "boom"},
    ],
    input="please refund order o1",
)


def test_run_values_are_read_from_the_latest_successful_call() -> None:
    source = "arg.amount <= last('lookup_order').output.price"
    assert decide(source, {"amount": 42.5}, LOOKED_UP) is True
    assert decide(source, {"amount": Fraction(851, 20)}, LOOKED_UP) is False  # 42.55
    bound = bind(typed(source), LOOKED_UP)
    assert not isinstance(bound, Undefined) and text(bound) == "arg.amount <= 42.5"
    assert decide("arg.order_id in input", {"order_id": "o1"}, LOOKED_UP) is True
    assert decide(
        "last('lookup_order').arguments.id == arg.order_id", {"order_id": "o1"}, LOOKED_UP
    )
    assert decide("last('lookup_order').output.items[0] == 'a'", {}, LOOKED_UP) is True


@pytest.mark.parametrize(
    ("source", "state", "value", "why"),
    [
        (
            "arg.amount <= last('lookup_order').output.price",
            RunState(),
            "last('lookup_order').output.price",
            "never succeeded",
        ),
        (
            "arg.amount <= last('lookup_order').output.cost",
            LOOKED_UP,
            "last('lookup_order').output.cost",
            "has no `cost`",
        ),
        (
            "arg.note == last('lookup_order').output.price",
            LOOKED_UP,
            "last('lookup_order').output.price",
            "is `42.5`, not a string",
        ),
        ("arg.note in input", RunState(), "input", "is not known"),
        (
            "last('lookup_order').output.items[5] == 'a'",
            LOOKED_UP,
            "last('lookup_order').output.items[5]",
            "has no `5`",
        ),
    ],
)
def test_an_undefined_run_value_refuses_whatever_the_condition(
    source: str, state: RunState, value: str, why: str
) -> None:
    for wrapped in (source, f"not ({source})", f"({source}) or True"):
        found = decide(wrapped, {"amount": 1, "note": "x"}, state)
        assert isinstance(found, Undefined), wrapped
        assert found.value == value and why in found.why


def test_a_missing_or_mistyped_argument_is_undefined() -> None:
    assert decide("arg.amount > 1", {}) == Undefined("arg.amount", "is missing from the call")
    wrong = decide("arg.amount > 1", {"amount": "12"})
    assert isinstance(wrong, Undefined) and "is `'12'`, not a number" in wrong.why
    flag = decide("arg.urgent", {"urgent": 1})
    assert isinstance(flag, Undefined) and "not a boolean" in flag.why
    kinds = {"kind": ParamType("string", ("a", "b"))}
    term = check(parse("arg.kind != 'a'", where="w"), Scope("t", kinds, {"t": kinds}), where="w")
    off = holds(term, {"kind": "z"}, kinds)
    assert isinstance(off, Undefined) and "not one of 'a', 'b'" in off.why


def test_values_compare_exactly() -> None:
    assert decide("arg.amount == 0.3", {"amount": 0.1 + 0.2}) is False  # 0.30000000000000004
    assert decide("arg.amount == 0.1 + 0.2", {"amount": 0.3}) is True  # exact decimals
    assert decide("3 * arg.amount == 1", {"amount": Fraction(1, 3)}) is True
    assert decide("arg.urgent == True", {"urgent": True}) is True


def test_outputs_lists_every_successful_output_and_their_items() -> None:
    state = RunState.from_trace(
        [
            {"tool": "search", "output": ["o1", "o2"]},
            {"tool": "search", "output": "o3"},
            {"tool": "search", "status": "error", "output": None, "error": "x"},
        ]
    )
    for order, expected in (("o2", True), ("o3", True), ("o9", False)):
        assert decide("arg.order_id in outputs('search')", {"order_id": order}, state) is expected


def test_outputs_counts_the_keys_of_a_mapping_output_as_python_in_does() -> None:
    state = RunState.from_trace(
        [{"tool": "search", "output": {"o1": {"price": 3}, "o2": "x", 7: "not a string"}}]
    )
    for order, expected in (("o1", True), ("o2", True), ("price", False), ("x", False)):
        assert decide("arg.order_id in outputs('search')", {"order_id": order}, state) is expected


# -- the Python handles -------------------------------------------------------------------


def test_handles_build_what_the_text_says() -> None:
    pairs = [
        (
            arg.amount <= last("lookup_order").output.price,
            "arg.amount <= last('lookup_order').output.price",
        ),
        ((arg.amount > 1) & ~arg.urgent, "arg.amount > 1 and not arg.urgent"),
        (
            arg.note.startswith("re:") | matches(arg.note, "[a-z]+"),
            "arg.note.startswith('re:') or matches(arg.note, '[a-z]+')",
        ),
        (length(arg.note) < 2 * arg.amount + 1, "len(arg.note) < 2 * arg.amount + 1"),
        (arg.order_id.is_in(outputs("search")), "arg.order_id in outputs('search')"),
        (arg.order_id.is_in(input_text), "arg.order_id in input"),
        (
            last("lookup_order").output["items"][0] == "a",
            "last('lookup_order').output.items[0] == 'a'",
        ),
        (
            last("lookup_order").arguments.id != arg.order_id,
            "last('lookup_order').arguments.id != arg.order_id",
        ),
    ]
    for handle, source in pairs:
        assert check(handle.term, SCOPE, where="w") == typed(source), source


def test_a_handle_is_not_a_truth_value() -> None:
    with pytest.raises(PolicyError, match=re.escape("combine conditions with `&`, `|` and `~`")):
        bool(arg.amount > 1)
    with pytest.raises(PolicyError, match="is not a literal a condition can hold"):
        _ = arg.amount > object()
    with pytest.raises(PolicyError, match="`\\*` needs a number literal"):
        _ = arg.amount * arg.amount
    with pytest.raises(PolicyError, match="name a tool"):
        last(3)


# -- patterns -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("[a-z]+@example\\.com", "bob@example.com", "bob@exampleXcom"),
        ("\\d{3}-\\d{4}", "555-1234", "555-12345"),
        ("(ab|c)*", "abcab", "abca"),
        ("[^,]*", "a b", "a,b"),
        (".*", "x\ny", None),
        ("a{2,}?", "aaa", "a"),
    ],
)
def test_patterns_match_whole_values(pattern: str, yes: str, no: str | None) -> None:
    compiled = python_pattern(parse_pattern(pattern, where="w"))
    assert compiled.fullmatch(yes)
    if no is not None:
        assert not compiled.fullmatch(no)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("^a", "anchors are not supported"),
        ("a**", "a quantifier follows a quantifier"),
        ("(a", "`(` is never closed"),
        ("a)", "unbalanced `)`"),
        ("[a", "`[` is never closed"),
        ("\\1", "the escape `\\1` is not supported"),
        ("(?=a)", "only plain groups"),
        ("{2}", "`{` has nothing to repeat"),
        ("a{3,1}", "maximum below its minimum"),
        ("[z-a]", "a range's end comes before its start"),
        ("a{1001}", "a bound above 1000"),
    ],
)
def test_patterns_outside_the_subset_are_named(pattern: str, message: str) -> None:
    with pytest.raises(PolicyError, match="character") as caught:
        parse_pattern(pattern, where="w")
    assert message in caught.value.message


def test_z3_finds_arguments_or_the_clashing_conditions() -> None:
    over, under = typed("arg.amount > 100"), typed("arg.amount < 50")
    assert _z3.satisfiable([over, under], [], REFUND) is False
    assert _z3.clash([over, typed("arg.urgent"), under], [], REFUND) == ([0, 2], [])
    example = _z3.satisfiable(
        [typed("matches(arg.note, '[0-9]{3}')")], [typed("arg.note == '123'")], REFUND
    )
    assert isinstance(example, dict) and example["note"] != "123" and len(example["note"]) == 3
