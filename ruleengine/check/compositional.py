"""Verdicts without the reachable set: projections prove the "never"s, searches find the rest.

Where the reachable set is too large for either engine (random conditionals over 50 tools:
beyond 10¹⁰ states, whose diagrams grow past what CUDD handles within a minute), each
verdict can still be decided on its own:

* **A "never"** (no deadlock, no forced conflict or tie, a tool never allowed, a requirement
  never live) is a set of states that no reachable state is in. ``Projections`` gives an
  *over-approximation* of the reachable set: every component's views reachable in the
  relaxed product (``relaxed``: a tool is open unless the component itself denies it or
  hard-forces another; soft forces only narrow, so in strict mode every step of the system
  is a step of each component on its own), conjoined, and refined by the exact reachable
  pairs of two components under the same relaxation. Where the set does not meet the
  target, no reachable state does: a proof, for histories of any length.
* **A "sometimes"** (a tool allowed, a requirement live, ``final_answer`` within the
  budget) is shown by one real history: the breadth-first probe's states, then directed
  searches (``seek``, and ``toward`` for a set of states), every state decided by the
  runtime's reasoner.
* **A finding's shortest trace** comes only from the breadth-first probe, exact up to its
  ``depth_done``: a deadlock, conflict or tie first met there is the one both engines
  report. A ``no-finish`` is the first probe state (in breadth-first order) that some
  component alone shows cannot finish (``bounds``), when every state before it was shown
  to finish by a real history.

What stays undecided is named (``Analysis.undecided``) and makes the analysis incomplete;
a complete one gives the same verdicts as the engines (``states`` counts the states the
probe explored, not the reachable ones). It applies where the symbolic engine does (strict
mode, literal rules): it reads the encoding's pass diagrams.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ruleengine.check.analysis import Analysis, Witness, listed
from ruleengine.check.bounds import UNREACHABLE
from ruleengine.check.explicit import Outcome, _Explorer, allows, decide
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.seek import Estimates, seek, traced
from ruleengine.check.symbolic_encoding import EncodingBase
from ruleengine.check.symbolic_layers import _OutOfTime
from ruleengine.check.symbolic_verdicts import Verdicts, _conflict_kind, _forced_on, _has_tie
from ruleengine.check.system import Component, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.state import STATUSES

__all__ = ["Projections", "analyse_compositional", "toward"]

Node = Any
"""A BDD node of the encoding's manager."""

PROBE_STATES = 4096
"""States the breadth-first probe explores (its depth is exact)."""

REFINE_ROUNDS = 64
"""Rounds of adding pairs before a "never" is given up as undecided."""

PAIR_STATES = 5000
"""The most views a pair's relaxed product may reach (a larger pair is not added)."""

PAIR_BUDGET = 400
"""Pairs one question may compute (those computed before are free)."""

NARROW_NODES = 20_000
"""BDD nodes past which a question's states are given up as too large to narrow."""


SEEK_STATES = 2000
"""States a directed search decides before it gives up, for a system of at most
``SEEK_COMPONENTS`` components; fewer for a larger one (``_searched``)."""

SEEK_COMPONENTS = 100
"""Components up to which a search decides ``SEEK_STATES`` states: it keeps every state it
meets (some 150 per state decided at 50 tools), each a tuple of views, so a search's memory
grows with the components (at 400, 2,000 states took a gigabyte)."""

CUBES = 4
"""Target states ``toward`` tries to reach, one search each."""

LAYERS = 8
"""Breadth-first layers (of the encoding) searched for a finding's shortest witness..."""

LAYER_NODES = 50_000
"""... while the states they reached take at most this many BDD nodes."""

MANAGER_NODES = 2_000_000
"""BDD nodes the manager may hold before the steps back stop (a few hundred MiB)."""

FINISH_COMPONENTS = 200
"""Components up to which the steps back are tried: they build the encoding's transition
relations, which past that (400 requirements over 200 tools) take gigabytes."""

FINISH_ROUNDS = 16
"""Steps back from the states that may stop, to show that every state can finish."""

WITNESS_STATES = 2048
"""As the symbolic engine's: layers this small are searched as concrete states."""


class _Late(Exception):
    """The deadline passed."""


