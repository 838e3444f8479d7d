"""Explicit exploration for the laws about what every finishing history calls."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import assume

from ruleengine import FINAL_ANSWER
from ruleengine.check.explicit import allows, callable_at, decide
from ruleengine.check.system import System
from ruleengine.state import STATUSES


def assert_never_stops(
    system: System, skipped: Callable[[str, str], bool], max_states: int, why: str
) -> None:
    """No state reachable by the steps ``skipped`` leaves out (a tool and a status) lets
    the run stop, under any values of the opaque checks; a case past ``max_states`` states
    is skipped (hypothesis ``assume``). ``why`` names the question in a failure."""
    seen = {system.initial}
    todo = [system.initial]
    while todo:
        state = todo.pop()
        assume(len(seen) < max_states)
        outcomes = [decide(system, records) for records, _ in system.variants(state)]
        assert not any(allows(o, FINAL_ANSWER) for o in outcomes), why
        for tool in sorted(callable_at(system, state)):
            for status in STATUSES:
                if skipped(tool, status):
                    continue
                after = system.successor(state, (tool, status))
                if after not in seen:
                    seen.add(after)
                    todo.append(after)
