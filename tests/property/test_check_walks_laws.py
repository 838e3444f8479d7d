"""The random walks of ``check/walks.py`` on random policies (both modes, opaque checks, cycle
guards): each requirement they call live is live at the end of its history, which replays
step by step; each tool they call allowed is allowed there; the explicit engine, exploring
every reachable state, agrees; and the same seed gives the same answer."""

from __future__ import annotations

from hypothesis import given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies

from ruleengine.check.explicit import analyse, asking_of, callable_at, decide, live_at, walk
from ruleengine.check.system import System
from ruleengine.check.walks import live_on_walks

MAX_STATES = 3000


def _never() -> bool:
    return False


@given(case=policies(), seed=st.integers(0, 3), steps=st.integers(1, 8))
def test_whatever_the_walks_show_replays_and_the_explicit_engine_agrees(
    case: PolicyCase, seed: int, steps: int
) -> None:
    note(case.source())
    system = System(list(case.tools), case.requirements(), mode=case.mode)
    names = {c.requirement.name for c in system.components}
    found = live_on_walks(system, names, _never, seed=seed, steps=steps, round_states=16)
    asking = asking_of(system)
    for name, history in found.live.items():
        assert len(history) < steps, name
        state = walk(system, history)
        assert state is not None, (name, history)
        assert any(
            name in live_at(system, records, decide(system, records), {name}, asking)
            for records, _ in system.variants(state)
        ), (name, history)
    for tool, history in found.allowed.items():
        state = walk(system, history)
        assert state is not None and tool in callable_at(system, state), (tool, history)
    reference = analyse(system, max_states=MAX_STATES)
    if reference.complete:
        assert set(found.live) <= reference.live
        assert set(found.allowed) <= reference.allowed_tools
    again = live_on_walks(system, names, _never, seed=seed, steps=steps, round_states=16)
    assert again == found
