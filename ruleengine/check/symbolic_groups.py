"""Independent groups of components: exact distances without breadth-first layers.

Many systems split into *groups* of components that never read each other: every step moves
the components of one group only, and where a tool may be called depends on that group's
views alone (per-tool counters: each tool's own requirements). The runs of such a system are
exactly the interleavings of each group's own runs, since a step of one group neither moves
another group nor changes where that group's tools may be called. So the fewest steps from a
state ``s`` to a set of states ``T`` is

    min over t in T of  sum over groups g of  dist_g(s_g, t_g)

where ``dist_g`` is the fewest steps within group ``g`` alone (unreachable: infinite). Each
group is small, so its states are searched explicitly; the minimum is a walk down ``T``'s
BDD group by group (``_Groups.distance``: the cofactors of ``T`` by each group's states, with
the cost of the cheapest way to each). That replaces the breadth-first layers of the whole
product, and the preimages back through them, which cost the most on such systems: their
layers are sums of per-group depths, large BDDs even where the reachable set is small
(50 tools each with its own caps: some 80 layers to the first deadlock, 30 s).

The groups come from the encoding, not from what a requirement says it reads: components are
joined when a tool moves both, or when the set of states where a step may call a tool
(``Layers._callable``, the pass's own BDD) depends on both. A set over a component's bits
depends on it only if the function does (BDDs are canonical), so the split is exact.

Witnesses keep their definition: ``trace`` walks forward from the initial state taking, at
each step, the first step in declared order (``System.steps_from``) whose successor is still
at the right distance from the target: the lexicographically smallest shortest trace, as the
layers give it. A target whose cofactors grow past ``COFACTORS`` raises ``TooComplex``, and
the caller takes the layers instead; a group whose views multiply past ``GROUP_STATES``
gives no split at all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from ruleengine.check.symbolic_encoding import EncodingBase, Node
from ruleengine.check.system import Event, State, System
from ruleengine.state import STATUSES

__all__ = ["COFACTORS", "GROUP_STATES", "Groups", "TooComplex", "split"]

GROUP_STATES = 4096
"""A group whose components' views multiply to more than this is not searched explicitly:
no split."""

COFACTORS = 100_000
"""Cofactors of one target, at most, before ``TooComplex`` (the layers answer instead)."""

_UNREACHED = -1


class TooComplex(Exception):
    """The target's BDD does not fall apart by groups cheaply enough."""


