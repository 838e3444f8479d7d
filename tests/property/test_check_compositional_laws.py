"""The compositional analysis (``check/compositional.py``) decides only what holds.

It decides verdicts one by one where the reachable set is out of reach: "never"s by
projections of the relaxed product, "sometimes"s by real histories, findings' witnesses by
the probe and by breadth-first layers. Laws, on random policies the explicit engine checks
whole, with the probe cut to a few states so that every part of it is exercised: (1) every
verdict it says it decided is the explicit engine's, witnesses included (the
lexicographically smallest shortest trace); (2) a complete compositional analysis is the
explicit one, verdict for verdict; (3) the projections never rule out a reachable state;
(4) every history it gives as an example replays to what it claims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

from hypothesis import assume, given
from hypothesis import strategies as st
from policy_strategies import (
    PolicyCase,
    policies,
    priority_policies,
    priority_system,
    symbolic_system,
)

import ruleengine.check.run as check_run
from ruleengine.check import compositional, symbolic
from ruleengine.check.analysis import Analysis, Witness, settled
from ruleengine.check.compositional import analyse_compositional
from ruleengine.check.explicit import analyse, callable_at, reaches, walk
from ruleengine.check.projections import Projections
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import State, System
from ruleengine.ir import FINAL_ANSWER

MAX_STATES = 2000
"""States the explicit engine may take to check a drawn policy whole (else skipped)."""


_either_mode = st.one_of(
    policies(priority=False), st.booleans().flatmap(lambda g: priority_policies(guards=g))
)
"""Random policies in strict mode, and in priority mode with or without cycle guards."""


def _system(case: PolicyCase) -> System:
    """``case``'s system, in its own mode."""
    return priority_system(case) if case.mode == "priority" else symbolic_system(case)


def _exact(system: System) -> Analysis:
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    return exact


def _trace(w: Witness | None) -> tuple[object, ...] | None:
    return None if w is None else w.trace


def _compositional(case: PolicyCase, system: System, probe: int) -> Analysis:
    return analyse_compositional(
        system, Encoding(system), budget=case.max_iterations - 1, probe_states=probe
    )


@given(case=policies(priority=False), probe=st.integers(1, 12), layers=st.booleans())
def test_what_it_decides_is_what_the_engine_finds(
    case: PolicyCase, probe: int, layers: bool
) -> None:
    # Without the first layers, the findings are left to the proofs, and those within a
    # step counter's reach to bounded model checking of that many steps (``_counted``).
    system = symbolic_system(case)
    exact = _exact(system)
    with mock.patch.object(compositional, "LAYERS", compositional.LAYERS if layers else -1):
        found = _compositional(case, system, probe)
    _agrees(found, exact, system, case.max_iterations - 1)


@given(case=policies(priority=False), probe=st.integers(1, 12))
def test_what_it_gives_as_it_goes_is_decided_and_only_grows(case: PolicyCase, probe: int) -> None:
    # Each analysis given to ``progress`` (one after every verdict more, here) is what the
    # analysis would return were it cut short there: what it says it decided is the
    # engine's, later ones decide at least as much, and the end at least as much again.
    system = symbolic_system(case)
    exact = _exact(system)
    given_: list[Analysis] = []
    with mock.patch.object(compositional, "PROGRESS_SECONDS", 0.0):
        found = analyse_compositional(
            system,
            Encoding(system),
            budget=case.max_iterations - 1,
            probe_states=probe,
            progress=given_.append,
        )
    decided: set[str] = set()
    for analysis in [*given_, found]:
        _agrees(analysis, exact, system, case.max_iterations - 1)
        if analysis.decided is None:  # the probe met every state: all is decided at once
            assert analysis is found and found.complete and not given_
            continue
        assert analysis.decided >= decided
        decided = analysis.decided
        assert analysis.complete == (not analysis.undecided)


