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


# -- a monitor is trusted only for the run it describes ------------------------------------------


class StrictWriter(ConditionalRequirement):
    """Changes the parent's `run`: no stopping ever, and `search` denied after two."""

    def run(self, state: RunState) -> list[Item]:
        items = list(super().run(state))
        items.append(Rule("final_answer", prevent_stop=True))
        if state.count("search", only_success=False) >= 2:
            items.append(Rule("search", allowed=False))
        return items


class LoggedWriter(ConditionalRequirement):
    """Overrides `run` and says it keeps the parent's semantics."""

    keeps_monitor = True

    def run(self, state: RunState) -> list[Item]:
        return list(super().run(state))


class LaterOverride(LoggedWriter):
    """Overrides `run` again, below the class that declared it kept the semantics."""

    def run(self, state: RunState) -> list[Item]:
        return [*super().run(state), Rule("search", allowed=False)]


class LoudGuard(CycleGuard):
    def run(self, state: RunState) -> list[Item]:
        return [*super().run(state), Rule("write", allowed=False)]


class Mixin:
    def run(self, state: RunState) -> list[Item]:
        return [Rule("search", allowed=False)]


class MixedIn(Mixin, ConditionalRequirement):
    """A `run` from a mixin, ahead of the built-in in the method resolution order."""


class OwnMonitor(ConditionalRequirement):
    """Overrides both: the author answers for the monitor."""

    def run(self, state: RunState) -> list[Item]:
        return list(super().run(state))

    def monitor(self):  # type: ignore[no-untyped-def]
        return super().monitor()


def bound(requirement: Requirement) -> Requirement:
    return requirement.bind(["search", "write"])


def test_a_subclass_that_overrides_run_is_opaque_to_the_checker() -> None:
    for untrusted in (
        StrictWriter("write", only_after=["search"]),
        LaterOverride("write"),
        LoudGuard(),
        MixedIn("write"),
    ):
        assert bound(untrusted).monitor() is not None
        assert bound(untrusted).checked_monitor() is None, untrusted
        assert not untrusted.statically_checkable
    for trusted in (LoggedWriter("write"), OwnMonitor("write"), ConditionalRequirement("write")):
        assert bound(trusted).checked_monitor() is bound(trusted).monitor()
        assert trusted.statically_checkable


def test_the_checker_finds_what_the_subclass_does_not_the_parents_behaviour() -> None:
    from ruleengine import Policy
    from ruleengine.check import confirm

    policy = Policy(["search", "write"], [StrictWriter("write", only_after=["search"], name="w")])
    report = policy.check(max_states=2000)
    deadlocks = [f for f in report.findings if f.id == "deadlock"]
    assert deadlocks and not report.complete  # found, by running it: not a proof
    assert "overrides `run`" in (report.reason or "")
    assert confirm(policy.reasoner(), deadlocks[0]) is None  # the trace replays to it
    kept = Policy(["search", "write"], [LoggedWriter("write", only_after=["search"])]).check()
    assert kept.complete and kept.findings == ()


def test_a_subclass_naming_tools_by_class_stays_itself_when_bound() -> None:
    # Binding resolved the class to a name by building a plain ConditionalRequirement, which
    # dropped the subclass's `run`: its extra rule never reached the pass.
    class Search:
        name = "search"

    class NoStopEver(ConditionalRequirement):
        def run(self, state: RunState) -> list[Item]:
            return [*super().run(state), Rule("final_answer", prevent_stop=True)]

    requirement_ = NoStopEver(Search, max_invocations=1)
    reasoner = Reasoner([Search(), "write"], [requirement_])
    (bound,) = reasoner.requirements
    assert type(bound) is NoStopEver and bound.target == "search"
    assert not reasoner.decide(RunState()).can_stop
    assert bound.bind(["search", "write"]) is bound  # bound again by name: the same
    assert not bound.statically_checkable  # and the checker does not trust the monitor
