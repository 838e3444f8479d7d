"""An over-approximation of a system's reachable states, from its requirements one and two
at a time: what it rules out, no history reaches.

Each requirement's component, on its own, in the *relaxed product* (``relaxed``: a tool is
open unless the component itself denies it or hard-forces another, among the tools the
relaxed product counts callable): in strict mode every step of the system is such a step of
each component (denials always hold, a hard force leaves one tool, soft forces only
narrow), so every reachable state has each component at a view it reaches on its own. The
same holds of any two components together, whose relaxed product is exact for the pair:
``Projections.narrowed`` refines a question's states by the pairs that exclude a state it
picks (counterexample-guided, without triples). The laws check that no reachable state is
ever ruled out (``tests/property/test_check_compositional_laws.py``).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ruleengine.check._bdd import pick
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.symbolic_encoding import EncodingBase
from ruleengine.check.system import Component, State, System

__all__ = ["Projections", "without_dead"]

Node = Any
"""A BDD node of the encoding's manager."""

REFINE_ROUNDS = 64
"""Rounds of adding pairs before a "never" is given up as undecided."""

PAIR_STATES = 5000
"""The most views a pair's relaxed product may reach (a larger pair is not added)."""

PAIR_BUDGET = 400
"""Pairs one question may compute (those computed before are free)."""

STOP_EVERY = 256
"""Pairs ``every_pair`` considers between two questions whether to stop."""

NARROW_NODES = 20_000
"""BDD nodes past which a question's states are given up as too large to narrow."""

GROWN_NODES = 200_000
"""BDD nodes past which a question's states, conjoined with the pairs one by one within a
round, are given up (``_given_up``)."""