@given(
    case=st.booleans().flatmap(lambda g: priority_policies(guards=g)),
    probe=st.integers(1, 12),
    layers=st.booleans(),
)
def test_in_priority_mode_what_it_decides_is_what_the_engine_finds(
    case: PolicyCase, probe: int, layers: bool
) -> None:
    # Only the exact parts decide there (``_Exact``): no component alone bounds the runs.
    # Without the first layers, the findings are left to the layers backward.
    system = priority_system(case)
    exact = _exact(system)
    with mock.patch.object(compositional, "LAYERS", compositional.LAYERS if layers else -1):
        found = _compositional(case, system, probe)
    _agrees(found, exact, system, case.max_iterations - 1)


@given(case=st.booleans().flatmap(lambda g: priority_policies(guards=g)), probe=st.integers(1, 12))
def test_in_priority_mode_its_examples_replay(case: PolicyCase, probe: int) -> None:
    system = priority_system(case)
    _replays(_compositional(case, system, probe), system)


@given(case=_either_mode, probe=st.integers(1, 12), data=st.data())
def test_asked_one_question_what_it_answers_is_the_engines_answer(
    case: PolicyCase, probe: int, data: st.DataObject
) -> None:
    # Asked about one verdict (``until``), it may stop once that one is answered: the
    # verdict, and all else it says it decided, are the explicit engine's. Asked whether
    # the run may stop within N steps, a history it shows is that short and replays, and
    # "none within N" holds.
    system = _system(case)
    exact = _exact(system)
    budget = case.max_iterations - 1
    steps = data.draw(st.integers(0, budget + 2), label="steps")
    keys = [*compositional._keys(system), f"finish:{steps}"]
    key = data.draw(st.sampled_from(keys), label="until")
    within = steps if key.startswith("finish:") else budget
    found = analyse_compositional(
        system, Encoding(system), budget=within, probe_states=probe, until=key
    )
    _agrees(found, exact, system, within)
    _replays(found, system)
    if not compositional.answered(found, key):
        return
    if key.startswith("finish:"):
        known = compositional.shortest_finish(found)
        least = exact.finish_depth
        if known is not None and known <= steps:
            assert least is not None and least <= known
        else:
            assert least is None or least > steps
    else:
        assert settled(found, key)


def _agrees(found: Analysis, exact: Analysis, system: System, budget: int) -> None:
    """What ``found`` says it decided is what the explicit engine found (``exact``)."""
    if settled(found, "deadlock"):
        assert _trace(found.deadlock) == _trace(exact.deadlock)
    for tool in system.tools:
        if settled(found, f"forced-conflict:{tool}"):
            assert _trace(found.forced_conflicts.get(tool)) == _trace(
                exact.forced_conflicts.get(tool)
            )
    if settled(found, "forced-tie"):
        assert _trace(found.tie) == _trace(exact.tie)
    if settled(found, "no-finish"):
        assert _trace(found.no_finish) == _trace(exact.no_finish)
    if settled(found, "budget"):
        within = exact.finish_depth is not None and exact.finish_depth <= budget
        if found.finishes_within is not None:
            assert within and found.finishes_within <= budget
        else:
            assert found.finish_depth == exact.finish_depth
    for tool in system.callable:
        if settled(found, f"tool:{tool}"):
            assert (tool in found.allowed_tools) == (tool in exact.allowed_tools)
    for req in system.requirements:
        if settled(found, f"live:{req.name}"):
            assert (req.name in found.live) == (req.name in exact.live)
    # Whatever it decided or not, what it found allowed or live is, and final_answer is
    # allowed no earlier than it says.
    if exact.finish_depth is not None:
        assert found.finish_after < exact.finish_depth
    if found.finish_shown is not None:  # a history that lets the run stop: no fewer needed
        assert exact.finish_depth is not None and exact.finish_depth <= found.finish_shown
    assert found.allowed_tools - {FINAL_ANSWER} <= exact.allowed_tools
    assert found.live <= exact.live


@given(case=policies(priority=False), probe=st.integers(1, 12))
def test_its_examples_replay(case: PolicyCase, probe: int) -> None:
    system = symbolic_system(case)
    _replays(_compositional(case, system, probe), system)


