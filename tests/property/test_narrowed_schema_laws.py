"""A forced tool's schema narrowed by its conditions (``ruleengine.conditions.narrow``):
the narrowed schema never refuses admissible arguments, and for conditions made only of what
JSON Schema says exactly (bounds, fixed values, lengths, full-match patterns) it accepts
exactly the admissible ones; the agent offers it when the tool is forced."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from agent.prompt import plan_tools
from agent.tools import tool
from backends import ToolChoiceTool
from ruleengine import ArgumentsRequirement, ConditionalRequirement, Reasoner, RunState
from ruleengine.conditions.narrow import narrowed


@tool
def pay(amount: float, count: int, currency: str, iban: str) -> str:
    """Pay."""
    return "paid"


EXACT = [
    "arg.amount <= 100",
    "arg.amount > -5",
    "10 >= arg.count",
    "arg.count == 3",
    "arg.currency in ['EUR', 'CHF']",
    "len(arg.iban) <= 6",
    "len(arg.iban) >= 2",
    "matches(arg.iban, '[A-Z]{2}[0-9]*')",
    "arg.currency == 'EUR'",
]
INEXACT = ["arg.iban.startswith('C')", "arg.amount + arg.count < 50", "not (arg.count == 2)"]

calls = st.fixed_dictionaries(
    {
        "amount": st.one_of(st.integers(-10, 110), st.sampled_from([99.5, 100.0, 100.5, -5.0])),
        "count": st.integers(0, 12),
        "currency": st.sampled_from(["EUR", "CHF", "USD"]),
        "iban": st.text("ABC0123", max_size=8),
    }
)


def _pass(conditions: list[str]) -> Any:
    reqs = [ArgumentsRequirement(pay, allow_if=conditions, name="conditions")]
    return Reasoner([pay], reqs).decide(RunState())


def _valid(schema: dict[str, Any], call: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(call)


@given(st.lists(st.sampled_from(EXACT), min_size=1, max_size=4, unique=True), calls)
def test_exact_conditions_narrow_to_exactly_the_admissible_calls(
    conditions: list[str], call: dict[str, Any]
) -> None:
    p = _pass(conditions)
    if "pay" not in p.allowed:
        return  # no arguments at all: the tool is not offered
    schema = narrowed(pay.definition.parameters, p.argument_checks("pay"))
    assert _valid(schema, call) == p.admits("pay", call).ok, (conditions, call, schema)


@given(
    st.lists(st.sampled_from(EXACT + INEXACT), min_size=1, max_size=4, unique=True),
    calls,
)
def test_a_narrowed_schema_never_refuses_an_admissible_call(
    conditions: list[str], call: dict[str, Any]
) -> None:
    p = _pass(conditions)
    if "pay" not in p.allowed:
        return
    schema = narrowed(pay.definition.parameters, p.argument_checks("pay"))
    if p.admits("pay", call).ok:
        assert _valid(schema, call), (conditions, call, schema)


def test_the_forced_tool_is_offered_with_its_narrowed_schema() -> None:
    reqs = [
        ConditionalRequirement(pay, force_at_step=1, name="pay-first"),
        ArgumentsRequirement(pay, allow_if=["arg.amount <= 100", "arg.currency in ['EUR']"]),
    ]
    p = Reasoner([pay], reqs).decide(RunState())
    tools, choice = plan_tools(p, [pay], supports_allowed=True, final_answer_as_tool=True)
    assert choice == ToolChoiceTool("pay")
    (offered,) = tools
    properties = offered.parameters["properties"]
    assert properties["amount"]["maximum"] == 100
    assert properties["currency"]["enum"] == ["EUR"]
    assert "maximum" not in pay.definition.parameters["properties"]["amount"]  # a copy
