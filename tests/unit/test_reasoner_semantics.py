"""SPEC §4 and §11 ("Aggregation"), clause by clause, with passes computed by hand.

Each test states its expected pass in full from the specification. ``resolve`` takes emitted
items directly; the few tests about running requirements use ``decide``/``adecide``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from ruleengine import (
    FINAL_ANSWER,
    ConflictError,
    Pass,
    PolicyError,
    Reasoner,
    Requirement,
    RequirementError,
    Rule,
    RunState,
    allowed,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine.rules import Emitted, Item

FA = FINAL_ANSWER
MODES = ("strict", "priority")
both_modes = pytest.mark.parametrize("mode", MODES)


def em(item: Item, requirement: str = "r", priority: int = 10) -> Emitted:
    return Emitted(item, requirement, priority)


def wrap(items: Sequence[Item | Emitted]) -> list[Emitted]:
    return [i if isinstance(i, Emitted) else em(i) for i in items]


def resolve(
    tools: Sequence[str], items: Sequence[Item | Emitted], *, mode: str = "strict", **kwargs: object
) -> Pass:
    """The pass, checked to be the same with and without the literal fast path."""
    p = Reasoner(tools, mode=mode, **kwargs).resolve(wrap(items))  # type: ignore[arg-type]
    slow = Reasoner(tools, mode=mode, fast_path=False, **kwargs)  # type: ignore[arg-type]
    q = slow.resolve(wrap(items))
    assert summary(p) == summary(q)
    assert p.explanation.notes == q.explanation.notes
    return p


def conflict(
    tools: Sequence[str], items: Sequence[Item | Emitted], *, mode: str = "strict"
) -> ConflictError:
    """The conflict, checked to cite the same core with and without the literal fast path."""
    cores = []
    for fast_path in (True, False):
        with pytest.raises(ConflictError) as info:
            Reasoner(tools, mode=mode, fast_path=fast_path).resolve(wrap(items))  # type: ignore[arg-type]
        cores.append(info.value.core)
    assert cores[0] == cores[1]
    return info.value


def core_items(exc: ConflictError) -> set[Emitted]:
    return {Emitted(c.item, c.requirement, c.priority) for c in exc.core}


def summary(p: Pass) -> tuple[object, ...]:
    return (p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, dict(p.reasons))


# -- declared tools ---------------------------------------------------------------------------


@both_modes
def test_without_rules_every_tool_is_allowed_in_declared_order(mode: str) -> None:
    p = resolve(["search", "think"], [], mode=mode)
    assert summary(p) == (("search", "think", FA), (), None, True, "required", {})


def test_final_answer_is_added_once_and_always_last() -> None:
    assert Reasoner(["b", FA, "a"]).tools == ("b", "a", FA)
    assert Reasoner([]).tools == (FA,)
    assert resolve([], []).allowed == (FA,)


def test_tools_may_be_objects_with_a_name() -> None:
    class Tool:
        def __init__(self, name: str) -> None:
            self.name = name

    r = Reasoner([Tool("search"), "think"])
    assert r.tools == ("search", "think", FA)
    assert r.resolve([em(Rule(Tool("search"), allowed=False))]).allowed == ("think", FA)


def test_allowing_rule_asserts_nothing_in_strict_mode() -> None:
    p = resolve(["a"], [Rule("a"), Rule("a", forced=False, reason=None)])
    assert summary(p) == (("a", FA), (), None, True, "required", {})


# -- §4.1 hidden -------------------------------------------------------------------------------


@both_modes
def test_a_hidden_tool_is_not_allowed_and_listed_hidden(mode: str) -> None:
    p = resolve(["a", "b"], [Rule("a", hidden=True)], mode=mode)
    assert summary(p) == (("b", FA), ("a",), None, True, "required", {})
    assert p.explanation.tools["a"].status == "hidden"
    assert not p.is_allowed("a")


@both_modes
def test_hidden_wins_over_allowed_true_on_the_same_rule(mode: str) -> None:
    p = resolve(["a", "b"], [Rule("a", allowed=True, hidden=True)], mode=mode)
    assert p.allowed == ("b", FA)
    assert p.hidden == ("a",)


@both_modes
def test_hidden_atom_as_a_formula_hides(mode: str) -> None:
    p = resolve(["a", "b"], [hidden("b")], mode=mode)
    assert (p.allowed, p.hidden) == (("a", FA), ("b",))


def test_a_denied_tool_is_not_hidden() -> None:
    p = resolve(["a", "b"], [Rule("a", allowed=False)])
    assert (p.allowed, p.hidden) == (("b", FA), ())
    assert p.explanation.tools["a"].status == "denied"


def test_hidden_lists_tools_in_declared_order() -> None:
    p = resolve(["c", "a", "b"], [Rule("b", hidden=True), Rule("c", hidden=True)])
    assert p.hidden == ("c", "b")
    assert p.allowed == ("a", FA)


# -- §4.2 deny wins; lexicographically most permissive ---------------------------------------


def test_deny_wins_in_strict_mode_whatever_the_priorities() -> None:
    p = resolve(["a", "b"], [em(Rule("a"), "allow", 100), em(Rule("a", allowed=False), "deny", 1)])
    assert p.allowed == ("b", FA)


def test_at_most_one_allows_the_earlier_declared_tool() -> None:
    items = [at_most(1, allowed("a"), allowed("b"))]
    assert resolve(["a", "b"], items).allowed == ("a", FA)
    assert resolve(["b", "a"], items).allowed == ("b", FA)


def test_implies_keeps_the_earlier_tool_and_drops_the_later() -> None:
    p = resolve(["a", "b", "c"], [implies(allowed("a"), ~allowed("b"))])
    assert p.allowed == ("a", "c", FA)
    assert p.hidden == ()


def test_implies_towards_a_denied_tool_denies_the_premise() -> None:
    p = resolve(["a", "b"], [implies(allowed("a"), allowed("b")), Rule("b", allowed=False)])
    assert p.allowed == (FA,)
    assert p.tool_choice == FA


def test_exactly_one_of_three_keeps_only_the_first() -> None:
    p = resolve(["a", "b", "c"], [exactly(1, allowed("a"), allowed("b"), allowed("c"))])
    assert p.allowed == ("a", FA)


def test_exactly_one_of_three_after_a_deny_moves_to_the_next() -> None:
    items = [exactly(1, allowed("a"), allowed("b"), allowed("c")), Rule("a", allowed=False)]
    assert resolve(["a", "b", "c"], items).allowed == ("b", FA)


def test_at_least_two_denials_of_three_keeps_the_first() -> None:
    # (a, b, c) = (T, F, F) is the largest vector with two of the three denied.
    items = [at_least(2, ~allowed("a"), ~allowed("b"), ~allowed("c"))]
    assert resolve(["a", "b", "c"], items).allowed == ("a", FA)


def test_a_formula_can_trade_stopping_for_a_tool() -> None:
    # `a` comes before `final_answer`, so keeping `a` beats being able to stop.
    p = resolve(["a"], [implies(allowed("a"), ~can_stop)])
    assert summary(p) == (("a",), (), None, False, "a", {})


def test_a_disjunction_of_denials_denies_the_later_tool() -> None:
    p = resolve(["a", "b"], [~allowed("a") | ~allowed("b")])
    assert p.allowed == ("a", FA)


def test_hidden_disjunction_keeps_the_earlier_tool_visible() -> None:
    # allowed(a) requires ¬hidden(a), so hidden(b) must hold and b is not allowed.
    p = resolve(["a", "b"], [hidden("a") | hidden("b")])
    assert (p.allowed, p.hidden) == (("a", FA), ("b",))


def test_free_hidden_atoms_are_lexicographically_smallest() -> None:
    # Both tools are denied either way; the smallest hidden vector over (a, b) hides only b.
    item = ~allowed("a") & ~allowed("b") & (hidden("a") | hidden("b"))
    p = resolve(["a", "b"], [item])
    assert (p.allowed, p.hidden) == ((FA,), ("b",))
    p = resolve(["b", "a"], [item])
    assert (p.allowed, p.hidden) == ((FA,), ("a",))


def test_free_hidden_atoms_stay_false_when_nothing_needs_them() -> None:
    p = resolve(["a", "b"], [allowed("a") | hidden("b"), implies(hidden("a"), hidden("b"))])
    assert (p.allowed, p.hidden) == (("a", "b", FA), ())


def test_general_constraints_combine_with_plain_rules() -> None:
    items = [
        at_most(1, allowed("a"), allowed("b"), allowed("c")),
        Rule("a", allowed=False),
        Rule("d", hidden=True),
    ]
    p = resolve(["a", "b", "c", "d"], items)
    assert (p.allowed, p.hidden) == (("b", FA), ("d",))


# -- §4.3 can_stop ---------------------------------------------------------------------------


@both_modes
def test_can_stop_iff_final_answer_allowed(mode: str) -> None:
    p = resolve(["a"], [Rule(FA, allowed=False)], mode=mode)
    assert summary(p) == (("a",), (), None, False, "a", {})
    p = resolve(["a"], [Rule("a", allowed=False)], mode=mode)
    assert summary(p) == ((FA,), (), None, True, FA, {})


@both_modes
def test_prevent_stop_denies_final_answer_not_the_target(mode: str) -> None:
    p = resolve(["a", "b"], [Rule("a", prevent_stop=True)], mode=mode)
    assert summary(p) == (("a", "b"), (), None, False, "required", {})


@both_modes
def test_can_stop_atom_denied_as_a_formula(mode: str) -> None:
    p = resolve(["a", "b"], [~can_stop], mode=mode)
    assert (p.allowed, p.can_stop) == (("a", "b"), False)


@both_modes
def test_hiding_final_answer_prevents_stopping(mode: str) -> None:
    p = resolve(["a"], [Rule(FA, hidden=True)], mode=mode)
    assert summary(p) == (("a",), (FA,), None, False, "a", {})


def test_prevent_stop_beats_an_allowing_final_answer_rule_in_strict_mode() -> None:
    p = resolve(["a"], [em(Rule(FA), "allow", 50), em(Rule("a", prevent_stop=True), "stop", 1)])
    assert p.can_stop is False


def test_prevent_stop_on_final_answer_itself_is_not_an_allowance() -> None:
    # Rule(final_answer, prevent_stop=True) has no permitting part in priority mode.
    p = resolve(["a"], [em(Rule(FA, prevent_stop=True), "x", 10)], mode="priority")
    assert (p.allowed, p.can_stop) == (("a",), False)
    assert p.explanation.overridden == ()


# -- §4.4 forced -------------------------------------------------------------------------------


@both_modes
def test_highest_priority_forcing_rule_wins(mode: str) -> None:
    items = [em(Rule("a", forced=True), "low", 10), em(Rule("b", forced=True), "high", 20)]
    p = resolve(["a", "b", "c"], items, mode=mode)
    assert summary(p) == (("b", FA), (), "b", True, "b", {})
    assert p.explanation.tools["b"].status == "forced"
    assert p.explanation.notes == ()


@both_modes
def test_forced_tie_goes_to_declared_order_with_a_note(mode: str) -> None:
    # Declared order decides, not the tool or requirement names.
    items = [em(Rule("a", forced=True), "alpha", 10), em(Rule("b", forced=True), "beta", 10)]
    p = resolve(["b", "a"], items, mode=mode)
    assert (p.forced, p.allowed, p.tool_choice) == ("b", ("b", FA), "b")
    (note,) = p.explanation.notes
    assert "`a`" in note and "`b`" in note and "tie" in note


def test_a_tools_bid_is_its_highest_forcing_rule() -> None:
    items = [
        em(Rule("a", forced=True), "r1", 5),
        em(Rule("a", forced=True), "r2", 30),
        em(Rule("b", forced=True), "r3", 20),
    ]
    assert resolve(["b", "a"], items).forced == "a"


def test_only_forcing_rules_count_for_the_force_priority() -> None:
    items = [
        em(Rule("a", forced=True), "r1", 10),
        em(Rule("a", reason="important"), "r2", 50),
        em(Rule("b", forced=True), "r3", 20),
    ]
    assert resolve(["a", "b"], items).forced == "b"


@both_modes
def test_forcing_a_denied_tool_is_dropped(mode: str) -> None:
    items = [
        em(Rule("a", forced=True), "force-a", 20),
        em(Rule("a", allowed=False), "deny-a", 30),
        em(Rule("b", forced=True), "force-b", 5),
    ]
    p = resolve(["a", "b"], items, mode=mode)
    assert summary(p) == (("b", FA), (), "b", True, "b", {})


def test_forcing_a_denied_tool_is_dropped_in_strict_mode_even_from_higher_priority() -> None:
    items = [em(Rule("a", forced=True), "force-a", 99), em(Rule("a", allowed=False), "deny-a", 1)]
    p = resolve(["a", "b"], items)
    assert summary(p) == (("b", FA), (), None, True, "required", {})


@both_modes
def test_forcing_a_hidden_tool_is_dropped(mode: str) -> None:
    p = resolve(["a", "b"], [Rule("a", forced=True, hidden=True)], mode=mode)
    assert summary(p) == (("b", FA), ("a",), None, True, "required", {})


@both_modes
def test_a_hard_force_beats_soft_forces_of_higher_priority(mode: str) -> None:
    items = [em(forced("a"), "hard", 1), em(Rule("b", forced=True), "soft", 100)]
    p = resolve(["a", "b"], items, mode=mode)
    assert summary(p) == (("a", FA), (), "a", True, "a", {})


def test_a_hard_force_on_a_denied_tool_conflicts() -> None:
    exc = conflict(["a", "b"], [em(forced("a"), "hard", 10), em(Rule("a", allowed=False), "no", 1)])
    assert core_items(exc) == {em(forced("a"), "hard", 10), em(Rule("a", allowed=False), "no", 1)}
    assert "hard force" in exc.message
    assert "`hard`" in exc.message and "`no`" in exc.message


def test_two_hard_forces_on_different_tools_conflict() -> None:
    exc = conflict(
        ["a", "b", "c"], [em(forced("a"), "fa"), em(forced("b"), "fb"), em(Rule("c"), "x")]
    )
    assert core_items(exc) == {em(forced("a"), "fa"), em(forced("b"), "fb")}
    assert "hard force" in exc.message


def test_two_hard_forces_on_the_same_tool_agree() -> None:
    p = resolve(["a", "b"], [em(forced("a"), "one"), em(forced("a"), "two", 3)])
    assert (p.forced, p.allowed) == ("a", ("a", FA))


def test_a_hard_force_satisfies_general_constraints() -> None:
    p = resolve(["a", "b"], [at_most(1, allowed("a"), allowed("b")), forced("b")])
    assert summary(p) == (("b", FA), (), "b", True, "b", {})


@both_modes
def test_forced_projection_keeps_final_answer_only_when_stopping_is_allowed(mode: str) -> None:
    p = resolve(["a", "b"], [Rule("a", forced=True)], mode=mode)
    assert (p.allowed, p.can_stop) == (("a", FA), True)
    p = resolve(["a", "b"], [Rule("a", forced=True, prevent_stop=True)], mode=mode)
    assert (p.allowed, p.can_stop) == (("a",), False)


@both_modes
def test_forcing_final_answer_leaves_it_alone(mode: str) -> None:
    p = resolve(["a"], [Rule(FA, forced=True)], mode=mode)
    assert summary(p) == ((FA,), (), FA, True, FA, {})
    p = resolve(["a"], [forced(FA)], mode=mode)
    assert summary(p) == ((FA,), (), FA, True, FA, {})


def test_projection_is_applied_after_can_stop() -> None:
    # can_stop is read before the projection: a forced tool does not take stopping away.
    p = resolve(["a", "b", "c"], [forced("c"), Rule("a", allowed=False)])
    assert (p.allowed, p.can_stop, p.forced) == (("c", FA), True, "c")


# -- §4.5 tool_choice --------------------------------------------------------------------------


def test_tool_choice_is_the_forced_tool() -> None:
    assert resolve(["a", "b"], [Rule("b", forced=True)]).tool_choice == "b"


def test_tool_choice_is_the_single_allowed_tool() -> None:
    assert resolve(["a", "b"], [Rule("a", allowed=False), ~can_stop]).tool_choice == "b"
    p = resolve(["a"], [Rule("a", allowed=False)], final_answer_as_tool=False)
    assert p.tool_choice == FA


def test_tool_choice_is_required_when_the_agent_cannot_stop() -> None:
    p = resolve(["a", "b"], [Rule("a", prevent_stop=True)], final_answer_as_tool=False)
    assert p.tool_choice == "required"


def test_tool_choice_is_required_when_final_answer_is_a_tool() -> None:
    assert resolve(["a"], []).tool_choice == "required"


def test_tool_choice_is_auto_when_the_agent_may_answer_in_text() -> None:
    p = resolve(["a", "b"], [], final_answer_as_tool=False)
    assert summary(p) == (("a", "b", FA), (), None, True, "auto", {})


def test_a_forced_tool_overrides_auto() -> None:
    p = resolve(["a", "b"], [Rule("a", forced=True)], final_answer_as_tool=False)
    assert p.tool_choice == "a"


# -- §4.6 reasons ------------------------------------------------------------------------------


@both_modes
def test_highest_priority_reason_wins(mode: str) -> None:
    items = [
        em(Rule("a", allowed=False, reason="low"), "r1", 1),
        em(Rule("a", allowed=False, reason="high"), "r2", 9),
        em(Rule("a", allowed=False), "r3", 50),
    ]
    for order in itertools.permutations(items):
        assert resolve(["a"], list(order), mode=mode).reasons == {"a": "high"}


@both_modes
def test_reason_ties_go_to_the_smaller_requirement_name(mode: str) -> None:
    items = [
        em(Rule("a", allowed=False, reason="from beta"), "beta"),
        em(Rule("a", allowed=False, reason="from alpha"), "alpha"),
    ]
    assert resolve(["a"], items, mode=mode).reasons == {"a": "from alpha"}
    assert resolve(["a"], items[::-1], mode=mode).reasons == {"a": "from alpha"}


@both_modes
def test_reason_ties_in_one_requirement_go_to_the_smaller_text(mode: str) -> None:
    items = [em(Rule("a", allowed=False, reason="zeta")), em(Rule("a", hidden=True, reason="eta"))]
    assert resolve(["a"], items, mode=mode).reasons == {"a": "eta"}
    assert resolve(["a"], items[::-1], mode=mode).reasons == {"a": "eta"}


def test_allowing_and_denying_rules_both_give_reasons() -> None:
    items = [
        em(Rule("a", reason="fine"), "r1", 20),
        em(Rule("a", allowed=False, reason="no"), "r2", 10),
        em(Rule("b", reason="always"), "r3", 10),
    ]
    p = resolve(["a", "b"], items)
    assert p.allowed == ("b", FA)
    assert p.reasons == {"a": "fine", "b": "always"}


def test_hidden_tools_carry_reasons() -> None:
    p = resolve(["a", "b"], [Rule("a", hidden=True, reason="secret")])
    assert (p.hidden, p.reasons) == (("a",), {"a": "secret"})


def test_formulas_give_no_reasons_and_rules_without_one_erase_nothing() -> None:
    items = [~allowed("a"), em(Rule("b", allowed=False, reason="why"), "r", 1), em(Rule("b"), "s")]
    assert resolve(["a", "b"], items).reasons == {"b": "why"}


def test_reasons_of_a_forced_step_are_kept() -> None:
    items = [Rule("a", forced=True, reason="go"), Rule("b", allowed=False, reason="stop")]
    p = resolve(["a", "b"], items)
    assert p.reasons == {"a": "go", "b": "stop"}


# -- §4.7 conflicts ----------------------------------------------------------------------------


def test_no_tool_allowed_is_a_conflict_with_a_readable_message() -> None:
    items = [em(Rule("a", allowed=False), "no-a", 10), em(Rule(FA, allowed=False), "no-stop", 3)]
    exc = conflict(["a"], items)
    assert core_items(exc) == set(items)
    assert exc.message.startswith("no tool is left allowed")
    assert "`no-a` (priority 10)" in exc.message and "`no-stop` (priority 3)" in exc.message
    assert exc.hint and "dropping" in exc.hint
    assert "hint:" in str(exc)
    assert exc.step is None


def test_the_core_is_minimal_and_leaves_bystanders_out() -> None:
    needed = [
        em(Rule("a", allowed=False), "r1"),
        em(Rule("b", hidden=True), "r2"),
        em(Rule("c", prevent_stop=True), "r3"),
        em(~allowed("c"), "r4", 2),
    ]
    bystanders = [
        em(Rule("a", reason="x"), "r5"),
        em(at_most(2, hidden("a"), hidden("b"), hidden("c")), "r6"),
    ]
    exc = conflict(["a", "b", "c"], needed + bystanders)
    assert core_items(exc) == set(needed)
    assert all(c.rule == repr(c.item) for c in exc.core)
    entry = next(c for c in exc.core if c.requirement == "r4")
    assert (entry.priority, entry.rule, entry.item) == (2, "~allowed('c')", ~allowed("c"))
    assert str(entry) == "`r4` (priority 2): ~allowed('c')"
    # Read as the record SPEC §10 writes, `{requirement, priority, rule}`, and serialised so.
    assert (entry["requirement"], entry["priority"], entry["rule"]) == ("r4", 2, "~allowed('c')")
    assert entry.model_dump() == {"requirement": "r4", "priority": 2, "rule": "~allowed('c')"}
    with pytest.raises(KeyError):
        entry["item"]


def test_a_core_cites_one_of_the_alternatives() -> None:
    # Both {deny a, deny stop} and {hide a, deny stop} are minimal; a core is one of them.
    items = [
        em(Rule("a", allowed=False), "deny"),
        em(Rule("a", hidden=True), "hide"),
        em(Rule(FA, allowed=False), "stop"),
    ]
    exc = conflict(["a"], items)
    assert core_items(exc) in ({items[0], items[2]}, {items[1], items[2]})


def test_an_item_that_never_holds_is_a_core_on_its_own() -> None:
    bad = allowed("a") & ~allowed("a")
    exc = conflict(["a"], [em(bad, "broken"), em(Rule("a"), "fine")])
    assert core_items(exc) == {em(bad, "broken")}
    assert exc.hint and "on its own" in exc.hint
    assert "contradict" in exc.message


def test_a_general_constraint_in_a_conflict() -> None:
    items = [
        em(at_least(2, allowed("a"), allowed("b"), allowed("c")), "two-of-three"),
        em(~allowed("b"), "no-b"),
        em(Rule("c", hidden=True), "no-c"),
    ]
    exc = conflict(["a", "b", "c"], items)
    assert core_items(exc) == set(items)
    assert exc.message.startswith("the requirements contradict each other")
    assert all(f"`{n}`" in exc.message for n in ("two-of-three", "no-b", "no-c"))


def test_decide_reports_the_step_number() -> None:
    @requirement(name="nothing")
    def nothing(state: RunState) -> list[Item]:
        return [Rule("a", allowed=False), Rule(FA, allowed=False)]

    r = Reasoner(["a"], [nothing])
    with pytest.raises(ConflictError) as info:
        r.decide(RunState.from_trace(["a", ("a", "error")]))
    assert info.value.step == 3
    assert info.value.message.startswith("step 3: ")


# -- §4.8 priority mode --------------------------------------------------------------------


def test_higher_priority_allow_overrides_lower_deny() -> None:
    deny = em(Rule("a", allowed=False, reason="no"), "deny", 10)
    items = [em(Rule("a"), "allow", 20), deny]
    p = resolve(["a", "b"], items, mode="priority")
    assert summary(p) == (("a", "b", FA), (), None, True, "required", {})
    assert [c.requirement for c in p.explanation.overridden] == ["deny"]
    assert [c.requirement for c in p.explanation.tools["a"].overridden] == ["deny"]
    assert p.explanation.mode == "priority"
    # Strict mode: deny wins, with its reason.
    p = resolve(["a", "b"], items)
    assert (p.allowed, p.reasons) == (("b", FA), {"a": "no"})


def test_higher_priority_deny_overrides_lower_allow() -> None:
    items = [em(Rule("a", allowed=False), "deny", 20), em(Rule("a", reason="yes"), "allow", 10)]
    p = resolve(["a", "b"], items, mode="priority")
    assert summary(p) == (("b", FA), (), None, True, "required", {})
    assert [c.requirement for c in p.explanation.overridden] == ["allow"]


def test_restricting_tier_is_above_permitting_tier_at_the_same_priority() -> None:
    items = [em(Rule("a"), "allow"), em(Rule("a", allowed=False), "deny")]
    p = resolve(["a", "b"], items, mode="priority")
    assert p.allowed == ("b", FA)
    assert [c.requirement for c in p.explanation.overridden] == ["allow"]


def test_overridden_rules_give_no_reason() -> None:
    # Same priority: "alpha" would win the reason by name, but its allowance is overridden.
    items = [
        em(Rule("a", allowed=False, reason="zzz"), "zed"),
        em(Rule("a", reason="aaa"), "alpha"),
    ]
    assert resolve(["a", "b"], items).reasons == {"a": "aaa"}
    assert resolve(["a", "b"], items, mode="priority").reasons == {"a": "zzz"}


def test_overridden_lower_reason_leaves_no_reason() -> None:
    items = [em(Rule("a"), "allow", 20), em(Rule("a", allowed=False, reason="x"), "deny", 5)]
    assert resolve(["a"], items, mode="priority").reasons == {}


def test_a_rule_keeps_its_other_unit_when_one_is_overridden() -> None:
    # `mixed` prevents stopping and allows `a`; its prevent_stop is overridden by `stop`, but
    # its allowance of `a` stays and beats the lower deny. It forces nothing any more.
    mixed = em(Rule("a", prevent_stop=True, forced=True, reason="m"), "mixed", 10)
    items = [em(Rule(FA), "stop", 20), mixed, em(Rule("a", allowed=False), "deny", 5)]
    p = resolve(["a", "b"], items, mode="priority")
    assert summary(p) == (("a", "b", FA), (), None, True, "required", {})
    assert {c.requirement for c in p.explanation.overridden} == {"mixed", "deny"}


def test_a_lower_rule_contradicting_what_is_kept_is_overridden_not_a_conflict() -> None:
    items = [em(Rule("a", allowed=False), "hi", 20), em(Rule(FA, allowed=False), "lo", 10)]
    p = resolve(["a"], items, mode="priority")
    assert summary(p) == ((FA,), (), None, True, FA, {})
    assert [c.requirement for c in p.explanation.overridden] == ["lo"]
    with pytest.raises(ConflictError):
        resolve(["a"], items)


def test_a_same_tier_clash_is_a_conflict_citing_the_tier_and_what_is_above() -> None:
    above = em(Rule("b", allowed=False), "hi", 20)
    tier = [em(Rule("a", allowed=False), "lo1", 10), em(Rule(FA, allowed=False), "lo2", 10)]
    below = [em(Rule("a"), "lower", 5), em(Rule("b", allowed=False), "lowest", 1)]
    exc = conflict(["a", "b"], [above, *tier, *below], mode="priority")
    assert core_items(exc) == {above, *tier}


def test_a_same_tier_clash_between_permitting_units() -> None:
    # at_most(1, a, b) is kept; each allowance fits it alone but not together.
    limit = em(at_most(1, allowed("a"), allowed("b")), "limit", 10)
    allow_a, allow_b = em(Rule("a"), "want-a", 10), em(Rule("b"), "want-b", 10)
    exc = conflict(["a", "b"], [limit, allow_a, allow_b], mode="priority")
    assert core_items(exc) == {limit, allow_a, allow_b}


def test_an_allowance_steers_a_general_constraint_in_priority_mode() -> None:
    items = [em(at_most(1, allowed("a"), allowed("b")), "limit"), em(Rule("b"), "want-b")]
    assert resolve(["a", "b"], items).allowed == ("a", FA)
    p = resolve(["a", "b"], items, mode="priority")
    assert p.allowed == ("b", FA)
    assert p.explanation.overridden == ()


def test_priority_mode_hard_force_overridden_by_higher_deny() -> None:
    items = [em(Rule("a", allowed=False), "deny", 20), em(forced("a"), "force", 10)]
    p = resolve(["a", "b"], items, mode="priority")
    assert summary(p) == (("b", FA), (), None, True, "required", {})
    assert [c.requirement for c in p.explanation.overridden] == ["force"]


def test_priority_mode_hard_force_and_deny_in_one_tier_conflict() -> None:
    items = [em(Rule("a", allowed=False), "deny"), em(forced("a"), "force")]
    exc = conflict(["a", "b"], items, mode="priority")
    assert core_items(exc) == set(items)


def test_priority_mode_lower_hard_force_loses_to_a_higher_one() -> None:
    items = [em(forced("a"), "one", 20), em(forced("b"), "two", 10)]
    p = resolve(["a", "b"], items, mode="priority")
    assert (p.forced, p.allowed) == ("a", ("a", FA))
    assert [c.requirement for c in p.explanation.overridden] == ["two"]


def test_priority_mode_formula_overridden_as_a_whole() -> None:
    items = [em(Rule("a"), "allow", 20), em(~allowed("a") & ~allowed("b"), "deny-both", 10)]
    p = resolve(["a", "b"], items, mode="priority")
    assert p.allowed == ("a", "b", FA)
    assert [c.requirement for c in p.explanation.overridden] == ["deny-both"]


def test_explanation_lists_deciding_rules_highest_priority_first() -> None:
    items = [em(Rule("a", allowed=False), "low", 1), em(Rule("a", reason="x"), "high", 30)]
    p = resolve(["a", "b"], items)
    decision = p.explanation.tools["a"]
    assert decision.status == "denied"
    assert [c.requirement for c in decision.decided_by] == ["high", "low"]
    assert p.explanation.tools["b"].decided_by == ()
    assert "a: denied" in str(p.explanation)


# -- determinism and the cache --------------------------------------------------------------


DETERMINISM_CASES = [
    [
        em(Rule("a", forced=True, reason="p"), "x", 3),
        em(Rule("b", forced=True), "y", 3),
        em(at_most(1, allowed("a"), allowed("c")), "z", 2),
        em(Rule("c", hidden=True, reason="q"), "w", 3),
    ],
    [
        em(Rule("a", allowed=False), "deny"),
        em(Rule("a", hidden=True), "hide"),
        em(Rule(FA, allowed=False), "stop"),
        em(~allowed("b") | ~allowed("c"), "one-of"),
        em(Rule("c", allowed=False), "c", 3),
        em(Rule("b", allowed=False), "b", 3),
    ],
]


def outcome(r: Reasoner, emitted: list[Emitted]) -> object:
    try:
        return summary(r.resolve(emitted))
    except ConflictError as exc:
        return [(c.requirement, c.priority, c.rule) for c in exc.core]


@both_modes
@pytest.mark.parametrize("items", DETERMINISM_CASES)
def test_every_order_gives_the_same_answer(mode: str, items: list[Emitted]) -> None:
    tools = ["a", "b", "c"]
    first = outcome(Reasoner(tools, mode=mode), items)  # type: ignore[arg-type]
    shared = Reasoner(tools, mode=mode, cache_size=0)  # type: ignore[arg-type]
    orders = list(itertools.permutations(items))
    # Every order on the shared reasoner; a fixed sample of them on fresh reasoners.
    for i, order in enumerate(orders):
        assert outcome(shared, list(order)) == first
        if i % 37 == 0:
            assert outcome(Reasoner(tools, mode=mode), list(order)) == first  # type: ignore[arg-type]


def test_the_pass_does_not_depend_on_earlier_decisions() -> None:
    items = [em(at_most(1, allowed("b"), allowed("d")), "x"), em(hidden("a") | hidden("c"), "y")]
    fresh = Reasoner(["a", "b", "c", "d"]).resolve(items)
    used = Reasoner(["a", "b", "c", "d"], cache_size=0)
    for history in ([em(forced("b"))], [em(Rule("a", hidden=True))], [em(hidden("c"), "z")]):
        used.resolve(history)
        assert summary(used.resolve(items)) == summary(fresh)
    assert (fresh.allowed, fresh.hidden) == (("a", "b", FA), ("c",))


def test_the_core_does_not_depend_on_earlier_decisions() -> None:
    # Two minimal cores: {hide b, force b} and {force b, force d}.
    tools = ["a", "b", "c", "d"]
    items = [em(Rule("b", hidden=True), "y"), em(forced("b"), "y"), em(forced("d"), "y")]
    fresh = conflict(tools, items)
    used = Reasoner(tools)
    used.resolve([em(forced("b"), "earlier")])
    with pytest.raises(ConflictError) as info:
        used.resolve(items)
    assert core_items(info.value) == core_items(fresh)


def test_requirement_order_does_not_matter() -> None:
    @requirement(name="one", priority=5)
    def one(state: RunState) -> list[Item]:
        return [Rule("a", forced=True, reason="one")]

    @requirement(name="two", priority=5)
    def two(state: RunState) -> list[Item]:
        return [Rule("b", forced=True, reason="two"), Rule("a", reason="two")]

    first = Reasoner(["a", "b"], [one, two]).decide()
    second = Reasoner(["a", "b"], [two, one]).decide()
    assert first == second
    assert summary(first) == (("a", FA), (), "a", True, "a", {"a": "one", "b": "two"})


def test_the_same_set_is_answered_from_the_cache() -> None:
    r = Reasoner(["a", "b"])
    items = [em(Rule("a", allowed=False), "x"), em(Rule("b", reason="y"), "y")]
    first = r.resolve(items)
    assert (r.hits, r.misses) == (0, 1)
    again = r.resolve(items[::-1])
    assert again is first
    assert (r.hits, r.misses) == (1, 1)
    other = r.resolve(items[:1])
    assert other is not first
    assert (r.hits, r.misses) == (1, 2)


def test_a_cached_conflict_raises_again() -> None:
    r = Reasoner(["a"])
    items = [em(Rule("a", allowed=False), "x"), em(Rule(FA, allowed=False), "y")]
    for _ in range(2):
        with pytest.raises(ConflictError) as info:
            r.resolve(items, step=4)
        assert info.value.step == 4
    assert (r.hits, r.misses) == (1, 1)


def test_cache_size_zero_never_hits_and_lru_evicts() -> None:
    r = Reasoner(["a"], cache_size=0)
    first, second = r.resolve([]), r.resolve([])
    assert first == second and first is not second
    assert r.hits == 0
    r = Reasoner(["a", "b"], cache_size=1)
    a, b = [em(Rule("a", allowed=False))], [em(Rule("b", allowed=False))]
    r.resolve(a)
    r.resolve(b)
    r.resolve(a)
    assert (r.hits, r.misses) == (0, 3)
    r.resolve(a)
    assert (r.hits, r.misses) == (1, 3)


def test_a_pass_is_immutable() -> None:
    p = resolve(["a"], [])
    with pytest.raises(ValidationError):
        p.allowed = ()  # type: ignore[misc]


def test_changing_a_returned_pass_cannot_change_later_answers() -> None:
    r = Reasoner(["a", "b"])
    items = [em(Rule("a", allowed=False, reason="no"), "x")]
    p = r.resolve(items)
    with contextlib.suppress(TypeError):
        p.reasons["a"] = "changed"  # type: ignore[index]
    assert r.resolve(items).reasons == {"a": "no"}


# -- running requirements ---------------------------------------------------------------------


def test_decide_runs_requirements_on_the_state() -> None:
    class OnlyAfterSearch(Requirement):
        def run(self, state: RunState) -> list[Item]:
            return [Rule("answer", allowed=state.called("search"), reason="search first")]

    r = Reasoner(["search", "answer"], [OnlyAfterSearch()])
    assert r.decide().allowed == ("search", FA)
    assert r.decide(RunState.from_trace([("search", "error")])).allowed == ("search", FA)
    p = r.decide(RunState.from_trace(["search"]))
    assert (p.allowed, p.reasons) == (("search", "answer", FA), {"answer": "search first"})


def test_disabled_requirements_are_not_run() -> None:
    calls: list[str] = []

    @requirement(name="off", enabled=False)
    def off(state: RunState) -> list[Item]:
        calls.append("off")
        return [Rule("a", allowed=False)]

    class Broken(Requirement):
        def run(self, state: RunState) -> list[Item]:
            raise RuntimeError("must not run")

    r = Reasoner(["a"], [off, Broken(enabled=False)])
    assert r.decide().allowed == ("a", FA)
    assert calls == []


@pytest.mark.anyio
async def test_adecide_awaits_async_requirements() -> None:
    @requirement(name="later", priority=20)
    async def later(state: RunState) -> list[Item]:
        return [Rule("b", forced=True, reason="async")]

    @requirement(name="now")
    def now(state: RunState) -> list[Item]:
        return [Rule("a", allowed=False, reason="sync")]

    r = Reasoner(["a", "b"], [later, now])
    p = await r.adecide(RunState.from_trace(["a"]))
    assert summary(p) == (("b", FA), (), "b", True, "b", {"a": "sync", "b": "async"})
    assert await r.adecide() == r.resolve(
        [
            em(Rule("b", forced=True, reason="async"), "later", 20),
            em(Rule("a", False, reason="sync"), "now"),
        ]
    )


@pytest.mark.anyio
async def test_adecide_wraps_a_failing_async_requirement() -> None:
    @requirement(name="flaky")
    async def flaky(state: RunState) -> list[Item]:
        raise KeyError("boom")

    with pytest.raises(RequirementError) as info:
        await Reasoner(["a"], [flaky]).adecide()
    assert info.value.requirement == "flaky"
    assert "`flaky`" in info.value.message
    assert isinstance(info.value.__cause__, KeyError)


def test_decide_refuses_an_async_requirement_and_closes_its_coroutine() -> None:
    made: list[object] = []

    async def body() -> list[Item]:
        return []

    @requirement(name="sneaky")
    def sneaky(state: RunState) -> object:
        coro = body()
        made.append(coro)
        return coro

    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], [sneaky]).decide()
    assert "`sneaky`" in info.value.message and "adecide" in info.value.message
    (coro,) = made
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED  # type: ignore[arg-type]
