"""The histories known to finish (``histories.Finishing``), tried from other states.

``Finishing`` remembers the states a replay passed through on its way to a stop, and the
steps open at each state it replayed through; a replay that meets a state known to finish
has arrived. Laws, on random policies (opaque checks included) and random sequences of
questions, whatever was asked before: (1) remembering loses nothing: a path that replays
from scratch to a stop (``histories._replays``) replays here too; (2) what it says
arrives, and a state it says can finish, can: a breadth-first search of the real steps
from it reaches a state that may stop.
"""

from __future__ import annotations

from collections import deque

from hypothesis import given
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies, symbolic_system

from ruleengine.check.explicit import allows, callable_at, decide
from ruleengine.check.histories import Finishing, _replays
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.state import STATUSES

SEARCHED = 3000
"""States the breadth-first search of law (2) may take (else it proves nothing)."""


def _events(system: System) -> list[Event]:
    return [(tool, status) for tool in system.callable for status in STATUSES]


def _state(system: System, picks: list[int]) -> State:
    """The state a sequence of steps leads to, allowed or not (replays decide any state)."""
    events = _events(system)
    state = system.initial
    for pick in picks:
        state = system.successor(state, events[pick % len(events)])
    return state


def _finishes(system: System, state: State) -> bool | None:
    """Whether some real history from ``state`` lets the run stop; None past ``SEARCHED``."""
    seen = {state}
    todo = deque([state])
    while todo:
        here = todo.popleft()
        if any(allows(decide(system, r), FINAL_ANSWER) for r, _ in system.variants(here)):
            return True
        for after in system.steps_from(here, callable_at(system, here)):
            if after not in seen:
                if len(seen) >= SEARCHED:
                    return None
                seen.add(after)
                todo.append(after)
    return False


_picks = st.lists(st.integers(0, 10_000), max_size=6)
_questions = st.lists(st.tuples(_picks, _picks), min_size=1, max_size=12)


@given(case=policies(priority=False), questions=_questions)
def test_a_replay_loses_nothing_and_claims_only_what_holds(
    case: PolicyCase, questions: list[tuple[list[int], list[int]]]
) -> None:
    system = symbolic_system(case)
    finishing = Finishing(system, Encoding(system))
    events = _events(system)
    for start, path in questions:
        state = _state(system, start)
        steps = tuple(events[pick % len(events)] for pick in path)
        arrived = finishing._replays(state, steps)
        if _replays(system, state, steps):
            assert arrived
        if arrived:
            assert _finishes(system, state) is not False
            assert state in finishing.finishing


@given(case=policies(priority=False), starts=st.lists(_picks, min_size=1, max_size=8))
def test_a_state_said_to_finish_finishes(case: PolicyCase, starts: list[list[int]]) -> None:
    system = symbolic_system(case)
    finishing = Finishing(system, Encoding(system))
    for start in starts:
        state = _state(system, start)
        for search in (False, True):
            if finishing.can_finish(state, search=search):
                assert _finishes(system, state) is not False
                assert state in finishing.finishing
