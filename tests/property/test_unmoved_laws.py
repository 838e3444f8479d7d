"""``Reasoner.unmoved``: a requirement it names leaves the decision as it is.

The static checker skips the decision without a requirement's records (its liveness) for
every requirement ``unmoved`` names, so a wrong name would hide a live requirement. Checked
on random emitted sets in both modes, with records copied across requirements (so that
covered and twinned records are common) and with some requirements yielding.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import note as hypothesis_note
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from strategies import REQUIREMENT_NAMES, Instance, Named, instances

from ruleengine import ArgumentsRequirement, Pass, Reasoner, Rule, forced
from ruleengine.aggregate import Clash
from ruleengine.conditions.admission import ArgCheck
from ruleengine.conditions.types import ToolSpec, parameters_from_spec
from ruleengine.errors import PolicyError
from ruleengine.rules import Emitted

MODES = ("strict", "priority")


def _reasoner(instance: Instance, mode: str, yielding: frozenset[str]) -> Reasoner:
    return Reasoner(
        instance.declared,
        [Named(n, yielding=n in yielding) for n in REQUIREMENT_NAMES],
        mode=mode,  # type: ignore[arg-type]
        final_answer_as_tool=instance.final_answer_as_tool,
    )


def _same(a: Pass | Clash, b: Pass | Clash) -> bool:
    if isinstance(a, Clash) or isinstance(b, Clash):
        return isinstance(a, Clash) and isinstance(b, Clash)
    return (a.allowed, a.hidden, a.forced, a.can_stop) == (
        b.allowed,
        b.hidden,
        b.forced,
        b.can_stop,
    )


@st.composite
def _copied(draw: st.DrawFn) -> tuple[Instance, list[Emitted]]:
    """An instance, and its records with some copied under another requirement's name (at
    the same priority, or not). Soft forces are frequent in one instance in three."""
    instance = draw(instances(max_items=7, force_bias=draw(st.sampled_from((False, False, True)))))
    records = list(instance.emitted)
    for e in list(records):
        if draw(st.booleans()):
            other = draw(st.sampled_from(REQUIREMENT_NAMES))
            priority = e.priority if draw(st.booleans()) else draw(st.sampled_from((1, 2, 3)))
            records.append(Emitted(e.item, other, priority))
    order = draw(st.permutations(range(len(records))))
    return instance, [records[i] for i in order]


def _check(r: Reasoner, records: Sequence[Emitted]) -> int:
    """Asserts the law on ``records``; how many requirements ``unmoved`` named."""
    note(f"records: {records}")
    names = sorted({e.requirement for e in records})
    whole = r.settle(records)
    named = r.unmoved(records, names)
    assert named <= set(names)
    for name in sorted(named):
        rest = [e for e in records if e.requirement != name]
        assert _same(whole, r.settle(rest)), name
    return len(named)


@pytest.mark.parametrize("mode", MODES)
@given(case=_copied(), yielding=st.frozensets(st.sampled_from(REQUIREMENT_NAMES), max_size=2))
def test_a_requirement_named_unmoved_leaves_the_decision(
    mode: str, case: tuple[Instance, list[Emitted]], yielding: frozenset[str]
) -> None:
    instance, records = case
    _check(_reasoner(instance, mode, yielding), records)


def note(text: str) -> None:
    """Hypothesis's ``note`` within a test it runs, else nothing."""
    if currently_in_test_context():
        hypothesis_note(text)


@pytest.mark.parametrize("mode", MODES)
def test_covered_and_twinned_records_are_named(mode: str) -> None:
    r = Reasoner(["a", "b"], mode=mode)  # type: ignore[arg-type]
    deny_a = Rule("a", allowed=False)
    records = [Emitted(deny_a, "p", 2), Emitted(deny_a, "q", 2), Emitted(Rule("b"), "s", 2)]
    # `p` and `q` deny `a` alike (twins); `s` allows `b`, which strict mode needs no unit
    # for (a set it covers), but priority mode reads as a unit of its own.
    expected = {"p", "q", "s"} if mode == "strict" else {"p", "q"}
    assert r.unmoved(records, ["p", "q", "s"]) == expected
    assert _check(r, records) == len(expected)
    # The denial alone is no one's twin: without it `a` is allowed again.
    assert r.unmoved(records[:1], ["p"]) == frozenset()


def test_priority_twins_need_the_same_priority() -> None:
    r = Reasoner(["a", "b"], mode="priority")
    deny_a = Rule("a", allowed=False)
    records = [Emitted(deny_a, "p", 2), Emitted(deny_a, "q", 3), Emitted(Rule("a"), "s", 2)]
    # At priority 2, `s`'s allow of `a` would meet `p`'s denial in one tier, but `q` denies
    # `a` above them both: without `q`, the tie at 2 is a clash.
    assert "q" not in r.unmoved(records, ["p", "q", "s"])
    _check(r, records)