class Projections:
    """An over-approximation of the reachable states of ``system`` (strict mode, literal
    rules) over ``enc``'s current-state bits, refined on demand (see the module's
    docstring). ``never(where)`` is a proof that no reachable state is in ``where`` when it
    says True; False means only that the projections could not show it."""

    _kept: list[int]
    callable: frozenset[str]
    """The tools the relaxed product counts callable (a superset of the real ones)."""
    _open: dict[int, list[frozenset[str]]]
    _moving: dict[int, frozenset[str]]
    _keys: dict[tuple[int, str], tuple[int, int]]
    """Per component and tool (as asked): its class, and the views where the tool is open
    (a mask)."""
    _restricting: dict[int, frozenset[str]]
    _owner: dict[str, int]

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        start: State | None = None,
        *,
        like: Projections | None = None,
    ) -> None:
        self.system = system
        self.start = system.initial if start is None else start
        """The state whose runs it over-approximates (a reachable one: the tools the
        relaxed product counts callable from the initial state bound its runs too)."""
        self.enc = enc
        self.bdd = enc.bdd
        comps = system.components
        if like is not None:  # the same system's tables, from another start
            self._kept, self.callable, self._open = like._kept, like.callable, like._open
            self._moving, self._keys = like._moving, like._keys
            self._restricting, self._owner = like._restricting, like._owner
        else:
            self._kept = [i for i, c in enumerate(comps) if not c.requirement.yielding]
            self.callable = Relaxed(comps, system.tools).callable()
            self._open = {i: self._open_at(comps[i]) for i in self._kept}
            self._moving = {i: self._moving_tools(comps[i]) for i in self._kept}
            self._keys = {}
            self._restricting = {i: self._restricted_tools(i) for i in self._kept}
            self._owner = {b: i for i, c in enumerate(comps) for b in enc.bits[id(c)]}
        self.views: dict[int, frozenset[int]] = {}
        """Per component (not yielding), the views it reaches on its own."""
        self.reached = self.bdd.true
        """The states whose every component is at a view it reaches on its own (the pairs a
        refinement adds are kept apart: ``never`` conjoins only those a question reads)."""
        for i in self._kept:
            found = self.views[i] = frozenset(v for (v,) in self._reach((i,)))
            self.reached &= self._set((i,), ((v,) for v in found))
        self._pairs: dict[tuple[int, int], Node | None] = {}
        self._added: dict[tuple[int, int], Node] = {}
        """The pairs a refinement needed, kept for later questions."""

    def at(self, state: State) -> Projections:
        """The same over-approximation for the runs from ``state`` (a reachable one),
        sharing this one's tables."""
        return Projections(self.system, self.enc, state, like=self)

    def _key(self, i: int, tool: str) -> tuple[int, int]:
        key = self._keys.get((i, tool))
        if key is None:
            opens = self._open[i]
            mask = sum(1 << v for v, here in enumerate(opens) if tool in here)
            key = self._keys[(i, tool)] = (self.system.components[i].classes[tool], mask)
        return key

    def _moving_tools(self, comp: Component) -> frozenset[str]:
        return frozenset(
            t
            for t in self.callable
            if any(not comp.still[comp.classes[t] * 3 + s] for s in range(3))
        )

    def _restricted_tools(self, i: int) -> frozenset[str]:
        """The callable tools component ``i`` keeps closed at some view."""
        opens = self._open[i]
        always = frozenset.intersection(*opens) if opens else self.callable
        return self.callable - always

    def interact(self, i: int, j: int) -> bool:
        """Whether the pair's relaxed product can say more than the two alone: a tool
        moves both, or one keeps closed somewhere a tool that moves the other. Otherwise
        each moves as if the other were not there, and their pair is the product of what
        each reaches."""
        mi, mj = self._moving[i], self._moving[j]
        return bool(mi & (mj | self._restricting[j]) or mj & self._restricting[i])

    def _open_at(self, comp: Component) -> list[frozenset[str]]:
        """Per view, the tools open to ``comp`` on its own (among the callable ones)."""
        out = []
        for view in range(len(comp.views)):
            open_ = self.callable - comp.denied(view)
            forced = comp.hard_forced(view)
            out.append(open_ & forced if forced else open_)
        return out

    def _reach(self, members: tuple[int, ...]) -> set[tuple[int, ...]]:
        """The tuples of views of ``members`` their relaxed product reaches from the start
        (``_TooLarge`` past ``PAIR_STATES``). Tools that every member moves alike and
        leaves open at the same views are one step: one of them stands for all."""
        comps = [self.system.components[i] for i in members]
        steps: dict[
            tuple[tuple[int, int], ...], tuple[list[tuple[tuple[int, ...], ...]], tuple[int, ...]]
        ] = {}
        moving: set[str] = set().union(*(self._moving[i] for i in members))
        for tool in sorted(moving):
            key = tuple(self._key(i, tool) for i in members)
            if key not in steps:
                first = [c.classes[tool] * 3 for c in comps]
                steps[key] = (
                    [
                        tuple(c.moves[t + s] for c, t in zip(comps, first, strict=True))
                        for s in range(3)
                    ],
                    tuple(k[1] for k in key),
                )
        start = tuple(self.start[i] for i in members)
        seen = {start}
        todo = deque([start])
        while todo:
            views = todo.popleft()
            for moves, masks in steps.values():
                if not all(m >> v & 1 for m, v in zip(masks, views, strict=True)):
                    continue
                for moved in moves:
                    after = tuple(t[v] for t, v in zip(moved, views, strict=True))
                    if after not in seen:
                        seen.add(after)
                        todo.append(after)
                        if len(seen) > PAIR_STATES:
                            raise _TooLarge
        return seen

    def _set(
        self, members: tuple[int, ...], tuples: Iterator[tuple[int, ...]] | set[tuple[int, ...]]
    ) -> Node:
        enc, comps = self.enc, self.system.components
        out = self.bdd.false
        for views in tuples:
            cube = self.bdd.true
            for i, v in zip(members, views, strict=True):
                cube &= enc.cube(enc.bits[id(comps[i])], v)
            out |= cube
        return out

    def pair(self, i: int, j: int) -> Node | None:
        """The relaxed product of components ``i`` and ``j``'s reachable views (memoised;
        None when too large to be worth it)."""
        key = (i, j) if i < j else (j, i)
        if key not in self._pairs:
            try:
                self._pairs[key] = self._set(key, self._reach(key))
            except _TooLarge:
                self._pairs[key] = None
        return self._pairs[key]

    def never(self, where: Node, deadline: float | None = None) -> bool:
        """Whether no reachable state is in ``where`` (a set over current-state bits, check
        bits quantified), as far as the projections show: True is a proof."""
        return bool(self.narrowed(where, deadline) == self.bdd.false)

    def narrowed(self, where: Node, deadline: float | None = None) -> Node:
        """The states of ``where`` the projections could not rule out (false: a proof that
        no reachable state is in ``where``; else a superset of those that are). ``where`` is
        conjoined with each component's views, then with the pairs added so far among the
        components it reads; each round picks a state left, adds the pairs of those
        components that exclude it, and gives up when none does (or at ``deadline``). The
        pairs stay for later questions."""
        bdd, enc, comps = self.bdd, self.enc, self.system.components
        if where.dag_size > NARROW_NODES:
            return where  # too large a question to ask at all
        u = where & self.reached
        used: set[tuple[int, int]] = set()
        budget = PAIR_BUDGET
        for _ in range(REFINE_ROUNDS):
            if u == bdd.false or u.dag_size > NARROW_NODES:
                return u
            if deadline is not None and time.monotonic() > deadline:
                return u
            members = self._members(u)
            fresh = [
                pair
                for pair in itertools.combinations(members, 2)
                if pair in self._added and pair not in used
            ]
            if fresh:
                for pair in fresh:
                    used.add(pair)
                    u &= self._added[pair]
                    if u == bdd.false:
                        return u
                continue
            picked = bdd.pick(u)
            assert picked is not None
            values = {
                b: bool(picked.get(b, False)) for i in members for b in enc.bits[id(comps[i])]
            }
            added = False
            # Components away from their start view first: their pairs exclude most.
            moved = [i for i in members if _view(enc, comps[i], values) != self.start[i]]
            rest = [i for i in members if i not in moved]
            ordered = [*itertools.combinations(moved, 2), *itertools.product(moved, rest)]
            ordered += itertools.combinations(rest, 2)
            for a, b in ordered:
                pair = (a, b) if a < b else (b, a)
                if pair in self._added or not self.interact(*pair):
                    continue
                if pair not in self._pairs:
                    budget -= 1
                    if budget < 0 or (deadline is not None and time.monotonic() > deadline):
                        return u
                found = self.pair(*pair)
                if found is not None and not enc.contains(found, values):
                    self._added[pair] = found
                    used.add(pair)
                    u &= found
                    added = True
            if not added:
                return u
        return u

    def _members(self, u: Node) -> list[int]:
        """The components (not yielding) whose bits ``u`` reads, in index order."""
        found = {self._owner[b] for b in self.bdd.support(u) if b in self._owner}
        return sorted(i for i in found if i in self.views)


