"""SPEC §4 over compiled units: strict and priority resolution, the most permissive pass, clashes.

``Resolver.strict`` and ``Resolver.priority`` answer a ``Solved`` (the pass's masks, the hard
and soft forces, the reasons) or a ``Clash`` (a minimal core, its kind, and the hard forces
that cannot be honoured). Satisfiability questions go to ``Resolver.sat``: answered from the
packed masks when no general formula is involved (the literal fast path), else by one
assumption check of the reasoner's solver.

Lexicographically most permissive pass. A tool whose atoms occur only in literal items (plain
rules, ``~allowed(t)``…) is allowed exactly when no literal denies or hides it: such atoms occur
nowhere else but in the axioms, where setting ``allowed`` true and ``hidden`` false never breaks
a model. So only the tools mentioned by general formulas (the set ``G``) need preference
literals, and the common case is a single check that assumes the items plus "every tool of G
allowed and visible". When that check fails, ``_search.prefer`` fixes G's tools one by one in
declared order (allowed first, then visible).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from itertools import compress, repeat
from operator import and_
from types import MappingProxyType
from typing import Literal, NamedTuple, TypeVar

from ruleengine._layout import Layout
from ruleengine._search import prefer, quickxplain
from ruleengine._solver import Session
from ruleengine._units import Compiler, Unit
from ruleengine.passes import LazyMapping
from ruleengine.rules import Emitted, Rule

__all__ = [
    "Clash",
    "ConflictKind",
    "Resolver",
    "Solved",
    "Tie",
    "dropped_forces",
    "forced_tie",
    "lazy_reasons",
    "soft_forced",
]

ConflictKind = Literal["deadlock", "forced-conflict"]

Rank = Callable[[Emitted], tuple[int, str, str]]

K = TypeVar("K", bound=Hashable)

Tie = tuple[int, tuple[str, ...], tuple[Emitted, ...]]
"""A soft-force tie: the top priority, the tied tools, the forcing records on them."""


class Clash:
    """A step without a pass: what kind of conflict, and a minimal core of emitted items.

    Knowing that a step has no pass, and of which kind, takes one or two satisfiability
    questions; its minimal core takes QuickXplain's many. So the core is found when first
    read (``core``, ``parts``) where its questions are answered from the masks alone: a pure
    function of what the clash captured, the same whenever it runs. The checker's searches
    decide thousands of states whose cores they never read. Where the solver answers (general
    formulas), the core is found at once, inside its decision's solver session and clock.
    """

    __slots__ = ("_find", "_found", "forced", "kind")

    def __init__(
        self,
        kind: ConflictKind,
        forced: tuple[str, ...],
        find: Callable[[], tuple[tuple[Emitted, ...], tuple[str, ...]]],
        *,
        lazy: bool,
    ) -> None:
        self.kind = kind
        """``deadlock`` when the items clash without their hard forces, else
        ``forced-conflict``."""
        self.forced = forced
        """The hard-forced tools that cannot be honoured (declared order; empty for a
        deadlock)."""
        self._find: Callable[[], tuple[tuple[Emitted, ...], tuple[str, ...]]] | None = find
        self._found: tuple[tuple[Emitted, ...], tuple[str, ...]] = ((), ())
        if not lazy:
            self._read()

    def _read(self) -> tuple[tuple[Emitted, ...], tuple[str, ...]]:
        if self._find is not None:
            self._found = self._find()
            self._find = None
        return self._found

    @property
    def core(self) -> tuple[Emitted, ...]:
        """The clashing records, in canonical order (priority, requirement, rendering)."""
        return self._read()[0]

    @property
    def parts(self) -> tuple[str, ...]:
        """Per core record, which part of it clashes (``restricting``/``permitting``), or
        ``""`` when the whole item does (always ``""`` in strict mode, where rules have one
        part)."""
        return self._read()[1]

    def __repr__(self) -> str:
        return f"Clash({self.kind!r}, forced={self.forced!r}, core={self.core!r})"


class Solved(NamedTuple):
    """A pass, before it is built: its masks and what the forces and reasons read."""

    not_allowed: int
    """The tools that are not allowed (a tool mask)."""
    hidden: int
    """The hidden tools (a tool mask)."""
    hard: str | None
    """The hard-forced tool, if any."""
    forcers: list[Emitted]
    """The kept records with a soft force."""
    reasons: Mapping[str, str]
    """The reasons of the kept rules (computed when read)."""
    overridden: tuple[tuple[Emitted, str], ...]
    """Priority mode: each overridden unit's record, with its part (see ``Clash.parts``)."""


