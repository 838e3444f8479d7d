"""The order in which every finishing history calls the tools it needs, and where those
orders contradict each other: then no history lets the run stop.

Strict mode, components tabulated view by view; yielding requirements are left out (they
give way). A component *surely denies* a tool at a view where, in every variant, some record
that is a conjunction of literals (not a condition on arguments) denies or hides it
(``Component.denied``): in
strict mode a denial always holds, so no step calls that tool there. For a tool `t` that
every finishing history calls (``needed``, ``Relaxed.needed`` closed by ``followed``) and a
tool `x`, a component gives

* a *gate* where it surely denies `t` at every view it reaches without a successful call of
  `x`: every call of `t` comes after the first success of `x`, which therefore happens;
* a *cut* where it surely denies `t` at every view it reaches once `x` has succeeded: every
  call of `t` comes before the first success of `x`, where there is one.

Over the events `F(t)`, the first call of `t`, and `S(t)`, its first success (for a tool
every finishing history calls successfully: ``needed_ok``, and the tools a gate of a needed
tool waits for), with `F(t) ≤ S(t)`: a gate gives `S(x) < F(t)`; a cut, where `x` succeeds,
`S(t) < S(x)` where `t` succeeds, else `F(t) < S(x)`. These hold in every finishing history,
so a cycle of them through a strict edge shows there is none ("`send` only before `load`",
"`test` only after `load`", "`test` only before `send`", each needed: `S(send) < S(load) <
F(test) ≤ S(test) < S(send)`). The relaxed product, monotone, cannot see this: each
requirement alone, and each pair, lets the run stop.

Nothing here needs the history to finish but the tools it must call: the same orders hold of
the histories that call a tool `t` at all (`F(t)`, the gates of its calls closed), and a
cycle there shows that no history calls it (``Orders.never_called``).

Deterministic; linear in the components' views × the tools they watch, then a search of a
graph with two nodes a needed tool; no decisions, no BDDs.
"""

from __future__ import annotations

from collections.abc import Iterable

from ruleengine.check.followed import followed, only_stops, views_reached
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import Component, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.state import STATUSES

__all__ = ["Orders", "never_finishes", "waits_in_vain"]

_OK = STATUSES.index("ok")

_Node = tuple[str, str]
"""An event of the orders: ``("F", t)``, the first call of `t`; ``("S", t)``, its first
success."""


def never_finishes(system: System) -> bool:
    """Whether the orders every finishing history of ``system`` keeps contradict each other
    (the module's docstring): True proves that no history lets the run stop. False proves
    nothing. Strict mode, components tabulated view by view (else False)."""
    if system.mode != "strict" or system.skips:
        return False
    relaxed = Relaxed(system.components, system.tools)
    needed, needed_ok = followed(system, relaxed.needed(), relaxed.needed_ok())
    return Orders(system).clash(needed, needed_ok)


def waits_in_vain(system: System, name: str) -> bool:
    """Whether requirement ``name`` only keeps the run from stopping (``only_stops``, each of
    its components) where the other requirements never let it stop (``never_finishes`` of
    the system without it): it then changes no pass (the others' reachable states are the
    same, a denied stop being no step, and none lets the run stop). True is a proof; strict
    mode, view by view, and not an ask-permission requirement (live where a tool it covers
    is allowed) only. On `indep-conditionals-50-100-0`, 16 requirements are dead so at once
    (each only keeps the stop closed, and the orders of the others clash without it)."""
    if system.mode != "strict" or system.skips:
        return False
    if not only_stops(system, name):
        return False
    names = [r.name for r in system.requirements if r.name != name]
    return never_finishes(system.subsystem(names))


