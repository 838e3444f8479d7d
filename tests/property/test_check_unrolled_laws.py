"""Bounded model checking (``check/unrolled.py``) answers what the explicit engine finds.

On random policies the explicit engine checks whole: for every tool, every requirement and
the finish, the unrolled steps have a history of exactly ``k`` steps into the states that
show it first at ``k`` = the explicit engine's shortest trace's length and at no smaller
``k``, none at all when the explicit engine never meets it; every history returned
replays through the runtime to such a state; a history of at most ``k`` steps exists
exactly when the shortest is that short; the tools every finishing history calls
(``Relaxed.needed``) change no answer when given, and are no more than the steps of the
shortest one; and a set proved never reached (``Unrolled.never``) is one the explicit
engine never meets. Each with and without every pair's views held
(``Projections.every_pair``), which must change no answer; and a set those views alone
exclude (``Unrolled.outside``) is one the explicit engine never meets. And the symbolic
engine's focused questions, asked of the unrolled steps before the whole reachable set,
answer as the explicit engine does.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies, symbolic_system

from ruleengine.check import symbolic, symbolic_layers
from ruleengine.check.analysis import Analysis
from ruleengine.check.explicit import allows, analyse, asking_of, decide, live_at, walk
from ruleengine.check.landmarks import least_steps
from ruleengine.check.projections import Projections
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.seek import Estimates
from ruleengine.check.symbolic import Encoding, analyse_symbolic
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import Event, System
from ruleengine.check.unrolled import Unrolled
from ruleengine.ir import FINAL_ANSWER

MAX_STATES = 2000
"""States the explicit engine may take to check a drawn policy whole (else skipped)."""

DEPTH = 6
"""Steps up to which each question is asked."""


def _targets(system: System, v: Verdicts) -> dict[str, object]:
    """Each key of ``Analysis.firsts`` with the states that show it."""
    p = v.pass_
    out: dict[str, object] = {"finish": p.can_stop}
    out.update({f"tool:{t}": p.callable[t] for t in system.callable})
    names = sorted({c.requirement.name for c in system.components})
    out.update({f"live:{name}": v._live_at(name) for name in names})
    return out


def _shows(system: System, key: str, path: tuple[Event, ...], exact: Analysis) -> bool:
    """Whether ``path`` replays to a state that shows ``key`` to the runtime."""
    state = walk(system, path)
    if state is None:
        return False
    outcomes = [decide(system, records) for records, _ in system.variants(state)]
    if key == "finish":
        return any(allows(o, FINAL_ANSWER) for o in outcomes)
    if key.startswith("tool:"):
        return any(allows(o, key[5:]) for o in outcomes)
    # A requirement: the history ends in its live states (``Unrolled`` checks that), the
    # explicit engine's (the compositional laws); here, that the engine finds it no later.
    return key in exact.firsts and len(exact.firsts[key]) <= len(path)


def _setup(
    case: PolicyCase, held: bool = False
) -> tuple[System, Analysis, Encoding, Verdicts, Unrolled]:
    """The case's system, the explicit engine's whole analysis (else skipped), and the
    unrolled steps of its encoding (``held``: holding every pair's views)."""
    system = symbolic_system(case)
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    enc = Encoding(system)
    v = Verdicts(system, enc, None, None, None, case.max_iterations - 1, witness_states=64)
    v.begin()
    sets = []
    if held:
        projections = Projections(system, enc)
        sets = [projections.reached, *projections.every_pair()]
    return system, exact, enc, v, Unrolled(v, held=sets)


@given(
    case=policies(priority=False, max_iterations=(1, 8)),
    reorder=st.booleans(),
    held=st.booleans(),
)
def test_the_shortest_history_is_the_explicit_engines(
    case: PolicyCase, reorder: bool, held: bool
) -> None:
    system, exact, enc, v, unrolled = _setup(case, held)
    for key, target in _targets(system, v).items():
        first = exact.firsts.get(key)
        shortest = None if first is None else len(first)
        for k in range(DEPTH + 1):
            if reorder:
                enc.bdd.reorder()  # the translation's memos must survive it
            found = unrolled.reaches(target, k)
            if shortest is None or k < shortest:
                assert found is None, (key, k, found)
            elif k == shortest:
                assert found is not None and len(found) == k, (key, k)
                assert _shows(system, key, found, exact)
            within = unrolled.reaches(target, k, within=True)
            assert (within is not None) == (shortest is not None and shortest <= k), (key, k)
            if within is not None:
                assert len(within) <= k
                assert _shows(system, key, within, exact)


@given(
    case=policies(priority=False, max_iterations=(1, 8)),
    followed=st.booleans(),
    counted=st.booleans(),
)
def test_the_tools_every_finish_calls_bound_it_and_prune_nothing(
    case: PolicyCase, followed: bool, counted: bool
) -> None:
    # ``followed``: with the tools a soft force calls right after a needed one too (what
    # the budget's questions give, ``least_steps``); ``counted``: each as often as a
    # component needs it called (``Estimates.calls``). Given, they bound the steps that
    # are none of those first calls (``Unrolled._spare_at_most``): a wrong count would
    # turn a history into none.
    system, exact, enc, v, unrolled = _setup(case)
    if followed:
        needed = least_steps(system, forced=False)[1] - {FINAL_ANSWER}
    else:
        needed = Relaxed(system.components, system.tools).needed()
    calls: dict[str, int] | frozenset[str] = needed
    first = exact.firsts.get("finish")
    if counted:
        each = Estimates(system, FINAL_ANSWER, enc.distances).calls(system.initial, needed)
        if each is None:  # some component never lets the run stop
            assert first is None
        else:
            calls = each
            if first is not None:
                assert sum(each.values()) <= len(first)
                assert all(sum(t == tool for t, _ in first) >= n for tool, n in each.items())
    if first is not None:
        assert len(needed) <= len(first)
        assert {t for t, _ in first} >= needed
    for k in range(DEPTH + 1):
        plain = unrolled.reaches(v.pass_.can_stop, k)
        pruned = unrolled.reaches(v.pass_.can_stop, k, calls=calls)
        assert (plain is None) == (pruned is None), k
        within = unrolled.reaches(v.pass_.can_stop, k, within=True, calls=calls)
        assert (within is not None) == (first is not None and len(first) <= k), k


@given(case=policies(priority=False, max_iterations=(1, 8)), held=st.booleans())
def test_what_it_proves_never_the_engine_never_meets(case: PolicyCase, held: bool) -> None:
    system, exact, _, v, unrolled = _setup(case, held)
    proved = 0
    for key, target in _targets(system, v).items():
        if unrolled.never(target, 600.0):
            assert key not in exact.firsts, key
            proved += 1
    # Where the engine never meets one, the proof is found on policies this small.
    assert proved == sum(1 for key in _targets(system, v) if key not in exact.firsts)


@given(case=policies(priority=False, max_iterations=(1, 8)))
def test_what_the_pairs_exclude_the_engine_never_meets(case: PolicyCase) -> None:
    system, exact, enc, v, unrolled = _setup(case, held=True)
    for key, target in _targets(system, v).items():
        if unrolled.outside(target):
            assert key not in exact.firsts, key
    # Every state the engine meets on its shortest histories is inside the pairs.
    for path in exact.firsts.values():
        state = walk(system, path)
        assert state is not None
        cube = enc.bdd.true
        for c, view in zip(system.components, state, strict=True):
            cube &= enc.cube(enc.bits[id(c)], view)
        assert not unrolled.outside(cube), path


@given(case=policies(priority=False))
def test_focused_questions_asked_of_z3_past_the_early_layers_agree_with_the_engine(
    case: PolicyCase,
) -> None:
    # The early layers stop at once (as if grown too large), the system counts as large
    # and the directed search finds nothing: whether a tool is ever allowed, a requirement
    # ever live, is first asked of the unrolled steps (``_Symbolic._unrolled_into``), then
    # of the whole reachable set.
    system = symbolic_system(case)
    exact = analyse(system, max_states=MAX_STATES, live=True)
    assume(exact.complete)
    enc = Encoding(system)
    asking = asking_of(system)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(symbolic_layers, "EARLY_NODES", 0)
        patch.setattr(symbolic, "INTO_COMPONENTS", 0)
        patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
        for tool in system.callable:
            one = analyse_symbolic(system, encoding=enc, focus=f"tool:{tool}")
            assert one.complete
            assert (tool in one.allowed_tools) == (tool in exact.allowed_tools), tool
            # Partial: answered early, by a history (which must replay) or by the
            # projections' proof of a never (which the agreement above checks).
            if one.partial and tool in one.allowed_tools:
                assert one.example is not None
                assert _shows(system, f"tool:{tool}", one.example, exact), tool
        for name in sorted({c.requirement.name for c in system.components}):
            one = analyse_symbolic(system, encoding=enc, focus=f"live:{name}")
            assert one.complete
            assert (name in one.live) == (name in exact.live), name
            if one.partial and name in one.live:
                assert one.example is not None
                end = walk(system, one.example)
                assert end is not None
                assert any(
                    name in live_at(system, records, decide(system, records), {name}, asking)
                    for records, _ in system.variants(end)
                ), name
