"""A directed search for one history that refutes a "never": a tool allowed, or the run
allowed to stop within a number of steps.

Greedy best-first over the explicit states of a ``System``, ordered by how far the goal looks
(``guide``: the relaxed distances of ``bounds``, added along chains of prerequisites), then
the shallowest, then the order of discovery, every state decided by the runtime's reasoner
as the engines decide it; with a step budget, states whose lower bound exceeds what is left
are dropped.
It proves nothing when it fails; when it succeeds, its history is a counterexample checked
step by step: each step allowed when taken, the goal allowed at the end (under some values
of the opaque checks, as the engines explore). Breadth-first layers reach a deep goal only
through every state before it; this walks towards it, which is what a core search needs
when a question about a large subsystem has a deep "yes".
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable

from ruleengine.check.bounds import UNREACHABLE, Distances
from ruleengine.check.explicit import allows, decide
from ruleengine.check.system import Component, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.state import STATUSES

__all__ = ["SEEK_STATES", "Estimates", "searched", "seek", "traced"]

SEEK_STATES = 2000
"""States a directed search decides before it gives up, for a system of at most
``SEEK_COMPONENTS`` components; fewer for a larger one (``searched``)."""

DEADLINE_EVERY = 64
"""States a search decides between two looks at the clock (when given a deadline)."""

SEEK_COMPONENTS = 100
"""Components up to which a search decides ``SEEK_STATES`` states: it keeps every state it
meets (some 150 per state decided at 50 tools), each a tuple of views, so a search's memory
grows with the components (at 400, 2,000 states took a gigabyte)."""


_Closer = tuple[int, tuple[int, ...], list[tuple[str, tuple[int, ...]]]]
"""A component that keeps a tool closed (``Estimates._closers``)."""


class Estimates:
    """How far ``goal`` is from a state of ``system``, from the components' relaxed
    distances (``bounds(component, tool)``, memoised by the caller; yielding requirements
    give way, so they bound nothing), for histories that call no tool of ``avoid``."""

    def __init__(
        self,
        system: System,
        goal: str,
        bounds: Callable[[Component, str], Distances],
        avoid: frozenset[str] = frozenset(),
    ) -> None:
        self.goal, self.avoid = goal, avoid
        self._kept = [(i, c) for i, c in enumerate(system.components) if not c.requirement.yielding]
        self._bounds = bounds
        # A component that never keeps ``goal`` closed bounds nothing: left out.
        self._own = [
            (i, dist.steps, list(dist.calls.items()))
            for i, c in self._kept
            if any((dist := bounds(c, goal)).steps) or dist.calls
        ]
        self._closing: dict[str, list[_Closer]] = {}

    def bound(self, state: State) -> int | None:
        """A lower bound on the steps from ``state`` to one where ``goal`` is allowed (the
        largest component's own distance, and the calls of each tool the components need,
        added up over the tools), or None when some component never opens it again, or only
        after calls of a tool to avoid."""
        found = self.least(state)
        if found is None:
            return None
        steps, calls = found
        return max(steps, sum(calls.values()))

    def least(self, state: State) -> tuple[int, dict[str, int]] | None:
        """What ``bound`` adds up: the largest component's own distance from ``state``, and
        per tool some component needs called, the most calls of it one needs (every history
        from ``state`` to ``goal`` makes at least that many); None as ``bound``."""
        steps = 0
        calls: dict[str, int] = {}
        for i, own_steps, own_calls in self._own:
            view = state[i]
            least = own_steps[view]
            if least >= UNREACHABLE:
                return None
            if least > steps:
                steps = least
            for tool, table in own_calls:
                needs = table[view]
                if needs and needs > calls.get(tool, 0):
                    if tool in self.avoid:
                        return None
                    calls[tool] = needs
        return steps, calls

    def least_calls(self, state: State, needed: frozenset[str]) -> int | None:
        """A lower bound on the calls from ``state`` to ``goal``: calls of different tools
        are different steps, so each tool at least as often as a component needs it called,
        and once each tool of ``needed`` (tools every such history calls), added up over the
        tools, or the largest component's own distance where that is more; None as
        ``bound``."""
        found = self.least(state)
        if found is None:
            return None
        return max(found[0], sum(self._each(found[1], needed).values()))

    def calls(self, state: State, needed: frozenset[str]) -> dict[str, int] | None:
        """What ``least_calls`` adds up: per tool, the fewest calls of it every history
        from ``state`` to ``goal`` makes (as often as a component needs it called, once at
        least for a tool of ``needed``); None as ``bound``."""
        found = self.least(state)
        return None if found is None else self._each(found[1], needed)

    def _each(self, calls: dict[str, int], needed: frozenset[str]) -> dict[str, int]:
        """``calls`` (a component's most calls needed, per tool) with once at least each
        tool of ``needed`` but the goal."""
        each = {t: calls.get(t, 0) or 1 for t in needed if t != self.goal}
        each.update((t, n) for t, n in calls.items() if t not in needed and n > 0)
        return each

    def guide(self, state: State) -> tuple[int, frozenset[str]]:
        """How far ``goal`` looks from ``state``, and the *helpful* tools: over the
        components that keep it closed, their own steps plus, for every tool they need
        called, how far that tool looks (a cycle counts 0); the helpful tools are the
        needed ones that no component keeps closed now. Not a lower bound (it adds what
        may be shared): it orders a search along chains of prerequisites across components,
        which the bound does not see ("`c` only after `b`", "`b` only after `a`": `c` looks
        2 away, and `a` helps)."""
        memo: dict[str, int] = {}
        helpful: set[str] = set()
        far = self._cost(self.goal, state, memo, set(), helpful)
        return far, frozenset(helpful)

    def _cost(
        self, tool: str, state: State, memo: dict[str, int], visiting: set[str], helpful: set[str]
    ) -> int:
        """How far ``tool`` looks from ``state`` (see ``guide``). A method, not a nested
        function: a closure that calls itself is a reference cycle, which would keep the
        caller's BDD manager (through ``bounds``) for the cyclic collector to free in any
        order."""
        found = memo.get(tool)
        if found is not None:
            return found
        if tool in self.avoid:
            return UNREACHABLE
        if tool in visiting:
            return 0
        visiting.add(tool)
        total = 0
        for i, steps, needs in self._closers(tool):
            view = state[i]
            least = steps[view]
            if least == 0:
                continue
            for t, table in needs:
                if table[view] > 0:
                    further = self._cost(t, state, memo, visiting, helpful)
                    if further == 0:
                        helpful.add(t)
                    total += further
            total = min(UNREACHABLE, total + least)
        visiting.discard(tool)
        memo[tool] = total
        return total

    def _closers(self, tool: str) -> list[_Closer]:
        """The components that keep ``tool`` closed in some view: each one's index, its
        steps to where it opens it, and the calls of other tools it needs (per tool, per
        view). Flat tuples, built once per tool: ``guide`` reads them some sixty times a
        state."""
        found = self._closing.get(tool)
        if found is None:
            found = self._closing[tool] = [
                (i, dist.steps, [(t, table) for t, table in dist.calls.items() if t != tool])
                for i, c in self._kept
                if any((dist := self._bounds(c, tool)).steps)
            ]
        return found


def seek(
    system: System,
    goal: str,
    bounds: Callable[[Component, str], Distances],
    *,
    limit: int,
    within: int | None = None,
    start: State | None = None,
    deadline: float | None = None,
    avoid: frozenset[str] = frozenset(),
) -> tuple[Event, ...] | None:
    """A history after which ``goal`` is allowed (``final_answer``: the run may stop),
    of at most ``within`` steps when given, or None when none was found among ``limit``
    decided states. The history starts at ``start`` (default: the initial state) and calls
    no tool of ``avoid``.
    ``bounds(component, goal)`` gives a component's relaxed distances (memoised by the
    caller). Deterministic: states in order of ``Estimates.guide``, then the shallower,
    then the one found first (tools in declared order, statuses ``ok``, ``error``,
    ``denied``); with ``within``, a state whose ``Estimates.bound`` leaves no room is
    dropped. Cost: at most ``limit`` decided states, each with its successors estimated;
    None as well once ``deadline`` (a ``time.monotonic()`` value) has passed, looked at every
    ``DEADLINE_EVERY`` states."""
    return _seek(system, goal, bounds, limit, within, start, deadline, avoid, rest=limit // 4)[0]


def seek_within(
    system: System,
    goal: str,
    bounds: Callable[[Component, str], Distances],
    *,
    limit: int,
    within: int,
    deadline: float | None = None,
) -> tuple[tuple[Event, ...] | None, bool]:
    """``seek`` from the initial state within ``within`` steps, its search over every step
    given all the states its first one left of ``limit``; and whether that search ran out
    of states before its limit (and before ``deadline``): it then met every state a
    history of at most ``within`` steps reaches, but those a lower bound showed too far
    from ``goal``, so no such history exists (a proof, where None alone proves nothing).
    Strict mode and components tabulated view by view only (the lower bounds' premise, and
    a step that stands for one call): else never True. Deterministic; cost as ``seek``'s."""
    found, none = _seek(
        system, goal, bounds, limit, within, None, deadline, frozenset(), rest=limit
    )
    return found, none and system.mode == "strict" and not system.skips


