"""The symbolic engine: breadth-first reachability over binary decision diagrams.

It checks strict-mode systems whose rules are literals (every built-in emits only those):
there, a state's pass is a fixed boolean function of which tools the records deny, hide,
require allowed or visible, and force (the literal fast path of ``Layout.literal_pass``,
and the forced-tool choice of ``_resolve.soft_forced``). Each component's contribution to
those facts is read off its tabulated monitor (``System``): a BDD over its view bits and
its opaque check bits. Sets of states are BDDs over the view bits of all components, so
the (often astronomically many) reachable states are never enumerated: a chain of 20 tools
with retry caps has 4^20 of them and a BDD of a few hundred nodes.

Layers are kept: ``L[d]`` holds the states first reached after ``d`` steps. A witness is
built forward from the initial state, taking at each step the smallest event (tools in
declared order, statuses ``ok`` < ``error`` < ``denied``) whose successor can still reach
the target in the steps left: the lexicographically smallest shortest trace, the one the
explicit engine reports. Its states are concrete, so its last state is decided by the
runtime reasoner like the explicit engine's.

Binary decision diagrams come from ``dd`` (CUDD through ``dd.cudd``; ``dd.autoref``, pure
Python, where CUDD is unavailable).
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ruleengine._units import literal_masks
from ruleengine.aggregate import Clash
from ruleengine.check._bdd import and_exists as _and_exists
from ruleengine.check._bdd import dd as _dd
from ruleengine.check._bdd import renamed as _renamed
from ruleengine.check.analysis import Analysis, Witness
from ruleengine.check.bounds import Distances, distances
from ruleengine.check.explicit import Outcome, asking_of, callable_at, decide, live_at
from ruleengine.check.lanes import run_beside
from ruleengine.check.progress import note as note_progress
from ruleengine.check.seek import seek
from ruleengine.check.system import Component, Event, State, System, symbolic_problem
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.requirements.permission import AskPermissionRequirement
from ruleengine.rules import Emitted, literals_of, lower
from ruleengine.state import STATUSES

__all__ = ["Encoding", "analyse_symbolic", "supports"]

supports = symbolic_problem
"""Why the symbolic engine cannot check a system (None: it can); see ``symbolic_problem``."""

Node = Any
"""A BDD node of the ``dd`` manager."""


@dataclass(slots=True)
class _Facts:
    """One component's contribution: per tool, where it denies, hides, … (over its bits)."""

    deny: dict[str, Node] = field(default_factory=dict)
    hide: dict[str, Node] = field(default_factory=dict)
    allow: dict[str, Node] = field(default_factory=dict)
    show: dict[str, Node] = field(default_factory=dict)
    hard: dict[str, Node] = field(default_factory=dict)
    soft: dict[str, Node] = field(default_factory=dict)
    """Where it soft-forces each tool (at the requirement's priority)."""


GLOBAL_BITS = 8
"""Bits of global views (see ``_variable_order``) past which CUDD's dynamic reordering is
switched on."""

REORDER_GROWTH = 1.05
"""How much larger CUDD's sifting lets the diagrams grow while it moves one block (its
default 1.2): with dynamic reordering on, moves that would grow them by more are not
tried, so each reordering is shorter. On the `mixed` family, in process, two runs each:
50/100 seed 7 10.8 → 6.0 s, seed 9 19 → 15–17 s, seed 8 5.2 → 4.4 s, 20/40 seed 4 3.0 →
2.2 s (1.1 and 1.02 were measured too: neither did better on all of them)."""

SIFT_NODES = 12_000
"""Nodes of a reachable set, while it is being computed, past which the static variable
order counts as failed and the variables are sifted once (``Encoding.settle_order``)."""

SIFT_MAX_NODES = 400_000
"""Nodes past which that one sifting is not started: it takes time in proportion to the
diagrams (0.8 s at 40,000 nodes and 115 blocks here) and does not look at ``--timeout``."""


