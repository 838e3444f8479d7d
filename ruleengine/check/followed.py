"""Tools every history that lets the run stop calls because a soft force follows a call it
must make: what the relaxed product (``relaxed.py``), which forgets soft forces, cannot see.

"`t` forced after `a`, the stop prevented meanwhile", with `a` a tool every such history
calls: right after that call only `t` is allowed, unless something denies `t` or forces
another tool over it. Where nothing can, `t` is called next.

Precisely, in strict mode: let every history that ends where the run may stop (a
*finishing* history) call `a` with a status in ``Σ`` (every status where `a` is needed,
``ok`` where it is needed to succeed); let ``X`` be the calls of `t` sought (all of them, or
the successful ones); and let ``F`` be a component such that, in every variant of every view
of its *hold* (the views it reaches by a ``Σ``-call of `a` from a view it reaches without an
``X``-call, and from those by calls of `t` outside ``X``), it soft-forces `t`, denies
``final_answer`` and neither denies nor hides `t`. If no other component, at the views it
may have there (the same construction: its views without an ``X``-call, moved by a
``Σ``-call of `a`, then by calls of `t` outside ``X``), denies or hides `t`, hard-forces a
tool, or soft-forces another tool that would win over `t` (a higher priority, or as high and
declared before it), and every record of them all is a conjunction of literals, then every
finishing history makes an ``X``-call.

Proof: take a finishing history without an ``X``-call before its first ``Σ``-call of `a`
(else done). Right after that call every component is at a view of the construction, so
`t` is allowed (nothing denies it), forced (no force wins over ``F``'s) and the run may not
stop: the pass allows `t` alone. So the history goes on (it ends where the run may stop)
with a call of `t`: an ``X``-call, or one that keeps every component within the
construction, where the same holds. A finishing history leaves it, so it makes an
``X``-call.

``followed`` closes the needed tools under this, to a fixpoint. Linear in the components'
views × events per candidate pair (a needed tool, a component whose view a call of it moves
to one that forces); no decisions, no BDDs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import Component, System, lowered
from ruleengine.conditions.admission import ArgCheck
from ruleengine.ir import FINAL_ANSWER
from ruleengine.requirements.permission import AskPermissionRequirement
from ruleengine.rules import literals_of
from ruleengine.state import STATUSES

__all__ = [
    "Followed",
    "followed",
    "never_live",
    "only_stops",
    "stop_only",
    "views_reached",
    "waits_for",
]

_OK = STATUSES.index("ok")


@dataclass(frozen=True, slots=True)
class _Effects:
    """What one variant of a component's view does to the pass, as far as this module
    reads it; ``plain`` is false where some record is not a conjunction of literals."""

    plain: bool
    denied: frozenset[str]
    """Tools denied or hidden (``final_answer`` for a prevented stop)."""
    soft: tuple[tuple[str, int], ...]
    """Soft-forced tools, each with its record's priority."""
    hard: bool
    """Whether it hard-forces a tool."""


def _effects(comp: Component, view: int) -> tuple[_Effects, ...]:
    out = []
    for variant in comp.variants[view]:
        plain, hard = True, False
        denied: set[str] = set()
        soft: list[tuple[str, int]] = []
        for e in variant.records:
            low = lowered(e.item)
            literals = literals_of(low.restrict)
            if literals is None or type(e.item) is ArgCheck:
                plain = False  # it may deny what it mentions
                continue
            for kind, tool, value in literals:
                if (kind == "allowed") != value:  # not allowed, or hidden
                    denied.add(tool)
            if low.soft_force is not None:
                soft.append((low.soft_force, e.priority))
            if low.hard_force is not None:
                hard = True
        out.append(_Effects(plain, frozenset(denied), tuple(soft), hard))
    return tuple(out)


def _move(comp: Component, view: int, tool: str, status: int) -> int:
    return comp.moves[comp.classes[tool] * 3 + status][view]


def views_reached(
    comp: Component, start: Iterable[int], events: Iterable[tuple[str, int]]
) -> set[int]:
    """The views of ``comp`` reached from ``start`` by any number of ``events`` (tool,
    status index)."""
    tables = [comp.moves[i] for i in sorted({comp.classes[t] * 3 + s for t, s in events})]
    tables = [table for table in tables if not _still(table)]
    seen = set(start)
    todo = list(seen)
    while todo:
        view = todo.pop()
        for table in tables:
            after = table[view]
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


def _still(table: tuple[int, ...]) -> bool:
    return all(after == view for view, after in enumerate(table))


_Events = frozenset[tuple[str, int]]
"""Steps as (tool, index of the status in ``STATUSES``)."""