class Resolver:
    """Resolves steps for one compiler (and so one solver session)."""

    def __init__(self, compiler: Compiler, session: Session, rank: Rank, *, fast_path: bool):
        self.compiler = compiler
        self.layout: Layout = compiler.layout
        self.tools = compiler.tools
        self.fast_path = fast_path
        self.check = session.check_mask
        self._slot = session.slot
        self._knows = session.knows
        self._rank = rank
        self._bit = {t: 1 << i for i, t in enumerate(self.tools)}

    def sat(self, lits: int, packed: int) -> bool:
        """Whether units with these literal and packed masks hold together (fast when it can)."""
        if self.fast_path and not packed & self.layout.general_flag:
            return self.layout.literal_consistent(packed)
        return self.check(lits)

    def hard_tool(self, forces: int) -> str | None:
        """The tool named by a ``forces`` mask with at most one bit."""
        return self.tools[forces.bit_length() - 1] if forces else None

    # -- strict mode -----------------------------------------------------------------------

    def strict(self, records: tuple[Emitted, ...], words: list[int], word: int) -> Solved | Clash:
        """Deny wins: every restricting unit is asserted (``word``: the records' words or-ed)."""
        layout = self.layout
        packed = word & layout.packed_mask
        solved: tuple[int, int] | None
        if self.fast_path and not packed & layout.general_flag:
            # Only literals: the most permissive pass is read off the masks (and so is the
            # minimal core when they are inconsistent).
            found = layout.literal_pass(packed)
            if found is None:
                return self._strict_clash(records)
            denies, hides, forces = found
            solved = (denies, hides)
        else:
            denies, hides, general, forces = layout.verdict(packed)
            solved = self.lexmax(word >> layout.lits_shift, denies, hides, general)
            if solved is None:
                return self._strict_clash(records)
        flag = layout.force_flag
        forcers = list(compress(records, map(and_, words, repeat(flag)))) if word & flag else []
        reasons = lazy_reasons(records) if word & layout.reason_flag else NO_REASONS
        hard = self.tools[forces.bit_length() - 1] if forces else None
        # The tuple constructor: a named tuple's own costs a Python call on every decision.
        return tuple.__new__(Solved, (solved[0], solved[1], hard, forcers, reasons, ()))

    def _strict_clash(self, records: tuple[Emitted, ...]) -> Clash:
        compiled = self.compiler.compiled
        return self.clash(
            [(u, e) for e in records if (u := compiled(e).restrict) is not None],
            label_parts=False,
        )

    # -- priority mode ---------------------------------------------------------------------

    def _tiers(self, records: tuple[Emitted, ...]) -> list[list[tuple[Unit, Emitted]]]:
        """Priority mode's tiers, from the highest priority down, each priority's
        restricting units before its permitting ones, each tier in canonical order."""
        compiled = self.compiler.compiled
        tiers: dict[tuple[int, int], list[tuple[Unit, Emitted]]] = {}
        for e in sorted(records, key=self._rank):
            c = compiled(e)
            if c.restrict is not None:
                tiers.setdefault((-e.priority, 0), []).append((c.restrict, e))
            if c.permit is not None:
                tiers.setdefault((-e.priority, 1), []).append((c.permit, e))
        return [tiers[rank] for rank in sorted(tiers)]

    def _tier(
        self, tier: list[tuple[Unit, Emitted]], kept_lits: int, kept_packed: int
    ) -> tuple[list[tuple[Unit, Emitted]], list[tuple[Unit, Emitted]], int, int, bool]:
        """One tier against what the tiers above kept: its survivors (each unit consistent
        with what is kept, by itself), the units overridden, the survivors' literal and
        packed masks together, and whether the survivors still clash with what is kept."""
        sat = self.sat
        tier_lits, tier_packed = _union(tier)
        if sat(kept_lits | tier_lits, kept_packed | tier_packed):
            return tier, [], tier_lits, tier_packed, False
        survivors: list[tuple[Unit, Emitted]] = []
        overridden: list[tuple[Unit, Emitted]] = []
        for unit, e in tier:
            if sat(kept_lits | unit.lits, kept_packed | unit.packed):
                survivors.append((unit, e))
            else:
                overridden.append((unit, e))
        tier_lits, tier_packed = _union(survivors)
        clash = bool(survivors) and not sat(kept_lits | tier_lits, kept_packed | tier_packed)
        return survivors, overridden, tier_lits, tier_packed, clash

    def priority(self, records: tuple[Emitted, ...]) -> Solved | Clash:
        """Every unit soft at its priority, tiers from the highest down (SPEC §4.8)."""
        compiled = self.compiler.compiled
        kept: list[tuple[Unit, Emitted]] = []
        kept_lits = kept_packed = 0
        overridden: list[tuple[Unit, Emitted]] = []
        for tier in self._tiers(records):
            survivors, lost, tier_lits, tier_packed, clash = self._tier(
                tier, kept_lits, kept_packed
            )
            if clash:
                return self.clash(survivors + kept, label_parts=True)
            overridden += lost
            kept.extend(survivors)
            kept_lits |= tier_lits
            kept_packed |= tier_packed
        denies, hides, general, forces = self.layout.verdict(kept_packed)
        solved: tuple[int, int] | None
        if self.fast_path and not kept_packed & self.layout.general_flag:
            solved = (denies, hides)
        else:
            solved = self.lexmax(kept_lits, denies, hides, general)
        # INVARIANT: every tier was checked satisfiable together with everything kept above.
        assert solved is not None
        dropped = {e for _, e in overridden}
        whole = tuple(e for e in records if e not in dropped)
        forcers = [e for e in whole if compiled(e).forces]
        reasons = lazy_reasons(whole) if any(compiled(e).reasoned for e in whole) else NO_REASONS
        parts = tuple((e, self._part(unit, e)) for unit, e in overridden)
        return Solved(*solved, self.hard_tool(forces), forcers, reasons, parts)

    def priority_unmoved(self, records: tuple[Emitted, ...], names: Iterable[str]) -> set[str]:
        """Those of ``names`` without whose records ``priority`` decides ``records`` alike
        (the same masks and hard force, or a clash): none of their records soft-forces, and
        each of their units, in a tier the fold reaches, is overridden there or adds nothing
        to what is kept after it (its masks are covered by what the tiers above kept and the
        other requirements' survivors). For without such a requirement every tier keeps the
        same units' masks: a unit survives by itself and what is kept above; a tier whose
        units hold together without an overridden unit still loses every unit that is
        consistent with nothing kept, and clashes as before; the tiers past a clash are
        never reached. Cost: one fold of the tiers, as ``priority`` makes, and an or per
        unit. Deterministic."""
        compiled = self.compiler.compiled
        out = set(names) - {e.requirement for e in records if compiled(e).forces}
        kept_lits = kept_packed = 0
        for tier in self._tiers(records):
            if not out:
                break
            survivors, _, tier_lits, tier_packed, clash = self._tier(tier, kept_lits, kept_packed)
            # Per requirement with survivors here, their masks together, and the others'.
            mine: dict[str, tuple[int, int]] = {}
            for unit, e in survivors:
                lits, packed = mine.get(e.requirement, (0, 0))
                mine[e.requirement] = (lits | unit.lits, packed | unit.packed)
            for name in mine.keys() & out:
                others_lits, others_packed = kept_lits, kept_packed
                for other, (lits, packed) in mine.items():
                    if other != name:
                        others_lits |= lits
                        others_packed |= packed
                lits, packed = mine[name]
                if lits & ~others_lits or packed & ~others_packed:
                    out.discard(name)
            if clash:
                break
            kept_lits |= tier_lits
            kept_packed |= tier_packed
        return out

    def _part(self, unit: Unit, e: Emitted) -> str:
        """Which part of its item ``unit`` is ("" when the item has one part)."""
        c = self.compiler.compiled(e)
        if c.parts < 2:
            return ""
        return "restricting" if unit is c.restrict else "permitting"

    # -- the most permissive assignment ------------------------------------------------------

    def lexmax(self, lits: int, denies: int, hides: int, general: int) -> tuple[int, int] | None:
        """The lexicographically most permissive (not-allowed, hidden) masks, or None if unsat.

        ``denies`` and ``hides`` are what the literals decide; ``general``, the tools that
        general formulas mention (only those need preference literals).
        """
        check = self.check
        if not general:
            return (denies, hides) if check(lits) else None
        slot, knows, bit = self._slot, self._knows, self._bit
        want_a = [t for t in self.tools if general & bit[t] and not denies & bit[t]]
        want_h = [
            t
            for t in self.tools
            if general & bit[t] and not hides & bit[t] and knows(("hidden", t, False))
        ]
        every = 0
        for t in want_a:
            every |= slot(("allowed", t, True))
        for t in want_h:
            every |= slot(("hidden", t, False))
        if check(lits | every):
            return denies, hides
        if not check(lits):
            return None
        # With no visibility preference, "all of want_a at once" is the check that just failed.
        allow = [(slot(("allowed", t, True)), slot(("allowed", t, False))) for t in want_a]
        lits, refused_at = prefer(check, lits, allow, known_unsat=not want_h)
        refused = _tools_at(want_a, refused_at, bit)
        # A tool now fixed allowed is visible by the axiom `hidden ⇒ not allowed`.
        wanted = 0
        for t in want_a:
            wanted |= bit[t]
        open_h = [t for t in want_h if (refused | ~wanted) & bit[t]]
        show = [(slot(("hidden", t, False)), slot(("hidden", t, True))) for t in open_h]
        lits, hidden_at = prefer(check, lits, show)
        return denies | refused, hides | _tools_at(open_h, hidden_at, bit)

    # -- clashes -------------------------------------------------------------------------------

    def clash(self, candidates: list[tuple[Unit, Emitted]], *, label_parts: bool) -> Clash:
        """The minimal core among ``candidates`` (unsatisfiable together), and its kind.

        SPEC §11: when the candidates without their hard forces still clash, it is a deadlock
        and the core is searched among those alone; otherwise it is a forced-conflict, its core
        contains a violated force, and ``forced`` names every hard-forced tool of the
        candidates (two different hard forces cannot both be honoured).
        """
        hard = {u.hard_force for u, _ in candidates if u.hard_force is not None}
        if hard:
            rest = [(u, e) for u, e in candidates if u.hard_force is None]
            lits, packed = _union(rest)
            if not self.sat(lits, packed):
                return self._core(rest, "deadlock", (), label_parts)
            forced = tuple(t for t in self.tools if t in hard)
            return self._core(candidates, "forced-conflict", forced, label_parts)
        return self._core(candidates, "deadlock", (), label_parts)

    def _core(
        self,
        candidates: list[tuple[Unit, Emitted]],
        kind: ConflictKind,
        forced: tuple[str, ...],
        label_parts: bool,
    ) -> Clash:
        """The clash of ``candidates``, with a minimal core among them, in canonical order.

        The search runs over units, tried in canonical order (priority, then requirement
        name, then rendering; a rule's restricting part before its permitting part), so the
        core is the same whatever the order of emission or the solver's numbering of
        variables. A record whose units are all in the core is cited whole; one with a single
        unit of two, by that part (``label_parts``, priority mode). When no candidate is a
        general formula and the fast path is on, each *sat or unsat?* question is answered
        from the masks: the same answers as the solver's, so the same core, without a solver
        call; the search then waits until the core is read (``Clash``). What it reads of the
        compiled units is taken now (a later solver session compiles them afresh).
        """
        rank = self._rank
        lits_of: dict[tuple[Emitted, int], int] = {}
        packed_of: dict[tuple[Emitted, int], int] = {}
        two_parts: set[Emitted] = set()
        if label_parts:
            compiled = self.compiler.compiled
            for unit, e in candidates:
                c = compiled(e)
                key = (e, 0 if unit is c.restrict else 1)
                lits_of[key], packed_of[key] = unit.lits, unit.packed
                if c.parts == 2:
                    two_parts.add(e)
        else:
            # Strict mode: every candidate is a record's one restricting unit.
            for unit, e in candidates:
                lits_of[(e, 0)], packed_of[(e, 0)] = unit.lits, unit.packed

        by_masks = self._by_masks(packed_of.values())

        def find() -> tuple[tuple[Emitted, ...], tuple[str, ...]]:
            ordered = sorted(lits_of, key=lambda key: (rank(key[0]), key[1]))
            units = self._minimal(ordered, lits_of, packed_of, by_masks)
            in_core: dict[Emitted, list[int]] = {}
            for e, index in units:
                in_core.setdefault(e, []).append(index)
            parts = tuple(
                _PART_NAMES[indices[0]] if len(indices) == 1 and e in two_parts else ""
                for e, indices in in_core.items()
            )
            return tuple(in_core), parts

        return Clash(kind, forced, find, lazy=by_masks)

    def _by_masks(self, packed: Iterable[int]) -> bool:
        """Whether QuickXplain's questions about units with these packed masks are answered
        from the masks (the fast path, no general formula), not by the solver."""
        return self.fast_path and not any(p & self.layout.general_flag for p in packed)

    def _minimal(
        self, ordered: list[K], lits_of: dict[K, int], packed_of: dict[K, int], by_masks: bool
    ) -> list[K]:
        """QuickXplain over ``ordered``, asking the masks (``by_masks``: no general formula
        is involved and the fast path is on, see ``_by_masks``) or else the solver."""
        if by_masks:
            return quickxplain(ordered, packed_of, self.layout.literal_consistent)
        return quickxplain(ordered, lits_of, self.check)