def _view(enc: EncodingBase, comp: Component, values: dict[str, bool]) -> int:
    """The view of ``comp`` that ``values`` (bits by name) spell."""
    return sum(1 << k for k, b in enumerate(enc.bits[id(comp)]) if values.get(b, False))


class _TooLarge(Exception):
    """A pair's relaxed product passed ``PAIR_STATES``."""


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
        wanted, cube = _nearest(enc, comps, left)
        found = _best_first(system, wanted, goal, limit, deadline)
        if found is not None:
            return found
        left &= ~cube
    return None


def _nearest(
    enc: EncodingBase, comps: Sequence[Component], states: Node
) -> tuple[dict[int, int], Node]:
    """A state of ``states`` (nonempty) that keeps as many components as it can at their
    first view (greedily, in component order), as the view each component it reads must
    be at, and that state's cube. Such a state asks a search to move few components."""
    bdd = enc.bdd
    owner = {b: i for i, c in enumerate(comps) for b in enc.bits[id(c)]}
    support = sorted({owner[b] for b in bdd.support(states) if b in owner})
    for i in support:
        first = enc.cube(enc.bits[id(comps[i])], 0)
        if states & first != bdd.false:
            states &= first
    picked = bdd.pick(states)
    assert picked is not None
    wanted = {}
    for i in support:
        bits = enc.bits[id(comps[i])]
        wanted[i] = sum(1 << k for k, b in enumerate(bits) if picked.get(b, False))
    cube = bdd.true
    for i, view in wanted.items():
        cube &= enc.cube(enc.bits[id(comps[i])], view)
    return wanted, cube