def _replays(found: Analysis, system: System) -> None:
    """Every history ``found`` gives as an example replays to what it claims."""
    for key, trace in found.firsts.items():
        assert walk(system, trace) is not None, key
        if key.startswith("tool:"):
            assert reaches(system, trace, key[5:]), key
        elif key == "finish":
            assert reaches(system, trace, FINAL_ANSWER)


@given(case=policies(priority=False), without_dead=st.booleans())
def test_the_projections_keep_every_reachable_state(case: PolicyCase, without_dead: bool) -> None:
    system = symbolic_system(case)
    enc = Encoding(system)
    # Without the steps of the tools no reachable state allows (as the analysis rebuilds
    # them once it has shown some tools dead), they still keep every reachable state.
    dead = frozenset()
    if without_dead:
        dead = frozenset(system.callable) - _exact(system).allowed_tools
    projections = Projections(system, enc, never=dead)
    reachable = _reachable(system)
    for state in reachable:
        assert enc.holds_at(projections.reached, system.components, state)
        # A refinement made for one state's cube never drops another reachable state.
        cube = enc.bdd.true
        for comp, view in zip(system.components, state, strict=True):
            cube &= enc.cube(enc.bits[id(comp)], view)
        assert not projections.never(cube)


@given(case=policies(priority=False))
def test_the_pairs_every_pair_leaves_out_rule_out_nothing_more(case: PolicyCase) -> None:
    # ``every_pair`` leaves out the pairs that reach every pair of their components' own
    # views: with ``reached``, the pairs it keeps rule out what all of them do.
    system = symbolic_system(case)
    enc = Encoding(system)
    projections = Projections(system, enc)
    kept = [i for i, c in enumerate(system.components) if not c.requirement.yielding]
    every = projections.reached
    for i in kept:
        for j in kept:
            if i < j and projections.interact(i, j):
                found = projections.pair(i, j)
                if found is not None:
                    every &= found
    given_pairs = projections.reached
    for found in projections.every_pair():
        given_pairs &= found
    assert given_pairs == every


@given(case=policies(priority=False), data=st.data())
def test_projections_rebuilt_from_earlier_ones_are_those_built_afresh(
    case: PolicyCase, data: st.DataObject
) -> None:
    # Rebuilt without more tools' steps (as ``without_dead`` does), the projections take
    # over from the earlier ones what those tools do not move: the same views, pairs and
    # refinements as the ones built from nothing.
    system = symbolic_system(case)
    enc = Encoding(system)
    tools = sorted(system.callable)
    first = frozenset(data.draw(st.lists(st.sampled_from(tools), unique=True), "first"))
    more = frozenset(data.draw(st.lists(st.sampled_from(tools), unique=True), "more"))
    earlier = Projections(system, enc, never=first)
    earlier.every_pair()
    for state in sorted(_reachable(system))[:4]:  # refinements, as questions make them
        cube = enc.bdd.true
        for comp, view in zip(system.components, state, strict=True):
            cube &= enc.cube(enc.bits[id(comp)], view)
        earlier.never(~cube)
    rebuilt = Projections(system, enc, never=first | more, previous=earlier)
    fresh = Projections(system, enc, never=first | more)
    assert rebuilt.views == fresh.views
    assert rebuilt.reached == fresh.reached
    assert rebuilt.every_pair() == fresh.every_pair()
    for key, seen in rebuilt._pair_seen.items():
        assert seen == fresh._pair_views(key), key
    for key, found in rebuilt._added.items():
        assert found == fresh.pair(*key), key


def _reachable(system: System) -> set[State]:
    """Every reachable state (each step one a decided pass allows)."""
    seen = {system.initial}
    todo = [system.initial]
    while todo:
        state = todo.pop()
        assume(len(seen) < MAX_STATES)
        for tool in sorted(callable_at(system, state)):
            for status in ("ok", "error", "denied"):
                after = system.successor(state, (tool, status))
                if after not in seen:
                    seen.add(after)
                    todo.append(after)
    return seen


@given(case=policies(priority=False))
def test_a_complete_analysis_is_the_engines(case: PolicyCase) -> None:
    system = symbolic_system(case)
    _complete_agrees(_compositional(case, system, 1), _exact(system))