_PART_NAMES = ("restricting", "permitting")


# -- forces ------------------------------------------------------------------------------------


def soft_forced(
    forcers: Sequence[Emitted],
    not_allowed: int,
    bit: Mapping[str, int],
    position: Mapping[str, int],
) -> str | None:
    """The soft-forced tool: the allowed tool whose forcing rule has the highest priority,
    ties by declared order (a hard force beats every soft one: not called then)."""
    best: str | None = None
    top = 0
    for item, _, priority in forcers:
        t = item.target  # type: ignore[union-attr]  # INVARIANT: forcers are rules
        if not_allowed & bit[t] or priority < top:
            continue
        if priority > top or best is None or position[t] < position[best]:
            best, top = t, priority
    return best


def forced_tie(
    forcers: Sequence[Emitted], not_allowed: int, bit: Mapping[str, int], tools: Sequence[str]
) -> Tie | None:
    """The soft-force tie, if any: the top priority, the tied tools in declared order, and
    the forcing records at that priority on those tools (canonical order is the caller's)."""
    bids: dict[str, int] = {}
    for item, _, priority in forcers:
        t = item.target  # type: ignore[union-attr]  # INVARIANT: forcers are rules
        if not not_allowed & bit[t] and priority > bids.get(t, 0):
            bids[t] = priority
    if not bids:
        return None
    top = max(bids.values())
    tied = tuple(t for t in tools if bids.get(t) == top)
    if len(tied) < 2:
        return None
    rules = tuple(
        e
        for e in forcers
        if e.priority == top and e.item.target in tied  # type: ignore[union-attr]
    )
    return top, tied, rules


