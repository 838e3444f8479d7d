"""Real histories to a goal: directed searches over a system's states, every state decided
by the runtime's reasoner (each history they return replays). They prove nothing when they
fail; ``compositional`` uses them to show the "sometimes" verdicts."""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ruleengine.check._bdd import pick
from ruleengine.check.bounds import UNREACHABLE, shortest
from ruleengine.check.explicit import Outcome, allows, decide
from ruleengine.check.seek import SEEK_STATES, searched, seek, traced
from ruleengine.check.symbolic_encoding import EncodingBase
from ruleengine.check.system import Component, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass

__all__ = ["Finishing", "Late", "Outcomes", "along", "shortened", "toward"]

Node = Any
"""A BDD node of the encoding's manager."""

CUBES = 4
"""Target states ``toward`` tries to reach, one search each."""

LIVE_STATES = 500
"""States a directed search for a live requirement decides (``seek.searched``)."""


class Late(Exception):
    """A search's deadline passed."""


def toward(
    system: System,
    enc: EncodingBase,
    target: Node,
    *,
    goal: Any,
    limit: int = SEEK_STATES,
    deadline: float | None = None,
) -> tuple[Event, ...] | None:
    """A history to a state that ``goal`` (a test of a state) confirms, or None when none
    was found. Best-first over real states (each decided by the reasoner; only allowed
    steps), towards up to ``CUBES`` states of ``target`` (a set over current-state bits,
    ``Projections.narrowed``'s): a state's distance is the sum, over the components
    the picked state fixes, of the steps each needs on its own to reach its view there
    (its move table, every tool and status). Deterministic; at most ``limit`` decided
    states per picked state. Proves nothing when it fails."""
    bdd, comps = enc.bdd, system.components
    left = target
    for _ in range(CUBES):
        if left == bdd.false:
            return None
        nearest = _nearest(enc, comps, left)
        if nearest is None:
            return None
        wanted, cube = nearest
        found = _best_first(system, wanted, goal, limit, deadline)
        if found is not None:
            return found
        left &= ~cube
    return None


def _nearest(
    enc: EncodingBase, comps: Sequence[Component], states: Node
) -> tuple[dict[int, int], Node] | None:
    """A state of ``states`` (nonempty) that keeps as many components as it can at their
    first view (greedily, in component order), as the view each component it reads must
    be at, and that state's cube. Such a state asks a search to move few components. None
    where ``states`` holds no state whose components are all at views they have (a set
    the projections gave back unnarrowed may hold bits that spell none)."""
    bdd = enc.bdd
    owner = {b: i for i, c in enumerate(comps) for b in enc.bits[id(c)]}
    support = sorted({owner[b] for b in bdd.support(states) if b in owner})
    states &= enc.views([comps[i] for i in support])
    if states == bdd.false:
        return None
    for i in support:
        first = enc.cube(enc.bits[id(comps[i])], 0)
        if states & first != bdd.false:
            states &= first
    picked = pick(bdd, states)
    assert picked is not None
    wanted = {i: enc.view(comps[i], picked) for i in support}
    cube = bdd.true
    for i, view in wanted.items():
        cube &= enc.cube(enc.bits[id(comps[i])], view)
    return wanted, cube


def _distances_to(comp: Component, view: int) -> list[int]:
    """Per view of ``comp``, the fewest of its own moves (any tool, any status) to ``view``
    (``UNREACHABLE`` where none leads)."""
    back: list[list[tuple[int, str | None]]] = [[] for _ in comp.views]
    for table in comp.moves:
        for v, w in enumerate(table):
            if v != w:
                back[w].append((v, None))
    return list(shortest(len(comp.views), [view], back, None))


def _best_first(
    system: System,
    wanted: dict[int, int],
    goal: Any,
    limit: int,
    deadline: float | None,
) -> tuple[Event, ...] | None:
    tables = {i: _distances_to(system.components[i], view) for i, view in wanted.items()}

    def far(state: State) -> int:
        return min(UNREACHABLE, sum(dist[state[i]] for i, dist in tables.items()))

    start = system.initial
    order = itertools.count()
    frontier = [(far(start), 0, next(order), start)]
    came: dict[State, tuple[State, Event] | None] = {start: None}
    moved: dict[Event, list[tuple[int, list[int]]]] = {}
    while limit > 0 and frontier:
        h, depth, _, state = heapq.heappop(frontier)
        if h >= UNREACHABLE:
            return None
        limit -= 1
        if limit % 64 == 0 and deadline is not None and time.monotonic() > deadline:
            raise Late
        if goal(state):
            return traced(came, state)
        tools: set[str] = set()
        for records in system.deciding(state):
            outcome = decide(system, records)
            if isinstance(outcome, Pass):
                tools |= {t for t in outcome.allowed if t != FINAL_ANSWER}
        for after, event in system.steps_from(state, tools).items():
            if after not in came:
                came[after] = (state, event)
                changes = moved.get(event)
                if changes is None:
                    changes = moved[event] = [
                        (i, tables[i]) for i in system.moved(event) if i in tables
                    ]
                # Only the components the step moved change their distance.
                further = h + sum(d[after[i]] - d[state[i]] for i, d in changes)
                heapq.heappush(frontier, (min(UNREACHABLE, further), depth + 1, next(order), after))
    return None


