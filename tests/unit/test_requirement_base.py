"""``Requirement`` and ``@requirement``: monitors, static checkability, binding."""

from __future__ import annotations

from collections.abc import Hashable

from ruleengine import (
    ConditionalRequirement,
    CycleGuard,
    Monitor,
    Reasoner,
    Requirement,
    Rule,
    RunState,
    requirement,
)
from ruleengine.requirements import replay
from ruleengine.rules import Item
from ruleengine.state import Status


class CountingMonitor(Monitor):
    """Deny `search` after two successful calls (a user-written monitor)."""

    def initial(self) -> int:
        return 0

    def advance(self, view: Hashable, tool: str, status: Status) -> int:
        assert isinstance(view, int)
        return min(view + (tool == "search" and status == "ok"), 2)

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> tuple[Item, ...]:
        return (Rule("search", allowed=False),) if view == 2 else ()


def test_function_requirement_without_monitor_is_not_statically_checkable() -> None:
    @requirement
    def anything(state: RunState) -> list[Item]:
        return []

    assert anything.monitor() is None
    assert not anything.statically_checkable


def test_function_requirement_with_monitor_is_checkable_and_agrees() -> None:
    monitor = CountingMonitor()

    @requirement(monitor=monitor)
    def two_searches(state: RunState) -> list[Item]:
        return list(monitor.emit(min(state.count("search"), 2)))

    assert two_searches.monitor() is monitor
    assert two_searches.statically_checkable
    trace: list[tuple[str, Status]] = [("search", "ok"), ("search", "error"), ("search", "ok")]
    state = RunState.from_trace(trace)
    assert list(two_searches.run(state)) == list(monitor.emit(replay(monitor, trace)))  # type: ignore[arg-type]
    p = Reasoner(["search", "think"], [two_searches]).decide(state)
    assert "search" not in p.allowed


def test_builtins_are_statically_checkable() -> None:
    class Search:
        name = "search"

    assert ConditionalRequirement("search").statically_checkable
    assert ConditionalRequirement(Search).statically_checkable  # a class: checkable once bound
    assert CycleGuard().statically_checkable


def test_bind_of_the_base_class_returns_the_same_object() -> None:
    class Plain(Requirement):
        def run(self, state: RunState) -> list[Item]:
            return []

    req = Plain()
    assert req.bind(["a", "b"]) is req
    assert req.name == "Plain"
