"""Verdicts a step counter bounds (``compositional._Decider._counted``): a hard force at a
fixed step that counts every call holds only within that many steps, so bounded model
checking of that many steps decides it, where the first layers did not; and a finding's
witness is then the engines' own, the lexicographically smallest shortest trace."""

from __future__ import annotations

import pytest
from deciders import first_state_only

from ruleengine import ConditionalRequirement, Requirement
from ruleengine.check import compositional
from ruleengine.check.bounds import UNREACHABLE, horizon
from ruleengine.check.explicit import analyse
from ruleengine.check.system import Component, System
from ruleengine.check.unrolled import Unrolled

TOOLS = ["a", "b", "c", "x", "y"]


def _forced_late(step: int, *, every_call: bool = True) -> list[Requirement]:
    """`x` forced at ``step`` (counting every call, or only the successful ones), and
    allowed only after `y` and `a`: a forced conflict unless both came first."""
    return [
        ConditionalRequirement(
            "x", force_at_step=step, only_success_invocations=not every_call, name="forced-x"
        ),
        ConditionalRequirement("x", only_after=["y", "a"], name="x-after-y-and-a"),
    ]


def _component(system: System, name: str) -> Component:
    return next(c for c in system.components if c.requirement.name == name)


def test_a_step_counter_holds_its_first_views_once_each_a_step_apart() -> None:
    system = System(TOOLS, _forced_late(4))
    found = horizon(_component(system, "forced-x"), system.callable)
    # Views 0..3 are the steps before the force, each held after exactly that many steps;
    # the last (every step from there on) has no bound.
    assert found.least == (0, 1, 2, 3, 4)
    assert found.most == (0, 1, 2, 3, None)


def test_a_counter_of_successful_calls_bounds_nothing() -> None:
    # A failed call leaves the count as it is: a run can hold each view as long as it fails.
    system = System(TOOLS, _forced_late(4, every_call=False))
    found = horizon(_component(system, "forced-x"), system.callable)
    assert found.most == (None,) * len(found.most)
    assert found.least[0] == 0 and UNREACHABLE not in found.least


def test_a_forced_conflict_at_a_counted_step_is_decided_with_the_engines_witness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without the first layers, the finding is left to the proofs; the step counter bounds
    # it to 3 steps, and bounded model checking of 3 steps finds it, with the trace the
    # explicit engine gives (the first shortest one in declared order: `a`, then `a`).
    monkeypatch.setattr(compositional, "LAYERS", -1)
    system = System(TOOLS, _forced_late(4))
    decider = first_state_only(system)
    decider._findings()
    assert "forced-conflict:x" in decider.unproven
    decider._counted(compositional.UNROLL_SECONDS)
    assert decider.result.decided is not None
    assert "forced-conflict:x" in decider.result.decided
    exact = analyse(system)
    assert exact.complete
    assert decider.result.forced_conflicts["x"].trace == exact.forced_conflicts["x"].trace
    assert exact.forced_conflicts["x"].trace == (("a", "ok"), ("a", "ok"), ("a", "ok"))


def test_the_witness_is_the_first_in_declared_order_not_the_solvers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Declared last, `a` still comes first wherever it can: the tools' order decides, and
    # the solver's first history (any that fits) is walked to the smallest.
    monkeypatch.setattr(compositional, "LAYERS", -1)
    system = System(list(reversed(TOOLS)), _forced_late(3))
    decider = first_state_only(system)
    decider._findings()
    decider._counted(compositional.UNROLL_SECONDS)
    exact = analyse(system)
    assert decider.result.forced_conflicts["x"].trace == exact.forced_conflicts["x"].trace
    assert exact.forced_conflicts["x"].trace[0] == ("y", "ok")


def test_a_counter_of_successful_calls_leaves_the_finding_to_the_proofs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compositional, "LAYERS", -1)
    system = System(TOOLS, _forced_late(4, every_call=False))
    decider = first_state_only(system)
    decider._findings()
    decider._counted(compositional.UNROLL_SECONDS)
    assert "forced-conflict:x" in decider.unproven


def test_a_question_by_a_step_outside_the_history_is_refused() -> None:
    system = System(TOOLS, _forced_late(4))
    decider = first_state_only(system)
    unrolled: Unrolled = decider.unrolled
    with pytest.raises(ValueError, match="step 3 is not one of a history of 3 steps"):
        unrolled.reaches_by(decider.enc.bdd.true, 3, 3, system.initial, [system.initial])


def test_bounded_model_checking_shows_an_unproven_finding_with_the_engines_witness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counting successful calls, the force bounds nothing; the questions to the unrolled
    # steps within 2, 4 and 8 steps find the conflict all the same, and its witness is
    # walked to the engines' own.
    monkeypatch.setattr(compositional, "LAYERS", -1)
    system = System(list(reversed(TOOLS)), _forced_late(4, every_call=False))
    decider = first_state_only(system)
    decider._findings()
    assert "forced-conflict:x" in decider.unproven
    decider._unroll((2, 4, 8))
    assert "forced-conflict:x" not in decider.unproven
    exact = analyse(system)
    assert decider.result.forced_conflicts["x"].trace == exact.forced_conflicts["x"].trace


def test_a_question_about_several_next_states_is_whether_one_of_them_will_do() -> None:
    # The bisection of ``_smallest`` asks whether a history is at one of a range of next
    # states: answered for a range as for each of its states alone, whatever the range.
    # Into the state after `a` and `y` in two steps: only a first step that calls one of
    # them (and succeeds) leads there.
    system = System(TOOLS, _forced_late(3))
    decider = first_state_only(system)
    enc = decider.enc
    goal = system.successor(system.successor(system.initial, ("a", "ok")), ("y", "ok"))
    target = enc.bdd.true
    for comp, view in zip(system.components, goal, strict=True):
        target &= enc.cube(enc.bits[id(comp)], view)
    unrolled: Unrolled = decider.unrolled
    options = [after for _, after in decider.verdicts._steps_from(system.initial)]
    alone = [unrolled.reaches_by(target, 2, 0, system.initial, [a]) for a in options]
    assert any(alone) and not all(alone)
    for low in range(len(options)):
        for high in range(low + 1, len(options) + 1):
            ranged = unrolled.reaches_by(target, 2, 0, system.initial, options[low:high])
            assert ranged == any(alone[low:high]), (low, high)
    assert not unrolled.reaches_by(target, 2, 0, system.initial, [])
