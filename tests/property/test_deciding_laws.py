"""``Reasoner.word`` and ``System.deciding``: one set of records stands for every valuation of
the opaque checks that emits alike.

The static checker's searches and replays ask of a state only what some valuation allows;
``System.deciding`` gives one set of records per value of the or of the words of the
components that emit alike, where ``System.variants`` gives every combination (eight cycle
guards: 256). A set left out whose decision no set given shares would hide a step, a stop or
a clash from them: the laws compare the decisions both give, on random policies with cycle
guards (which yield) and custom checks, and the word's own law on random records.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies, priority_policies
from strategies import REQUIREMENT_NAMES, Instance, Named, instances

from ruleengine import ConditionalRequirement, CycleGuard, Pass, Reasoner, Rule, allowed, at_most
from ruleengine.aggregate import Clash
from ruleengine.check.explicit import asking_of, decide, live_at, live_here
from ruleengine.check.system import State, System
from ruleengine.errors import PolicyError
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES


def _key(outcome: Pass | Clash) -> tuple[object, ...]:
    """What the searches read of a decision: a clash, or the pass's tools and stop."""
    if isinstance(outcome, Clash):
        return ("clash",)
    return (outcome.allowed, outcome.hidden, outcome.forced, outcome.can_stop)


@st.composite
def _alike(draw: st.DrawFn) -> tuple[Instance, list[Emitted], list[Emitted], list[Emitted]]:
    """An instance's records split in two sets, the second made of the first's items under
    other requirements' names (some dropped, some twice, some at another priority), and
    other records to join both."""
    instance = draw(instances(max_items=7, force_bias=draw(st.sampled_from((False, True)))))
    records = list(instance.emitted)
    cut = draw(st.integers(0, len(records)))
    first, others = records[:cut], records[cut:]
    second = []
    for e in first:
        for _ in range(draw(st.integers(0, 2))):
            name = draw(st.sampled_from(REQUIREMENT_NAMES))
            priority = draw(st.sampled_from((e.priority, e.priority, 1, 5)))
            second.append(Emitted(e.item, name, priority))
    return instance, first, second, others


@pytest.mark.parametrize("mode", ["strict", "priority"])
@given(case=_alike(), yielding=st.frozensets(st.sampled_from(REQUIREMENT_NAMES), max_size=2))
def test_sets_of_one_word_joined_with_the_same_records_are_decided_alike(
    mode: str,
    case: tuple[Instance, list[Emitted], list[Emitted], list[Emitted]],
    yielding: frozenset[str],
) -> None:
    instance, first, second, others = case
    r = Reasoner(
        instance.declared,
        [Named(n, yielding=n in yielding) for n in REQUIREMENT_NAMES],
        mode=mode,  # type: ignore[arg-type]
        final_answer_as_tool=instance.final_answer_as_tool,
    )
    a, b = r.word(first), r.word(second)
    rest = r.word(others)
    if a is not None and rest is not None:
        assert r.word([*first, *others]) == a | rest  # the word of a union
    if a is None or b is None or a != b:
        return
    note(f"first: {first}\nsecond: {second}\nothers: {others}")
    joined_a, joined_b = [*first, *others], [*second, *others]
    if r.yields(joined_a) or r.yields(joined_b):
        return
    event(f"{mode}: one word, decided")
    assert _key(r.settle(joined_a)) == _key(r.settle(joined_b))


def test_a_soft_force_or_a_formula_has_no_word() -> None:
    r = Reasoner(["a", "b"])
    assert r.word([Emitted(Rule("a", forced=True), "p", 1)]) is None
    assert r.word([Emitted(at_most(1, allowed("a"), allowed("b")), "p", 1)]) is None
    assert r.word([Emitted(Rule("a", allowed=False), "p", 1)]) is not None
    assert r.word([]) == 0


def test_in_priority_mode_a_word_tells_priorities_apart() -> None:
    # Denying `a` above a rule that asserts it allowed denies it; below, it is overridden.
    r = Reasoner(["a", "b"], mode="priority")
    allow = [Emitted(Rule("a", allowed=True), "p", 3)]
    high, low = (
        [Emitted(Rule("a", allowed=False), "q", 5)],
        [Emitted(Rule("a", allowed=False), "q", 1)],
    )
    assert "a" not in _key(r.settle([*high, *allow]))[0]
    assert "a" in _key(r.settle([*low, *allow]))[0]
    assert r.word(high) != r.word(low)
    # The same rule from another requirement at the same priority: one word.
    assert r.word(high) == r.word([Emitted(Rule("a", allowed=False), "s", 5)]) is not None
    assert r.word([*high, *allow]) == r.word(high) | r.word(allow)


def test_a_word_outlives_the_reasoners_tables() -> None:
    # The solver's literals are renumbered when the reasoner's tables fill up; a word read
    # before is still the word after (the static checker keeps words for a whole check).
    r = Reasoner(["a", "b", "c"])
    records = [Emitted(Rule("b", allowed=False), "p", 1), Emitted(Rule("c", hidden=True), "q", 2)]
    before = r.word(records)
    r._aggregator._reset()  # what a full table does between two decisions
    r.settle([Emitted(at_most(1, allowed("c"), allowed("a")), "s", 1)])
    assert r.word(records) == before is not None