class Groups:
    """The groups of a system, each with its reachable states and the steps between them."""

    def __init__(
        self,
        enc: EncodingBase,
        members: list[list[int]],
        states: list[list[tuple[int, ...]]],
        edges: list[list[list[int]]],
        bits: list[list[dict[str, bool]]],
    ) -> None:
        self._bdd = enc.bdd
        self.members = members
        """Per group, its components (indices into ``System.components``)."""
        self._index = [{s: j for j, s in enumerate(group)} for group in states]
        self._edges = edges
        self._bits = bits
        self._from: dict[tuple[int, int], list[int]] = {}
        self._cofactors: dict[tuple[int, Node], list[tuple[int, Node]]] = {}
        self._distances: dict[tuple[Node, State], int | None] = {}
        self._reach_sets: dict[int, list[Node]] = {}
        self._cube_sets: dict[int, list[Node]] = {}
        self._made = 0
        """Cofactors computed so far (``COFACTORS`` at most)."""

    def distance(self, target: Node, state: State) -> int | None:
        """The fewest steps from ``state`` (a reachable state) to one in ``target`` (None:
        none is reachable from it)."""
        key = (target, state)
        if key in self._distances:
            return self._distances[key]
        true = self._bdd.true
        frontier: dict[Node, int] = {target: 0}
        for k, members in enumerate(self.members):
            source = self._index[k][tuple(state[i] for i in members)]
            dist = self._dist_from(k, source)
            following: dict[Node, int] = {}
            for f, cost in frontier.items():
                if f == true:  # every state of this group stays where it is: 0 steps
                    following[f] = min(cost, following.get(f, cost))
                    continue
                for j, g in self._cofactors_of(k, f):
                    d = dist[j]
                    if d == _UNREACHED:
                        continue
                    total = cost + d
                    if total < following.get(g, total + 1):
                        following[g] = total
            frontier = following
            if not frontier:
                break
        # INVARIANT: every bit of the target is some group's, so all that is left is true.
        assert all(f == true for f in frontier)
        found = frontier.get(true)
        self._distances[key] = found
        return found

    def backward(self, target: Node) -> Node:
        """The states from which some run reaches ``target``: the states ``s`` with a
        ``t`` in ``target`` such that each group reaches ``t``'s views from ``s``'s on its
        own (exact for states whose groups' views are each reachable in their group, as
        every reachable state's are; callers intersect it with the reachable set). Built
        bottom up over ``target``'s cofactors by groups: at group ``k``, the cofactor ``f``
        gives the union, over the group's states ``j``, of the group's states that reach
        ``j`` and the answer for ``f`` with ``j`` set."""
        bdd = self._bdd
        true, false = bdd.true, bdd.false
        levels: list[list[Node]] = [[target]]
        for k in range(len(self.members)):
            seen: dict[Node, None] = {}
            for f in levels[k]:
                for _, g in [(0, f)] if f == true else self._cofactors_of(k, f):
                    seen.setdefault(g)
            levels.append(list(seen))
        # INVARIANT: every bit of the target is some group's.
        assert all(f == true for f in levels[-1])
        answer: dict[Node, Node] = {true: true}
        for k in range(len(self.members) - 1, -1, -1):
            reaching = self._reaching(k)
            here: dict[Node, Node] = {true: true}
            for f in levels[k]:
                if f == true:
                    continue
                by_child: dict[Node, Node] = {}
                for j, g in self._cofactors_of(k, f):
                    by_child[g] = by_child.get(g, false) | reaching[j]
                out = false
                for g, where in by_child.items():
                    out |= where & answer[g]
                here[f] = out
            answer = here
        return answer[target]

    def reachable(self) -> Node:
        """The reachable states of the whole system: every combination of states the groups
        reach on their own (a step of one group changes neither another group's views nor
        where that group's tools may be called, so the groups' runs can follow one another
        in any order)."""
        bdd = self._bdd
        out = bdd.true
        for k in range(len(self.members)):
            here = bdd.false
            for cube in self._cubes(k):
                here |= cube
            out &= here
        return out

    def _cubes(self, k: int) -> list[Node]:
        """Group ``k``'s states as cubes over its bits, memoised."""
        found = self._cube_sets.get(k)
        if found is None:
            bdd = self._bdd
            found = [bdd.cube(values) if values else bdd.true for values in self._bits[k]]
            self._cube_sets[k] = found
        return found

    def _reaching(self, k: int) -> list[Node]:
        """Per state ``j`` of group ``k``, the group's states (over its bits) from which
        its own steps reach ``j``, memoised."""
        found = self._reach_sets.get(k)
        if found is None:
            bdd, edges = self._bdd, self._edges[k]
            cubes = self._cubes(k)
            back: list[list[int]] = [[] for _ in edges]
            for j, out in enumerate(edges):
                for after in out:
                    back[after].append(j)
            found = []
            for j in range(len(edges)):
                seen = {j}
                queue = deque([j])
                while queue:
                    for before in back[queue.popleft()]:
                        if before not in seen:
                            seen.add(before)
                            queue.append(before)
                where = bdd.false
                for i in seen:
                    where |= cubes[i]
                found.append(where)
            self._reach_sets[k] = found
        return found

    def trace(
        self,
        target: Node,
        depth: int,
        start: State,
        steps_from: Callable[[State], Sequence[tuple[Event, State]]],
        tick: Callable[[], None],
    ) -> list[Event]:
        """The lexicographically smallest of the shortest traces from ``start`` into
        ``target``, ``depth`` steps long: at each step the first of ``steps_from`` (in
        declared order) whose successor is ``depth - i - 1`` steps from the target."""
        state, trace = start, []
        for i in range(depth):
            tick()
            left = depth - i - 1
            chosen = next(
                (
                    (event, after)
                    for event, after in steps_from(state)
                    if after != state and self.distance(target, after) == left
                ),
                None,
            )
            # INVARIANT: `state` is `left + 1` steps from the target, so a step leads on.
            assert chosen is not None
            trace.append(chosen[0])
            state = chosen[1]
        return trace

    def _dist_from(self, k: int, source: int) -> list[int]:
        """The fewest steps within group ``k`` from its state ``source`` to each of its
        states (``_UNREACHED``: none), memoised."""
        found = self._from.get((k, source))
        if found is None:
            edges = self._edges[k]
            found = [_UNREACHED] * len(edges)
            found[source] = 0
            queue = deque([source])
            while queue:
                j = queue.popleft()
                for after in edges[j]:
                    if found[after] == _UNREACHED:
                        found[after] = found[j] + 1
                        queue.append(after)
            self._from[(k, source)] = found
        return found

    def _cofactors_of(self, k: int, f: Node) -> list[tuple[int, Node]]:
        """``f`` with group ``k``'s bits set to each of its states, the false ones left out
        (memoised)."""
        found = self._cofactors.get((k, f))
        if found is None:
            bdd = self._bdd
            self._made += len(self._bits[k])
            if self._made > COFACTORS:
                raise TooComplex
            found = []
            for j, values in enumerate(self._bits[k]):
                g = bdd.let(values, f) if values else f
                if g != bdd.false:
                    found.append((j, g))
            self._cofactors[(k, f)] = found
        return found