class Orders:
    """The gates and cuts of a system's components (the module's docstring), each component's
    closures computed once, for the questions asked of it."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.plain = system.mode == "strict" and not system.skips
        """Whether the orders hold at all (strict mode, view by view): else no clash."""
        self._facts = (
            [_Facts(c, system.callable) for c in system.components if not c.requirement.yielding]
            if self.plain
            else []
        )

    def never_called(self, tool: str) -> bool:
        """Whether no history calls ``tool``: the orders of the histories that do (the
        gates of its calls, closed, and the cuts among those tools) clash. True is a
        proof (on `indep-approvals-50-100-5`, five tools, each of whose proofs by the
        projections took up to a second, in 10 ms each)."""
        return self.clash(frozenset({tool}), frozenset())

    def clash(self, needed: Iterable[str], needed_ok: Iterable[str]) -> bool:
        """Whether the orders of the histories that call every tool of ``needed`` and call
        those of ``needed_ok`` successfully contradict each other: then there is none. With
        the tools every finishing history calls (and calls successfully), no history lets
        the run stop (``never_finishes``)."""
        if not self.plain:
            return False
        succeeds = set(needed_ok) - {FINAL_ANSWER}
        # A gate of a tool called makes the tool it waits for succeed, and so called: closed.
        calls = (set(needed) - {FINAL_ANSWER}) | succeeds
        gates: set[tuple[str, str]] = set()
        grown = True
        while grown:
            grown = False
            for f in self._facts:
                for x, t in f.gates(calls):
                    if (x, t) not in gates:
                        gates.add((x, t))
                        if x not in succeeds:
                            succeeds.add(x)
                            calls.add(x)
                            grown = True
        edges: dict[_Node, set[tuple[_Node, bool]]] = {}

        def edge(a: _Node, b: _Node, strict: bool) -> None:
            edges.setdefault(a, set()).add((b, strict))

        for t in sorted(calls):
            if t in succeeds:
                edge(("F", t), ("S", t), False)
        for x, t in gates:
            edge(("S", x), ("F", t), True)
        for f in self._facts:
            for x, t in f.cuts(calls, succeeds):
                edge(("S", t) if t in succeeds else ("F", t), ("S", x), True)
        return _strict_cycle(edges)


class _Facts:
    """One component's surely denied tools, view by view, and its gates and cuts (the
    views it reaches without a success of a tool, and once it succeeded, remembered)."""

    def __init__(self, comp: Component, callable_tools: Iterable[str]) -> None:
        self.comp = comp
        self.sure = [comp.denied(v) for v in range(len(comp.views))]
        self.denies = frozenset().union(*self.sure) - {FINAL_ANSWER}
        self.every = [(t, s) for t in callable_tools for s in range(len(STATUSES))]
        self.watched = [x for x in comp.watched if x != FINAL_ANSWER] if self.denies else []
        self._gated: dict[str, frozenset[str]] = {}
        self._cut: dict[str, frozenset[str]] = {}
        self._reached: set[int] | None = None

    def gates(self, called: Iterable[str]) -> list[tuple[str, str]]:
        """``(x, t)``: `t` (of ``called``) surely denied at every view reached without a
        success of `x`."""
        if not self.denies:
            return []
        out: list[tuple[str, str]] = []
        for x in self.watched:
            gated = self._gated.get(x)
            if gated is None:
                without = views_reached(self.comp, [0], [e for e in self.every if e != (x, _OK)])
                gated = self._gated[x] = self.denies.intersection(*(self.sure[v] for v in without))
            out.extend((x, t) for t in sorted(gated.intersection(called)))
        return out

    def cuts(self, called: Iterable[str], succeeds: Iterable[str]) -> list[tuple[str, str]]:
        """``(x, t)``: `t` (of ``called``) surely denied at every view reached once `x`
        (which succeeds) has succeeded."""
        if not self.denies:
            return []
        out: list[tuple[str, str]] = []
        for x in sorted(set(self.watched).intersection(succeeds)):
            cut = self._cut.get(x)
            if cut is None:
                if self._reached is None:
                    self._reached = views_reached(self.comp, [0], self.every)
                moved = {self.comp.move(v, x, "ok") for v in self._reached}
                after = views_reached(self.comp, moved, self.every)
                # `x` itself: its first success is the call, not one before (a cap of one).
                cut = self._cut[x] = self.denies.intersection(*(self.sure[v] for v in after)) - {x}
            out.extend((x, t) for t in sorted(cut.intersection(called)))
        return out


def _strict_cycle(edges: dict[_Node, set[tuple[_Node, bool]]]) -> bool:
    """Whether some cycle of ``edges`` goes through a strict one: a strict edge ``a → b``
    with ``a`` reachable from ``b``."""
    reach: dict[_Node, set[_Node]] = {}

    def reachable(start: _Node) -> set[_Node]:
        found = reach.get(start)
        if found is None:
            found = {start}
            todo = [start]
            while todo:
                node = todo.pop()
                for after, _ in edges.get(node, ()):
                    if after not in found:
                        found.add(after)
                        todo.append(after)
            reach[start] = found
        return found

    return any(
        strict and a in reachable(b) for a in sorted(edges) for b, strict in sorted(edges[a])
    )
