"""The directed search of ``check/seek.py`` on random policies: whatever it returns replays to
its goal (within its step budget), the explicit engine agrees the goal is reachable, and with
a limit past every reachable state it finds whatever the explicit engine reaches
(tests/unit/test_check_seek.py has the unit tests).

Only strict-mode policies the symbolic engine takes are drawn: the engine asks ``seek`` about
those alone, and its relaxed distances are lower bounds only there.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from hypothesis import assume, given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies

from ruleengine import FINAL_ANSWER
from ruleengine.check.analysis import Analysis
from ruleengine.check.bounds import Distances, distances
from ruleengine.check.explicit import analyse, decide, walk
from ruleengine.check.seek import seek
from ruleengine.check.symbolic import supports
from ruleengine.check.system import Component, Event, System
from ruleengine.passes import Pass

LIMIT = 64
"""States ``seek`` decides per question (the engine's ``SEEK_STATES`` is larger)."""

MAX_STATES = 2000
"""States the explicit engine explores for the reference answer."""


def _strict_system(case: PolicyCase) -> System:
    """The case's system, when the symbolic engine takes it (else the example is skipped)."""
    note(case.source())
    assume(case.mode == "strict")
    system = System(list(case.tools), case.requirements())
    assume(supports(system) is None)
    return system


def _bounds(system: System) -> Callable[[Component, str], Distances]:
    """``bounds.distances`` over ``system``'s tools, memoised as the engine memoises it."""

    @cache
    def bounds(comp: Component, goal: str) -> Distances:
        return distances(comp, system.tools, goal)

    return bounds


def _reaches(system: System, history: tuple[Event, ...], goal: str) -> bool:
    """Whether ``history`` replays (each step allowed when taken) to a state where ``goal``
    is allowed under some values of the opaque checks (``final_answer``: the run may stop)."""
    state = walk(system, history)
    if state is None:
        return False
    for records, _ in system.variants(state):
        outcome = decide(system, records)
        if isinstance(outcome, Pass) and (
            outcome.can_stop if goal == FINAL_ANSWER else goal in outcome.allowed
        ):
            return True
    return False


def _reference(system: System) -> Analysis:
    return analyse(system, max_states=MAX_STATES, live=False)


@given(case=policies(), within=st.none() | st.integers(0, 4))
def test_every_history_found_replays_to_its_goal(case: PolicyCase, within: int | None) -> None:
    system = _strict_system(case)
    bounds = _bounds(system)
    reference: Analysis | None = None
    for goal in system.tools:
        history = seek(system, goal, bounds, limit=LIMIT, within=within)
        if history is None:
            continue
        note(f"{goal}: {history}")
        assert _reaches(system, history, goal), goal
        if within is not None:
            assert len(history) <= within, goal
        reference = reference or _reference(system)
        if goal == FINAL_ANSWER:
            if not reference.complete and reference.depth_done < len(history):
                continue  # the reference did not get that deep
            # A stop after len(history) steps: the first one is no later.
            assert reference.finish_depth is not None
            assert reference.finish_depth <= len(history)
        elif reference.complete:
            assert goal in reference.allowed_tools


@given(case=policies())
def test_with_room_for_every_state_seek_finds_what_the_explicit_engine_reaches(
    case: PolicyCase,
) -> None:
    system = _strict_system(case)
    reference = _reference(system)
    assume(reference.complete)
    bounds = _bounds(system)
    # Each search decides each reachable state at most once, and there are two of them.
    limit = 2 * reference.states + 2
    for goal in system.tools:
        history = seek(system, goal, bounds, limit=limit)
        if goal == FINAL_ANSWER:
            reachable = reference.finish_depth is not None
        else:
            reachable = goal in reference.allowed_tools
        assert (history is not None) == reachable, goal