@given(case=st.booleans().flatmap(lambda g: priority_policies(guards=g)))
def test_in_priority_mode_a_complete_analysis_is_the_engines(case: PolicyCase) -> None:
    system = priority_system(case)
    _complete_agrees(_compositional(case, system, 1), _exact(system))


def _complete_agrees(found: Analysis, exact: Analysis) -> None:
    """A complete ``found`` is ``exact``, verdict for verdict."""
    if not found.complete:
        return
    assert _trace(found.deadlock) == _trace(exact.deadlock)
    assert {t: w.trace for t, w in found.forced_conflicts.items()} == {
        t: w.trace for t, w in exact.forced_conflicts.items()
    }
    assert _trace(found.tie) == _trace(exact.tie)
    assert _trace(found.no_finish) == _trace(exact.no_finish)
    assert found.allowed_tools - {FINAL_ANSWER} == exact.allowed_tools - {FINAL_ANSWER}
    assert found.live == exact.live


def _opened_late(
    real: Callable[..., Analysis],
) -> Callable[..., Analysis]:
    """``analyse_symbolic`` as a core question meets it on a loaded machine: each question's
    first try runs out of time (the one before the verdicts one by one), the next are
    ``real``'s."""
    asked: set[tuple[int, str | None]] = set()

    def late(sub: System, **kwargs: Any) -> Analysis:
        key = (id(sub), kwargs.get("focus"))
        if key in asked:
            return real(sub, **kwargs)
        asked.add(key)
        return Analysis(complete=False, reason="the time limit ran out")

    return late


@given(case=_either_mode, probe=st.integers(1, 12), data=st.data())
def test_a_core_question_the_verdicts_one_by_one_answer_is_the_engines_answer(
    case: PolicyCase, probe: int, data: st.DataObject
) -> None:
    # A question whether a tool is ever allowed, a requirement ever live, or the run may
    # stop within N steps, of a subsystem, that the symbolic engine leaves open goes to the
    # verdicts one by one (with a short probe, so that they decide by their own means):
    # what they answer is the explicit engine's answer on that subsystem.
    system = _system(case)
    names = sorted(r.name for r in system.requirements)
    assume(names)
    kept = data.draw(st.lists(st.sampled_from(names), unique=True, min_size=1), label="kept")
    sub = system.subsystem(sorted(kept))
    exact = _exact(sub)
    run = check_run._engine(
        system,
        "auto",
        max_states=None,
        clock=check_run._Clock(None),
        budget=case.max_iterations - 1,
    )
    assert isinstance(run, check_run._SymbolicEngine)
    steps = data.draw(st.integers(0, case.max_iterations + 1), label="steps")
    questions = [
        *(f"tool:{t}" for t in sub.callable),
        *(f"live:{n}" for n in sorted(kept)),
        f"finish:{steps}",
    ]
    with (
        mock.patch.object(symbolic, "analyse_symbolic", _opened_late(symbolic.analyse_symbolic)),
        mock.patch.object(compositional, "PROBE_STATES", probe),
    ):
        for focus in questions:
            answer = run(sub, focus)
            kind, name = focus.split(":", 1)
            assert answer.complete or (kind == "finish" and answer.depth_done >= steps), focus
            if kind == "tool":
                assert (name in answer.allowed_tools) == (name in exact.allowed_tools), focus
            elif kind == "live":
                assert (name in answer.live) == (name in exact.live), focus
            else:  # a stop within that many steps or not, as the budget's core asks it
                shown = [answer.finishes_within, answer.finish_depth]
                assert any(n is not None and n <= steps for n in shown) == (
                    exact.finish_depth is not None and exact.finish_depth <= steps
                ), focus
            if answer.example is not None:  # its history replays (to the tool allowed)
                assert walk(sub, answer.example) is not None, focus
                if kind == "tool":
                    assert reaches(sub, answer.example, name), focus
                if kind == "finish":
                    assert len(answer.example) <= steps
                    assert reaches(sub, answer.example, FINAL_ANSWER), focus
