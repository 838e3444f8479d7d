"""Sets of states, stepped: the events of a system grouped for the symbolic engine, images
and preimages, and breadth-first layers.

``Layers`` holds what one symbolic analysis has found so far (its pass, its layers, the
reachable set, the ``Analysis`` it fills in) and steps sets of states over the encoding:
events with the same effect on every component form a ``_Group`` (one relation, one
guard), groups alike form a ``_Cluster`` (one relational product), and ``image`` and
``preimage`` go one step forward or back through them. ``_layer`` computes the layers on
demand (``layers[d]``: the states first reached after ``d`` steps); ``_early``,
``_layers_within`` and ``_fits`` are the bounded searches by layers, and ``_states`` lists
the concrete states of a set. The verdicts read off these sets are ``symbolic_verdicts``';
the reachable-set search and the order of an analysis are ``symbolic``'s.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import cached_property

from ruleengine.check._bdd import and_exists as _and_exists
from ruleengine.check.analysis import Analysis
from ruleengine.check.progress import note as note_progress
from ruleengine.check.symbolic_encoding import EncodingBase, Node
from ruleengine.check.symbolic_priority import decided
from ruleengine.check.system import Component, Event, State, System
from ruleengine.state import STATUSES

__all__ = ["EARLY_LAYERS", "EARLY_NODES", "Layers"]

EARLY_LAYERS = 8
"""Breadth-first layers searched for a requirement being live, or a tool allowed, before
the reachable set ..."""

EARLY_NODES = 2000
"""... while the states they reached take at most this many BDD nodes (the layers of a
system whose states grow complex cost more than the reachable set by chaining)."""


class _OutOfTime(Exception):
    """The deadline passed in the middle of an analysis."""


class _Group:
    """Events with the same effect on every component: one relation, one guard."""

    def __init__(self, enc: EncodingBase, moved: tuple[tuple[Component, int], ...]) -> None:
        self.moved = moved
        self._enc = enc
        self._relation: Node | None = None
        shape = enc.shape([comp for comp, _ in moved])
        self.current = shape.current
        self.forward = shape.forward
        self.back = shape.back
        self.ahead = shape.ahead
        self.guard = enc.bdd.false
        self.events: list[Event] = []
        self.range: Node | None = None
        """The states one of its steps can lead to (``Verdicts._range``), once computed."""

    @property
    def relation(self) -> Node:
        """The conjunction of the moved components' relations, built when first needed (a
        group whose guard never meets a reached state never needs it)."""
        if self._relation is None:
            self._relation = self._enc.relation(self.moved)
        return self._relation


class _Cluster:
    """Groups that move the same components under the same guard (the statuses of one
    tool; tools alike to every component they move): one relational product steps them
    all, on the disjunction of their relations (memoised by the encoding: subsystems share
    it, as their guards differ but not the relations)."""

    def __init__(self, enc: EncodingBase, groups: list[_Group]) -> None:
        self.groups = groups
        self.current = groups[0].current
        self.forward = groups[0].forward
        self.back = groups[0].back
        self.ahead = groups[0].ahead
        self.guard = groups[0].guard
        self._enc = enc
        self._relation: Node | None = None
        self.range: Node | None = None
        """The states one of its steps can lead to (``Verdicts._range``), once computed."""

    @property
    def relation(self) -> Node:
        if self._relation is None:
            self._relation = self._enc.relations([g.moved for g in self.groups])
        return self._relation


class Layers:
    """One symbolic analysis's sets of states, and the steps between them."""

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        max_states: int | None,
        deadline: float | None,
        focus: str | None,
    ) -> None:
        self.started = time.monotonic()
        self.system = system
        self.enc = enc
        self.bdd = enc.bdd
        self.max_states = max_states
        self.deadline = deadline
        self.focus = focus
        comps = system.components
        self.priorities = {id(c): c.requirement.priority for c in comps}
        self.pass_ = decided(enc, comps, self.priorities)
        self.check_names = [n for c in comps for n in enc.check_bits[id(c)]]
        self._callable_where: dict[str, Node] = {}
        self.groups = self._groups()
        alike: dict[tuple[tuple[str, ...], Node], list[_Group]] = {}
        for g in self.groups:
            alike.setdefault((g.current, g.guard), []).append(g)
        self.clusters = [_Cluster(enc, gs) for gs in alike.values()]
        self.result = Analysis(depends_on_checks=any(c.opaque for c in comps))
        self.layers: list[Node] = []
        self.layered = self.reach = self.start = self.bdd.false
        self.pruned = False
        """Whether some layer kept only part of the states first reached there."""
        self.settled = False
        """Whether the breadth-first layers reached every reachable state."""
        self._unions: list[tuple[Node, Node]] = []
        """``_within``'s unions so far, each with the layer it last took in."""

    def _groups(self) -> list[_Group]:
        system, enc = self.system, self.enc
        by_effect: dict[tuple[tuple[int, int], ...], _Group] = {}
        for tool in system.callable:
            guard = self._callable(tool)
            for s, status in enumerate(STATUSES):
                moved = []
                for i, comp in enumerate(system.components):
                    index = comp.classes[tool] * 3 + s
                    if not comp.still[index]:
                        moved.append((i, index))
                key = tuple(moved)
                group = by_effect.get(key)
                if group is None:
                    group = by_effect[key] = _Group(
                        enc, tuple((system.components[i], index) for i, index in moved)
                    )
                group.guard |= guard
                group.events.append((tool, status))
        return [g for g in by_effect.values() if g.moved]

    def begin(self) -> None:
        """Layers from the initial state (every component at its first view): layer 0."""
        bits = [b for c in self.system.components for b in self.enc.bits[id(c)]]
        self.start = self.enc.cube(bits, 0)
        self.layers = [self.start]
        self.layered = self.start

    def _callable(self, tool: str) -> Node:
        """Where a step may call ``tool`` (under some check values); memoised."""
        found = self._callable_where.get(tool)
        if found is None:
            found = self._callable_where[tool] = self.some(self.pass_.callable[tool])
        return found

    def some(self, u: Node) -> Node:
        """``u`` with the check bits quantified away: true under some check values."""
        return self.bdd.exist(self.check_names, u) if self.check_names else u

    # -- images ------------------------------------------------------------------------------

    def image(self, states: Node) -> Node:
        """The states one step after ``states`` (``_OutOfTime`` past the deadline, looked
        at after each cluster: one layer of a large subsystem can take far longer than the
        margin a deadline leaves)."""
        out = self.bdd.false
        for c in self.clusters:
            self._in_time()
            out |= self._image(states, c)
        return out

    def preimage(self, states: Node, within: Node) -> Node:
        """The states of ``within`` with a step (allowed under some check values) into
        ``states``. Only groups whose guard meets ``within`` are stepped back through, so a
        group that cannot fire there never has its relation built. Each group's part is
        cut to ``within`` before the union: a ``states`` left free outside the states that
        matter (``_bdd.restricted``) has a far larger preimage outside ``within``
        (`indep-chains-20-40-7`: a witness's preimages took 0.85 s uncut, under 0.2 s cut)."""
        bdd = self.bdd
        out = bdd.false
        for c in self.clusters:
            if within & c.guard != bdd.false:
                self._in_time()
                out |= self._preimage(states, c) & within
        # Steps that move no component (e.g. a failed call nothing counts) keep the state.
        return out | (within & states & self._staying())

    def _preimage(self, states: Node, g: _Group | _Cluster) -> Node:
        bdd = self.bdd
        primed = g.ahead(states)
        nexts = [g.forward[name] for name in g.current]
        if _and_exists is not None:
            back = _and_exists(g.relation, primed, nexts)
        else:  # pragma: no cover
            back = bdd.exist(nexts, g.relation & primed)
        return back & g.guard

    def event_preimage(self, states: Node, event: Event) -> Node:
        """The states where ``event`` is a step (its tool allowed under some check values)
        into ``states``: the states one fixed call leads from (replaying a history
        backward)."""
        moving = self._by_event.get(event)
        back = states if moving is None else self._preimage(states, moving)
        return back & self._callable(event[0])

    @cached_property
    def _by_event(self) -> dict[Event, _Group]:
        """The group of each event that moves some component."""
        return {e: g for g in self.groups for e in g.events}

    def _staying(self) -> Node:
        found = getattr(self, "_stay", None)
        if found is None:
            stay = self.bdd.false
            moving = {e for g in self.groups for e in g.events}
            for tool in self.system.callable:
                if any((tool, s) not in moving for s in STATUSES):
                    stay |= self._callable(tool)
            found = self._stay = stay
        return found

    def _image(self, states: Node, g: _Group | _Cluster) -> Node:
        bdd = self.bdd
        source = states & g.guard
        if source == bdd.false:
            return bdd.false
        if _and_exists is not None:
            moved = _and_exists(source, g.relation, g.current)
        else:  # pragma: no cover
            moved = bdd.exist(g.current, source & g.relation)
        return g.back(moved)

    # -- layers ------------------------------------------------------------------------------

    def _tick(self) -> None:
        note_progress(layers=len(self.layers), engine="symbolic")
        self._in_time()

    def _in_time(self) -> None:
        """Raise ``_OutOfTime`` past the deadline (and mind the time reordering takes)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _OutOfTime
        self.enc.mind_reordering()

    def _layer(self, d: int, keep: Node | None = None) -> Node | None:
        """The states first reached after ``d`` steps (computed on demand; with ``keep``,
        only those in it), or None past the last non-empty layer."""
        bdd = self.bdd
        while len(self.layers) <= d:
            self._tick()
            frontier = self.image(self.layers[-1]) & ~self.layered
            if keep is not None:
                kept = frontier & keep
                self.pruned = self.pruned or kept != frontier
                frontier = kept
            if frontier == bdd.false:
                return None
            self.layers.append(frontier)
            self.layered |= frontier
        return self.layers[d]

    def _within(self, d: int) -> Node:
        """The states of layers 0 to ``d`` (every state within ``d`` steps, unless a layer
        was pruned), for ``d`` up to the last layer computed. Memoised while the layers are
        the same (``_layers_within`` may drop the last ones)."""
        unions = self._unions
        k = 0
        while k < len(unions) and k <= d and unions[k][0] is self.layers[k]:
            k += 1
        del unions[k:]
        while len(unions) <= d:
            layer = self.layers[len(unions)]
            unions.append((layer, layer if not unions else unions[-1][1] | layer))
        return unions[d][1]

    def _layers_within(self, limit: int) -> int:
        """Breadth-first layers while the states they hold stay within ``limit`` (a layer
        that would pass it is dropped): what a search bounded by ``max_states`` explores.
        Returns how many states those layers hold."""
        # Layers computed already (``_early``'s) are kept while they fit; the first that
        # does not, and those after it, are dropped.
        kept: list[Node] = []
        layered = self.bdd.false
        for layer in self.layers:
            if self._count(layered | layer) > limit:
                self.layers, self.layered, self.settled = kept, layered, False
                return self._count(layered)
            kept.append(layer)
            layered |= layer
        try:
            while True:
                before, count = self.layered, self._count(self.layered)
                if self._layer(len(self.layers)) is None:
                    return count
                if self._count(self.layered) > limit:
                    self.layers.pop()
                    self.layered = before
                    return count
        except _OutOfTime:
            return self._count(self.layered)

    def _count(self, u: Node) -> int:
        names = [b for c in self.system.components for b in self.enc.bits[id(c)]]
        if not names:
            return 0 if u == self.bdd.false else 1
        return int(self.bdd.count(u, nvars=len(names)))

    def _first_layer(self, target: Node) -> int | None:
        """The fewest steps reaching ``target`` (None: it is unreachable)."""
        bdd = self.bdd
        if self.reach & target == bdd.false:
            return None
        d = 0
        while True:
            layer = self._layer(d)
            if layer is None:
                return None
            if layer & target != bdd.false:
                return d
            d += 1

    def _early(self, where: Node) -> int | None:
        """The first of the first ``EARLY_LAYERS`` breadth-first layers that meets
        ``where``, if one does: a cheap refutation of "never" (a requirement never live, a
        tool never allowed) before the whole reachable set is computed."""
        bdd = self.bdd
        for d in range(EARLY_LAYERS + 1):
            layer = self._layer(d)
            if layer is None:
                self.settled = True
                return None
            if layer & where != bdd.false:
                return d
            if self.layered.dag_size > EARLY_NODES:
                return None
        return None

    def _fits(self, steps: int) -> list[Node]:
        """``fits[k]``: the states from which, by the components' relaxed distances
        (``bounds``), a stop may still be within ``k`` steps: every component's own
        distance is at most ``k``, and so is the sum over tools of the most calls of each
        that a component needs. Strict mode only (the bounds' premise: a denial holds);
        in priority mode every state fits."""
        bdd, enc = self.bdd, self.enc
        cap = steps + 1
        if self.system.mode != "strict":
            return [bdd.true] * cap
        comps = [c for c in self.system.components if not c.requirement.yielding]
        each = bdd.true
        by_steps = [bdd.true] * cap  # by_steps[k]: every component's own distance is ≤ k
        for k in range(cap - 1, -1, -1):
            for comp in comps:
                each &= ~enc.at_least(comp, None, k + 1)
            by_steps[k] = each
        sums = [bdd.true] + [bdd.false] * cap  # sums[k]: the calls counted so far are k
        holders: dict[str, list[Component]] = {}
        for comp in comps:
            for tool in enc.distances(comp).calls:
                holders.setdefault(tool, []).append(comp)
        for tool in sorted(holders, key=enc.tools.index):
            self._tick()
            top = min(cap, max(max(enc.distances(c).calls[tool]) for c in holders[tool]))
            at_least = [bdd.true]
            for j in range(1, top + 1):
                here = bdd.false
                for comp in holders[tool]:
                    here |= enc.at_least(comp, tool, j)
                at_least.append(here)
            at_least.append(bdd.false)
            grown = [bdd.false] * (cap + 1)
            for j in range(top + 1):
                exactly = at_least[j] & ~at_least[j + 1]
                if exactly == bdd.false:
                    continue
                for k in range(cap + 1):
                    if sums[k] != bdd.false:
                        grown[min(cap, k + j)] |= sums[k] & exactly
            sums = grown
        fits = []
        within = bdd.false
        for k in range(cap):
            within |= sums[k]
            fits.append(within & by_steps[k])
        return fits

    def _states(self, states: Node) -> Iterator[State]:
        """The concrete states of ``states``.

        CUDD's ``pick_iter`` turns dynamic reordering off while it runs, and on again only
        when it runs to its end: a caller that stops early (``_probed`` takes a few states,
        ``_live_by_deciding`` stops once every requirement is live) would leave it off for
        good. The setting is put back here however the iteration ends."""
        enc, comps = self.enc, self.system.components
        bits = [b for c in comps for b in enc.bits[id(c)]]
        reordering = self.enc.reordering_now()
        picked = self.bdd.pick_iter(states, care_vars=bits)
        try:
            for assignment in picked:
                yield tuple(
                    sum(1 << b for b, name in enumerate(enc.bits[id(c)]) if assignment[name])
                    for c in comps
                )
        finally:
            close = getattr(picked, "close", None)
            if close is not None:
                close()
            self.enc.set_reordering(reordering)