def _seek(
    system: System,
    goal: str,
    bounds: Callable[[Component, str], Distances],
    limit: int,
    within: int | None,
    start: State | None,
    deadline: float | None,
    avoid: frozenset[str],
    *,
    rest: int,
) -> tuple[tuple[Event, ...] | None, bool]:
    """``seek``'s two searches, the second over every step on at most ``rest`` states;
    and whether none exists (``seek_within``)."""
    estimates = Estimates(system, goal, bounds, avoid)
    origin = system.initial if start is None else start
    first = estimates.bound(origin)
    if first is None or (within is not None and first > within):
        return None, True
    found, left = _search(
        system, estimates, limit, within, origin, deadline, avoid, helpful_only=True
    )
    if found is not None or left <= 0:
        return found, False
    # The helpful steps led nowhere: every step, on a quarter of the budget at most for
    # ``seek`` (on the benchmark's policies this second search finds its rare histories
    # within a few dozen states, and costs most of the time of those it does not find).
    more = min(left, rest)
    found, left = _search(
        system, estimates, more, within, origin, deadline, avoid, helpful_only=False
    )
    return found, found is None and left > 0


def _search(
    system: System,
    estimates: Estimates,
    limit: int,
    within: int | None,
    start: State,
    deadline: float | None,
    avoid: frozenset[str],
    *,
    helpful_only: bool,
) -> tuple[tuple[Event, ...] | None, int]:
    """One best-first search of ``seek`` (its steps call no tool of ``avoid``), and the
    decisions left of ``limit``. With
    ``helpful_only``, a state whose helpful tools can be called steps only through them (a
    plateau of steps that change nothing the goal needs is where a best-first search gets
    lost); that search can run out of states, and the next one then takes every step."""
    goal = estimates.goal
    order = itertools.count()
    far, helpful = estimates.guide(start)
    frontier = [(far, 0, next(order), start, helpful)]
    came: dict[State, tuple[State, Event] | None] = {start: None}
    best = {start: 0}  # the fewest steps found to each state
    while limit > 0 and frontier:
        _, depth, _, state, helpful = heapq.heappop(frontier)
        if depth > best[state]:
            continue  # reached by a shorter history since
        limit -= 1
        if deadline is not None and limit % DEADLINE_EVERY == 0 and time.monotonic() > deadline:
            return None, 0
        outcomes = [decide(system, records) for records in system.deciding(state)]
        if any(allows(o, goal) for o in outcomes):
            return traced(came, state), limit
        passes = [o for o in outcomes if isinstance(o, Pass)]
        if within is not None and depth >= within:
            continue
        tools = {t for p in passes for t in p.allowed if t != FINAL_ANSWER and t not in avoid}
        if helpful_only:
            tools = (tools & helpful) or tools
        for tool in system.callable:
            if tool not in tools:
                continue
            for status in STATUSES:
                after = system.successor(state, (tool, status))
                known = best.get(after)
                # Without a budget any history will do; with one, a shorter history to a
                # state found before may be what leaves room to reach the goal in time.
                if known is not None and (within is None or known <= depth + 1):
                    continue
                least = estimates.bound(after)
                if least is None or (within is not None and depth + 1 + least > within):
                    continue
                came[after] = (state, (tool, status))
                best[after] = depth + 1
                far, helps = estimates.guide(after)
                heapq.heappush(frontier, (far, depth + 1, next(order), after, helps))
    return None, limit


def traced(came: dict[State, tuple[State, Event] | None], state: State) -> tuple[Event, ...]:
    """The history to ``state`` along ``came`` (each state's predecessor and step; None at
    the start)."""
    out: list[Event] = []
    step = came[state]
    while step is not None:
        state, event = step
        out.append(event)
        step = came[state]
    return tuple(reversed(out))


def searched(system: System, states: int) -> int:
    """``states`` for a system of at most ``SEEK_COMPONENTS`` components, proportionally
    fewer for a larger one (at least a tenth)."""
    size = len(system.components)
    return max(states // 10, states * SEEK_COMPONENTS // max(size, SEEK_COMPONENTS))
