"""Monitors agree with the requirements they abstract (SPEC §5, §8).

For random built-in requirements and random histories: what ``run`` emits on the concrete state
equals what the monitor emits from the replayed view (the static checker's semantics), and
equals a reference model of SPEC §5 written from the concrete history with exact counts; views
read from a state equal replayed views; the view space is finite and within a bound computed
from the parameters; and saturated views never change what is emitted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from itertools import product

from hypothesis import given
from hypothesis import strategies as st
from requirement_strategies import (
    STATUSES,
    TOOLS,
    CondParams,
    PermParams,
    call_traces,
    conditional_params,
    cycle_guards,
    expected_conditional,
    expected_cycle,
    expected_permission,
    moves,
    permission_params,
    state_of,
    traces,
)

from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Reasoner,
    RunState,
)
from ruleengine.requirements import Monitor, replay
from ruleengine.rules import Emitted

DECLARED = list(TOOLS)
ALL_MOVES = list(product((*TOOLS, FINAL_ANSWER), STATUSES))


def reachable_views(monitor: Monitor, bound: int) -> set[Hashable]:
    """Every view reachable from ``initial()``; fails if there are more than ``bound``."""
    start = monitor.initial()
    seen = {start}
    queue = deque([start])
    while queue:
        view = queue.popleft()
        for tool, status in ALL_MOVES:
            nxt = monitor.advance(view, tool, status)
            if nxt not in seen:
                seen.add(nxt)
                assert len(seen) <= bound, f"more than {bound} views"
                queue.append(nxt)
    return seen


def trace_of(steps) -> list[tuple[str, str]]:
    return [(s.tool, s.status) for s in steps]


def fields(rule) -> tuple[str, bool, bool]:
    return (rule.target, rule.allowed, rule.hidden)


# -- conditional -------------------------------------------------------------------------------


def check_conditional(p: CondParams, trace) -> None:
    req = p.build().bind(DECLARED)
    m = req.monitor()
    state = state_of(trace)
    view = replay(m, trace)
    assert m.view_of(state) == view  # the replay law
    assert Monitor.view_of(m, state) == view  # the base class's default reading agrees
    ran = tuple(req.run(state))
    assert ran == tuple(m.emit(view, req.check_values(state)))
    assert ran == expected_conditional(p, trace)


@given(conditional_params(), traces())
def test_conditional_run_is_emit_of_replay(p, trace):
    check_conditional(p, trace)


@st.composite
def long_traces(draw: st.DrawFn) -> list[tuple[str, str]]:
    """Up to ~40 steps: a prefix and a repeated block, so counts pass every cap."""
    prefix = draw(traces(max_size=6))
    block = draw(st.lists(moves(), min_size=1, max_size=4))
    reps = draw(st.integers(3, 8))
    return prefix + block * reps


@given(conditional_params(), long_traces())
def test_conditional_long_traces_match_the_unsaturated_reference(p, trace):
    check_conditional(p, trace)


@given(conditional_params(), st.lists(moves(), min_size=30, max_size=30))
def test_conditional_thirty_step_traces(p, trace):
    check_conditional(p, trace)


@given(
    conditional_params(with_checks=False),
    traces(max_size=6),
    st.lists(moves(), min_size=1, max_size=4),
)
def test_conditional_views_stop_changing_once_saturated(p, prefix, block):
    m = p.build().bind(DECLARED).monitor()
    k = p.cap + p.step_cap + 1
    saturated = prefix + block * k
    longer = saturated + block
    assert replay(m, saturated) == replay(m, longer)
    # and the exact semantics agree that the extra block changes nothing
    assert expected_conditional(p, saturated) == expected_conditional(p, longer)


@given(conditional_params(with_checks=False), traces())
def test_conditional_counts_stop_at_the_cap(p, trace):
    m = p.build().bind(DECLARED).monitor()
    count, last, after, before, step = replay(m, trace)
    assert 0 <= count <= p.cap
    assert 1 <= step <= p.step_cap
    assert last is None or last in (p.target, *p.force_after)
    assert 0 <= after < 2 ** len(p.only_after)
    saturated = (count, last, after, before, step)
    if count == p.cap:
        assert m.advance(saturated, p.target, "ok")[0] == p.cap
    if step == p.step_cap:
        assert m.advance(saturated, p.target, "ok")[4] == p.step_cap


@given(conditional_params())
def test_conditional_view_space_is_finite_and_bounded(p):
    m = p.build().bind(DECLARED).monitor()
    views = reachable_views(m, p.view_bound())
    assert m.initial() in views
    for view in views:
        for checks in product((False, True), repeat=len(p.checks)):
            assert m.emit(view, checks)


# -- permission --------------------------------------------------------------------------------


@given(permission_params(), traces())
def test_permission_run_is_emit_of_replay(p: PermParams, trace):
    req = p.build().bind(DECLARED)
    m = req.monitor()
    state = state_of(trace)
    view = replay(m, trace)
    assert m.view_of(state) == view  # the replay law
    assert Monitor.view_of(m, state) == view  # the base class's default reading agrees
    ran = tuple(req.run(state))
    assert ran == tuple(m.emit(view))
    if not p.remember:
        assert view == m.initial() == ()
        assert ran == ()
    assert [fields(r) for r in ran] == expected_permission(p, trace)
    remembered = {t: allowed for t, allowed, _ in expected_permission(p, trace)}
    for tool in TOOLS:
        assert req.covers(tool) == (tool in p.covered())
        assert req.remembered(tool, state) == remembered.get(tool)


@given(permission_params())
def test_permission_view_space_is_finite_and_bounded(p: PermParams):
    m = p.build().bind(DECLARED).monitor()
    bound = 3 ** len(p.covered()) if p.remember else 1
    assert len(reachable_views(m, bound)) <= bound


# -- cycle guard -------------------------------------------------------------------------------


@given(cycle_guards(), call_traces())
def test_cycle_run_is_emit_of_replay(guard, steps):
    m = guard.bind(DECLARED).monitor()
    state = RunState(steps=tuple(steps))
    detected = guard.detect(state.steps)
    assert detected == expected_cycle(guard, steps)
    ran = tuple(guard.run(state))
    view = replay(m, trace_of(steps))
    assert m.view_of(state) == view  # the replay law
    assert Monitor.view_of(m, state) == view  # the base class's default reading agrees
    assert ran == tuple(m.emit(view, (detected is not None,)))
    assert [r.target for r in ran] == ([detected] if detected else [])
    assert all(not r.allowed for r in ran)
    if steps:
        last = steps[-1]
        cycles = guard.would_cycle(steps[:-1], last.tool, last.arguments)
        assert cycles == (detected is not None)


@given(cycle_guards())
def test_cycle_view_space_is_finite(guard):
    bound = len(TOOLS) + 2
    assert len(reachable_views(guard.monitor(), bound)) <= bound


# -- sets of requirements through the reasoner --------------------------------------------------


@st.composite
def requirement_sets(draw: st.DrawFn):
    conditionals = draw(st.lists(conditional_params(), min_size=1, max_size=3))
    reqs = [p.build(name=f"cond-{i}") for i, p in enumerate(conditionals)]
    if draw(st.booleans()):
        reqs.append(draw(permission_params()).build(name="ask"))
    if draw(st.booleans()):
        reqs.append(draw(cycle_guards()))
    return reqs


@given(requirement_sets(), call_traces(TOOLS))
def test_reasoner_emits_what_the_monitors_emit(reqs, steps):
    reasoner = Reasoner(DECLARED, reqs)
    state = RunState(steps=tuple(steps))
    trace = trace_of(steps)
    expected = set()
    for req in reasoner.requirements:
        m = req.monitor()
        if isinstance(req, CycleGuard):
            checks = (req.detect(state.steps) is not None,)
        elif isinstance(req, ConditionalRequirement):
            checks = req.check_values(state)
        else:
            assert isinstance(req, AskPermissionRequirement)
            checks = ()
        for item in m.emit(replay(m, trace), checks):
            expected.add(Emitted(item, req.name, req.priority))
    assert set(reasoner.emit(state)) == expected
