"""The unrolled steps (``check/unrolled.py``) on a policy too large to explore: random
conditionals over 50 tools, whose reachable set neither engine finishes within a minute.

What the laws cannot show on small policies: the translation of the encoding's diagrams
survives CUDD's dynamic reordering (which frees nodes a memo keyed by address would still
name); the solver stops when the deadline passed or when told to; the tools every finish
calls give a lower bound the engines could not; every pair's views at once prove
requirements never live where the projections' diagrams give up."""

from __future__ import annotations

import random
import threading
import time

import pytest
import z3

from benchmarks._policies import conditionals
from ruleengine.check.explicit import reaches
from ruleengine.check.projections import Projections
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System
from ruleengine.check.unrolled import (
    NO_LIMIT,
    UNITS_PER_SECOND,
    WATCHER,
    GaveUp,
    Unrolled,
    _bound,
    _milliseconds,
    _units,
)
from ruleengine.ir import FINAL_ANSWER


def _unrolled() -> tuple[System, Encoding, Verdicts, Unrolled]:
    policy = conditionals(50, 100, 0)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    enc = Encoding(system)
    v = Verdicts(system, enc, None, None, None, 19, witness_states=64)
    v.begin()
    return system, enc, v, Unrolled(v)


def test_translations_survive_reordering() -> None:
    system, enc, v, unrolled = _unrolled()
    assert enc.reordering  # this policy's many global views turn it on
    comps = system.components
    rng = random.Random(0)
    states = [system.initial]
    states += [tuple(rng.randrange(len(c.views)) for c in comps) for _ in range(40)]
    for group in unrolled.groups:
        unrolled._translate(group.guard, 0)  # every guard known to copy 0's memo
    enc.bdd.reorder()
    for tool in system.callable:
        where = v.some(v.pass_.callable[tool])  # new nodes, perhaps at freed addresses
        formula = unrolled._translate(where, 0)
        for state in states:
            values = enc.state_bits(comps, state)
            bits = unrolled.copies[0]
            pairs = [(bits[x], z3.BoolVal(b, unrolled.ctx)) for x, b in values.items()]
            held = z3.is_true(z3.simplify(z3.substitute(formula, *pairs)))
            assert held == enc.holds_at(where, comps, state), (tool, state)


def test_a_history_it_finds_replays() -> None:
    system, _, v, unrolled = _unrolled()
    found = unrolled.reaches(v.pass_.can_stop, 32, within=True)
    assert found is not None and len(found) <= 32
    assert reaches(system, found, FINAL_ANSWER)


def test_the_tools_every_finish_calls_bound_the_finish() -> None:
    system, _, v, unrolled = _unrolled()
    needed = Relaxed(system.components, system.tools).needed()
    assert len(needed) == 20  # more than the budget of 19 steps: the finding, proved
    for steps in (0, 5, 19):
        assert unrolled.reaches(v.pass_.can_stop, steps, calls=needed) is None


def test_a_tool_name_as_the_calls_is_refused_not_read_letter_by_letter() -> None:
    _, _, v, unrolled = _unrolled()
    with pytest.raises(TypeError, match="not the string 't1'"):
        unrolled.reaches(v.pass_.can_stop, 4, calls="t1")


def test_a_passed_deadline_gives_up() -> None:
    _, _, v, unrolled = _unrolled()
    with pytest.raises(GaveUp):
        unrolled.reaches(v.pass_.can_stop, 4, deadline=time.monotonic() - 1)
    with pytest.raises(GaveUp):
        unrolled.never(v.pass_.can_stop, 5.0, deadline=time.monotonic() - 1)
    with pytest.raises(GaveUp):
        unrolled.outside(v.pass_.can_stop, deadline=time.monotonic() - 1)


def test_every_pair_at_once_proves_what_the_diagrams_give_up_on() -> None:
    system, enc, v, _ = _unrolled()
    projections = Projections(system, enc)
    pairs = projections.every_pair()
    unrolled = Unrolled(v, held=[projections.reached, *pairs])
    false = enc.bdd.false
    names = sorted({c.requirement.name for c in system.components})
    names = [name for name in names if v._live_at(name) != false]  # no state at all: trivial
    proved = [name for name in names if unrolled.outside(v._live_at(name))]
    assert proved and len(proved) < len(names)
    # Each one proved also has no history of up to 8 steps that shows it live.
    for name in proved[:3]:
        assert unrolled.reaches(v._live_at(name), 8, within=True) is None
    # And some the diagrams of the same pairs, added as the question needs them, do not.
    assert any(projections.narrowed(v._live_at(name)) != false for name in proved)
    # Without the pairs, nothing is excluded but the empty set.
    bare = Unrolled(v)
    assert not any(bare.outside(v._live_at(name)) for name in proved)
    assert bare.outside(false)