class Encoding:
    """The BDD variables of a system's components, and what each component contributes.

    Shared by the analyses of a system and of its subsystems (requirement-level cores), so
    every component is encoded once.
    """

    def __init__(self, system: System) -> None:
        self.tools = system.tools
        self.bdd = _dd.BDD()
        self.bits: dict[int, tuple[str, ...]] = {}
        self.next_bits: dict[int, tuple[str, ...]] = {}
        self.check_bits: dict[int, tuple[str, ...]] = {}
        self._facts: dict[int, _Facts] = {}
        self._moves: dict[tuple[int, int], Node] = {}
        self._relations: dict[tuple[tuple[int, int], ...], Node] = {}
        self._relations_any: dict[tuple[tuple[tuple[int, int], ...], ...], Node] = {}
        self._shapes: dict[tuple[int, ...], _Shape] = {}
        self._cubes: dict[tuple[tuple[str, ...], int], Node] = {}
        self._distances: dict[tuple[int, str], Distances] = {}
        self._at_least: dict[tuple[int, str | None, int], Node] = {}
        self._where: dict[tuple[int, ...], dict[str, tuple[int, int]]] = {}
        names: list[str] = []
        order = _variable_order(system)
        for n, comp in enumerate(order):
            key = id(comp)
            width = max(0, (len(comp.views) - 1).bit_length())
            self.bits[key] = tuple(f"x{n}_{b}" for b in range(width))
            self.next_bits[key] = tuple(f"y{n}_{b}" for b in range(width))
            checks = max(
                (len(v) for vs in comp.variants for var in vs for v in var.checks), default=0
            )
            self.check_bits[key] = tuple(f"c{n}_{b}" for b in range(checks))
            for b in range(width):
                names += [f"x{n}_{b}", f"y{n}_{b}"]
            names += list(self.check_bits[key])
        self.bdd.declare(*names)
        # Dynamic reordering moves each component's bits (current, next, checks) as one
        # block: they are read together by every relation, and sifting a few blocks costs
        # far less than sifting every bit (measured: half the reordering time, or less).
        blocks: dict[str, int] = {}
        for comp in order:
            own = self.bits[id(comp)] + self.next_bits[id(comp)] + self.check_bits[id(comp)]
            if len(own) >= 2:
                blocks[(self.bits[id(comp)] or self.check_bits[id(comp)])[0]] = len(own)
        self.reordering = False
        """Whether CUDD's dynamic reordering is on for this manager."""
        if hasattr(self.bdd, "group"):  # CUDD (dd.autoref does not reorder)
            # The static order suits policies with few global views (see _variable_order)
            # and dynamic reordering then only costs time: it is the larger part of the
            # check at 50 tools, and, as CUDD's hashing follows memory addresses, varies
            # from run to run (±50 %). With many global views the order's premise fails
            # and reordering pays for itself (up to 5× on the `mixed` family at 50 tools).
            global_bits = sum(
                len(self.bits[id(c)]) for c in order if c.is_global(len(system.callable))
            )
            self.reordering = global_bits > GLOBAL_BITS
            self.bdd.configure(reordering=self.reordering)
            if self.reordering:
                self.bdd.configure(max_growth=REORDER_GROWTH)
            if blocks:
                self.bdd.group(blocks)
        self.settled = self.reordering or not hasattr(self.bdd, "group")
        """Whether the variable order is left as it is from now on (sifted once already,
        left to dynamic reordering, or a BDD package without CUDD's sifting)."""
        self._components = {id(c): c for c in system.components}

    def reordering_now(self) -> bool:
        """Whether CUDD's dynamic reordering is on at this moment (False for a package
        without it)."""
        return bool(self.reordering and self.bdd.configure().get("reordering", False))

    def keep_order(self) -> None:
        """Dynamic reordering off for good: the variable order stays as it is."""
        if self.reordering:
            self.bdd.configure(reordering=False)
            self.reordering = False

    def set_reordering(self, on: bool) -> None:
        """Dynamic reordering on or off (only where ``reordering`` chose it at all)."""
        if self.reordering:
            self.bdd.configure(reordering=on)

    def cube(self, names: Sequence[str], value: int) -> Node:
        """The conjunction saying that the bits ``names`` spell ``value`` (lowest bit first).
        Memoised: a component's relations and facts ask for each of its views many times."""
        key = (tuple(names), value)
        found = self._cubes.get(key)
        if found is None:
            found = self._cubes[key] = self.bdd.cube(
                {name: bool(value >> b & 1) for b, name in enumerate(names)}
            )
        return found

    def state_bits(self, components: Sequence[Component], state: State) -> dict[str, bool]:
        """The assignment of every view bit for a concrete state."""
        out: dict[str, bool] = {}
        for comp, view in zip(components, state, strict=True):
            for b, name in enumerate(self.bits[id(comp)]):
                out[name] = bool(view >> b & 1)
        return out

    def holds_at(self, u: Node, components: Sequence[Component], state: State) -> bool:
        """Whether the concrete ``state`` of ``components`` is in ``u``, a set over their
        view bits: one walk from the root down the branch each bit takes, counting the
        complemented edges on the way (CUDD's and the pure-Python package's ``low``,
        ``high`` and ``negated``). Substituting the assignment instead (``BDD.let``) builds
        a cube of every bit first: at 50 tools (178 bits) 0.8–2.6 ms a test, the walk
        0.1 ms with the assignment built. The walk reads each bit it meets straight from
        ``state`` (where each bit is found, per list of components, is memoised): only
        the bits on the branch are looked at."""
        key = tuple(map(id, components))
        where = self._where.get(key)
        if where is None:
            where = self._where[key] = {
                name: (i, b)
                for i, comp in enumerate(components)
                for b, name in enumerate(self.bits[id(comp)])
            }
        node, parity = u, u.negated
        while (var := node.var) is not None:
            found = where.get(var)
            if found is None:  # a bit that is not the state's: substitute what there is
                return self.contains(u, self.state_bits(components, state))
            i, b = found
            node = node.high if state[i] >> b & 1 else node.low
            parity ^= node.negated
        return not parity

    def contains(self, u: Node, values: dict[str, bool]) -> bool:
        """``holds_at`` for a state given as the assignment of its bits (``state_bits``),
        for a caller that tests one state against several sets."""
        node, parity = u, u.negated
        while (var := node.var) is not None:
            value = values.get(var)
            if value is None:  # a bit that is not the state's: substitute what there is
                return bool(self.bdd.let(values, u) == self.bdd.true)
            node = node.high if value else node.low
            parity ^= node.negated
        return not parity

    def settle_order(self, reached: Node) -> None:
        """Sift the variables once (CUDD's group sifting, blocks as declared) if the static
        order has failed: ``reached``, a reachable set being computed, has passed
        ``SIFT_NODES`` nodes.

        The static order (``_variable_order``) suits most policies; where it fails, one
        sifting finds an order that can be 30× smaller (``approvals`` at 50 tools, whose
        "only after"s chain tools in ways the order's breadth-first walk splits: reachable
        sets of 54 000 nodes became 1 400; checks of 13.5 s took 2.7). Sifting an early,
        small reachable set instead fits the order to a part of the search that is not yet
        representative, and the rest grows: ReAct chains at 50 tools, whose sets stay under
        10 000 nodes, took up to 5× longer sifted after the first sweep. Hence the
        threshold, and once only: dynamic reordering, the other answer, costs more than it
        saves where the static order is right (see ``GLOBAL_BITS``). A set past
        ``SIFT_MAX_NODES`` is left as it is (sifting it would outlast a time limit). Only
        the speed depends on the order; every result is the same.
        """
        if self.settled:
            return
        nodes = len(reached)
        if nodes <= SIFT_NODES:
            return
        self.settled = True  # once, sifted or not: a larger set would cost more
        if nodes <= SIFT_MAX_NODES:
            self.bdd.reorder()

    def facts(self, comp: Component) -> _Facts:
        key = id(comp)
        found = self._facts.get(key)
        if found is None:
            found = self._facts[key] = self._encode(comp)
        return found

    def _encode(self, comp: Component) -> _Facts:
        bdd, key = self.bdd, id(comp)
        bit = {t: 1 << i for i, t in enumerate(self.tools)}
        facts = _Facts()
        for view, variants in enumerate(comp.variants):
            here = self.cube(self.bits[key], view)
            for variant in variants:
                when = here & self._checks(key, variant.checks)
                denies = hides = allows = shows = 0
                hard: set[str] = set()
                soft: set[str] = set()
                for e in variant.records:
                    lowered = lower(e.item)
                    if lowered.hard_force is not None:
                        hard.add(lowered.hard_force)
                    else:
                        literals = literals_of(lowered.restrict)
                        # INVARIANT: supports() refused systems with general formulas.
                        assert literals is not None
                        d, h, a, s = literal_masks(literals, bit)
                        denies, hides, allows, shows = denies | d, hides | h, allows | a, shows | s
                    if lowered.soft_force is not None:
                        soft.add(lowered.soft_force)
                for t in self.tools:
                    b = bit[t]
                    for mask, table in (
                        (denies, facts.deny),
                        (hides, facts.hide),
                        (allows, facts.allow),
                        (shows, facts.show),
                    ):
                        if mask & b:
                            table[t] = table.get(t, bdd.false) | when
                    if t in hard:
                        facts.hard[t] = facts.hard.get(t, bdd.false) | when
                    if t in soft:
                        facts.soft[t] = facts.soft.get(t, bdd.false) | when
        return facts

    def _checks(self, key: int, valuations: Sequence[tuple[bool, ...]]) -> Node:
        names = self.check_bits[key]
        if not names:
            return self.bdd.true
        out = self.bdd.false
        for values in valuations:
            out |= self.bdd.cube(dict(zip(names, values, strict=True)))
        return out

    def distances(self, comp: Component, goal: str = FINAL_ANSWER) -> Distances:
        """``bounds.distances`` of ``comp`` to ``goal`` (memoised: subsystems share it)."""
        key = (id(comp), goal)
        found = self._distances.get(key)
        if found is None:
            found = self._distances[key] = distances(comp, self.tools, goal)
        return found

    def at_least(self, comp: Component, tool: str | None, least: int) -> Node:
        """The views of ``comp`` whose bound (its steps, or its calls of ``tool``) is at
        least ``least``, over its view bits (memoised)."""
        key = (id(comp), tool, least)
        found = self._at_least.get(key)
        if found is None:
            dist = self.distances(comp)
            values = dist.steps if tool is None else dist.calls[tool]
            bits = self.bits[id(comp)]
            found = self.bdd.false
            for view, value in enumerate(values):
                if value >= least:
                    found |= self.cube(bits, view)
            self._at_least[key] = found
        return found

    def shape(self, comps: Sequence[Component]) -> _Shape:
        """The current bits of ``comps`` and their renamings between current and next bits
        (memoised: the steps of every subsystem that move the same components share it)."""
        key = tuple(id(comp) for comp in comps)
        found = self._shapes.get(key)
        if found is None:
            current = tuple(b for comp in comps for b in self.bits[id(comp)])
            nexts = tuple(b for comp in comps for b in self.next_bits[id(comp)])
            found = self._shapes[key] = _Shape(
                current,
                dict(zip(nexts, current, strict=True)),
                dict(zip(current, nexts, strict=True)),
            )
        return found

    def relation(self, moved: tuple[tuple[Component, int], ...]) -> Node:
        """The conjunction of the move relations of ``moved`` (memoised: subsystems share it)."""
        key = tuple((id(comp), table) for comp, table in moved)
        found = self._relations.get(key)
        if found is None:
            found = self.bdd.true
            for comp, table in moved:
                found &= self.move(comp, table)
            self._relations[key] = found
        return found

    def relations(self, moves: Sequence[tuple[tuple[Component, int], ...]]) -> Node:
        """The disjunction of the ``relation`` of each of ``moves`` (memoised)."""
        if len(moves) == 1:
            return self.relation(moves[0])
        key = tuple(tuple((id(comp), table) for comp, table in moved) for moved in moves)
        found = self._relations_any.get(key)
        if found is None:
            found = self.bdd.false
            for moved in moves:
                found |= self.relation(moved)
            self._relations_any[key] = found
        return found

    def move(self, comp: Component, table_index: int) -> Node:
        """The relation ``x → y`` of one of the component's move tables."""
        key = (id(comp), table_index)
        found = self._moves.get(key)
        if found is None:
            table = comp.moves[table_index]
            bits, nexts = self.bits[id(comp)], self.next_bits[id(comp)]
            found = self.bdd.false
            for view, after in enumerate(table):
                found |= self.cube(bits, view) & self.cube(nexts, after)
            self._moves[key] = found
        return found


