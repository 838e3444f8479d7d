"""The relaxed distances of ``check/bounds.py`` are lower bounds, and the symbolic engine's
pruning of ``finish:N`` by them changes no answer, nor does the bounded model check that
answers such a question before the layers (tests/unit/test_check_bounds.py has the unit
tests).

Admissibility is checked against the explicit product: every state a bounded breadth-first
search reaches, stepping as the engines do (a tool some check value's pass allows; a conflict
has no successors), is decided by the runtime reasoner, and its true fewest steps to a state
where ``final_answer`` is allowed is compared with the components' bounds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from policy_strategies import PolicyCase, ReqSpec, policies, symbolic_system
from requirement_strategies import conditional_params

from ruleengine import FINAL_ANSWER
from ruleengine.check import symbolic
from ruleengine.check.bounds import Distances, distances
from ruleengine.check.explicit import callable_at, decide, reaches
from ruleengine.check.symbolic import Encoding, _Symbolic, analyse_symbolic
from ruleengine.check.system import State, System
from ruleengine.passes import Pass
from ruleengine.state import STATUSES

MAX_STATES = 200
"""States expanded by the breadth-first search of the explicit product."""


@st.composite
def _needing_calls(draw: st.DrawFn) -> PolicyCase:
    """A policy of ``policies()`` (at most two requirements, strict mode) with one or two
    more conditional requirements whose target must be called 1–3 times: most random
    policies let the run stop at once, or never, where the bounds say little."""
    case = draw(policies(priority=False, max_requirements=2))
    extra = []
    for i in range(draw(st.integers(1, 2))):
        p = draw(conditional_params(case.tools, with_checks=False))
        if p.target != FINAL_ANSWER:
            least = draw(st.integers(1, 3))
            most = None if p.max_invocations is None else max(p.max_invocations, least)
            p = replace(p, min_invocations=least, max_invocations=most)
        extra.append(ReqSpec(f"n{i}", p))
    return replace(case, specs=case.specs + tuple(extra))


def _explore(system: System) -> tuple[dict[State, int], dict[State, list[State]], bool]:
    """Breadth-first, whole layers at a time while at most ``MAX_STATES`` are expanded: each
    reached state's depth, the successors of each expanded one, and whether every
    reachable state was expanded."""
    depth = {system.initial: 0}
    edges: dict[State, list[State]] = {}
    layer = [system.initial]
    while layer and len(edges) + len(layer) <= MAX_STATES:
        following = []
        for state in layer:
            after = [
                system.successor(state, (tool, status))
                for tool in sorted(callable_at(system, state), key=system.tools.index)
                for status in STATUSES
            ]
            edges[state] = after
            for s in after:
                if s not in depth:
                    depth[s] = depth[state] + 1
                    following.append(s)
        layer = following
    return depth, edges, not layer


def _finishing(system: System, state: State) -> bool:
    """Whether ``final_answer`` is allowed at ``state`` under some check values."""
    return any(
        isinstance(o, Pass) and o.can_stop
        for o in (decide(system, records) for records, _ in system.variants(state))
    )


def _to_finish(
    system: System, depth: dict[State, int], edges: dict[State, list[State]]
) -> dict[State, int]:
    """Per reached state, the fewest steps to a finishing state over the explored edges."""
    back: dict[State, list[State]] = {s: [] for s in depth}
    for state, after in edges.items():
        for s in after:
            back[s].append(state)
    dist = {s: 0 for s in depth if _finishing(system, s)}
    queue = deque(dist)
    while queue:
        s = queue.popleft()
        for before in back[s]:
            if before not in dist:
                dist[before] = dist[s] + 1
                queue.append(before)
    return dist


def _bounds(bounded: list[tuple[int, Distances]], state: State) -> tuple[int, int]:
    """At ``state``: the largest component's steps, and the sum over tools of the most calls
    of each that a component needs (``bounded``: per component index, its distances)."""
    steps = max((dist.steps[state[i]] for i, dist in bounded), default=0)
    calls: dict[str, int] = {}
    for i, dist in bounded:
        for tool, per_view in dist.calls.items():
            calls[tool] = max(calls.get(tool, 0), per_view[state[i]])
    return steps, sum(calls.values())


@given(case=_needing_calls())
def test_relaxed_distances_never_exceed_the_steps_to_a_stop(case: PolicyCase) -> None:
    system = symbolic_system(case)
    bounded = [
        (i, distances(c, system.tools))
        for i, c in enumerate(system.components)
        if not c.requirement.yielding  # its denials give way: it bounds nothing
    ]
    depth, edges, whole = _explore(system)
    # Edges are known out of every state up to the last expanded layer: a distance found
    # over them is exact when the path it measures cannot leave the layers explored.
    known = max(depth[s] for s in edges) + 1
    for state, d in _to_finish(system, depth, edges).items():
        if not whole and depth[state] + d > known:
            continue
        steps, calls = _bounds(bounded, state)
        assert steps <= d, (system.views(state), d, steps)
        assert calls <= d, (system.views(state), d, calls)


def _unpruned(self: _Symbolic, steps: int) -> list[object]:
    return [self.enc.bdd.true] * (steps + 1)


@given(case=_needing_calls())
def test_pruning_by_the_bounds_changes_no_finish_answer(case: PolicyCase) -> None:
    system = symbolic_system(case)
    enc = Encoding(system)
    for steps in range(7):
        focus = f"finish:{steps}"
        # The breadth-first layers alone (the directed search and the bounded model check
        # that come first are checked against them below).
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
            patch.setattr(symbolic, "UNROLLED_SECONDS", 0)
            pruned = analyse_symbolic(system, focus=focus, encoding=enc)
            patch.setattr(_Symbolic, "_fits", _unpruned)
            whole = analyse_symbolic(system, focus=focus, encoding=enc)
        assert (pruned.finish_depth, pruned.example, pruned.complete) == (
            whole.finish_depth,
            whole.example,
            whole.complete,
        ), focus
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
            unrolled = analyse_symbolic(system, focus=focus, encoding=enc)
        if unrolled.finishes_within is not None:
            assert unrolled.example is not None and len(unrolled.example) <= steps
            assert reaches(system, unrolled.example, FINAL_ANSWER), focus
            assert whole.finish_depth is not None and whole.finish_depth <= steps, focus
        else:
            assert unrolled.complete and unrolled.depth_done == steps
            assert whole.finish_depth is None, focus
        seeking = analyse_symbolic(system, focus=focus, encoding=enc)
        if seeking.finishes_within is not None:
            assert seeking.finishes_within <= steps
            assert seeking.example is not None and len(seeking.example) <= steps
            assert whole.finish_depth is not None and whole.finish_depth <= steps, focus
        else:
            assert (seeking.finish_depth, seeking.complete) == (whole.finish_depth, True)