def _distances_to(comp: Component, view: int) -> list[int]:
    """Per view of ``comp``, the fewest of its own moves (any tool, any status) to ``view``
    (``UNREACHABLE`` where none leads)."""
    back: list[set[int]] = [set() for _ in comp.views]
    for table in comp.moves:
        for v, w in enumerate(table):
            if v != w:
                back[w].add(v)
    dist = [UNREACHABLE] * len(comp.views)
    todo = deque([view])
    dist[view] = 0
    while todo:
        w = todo.popleft()
        for v in back[w]:
            if dist[v] == UNREACHABLE:
                dist[v] = dist[w] + 1
                todo.append(v)
    return dist


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
            raise _Late
        if goal(state):
            return traced(came, state)
        tools: set[str] = set()
        for records, _ in system.variants(state):
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
class _Finishing:
    """Histories known to reach a state that may stop, tried again from other states
    before a new search (replaying one costs a few cached decisions)."""

    system: System
    enc: EncodingBase
    paths: list[tuple[Event, ...]] = field(default_factory=list)

    def can_finish(self, state: State) -> bool | None:
        """True when a real history from ``state`` reaches a state that may stop; None
        when none was found."""
        for path in reversed(self.paths[-8:]):
            for begin in range(len(path) + 1):
                if _replays(self.system, state, path[begin:]):
                    return True
        found = seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=_searched(self.system, SEEK_STATES),
            start=state,
        )
        if found is None:
            return None
        self.paths.append(found)
        return True


def _replays(system: System, state: State, path: Sequence[Event]) -> bool:
    """Whether ``path`` can be taken from ``state`` (each step allowed when taken, under
    some check values) and ends where the run may stop."""
    for event in (*path, None):
        outcomes = [decide(system, records) for records, _ in system.variants(state)]
        if event is None:
            return any(allows(o, FINAL_ANSWER) for o in outcomes)
        if not any(allows(o, event[0]) for o in outcomes):
            return False
        state = system.successor(state, event)
    return False  # pragma: no cover - the loop returns at its last item