@dataclass(slots=True)
class Finishing:
    """Histories known to reach a state that may stop, tried again from other states
    before a new search (replaying one costs a few cached decisions). The states a
    replay passed through on its way to a stop are remembered, and a replay that meets
    one has arrived; so are the steps open at each state replayed through, up to
    ``REMEMBERED_STATES`` of each (past that, those of the next ones are not kept)."""

    system: System
    enc: EncodingBase
    paths: list[tuple[Event, ...]] = field(default_factory=list)
    finishing: set[State] = field(default_factory=set)
    """States from which a real history was shown to reach one that may stop."""
    opens: dict[State, tuple[frozenset[str], bool]] = field(default_factory=dict)
    """Per state replayed through, the tools some check values allow and whether some
    let the run stop."""
    last: tuple[Event, ...] | None = None
    """The part of a known history that last showed a state can finish, tried first."""
    unfound: set[State] = field(default_factory=set)
    """States a search from which found no history (a search is not repeated)."""

    def can_finish(self, state: State, *, search: bool = True) -> bool | None:
        """True when a real history from ``state`` reaches a state that may stop; None
        when none was found (without ``search``, only the histories known are tried)."""
        if state in self.finishing:
            return True
        if self.last is not None and self._replays(state, self.last):
            return True  # the states asked in turn are often alike
        for path in reversed(self.paths[-8:]):
            for begin in range(len(path) + 1):
                if self._replays(state, path[begin:]):
                    self.last = path[begin:]
                    return True
        if not search or state in self.unfound:
            return None
        found = seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=searched(self.system, SEEK_STATES),
            start=state,
        )
        if found is None:
            self.unfound.add(state)
            return None
        self.paths.append(found)
        self._replays(state, found)  # remembers the states along it
        return True

    def _replays(self, state: State, path: Sequence[Event]) -> bool:
        """``_replays``, stopping early at a state known to finish, and remembering the
        states of a replay that arrives."""
        system, finishing = self.system, self.finishing
        passed: list[State] = []
        arrived = False
        for event in (*path, None):
            if state in finishing:
                arrived = True
                break
            allowed, stops = self._open(state)
            passed.append(state)
            if event is None:
                arrived = stops
                break
            if event[0] not in allowed:
                break
            state = system.successor(state, event)
        if arrived and len(finishing) < REMEMBERED_STATES:
            finishing.update(passed)
        return arrived

    def skipping(self, state: State, path: Sequence[Event]) -> tuple[Event, ...] | None:
        """The steps of ``path`` taken in its order from ``state``, each where it is
        allowed and left out where it is not, when the run may stop at their end (else
        None): a history another state found, followed by one that has made some of its
        calls already, or cannot make them all."""
        taken: list[Event] = []
        for event in path:
            allowed, _ = self._open(state)
            if event[0] in allowed:
                taken.append(event)
                state = self.system.successor(state, event)
        return tuple(taken) if self._open(state)[1] else None

    def _open(self, state: State) -> tuple[frozenset[str], bool]:
        """The tools some check values allow at ``state``, and whether some let the run
        stop there (remembered in ``opens``)."""
        known = self.opens.get(state)
        if known is None:
            tools: set[str] = set()
            stops = False
            for records in self.system.deciding(state):
                outcome = decide(self.system, records)
                if isinstance(outcome, Pass):
                    tools.update(outcome.allowed)
                    stops = stops or outcome.can_stop
            known = (frozenset(tools), stops)
            if len(self.opens) < REMEMBERED_STATES:
                self.opens[state] = known
        return known


REMEMBERED_STATES = 100_000
"""States ``Finishing`` remembers as finishing, and (apart) with their open steps: about a
kilobyte each at 100 requirements, so at most about 100 MB (`indep-forced-50-100-4` replays
through 130,000 states)."""


