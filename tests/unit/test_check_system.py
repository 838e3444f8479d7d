"""``check/system.py``: a system's steps come from each component's moving steps
(``Component.moving``), and a subsystem reuses its parent's tables."""

from __future__ import annotations

import pytest

from ruleengine.check.system import System
from ruleengine.errors import PolicyError
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.requirements import CycleGuard
from ruleengine.state import STATUSES

TOOLS = ["a", "b", "c", "d"]
REQS = [
    C("a", max_invocations=2, name="cap-a"),
    C("b", only_after=["a"], name="b-after-a"),
    C("c", min_invocations=1, only_success_invocations=False, name="need-c"),
    C("d", consecutive_allowed=False, name="no-twice-d"),
    CycleGuard(),
]


def test_a_components_moving_steps_are_exactly_those_that_change_a_view() -> None:
    system = System(TOOLS, REQS)
    for comp in system.components:
        expected = [
            ((tool, status), comp.classes[tool] * 3 + s)
            for tool in system.callable
            for s, status in enumerate(STATUSES)
            if any(comp.move(view, tool, status) != view for view in range(len(comp.views)))
        ]
        assert list(comp.moving) == expected


def test_every_step_moves_the_components_its_tables_move() -> None:
    # Against the definition: a step applies, in component order, each table that changes
    # some view; a state's successor is the state after every component has moved.
    system = System(TOOLS, REQS)
    states = {system.initial}
    for _ in range(3):
        states |= {
            system.successor(state, (tool, status))
            for state in states
            for tool in system.callable
            for status in STATUSES
        }
    for state in states:
        for tool in system.callable:
            for status in STATUSES:
                expected = tuple(
                    comp.move(view, tool, status)
                    for comp, view in zip(system.components, state, strict=True)
                )
                assert system.successor(state, (tool, status)) == expected


def test_a_subsystem_keeps_the_named_requirements_with_the_same_tables() -> None:
    system = System(TOOLS, REQS)
    sub = system.subsystem(["need-c", "cap-a"])
    assert [c.requirement.name for c in sub.components] == ["cap-a", "need-c"]
    assert all(any(c is p for p in system.components) for c in sub.components)
    assert sub.successor(sub.initial, ("a", "ok")) == (1, 0)
    assert sub.successor(sub.initial, ("c", "error")) == (0, 1)
    assert sub.successor(sub.initial, ("d", "ok")) == sub.initial  # nothing kept moves


def test_components_tabulated_over_other_tools_are_refused_by_name() -> None:
    other = System(["a", "x"], [C("x", max_invocations=1, name="cap-x")])
    with pytest.raises(PolicyError, match=r"`cap-x`.*other tools.*`x`"):
        System(TOOLS, [], components=other.components)