def analyse_compositional(
    system: System,
    enc: EncodingBase,
    *,
    budget: int,
    deadline: float | None = None,
    probe_states: int | None = None,
    interrupt: Callable[[], bool] | None = None,
) -> Analysis:
    """The verdicts of ``system`` decided one by one (see the module's docstring): those
    decided are named in ``Analysis.decided``, the analysis is complete when every one is.
    ``budget``: the steps before ``final_answer`` that ``max_iterations`` allows. A probe
    that explores every state gives the explicit engine's own analysis. Past ``deadline``
    it returns what it decided so far, and so it does once ``interrupt`` (asked between
    steps) says to stop. Deterministic but for where those cut it short."""
    probe_limit = PROBE_STATES if probe_states is None else probe_states
    explorer = _Explorer(system, probe_limit, deadline, True)
    probe = explorer.run()
    if probe.complete or probe.reason is None or "time limit" in probe.reason:
        return probe
    decider = _Decider(system, enc, explorer, probe, budget, deadline, interrupt)
    result = decider.result
    try:
        decider.run()
    except _Late:
        cut = True
    else:
        cut = False
    left = decider.undecided()
    result.complete = not left
    result.undecided = tuple(left)
    if left:
        why = "the time limit ran out" if cut else "the rest is out of its reach"
        result.reason = (
            f"verdicts decided one by one, {len(left)} left undecided ({why}): {listed(left)}"
        )
    return result


