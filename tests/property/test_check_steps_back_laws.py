"""The breadth-first layers backward from a set of states (``symbolic_verdicts.StepsBack``).

Laws, on random policies in either mode that the explicit engine checks whole: (1) from
the states that may stop, the layers meet the initial state at the explicit engine's least
number of steps before ``final_answer``, and end without it where no history gets there;
(2) from the states of a finding (a deadlock, a forced conflict, a tie), they meet it at
the length of the engine's witness and give that very trace (the lexicographically
smallest shortest one), and end without it where the engine found none; (3) cut short
any number of times and run again, they end with the layers of one uninterrupted run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import assume, given, reject
from hypothesis import strategies as st
from policy_strategies import (
    PolicyCase,
    policies,
    priority_policies,
    priority_system,
    symbolic_system,
)

from ruleengine.check.analysis import Analysis, Witness
from ruleengine.check.explicit import Outcome, analyse, reaches
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_layers import _OutOfTime
from ruleengine.check.symbolic_priority import Ambiguous
from ruleengine.check.symbolic_verdicts import (
    StepsBack,
    Verdicts,
    _conflict_kind,
    _forced_on,
    _has_tie,
)
from ruleengine.check.system import System
from ruleengine.ir import FINAL_ANSWER

MAX_STATES = 2000


def _either_mode() -> st.SearchStrategy[tuple[PolicyCase, bool]]:
    strict = policies(priority=False).map(lambda case: (case, False))
    priority = st.booleans().flatmap(lambda g: priority_policies(guards=g))
    return st.one_of(strict, priority.map(lambda case: (case, True)))


def _system(drawn: tuple[PolicyCase, bool]) -> System:
    case, priority = drawn
    return priority_system(case) if priority else symbolic_system(case)


def _setup(drawn: tuple[PolicyCase, bool]) -> tuple[System, Verdicts, Analysis]:
    system = _system(drawn)
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    enc = Encoding(system)
    try:
        verdicts = Verdicts(
            system, enc, None, None, None, drawn[0].max_iterations - 1, witness_states=16
        )
        verdicts.begin()
    except Ambiguous:  # a step whose pass the runtime's choice of core decides
        reject()
    return system, verdicts, exact


def _back(verdicts: Verdicts, target: object) -> StepsBack:
    back = StepsBack(verdicts, target, verdicts.enc.views(verdicts.system.components))
    back.run()
    return back


@given(drawn=_either_mode())
def test_from_the_stops_they_meet_the_start_at_the_least_steps(
    drawn: tuple[PolicyCase, bool],
) -> None:
    system, v, exact = _setup(drawn)
    back = _back(v, v.some(v.pass_.can_stop))
    assert back.met == exact.finish_depth
    assert back.done == (exact.finish_depth is None)
    if back.met is not None:
        trace = tuple(back.trace())
        assert len(trace) == exact.finish_depth
        assert reaches(system, trace, FINAL_ANSWER)


@given(drawn=_either_mode())
def test_from_a_finding_they_give_the_engines_witness(drawn: tuple[PolicyCase, bool]) -> None:
    _, v, exact = _setup(drawn)
    p = v.pass_
    inconsistent = ~p.consistent
    forcing = inconsistent & ~p.stuck
    asked: list[tuple[object, Callable[[Outcome], bool], Witness | None]] = [
        (v.some(inconsistent & p.stuck), _conflict_kind("deadlock"), exact.deadlock),
        (v.some(p.tie), _has_tie, exact.tie),
    ]
    for tool in v.enc.tools:
        asked.append(
            (v.some(forcing & p.hard[tool]), _forced_on(tool), exact.forced_conflicts.get(tool))
        )
    for target, finding, witness in asked:
        back = _back(v, target)
        if witness is None:
            assert back.met is None and back.done
            continue
        assert back.met == len(witness.trace)
        found = v.witness_along(back.trace(), finding)
        assert found.trace == witness.trace
        assert found.depends_on_checks == witness.depends_on_checks


@given(drawn=_either_mode(), every=st.integers(1, 4))
def test_cut_short_they_end_where_one_run_does(drawn: tuple[PolicyCase, bool], every: int) -> None:
    _, v, _ = _setup(drawn)
    target = v.some(v.pass_.can_stop)
    whole = _back(v, target)
    back = StepsBack(v, target, v.enc.views(v.system.components))
    asked = itertools.count(1)
    while True:  # each run takes ``every`` preimages before it is cut
        try:
            back.run(lambda: next(asked) % (every + 1) == 0)
            break
        except _OutOfTime:
            continue
    assert back.layers == whole.layers
    assert (back.met, back.done, back.seen) == (whole.met, whole.done, whole.seen)