class Projections:
    """An over-approximation of the reachable states of ``system`` (strict mode, literal
    rules) over ``enc``'s current-state bits, refined on demand (see the module's
    docstring). ``never(where)`` is a proof that no reachable state is in ``where`` when it
    says True; False means only that the projections could not show it. ``never``: tools
    shown never allowed in a reachable state, whose steps every projection leaves out (no
    history takes one). ``relaxed=False`` takes no component's relaxed product: the
    projections rule out no state (in priority mode a higher tier may override a
    component's denial, so a component alone does not bound the runs). ``previous``: the
    same system's projections with fewer tools left out, whose own views and pairs this
    one takes over where leaving the others out changes nothing (``_taken_over``)."""

    _kept: list[int]
    callable: frozenset[str]
    """The tools the relaxed product counts callable (a superset of the real ones)."""
    _open: dict[int, list[frozenset[str]]]
    _moving: dict[int, frozenset[str]]
    _blocks: dict[int, dict[tuple[int, int], frozenset[str]]]
    """Per component (as asked), the callable tools by what they are to it: their class,
    and the views where they are open (a mask)."""
    _restricting: dict[int, frozenset[str]]
    _owner: dict[str, int]

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        start: State | None = None,
        *,
        like: Projections | None = None,
        never: frozenset[str] = frozenset(),
        relaxed: bool = True,
        previous: Projections | None = None,
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
            self._moving, self._blocks = like._moving, like._blocks
            self._restricting, self._owner = like._restricting, like._owner
        elif not relaxed:  # no component bounds the runs: every state of views is kept
            self._kept, self.callable = [], frozenset(system.tools) - never
            self._open, self._moving, self._blocks, self._restricting = {}, {}, {}, {}
            self._owner = {}
        else:
            self._kept = [i for i, c in enumerate(comps) if not c.requirement.yielding]
            self.callable = Relaxed(comps, system.tools).callable(never=never)
            self._open = {i: self._open_at(comps[i]) for i in self._kept}
            self._moving = {i: self._moving_tools(comps[i]) for i in self._kept}
            self._blocks = {}
            self._restricting = {i: self._restricted_tools(i) for i in self._kept}
            self._owner = {b: i for i, c in enumerate(comps) for b in enc.bits[id(c)]}
        self.dead: frozenset[str] = like.dead if like is not None else never
        """The tools whose steps it leaves out."""
        self.views: dict[int, frozenset[int]] = {}
        """Per component (not yielding), the views it reaches on its own."""
        self.reached = self.bdd.true
        """The states whose every component is at a view it reaches on its own (the pairs a
        refinement adds are kept apart: ``never`` conjoins only those a question reads)."""
        if not relaxed:
            self.reached = enc.views(comps)
        self._pairs: dict[tuple[int, int], Node | None] = {}
        self._pair_seen: dict[tuple[int, int], set[tuple[int, ...]] | None] = {}
        self._added: dict[tuple[int, int], Node] = {}
        """The pairs a refinement needed, kept for later questions."""
        kept = self._taken_over(previous) if like is None and relaxed else {}
        for i in self._kept:
            found = kept.get(i)
            if found is None:
                found = self._own_views(i)
            self.views[i] = found
            self.reached &= self._set((i,), ((v,) for v in found))

    def _taken_over(self, previous: Projections | None) -> dict[int, frozenset[int]]:
        """What ``previous`` (the same system's projections from the same start, over the
        same encoding, with fewer tools never taken) computed as this one would, taken
        over: the own views of a component, and the views a pair reaches, wherever their
        relaxed product takes the same steps. A step there stands for a block of tools
        alike to each member (``_reach``); leaving tools out changes the steps only where
        it empties a block (the others' blocks are the same, less the tools left out).
        At 200 tools and 400 random conditionals, rebuilt without four dead tools: 77
        components are moved by every tool ("not twice in a row"), yet each block keeps
        other tools, so the 28,700 pairs (5 s) need not be computed again. The own views
        taken over, by component."""
        if (
            previous is None
            or previous.system is not self.system
            or previous.enc is not self.enc
            or previous.start != self.start
            or previous._kept != self._kept
            or not self.callable <= previous.callable
        ):
            return {}
        left_out = previous.callable - self.callable
        blocks: dict[tuple[int, str], frozenset[str]] = {}

        def block(i: int, tool: str) -> frozenset[str]:
            """The block of ``tool`` in component ``i``'s partition, in ``previous``."""
            found = blocks.get((i, tool))
            if found is None:
                found = next(b for b in previous._blocks_of(i).values() if tool in b)
                blocks[(i, tool)] = found
            return found

        def same_steps(members: tuple[int, ...]) -> bool:
            moving = frozenset().union(*(previous._moving[i] for i in members))
            for tool in moving & left_out:
                joint = moving
                for i in members:
                    joint &= block(i, tool)
                if joint <= left_out:
                    return False  # a step of the earlier product is gone
            return True

        views = {
            i: previous.views[i] for i in self._kept if i in previous.views and same_steps((i,))
        }
        for key, seen in previous._pair_seen.items():
            if same_steps(key):
                self._pair_seen[key] = seen
                if key in previous._pairs:
                    self._pairs[key] = previous._pairs[key]
                if key in previous._added:
                    self._added[key] = previous._added[key]
        return views

    def _own_views(self, i: int) -> frozenset[int]:
        """The views component ``i`` reaches on its own; every view it has where they are
        more than ``PAIR_STATES`` (a count to 10,000, say): a superset keeps every
        reachable state."""
        try:
            return frozenset(v for (v,) in self._reach((i,)))
        except _TooLarge:
            return frozenset(range(len(self.system.components[i].views)))

    def at(self, state: State) -> Projections:
        """The same over-approximation for the runs from ``state`` (a reachable one),
        sharing this one's tables."""
        return Projections(self.system, self.enc, state, like=self)

    def _blocks_of(self, i: int) -> dict[tuple[int, int], frozenset[str]]:
        """``_blocks[i]``, made when first asked for."""
        found = self._blocks.get(i)
        if found is None:
            comp, opens = self.system.components[i], self._open[i]
            by: dict[tuple[int, int], set[str]] = {}
            for tool in self.callable:
                mask = sum(1 << v for v, here in enumerate(opens) if tool in here)
                by.setdefault((comp.classes[tool], mask), set()).add(tool)
            found = self._blocks[i] = {k: frozenset(v) for k, v in by.items()}
        return found

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
        steps: list[tuple[list[tuple[tuple[int, ...], ...]], tuple[int, ...]]] = []
        moving: frozenset[str] = frozenset().union(*(self._moving[i] for i in members))
        # The tools alike to every member: the blocks of each member's own partition that
        # meet (a few per member, where asking tool by tool costs every callable tool).
        joint: list[tuple[tuple[tuple[int, int], ...], frozenset[str]]] = [((), moving)]
        for i in members:
            joint = [
                ((*key, k), common)
                for key, tools in joint
                for k, block in self._blocks_of(i).items()
                if (common := tools & block)
            ]
        for key, _ in sorted(joint, key=lambda kept: kept[0]):
            first = [cls * 3 for cls, _ in key]
            steps.append(
                (
                    [
                        tuple(c.moves[t + s] for c, t in zip(comps, first, strict=True))
                        for s in range(3)
                    ],
                    tuple(mask for _, mask in key),
                )
            )
        start = tuple(self.start[i] for i in members)
        seen = {start}
        todo = deque([start])
        while todo:
            views = todo.popleft()
            for moves, masks in steps:
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
            seen = self._pair_views(key)
            self._pairs[key] = None if seen is None else self._set(key, seen)
        return self._pairs[key]

    def _pair_views(self, key: tuple[int, int]) -> set[tuple[int, ...]] | None:
        """The pairs of views ``key``'s relaxed product reaches (memoised; None past
        ``PAIR_STATES``)."""
        if key not in self._pair_seen:
            try:
                found: set[tuple[int, ...]] | None = self._reach(key)
            except _TooLarge:
                found = None
            self._pair_seen[key] = found
        return self._pair_seen[key]

    def _plain(self, key: tuple[int, int]) -> bool:
        """Whether the pair reaches every pair of views its components reach on their own:
        then it rules out nothing ``reached`` does not (most pairs that interact, on wide
        random policies)."""
        seen = self._pair_views(key)
        i, j = key
        return seen is not None and len(seen) == len(self.views[i]) * len(self.views[j])

    def every_pair(self, stop: Callable[[], bool] | None = None) -> list[Node]:
        """The reachable views of every pair of components that interact (``pair``; those
        too large left out), in index order: each is a set that every reachable state is
        in, so their conjunction is the tightest over-approximation the pairs give (a pair
        that reaches every pair of its components' own views is left out: it adds nothing
        to ``reached``). It is meant for a solver, which conjoins them lazily, where
        ``narrowed`` must build their conjunction as one diagram and gives up when it
        grows. Stops early, with the pairs so far (still each a set every reachable state
        is in), once ``stop()`` is true."""
        out = []
        for n, (i, j) in enumerate(itertools.combinations(self._kept, 2)):
            if stop is not None and n % STOP_EVERY == 0 and stop():
                break
            if self.interact(i, j) and not self._plain((i, j)):
                found = self.pair(i, j)
                if found is not None:
                    out.append(found)
        return out

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
                    if u == bdd.false or _given_up(u, deadline):
                        return u
                continue
            picked = pick(bdd, u)
            assert picked is not None
            values = {
                b: bool(picked.get(b, False)) for i in members for b in enc.bits[id(comps[i])]
            }
            added = False
            # Components away from their start view first: their pairs exclude most.
            moved = [i for i in members if enc.view(comps[i], values) != self.start[i]]
            rest = [i for i in members if i not in moved]
            ordered = [*itertools.combinations(moved, 2), *itertools.product(moved, rest)]
            ordered += itertools.combinations(rest, 2)
            for a, b in ordered:
                pair = (a, b) if a < b else (b, a)
                if pair in self._added or not self.interact(*pair):
                    continue
                if pair not in self._pair_seen:
                    budget -= 1
                    if budget < 0 or (deadline is not None and time.monotonic() > deadline):
                        return u
                if self._plain(pair):
                    continue  # it excludes no state of ``reached``, where ``u`` lies
                found = self.pair(*pair)
                if found is not None and not enc.contains(found, values):
                    self._added[pair] = found
                    used.add(pair)
                    u &= found
                    added = True
                    if _given_up(u, deadline):
                        return u
            if not added:
                return u
        return u

    def _members(self, u: Node) -> list[int]:
        """The components (not yielding) whose bits ``u`` reads, in index order."""
        found = {self._owner[b] for b in self.bdd.support(u) if b in self._owner}
        return sorted(i for i in found if i in self.views)