def dropped_forces(
    forcers: Sequence[Emitted], not_allowed: int, bit: Mapping[str, int]
) -> list[str]:
    """Notes about soft forces on tools that are not allowed (dropped: deny wins)."""
    dropped: set[tuple[int, str, str]] = set()
    for item, requirement, priority in forcers:
        t = item.target  # type: ignore[union-attr]  # INVARIANT: forcers are rules
        if not_allowed & bit[t]:
            dropped.add((-priority, requirement, t))
    return [
        f"`{requirement}` (priority {-minus}) forces `{t}`, which is not allowed: "
        "the force is dropped"
        for minus, requirement, t in sorted(dropped)
    ]


# -- reasons -----------------------------------------------------------------------------------


def lazy_reasons(emitted: tuple[Emitted, ...]) -> Mapping[str, str]:
    """The reasons of the rules among ``emitted``, computed when first read."""
    return LazyMapping(partial(_reasons, emitted))


def _reasons(emitted: tuple[Emitted, ...]) -> Mapping[str, str]:
    """Per tool, the reason of the highest-priority rule about it; ties by requirement name,
    then text (the smallest ``(-priority, requirement, text)`` wins)."""
    best: dict[str, tuple[int, str, str]] = {}
    for item, requirement, priority in emitted:
        if not isinstance(item, Rule):
            continue
        reason = item.reason
        if reason is None:
            continue
        rank = (-priority, requirement, reason)
        old = best.get(item.target)
        if old is None or rank < old:
            best[item.target] = rank
    return MappingProxyType({t: rank[2] for t, rank in best.items()})


NO_REASONS: Mapping[str, str] = MappingProxyType({})


def _union(pairs: Sequence[tuple[Unit, Emitted]]) -> tuple[int, int]:
    """The literal mask and the packed tool masks of some units, together."""
    lits = packed = 0
    for unit, _ in pairs:
        lits |= unit.lits
        packed |= unit.packed
    return lits, packed


def _tools_at(tools: Sequence[str], indices: int, bit: Mapping[str, int]) -> int:
    """The tool mask of ``tools[i]`` for each bit ``i`` set in ``indices``."""
    mask = 0
    while indices:
        low = indices & -indices
        mask |= bit[tools[low.bit_length() - 1]]
        indices ^= low
    return mask