class _Decider:
    """One compositional analysis (``analyse_compositional``): ``result`` fills as each
    verdict is decided, and ``result.decided`` names each one."""

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        explorer: _Explorer,
        probe: Analysis,
        budget: int,
        deadline: float | None,
        interrupt: Callable[[], bool] | None = None,
    ) -> None:
        self.system, self.enc, self.explorer = system, enc, explorer
        self.budget, self.deadline, self.interrupt = budget, deadline, interrupt
        self.verdicts = v = Verdicts(
            system, enc, None, deadline, None, budget, witness_states=WITNESS_STATES
        )
        v.start = enc.cube([b for c in system.components for b in enc.bits[id(c)]], 0)
        v.layers = [v.start]
        v.layered = v.start
        self.projections = Projections(system, enc)
        self.paths: list[tuple[Event, ...]] = []
        """Histories found so far (to tools, to a finish), for the liveness searches."""
        self.result = Analysis(
            states=probe.states,
            complete=False,
            reason="the time limit ran out",
            depth_done=probe.depth_done,
            depends_on_checks=probe.depends_on_checks,
            deadlock=probe.deadlock,
            forced_conflicts=dict(probe.forced_conflicts),
            tie=probe.tie,
            finish_depth=probe.finish_depth,
            allowed_tools=set(probe.allowed_tools),
            live=set(probe.live),
            firsts=dict(probe.firsts),
            decided=set(),
        )
        p = v.pass_
        self.hard = [t for t in enc.tools if p.hard[t] != enc.bdd.false]
        """The tools some state hard-forces (the others never conflict by force)."""

    def keys(self) -> list[str]:
        """Every verdict an analysis decides, as ``Analysis.decided`` names them."""
        system = self.system
        return [
            "deadlock",
            *(f"forced-conflict:{t}" for t in self.enc.tools),
            "forced-tie",
            "budget",
            "no-finish",
            *(f"tool:{t}" for t in system.callable),
            *(f"live:{name}" for name in sorted({c.requirement.name for c in system.components})),
        ]

    def undecided(self) -> list[str]:
        decided = self.result.decided
        assert decided is not None
        return [k for k in self.keys() if k not in decided]

    def _never(self, where: Node) -> bool:
        self._on_time()
        return self.projections.never(where, self.deadline)

    def _on_time(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _Late
        if self.interrupt is not None and self.interrupt():
            raise _Late

    def run(self) -> None:
        result = self.result
        decided = result.decided
        assert decided is not None
        p, some = self.verdicts.pass_, self.verdicts.some
        inconsistent = ~p.consistent
        if result.deadlock is None:
            result.deadlock = self._first(
                some(inconsistent & p.stuck), _conflict_kind("deadlock"), "deadlock"
            )
        else:
            decided.add("deadlock")
        forcing = inconsistent & ~p.stuck
        for t in self.enc.tools:
            key = f"forced-conflict:{t}"
            if t in result.forced_conflicts or t not in self.hard:
                decided.add(key)
                continue
            target = some(forcing & p.hard[t])
            found = self._first(target, _forced_on(t), key)
            if found is not None:
                result.forced_conflicts[t] = found
        if result.tie is None:
            result.tie = self._first(some(p.tie), _has_tie, "forced-tie")
        else:
            decided.add("forced-tie")
        self._tools()
        self._finish()
        self._no_finish()
        self._live()

    def _first(self, target: Node, finding: Callable[[Outcome], bool], key: str) -> Witness | None:
        """The shortest witness of a finding the probe did not meet (the engines' own:
        breadth-first layers of the encoding, while they stay small), or None; ``key`` is
        decided when a witness is found or no reachable state has the finding (shown by the
        projections or by layers that reach every state)."""
        decided = self.result.decided
        assert decided is not None
        if self._never(target):
            decided.add(key)
            return None
        v, bdd = self.verdicts, self.enc.bdd
        try:
            for d in range(LAYERS + 1):
                self._on_time()
                if len(bdd) > MANAGER_NODES:
                    break
                layer = v._layer(d)
                if layer is None:
                    decided.add(key)  # every reachable state is in the layers: never
                    return None
                if layer & target != bdd.false:
                    decided.add(key)
                    return v._witness(target, finding, d)
                if v.layered.dag_size > LAYER_NODES:
                    break
        except _OutOfTime:
            raise _Late from None
        return None

    def _tools(self) -> None:
        result = self.result
        decided = result.decided
        assert decided is not None
        p, some = self.verdicts.pass_, self.verdicts.some
        for tool in self.system.callable:
            key = f"tool:{tool}"
            if tool in result.allowed_tools or self._never(some(p.allowed[tool])):
                decided.add(key)
                continue
            found = seek(
                self.system, tool, self.enc.distances, limit=_searched(self.system, SEEK_STATES)
            )
            if found is not None:
                decided.add(key)
                result.allowed_tools.add(tool)
                result.firsts.setdefault(f"tool:{tool}", found)

    def _finish(self) -> None:
        """``final_answer``: within the budget by some history, or never (projections), or
        first allowed at a depth the probe reached."""
        result = self.result
        decided = result.decided
        assert decided is not None
        if result.finish_depth is not None:
            decided.add("budget")  # the probe met it first: exact
            return
        p, some = self.verdicts.pass_, self.verdicts.some
        self._on_time()
        found = seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=_searched(self.system, SEEK_STATES),
        )
        if found is not None:
            self.paths.append(found)
            if len(found) > self.budget:
                found = seek(
                    self.system,
                    FINAL_ANSWER,
                    self.enc.distances,
                    limit=_searched(self.system, SEEK_STATES),
                    within=self.budget,
                )
        if found is not None:
            decided.add("budget")
            result.finishes_within = len(found)
            result.allowed_tools.add(FINAL_ANSWER)
            result.firsts.setdefault("finish", found)
        elif self._never(some(p.can_stop)):
            decided.add("budget")  # never: ``finish_depth`` stays None
        else:
            # Undecided; but the components' relaxed distances bound it from below.
            least = Estimates(self.system, FINAL_ANSWER, self.enc.distances).bound(
                self.system.initial
            )
            if least is None:
                decided.add("budget")  # some component alone never lets the run stop
            else:
                result.finish_after = max(result.finish_after, least - 1)

    def _no_finish(self) -> None:
        """The first probe state, breadth-first, from which no history finishes, when
        every state before it is shown to finish (the engines' own witness); else, none
        at all where the projections show that every reachable state that has a pass can
        finish within a few steps (``_finishing_soon``)."""
        if not self._first_stuck() and len(self.system.components) <= FINISH_COMPONENTS:
            stuck = self._deciding & ~self._finishing_soon()
            if stuck == self.enc.bdd.false or self._never(stuck):
                decided = self.result.decided
                assert decided is not None
                decided.add("no-finish")

    def _first_stuck(self) -> bool:
        """Look for the witness in the probe (see ``_no_finish``): whether it decided."""
        result, explorer, system = self.result, self.explorer, self.system
        decided = result.decided
        assert decided is not None
        kept = [
            (i, self.enc.distances(c))
            for i, c in enumerate(system.components)
            if not c.requirement.yielding
        ]
        stop = self.verdicts.some(self.verdicts.pass_.can_stop)
        finishing = _Finishing(system, self.enc)
        for i, node in enumerate(explorer.nodes):
            if i not in explorer.deciding:
                return False  # not expanded: the probe stopped before it
            if not explorer.deciding[i] or explorer.finishing[i]:
                continue
            self._on_time()
            stuck = any(d.steps[node.state[k]] >= UNREACHABLE for k, d in kept)
            if not stuck:
                if finishing.can_finish(node.state):
                    continue
                stuck = self.projections.at(node.state).never(stop, self.deadline)
            if not stuck:
                return False  # neither shown: undecided
            result.no_finish = explorer._witness(node, (), not explorer.always_deciding[i])
            decided.add("no-finish")
            return True
        return False

    @property
    def _deciding(self) -> Node:
        """The states with a pass under some check values."""
        return self.verdicts.some(self.verdicts.pass_.consistent)

    def _finishing_soon(self) -> Node:
        """States (reachable or not) from which a real path of at most ``FINISH_ROUNDS``
        steps, through states with a pass, reaches one that may stop: preimages of the
        encoding's steps, cluster by cluster, while the set stays under ``LAYER_NODES`` and
        the manager under ``MANAGER_NODES`` (a step that moves nothing adds nothing)."""
        v, bdd = self.verdicts, self.enc.bdd
        deciding = self._deciding
        soon = deciding & v.some(v.pass_.can_stop)
        try:
            for _ in range(FINISH_ROUNDS):
                more = soon
                if len(bdd) > MANAGER_NODES:
                    return soon
                for cluster in v.clusters:
                    self._on_time()
                    if more.dag_size > LAYER_NODES:
                        return soon
                    if deciding & cluster.guard != bdd.false:
                        more |= deciding & v._preimage(soon, cluster)
                if more == soon:
                    break
                soon = more
        except _OutOfTime:
            raise _Late from None
        return soon

    def _live(self) -> None:
        """Requirements shown live by a probe state, by a state along (or a variation of)
        a history found so far, or by a directed search; or never live by the projections."""
        result = self.result
        decided = result.decided
        assert decided is not None
        system, enc, comps = self.system, self.enc, self.system.components
        names = sorted({c.requirement.name for c in comps})
        watched: dict[str, set[str]] = {}
        for c in comps:
            watched.setdefault(c.requirement.name, set()).update(c.watched)
        paths = set(self.paths)
        for key, path in result.firsts.items():
            if key.startswith("tool:") and key[5:] != FINAL_ANSWER:
                paths.update((*path, (key[5:], status)) for status in STATUSES)
            else:
                paths.add(path)
        ordered = sorted(paths, key=lambda p: (-len(p), p))
        for name in names:
            key = f"live:{name}"
            if name in result.live:
                decided.add(key)
                continue
            self._on_time()
            where = self.verdicts._live_at(name)
            self._on_time()
            left = self.projections.narrowed(where, self.deadline)
            if left == self.enc.bdd.false:
                decided.add(key)
                continue

            def goal(state: State, where: Node = where) -> bool:
                return bool(enc.holds_at(where, comps, state))

            found = _along(system, ordered, watched[name], goal)
            if found is None:
                found = toward(
                    system,
                    enc,
                    left,
                    goal=goal,
                    limit=_searched(system, LIVE_STATES),
                    deadline=self.deadline,
                )
            if found is not None:
                decided.add(key)
                result.live.add(name)
                result.firsts.setdefault(key, found)