def test_in_priority_mode_overridden_and_covered_units_are_named() -> None:
    r = Reasoner(["a", "b"], mode="priority")
    records = [
        Emitted(Rule("a", allowed=False), "p", 5),
        Emitted(Rule("a", allowed=True), "q", 1),  # overridden by `p`'s denial above it
        Emitted(Rule("a", allowed=False), "s", 3),  # what `p` keeps already
    ]
    assert r.unmoved(records, ["p", "q", "s"]) == {"q", "s"}
    assert _check(r, records) == 2
    # Below a clash nothing is read: `t` is named, `u` and `v`, which clash, are not.
    clash = [
        Emitted(Rule("a", allowed=False), "u", 4),
        Emitted(forced("a"), "v", 4),
        Emitted(Rule("b", hidden=True), "t", 1),
    ]
    assert isinstance(r.settle(clash), Clash)
    assert r.unmoved(clash, ["t", "u", "v"]) == {"t"}
    assert _check(r, clash) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_soft_force_is_never_named(mode: str) -> None:
    r = Reasoner(["a", "b"], mode=mode)  # type: ignore[arg-type]
    push_a = Rule("a", forced=True)
    records = [
        Emitted(push_a, "p", 3),
        Emitted(push_a, "q", 1),
        Emitted(Rule("b", forced=True), "s", 2),
    ]
    # `p`'s force of `a` wins; without it, `s`'s of `b` would (its priority is above `q`'s).
    assert r.unmoved(records, ["p", "q", "s"]) == frozenset()
    assert _check(r, records) == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_twin_that_does_not_force_is_no_twin_of_a_force(mode: str) -> None:
    r = Reasoner(["a", "b"], mode=mode)  # type: ignore[arg-type]
    records = [
        Emitted(Rule("a", forced=True), "p", 2),
        Emitted(Rule("a"), "q", 2),  # the same units, without the force
        Emitted(Rule("b", forced=True), "s", 1),
    ]
    assert "p" not in r.unmoved(records, ["p", "q", "s"])
    _check(r, records)


def test_a_hard_force_twin_is_named() -> None:
    r = Reasoner(["a", "b"])
    records = [Emitted(forced("a"), "p", 2), Emitted(forced("a"), "q", 2)]
    assert r.unmoved(records, ["p", "q"]) == {"p", "q"}


def test_checks_of_arguments_name_nothing() -> None:
    a = ToolSpec("a", None, parameters_from_spec({"x": "number"}, owner="t"))
    r = Reasoner([a, "b"], [ArgumentsRequirement("a", allow_if="arg.x == 1", name="q")])
    checks = r.emit(None)
    assert any(type(e.item) is ArgCheck for e in checks)
    deny_b = Rule("b", allowed=False)
    records = [Emitted(deny_b, "p", 2), Emitted(deny_b, "s", 2), *checks]
    assert r.unmoved(records, ["p", "s"]) == frozenset()


def test_yielding_records_that_clash_name_nothing() -> None:
    tools = ["a", "b"]
    deny_a = Rule("a", allowed=False)
    records = [
        Emitted(deny_a, "p", 2),
        Emitted(deny_a, "q", 2),
        Emitted(forced("a"), "r", 2),  # clashes with the denial: `r` gives way
    ]
    yielding = Reasoner(tools, [Named(n, yielding=n == "r") for n in "pqr"])
    assert yielding.unmoved(records, ["p", "q"]) == frozenset()
    plain = Reasoner(tools, [Named(n, yielding=False) for n in "pqr"])
    assert plain.unmoved(records, ["p", "q"]) == {"p", "q"}  # a clash either way
    # Without the clash, a yielding requirement's records change nothing.
    calm = [*records[:2], Emitted(Rule("b"), "r", 2)]
    assert yielding.unmoved(calm, ["p", "q"]) == {"p", "q"}


@pytest.mark.parametrize(
    ("emitted", "names", "culprit"),
    [
        ("records", ["p"], "emitted"),
        ([object()], ["p"], None),
        ([], "p", "names"),
        ([], [3], "names"),
        ([], [["p"]], "names"),
    ],
)
def test_bad_input_is_a_policy_error(emitted: object, names: object, culprit: str | None) -> None:
    r = Reasoner(["a"])
    with pytest.raises(PolicyError) as info:
        r.unmoved(emitted, names)  # type: ignore[arg-type]
    if culprit is not None:
        assert culprit in str(info.value)
