"""``Rule``: construction, validation, repr; lowering to the IR; descriptions (ruleengine.rules)."""

from __future__ import annotations

import pytest

from ruleengine import (
    FINAL_ANSWER,
    PolicyError,
    Rule,
    allowed,
    at_most,
    can_stop,
    forced,
    hidden,
)
from ruleengine.ir import TRUE
from ruleengine.rules import Emitted, describe, literals_of, lower

FA = FINAL_ANSWER


class Tool:
    name = "search"


def test_defaults_match_beeai() -> None:
    rule = Rule("a")
    assert (rule.target, rule.allowed, rule.hidden, rule.forced, rule.prevent_stop) == (
        "a",
        True,
        False,
        False,
        False,
    )
    assert rule.reason is None


def test_keyword_and_positional_construction_agree() -> None:
    assert Rule(target="a", allowed=False, reason="r") == Rule("a", False, reason="r")
    assert Rule(Tool(), hidden=True) == Rule("search", hidden=True)


def test_rules_are_immutable_values() -> None:
    rule = Rule("a", allowed=False)
    assert rule == Rule("a", allowed=False)
    assert hash(rule) == hash(Rule("a", allowed=False))
    assert rule != Rule("a")
    assert rule != Rule("a", allowed=False, reason="why")
    with pytest.raises(AttributeError):
        rule.allowed = True  # type: ignore[misc]


def test_repr_shows_only_what_differs_from_the_defaults() -> None:
    assert repr(Rule("a")) == "Rule('a')"
    assert repr(Rule("a", allowed=False, reason="no")) == "Rule('a', allowed=False, reason='no')"
    full = Rule("a", allowed=False, hidden=True, forced=True, prevent_stop=True)
    assert repr(full) == "Rule('a', allowed=False, hidden=True, forced=True, prevent_stop=True)"


@pytest.mark.parametrize("flag", ["allowed", "hidden", "forced", "prevent_stop"])
@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_flags_must_be_booleans(flag: str, value: object) -> None:
    with pytest.raises(PolicyError) as info:
        Rule("send_email", **{flag: value})  # type: ignore[arg-type]
    assert "`send_email`" in info.value.message
    assert flag in info.value.message


def test_reason_must_be_text() -> None:
    with pytest.raises(PolicyError) as info:
        Rule("a", reason=42)  # type: ignore[arg-type]
    assert "`a`" in info.value.message and "reason" in info.value.message


@pytest.mark.parametrize("target", ["", 3, None])
def test_target_must_be_a_tool(target: object) -> None:
    with pytest.raises(PolicyError):
        Rule(target)


# -- lowering ---------------------------------------------------------------------------------


def test_an_allowing_rule_restricts_nothing_and_permits_its_tool() -> None:
    low = lower(Rule("a", reason="ok"))
    assert low.restrict == TRUE
    assert low.permit == allowed("a")
    assert (low.soft_force, low.hard_force, low.target, low.reason) == (None, None, "a", "ok")
    assert low.mentions == {"a"}


def test_a_denying_rule_restricts_and_does_not_permit() -> None:
    low = lower(Rule("a", allowed=False))
    assert low.restrict == ~allowed("a")
    assert low.permit is None


def test_hidden_and_prevent_stop_restrict_together() -> None:
    low = lower(Rule("a", hidden=True, prevent_stop=True, forced=True))
    assert low.restrict == hidden("a") & ~can_stop
    assert low.permit is None
    assert low.soft_force == "a"
    assert low.mentions == {"a", FA}


def test_prevent_stop_keeps_the_target_permitted() -> None:
    low = lower(Rule("a", prevent_stop=True))
    assert low.restrict == ~can_stop
    assert low.permit == allowed("a")


def test_prevent_stop_on_final_answer_has_no_permitting_part() -> None:
    low = lower(Rule(FA, prevent_stop=True))
    assert low.restrict == ~can_stop
    assert low.permit is None


def test_formulas_lower_whole_and_hard_forces_apart() -> None:
    phi = at_most(1, allowed("a"), hidden("b"), can_stop)
    low = lower(phi)
    assert (low.restrict, low.permit, low.soft_force, low.hard_force) == (phi, None, None, None)
    assert low.mentions == {"a", "b", FA}
    low = lower(forced("a"))
    assert (low.restrict, low.hard_force, low.mentions) == (forced("a"), "a", {"a"})


@pytest.mark.parametrize(
    "nested",
    [forced("a") & allowed("b"), ~forced("a"), at_most(1, forced("a"), allowed("b"), can_stop)],
)
def test_a_nested_hard_force_is_rejected(nested: object) -> None:
    with pytest.raises(PolicyError) as info:
        lower(nested)  # type: ignore[arg-type]
    assert "forced('a')" in info.value.message
    assert info.value.hint is not None


def test_lower_rejects_other_objects() -> None:
    with pytest.raises(PolicyError):
        lower(("a", True, False, False, False, None))  # type: ignore[arg-type]


def test_literals_of_reads_conjunctions_of_literals_only() -> None:
    assert literals_of(TRUE) == ()
    assert literals_of(~allowed("a") & hidden("b") & can_stop) == (
        ("allowed", "a", False),
        ("hidden", "b", True),
        ("allowed", FA, True),
    )
    assert literals_of(~hidden("a")) == (("hidden", "a", False),)
    assert literals_of(allowed("a") | allowed("b")) is None
    assert literals_of(at_most(1, allowed("a"), allowed("b"), can_stop)) is None


def test_describe_reads_like_a_sentence() -> None:
    assert describe(Rule("a", allowed=False)) == "denies `a`"
    assert describe(Rule("a", hidden=True)) == "hides `a`"
    assert describe(Rule("a")) == "allows `a`"
    assert describe(Rule("a", prevent_stop=True, forced=True)) == (
        "prevents stopping and forces `a`"
    )
    assert describe(forced("a")) == "forces `a` (hard)"
    assert describe(~can_stop) == "prevents stopping"
    assert describe(~allowed("a") & ~hidden("b")) == "denies `a` and keeps `b` visible"
    assert describe(allowed("a") | allowed("b")) == "requires `allowed('a') | allowed('b')`"


def test_emitted_carries_requirement_and_priority() -> None:
    e = Emitted(Rule("a"), "req", 7)
    assert (e.item, e.requirement, e.priority) == (Rule("a"), "req", 7)
    assert e == Emitted(Rule("a"), "req", 7)
    assert e != Emitted(Rule("a"), "req", 8)