@st.composite
def _guarded(draw: st.DrawFn) -> tuple[PolicyCase, list[CycleGuard]]:
    """A random policy in strict mode, with one to four cycle guards besides."""
    case = draw(policies(priority=False))
    guards = [
        CycleGuard(
            max_strike_length=draw(st.integers(1, 3)),
            max_total_occurrences=draw(st.integers(1, 4)),
            window_size=draw(st.integers(1, 4)),
            name=f"guard-{i}",
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    return case, guards


def _states(system: System, steps: list[tuple[int, int]]) -> list[State]:
    """The states along one walk: each step the ``i``-th tool some valuation allows (modulo
    their number) with the ``s``-th status."""
    state, found = system.initial, [system.initial]
    for i, s in steps:
        tools = sorted(
            {
                t
                for records, _ in system.variants(state)
                if isinstance(o := decide(system, records), Pass)
                for t in o.allowed
                if t != "final_answer"
            }
        )
        if not tools:
            break
        state = system.successor(state, (tools[i % len(tools)], STATUSES[s % len(STATUSES)]))
        found.append(state)
    return found


_STEPS = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2)), max_size=6)


@st.composite
def _guarded_systems(draw: st.DrawFn, mode: str) -> System:
    """A random policy as a system: in strict mode with one to four cycle guards besides
    (``_guarded``), in priority mode with one to three at one priority."""
    if mode == "strict":
        policy, guards = draw(_guarded())
        note(policy.source())
        note(f"guards: {guards}")
        return System(list(policy.tools), [*policy.requirements(), *guards])
    case = draw(priority_policies(guards=True))
    note(case.source())
    return System(list(case.tools), case.requirements(), mode="priority")


@pytest.mark.parametrize("mode", ["strict", "priority"])
@given(data=st.data(), steps=_STEPS)
def test_deciding_gives_every_decision_variants_give(
    mode: str, data: st.DataObject, steps: list[tuple[int, int]]
) -> None:
    system = data.draw(_guarded_systems(mode))
    for state in _states(system, steps):
        every = list(system.variants(state))
        given_ = list(system.deciding(state))
        assert len(given_) <= len(every)
        if len(given_) < len(every):
            event("fewer sets than variants")
        every_records = {frozenset(records) for records, _ in every}
        assert all(frozenset(records) in every_records for records in given_)
        assert {_key(decide(system, r)) for r in given_} == {
            _key(decide(system, r)) for r, _ in every
        }, state


@pytest.mark.parametrize("mode", ["strict", "priority"])
@given(data=st.data(), steps=_STEPS)
def test_the_requirements_live_at_a_state_are_those_some_valuation_shows(
    mode: str, data: st.DataObject, steps: list[tuple[int, int]]
) -> None:
    # ``live_here`` asks each requirement at ``deciding``'s sets with its own opaque
    # components apart (strict mode); every valuation asked one by one must show the same.
    system = data.draw(_guarded_systems(mode))
    asking = asking_of(system)
    names = frozenset(c.requirement.name for c in system.components)
    for state in _states(system, steps):
        every: set[str] = set()
        for records, _ in system.variants(state):
            every |= live_at(system, records, decide(system, records), names, asking)
        assert live_here(system, state, names, asking) == every, state
        if len(list(system.deciding(state))) < len(list(system.variants(state))):
            event("fewer sets than variants")


def test_alike_guards_are_decided_once_per_value_of_their_word() -> None:
    # Four guards deny the last tool or not: 16 valuations, two decisions (denied, not).
    guards = [CycleGuard(max_strike_length=k, name=f"g{k}") for k in range(1, 5)]
    system = System(["a", "b"], guards)
    state = system.successor(system.initial, ("a", "ok"))
    assert len(list(system.variants(state))) == 16
    given_ = list(system.deciding(state))
    assert len(given_) == 2
    assert {_key(decide(system, r)) for r in given_} == {
        _key(decide(system, r)) for r, _ in system.variants(state)
    }


def _checked(state: object) -> bool:
    return True


def test_where_a_guard_gives_way_every_valuation_is_decided() -> None:
    # After `a`: the guards deny `a` or not; the custom check lets `a` be called or denies
    # it; the run may not stop after `a`. "Denied by the check, the guards silent" and
    # "allowed by the check, a guard denying" have one word, but only in the second does a
    # guard give way (the deadlock it makes holds its record): there the pass allows `a`,
    # in the first the step is a deadlock.
    reqs = [
        ConditionalRequirement("a", custom_checks=[_checked], name="checked"),
        ConditionalRequirement("final_answer", only_before=["a"], name="stop-first"),
        CycleGuard(max_strike_length=1, max_total_occurrences=1, window_size=1, name="g1"),
        CycleGuard(max_strike_length=1, max_total_occurrences=1, window_size=1, name="g2"),
    ]
    system = System(["a"], reqs)
    state = system.successor(system.initial, ("a", "ok"))
    decisions = {_key(decide(system, r)) for r, _ in system.variants(state)}
    assert ("clash",) in decisions and len(decisions) == 2
    assert {_key(decide(system, r)) for r in system.deciding(state)} == decisions


def test_bad_records_are_refused_by_name() -> None:
    r = Reasoner(["a"])
    unknown = [Emitted(Rule("zz", allowed=False), "p", 1)]
    for ask in (r.word, r.yields):
        with pytest.raises(PolicyError, match="must be a list"):
            ask(5)  # type: ignore[arg-type]
        with pytest.raises(PolicyError, match="is not an `Emitted"):
            ask([1])  # type: ignore[list-item]
        with pytest.raises(PolicyError, match="unknown tool `zz`"):
            ask(unknown)