def _variable_order(system: System) -> list[Component]:
    """The components in the order their bits are declared: the global ones (whose views
    most tools move: a "last tool", a step counter) first, the most moved first, then the
    others by the first of the tools they watch, in an order of the tools where linked tools
    are close.

    A reachable set correlates each tool's counters with such global views ("the last tool
    was `a`, so `a` ran once"); with the global bits on top, each of their values leaves a
    small function of the per-tool bits below, where the other order would need one node per
    pattern of the per-tool bits. Tools are *linked* by a component that watches one and
    mentions the other ("`a` only after `b`" relates `b` having run to `a`'s counter); they
    are ordered breadth-first over those links (Cuthill–McKee: fewest links first, then
    declared order), so correlated bits sit close together. (Measured on the benchmark
    families: per-tool counters with ordering between them check 3× faster than with the
    tools in declared order; the others the same.)
    """
    position = {t: i for i, t in enumerate(system.tools)}
    mentions = system.mentions
    links: dict[str, set[str]] = {t: set() for t in system.tools}
    for comp in system.components:
        if comp.is_global(len(system.callable)):
            continue  # a global view: it links every tool, so it orders none
        linked = set(comp.watched) | mentions.get(comp.requirement.name, frozenset())
        linked.discard(FINAL_ANSWER)  # every requirement preventing a stop mentions it
        for t in linked:
            links[t] |= linked - {t}

    def fewest_links(t: str) -> tuple[int, int]:
        return (len(links[t]), position[t])

    rank: dict[str, int] = {}
    for seed in sorted(system.tools, key=fewest_links):
        if seed in rank:
            continue
        rank[seed] = len(rank)
        queue = [seed]
        while queue:
            t = queue.pop(0)
            for u in sorted(links[t] - rank.keys(), key=fewest_links):
                rank[u] = len(rank)
                queue.append(u)

    def key(comp: Component) -> tuple[int, int, str]:
        if comp.is_global(len(system.callable)):
            return (-sum(not still for still in comp.still), -1, comp.requirement.name)
        first = min((rank[t] for t in comp.watched), default=len(rank))
        return (0, first, comp.requirement.name)

    return sorted(system.components, key=key)


@dataclass(slots=True)
class _Pass:
    """A system's pass as BDDs over view and check bits (strict mode, literal rules)."""

    consistent: Node
    stuck: Node
    """The items without their hard forces already clash (a deadlock when inconsistent)."""
    hard: dict[str, Node]
    allowed: dict[str, Node]
    """After the forced projection: what ``Pass.allowed`` holds."""
    hidden: dict[str, Node]
    forced: dict[str, Node]
    can_stop: Node
    callable: dict[str, Node]
    """Tools a step may call (``allowed`` without ``final_answer``)."""
    tie: Node


def _pass(enc: Encoding, components: Sequence[Component], priorities: dict[int, int]) -> _Pass:
    """SPEC §4 for literal rules in strict mode, as BDDs (mirrors ``Layout.literal_pass`` and
    ``_resolve.soft_forced``).

    The facts are sparse: a tool that no component states a fact of has it nowhere, and
    takes no part in the sets built from that fact (a core question builds the pass of a
    subsystem that mentions a few of 50 tools: one BDD operation per tool and fact would
    be most of its cost)."""
    bdd, tools = enc.bdd, enc.tools
    false, true = bdd.false, bdd.true

    facts = [enc.facts(comp) for comp in components]

    def union(table: str) -> dict[str, Node]:
        """Per tool that some component states ``table`` of, where one does."""
        out: dict[str, Node] = {}
        for f in facts:
            for t, where in getattr(f, table).items():
                found = out.get(t)
                out[t] = where if found is None else found | where
        return out

    deny, hide, allow_lit, show, hard = (
        union(table) for table in ("deny", "hide", "allow", "show", "hard")
    )
    stuck = false  # every tool denied: only where each is
    if len(deny) == len(tools):
        stuck = true
        for t in tools:
            stuck &= deny[t]
    clash = false
    for t, where in allow_lit.items():
        if t in deny:
            clash |= where & deny[t]
    for t, where in show.items():
        if t in hide:
            clash |= hide[t] & where
    stuck |= clash
    any_hard = false
    two_hard = false
    for where in hard.values():
        two_hard |= any_hard & where
        any_hard |= where
    force_denied = false
    for t, where in hard.items():
        if t in deny:
            force_denied |= where & deny[t]
    consistent = ~(stuck | two_hard | force_denied)
    allowed_pre = {t: ~where for t, where in deny.items()}  # a tool missing: everywhere
    # Soft forces: the highest priority among allowed forced tools, ties by declared order.
    # Per priority level, where each tool is bid for; only tools with a bid at a level
    # take part in it (a tool without one changes none of the sets below).
    position = {t: i for i, t in enumerate(tools)}
    bids: dict[int, dict[str, Node]] = {}
    for comp in components:
        for t, where in enc.facts(comp).soft.items():
            level = bids.setdefault(priorities[id(comp)], {})
            level[t] = level.get(t, false) | where
    soft: dict[str, Node] = {}
    tie = false
    above = false  # some allowed tool bids higher
    for p in sorted(bids, reverse=True):
        any_here = false
        first_seen = false
        pair = false
        for t in sorted(bids[p], key=position.__getitem__):  # in declared order
            at_level = bids[p][t]
            if t in allowed_pre:
                at_level &= allowed_pre[t]
            soft[t] = soft.get(t, false) | (~above & at_level & ~first_seen)
            pair |= first_seen & at_level
            first_seen |= at_level
            any_here |= at_level
        tie |= ~above & pair
        above |= any_here
    tie &= ~any_hard
    not_hard = ~any_hard
    forced: dict[str, Node] = {}  # a tool missing: forced nowhere
    for t in tools:
        if t in hard or t in soft:
            forced[t] = hard.get(t, false) | (not_hard & soft.get(t, false))
    any_forced = any_hard | above
    pinned = consistent & any_forced  # only forced tools are allowed
    free = consistent & ~any_forced  # every tool not denied is
    can_stop = consistent & allowed_pre.get(FINAL_ANSWER, true)
    allowed: dict[str, Node] = {}
    for t in tools:
        if t == FINAL_ANSWER:
            allowed[t] = can_stop
            continue
        here = free & allowed_pre[t] if t in allowed_pre else free
        allowed[t] = (pinned & forced[t]) | here if t in forced else here
    return _Pass(
        consistent=consistent,
        stuck=stuck,
        hard={t: hard.get(t, false) for t in tools},
        allowed=allowed,
        hidden={t: consistent & hide[t] if t in hide else false for t in tools},
        forced={t: consistent & forced[t] if t in forced else false for t in tools},
        can_stop=can_stop,
        callable={t: allowed[t] for t in tools if t != FINAL_ANSWER},
        tie=consistent & tie,
    )