def split(
    system: System,
    enc: EncodingBase,
    guard: Callable[[str], Node],
    tick: Callable[[], None],
) -> Groups | None:
    """The independent groups of ``system`` (``guard``: where a step may call a tool, over
    the view bits), or None when fewer than two of them have tools or one is too large to
    search."""
    comps = system.components
    if len(comps) < 2:
        return None
    owner = {b: i for i, c in enumerate(comps) for b in enc.bits[id(c)]}
    parent = list(range(len(comps)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(here: set[int]) -> None:
        if here:
            first = find(min(here))
            for i in here:
                parent[find(i)] = first

    linked: dict[str, set[int]] = {}
    for tool in system.callable:
        linked[tool] = {
            i
            for i, c in enumerate(comps)
            if not all(c.still[c.classes[tool] * 3 + s] for s in range(len(STATUSES)))
        }
        join(linked[tool])
    if len({find(i) for here in linked.values() for i in here}) < 2:
        return None  # the moves alone join every moving component: no split (cheap to see)
    for tool, here in linked.items():
        for name in enc.bdd.support(guard(tool)):
            if name not in owner:
                return None  # a bit that is no component's view (an opaque check)
            here.add(owner[name])
        join(here)
    roots: dict[int, list[int]] = {}
    for i in range(len(comps)):
        roots.setdefault(find(i), []).append(i)
    tools_of: dict[int, list[str]] = {}
    for tool, here in linked.items():
        if here:
            tools_of.setdefault(find(next(iter(here))), []).append(tool)
    if len(tools_of) < 2:
        # One group moves (the others never leave their first views): the layers of the
        # whole are that group's, and searching it would only repeat them.
        return None
    level = enc.bdd.level_of_var

    def top(members: list[int]) -> int:
        names = [b for i in members for b in enc.bits[id(comps[i])]]
        return min((level(b) for b in names), default=-1)

    # Groups in the order of their bits, so the walk down a target meets them top down.
    members = sorted(roots.values(), key=top)
    for group in members:
        views = 1
        for i in group:
            views *= len(comps[i].views)
        if views > GROUP_STATES:
            return None  # searching it could cost more than the layers save
    states, edges, bits = [], [], []
    for group in members:
        found = _search(system, enc, group, tools_of.get(find(group[0]), []), guard, tick)
        states.append(found[0])
        edges.append(found[1])
        bits.append(
            [
                {
                    name: bool(view >> b & 1)
                    for i, view in zip(group, s, strict=True)
                    for b, name in enumerate(enc.bits[id(comps[i])])
                }
                for s in found[0]
            ]
        )
    return Groups(enc, members, states, edges, bits)


def _search(
    system: System,
    enc: EncodingBase,
    members: list[int],
    tools: list[str],
    guard: Callable[[str], Node],
    tick: Callable[[], None],
) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """Group ``members``'s reachable states (from the initial views) and, per state, the
    states one step of ``tools`` leads to."""
    comps = [system.components[i] for i in members]
    start = tuple(0 for _ in comps)
    index = {start: 0}
    states = [start]
    edges: list[list[int]] = []
    tables = {
        tool: [[c.moves[c.classes[tool] * 3 + s] for c in comps] for s in range(len(STATUSES))]
        for tool in tools
    }
    where = {tool: guard(tool) for tool in tools}
    j = 0
    while j < len(states):
        if j % 256 == 0:
            tick()
        state = states[j]
        out: list[int] = []
        for tool in tools:
            if not enc.holds_at(where[tool], comps, state):
                continue
            for moves in tables[tool]:
                after = tuple(table[v] for table, v in zip(moves, state, strict=True))
                if after == state:
                    continue
                k = index.get(after)
                if k is None:
                    k = index[after] = len(states)
                    states.append(after)
                if k not in out:
                    out.append(k)
        edges.append(out)
        j += 1
    return states, edges
