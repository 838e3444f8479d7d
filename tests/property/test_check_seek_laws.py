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
from policy_strategies import PolicyCase, policies, symbolic_system

from ruleengine import FINAL_ANSWER
from ruleengine.check.analysis import Analysis
from ruleengine.check.bounds import Distances, distances
from ruleengine.check.explicit import analyse, reaches
from ruleengine.check.seek import seek
from ruleengine.check.system import Component, System

LIMIT = 64
"""States ``seek`` decides per question (the engine's ``SEEK_STATES`` is larger)."""

MAX_STATES = 2000
"""States the explicit engine explores for the reference answer."""


def _bounds(system: System) -> Callable[[Component, str], Distances]:
    """``bounds.distances`` over ``system``'s tools, memoised as the engine memoises it."""

    @cache
    def bounds(comp: Component, goal: str) -> Distances:
        return distances(comp, system.tools, goal)

    return bounds


def _reference(system: System) -> Analysis:
    return analyse(system, max_states=MAX_STATES, live=False)


@given(case=policies(), within=st.none() | st.integers(0, 4))
def test_every_history_found_replays_to_its_goal(case: PolicyCase, within: int | None) -> None:
    system = symbolic_system(case)
    bounds = _bounds(system)
    reference: Analysis | None = None
    for goal in system.tools:
        history = seek(system, goal, bounds, limit=LIMIT, within=within)
        if history is None:
            continue
        note(f"{goal}: {history}")
        assert reaches(system, history, goal), goal
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
def test_with_room_for_every_state_seek_finds_what_the_explicit_enginereaches(
    case: PolicyCase,
) -> None:
    system = symbolic_system(case)
    reference = _reference(system)
    assume(reference.complete)
    bounds = _bounds(system)
    # Each search decides each reachable state at most once. The second one (every step,
    # when the helpful steps led nowhere) gets a quarter of the limit at most, so the limit
    # leaves it room for every state after the first one's: four times the states.
    limit = 4 * reference.states + 4
    for goal in system.tools:
        history = seek(system, goal, bounds, limit=limit)
        if goal == FINAL_ANSWER:
            reachable = reference.finish_depth is not None
        else:
            reachable = goal in reference.allowed_tools
        assert (history is not None) == reachable, goal