def _decided(enc: Encoding, components: Sequence[Component], priorities: dict[int, int]) -> _Pass:
    """The pass the reasoner gives, yielding included: when the rules clash and a yielding
    requirement (the cycle guard) is among them, the step is decided without it (SPEC §5).

    With one yielding requirement Y that is ``pass(all)`` where it is consistent, else
    ``pass(all − Y)``. When both clash, the runtime reports the clash without Y: either Y
    was in its core and gave way, or it was not and the core, its kind and its hard forces
    are those of the rules without Y anyway (Y forces nothing).
    """
    yielding = [c for c in components if c.requirement.yielding]
    full = _pass(enc, components, priorities)
    if not yielding:
        return full
    rest = _pass(enc, [c for c in components if not c.requirement.yielding], priorities)
    keep = full.consistent

    def pick(a: Node, b: Node) -> Node:
        return (keep & a) | (~keep & b)

    def each(a: dict[str, Node], b: dict[str, Node]) -> dict[str, Node]:
        return {t: pick(a[t], b[t]) for t in a}

    return _Pass(
        consistent=full.consistent | rest.consistent,
        stuck=rest.stuck,
        hard=rest.hard,
        allowed=each(full.allowed, rest.allowed),
        hidden=each(full.hidden, rest.hidden),
        forced=each(full.forced, rest.forced),
        can_stop=pick(full.can_stop, rest.can_stop),
        callable=each(full.callable, rest.callable),
        tie=pick(full.tie, rest.tie),
    )


_FACT_TABLES = ("deny", "hide", "allow", "show", "hard")
"""The facts of ``_Facts`` that ``_pass`` unites over the components (soft forces are
weighed by priority instead)."""

SHALLOW_NODES = 30_000
"""Nodes of the BDD manager up to which a whole analysis with dynamic reordering on first
tries breadth-first layers without it (``_Symbolic._shallow``)."""

SHALLOW_START_NODES = 10_000
"""Nodes of the BDD manager (the encoding and the passes, before any search) past which a
policy is too large for that attempt (at 20 tools: 1,800–4,100; at 50: 14,000–30,000)."""

CHAINING_SWEEPS = 3
"""Sweeps of plain chaining before the reachable-set search turns event-driven."""

FEW_STATES = 64
"""Up to this many reachable states, liveness is decided state by state."""

FEW_LIVE_STATES = 64
"""Up to this many reachable states where a requirement's rules change a fact of the pass
(``_unmasked``), its liveness is decided at those states, without its "changes the pass"
set (``_live_at``)."""

LIVENESS_BESIDE_STATES = 100_000
"""Reachable states past which a whole analysis shares out the search for the live
requirements with a second process (``lanes.run_beside``: a forked child, when the machine
allows), which starts on it while this one computes the other verdicts (10⁹ states at 50
tools: 16–18 s in one process, 16 s in two)."""

LIVENESS_BESIDE_SECONDS = 0.15
"""Seconds of a whole analysis so far (its passes and the reachable-set search) past which
it finds the live requirements beside the rest, however few its states: an analysis that
slow has costly liveness and other verdicts too (the `mixed` family at 20 tools, 2,529
states: 0.35 s to there, then 0.4 s of liveness and 0.17 s of the rest, on a slow VM; with
two processes its check took 0.2–0.3 s less). Where it is quick, the rest is too, and a second
process loses more than it gains (each computes passes and decisions the other would
have reused). Only the speed depends on this clock: the live set is exact however it is
computed."""

BESIDE_GROUP = 4
"""Requirements whose liveness one claim takes, with liveness beside the rest
(``_Symbolic._beside``): small enough that the two processes end close together, large
enough that each claim shares its sampled states and decisions among a few."""

SAMPLED = 64
"""Reachable states decided first, when a whole analysis asks which requirements are live
(random walks of at most ``WALK`` steps)."""

WALK = 16

PROBES = 4
"""States decided where a requirement alone denies a tool, before its liveness BDD."""

SEEK_STATES = 256
"""States a directed search (``seek``) decides for a tool allowed, or a stop within the
budget, before the breadth-first layers (which reach a deep one only through every state
before it)."""

WITNESS_STATES = 2048
"""Up to this many states in the layers before a witness's depth, its trace is found by a
search of concrete states (shared by the witnesses of an analysis) instead of preimages
(which cost the same however few states there are); and up to this many states of the
target at that depth are listed rather than tested one by one."""

FOCUSED_WITNESS_STATES = 64
"""``WITNESS_STATES`` for an analysis that answers one question (a core's): its one witness
shares the concrete search with no other."""

EARLY_LAYERS = 8
"""Breadth-first layers searched for a requirement being live, or a tool allowed, before
the reachable set ..."""

EARLY_NODES = 2000
"""... while the states they reached take at most this many BDD nodes (the layers of a
system whose states grow complex cost more than the reachable set by chaining)."""


