"""Skipping through counts (``check/skipping.py``): a counter's threshold costs what its
bands cost, not one state per count, and the reports say what visiting every count says."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine import (
    Monitor,
    PolicyError,
    Reasoner,
    Requirement,
    Rule,
    RunState,
    requirement,
)
from ruleengine.check import check, confirm
from ruleengine.check.system import System
from ruleengine.requirements import Counter
from ruleengine.state import STATUSES, Status


def test_a_cap_of_a_hundred_thousand_is_a_few_views_and_every_state_is_counted() -> None:
    reqs = [C("a", max_invocations=100_000, name="cap")]
    system = System(["a", "b"], reqs, skipping=True)
    assert [len(c.views) for c in system.components] == [3]  # 0, 1 (to 99,999), 100,000
    assert [len(c.views) for c in System(["a", "b"], reqs).components] == [100_001]
    report = check(["a", "b"], reqs)
    assert report.complete and report.findings == ()
    assert report.stats.states == 100_001


def test_a_deadlock_past_two_counters_has_its_whole_trace_and_replays() -> None:
    tools = ["a", "b"]
    reqs = [
        C("a", max_invocations=300, name="cap"),
        C("a", min_invocations=301, name="need"),
        C("b", only_after=["a"], max_invocations=100, name="b-after"),
    ]
    skipped = check(tools, reqs, max_iterations=500)
    exact = check(tools, reqs, engine="symbolic", max_iterations=500)  # every count visited
    assert [(f.id, len(f.trace)) for f in skipped.findings] == [
        (f.id, len(f.trace)) for f in exact.findings
    ]
    deadlock = next(f for f in skipped.findings if f.id == "deadlock")
    assert len(deadlock.trace) == 400 and "after 400 steps" in deadlock.message
    assert confirm(Reasoner(tools, reqs), deadlock) is None
    assert skipped.stats.states == exact.stats.states


def test_counters_of_the_same_calls_skip_in_step() -> None:
    # Their counts are always equal: 100,001 states, not 100,001².
    reqs = [
        C("a", max_invocations=100_000, name="cap"),
        C("a", min_invocations=50_000, name="need"),
    ]
    report = check(["a", "b"], reqs, max_iterations=200_000)
    assert report.complete and report.stats.states == 100_001
    assert report.findings == ()


def test_a_counter_whose_calls_another_requirement_sees_is_counted_call_by_call() -> None:
    # A step counter moves on every call until step 3: the calls inside the first band
    # are not alike there, so the check runs again without skipping, with the same report.
    tools = ["a", "b"]
    reqs = [C("a", max_invocations=100, name="cap"), C("b", force_at_step=3, name="third")]
    report = check(tools, reqs, max_iterations=10)
    exact = check(tools, reqs, engine="symbolic", max_iterations=10)
    assert report.model_dump(exclude={"stats"}) == exact.model_dump(exclude={"stats"})
    assert report.stats.states == exact.stats.states


def test_a_conditional_monitor_declares_the_counts_its_rules_read() -> None:
    monitor = C("a", min_invocations=3, max_invocations=10).bind(["a", "b"]).monitor()
    assert monitor is not None
    counter = monitor.counter()
    assert counter is not None and counter.tool == "a" and counter.bounds == (0, 3, 10)
    assert counter.statuses == frozenset({"ok"})
    assert [counter.band(n) for n in (0, 2, 3, 9, 10)] == [0, 0, 1, 1, 2]
    no_count = C("a", max_invocations=0).bind(["a", "b"]).monitor()
    assert no_count is not None and no_count.counter() is None


class _Capped(Monitor):
    """Calls of `a`, every status, up to 100; `a` allowed below 100."""

    def initial(self) -> int:
        return 0

    def advance(self, view: Hashable, tool: str, status: Status) -> int:
        assert isinstance(view, int)
        return min(view + (tool == "a"), 100)

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> tuple[Rule, ...]:
        assert isinstance(view, int)
        return (Rule("a", allowed=view < 100),)

    def tools(self) -> frozenset[str]:
        return frozenset({"a"})


def _capped(counter: object) -> Requirement:
    class Declared(_Capped):
        def counter(self) -> Counter | None:
            return counter  # type: ignore[return-value]

    @requirement(monitor=Declared(), name="cap")
    def cap(state: RunState) -> list[Rule]:
        return [Rule("a", allowed=state.count("a") < 100)]

    return cap


def test_a_hand_written_counter_is_skipped_through_or_refused_by_name() -> None:
    every = frozenset(STATUSES)
    good = Counter("a", every, (0, 100), lambda v: v, lambda v, c: c)  # type: ignore[arg-type,return-value]
    assert check(["a", "b"], [_capped(good)]).stats.states == 101
    # A promise the monitor does not keep (it counts every status): count by count.
    liar = Counter("a", frozenset({"ok"}), (0, 100), lambda v: v, lambda v, c: c)  # type: ignore[arg-type,return-value]
    assert check(["a", "b"], [_capped(liar)]).stats.states == 101
    broken = Counter("a", every, (0, 100), lambda v: 1 // 0, lambda v, c: c)
    with pytest.raises(PolicyError, match=r"Declared.counter\(\).read raised ZeroDivisionError"):
        check(["a", "b"], [_capped(broken)])
    floats = Counter("a", every, (0, 100), lambda v: float(v), lambda v, c: c)  # type: ignore[arg-type,return-value]
    with pytest.raises(PolicyError, match=r"read gave `0.0` for view `0`: it must be an int"):
        check(["a", "b"], [_capped(floats)])
    with pytest.raises(PolicyError, match=r"counter\(\) gave `'junk'`: it must be a `Counter`"):
        check(["a", "b"], [_capped("junk")])
    text_bounds = Counter("a", every, ("0", "100"), lambda v: v, lambda v, c: c)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"bounds=`\('0', '100'\)` is not a tuple of ints"):
        check(["a", "b"], [_capped(text_bounds)])
    # Bounds out of order promise nothing the checker can use: count by count.
    unsorted = Counter("a", every, (0, 100, 50), lambda v: v, lambda v, c: c)  # type: ignore[arg-type,return-value]
    assert check(["a", "b"], [_capped(unsorted)]).stats.states == 101


def test_auto_skips_through_counts_only_where_the_explicit_engine_can_cover_the_space(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ruleengine.check.run as check_run
    from benchmarks._policies import make_policy

    given: list[bool] = []
    engine = check_run._engine

    def spy(system: System, *args: Any, **kwargs: Any) -> Any:
        given.append(bool(system.skips))
        return engine(system, *args, **kwargs)

    monkeypatch.setattr(check_run, "_engine", spy)
    narrow = check(["a", "b"], [C("a", max_invocations=100_000, name="cap")])
    assert given and all(given) and narrow.stats.states == 100_001
    # Twenty tools whose approvals interleave freely, and one large cap: too wide for the
    # explicit engine, so the symbolic one checks it, every count visited.
    wide = make_policy("approvals", 20, 40, 1)
    reqs = [*wide.requirements, C(wide.tools[3], max_invocations=100, name="big-cap")]
    given.clear()
    report = check(wide.tools, reqs, mode=wide.mode, max_iterations=wide.max_iterations)
    assert given and not any(given) and report.complete
    exact = check(
        wide.tools, reqs, mode=wide.mode, max_iterations=wide.max_iterations, engine="symbolic"
    )
    assert report.model_dump(exclude={"stats"}) == exact.model_dump(exclude={"stats"})
