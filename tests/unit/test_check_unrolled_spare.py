"""The steps a "within ``k``" question leaves spare (``Unrolled._spare_at_most``): with the
tools every finishing history calls given, at most ``k`` minus their number of steps are
not a first call of one of them.

Stated, the count lets Z3 show quickly that soft forces which repeat calls leave no short
enough history, where unstated it searched the orders of the needed calls. (That it never
turns a history into none is a law: ``test_check_unrolled_laws``.)"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ruleengine import ConditionalRequirement, Requirement
from ruleengine.check.explicit import reaches
from ruleengine.check.landmarks import least_steps
from ruleengine.check.seek import Estimates
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System
from ruleengine.check.unrolled import GaveUp, Unrolled
from ruleengine.ir import FINAL_ANSWER


def _unrolled(
    tools: list[str], requirements: list[Requirement]
) -> tuple[System, Verdicts, Unrolled]:
    system = System([*tools, FINAL_ANSWER], requirements, mode="strict")
    v = Verdicts(system, Encoding(system), None, None, None, 40, witness_states=64)
    v.begin()
    return system, v, Unrolled(v)


def _least_is(
    steps: int,
    system: System,
    v: Verdicts,
    unrolled: Unrolled,
    calls: Collection[str] | Mapping[str, int],
) -> None:
    """No history of fewer than ``steps`` steps lets the run stop, shown within 1,000,000
    resource units (0.2 "seconds"), and one of ``steps`` does, replayed."""
    try:
        none = unrolled.reaches(v.pass_.can_stop, steps - 1, within=True, calls=calls, seconds=0.2)
    except GaveUp:  # pragma: no cover - the failure these tests are for
        raise AssertionError("no answer within 1,000,000 resource units") from None
    assert none is None
    found = unrolled.reaches(v.pass_.can_stop, steps, within=True, calls=calls)
    assert found is not None and len(found) == steps
    assert reaches(system, found, FINAL_ANSWER)


def test_the_calls_soft_forces_repeat_are_counted_within_a_small_budget() -> None:
    # Ten tools called once each, and `a` and `b` once each; each of those sets off `c`
    # right after, and `c` sets off `d`: every history that lets the run stop has 16 steps
    # at least, 14 of them first calls of the needed tools. Unstated, Z3 took 9.5 million
    # resource units (18 s) to show that none has 15; stated, under 300,000.
    chores = [f"n{i}" for i in range(10)]
    requirements: list[Requirement] = [
        ConditionalRequirement(t, min_invocations=1) for t in [*chores, "a", "b"]
    ]
    requirements.append(ConditionalRequirement("c", force_after=["a", "b"]))
    requirements.append(ConditionalRequirement("d", force_after=["c"]))
    system, v, unrolled = _unrolled([*chores, "a", "b", "c", "d"], requirements)
    _, needed = least_steps(system, forced=False)
    calls = needed - {FINAL_ANSWER}
    assert calls == {*chores, "a", "b", "c", "d"}
    _least_is(16, system, v, unrolled, calls)


def test_the_calls_a_counter_needs_are_counted_each() -> None:
    # Six tools called twice each, and `c` right after each call of `n0` or `n1`: every
    # history that lets the run stop has 16 steps. Given as tools, the calls bound the
    # spare steps by their number (7); given with how often each is needed
    # (``Estimates.calls``: 13 calls), the bound is 13 less, and Z3 shows that 15 steps
    # are too few in under 300,000 resource units, against 4.9 million.
    chores = [f"n{i}" for i in range(6)]
    requirements: list[Requirement] = [ConditionalRequirement(t, min_invocations=2) for t in chores]
    requirements.append(ConditionalRequirement("c", force_after=chores[:2]))
    system, v, unrolled = _unrolled([*chores, "c"], requirements)
    _, needed = least_steps(system, forced=False)
    enc = unrolled.enc
    calls = Estimates(system, FINAL_ANSWER, enc.distances).calls(system.initial, needed)
    assert calls == {**dict.fromkeys(chores, 2), "c": 1}
    _least_is(16, system, v, unrolled, calls)