def _replays(system: System, state: State, path: Sequence[Event]) -> bool:
    """Whether ``path`` can be taken from ``state`` (each step allowed when taken, under
    some check values) and ends where the run may stop."""
    for event in (*path, None):
        outcomes = [decide(system, records) for records in system.deciding(state)]
        if event is None:
            return any(allows(o, FINAL_ANSWER) for o in outcomes)
        if not any(allows(o, event[0]) for o in outcomes):
            return False
        state = system.successor(state, event)
    return False  # pragma: no cover - the loop returns at its last item


def shortened(system: System, history: Sequence[Event]) -> tuple[Event, ...]:
    """``history`` (one that lets the run stop at its end) with steps left out while what
    is left still does: each step, from the last to the first, is dropped when the history
    without it replays and lets the run stop, and the pass is repeated until none is.
    Directed searches wander (a step that changes nothing the goal needs, a detour around
    a state that looked closer); this takes the detours out. Deterministic; cost: a replay
    per step tried, so at most ``len(history) ** 2`` decisions a pass (cached, mostly)."""
    best = tuple(history)
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(best))):
            fewer = best[:i] + best[i + 1 :]
            if _replays(system, system.initial, fewer):
                best, changed = fewer, True
    return best


def _failed(event: Event) -> Event:
    """The same call, failing."""
    return (event[0], "error")


class Outcomes:
    """The outcomes of deciding each state of one system (one per set of records the state
    may emit), remembered: ``along`` replays the same histories for every open
    requirement, so at 200 tools and 400 requirements the quick pass visited 299,000
    states, about 3,000 of them distinct, and deciding them again (the records, the
    reasoner's cached settlement) was three fifths of its time."""

    MOST_VIEWS = 4_000_000
    """The views of the states remembered at most, all states together (a state holds a
    view per component; 32 MB of them): past it, all are forgotten and remembering starts
    over. At 400 requirements, 10,000 states."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.most = max(1, self.MOST_VIEWS // max(1, len(system.components)))
        """The states remembered at most."""
        self._known: dict[State, list[Outcome]] = {}

    def __call__(self, state: State) -> list[Outcome]:
        found = self._known.get(state)
        if found is None:
            system = self.system
            found = [decide(system, records) for records in system.deciding(state)]
            if len(self._known) >= self.most:
                self._known.clear()
            self._known[state] = found
        return found


def along(
    system: System,
    paths: Sequence[tuple[Event, ...]],
    watched: set[str],
    goal: Any,
    outcomes: Outcomes | None = None,
) -> tuple[Event, ...] | None:
    """A history, a prefix of one of ``paths`` or of one with every call of a tool of
    ``watched`` left out, or failing, taken as far as each step is allowed (where the pass
    forces another tool instead, and after the last step, up to ``FORCED_STEPS`` calls of
    the forced tool first), whose end ``goal`` confirms; or None. (A requirement waiting
    for a tool is live where everything else is done and that tool was never called: a
    finishing history without its calls; or, where something needs that tool called, with
    its calls failing, which a count of successes does not count.) ``outcomes``: the
    system's outcomes remembered across calls (else decided afresh)."""
    decided = outcomes if outcomes is not None else Outcomes(system)
    for path in paths:
        left_out = tuple(e for e in path if e[0] not in watched)
        failing = tuple(_failed(e) if e[0] in watched else e for e in path)
        for variant in dict.fromkeys((left_out, failing, path)):
            state = system.initial
            taken: list[Event] = []
            at, in_a_row = 0, 0
            while True:
                if goal(state):
                    return tuple(taken)
                here = decided(state)
                event = variant[at] if at < len(variant) else None
                step: Event
                if event is not None and any(allows(o, event[0]) for o in here):
                    step, at, in_a_row = event, at + 1, 0
                else:
                    # Where the pass forces another tool (a step forced after each call, as
                    # in a ReAct loop), that call first, as the run would make it.
                    forced = _forced(here)
                    if forced is None or in_a_row >= FORCED_STEPS:
                        break
                    step, in_a_row = (forced, "ok"), in_a_row + 1
                taken.append(step)
                state = system.successor(state, step)
    return None


FORCED_STEPS = 2
"""Forced calls ``along`` makes in a row before a step of its history that is not
allowed, or after its last one (a tool forced after every other, as in a ReAct loop)."""


def _forced(outcomes: Sequence[Outcome]) -> str | None:
    """The tool every one of ``outcomes`` forces, if they are passes that agree on one
    (``final_answer`` aside: that ends the run)."""
    tools = {o.forced if isinstance(o, Pass) else None for o in outcomes}
    if len(tools) != 1:
        return None
    (tool,) = tools
    return None if tool == FINAL_ANSWER else tool