LIVE_STATES = 500
"""States a directed search for a live requirement decides (``_searched``)."""


def _searched(system: System, states: int) -> int:
    """``states`` for a system of at most ``SEEK_COMPONENTS`` components, proportionally
    fewer for a larger one (at least a tenth)."""
    size = len(system.components)
    return max(states // 10, states * SEEK_COMPONENTS // max(size, SEEK_COMPONENTS))


def _along(
    system: System,
    paths: Sequence[tuple[Event, ...]],
    watched: set[str],
    goal: Any,
) -> tuple[Event, ...] | None:
    """A history, a prefix of one of ``paths`` or of one with every call of a tool of
    ``watched`` left out, taken as far as each step is allowed, whose end ``goal``
    confirms; or None. (A requirement waiting for a tool is live where everything else is
    done and that tool was never called: a finishing history without its calls.)"""
    for path in paths:
        for variant in (tuple(e for e in path if e[0] not in watched), path):
            state = system.initial
            taken: list[Event] = []
            for event in (*variant, None):
                if goal(state):
                    return tuple(taken)
                if event is None:
                    break
                outcomes = [decide(system, records) for records, _ in system.variants(state)]
                if not any(allows(o, event[0]) for o in outcomes):
                    break
                taken.append(event)
                state = system.successor(state, event)
    return None
