"""SPEC §4: from the emitted rules and constraints of one step to its pass, with Z3 deciding.

``Aggregator.aggregate(emitted)`` answers a ``Pass`` or a ``Clash`` (a minimal core). It never
builds z3 terms on the hot path: each distinct item is lowered and encoded once (``Compiled``),
each distinct record gets a *word* of masks once, then every decision is one or a few
assumption checks on the reasoner's incremental solver.

Lexicographically most permissive pass. A tool whose atoms occur only in literal items (plain
rules, ``~allowed(t)``…) is allowed exactly when no literal denies or hides it: such atoms occur
nowhere else but in the axioms, where setting ``allowed`` true and ``hidden`` false never breaks
a model. So only the tools mentioned by general formulas (the set ``G``) need preference
literals, and the common case is a single check that assumes the items plus "every tool of G
allowed and visible". When that check fails, a loop fixes G's tools one by one in declared
order (allowed first, then hidden), asking each time whether all the remaining ones can still
be preferred at once before trying them singly.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial, reduce
from itertools import chain, compress, repeat
from operator import and_, getitem, or_
from types import MappingProxyType
from typing import cast

from ruleengine._solver import quickxplain
from ruleengine.encode import Vocabulary
from ruleengine.errors import PolicyError
from ruleengine.explain import canonical, explainer, with_yielded
from ruleengine.ir import FINAL_ANSWER, Expr, mentioned_tools
from ruleengine.passes import LazyMapping, Mode, Pass
from ruleengine.rules import Emitted, Lowered, Rule, check_record, literals_of, lower

__all__ = ["Aggregator", "Clash", "Mode"]

Key = Hashable


@dataclass(frozen=True, slots=True, eq=False)
class Unit:
    """One assertable part of an item (its restricting or its permitting part), compiled.

    Sets are bit masks: ``lits`` over the session's assumption literals, ``packed`` over the
    declared tools (bit i = the i-th tool). The hot path combines them with ``|``.
    """

    lits: int
    """The assumption literals that assert it."""
    hard_force: str | None
    """The tool a ``forced(t)`` item forces."""
    packed: int
    """Its tool masks in one int (layout in ``Compiled.packed``; read with ``_unpack``)."""


@dataclass(frozen=True, slots=True, eq=False)
class Compiled:
    lowered: Lowered
    restrict: Unit | None
    permit: Unit | None
    forces: bool
    """Whether the item is a rule with a soft force (looked at after solving)."""
    reasoned: bool
    """Whether the item is a rule with a reason (read when the pass's reasons are)."""
    lits: int
    """The restricting part's literal mask (0 if none): what strict mode assumes."""
    packed: int
    """The restricting part's tool masks in one int, ``n`` bits each: denies, hides, general,
    hard force, allows, shows, then one bit "is a general formula". A record's strict-mode
    word (``Aggregator._word``) puts it together with the flags and ``lits``, so a whole step
    folds with one C-level reduction instead of a Python loop."""


@dataclass(frozen=True, slots=True)
class Clash:
    """A step without a pass: a minimal core of emitted items."""

    core: tuple[Emitted, ...]
    hard_force: bool
    """Whether the core contains a hard force."""


_PASS_FIELDS = frozenset(Pass.model_fields)


class Aggregator:
    """Decides passes for one tool vocabulary in one mode; owns the compiled-item table."""

    def __init__(
        self,
        vocabulary: Vocabulary,
        *,
        mode: Mode = "strict",
        final_answer_as_tool: bool = True,
        fast_path: bool = True,
    ) -> None:
        self.vocabulary = vocabulary
        self.fast_path = fast_path
        """Decide literal-only steps in strict mode from bit masks, without a solver call."""
        self.tools = vocabulary.tools
        self._bit = {t: 1 << i for i, t in enumerate(self.tools)}
        self._fa_bit = self._bit[FINAL_ANSWER]
        self.mode: Mode = mode
        self.final_answer_as_tool = final_answer_as_tool
        self._compiled: dict[object, Compiled] = {}
        self._session = vocabulary.session
        self._retired_checks = 0
        self._check = vocabulary.session.check_mask
        n = self._n = len(self.tools)
        self._full = (1 << n) - 1
        self._general_shift = 6 * n
        self._force_flag = 1 << 7 * n
        self._reason_flag = 1 << 7 * n + 1
        self._lits_shift = 7 * n + 2
        self._packed_mask = (1 << 7 * n) - 1
        self._position = {t: i for i, t in enumerate(self.tools)}
        self._name_bytes = (n + 7) // 8
        self._name_tables = _name_tables(self.tools)
        self._tuples: dict[int, tuple[str, ...]] = {}
        # Per distinct record (by value), its strict-mode word: its packed masks, its force
        # and reason flags, and its literal mask, in one int (so a step folds in one pass).
        self._word_of: dict[Emitted, int] = {}
        # Per distinct record, its canonical rank (priority mode's order, and the order in
        # which a core is searched): rendering an item costs more than a lookup.
        self._rank_of: dict[Emitted, tuple[int, str, str]] = {}

    @property
    def solver_checks(self) -> int:
        """Solver calls made so far, across session resets."""
        return self._retired_checks + self._session.checks

    # -- records -------------------------------------------------------------------------

    def _words(self, emitted: tuple[Emitted, ...]) -> tuple[list[int], int]:
        """The records' words, and their union (one hash lookup per record)."""
        found = list(map(self._word_of.get, emitted))
        try:
            word = reduce(or_, found, 0)
        except TypeError:  # a record seen for the first time (its word is None)
            words = [self._word(e) for e in emitted]
            return words, reduce(or_, words, 0)
        return cast("list[int]", found), word

    def _word(self, e: Emitted) -> int:
        word = self._word_of.get(e)
        if word is None:
            check_record(e)
            c = self.compiled(e)
            word = (
                c.packed
                | (self._force_flag if c.forces else 0)
                | (self._reason_flag if c.reasoned else 0)
                | c.lits << self._lits_shift
            )
            self._word_of[e] = word
            self._rank_of[e] = canonical(e)
        return word

    # -- compilation ---------------------------------------------------------------------

    def compiled(self, e: Emitted) -> Compiled:
        c = self._compiled.get(e.item)
        if c is None:
            c = self._compile(e)
            self._compiled[e.item] = c
        return c

    def _reset(self) -> None:
        """Start over with a fresh solver session when the tables are full.

        Guard literals of general formulas accumulate in the solver; a requirement that emits
        a new formula every step would otherwise grow it without bound. Compiled items and
        record words refer to the old session's literals, so they go too; decided passes stay
        valid.
        """
        self._retired_checks += self._session.checks
        self.vocabulary.reset()
        self._session = self.vocabulary.session
        self._check = self._session.check_mask
        self._compiled.clear()
        self._tuples.clear()
        self._word_of.clear()
        self._rank_of.clear()

    def _compile(self, e: Emitted) -> Compiled:
        try:
            lowered = lower(e.item)
        except PolicyError as exc:
            raise PolicyError(
                f"requirement `{e.requirement}`: {exc.message}", hint=exc.hint
            ) from None
        unknown = sorted(lowered.mentions - self._bit.keys())
        if unknown:
            raise PolicyError(
                f"requirement `{e.requirement}`: `{e.item!r}` names unknown tool `{unknown[0]}`",
                hint=f"declared tools: {', '.join(f'`{t}`' for t in self.tools)}",
            )
        restrict = self._unit(lowered.restrict, lowered.hard_force)
        permit = self._unit(lowered.permit, None) if lowered.permit is not None else None
        forces = lowered.soft_force is not None
        reasoned = lowered.reason is not None
        if restrict is None:
            return Compiled(lowered, None, permit, forces, reasoned, 0, 0)
        return Compiled(lowered, restrict, permit, forces, reasoned, restrict.lits, restrict.packed)

    def _pack(
        self,
        denies: int,
        hides: int,
        general: int,
        hard_force: str | None,
        allows: int,
        shows: int,
        is_general: bool,
    ) -> int:
        n = self._n
        force_bit = self._bit[hard_force] if hard_force else 0
        return (
            denies
            | hides << n
            | general << 2 * n
            | force_bit << 3 * n
            | allows << 4 * n
            | shows << 5 * n
            | int(is_general) << self._general_shift
        )

    def _unpack(self, packed: int) -> tuple[int, int, int, str | None]:
        """The denies, hides and general masks of packed units, and the hard-forced tool."""
        n, full = self._n, self._full
        forces = packed >> 3 * n & full
        hard = self.tools[forces.bit_length() - 1] if forces else None
        return packed & full, packed >> n & full, packed >> 2 * n & full, hard

    def _literal_consistent(self, packed: int) -> bool:
        """Whether literal units with these packed masks hold together with the axioms.

        Only for units without general formulas: no literal contradicts another (allowed vs
        denied or hidden, hidden vs visible), some tool stays allowed, and the hard forces
        name at most one tool, an allowed one. This is exactly the solver's answer for such
        sets (tested against it), without a call.
        """
        n, full = self._n, self._full
        denies, hides = packed & full, packed >> n & full
        forces, allows, shows = (
            packed >> 3 * n & full,
            packed >> 4 * n & full,
            packed >> 5 * n & full,
        )
        return bool(
            not allows & denies
            and not hides & shows
            and denies != full
            and not forces & (forces - 1)
            and not forces & denies
        )

    def _sat(self, lits: int, packed: int) -> bool:
        """Whether units with these literal and packed masks hold together (fast when it can)."""
        if self.fast_path and not packed >> self._general_shift:
            return self._literal_consistent(packed)
        return self._check(lits)

    def _unit(self, expr: Expr, hard_force: str | None) -> Unit | None:
        keys: tuple[Key, ...]
        denies = hides = general = allows = shows = 0
        is_general = False
        if hard_force is not None:
            keys = (("force", hard_force),)
        else:
            literals = literals_of(expr)
            if literals is None:
                keys = (("item", expr),)
                is_general = True
                for t in mentioned_tools(expr):
                    general |= self._bit[t]
            elif not literals:
                return None
            else:
                keys = literals
                for kind, t, value in literals:
                    bit = self._bit[t]
                    if kind == "allowed":
                        if value:
                            allows |= bit
                        else:
                            denies |= bit
                    elif value:
                        hides |= bit
                        denies |= bit  # hidden ⇒ not allowed
                    else:
                        shows |= bit
        lits = 0
        for key in keys:
            self.vocabulary.ensure(key)
            lits |= self._session.slot(key)
        packed = self._pack(denies, hides, general, hard_force, allows, shows, is_general)
        return Unit(lits, hard_force, packed)

    # -- deciding ------------------------------------------------------------------------

    def aggregate(
        self, emitted: Sequence[Emitted], *, yielded: Sequence[Emitted] = ()
    ) -> Pass | Clash:
        """The pass for ``emitted``; ``yielded`` items (dropped by yielding requirements to
        avoid a clash) are only reported in the explanation."""
        if len(self._word_of) >= _COMPILED_LIMIT or self._session.size >= _LITERAL_LIMIT:
            # Between decisions only: a decision's compiled items must share one session.
            self._reset()
        records = tuple(emitted)
        if not set(map(type, records)) <= _RECORD_TYPE:
            # Records are otherwise checked when first seen, and equal ones found by value.
            for e in records:
                check_record(e)
        words, word = self._words(records)  # checks and compiles records seen for the first time
        if self.mode == "strict":
            result = self._strict(records, words, word)
        else:
            result = self._priority(records)
        if yielded and isinstance(result, Pass):
            explain = result._explain
            assert explain is not None
            result.__pydantic_private__["_explain"] = with_yielded(explain, yielded)  # type: ignore[index]
        return result

    def _strict(self, emitted: tuple[Emitted, ...], words: list[int], word: int) -> Pass | Clash:
        packed = word & self._packed_mask
        denies, hides, general, hard = self._unpack(packed)
        solved: tuple[int, int] | None
        if self.fast_path and not packed >> self._general_shift:
            # Only literals: the most permissive pass is read off the masks (and so is the
            # minimal core when they are inconsistent).
            solved = (denies, hides) if self._literal_consistent(packed) else None
        else:
            solved = self._lexmax(word >> self._lits_shift, denies, hides, general)
        if solved is None:
            kept = [
                (c.restrict, e) for e in emitted if (c := self.compiled(e)).restrict is not None
            ]
            return self._clash(kept)
        flag = self._force_flag
        forcers = list(compress(emitted, map(and_, words, repeat(flag)))) if word & flag else []
        reasons = _lazy_reasons(emitted) if word & self._reason_flag else _NO_REASONS
        return self._build(emitted, hard, forcers, reasons, solved, ())

    def _priority(self, emitted: tuple[Emitted, ...]) -> Pass | Clash:
        tiers: dict[tuple[int, int], list[tuple[Unit, Emitted]]] = {}
        for e in sorted(emitted, key=self._rank_of.__getitem__):
            c = self.compiled(e)
            if c.restrict is not None:
                tiers.setdefault((-e.priority, 0), []).append((c.restrict, e))
            if c.permit is not None:
                tiers.setdefault((-e.priority, 1), []).append((c.permit, e))
        sat = self._sat
        kept: list[tuple[Unit, Emitted]] = []
        kept_lits = kept_packed = 0
        overridden: list[tuple[Unit, Emitted]] = []
        for rank in sorted(tiers):
            tier = tiers[rank]
            tier_lits, tier_packed = _union(tier)
            if sat(kept_lits | tier_lits, kept_packed | tier_packed):
                survivors = tier
            else:
                survivors = []
                for unit, e in tier:
                    if sat(kept_lits | unit.lits, kept_packed | unit.packed):
                        survivors.append((unit, e))
                    else:
                        overridden.append((unit, e))
                tier_lits, tier_packed = _union(survivors)
                if survivors and not sat(kept_lits | tier_lits, kept_packed | tier_packed):
                    return self._clash(survivors + kept)
            kept.extend(survivors)
            kept_lits |= tier_lits
            kept_packed |= tier_packed
        denies, hides, general, hard = self._unpack(kept_packed)
        if self.fast_path and not kept_packed >> self._general_shift:
            solved: tuple[int, int] | None = (denies, hides)
        else:
            solved = self._lexmax(kept_lits, denies, hides, general)
        # INVARIANT: every tier was checked satisfiable together with everything kept above.
        assert solved is not None
        dropped = {e for _, e in overridden}
        whole = tuple(e for e in emitted if e not in dropped)
        forcers = [e for e in whole if self.compiled(e).forces]
        reasoned = any(self.compiled(e).reasoned for e in whole)
        reasons = _lazy_reasons(whole) if reasoned else _NO_REASONS
        parts = [(e, self._part(unit, e)) for unit, e in overridden]
        return self._build(emitted, hard, forcers, reasons, solved, parts)

    def _part(self, unit: Unit, e: Emitted) -> str:
        """Which part of its item an overridden unit is ("" when the item has one part)."""
        c = self.compiled(e)
        if c.restrict is None or c.permit is None:
            return ""
        return "restricting" if unit is c.restrict else "permitting"

    def _lexmax(self, lits: int, denies: int, hides: int, general: int) -> tuple[int, int] | None:
        """The lexicographically most permissive (not-allowed, hidden) masks, or None if unsat."""
        check = self._check
        if not general:
            return (denies | hides, hides) if check(lits) else None
        slot, knows = self._session.slot, self._session.knows
        bit = self._bit
        want_a = [t for t in self.tools if general & bit[t] and not (denies | hides) & bit[t]]
        want_h = [
            t
            for t in self.tools
            if general & bit[t] and not hides & bit[t] and knows(("hidden", t, False))
        ]
        prefs = 0
        for t in want_a:
            prefs |= slot(("allowed", t, True))
        for t in want_h:
            prefs |= slot(("hidden", t, False))
        if check(lits | prefs):
            return denies | hides, hides
        if not check(lits):
            return None
        # With no hidden preference, "all of want_a at once" is the check that just failed.
        lits, refused = self._prefer(lits, want_a, "allowed", True, known_unsat=not want_h)
        # A tool now fixed allowed is visible by the axiom `hidden ⇒ not allowed`.
        want_h = [t for t in want_h if t not in want_a or refused & bit[t]]
        lits, hidden = self._prefer(lits, want_h, "hidden", False)
        return denies | hides | refused, hides | hidden

    def _prefer(
        self, fixed: int, tools: list[str], kind: str, value: bool, *, known_unsat: bool = False
    ) -> tuple[int, int]:
        """Fix ``kind(t) = value`` for ``tools`` in order whenever still satisfiable.

        Answers the literal mask with the fixed literals added, and the tools that could not.
        Before trying a tool alone it asks whether all the remaining ones hold at once (not
        for the last one, where that is the same question, nor when ``known_unsat`` says the
        caller just asked it for the whole list).
        """
        slot = self._session.slot
        refused = 0
        last = len(tools) - 1
        for i, t in enumerate(tools):
            if i < last and not (known_unsat and i == 0):
                rest = 0
                for u in tools[i:]:
                    rest |= slot((kind, u, value))
                if self._check(fixed | rest):
                    return fixed | rest, refused
            preferred = slot((kind, t, value))
            if self._check(fixed | preferred):
                fixed |= preferred
            else:
                fixed |= slot((kind, t, not value))
                refused |= self._bit[t]
        return fixed, refused

    # -- results -------------------------------------------------------------------------

    def _clash(self, candidates: list[tuple[Unit, Emitted]]) -> Clash:
        """A minimal core among ``candidates`` (unsatisfiable together), in canonical order.

        Items are grouped per emitted record and tried in canonical order (priority, then
        requirement name, then rendering), so the core is the same whatever the order of
        emission or the solver's numbering of variables. On the fast path, when no candidate
        is a general formula, each *sat or unsat?* question is answered from the masks: the
        same answers as the solver's, so the same core, without a solver call.
        """
        lits_of: dict[Emitted, int] = {}
        packed_of: dict[Emitted, int] = {}
        hard_of: dict[Emitted, bool] = {}
        for unit, e in candidates:
            lits_of[e] = lits_of.get(e, 0) | unit.lits
            packed_of[e] = packed_of.get(e, 0) | unit.packed
            hard_of[e] = hard_of.get(e, False) or unit.hard_force is not None
        ordered = sorted(lits_of, key=self._rank_of.__getitem__)
        general = reduce(or_, packed_of.values(), 0) >> self._general_shift
        if self.fast_path and not general:
            core = quickxplain(ordered, packed_of, self._literal_consistent)
        else:
            core = quickxplain(ordered, lits_of, self._check)
        return Clash(tuple(core), any(hard_of[e] for e in core))

    def _names(self, mask: int) -> tuple[str, ...]:
        """The declared tools whose bit is set in ``mask``, in declared order (memoised)."""
        names = self._tuples.get(mask)
        if names is None:
            chunks = mask.to_bytes(self._name_bytes, "little")
            names = tuple(chain.from_iterable(map(getitem, self._name_tables, chunks)))
            if len(self._tuples) >= _COMPILED_LIMIT:
                self._tuples.clear()
            self._tuples[mask] = names
        return names

    def _build(
        self,
        emitted: tuple[Emitted, ...],
        hard: str | None,
        forcers: list[Emitted],
        reasons: Mapping[str, str],
        solved: tuple[int, int],
        overridden: Sequence[tuple[Emitted, str]],
    ) -> Pass:
        not_allowed, hidden_mask = solved
        allowed = pre_allowed = self._names(self._full & ~not_allowed)
        can_stop = not not_allowed & self._fa_bit
        forced = self._forced(forcers, not_allowed) if forcers and hard is None else hard
        if forced is not None:
            allowed = (forced, FINAL_ANSWER) if can_stop and forced != FINAL_ANSWER else (forced,)
            tool_choice = forced
        elif len(allowed) == 1:
            tool_choice = allowed[0]
        elif not can_stop or self.final_answer_as_tool:
            tool_choice = "required"
        else:
            tool_choice = "auto"
        hidden = self._names(hidden_mask) if hidden_mask else ()
        p = Pass.__new__(Pass)
        setter = object.__setattr__
        setter(
            p,
            "__dict__",
            {
                "allowed": allowed,
                "hidden": hidden,
                "forced": forced,
                "can_stop": can_stop,
                "tool_choice": tool_choice,
                # Read-only (cached passes are shared by every caller), computed when read.
                "reasons": reasons,
            },
        )
        setter(p, "__pydantic_fields_set__", _PASS_FIELDS)
        setter(p, "__pydantic_extra__", None)
        notes = partial(self._force_notes, forcers, not_allowed, hard) if forcers else _no_notes
        explain = explainer(self.mode, self.tools, emitted, overridden, pre_allowed, p, notes)
        setter(p, "__pydantic_private__", {"_explain": explain})
        return p

    def _forced(self, forcers: list[Emitted], not_allowed: int) -> str | None:
        """The soft-forced tool: the allowed tool whose forcing rule has the highest priority,
        ties by declared order (a hard force beats every soft one: not called then)."""
        bit, position = self._bit, self._position
        best: str | None = None
        top = 0
        for item, _, priority in forcers:
            t = item.target  # type: ignore[union-attr]  # INVARIANT: forcers are rules
            if not_allowed & bit[t] or priority < top:
                continue
            if priority > top or best is None or position[t] < position[best]:
                best, top = t, priority
        return best

    def _force_notes(self, forcers: list[Emitted], not_allowed: int, hard: str | None) -> list[str]:
        """The explanation's notes about soft forces: dropped ones, and a tie between tools."""
        notes: list[str] = []
        bids: dict[str, int] = {}
        dropped: set[tuple[int, str, str]] = set()
        bit = self._bit
        for item, requirement, priority in forcers:
            target = item.target  # type: ignore[union-attr]  # INVARIANT: forcers are rules
            if not_allowed & bit[target]:
                dropped.add((-priority, requirement, target))
            elif priority > bids.get(target, 0):
                bids[target] = priority
        for minus_priority, requirement, target in sorted(dropped):
            notes.append(
                f"`{requirement}` (priority {-minus_priority}) forces `{target}`, "
                "which is not allowed: the force is dropped"
            )
        if hard is None and bids:
            top = max(bids.values())
            tied = [t for t in self.tools if bids.get(t) == top]
            if len(tied) > 1:
                names = ", ".join(f"`{t}`" for t in tied)
                notes.append(
                    f"forced tie at priority {top} between {names}: "
                    f"`{tied[0]}` wins by declared order"
                )
        return notes


def _name_tables(tools: tuple[str, ...]) -> list[tuple[tuple[str, ...], ...]]:
    """Per byte of a tool mask, the tools named by each of its 256 values, in declared order:
    a mask's tools are the concatenation of its bytes' entries (no loop over the tools)."""
    tables = []
    for start in range(0, len(tools), 8):
        chunk = tools[start : start + 8]
        tables.append(
            tuple(tuple(t for i, t in enumerate(chunk) if value >> i & 1) for value in range(256))
        )
    return tables


def _no_notes() -> list[str]:
    return []


def _lazy_reasons(emitted: tuple[Emitted, ...]) -> Mapping[str, str]:
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


_NO_REASONS: Mapping[str, str] = MappingProxyType({})

_RECORD_TYPE = frozenset({Emitted})


def _union(pairs: Sequence[tuple[Unit, Emitted]]) -> tuple[int, int]:
    """The literal mask and the packed tool masks of some units, together."""
    lits = packed = 0
    for unit, _ in pairs:
        lits |= unit.lits
        packed |= unit.packed
    return lits, packed


_COMPILED_LIMIT = 65536
"""Bound on the per-reasoner tables of compiled items and allowed-tuples (cleared when full)."""

_LITERAL_LIMIT = 100_000
"""Bound on the assumption literals of one solver session (a fresh session past it)."""