def _given_up(u: Node, deadline: float | None) -> bool:
    """Whether ``narrowed`` gives up on ``u``, conjoined with one pair more within a
    round: past the deadline, or past ``GROWN_NODES`` (a pair can multiply the states'
    diagram: on `indep-counters-50-100-3` ten conjunctions within one round took it to six
    million nodes and 50 s, none of them looking at the clock; the next ones may shrink it
    again, so the bound is looser than the rounds' ``NARROW_NODES``)."""
    if deadline is not None and time.monotonic() > deadline:
        return True
    return bool(u.dag_size > GROWN_NODES)


class _TooLarge(Exception):
    """A pair's relaxed product passed ``PAIR_STATES``."""


def without_dead(
    projections: Projections,
    allowed: Callable[[str], Node],
    asked: Iterable[str],
    dead: frozenset[str] = frozenset(),
    deadline: float | None = None,
) -> tuple[Projections, frozenset[str]]:
    """``projections`` without the steps of the tools never allowed: ``dead`` (shown so
    already) and those of ``asked`` the projections show never allowed (``allowed(tool)``:
    the states where it is), rebuilt and asked again until they show no more (what only a
    dead tool opens is dead too, and so on down a chain). The projections (``projections``
    itself where nothing more is dead) and every dead tool. Deterministic (``asked`` in
    its order); at ``deadline``, what was shown by then. Cost: a question per tool of
    ``asked`` not yet dead per round, a round per link of the longest chain."""
    system = projections.system
    shown, asked = dead, list(asked)
    while True:
        if shown - projections.dead:
            projections = Projections(
                system, projections.enc, never=shown | projections.dead, previous=projections
            )
        more = frozenset(
            t
            for t in asked
            if t not in shown
            and not (deadline is not None and time.monotonic() > deadline)
            and projections.never(allowed(t), deadline)
        )
        if not more:
            return projections, shown
        shown |= more