class _OutOfTime(Exception):
    """The deadline passed in the middle of an analysis."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """The bits a step moves: ``current`` (the components' view bits, in order),
    ``renamed`` (next bit → current bit) and ``forward`` (current bit → next bit). Shared
    between groups and subsystems: never changed."""

    current: tuple[str, ...]
    renamed: dict[str, str]
    forward: dict[str, str]


class _Group:
    """Events with the same effect on every component: one relation, one guard."""

    def __init__(self, enc: Encoding, moved: tuple[tuple[Component, int], ...]) -> None:
        self.moved = moved
        self._enc = enc
        self._relation: Node | None = None
        shape = enc.shape([comp for comp, _ in moved])
        self.current = shape.current
        self.renamed = shape.renamed
        self.forward = shape.forward
        self.guard = enc.bdd.false
        self.events: list[Event] = []
        self.range: Node | None = None
        """The states one of its steps can lead to (``_Symbolic._range``), once computed."""

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

    def __init__(self, enc: Encoding, groups: list[_Group]) -> None:
        self.groups = groups
        self.current = groups[0].current
        self.renamed = groups[0].renamed
        self.forward = groups[0].forward
        self.guard = groups[0].guard
        self._enc = enc
        self._relation: Node | None = None
        self.range: Node | None = None
        """The states one of its steps can lead to (``_Symbolic._range``), once computed."""

    @property
    def relation(self) -> Node:
        if self._relation is None:
            self._relation = self._enc.relations([g.moved for g in self.groups])
        return self._relation


class _Symbolic:
    def __init__(
        self,
        system: System,
        enc: Encoding,
        max_states: int | None,
        deadline: float | None,
        focus: str | None,
        budget: int | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.budget = budget
        self.can_finish: Node | None = None
        self.system = system
        self.enc = enc
        self.bdd = enc.bdd
        self.max_states = max_states
        self.deadline = deadline
        self.focus = focus
        comps = system.components
        self.priorities = {id(c): c.requirement.priority for c in comps}
        self.pass_ = _decided(enc, comps, self.priorities)
        self.check_names = [n for c in comps for n in enc.check_bits[id(c)]]
        self._callable_where: dict[str, Node] = {}
        self._live_where: dict[str, Node] = {}
        self._walked: list[State] | None = None
        self.groups = self._groups()
        alike: dict[tuple[tuple[str, ...], Node], list[_Group]] = {}
        for g in self.groups:
            alike.setdefault((g.current, g.guard), []).append(g)
        self.clusters = [_Cluster(enc, gs) for gs in alike.values()]
        self.result = Analysis(depends_on_checks=any(c.opaque for c in comps))
        self.layers: list[Node] = []
        self.layered = self.reach = self.start = self.bdd.false
        self._counts: dict[str, tuple[dict[str, Node], dict[str, Node]]] | None = None
        self.pruned = False
        """Whether some layer kept only part of the states first reached there."""
        self._concrete: list[list[tuple[State, tuple[Event, ...]]]] = []
        """``_concrete_layer``'s layers so far."""
        self._reached: set[State] = set()
        """The states in ``_concrete``."""
        self.settled = False
        """Whether the breadth-first layers reached every reachable state."""

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
        """The states one step after ``states``."""
        out = self.bdd.false
        for c in self.clusters:
            out |= self._image(states, c)
        return out

    def preimage(self, states: Node, within: Node) -> Node:
        """The states of ``within`` with a step (allowed under some check values) into
        ``states``. Only groups whose guard meets ``within`` are stepped back through, so a
        group that cannot fire there never has its relation built."""
        bdd = self.bdd
        out = bdd.false
        for c in self.clusters:
            if within & c.guard != bdd.false:
                out |= self._preimage(states, c)
        # Steps that move no component (e.g. a failed call nothing counts) keep the state.
        return within & (out | (states & self._staying()))

    def _preimage(self, states: Node, g: _Group | _Cluster) -> Node:
        bdd = self.bdd
        primed = _renamed(bdd, states, g.forward)
        nexts = [g.forward[name] for name in g.current]
        if _and_exists is not None:
            back = _and_exists(g.relation, primed, nexts)
        else:  # pragma: no cover
            back = bdd.exist(nexts, g.relation & primed)
        return back & g.guard

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

    # -- the search ----------------------------------------------------------------------------

    def run(self) -> Analysis:
        result = self.result
        self.start = self.enc.cube(
            [b for c in self.system.components for b in self.enc.bits[id(c)]], 0
        )
        self.layers = [self.start]
        self.layered = self.start
        if self.focus is not None and self.focus.startswith("finish:"):
            return self._finish_within(int(self.focus[7:]))
        if self.focus is not None and self.focus.startswith(("live:", "tool:")):
            kind, name = self.focus.split(":", 1)
            try:
                if kind == "live":
                    where = self._live_at(name)
                else:
                    where = self.some(self.pass_.allowed[name])
                depth = self._early(where)
                example = None
                if depth is not None:
                    example = self._witness(where, None, depth).trace
                elif kind == "tool" and not self.settled:
                    example = seek(self.system, name, self.enc.distances, limit=SEEK_STATES)
                if example is not None:
                    # Answers the one question asked (the requirement is live, the tool
                    # allowed); the other verdicts of this analysis are not computed.
                    (result.live if kind == "live" else result.allowed_tools).add(name)
                    result.example = example
                    result.states = self._count(self.layered)
                    result.depth_done = len(self.layers) - 1
                    result.partial = True
                    return result
            except _OutOfTime:
                result.reason = "the time limit ran out"
                result.complete = False
                return result
        self.reach = self._reach()
        so_far = time.monotonic() - self.started
        if self.focus is None:
            # The order the search ends with (sifted by dynamic reordering, or the static
            # one) suits the sets that come after: the liveness, the witnesses and the core
            # questions keep it. (Measured at 50 tools, where the search reorders: CPU time
            # the same or lower than with reordering left on, up to 0.8 s less.)
            self.enc.keep_order()
        # States reached: all of them, or those the search reached before it stopped (every
        # one reachable: a report never says "0 states" of a search that found some).
        result.states = self._count(self.reach)
        if (
            result.reason is None
            and self.max_states is not None
            and result.states > self.max_states
        ):
            result.reason = f"the state limit ({self.max_states}) was reached"
            result.states = self._layers_within(self.max_states)
        try:
            if result.reason is not None:
                # Only what breadth-first layers explored so far is known for sure.
                self.reach = self.layered
                result.depth_done = len(self.layers) - 1
                self._existential()
            elif self.focus is None and (
                result.states > LIVENESS_BESIDE_STATES or so_far > LIVENESS_BESIDE_SECONDS
            ):
                # Which requirements are live is independent of the rest: a second process
                # (a forked child, when the machine allows) finds it meanwhile.
                self._beside()
                result.depth_done = max(len(self.layers) - 1, result.depth_done)
            else:
                self._universal()
                self._existential()
                result.depth_done = max(len(self.layers) - 1, result.depth_done)
        except _OutOfTime:
            result.reason = "the time limit ran out"
        result.complete = result.reason is None
        return result

    def _finish_within(self, steps: int) -> Analysis:
        """Only whether ``final_answer`` is allowed within ``steps`` steps: breadth-first
        layers up to there, no fixpoint, each layer keeping only the states whose lower bound
        (``_fits``) leaves a stop possible in the steps left. (Computing the reachable set
        first, to answer "never" at once or to walk a path through the states that can still
        finish, cost more on the benchmark families than the layers it would save: a core
        question about a budget asks this of many subsystems.)

        The pruning keeps every state of every path that stops within ``steps`` steps (the
        bounds are lower bounds), so the answer, the first finishing depth and the witness
        are those of the layers without it."""
        result, bdd = self.result, self.bdd
        finish = self.some(self.pass_.can_stop)
        found = seek(self.system, FINAL_ANSWER, self.enc.distances, limit=SEEK_STATES, within=steps)
        if found is not None:
            result.finishes_within = len(found)
            result.example = found
            result.partial = True
            return result
        try:
            fits = self._fits(steps)
            self.layers[0] &= fits[steps]
            for d in range(steps + 1):
                layer = self._layer(d, fits[steps - d])
                if layer is None:
                    break
                if layer & finish != bdd.false:
                    result.finish_depth = d
                    result.example = self._witness(finish, None, d).trace
                    break
        except _OutOfTime:
            result.reason = "the time limit ran out"
        result.complete = result.reason is None
        result.depth_done = len(self.layers) - 1
        return result

    def _fits(self, steps: int) -> list[Node]:
        """``fits[k]``: the states from which, by the components' relaxed distances
        (``bounds``), a stop may still be within ``k`` steps: every component's own
        distance is at most ``k``, and so is the sum over tools of the most calls of each
        that a component needs."""
        bdd, enc = self.bdd, self.enc
        cap = steps + 1
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

    def _tick(self) -> None:
        note_progress(layers=len(self.layers), engine="symbolic")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise _OutOfTime

    def _reach(self) -> Node:
        """Every reachable state: a few sweeps of chaining, then event-driven chaining.

        Steps go by clusters of groups (``_Cluster``: one relational product for the
        statuses of a tool, or for tools alike). A *sweep* applies each cluster in turn to
        everything reached so far and adds its image at once. Most policies converge in a
        few sweeps; but a chain of steps through different tools against the cluster order
        (ReAct's act, think, act, think, …) gains one link per sweep. After
        ``CHAINING_SWEEPS`` sweeps without a fixpoint, each cluster keeps a *pending* set of
        states it has not stepped from yet: the cluster with the lowest index and something
        pending runs next, on its pending states only, to its own fixpoint, and what it adds
        becomes pending for the clusters whose guard it meets. A chain is then followed link
        after link as it grows. Both phases compute the same fixpoint: every reached state
        is stepped from by every cluster whose guard holds there.
        (Measured on the benchmark families at 50 tools: event-driven from the start is
        fastest on long chains and slower on many small independent counters; this mix is
        close to the better of the two on each.)
        After each sweep and each cluster's run, a reachable set past ``SIFT_NODES`` nodes
        has the variables sifted once (``Encoding.settle_order``).
        Under dynamic reordering the clusters go bottom up (``_bottom_up``).
        """
        if self.settled:
            return self.layered  # the breadth-first layers reached a fixpoint already
        bdd, reach = self.bdd, self.start
        groups = self._bottom_up() if self.enc.reordering_now() else self.clusters
        try:
            if self.focus is None and self.enc.reordering and self._shallow():
                return self.layered
            # From the start and what breadth-first layers found already (``_early``'s, for
            # one question): reachable states all, so the fixpoint is the same.
            reach = self.start | self.layered
            for _ in range(CHAINING_SWEEPS):
                changed = False
                for g in groups:
                    self._tick()
                    new = self._image(reach, g) & ~reach
                    if new != bdd.false:
                        reach |= new
                        changed = True
                self.enc.settle_order(reach)
                if not changed:
                    return reach
            pending = [reach] * len(groups)
            heap = list(range(len(groups)))
            queued = set(heap)
            while heap:
                i = heapq.heappop(heap)
                queued.discard(i)
                frontier, pending[i] = pending[i], bdd.false
                g = groups[i]
                grown = bdd.false
                while True:
                    self._tick()
                    new = self._image(frontier, g) & ~reach
                    if new == bdd.false:
                        break
                    reach |= new
                    grown |= new
                    frontier = new
                if grown == bdd.false:
                    continue
                self.enc.settle_order(reach)
                for j, h in enumerate(groups):
                    if j != i and grown & h.guard != bdd.false:
                        pending[j] |= grown
                        if j not in queued:
                            heapq.heappush(heap, j)
                            queued.add(j)
        except _OutOfTime:
            self.result.reason = "the time limit ran out"
        return reach

    def _bottom_up(self) -> list[_Cluster]:
        """The clusters by the level of the highest bit they move, lowest first (ties in
        declared order): the steps that change only the lower part of the order join the
        reached set before those that change its upper part, whose images then meet lower
        parts that have grown already (the idea behind saturation). Only the order of the
        steps changes, never the fixpoint.

        Used where dynamic reordering is on, with the levels it has left: `mixed-50-100-9`'s
        search 10.9–12.7 s → 8.4–9.5 s (in process, four runs each), `-7`'s check 9.0 → 8.5 s
        per process. Where the static order stays, it was measured too, and is not used:
        `chain` at 50 tools 1.6 → 1.2 s, but `approvals` up to 7× slower (2.6 → 17.6 s)."""
        level = self.bdd.level_of_var
        top = len(self.bdd.vars)
        return sorted(
            self.clusters,
            key=lambda c: min((level(b) for b in c.current), default=top),
            reverse=True,
        )

    def _shallow(self) -> bool:
        """Whether breadth-first layers, with dynamic reordering off, reach every reachable
        state before the manager holds ``SHALLOW_NODES`` nodes. If they do, they are the
        reachable set, and reordering stays off for the rest of the check (this analysis and
        the core questions after it); if not, they are dropped and reordering is back on.
        Not tried when the manager holds more than ``SHALLOW_START_NODES`` nodes already
        (a large policy: see below).

        Dynamic reordering is on where many global views defeat the static order
        (``GLOBAL_BITS``); but where every run ends in a few steps, the layers stay small in
        that order, and sifting them costs more than it saves: on `mixed-20-40-4` (runs of
        at most 4 steps, 2,529 states) the layers take 0.25 s without reordering, the
        chaining search 0.5–0.6 s with four reorderings; the whole check takes 15 % less
        CPU time, and `mixed-20-40-1`'s 29 % less. An attempt that fails costs more than
        its layers: their relations are built in the static order, and the reorderings
        after it start from there (at 50 tools, where the managers start with 14,000 to
        30,000 nodes, failed attempts cost 0.5–0.7 s, and one check took 1.2 s longer);
        hence no attempt on a large policy."""
        bdd, enc = self.bdd, self.enc
        if len(bdd) > SHALLOW_START_NODES:
            return False
        enc.set_reordering(False)
        try:
            d = 0
            while self._layer(d) is not None:
                d += 1
                if len(bdd) > SHALLOW_NODES:
                    break
            else:
                self.settled = True
                enc.keep_order()
                return True
        except BaseException:
            enc.set_reordering(True)
            raise
        self.layers = [self.start]
        self.layered = self.start
        enc.set_reordering(True)
        return False

    def _image(self, states: Node, g: _Group | _Cluster) -> Node:
        bdd = self.bdd
        source = states & g.guard
        if source == bdd.false:
            return bdd.false
        if _and_exists is not None:
            moved = _and_exists(source, g.relation, g.current)
        else:  # pragma: no cover
            moved = bdd.exist(g.current, source & g.relation)
        return _renamed(bdd, moved, g.renamed)

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

    def _layers_within(self, limit: int) -> int:
        """Breadth-first layers while the states they hold stay within ``limit`` (a layer
        that would pass it is dropped): what a search bounded by ``max_states`` explores.
        Returns how many states those layers hold."""
        # Layers computed already (a search by layers, ``_shallow`` or ``_early``) are kept
        # while they fit; the first that does not, and those after it, are dropped.
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

    def _existential(self) -> None:
        """Findings with a witness: conflicts, ties, the finishing depth."""
        p, some, result = self.pass_, self.some, self.result
        focus = self.focus
        if focus in (None, "finish"):
            within = self._finish_path() if focus is None else None
            if within is not None:
                result.finishes_within = within
            else:
                result.finish_depth = self._first_layer(some(p.can_stop))
        if focus is not None:
            return
        inconsistent = ~p.consistent
        deadlock = some(inconsistent & p.stuck)
        if self._first_layer(deadlock) is not None:
            result.deadlock = self._witness(deadlock, _conflict_kind("deadlock"))
        forcing = inconsistent & ~p.stuck
        for t in self.enc.tools:
            target = some(forcing & p.hard[t])
            if self._first_layer(target) is not None:
                result.forced_conflicts[t] = self._witness(target, _forced_on(t))
        tie = some(p.tie)
        if self._first_layer(tie) is not None:
            result.tie = self._witness(tie, _has_tie)

    def _beside(self) -> None:
        """The whole analysis's verdicts once the reachable set is known, liveness shared
        with a second process (``lanes.run_beside``): that one starts at once on the last of
        the requirements, in groups of ``BESIDE_GROUP``, while this one computes the other
        verdicts and then takes groups from the first, until the two meet. (Liveness is the
        longer part: on `mixed-50-100-9` 1.9 s against 0.9 s, on `mixed-20-40-4` 0.42
        against 0.14.) Which requirements are live does not depend on where it is found."""
        reqs = self.system.requirements
        groups = [reqs[i : i + BESIDE_GROUP] for i in range(0, len(reqs), BESIDE_GROUP)]

        def main() -> None:
            self._universal(live=False)
            self._existential()

        found = run_beside(main, [partial(self._liveness, group) for group in groups])
        self.result.live.update(*found)

    def _universal(self, *, live: bool = True) -> None:
        """Verdicts over every reachable state: allowed tools, no-finish, live requirements
        (``live``: whichever the focus asks for)."""
        bdd, p, some, result, reach = self.bdd, self.pass_, self.some, self.result, self.reach
        focus = self.focus
        if focus in (None, "tools") or focus.startswith("tool:"):
            for t in self.enc.tools:
                if reach & some(p.allowed[t]) != bdd.false:
                    result.allowed_tools.add(t)
        if focus in (None, "no-finish"):
            self._no_finish()
        if not live:
            return
        if focus is None:
            result.live |= self._liveness(self.system.requirements)
        elif focus.startswith("live:"):
            name = focus[5:]
            result.live |= self._liveness([r for r in self.system.requirements if r.name == name])

    def _can_finish(self, finish: Node) -> Node:
        """The reachable states from which some path of deciding states reaches ``finish``:
        backward chaining, event-driven. Each cluster keeps the states added since it last
        stepped back from them (its *pending* set); the cluster with the lowest index whose
        pending set meets its range (the states one of its steps can lead to) steps back
        from those alone, and what it adds becomes pending for every cluster whose range it
        meets. A cluster is skipped only where its preimage must be empty, so the fixpoint
        is the same as stepping every cluster back from everything; but a chain of steps is
        followed link after link (300 tools chained by `only_after`: 90,000 preimages of
        the whole set before, about one per link now). Done as soon as every deciding state
        is in."""
        bdd, reach = self.bdd, self.reach
        deciding = reach & self.some(self.pass_.consistent)
        reaches = reach & finish
        if deciding & ~reaches == bdd.false:
            return reaches
        # A cluster that cannot fire in a deciding state adds nothing (and its relation is
        # never built).
        active = [(c, deciding & c.guard) for c in self.clusters]
        active = [(g, where) for g, where in active if where != bdd.false]
        ranges = [self._range(g) for g, _ in active]
        pending = [reaches] * len(active)
        heap = [i for i in range(len(active)) if reaches & ranges[i] != bdd.false]
        queued = set(heap)
        while heap:
            i = heapq.heappop(heap)
            queued.discard(i)
            g, where = active[i]
            todo, pending[i] = pending[i], bdd.false
            self._tick()
            new = where & self._preimage(todo & ranges[i], g) & ~reaches
            if new == bdd.false:
                continue
            reaches |= new
            if deciding & ~reaches == bdd.false:
                return reaches  # every deciding state is in: nothing more to add
            for j in range(len(active)):
                if new & ranges[j] != bdd.false:  # elsewhere its preimage adds nothing
                    pending[j] |= new
                    if j not in queued:
                        heapq.heappush(heap, j)
                        queued.add(j)
        return reaches

    def _range(self, g: _Group | _Cluster) -> Node:
        """The states one step of ``g`` can lead to (from any state its guard holds in)."""
        if g.range is None:
            g.range = self._image(self.bdd.true, g)
        return g.range

    def _no_finish(self) -> None:
        bdd, p, some, reach = self.bdd, self.pass_, self.some, self.reach
        deciding = reach & some(p.consistent)
        reaches = self.can_finish = self._can_finish(some(p.can_stop))
        stuck = deciding & ~reaches
        if stuck != bdd.false:
            # The finding at its end: the state has a pass (it is stuck, not in conflict).
            witness = self._witness(stuck, lambda o: isinstance(o, Pass))
            self.result.no_finish = Witness(witness.trace, (), witness.depends_on_checks)

    def _finish_path(self) -> int | None:
        """The length of some path to a state that may stop, when one within the budget is
        found by walking forward through states that can still finish (taking the first
        step, in declared order, to a state not visited yet). Budgets are checked against
        it without breadth-first layers; ``finish_depth`` is only computed when this fails.
        """
        if self.budget is None or self.can_finish is None:
            return None
        system, enc = self.system, self.enc
        finish = self.some(self.pass_.can_stop)
        comps = system.components
        state = system.initial
        seen = {state}
        for length in range(self.budget + 1):
            if enc.holds_at(finish, comps, state):
                return length
            step = None
            for tool in system.callable:
                if not enc.holds_at(self._callable(tool), comps, state):
                    continue
                for status in STATUSES:
                    after = system.successor(state, (tool, status))
                    if after not in seen and enc.holds_at(self.can_finish, comps, after):
                        step = after
                        break
                if step is not None:
                    break
            if step is None:
                return None
            seen.add(step)
            state = step
        return None

    def _liveness(self, requirements: Sequence[object]) -> set[str]:
        """Which of ``requirements`` are live in some reachable state."""
        bdd, reach = self.bdd, self.reach
        names = [req.name for req in requirements]  # type: ignore[attr-defined]
        # A few reachable states decided with the runtime reasoner show most live
        # requirements for far less than building each one's "changes the pass" set; when
        # there are no more states than that, they answer for every requirement.
        if self._count(reach) <= FEW_STATES:
            return self._live_by_deciding(names, self._states(reach))
        # Those whose rules change no fact where they are reached are never live: found
        # first (a few BDD operations each), they are left out of the decisions below.
        unmasked = {name: reach & self._unmasked(name) for name in names}
        names = [name for name in names if unmasked[name] != bdd.false]
        live: set[str] = set()
        if len(names) > 1:
            live |= self._live_by_deciding(names, self._walks(), unmasked)
        for name in names:
            if name in live:
                continue
            self._tick()
            if name not in self._live_where and self._count(unmasked[name]) <= FEW_LIVE_STATES:
                # Few reachable states where it could be live: deciding them is exact.
                if self._live_by_deciding([name], self._states(unmasked[name])):
                    live.add(name)
                continue
            # A core question about one requirement is usually about one never live:
            # probing would only add to the BDD below.
            probed = len(names) > 1 and self._probed(name)
            if probed or reach & self._live_at(name) != bdd.false:
                live.add(name)
        return live

    def _unmasked(self, name: str) -> Node:
        """The states (checks quantified; reachable or not) where requirement ``name``'s
        rules change a fact the pass is made of or bid for a soft force, or everywhere when
        it yields or asks permission. Outside them, dropping its records leaves every fact of
        ``_pass`` as it is (another requirement denies, hides, allows, shows or hard-forces
        the same tool there; an allow or show that clashes with nothing is no fact at all),
        and every bid, so the pass is the same: the requirement is not live there. Far
        cheaper than ``_live_at`` (no pass without it), and exact enough for requirements
        masked everywhere.
        """
        bdd = self.bdd
        requirement = next(
            c.requirement for c in self.system.components if c.requirement.name == name
        )
        if requirement.yielding or isinstance(requirement, AskPermissionRequirement):
            return bdd.true
        counts = self._fact_counts()
        out = bdd.false
        for where in self._stated(name, "soft").values():
            out |= where  # wherever it bids, whatever the others bid
        for table in _FACT_TABLES:
            at_least_two = counts[table][1]
            for t, here in self._stated(name, table).items():
                changed = here & ~at_least_two[t]  # no other requirement states it there
                if table == "allow":
                    changed &= counts["deny"][0][t]  # only a clash with a denial counts
                elif table == "show":
                    changed &= counts["hide"][0][t]
                out |= changed
        return self.some(out)

    def _stated(self, name: str, table: str) -> dict[str, Node]:
        """Per tool, where requirement ``name`` (all its factors) states the fact ``table``
        of ``_Facts`` (tools it never states it of are left out)."""
        out: dict[str, Node] = {}
        for comp in self.system.components:
            if comp.requirement.name == name:
                for t, where in getattr(self.enc.facts(comp), table).items():
                    out[t] = out.get(t, self.bdd.false) | where
        return out

    def _fact_counts(self) -> dict[str, tuple[dict[str, Node], dict[str, Node]]]:
        """Per kind of fact and tool, where at least one requirement states it, and where
        at least two do (a requirement's factors count once)."""
        if self._counts is not None:
            return self._counts
        bdd, tools = self.bdd, self.enc.tools
        names = dict.fromkeys(c.requirement.name for c in self.system.components)
        counts: dict[str, tuple[dict[str, Node], dict[str, Node]]] = {}
        for table in _FACT_TABLES:
            one = dict.fromkeys(tools, bdd.false)
            two = dict.fromkeys(tools, bdd.false)
            for name in names:
                for t, here in self._stated(name, table).items():
                    two[t] |= one[t] & here
                    one[t] |= here
            counts[table] = (one, two)
        self._counts = counts
        return counts

    def _probed(self, name: str) -> bool:
        """Whether requirement ``name`` is live at one of ``PROBES`` reachable states where
        it alone denies a tool (where it is most likely live: deciding a few of those often
        shows it without building its "changes the pass" BDD)."""
        alone = self.reach & self._sole_denier(name)
        if alone == self.bdd.false:
            return False
        return bool(self._live_by_deciding([name], itertools.islice(self._states(alone), PROBES)))

    def _sole_denier(self, name: str) -> Node:
        """The states (checks quantified; reachable or not) where requirement ``name``
        denies some tool that no other requirement denies there."""
        at_least_two = self._fact_counts()["deny"][1]
        out = self.bdd.false
        for t, here in self._stated(name, "deny").items():
            out |= here & ~at_least_two[t]
        return self.some(out)

    def _live_by_deciding(
        self,
        names: Sequence[str],
        states: Iterable[State],
        unmasked: Mapping[str, Node] | None = None,
    ) -> set[str]:
        """Which of ``names`` are live at one of ``states`` (reachable ones), each decided
        with and without each requirement's records (the explicit engine's rule). With
        ``unmasked`` (``_unmasked`` by name), a requirement is only decided at the states in
        its set: it is live nowhere else."""
        system, enc, comps = self.system, self.enc, self.system.components
        wanted, live, asking = frozenset(names), set[str](), asking_of(system)
        for state in states:
            if live == wanted:
                break
            self._tick()
            open_ = wanted - live
            if unmasked is not None:
                open_ = frozenset(n for n in open_ if enc.holds_at(unmasked[n], comps, state))
                if not open_:
                    continue
            for records, _ in system.variants(state):
                outcome = decide(system, records)
                live |= live_at(system, records, outcome, open_ - live, asking)
        return live

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

    def _walks(self) -> list[State]:
        """``SAMPLED`` reachable states, from seeded random walks: each step a random
        allowed tool and status (the same walks on every run). Memoised."""
        if self._walked is None:
            self._walked = self._walk()
        return self._walked

    def _walk(self) -> list[State]:
        system = self.system
        rng = random.Random(0)
        seen: dict[State, None] = {}
        for _ in range(SAMPLED):  # at most that many walks
            state = system.initial
            for _ in range(WALK):
                if len(seen) >= SAMPLED:
                    return list(seen)
                seen.setdefault(state)
                allowed = sorted(callable_at(system, state))
                if not allowed:
                    break
                state = system.successor(state, (rng.choice(allowed), rng.choice(STATUSES)))
        return list(seen)

    def _live_at(self, name: str) -> Node:
        """The states (reachable or not) where requirement ``name`` is live: it changes the
        pass, or, asking permission, the pass allows a tool it covers (SPEC §11). Memoised:
        a core question asks it before its search and again of the reachable set."""
        found = self._live_where.get(name)
        if found is None:
            found = self._live_where[name] = self._live_where_now(name)
        return found

    def _live_where_now(self, name: str) -> Node:
        bdd, some, p = self.bdd, self.some, self.pass_
        comps = self.system.components
        mine = [c for c in comps if c.requirement.name == name]  # one per factor
        requirement = mine[0].requirement
        where = bdd.false
        if isinstance(requirement, AskPermissionRequirement):
            for t in self.enc.tools:
                if requirement.covers(t):
                    where |= some(p.allowed[t])
        if not any(
            any((f.deny, f.hide, f.allow, f.show, f.hard, f.soft))
            for f in (self.enc.facts(c) for c in mine)
        ):
            return where  # it restricts nothing anywhere: it cannot change a pass
        others = [c for c in comps if c.requirement.name != name]
        without = _decided(self.enc, others, self.priorities)
        return where | some(_differ(p, without, self.enc.tools))

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

    # -- witnesses -------------------------------------------------------------------------------

    def _witness(
        self, target: Node, finding: Callable[[Outcome], bool] | None, depth: int | None = None
    ) -> Witness:
        """The lexicographically smallest shortest trace into ``target`` (over view bits);
        ``depth``: the first layer meeting it, when the caller knows."""
        system = self.system
        if depth is None:
            depth = self._first_layer(target)
        assert depth is not None
        trace = self._forward_trace(target, depth)
        if trace is None:
            trace = self._backward_trace(target, depth)
        state = system.initial
        depends = False
        for event in trace:
            outcomes = [decide(system, records) for records, _ in system.variants(state)]
            depends = depends or not all(
                isinstance(o, Pass) and event[0] in o.allowed for o in outcomes
            )
            state = system.successor(state, event)
        records: tuple[Emitted, ...] = ()
        if finding is not None:
            decided = [(rs, decide(system, rs)) for rs, _ in system.variants(state)]
            showing = [rs for rs, o in decided if finding(o)]
            # INVARIANT: the target set holds this state under some check values.
            assert showing
            records = showing[0]
            depends = depends or len(showing) < len(decided)
        return Witness(tuple(trace), records, depends)

    def _forward_trace(self, target: Node, depth: int) -> list[Event] | None:
        """The trace of ``_witness`` by a breadth-first search of concrete states through
        the layers (``_concrete_layer``, shared by the witnesses of an analysis), when the
        layers before ``depth`` hold at most ``WITNESS_STATES`` states (None: more). Parents
        are expanded in the order of their traces and steps in declared order, so each
        state is first reached by its smallest trace, as on the way back."""
        if depth == 0:
            return []
        limit = WITNESS_STATES if self.focus is None else FOCUSED_WITNESS_STATES
        before = sum(self._count(layer) for layer in self.layers[:depth])
        if before > limit:
            return None
        enc, comps = self.enc, self.system.components
        goal = self.layers[depth] & target
        members: set[State] | None = None
        if self._count(goal) <= min(WITNESS_STATES, 3 * before):
            # Listing the target's states costs about a third of testing every step from
            # a state before it (each listed state is built bit by bit; a test is a walk).
            members = set(self._states(goal))
        for state, trace in self._concrete_layer(depth - 1):
            for event, after in self._steps_from(state):
                # The target's states at this depth are first reached there.
                if members is not None:
                    if after in members:
                        return [*trace, event]
                elif enc.holds_at(goal, comps, after):
                    return [*trace, event]
        # INVARIANT: layer `depth` meets the target, and the search covered that layer.
        raise AssertionError("no trace into the target")  # pragma: no cover

    def _concrete_layer(self, d: int) -> list[tuple[State, tuple[Event, ...]]]:
        """The states first reached after ``d`` steps, each with its smallest trace, in the
        order of those traces (computed on demand from the layer before; with pruned
        layers, only the states they keep)."""
        enc, comps = self.enc, self.system.components
        found = self._concrete
        while len(found) <= d:
            self._tick()
            k = len(found)
            if k == 0:
                found.append([(self.system.initial, ())])
                self._reached.add(self.system.initial)
                continue
            following: list[tuple[State, tuple[Event, ...]]] = []
            for state, trace in found[k - 1]:
                for event, after in self._steps_from(state):
                    if after in self._reached:
                        continue
                    # A state first reached now is in the layer, unless the layers were
                    # pruned (``_finish_within``): then it must be in it.
                    if self.pruned and not enc.holds_at(self.layers[k], comps, after):
                        continue
                    self._reached.add(after)
                    following.append((after, (*trace, event)))
            found.append(following)
        return found[d]

    def _steps_from(self, state: State) -> list[tuple[Event, State]]:
        """The states a step allowed at ``state`` (under some check values) leads to, each
        with the first such step in declared order (``System.steps_from``)."""
        found = self.system.steps_from(state, callable_at(self.system, state))
        return [(event, after) for after, event in found.items()]

    def _backward_trace(self, target: Node, depth: int) -> list[Event]:
        """The trace of ``_witness`` from the states of each layer that lead into the
        target (preimages), followed forward from the initial state."""
        system, enc, bdd = self.system, self.enc, self.bdd
        back = [bdd.false] * (depth + 1)
        back[depth] = self.layers[depth] & target
        for d in range(depth - 1, -1, -1):
            self._tick()
            back[d] = self.preimage(back[d + 1], self.layers[d])
        state = system.initial
        trace: list[Event] = []
        comps = system.components
        for d in range(depth):
            chosen = next(
                (
                    (event, after)
                    for event, after in self._steps_from(state)
                    if enc.holds_at(back[d + 1], comps, after)
                ),
                None,
            )
            # INVARIANT: back[d] holds `state`, so some step leads into back[d + 1].
            assert chosen is not None
            trace.append(chosen[0])
            state = chosen[1]
        return trace


def _differ(a: _Pass, b: _Pass, tools: Sequence[str]) -> Node:
    """Where two passes differ on what SPEC §8 compares (allowed, hidden, forced, can_stop,
    conflict-or-not)."""

    def xor(u: Node, v: Node) -> Node:
        return (u & ~v) | (~u & v)

    out = xor(a.consistent, b.consistent)
    both = a.consistent & b.consistent
    change = xor(a.can_stop, b.can_stop)
    for t in tools:
        change |= xor(a.allowed[t], b.allowed[t]) | xor(a.hidden[t], b.hidden[t])
        change |= xor(a.forced[t], b.forced[t])
    return out | (both & change)


def _conflict_kind(kind: str) -> Callable[[Outcome], bool]:
    return lambda o: isinstance(o, Clash) and o.kind == kind


def _forced_on(tool: str) -> Callable[[Outcome], bool]:
    return lambda o: isinstance(o, Clash) and o.kind == "forced-conflict" and tool in o.forced


def _has_tie(o: Outcome) -> bool:
    return isinstance(o, Pass) and o.forced_tie is not None


def analyse_symbolic(
    system: System,
    *,
    max_states: int | None = None,
    deadline: float | None = None,
    encoding: Encoding | None = None,
    focus: str | None = None,
    budget: int | None = None,
) -> Analysis:
    """Every verdict ``analyse`` gives, over BDDs (``focus``: only what one question needs:
    ``"finish"``, ``"finish:N"`` (within N steps), ``"no-finish"``, ``"tools"``, ``"tool:T"``
    or ``"live:R"``; the last two stop early, ``Analysis.partial``, when a shallow search
    already shows the tool allowed or the requirement live). With ``budget``,
    ``finish_depth`` is computed only when no path to a stop within that many steps is found
    first (``Analysis.finishes_within``)."""
    enc = encoding if encoding is not None else Encoding(system)
    return _Symbolic(system, enc, max_states, deadline, focus, budget).run()