class _Follow:
    """The construction of the module's docstring over one system, memoised per question."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.order = {t: i for i, t in enumerate(system.tools)}
        self.every: _Events = frozenset(
            (t, s) for t in system.callable for s in range(len(STATUSES))
        )
        self._effects: dict[tuple[int, int], tuple[_Effects, ...]] = {}
        self._free: dict[tuple[int, _Events], set[int]] = {}

    def effects(self, i: int, view: int) -> tuple[_Effects, ...]:
        key = (i, view)
        found = self._effects.get(key)
        if found is None:
            found = self._effects[key] = _effects(self.system.components[i], view)
        return found

    def there(self, i: int, a: str, statuses: Sequence[int], sought: _Events) -> set[int]:
        """The views component ``i`` may have right after a call of ``a`` with one of
        ``statuses`` made before any of ``sought``, and after calls of the same tool as
        ``sought`` that are not among them (the construction)."""
        comp = self.system.components[i]
        key = (i, sought)
        free = self._free.get(key)
        if free is None:
            free = self._free[key] = views_reached(comp, [0], self.every - sought)
        moved = {_move(comp, v, a, s) for v in free for s in statuses}
        (tool,) = {t for t, _ in sought}
        return views_reached(comp, moved, {(tool, s) for s in range(len(STATUSES))} - sought)

    def holds(
        self,
        f: int,
        a: str,
        statuses: Sequence[int],
        sought: _Events,
        without: frozenset[int] = frozenset(),
    ) -> bool:
        """Whether component ``f`` forces the tool of ``sought`` after a call of ``a``
        with one of ``statuses``, and nothing stands in the way (the module's docstring),
        in the system without the components at indices ``without``."""
        (tool,) = {t for t, _ in sought}
        lowest: int | None = None
        for view in self.there(f, a, statuses, sought):
            for fx in self.effects(f, view):
                forced = {t for t, _ in fx.soft}
                if (
                    not fx.plain
                    or fx.hard
                    or forced != {tool}
                    or FINAL_ANSWER not in fx.denied
                    or tool in fx.denied
                ):
                    return False
                least = min(p for _, p in fx.soft)
                lowest = least if lowest is None else min(lowest, least)
        if lowest is None:
            return False
        for i in range(len(self.system.components)):
            if i == f or i in without:
                continue
            for view in self.there(i, a, statuses, sought):
                for fx in self.effects(i, view):
                    if not fx.plain or fx.hard or tool in fx.denied:
                        return False
                    if any(self._wins(other, p, tool, lowest) for other, p in fx.soft):
                        return False
        return True

    def _wins(self, other: str, priority: int, tool: str, lowest: int) -> bool:
        """Whether a soft force on ``other`` at ``priority`` may win over one on ``tool`` at
        ``lowest`` (the pass forces the highest priority's, ties to the declared order)."""
        if other == tool:
            return False
        if priority != lowest:
            return priority > lowest
        return self.order[other] < self.order[tool]


class Followed:
    """``followed`` and ``never_live`` over one system, sharing what they compute (the
    relaxed product, each component's views before a call): the compositional analysis
    asks about one requirement after another."""

    def __init__(self, system: System) -> None:
        self.system = system
        self._follow = _Follow(system)
        self._relaxed: Relaxed | None = None
        self._forcers = [
            (f, comp, tools)
            for f, comp in enumerate(system.components)
            if not comp.requirement.yielding and (tools := comp.soft_forces)
        ]

    @property
    def relaxed(self) -> Relaxed:
        """The system's relaxed product (made when first asked for)."""
        if self._relaxed is None:
            self._relaxed = Relaxed(self.system.components, self.system.tools)
        return self._relaxed

    def closure(
        self,
        needed: frozenset[str],
        needed_ok: frozenset[str],
        without: frozenset[int] = frozenset(),
    ) -> tuple[frozenset[str], frozenset[str]]:
        """``followed`` of the system without the components at indices ``without``:
        ``needed`` and ``needed_ok`` must be tools that system needs (so)."""
        if self.system.mode != "strict" or self.system.skips:
            return needed, needed_ok
        every = tuple(range(len(STATUSES)))
        grown = True
        while grown:
            grown = False
            for a in sorted(needed - {FINAL_ANSWER}):
                statuses = (_OK,) if a in needed_ok else every
                for f, comp, tools in self._forcers:
                    if f in without or all(
                        _still(comp.moves[comp.classes[a] * 3 + s]) for s in statuses
                    ):
                        continue  # a call of `a` leaves it where it was
                    for tool in sorted(tools - {a, FINAL_ANSWER} - needed_ok):
                        ok = frozenset({(tool, _OK)})
                        if self._follow.holds(f, a, statuses, ok, without):
                            needed, needed_ok = needed | {tool}, needed_ok | {tool}
                            grown = True
                            continue
                        calls = frozenset((tool, s) for s in every)
                        if tool not in needed and self._follow.holds(
                            f, a, statuses, calls, without
                        ):
                            needed = needed | {tool}
                            grown = True
        return needed, needed_ok

    def never_live(self, name: str) -> bool:
        """``never_live`` of requirement ``name``: the tools needed by the others are
        asked of the relaxed product for the tool it waits for and the triggers of what
        forces it (``TRIGGER_ROUNDS`` back), not for every tool."""
        system = self.system
        if system.mode != "strict" or system.skips:
            return False
        mine = frozenset(i for i, c in enumerate(system.components) if c.requirement.name == name)
        comps = [system.components[i] for i in sorted(mine)]
        if not comps or any(isinstance(c.requirement, AskPermissionRequirement) for c in comps):
            return False
        waits = [
            (tool, ok_only)
            for tool in sorted({t for c in comps for t in c.watched})
            for ok_only in (False, True)
            if all(waits_for(c, tool, ok_only) for c in comps)
        ]
        if not waits:
            return False
        asked = {tool for tool, _ in waits}
        for _ in range(TRIGGER_ROUNDS):
            asked |= {
                t
                for f, comp, tools in self._forcers
                if f not in mine and tools & asked
                for t in comp.watched
            }
        others = [i for i in range(len(system.components)) if i not in mine]
        needed = self.relaxed.needed(others, asked)
        needed, needed_ok = self.closure(needed, self.relaxed.needed_ok(others, needed), mine)
        return any(tool in (needed_ok if ok_only else needed) for tool, ok_only in waits)


TRIGGER_ROUNDS = 1
"""Rounds back from a tool through the triggers of what forces it that ``never_live`` asks
the relaxed product about (1: a force after a needed tool). Each round asks about more
tools, a fixpoint over every component each (at 200 tools, 10 to 20 ms)."""


def followed(
    system: System, needed: frozenset[str], needed_ok: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """``needed`` and ``needed_ok`` (tools every finishing history of ``system`` calls, and
    calls successfully: ``Relaxed.needed``, ``Relaxed.needed_ok``) with the tools the
    module's docstring adds, to a fixpoint. Strict mode only (else returned as given).
    Deterministic; cost as the module's docstring says."""
    return Followed(system).closure(needed, needed_ok)


def stop_only(comp: Component) -> bool:
    """Whether each record of ``comp``, at every view, is a conjunction of literals that
    deny ``final_answer`` at most, with no force: it can only keep the run from stopping."""
    for variants in comp.variants:
        for variant in variants:
            for e in variant.records:
                low = lowered(e.item)
                literals = literals_of(low.restrict)
                if literals is None or type(e.item) is ArgCheck:
                    return False
                if low.soft_force is not None or low.hard_force is not None:
                    return False
                if any(lit != ("allowed", FINAL_ANSWER, False) for lit in literals):
                    return False
    return True


def only_stops(system: System, name: str) -> bool:
    """Whether requirement ``name`` of ``system`` only ever keeps the run from stopping
    (``stop_only``, each of its components) and does not ask permission (which is live
    wherever a tool it covers is allowed): it changes a pass only where the others let the
    run stop."""
    mine = [c for c in system.components if c.requirement.name == name]
    if not mine or isinstance(mine[0].requirement, AskPermissionRequirement):
        return False
    return all(stop_only(c) for c in mine)


def waits_for(comp: Component, tool: str, ok_only: bool) -> bool:
    """Whether ``comp`` only ever keeps the run from stopping: each of its records, at
    every view, is a conjunction of literals that deny ``final_answer`` at most, with no
    force; and those that do it only at views it never has again once ``tool`` was called
    (successfully, with ``ok_only``). Such a requirement changes a pass only where every
    other one lets the run stop and ``tool`` was not called so."""
    if not stop_only(comp):
        return False
    statuses = (_OK,) if ok_only else tuple(range(len(STATUSES)))
    everything = [(t, s) for t in comp.classes for s in range(len(STATUSES))]
    reached = views_reached(comp, [0], everything)
    after = {_move(comp, v, tool, s) for v in reached for s in statuses}
    return not any(
        FINAL_ANSWER in fx.denied or not fx.plain
        for view in views_reached(comp, after, everything)
        for fx in _effects(comp, view)
    )


def never_live(system: System, name: str) -> bool:
    """Whether requirement ``name`` of ``system`` is shown to change the pass in no
    reachable state this way: it only keeps the run from stopping until some tool it
    watches is called (``waits_for``, for each of its components), and every history of
    the other requirements that lets the run stop calls that tool so (``Relaxed.needed``
    or ``needed_ok`` of the system without it, closed by ``followed``). The other
    requirements have the same reachable states (a denied stop is no step), and it changes
    a pass only where they let the run stop: True is a proof. Strict mode, view by view,
    and not an ask-permission requirement (live where a tool it asks about is allowed)
    only; False otherwise. A few milliseconds at 50 tools."""
    return Followed(system).never_live(name)
