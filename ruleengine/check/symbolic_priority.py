"""The pass in priority mode as BDDs (literal rules), for the symbolic engine.

Priority mode (SPEC §4.8) makes every rule soft at its priority. Tiers go from the highest
priority down, each priority's restricting units (denials, hiding, a prevented stop, hard
forces) before its permitting ones (``Rule(allowed=True)`` asserts the tool allowed); a unit
that contradicts what the tiers above kept is overridden, and the tier's survivors, if they
still contradict what is kept, are a clash. With literal units "contradict" is five plain
conditions (``Layout.literal_consistent``): a tool both denied and required allowed, both
hidden and required visible, every tool denied, two hard forces, a hard force on a denied
tool. Each holds of the kept units' union, so what a tier keeps is, per kind of unit, where
the unit is emitted and consistent with the union above: the tiers are a fold over BDDs,
one per tool and kind of fact. A record whose restricting or permitting unit is overridden
is dropped whole, its soft force with it. (A permitting tier never clashes: its units only
require tools allowed, each consistent with what is kept, so all of them together are.)

Yielding requirements (cycle guards) give way where the runtime's core holds one of them
(``Reasoner._yield``). That core is QuickXplain's, so whether it holds the guard depends on
the order it tries the rules in, except where the answer is forced either way; ``_decided``
takes those cases (``Tiers.unsure`` marks the rest), and the engine refuses a system where
one can arise (``Ambiguous``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ruleengine.check.symbolic_encoding import (
    EncodingBase,
    Masks,
    Node,
    Record,
    _decided,
    _given_way,
    _Pass,
    _resolved,
)
from ruleengine.check.system import Component

__all__ = ["Ambiguous", "decided", "priority_decided"]


class Ambiguous(Exception):
    """A step of priority mode whose pass the runtime's choice of core decides: where the
    rules clash below a yielding requirement's priority and would clash without it too,
    whether it gives way depends on which minimal core QuickXplain finds first."""


@dataclass(slots=True)
class _Kept:
    """The units kept so far: per tool, where one denies it, hides it, requires it allowed,
    requires it visible, hard-forces it (a tool missing: nowhere)."""

    deny: dict[str, Node] = field(default_factory=dict)
    hide: dict[str, Node] = field(default_factory=dict)
    allow: dict[str, Node] = field(default_factory=dict)
    show: dict[str, Node] = field(default_factory=dict)
    hard: dict[str, Node] = field(default_factory=dict)

    def tables(self) -> tuple[dict[str, Node], ...]:
        return (self.deny, self.hide, self.allow, self.show, self.hard)

    def copy(self) -> _Kept:
        return _Kept(*(dict(t) for t in self.tables()))

    def add(self, tools: Sequence[str], masks: Masks, where: Node) -> None:
        for table, mask in zip(self.tables(), masks, strict=True):
            for i, t in enumerate(tools):
                if mask >> i & 1:
                    found = table.get(t)
                    table[t] = where if found is None else found | where


class Tiers:
    """The tiers of one set of components, folded from the highest priority down.

    ``consistent``: no tier clashed; ``stuck``: where one did, the clash is a deadlock (its
    units without hard forces already clash); ``kept``: what every tier kept (read where
    ``consistent``); ``bids``: per priority, per tool, where a kept record soft-forces it.
    With ``yielding`` (the components of requirements that give way, at one priority):
    ``unsure`` is where a tier below theirs clashes and would clash without their units too,
    and ``unsure_stuck`` where such a clash is a deadlock (``priority_decided``)."""

    def __init__(
        self,
        enc: EncodingBase,
        records: Sequence[tuple[Component, dict[Record, Node]]],
        priorities: dict[int, int],
        yielding: frozenset[int] = frozenset(),
    ) -> None:
        self.enc = enc
        bdd, tools = enc.bdd, enc.tools
        false = bdd.false
        self._tools = tools
        by_priority: dict[int, list[tuple[bool, Record, Node]]] = {}
        for comp, table in records:
            mine = id(comp) in yielding
            level = by_priority.setdefault(priorities[id(comp)], [])
            level.extend((mine, r, where) for r, where in table.items())
        yielding_at = {priorities[i] for i in yielding}
        # INVARIANT: symbolic_problem refuses yielding requirements at several priorities.
        assert len(yielding_at) <= 1
        below = min(yielding_at) if yielding_at else None
        kept, others = _Kept(), _Kept()  # others: the kept units not of a yielding one
        ok = bdd.true
        self.stuck = false
        self.unsure = self.unsure_stuck = false
        self.bids: dict[int, dict[str, Node]] = {}
        for p in sorted(by_priority, reverse=True):
            level = by_priority[p]
            kept_records: dict[int, Node] = {}
            for kind in (0, 1):  # the restricting units, then the permitting ones
                before = kept.copy()
                for n, (mine, record, where) in enumerate(level):
                    masks = record.restrict if kind == 0 else record.permit
                    if masks is None:
                        continue
                    survives = where & ~self._against(before, masks)
                    kept.add(tools, masks, survives)
                    if not mine:
                        others.add(tools, masks, survives)
                    # A record is kept where each of its units survives.
                    kept_records[n] = kept_records.get(n, where) & survives
                if kind == 1:
                    continue  # INVARIANT: a permitting tier never clashes (module docstring)
                clash = ok & self._clashing(kept, hard=True)
                if clash == false:
                    continue
                dead = self._clashing(kept, hard=False)
                self.stuck |= clash & dead
                ok &= ~clash
                if below is not None and p < below:
                    # The runtime's core holds a yielding unit for sure only where the
                    # others alone hold together (the kind's candidates, SPEC §11).
                    without = (dead & self._clashing(others, hard=False)) | (
                        ~dead & self._clashing(others, hard=True)
                    )
                    self.unsure |= clash & without
                    self.unsure_stuck |= clash & without & dead
            for n, (_mine, record, where) in enumerate(level):
                if record.soft is None:
                    continue
                at = kept_records.get(n, where)
                bids = self.bids.setdefault(p, {})
                bids[record.soft] = bids.get(record.soft, false) | at
        self.consistent = ok
        self.kept = kept

    def _against(self, kept: _Kept, masks: Masks) -> Node:
        """Where a unit with these masks contradicts ``kept`` (the five conditions)."""
        bdd, tools = self.enc.bdd, self._tools
        false = bdd.false
        denies, hides, allows, shows, hard = masks
        if denies & allows or hides & shows or hard & denies:
            return bdd.true
        bad = false
        for i, t in enumerate(tools):
            b = 1 << i
            if denies & b:
                bad |= kept.allow.get(t, false) | kept.hard.get(t, false)
            if allows & b:
                bad |= kept.deny.get(t, false)
            if hides & b:
                bad |= kept.show.get(t, false)
            if shows & b:
                bad |= kept.hide.get(t, false)
            if hard & b:
                bad |= kept.deny.get(t, false)
                for u, where in kept.hard.items():
                    if u != t:
                        bad |= where
        every = bdd.true  # every tool denied, with the unit's denials
        for i, t in enumerate(tools):
            if not denies >> i & 1:
                every &= kept.deny.get(t, false)
                if every == false:
                    break
        return bad | every

    def _clashing(self, kept: _Kept, *, hard: bool) -> Node:
        """Where ``kept`` contradicts itself (``hard=False``: its hard forces left out)."""
        bdd = self.enc.bdd
        false = bdd.false
        bad = false
        for t, where in kept.allow.items():
            if t in kept.deny:
                bad |= where & kept.deny[t]
        for t, where in kept.show.items():
            if t in kept.hide:
                bad |= where & kept.hide[t]
        every = bdd.true
        for t in self._tools:
            every &= kept.deny.get(t, false)
            if every == false:
                break
        bad |= every
        if hard:
            some = false
            for t, where in kept.hard.items():
                bad |= some & where
                some |= where
                if t in kept.deny:
                    bad |= where & kept.deny[t]
        return bad

    def pass_(self) -> _Pass:
        kept = self.kept
        return _resolved(
            self.enc, kept.deny, kept.hide, kept.hard, self.bids, self.consistent, self.stuck
        )


def _records(
    enc: EncodingBase, components: Sequence[Component]
) -> list[tuple[Component, dict[Record, Node]]]:
    """Each component's records, those of several yielding components over the first one's
    view bits (as ``symbolic_encoding._facts_of``)."""
    leader = next((c for c in components if c.requirement.yielding), None)
    return [
        (c, enc.records(c))
        if leader is None or c is leader or not c.requirement.yielding
        else (c, enc.records_as(c, leader))
        for c in components
    ]


def priority_decided(
    enc: EncodingBase, components: Sequence[Component], priorities: dict[int, int]
) -> _Pass:
    """The pass the runtime gives in priority mode, yielding included (``Reasoner._yield``).

    With yielding components Y (one priority, alike, denials only: ``symbolic_problem``)
    it is the pass of all where that holds together; else the pass without Y, where the
    runtime surely gives way: the clash is at Y's tier or above (then Y takes no part in the
    tiers above it, so the others clash the same without Y, kind included: the same answer
    whether Y gives way or not), or below it where the others alone hold together (every
    core holds a unit of Y, so Y gives way, one guard after another). Below Y's tier where
    the others clash too, the answer is the same either way only where the pass without Y
    clashes with the same kind, and a forced conflict on the same tools; elsewhere
    ``Ambiguous`` is raised (whichever the states)."""
    yielding = frozenset(id(c) for c in components if c.requirement.yielding)
    records = _records(enc, components)
    full = Tiers(enc, records, priorities, yielding)
    if not yielding:
        return full.pass_()
    rest = Tiers(enc, [(c, r) for c, r in records if id(c) not in yielding], priorities).pass_()
    whole = full.pass_()
    # The same answer: a clash of the same kind and, a forced conflict, on the same tools
    # (a guard at the top may override a force that, without it, is what clashes first).
    false = enc.bdd.false
    same_hard = enc.bdd.true
    for t in {*rest.hard, *whole.hard}:
        same_hard &= rest.hard.get(t, false).equiv(whole.hard.get(t, false))
    same = ~rest.consistent & rest.stuck.equiv(full.unsure_stuck) & (rest.stuck | same_hard)
    if full.unsure & ~same != false:
        raise Ambiguous(
            "in priority mode, a step where the rules clash below a cycle guard's priority "
            "and would clash without it too: whether it gives way depends on the core found"
        )
    return _given_way(whole, rest)


def decided(
    enc: EncodingBase, components: Sequence[Component], priorities: dict[int, int]
) -> _Pass:
    """The pass the runtime gives for ``components``, in the encoded system's mode: strict
    mode's (``symbolic_encoding._decided``) or priority mode's (``priority_decided``)."""
    if enc.mode == "priority":
        return priority_decided(enc, components, priorities)
    return _decided(enc, components, priorities)
