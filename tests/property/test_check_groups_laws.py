"""The symbolic engine's independent groups (``check/symbolic_groups.py``) change no answer.

Where a system splits into groups of components that never read each other, depths,
witnesses and the states that can still finish come from each group's own small search
instead of breadth-first layers and preimages, and the reachable set from the groups'
reachable states. Laws: (1) the report is the one chaining and the layers give, byte for
byte; (2) the reachable set is the explicit product's, the groups' distance from any
reachable state to a target is the fewest steps an explicit breadth-first search of the
product takes there, and the groups' backward set holds exactly the states with a finite
distance.
"""

from __future__ import annotations

from collections import deque
from unittest.mock import patch

from hypothesis import assume, given
from hypothesis import strategies as st
from policy_strategies import TOOL_POOL, PolicyCase, ReqSpec, policies, symbolic_system
from requirement_strategies import CondParams

from ruleengine.check import check
from ruleengine.check.explicit import callable_at
from ruleengine.check.symbolic import Encoding, _Symbolic
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import State, System
from ruleengine.state import STATUSES

MAX_STATES = 300
"""States of the product explored explicitly, at most."""


@st.composite
def _tallies(draw: st.DrawFn) -> PolicyCase:
    """Per-tool counters, mostly independent: each tool gets 1–2 conditionals on itself
    (random caps, minimums, counting modes, sometimes not twice in a row), and now and then
    one links two tools (``only_after`` / ``only_before``), merging their groups."""
    size = draw(st.integers(2, 4))
    tools = tuple(draw(st.permutations(TOOL_POOL))[:size])
    specs = []
    for t in tools:
        for _ in range(draw(st.integers(1, 2))):
            least = draw(st.integers(0, 2))
            # A requirement with neither a minimum nor a cap never moves: not a counter.
            none = st.none() if least else st.nothing()
            most = draw(st.one_of(none, st.integers(max(least, 1), 3)))
            others = [u for u in tools if u != t]
            link = draw(st.sampled_from(["none"] * 12 + ["after", "before"]))
            params = CondParams(
                t,
                min_invocations=least,
                max_invocations=most,
                only_success=draw(st.booleans()),
                consecutive_allowed=draw(st.integers(0, 19)) > 0,
                only_after=(draw(st.sampled_from(others)),) if link == "after" else (),
                only_before=(draw(st.sampled_from(others)),) if link == "before" else (),
            )
            specs.append(ReqSpec(f"r{len(specs)}", params))
    return PolicyCase(tools, tuple(specs), "strict", draw(st.integers(1, 8)))


def _report(case: PolicyCase, *, grouped: bool) -> dict[str, object]:
    if grouped:
        report = check(list(case.tools), case.requirements(), engine="symbolic", **case.kwargs())
    else:
        with patch.object(Verdicts, "_groups_found", lambda self: None):
            report = check(
                list(case.tools), case.requirements(), engine="symbolic", **case.kwargs()
            )
    out = report.model_dump(mode="json")
    out["stats"].pop("seconds")
    return out


@given(case=st.one_of(_tallies(), policies(priority=False)))
def test_groups_give_the_reports_the_layers_give(case: PolicyCase) -> None:
    symbolic_system(case)  # strict mode, literal rules: else skipped
    assert _report(case, grouped=True) == _report(case, grouped=False)


def _successors(system: System, state: State) -> set[State]:
    return {
        system.successor(state, (tool, status))
        for tool in callable_at(system, state)
        for status in STATUSES
    }


def _fewest(system: System, start: State, targets: set[State]) -> int | None:
    """Fewest steps from ``start`` to a state of ``targets`` (explicitly; None: none)."""
    seen = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state in targets:
            return seen[state]
        for after in _successors(system, state):
            if after not in seen:
                seen[after] = seen[state] + 1
                queue.append(after)
    return None


@given(case=_tallies())
def test_group_distances_are_the_products_fewest_steps(case: PolicyCase) -> None:
    system = symbolic_system(case)
    reached = {system.initial}
    queue = deque([system.initial])
    while queue:
        for after in _successors(system, queue.popleft()):
            if after not in reached:
                reached.add(after)
                queue.append(after)
        assume(len(reached) <= MAX_STATES)
    analysis = _Symbolic(system, Encoding(system), None, None, None)
    assert analysis.run().complete
    groups = analysis._split()
    assume(groups is not None)
    assert groups is not None
    enc, comps, p = analysis.enc, system.components, analysis.pass_
    # The reachable set from the groups (``_reach``) is the product's.
    assert analysis._count(analysis.reach) == len(reached)
    assert all(enc.holds_at(analysis.reach, comps, s) for s in reached)
    for target in (p.can_stop, ~p.consistent & p.stuck, ~p.consistent):
        members = {s for s in reached if enc.holds_at(target, comps, s)}
        back = groups.backward(target)
        for state in reached:
            fewest = _fewest(system, state, members)
            assert groups.distance(target, state) == fewest
            assert enc.holds_at(back, comps, state) == (fewest is not None)
