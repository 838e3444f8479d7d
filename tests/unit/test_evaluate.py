"""``evaluate``: a formula's value under one concrete assignment (ruleengine.evaluate)."""

from __future__ import annotations

import pytest

from ruleengine import (
    FINAL_ANSWER,
    allowed,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
)
from ruleengine.evaluate import evaluate
from ruleengine.ir import FALSE, TRUE

a, b, c = allowed("a"), allowed("b"), allowed("c")


def test_atoms() -> None:
    assert evaluate(a, {"a"}) is True
    assert evaluate(a, {"b"}) is False
    assert evaluate(hidden("a"), set(), {"a"}) is True
    assert evaluate(hidden("a"), {"a"}) is False
    assert evaluate(can_stop, {FINAL_ANSWER}) is True
    assert evaluate(can_stop, {"a"}) is False
    assert evaluate(TRUE, set()) is True
    assert evaluate(FALSE, {"a"}) is False


def test_connectives() -> None:
    assert evaluate(a & ~b, {"a"}) is True
    assert evaluate(a & ~b, {"a", "b"}) is False
    assert evaluate(a | b, {"b"}) is True
    assert evaluate(a | b, {"c"}) is False
    assert evaluate(implies(a, b), set()) is True
    assert evaluate(implies(a, b), {"a"}) is False
    assert evaluate(implies(a, b), {"a", "b"}) is True


@pytest.mark.parametrize(
    ("allowed_set", "most", "least", "exact"),
    [
        (set(), True, False, False),
        ({"a"}, True, False, True),
        ({"a", "b"}, False, True, False),
        ({"a", "b", "c"}, False, True, False),
    ],
)
def test_cardinality(allowed_set: set[str], most: bool, least: bool, exact: bool) -> None:
    assert evaluate(at_most(1, a, b, c), allowed_set) is most
    assert evaluate(at_least(2, a, b, c), allowed_set) is least
    assert evaluate(exactly(1, a, b, c), allowed_set) is exact


def test_repeated_cardinality_operands_count_twice() -> None:
    assert evaluate(at_most(1, a, a, b), {"a"}) is False
    assert evaluate(at_most(1, a, a, b), {"b"}) is True


def test_hidden_mixed_with_allowed() -> None:
    phi = at_least(2, hidden("a"), ~b, can_stop)
    assert evaluate(phi, {FINAL_ANSWER}, {"a"}) is True
    assert evaluate(phi, {"b"}, {"a"}) is False


def test_a_hard_force_holds_for_the_forced_allowed_tool() -> None:
    assert evaluate(forced("a"), {"a"}, forced="a") is True
    assert evaluate(forced("a"), {"a"}, forced="b") is False
    assert evaluate(forced("a"), {"a"}) is False
    assert evaluate(forced("a"), {"b"}, forced="a") is False
