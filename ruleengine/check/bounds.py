"""Lower bounds on the steps a run still needs before ``final_answer`` may be allowed.

A component on its own, *relaxed* — every step its own rules neither deny nor exclude by a
hard force on another tool is open to it, and it lets the run stop wherever it does not
deny ``final_answer`` — can only be more permissive than the system it is part of, in
strict mode: there a denial always holds (it clashes, or the tool stays out), a hard force
leaves only its tool (or clashes), a stop needs every component to leave ``final_answer``
undenied, and soft forces only narrow what the rest leaves. So every path of the system
that ends where ``final_answer`` is allowed projects, on each component, onto a relaxed
path of the component that ends where it lets the run stop, with as many steps and as many
calls of each tool. Hence, for the component's view ``v``:

* ``steps[v]``: the fewest steps of such a relaxed path from ``v`` (``UNREACHABLE`` when
  none exists), a lower bound on the steps the system needs, whatever the other views;
* ``calls[t][v]``: the fewest calls of tool ``t`` on such a path; and since each step calls
  one tool, the sum over tools of the largest ``calls[t]`` over the components is a lower
  bound too (the components need those calls of different tools one after the other).

Both are exact shortest paths on the component's own tabulated monitor (0-1 breadth-first
search backwards from the views that let the run stop): cost linear in its views × tools.
The same holds with another tool as the goal (the views where the component lets it be
called), which guides ``seek``. A yielding requirement's denials give way when they clash,
so it gets no bound (callers skip it). The symbolic engine prunes its breadth-first layers
with these bounds when it asks whether ``final_answer`` is reached within a number of steps.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ruleengine.check.system import Component
from ruleengine.ir import FINAL_ANSWER

__all__ = ["UNREACHABLE", "Distances", "Horizon", "Remembered", "distances", "horizon", "shortest"]

UNREACHABLE = 1 << 30
"""The distance of a view from which the component never lets the run stop."""


@dataclass(frozen=True, slots=True)
class Distances:
    """Per view of one component: lower bounds on what a run needs before it may stop."""

    steps: tuple[int, ...]
    """The fewest steps (``UNREACHABLE``: the component never lets the run stop again)."""
    calls: dict[str, tuple[int, ...]]
    """Per tool, the fewest calls of it (only tools that some view needs called)."""


def distances(comp: Component, tools: Sequence[str], goal: str = FINAL_ANSWER) -> Distances:
    """The relaxed distances of ``comp`` (see the module's docstring) over ``tools``, the
    declared tools with ``final_answer`` among them, to the views where ``goal`` is open
    (``final_answer``: where the component lets the run stop; another tool: where it lets
    that tool be called). Deterministic; linear in the component's views × ``tools`` (times
    the tools whose calls it needs)."""
    size = len(comp.views)
    if all(_open(comp, view, goal) for view in range(size)):
        # Nothing to reach: most components, for most goals, on a wide policy.
        return Distances((0,) * size, {})
    bit = {t: 1 << i for i, t in enumerate(tools)}
    callable_tools = [t for t in tools if t != FINAL_ANSWER]
    open_at: list[int] = []  # per view, the tools some variant leaves undenied
    release: list[int] = []
    everything = (1 << len(tools)) - 1
    for view in range(size):
        denied = 0
        for t in comp.denied(view):
            denied |= bit[t]
        forced = 0
        for t in comp.hard_forced(view):
            forced |= bit[t]
        # A hard force leaves only its tool to call (or clashes): the stop stays open.
        open_at.append(
            everything & ~denied & (forced | bit[FINAL_ANSWER] if forced else everything)
        )
        if open_at[-1] & bit[goal]:
            release.append(view)
    # The relaxed steps out of each view: (view after, the tool if only that tool opens it).
    members: dict[int, list[str]] = {}
    for t in callable_tools:
        members.setdefault(comp.classes[t], []).append(t)
    back: list[list[tuple[int, str | None]]] = [[] for _ in range(size)]
    needed: set[str] = set()
    for klass, of_class in members.items():
        for v in range(size):
            opened = [t for t in of_class if open_at[v] & bit[t]]
            if not opened:
                continue
            only = opened[0] if len(opened) == 1 else None
            for s in range(3):
                after = comp.moves[klass * 3 + s][v]
                if after != v:
                    back[after].append((v, only))
                    if only is not None:
                        needed.add(only)
    steps = shortest(size, release, back, None)
    calls: dict[str, tuple[int, ...]] = {}
    for t in sorted(needed):
        found = shortest(size, release, back, t)
        if any(0 < d < UNREACHABLE for d in found):
            calls[t] = found
    return Distances(steps, calls)


@dataclass(frozen=True, slots=True)
class Horizon:
    """Per view of one component: after how many steps a run can hold it.

    The component's own moves, every tool's every status open at every view, take a run
    from view 0 to whichever views it can hold; every history of the system moves each
    component by one of these steps (whatever the passes and the mode: a move does not
    depend on what is allowed), so a run holds a view no sooner than ``least`` and no
    later than ``most`` says. A step counter (``force_at_step``) holds its first views
    once each, a step apart: a set of states at such views lies within a bounded number
    of steps, where bounded model checking of that many steps is a proof."""

    least: tuple[int, ...]
    """The fewest steps to each view (``UNREACHABLE``: none, on the component alone)."""
    most: tuple[int | None, ...]
    """The most steps after which each view can be held (None: no bound; a view on a
    cycle of the moves, or after one; ``UNREACHABLE`` views also None)."""


def horizon(comp: Component, tools: Sequence[str]) -> Horizon:
    """The ``Horizon`` of ``comp`` over ``tools`` (the callable ones: ``final_answer`` ends
    a run and moves nothing). Deterministic; linear in its views × move tables."""
    size = len(comp.views)
    tables = sorted({comp.classes[t] * 3 + s for t in tools if t in comp.classes for s in range(3)})
    after: list[set[int]] = [set() for _ in range(size)]
    for v in range(size):
        for table in tables:
            after[v].add(comp.moves[table][v])
    # The fewest steps from view 0: ``shortest`` along the moves themselves (each a step).
    least = shortest(size, [0], [[(w, None) for w in after[v]] for v in range(size)], None)
    # Kahn's order over the views a run can hold: those it never takes lie on a cycle of
    # the moves (a view the step leaves as it is counts) or after one, and have no bound;
    # the others (view 0 first: nothing else is without a way in) have the longest path
    # from view 0.
    into = [0] * size
    for v in range(size):
        if least[v] != UNREACHABLE:
            for w in after[v]:
                into[w] += 1
    longest = [0] * size
    taken = [False] * size
    ready: deque[int] = deque([0] if into[0] == 0 else [])
    while ready:
        v = ready.popleft()
        taken[v] = True
        for w in after[v]:
            longest[w] = max(longest[w], longest[v] + 1)
            into[w] -= 1
            if into[w] == 0:
                ready.append(w)
    return Horizon(least, tuple(longest[v] if taken[v] else None for v in range(size)))


class Remembered:
    """``distances`` over ``tools``, remembered per component and goal: for the subsystems
    of one system, which share its components (keyed by identity: the caller keeps the
    system, and so its components, alive)."""

    def __init__(self, tools: Sequence[str]) -> None:
        self.tools = tools
        self._found: dict[tuple[int, str], Distances] = {}

    def __call__(self, comp: Component, goal: str = FINAL_ANSWER) -> Distances:
        key = (id(comp), goal)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = distances(comp, self.tools, goal)
        return found


def apart(
    shared: Callable[[Component, str], Distances],
    own: Sequence[Component],
    tools: Sequence[str],
) -> Callable[[Component, str], Distances]:
    """``shared`` (a memo keyed by the identity of components) for the components of
    ``own``, and a memo of its own, over ``tools``, for any other: a search of a system
    built with a new requirement (``gates.gated``, ``gates.capped``) remembers that
    one's distances only while it lives, since a later component may take a dead one's
    identity."""
    mine = {id(c) for c in own}
    fresh = Remembered(tools)

    def bounds(comp: Component, goal: str = FINAL_ANSWER) -> Distances:
        return shared(comp, goal) if id(comp) in mine else fresh(comp, goal)

    return bounds


def _open(comp: Component, view: int, goal: str) -> bool:
    """Whether ``goal`` is open to ``comp`` at ``view``, as ``distances`` counts it: not
    denied, and no hard force on another tool (a hard force leaves the stop open)."""
    if goal in comp.denied(view):
        return False
    forced = comp.hard_forced(view)
    return not forced or goal == FINAL_ANSWER or goal in forced


def shortest(
    size: int, targets: list[int], back: list[list[tuple[int, str | None]]], tool: str | None
) -> tuple[int, ...]:
    """Distances to ``targets`` along the reversed edges ``back``, where an edge costs 1 when
    ``tool`` is None or the edge is a call of ``tool`` only, else 0 (0-1 breadth-first)."""
    dist = [UNREACHABLE] * size
    queue: deque[int] = deque()
    for v in targets:
        dist[v] = 0
        queue.append(v)
    while queue:
        w = queue.popleft()
        for v, only in back[w]:
            cost = 1 if tool is None or only == tool else 0
            d = dist[w] + cost
            if d < dist[v]:
                dist[v] = d
                if cost:
                    queue.append(v)
                else:
                    queue.appendleft(v)
    return tuple(dist)
