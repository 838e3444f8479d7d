"""Laws of skipping through counts (``check/skipping.py``): a policy whose counters are
tabulated band by band gets the report it gets when every count is visited (the same
findings, traces as short, the same requirement-level cores, the states counted alike), and
its traces, written out call by call, replay in the runtime.

The bands are made small here (``SKIP_FROM`` = 2) so that the random policies' counts (up to
4) are skipped through; ``ConditionalMonitor``'s promise (``Monitor.counter``) is checked on
random views and steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies

from ruleengine import AskPermissionRequirement, ConditionalRequirement, Reasoner
from ruleengine.check import Report, check, confirm
from ruleengine.check import skipping as skipping_module
from ruleengine.check.system import System
from ruleengine.state import STATUSES


@contextmanager
def skip_from(size: int) -> Iterator[None]:
    with patch.object(skipping_module, "SKIP_FROM", size):
        yield


def checked(case: PolicyCase, engine: str = "explicit") -> Report:
    return check(
        list(case.tools),
        list(case.requirements()),
        engine=engine,  # type: ignore[arg-type]
        **case.kwargs(),
    )


AT_THE_END = ("deadlock", "forced-conflict", "forced-tie")
"""Findings whose core is the minimal core at the end of their trace: another shortest
trace (a search by weighted depth meets equally short ones in another order) may end
where another core applies."""


def summary(report: Report) -> dict[str, Any]:
    """What skipping must not change: each finding with its trace's length and (but for a
    core at the end of its trace) its core, and the counts."""
    return {
        "complete": report.complete,
        "states": report.stats.states,
        "findings": [
            (
                f.id,
                f.tool,
                f.requirement,
                len(f.trace),
                f.model_dump(mode="json").get("min_steps"),
                None if f.id in AT_THE_END else sorted(c.requirement for c in f.core),
            )
            for f in report.findings
        ],
    }


def assert_same_cores_on_same_traces(skipping: Report, every: Report) -> None:
    """A finding whose core is read at the end of its trace has the same core when the two
    checks found the same trace."""
    theirs = {(f.id, f.tool, f.requirement): f for f in every.findings}
    for f in skipping.findings:
        other = theirs[(f.id, f.tool, f.requirement)]
        if f.id in AT_THE_END and f.trace == other.trace:
            assert f.core == other.core


@given(case=policies(max_requirements=4, cycle=False, max_iterations=(1, 12)))
def test_skipping_through_counts_reports_what_visiting_every_count_reports(
    case: PolicyCase,
) -> None:
    note(case.source())
    with skip_from(10**9):
        every = checked(case)
    with skip_from(2):
        skipping = checked(case)
    assert summary(skipping) == summary(every)
    reasoner = Reasoner(list(case.tools), case.requirements(), mode=case.mode)  # type: ignore[arg-type]
    for f in skipping.findings:
        if not f.depends_on_custom_checks:
            assert confirm(reasoner, f) is None, f
    assert_same_cores_on_same_traces(skipping, every)


def counters_only(tools: Sequence[str]) -> st.SearchStrategy[list[ConditionalRequirement]]:
    """Requirements that only count and order calls: every counter is skipped through."""

    @st.composite
    def build(draw: st.DrawFn) -> list[ConditionalRequirement]:
        out = []
        for i in range(draw(st.integers(1, 4))):
            target = draw(st.sampled_from(list(tools)))
            others = [t for t in tools if t != target]
            minimum = draw(st.integers(0, 9))
            after = draw(st.lists(st.sampled_from(others), max_size=1)) if others else []
            rest = [t for t in others if t not in after]
            before = draw(st.lists(st.sampled_from(rest), max_size=1)) if rest else []
            out.append(
                ConditionalRequirement(
                    target,
                    min_invocations=minimum,
                    max_invocations=draw(st.none() | st.integers(max(minimum, 1), 12)),
                    only_after=after,
                    only_before=before,
                    only_success_invocations=draw(st.booleans()),
                    name=f"r{i}",
                )
            )
        extra = draw(st.sampled_from(["none", "none", "permission", "force_after", "at_step"]))
        if extra == "permission":
            remember = draw(st.booleans())
            out.append(
                AskPermissionRequirement(
                    [draw(st.sampled_from(list(tools)))], remember_choices=remember, name="ask"
                )
            )
        elif extra != "none" and len(tools) > 1:
            # These watch every call (the last tool, the step): nothing is skipped.
            target, other = draw(st.permutations(list(tools)))[:2]
            if extra == "force_after":
                out.append(ConditionalRequirement(target, force_after=[other], name="next"))
            else:
                out.append(ConditionalRequirement(target, force_at_step=2, name="second"))
        return out

    return build()


@given(data=st.data(), max_iterations=st.integers(1, 30))
def test_counters_alone_are_skipped_and_agree_with_every_count(
    data: st.DataObject, max_iterations: int
) -> None:
    tools = ["a", "b", "c"][: data.draw(st.integers(1, 3))]
    reqs = data.draw(counters_only(tools))
    note(repr(reqs))
    with skip_from(10**9):
        every = check(tools, reqs, engine="explicit", max_iterations=max_iterations)
    with skip_from(2):
        system = System(tools, reqs, skipping=True)
        skipping = check(tools, reqs, engine="auto", max_iterations=max_iterations)
    note(repr(system.skips))
    assert summary(skipping) == summary(every)
    reasoner = Reasoner(tools, reqs)
    for f in skipping.findings:
        assert confirm(reasoner, f) is None, f
    assert_same_cores_on_same_traces(skipping, every)


@given(data=st.data())
def test_a_conditional_monitor_keeps_its_counters_promise(data: st.DataObject) -> None:
    """``Monitor.counter``'s three promises, on random views reached by random steps."""
    tools = ["a", "b", "c"]
    minimum = data.draw(st.integers(0, 5))
    requirement = ConditionalRequirement(
        "a",
        min_invocations=minimum,
        max_invocations=data.draw(st.none() | st.integers(max(minimum, 1), 6)),
        only_after=data.draw(st.lists(st.sampled_from(["b", "c"]), max_size=2, unique=True)),
        force_after=data.draw(st.lists(st.sampled_from(["b", "c"]), max_size=1)),
        force_at_step=data.draw(st.none() | st.integers(1, 3)),
        consecutive_allowed=data.draw(st.booleans()),
        only_success_invocations=data.draw(st.booleans()),
    ).bind(tools)
    monitor = requirement.monitor()
    assert monitor is not None
    counter = monitor.counter()
    if counter is None:
        return
    steps = st.tuples(st.sampled_from(tools), st.sampled_from(STATUSES))
    view = monitor.initial()
    for tool, status in data.draw(st.lists(steps, max_size=12)):
        count = counter.read(view)
        after = monitor.advance(view, tool, status)
        counted = tool == counter.tool and status in counter.statuses
        # 1. a counting call adds one (staying at the last bound); other steps leave it
        assert counter.read(after) == (min(count + 1, counter.bounds[-1]) if counted else count)
        # 2. the rest of the view moves as if the count were not there
        for other in range(counter.bounds[-1] + 1):
            moved = monitor.advance(counter.write(view, other), tool, status)
            expected = min(other + 1, counter.bounds[-1]) if counted else other
            assert moved == counter.write(after, expected)
            # 3. the rules read the count only through its band
            if counter.band(other) == counter.band(count):
                assert monitor.emit(counter.write(view, other)) == monitor.emit(view)
        view = after