def test_where_every_pair_meets_a_set_the_diagrams_of_those_pairs_cannot_rule_it_out() -> None:
    # What lets the one-by-one analysis skip the diagrams when Z3 answers: ``narrowed``
    # conjoins some of the pairs ``every_pair`` gives, so a state in all of them is left.
    system, enc, v, _ = _unrolled()
    projections = Projections(system, enc)
    unrolled = Unrolled(v, held=[projections.reached, *projections.every_pair()])
    names = sorted({c.requirement.name for c in system.components})
    answers = {name: unrolled.meets(v._live_at(name)) for name in names}
    assert {True, False} <= set(answers.values())  # both kinds of answer on this policy
    for name, met in answers.items():
        assert unrolled.outside(v._live_at(name)) == (met is False)
        if met:
            assert not projections.never(v._live_at(name)), name
    assert unrolled.meets(enc.bdd.false) is False


def test_every_pair_stops_when_told() -> None:
    system, enc, _, _ = _unrolled()
    projections = Projections(system, enc)
    assert projections.every_pair(lambda: True) == []
    asked: list[None] = []

    def stop() -> bool:
        asked.append(None)
        return len(asked) > 2

    some = projections.every_pair(stop)
    every = projections.every_pair()
    assert 0 < len(some) < len(every)
    assert some == every[: len(some)]  # the same pairs, in index order


def test_told_to_stop_it_gives_up() -> None:
    asked = threading.Event()

    def stop() -> bool:
        asked.set()
        return True

    _, _, v, unrolled = _unrolled()
    for _ in range(19):
        unrolled._copy()
    unrolled.interrupt = stop  # asked only by the thread that watches the solver now
    # Whether 19 steps reach a state that may stop: many seconds of search; the first
    # question (after one poll) stops it.
    with pytest.raises(GaveUp):
        unrolled.reaches(v.pass_.can_stop, 19)
    assert asked.is_set()
    assert not any(t.name == WATCHER for t in threading.enumerate())


def test_a_question_is_bounded_by_its_budget_in_units_and_by_the_deadline_on_the_clock() -> None:
    assert _units(2.0) == 2 * UNITS_PER_SECOND
    assert _units(1e308) == NO_LIMIT - 1
    assert _units(0.0) == 1
    assert _milliseconds(None) == NO_LIMIT
    with pytest.raises(GaveUp):
        _milliseconds(time.monotonic() - 1)
    assert 3_500_000 < _milliseconds(time.monotonic() + 3600) <= 3_600_000

    class Asked:
        def __init__(self) -> None:
            self.params: dict[str, int] = {}

        def set(self, key: str, value: int) -> None:
            self.params[key] = value

    solver = Asked()
    _bound(solver, 2.0, None)  # type: ignore[arg-type]
    assert solver.params == {"rlimit": 2 * UNITS_PER_SECOND, "timeout": NO_LIMIT}
    _bound(solver, None, None)  # type: ignore[arg-type]
    assert solver.params == {"rlimit": 0, "timeout": NO_LIMIT}  # none left behind
    with pytest.raises(GaveUp):
        _bound(solver, 2.0, time.monotonic() - 1)
    _, _, v, unrolled = _unrolled()
    # A question cut short leaves no limit behind for the next one, which has none.
    with pytest.raises(GaveUp):
        unrolled.reaches(v.pass_.can_stop, 19, seconds=0.001)
    assert unrolled.reaches(v.pass_.can_stop, 2) is None


def test_questions_cut_by_their_budget_are_cut_alike_on_every_run() -> None:
    # Counted in Z3's resource units, a budget cuts a question at the same point however
    # fast the machine runs: the same questions on two fresh copies of the steps give the
    # same answers, those cut short included, and the histories found after them.
    def answers() -> list[object]:
        _, _, v, unrolled = _unrolled()
        got: list[object] = []
        for tool in sorted(unrolled.system.callable)[:12]:
            where = v.some(v.pass_.allowed[tool])
            for steps in (4, 12):
                try:
                    got.append(unrolled.reaches(where, steps, within=True, seconds=0.1))
                except GaveUp:
                    got.append("cut")
        return got

    first = answers()
    assert "cut" in first and any(isinstance(a, tuple) for a in first)
    assert answers() == first


def test_a_negative_number_of_steps_is_refused() -> None:
    _, _, v, unrolled = _unrolled()
    with pytest.raises(ValueError, match="at least 0 steps, not -1"):
        unrolled.reaches(v.pass_.can_stop, -1)
