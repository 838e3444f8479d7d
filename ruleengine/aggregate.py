"""SPEC §4: from the emitted records of one step to its ``Pass`` or a ``Clash``, Z3 deciding.

``Aggregator.aggregate(records)`` finds each record's *word* (its compiled masks, once per
distinct record), hands the step to the ``Resolver`` of its mode (``_resolve``), and builds the
``Pass`` from what comes back. It never builds z3 terms on the hot path: each distinct item
is lowered and encoded once (``_units``), then every decision is one or a few assumption
checks on the reasoner's incremental solver — or none, for steps made only of literals.

The pieces: ``_layout`` (the bit layout of masks and words), ``_units`` (items → units),
``_resolve`` (strict and priority resolution, clashes), ``_search`` (QuickXplain and the
lexicographic preference search), ``explain`` (explanations, built when read).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial, reduce
from itertools import chain
from operator import getitem, or_
from typing import cast

from ruleengine._layout import Layout
from ruleengine._resolve import (
    Clash,
    ConflictKind,
    Resolver,
    Solved,
    Tie,
    dropped_forces,
    forced_tie,
    soft_forced,
)
from ruleengine._units import Compiler
from ruleengine.encode import Vocabulary
from ruleengine.explain import canonical, explained, no_notes, no_tie, tie_model
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import ForcedTie, Mode, Pass
from ruleengine.rules import Emitted, check_record

__all__ = ["Aggregator", "Clash", "ConflictKind", "Mode"]


class Aggregator:
    """Decides passes for one tool vocabulary in one mode; owns the per-record tables."""

    def __init__(
        self,
        vocabulary: Vocabulary,
        *,
        mode: Mode = "strict",
        final_answer_as_tool: bool = True,
        fast_path: bool = True,
    ) -> None:
        self.vocabulary = vocabulary
        self.mode: Mode = mode
        self.final_answer_as_tool = final_answer_as_tool
        self.fast_path = fast_path
        """Decide literal-only steps (and priority tiers) from bit masks, without the solver."""
        self.tools = vocabulary.tools
        self.layout = Layout.for_tools(len(self.tools))
        self._bit = {t: 1 << i for i, t in enumerate(self.tools)}
        self._position = {t: i for i, t in enumerate(self.tools)}
        self._fa_bit = self._bit[FINAL_ANSWER]
        self._name_bytes = (len(self.tools) + 7) // 8
        self._name_tables = _name_tables(self.tools)
        self._tuples: dict[int, tuple[str, ...]] = {}
        self._retired_checks = 0
        self._tier_units: dict[tuple[int, int, int], int] = {}
        """Priority mode's words: per distinct unit a tier reads, its bit (``_tier_bits``)."""
        self._start_session()

    def _start_session(self) -> None:
        """Tables for the vocabulary's current solver session (compiled items refer to its
        literals, so they live and die with it)."""
        session = self.vocabulary.session
        self._session = session
        self._compiler = Compiler(self.vocabulary, self.layout)
        # Per distinct record (by value), its word (``_layout``): found by value once per
        # step, so a step folds in one pass.
        self._word_of: dict[Emitted, int] = {}
        # Per distinct record, its canonical rank (priority mode's order, and the order in
        # which a core is searched): rendering an item costs more than a lookup.
        self._rank_of: dict[Emitted, tuple[int, str, str]] = {}
        self._tier_bits_of: dict[Emitted, int] = {}
        self._resolver = Resolver(
            self._compiler, session, self._rank_of.__getitem__, fast_path=self.fast_path
        )

    @property
    def saw_argument_checks(self) -> bool:
        """Whether the records decided so far held an ``ArgCheck`` (since the last reset)."""
        return self._compiler.saw_argument_checks

    @property
    def solver_checks(self) -> int:
        """Solver calls made so far, across session resets."""
        return self._retired_checks + self._session.checks

    def _reset(self) -> None:
        """Start over with a fresh solver session when the tables are full.

        Guard literals of general formulas accumulate in the solver; a requirement that emits
        a new formula every step would otherwise grow it without bound. Decided passes stay
        valid.
        """
        self._retired_checks += self._session.checks
        self.vocabulary.reset()
        self._tuples.clear()
        self._start_session()

    # -- records -------------------------------------------------------------------------

    def _words(self, records: tuple[Emitted, ...]) -> tuple[list[int], int]:
        """The records' words, and their union (one hash lookup per record)."""
        found = list(map(self._word_of.get, records))
        try:
            word = reduce(or_, found, 0)
        except TypeError:  # a record seen for the first time (its word is None)
            words = [self._word(e) for e in records]
            return words, reduce(or_, words, 0)
        return cast("list[int]", found), word

    def _word(self, e: Emitted) -> int:
        word = self._word_of.get(e)
        if word is None:
            check_record(e)
            c = self._compiler.compiled(e)
            unit = c.restrict
            word = self.layout.word(
                unit.packed if unit else 0,
                unit.lits if unit else 0,
                soft_force=c.forces,
                reasoned=c.reasoned,
            )
            self._word_of[e] = word
            self._rank_of[e] = canonical(e)
        return word

    def word(self, records: tuple[Emitted, ...]) -> int | None:
        """A fingerprint of ``records``, where they are literal rules none of which
        soft-forces; else None. Two sets of such records with the same word, each joined
        with the same other records, get the same allowed, hidden and forced tools and
        ``can_stop``, or both clash (reasons and cores aside), and the word of a union is
        the or of the words:

        - strict mode decides a set of records from the or of their words and its soft
          forcers in order (``Resolver.strict``), and literal units from their masks alone:
          the word is the or of the records' packed masks;
        - priority mode decides tier by tier from the set of units each tier holds (a unit
          survives or not by itself and what the tiers above kept; a record dropped whole
          only takes its soft force and reasons with it): the word has a bit per distinct
          unit a tier reads, its priority, its kind and its masks (``_tier_bits``).

        The solver's literals are left out: they are renumbered when the tables are full
        (``_reset``), so a word kept from before would not match one made after. Cost: one
        lookup per record (new records are checked and compiled, as ``aggregate`` would)."""
        _, word = self._words(records)
        layout = self.layout
        if word & (layout.force_flag | layout.general_flag):
            return None
        if self.mode == "strict":
            return word & layout.packed_mask
        return reduce(or_, map(self._tier_bits, records), 0)

    def _tier_bits(self, e: Emitted) -> int:
        """Priority mode's word of one literal record: a bit per unit of it, each distinct
        (priority, kind, masks) given the next bit when first met, for the aggregator's life
        (``_reset`` keeps them: a word stays the same)."""
        bits = self._tier_bits_of.get(e)
        if bits is None:
            c = self._compiler.compiled(e)
            bits = 0
            for kind, unit in enumerate((c.restrict, c.permit)):
                if unit is not None:
                    index = self._tier_units.setdefault(
                        (e.priority, kind, unit.packed), len(self._tier_units)
                    )
                    bits |= 1 << index
            self._tier_bits_of[e] = bits
        return bits

    def unmoved(self, records: tuple[Emitted, ...], names: Collection[str]) -> set[str]:
        """Those of ``names`` without whose records the aggregate of ``records`` keeps its
        allowed, hidden and forced tools and whether the run may stop (its reasons aside),
        or stays a clash. A sufficient test, for a requirement none of whose records
        soft-forces (the soft forcers are read in order):

        - strict mode decides from the union of the records' words: the requirement's
          every bit is set by another's records too (no decision made);
        - priority mode decides tier by tier: each of the requirement's units the fold
          reaches is overridden, or adds nothing to what its tier keeps
          (``Resolver.priority_unmoved``: one fold of the tiers, as a decision makes).

        The reasoner's retries (yielding requirements, checks of arguments) are the
        caller's to rule out. Cost: one lookup per record, then in strict mode two or-folds
        over the requirements, in priority mode one fold. Deterministic."""
        if not names:
            return set()
        words, _ = self._words(records)  # checks and compiles records seen for the first time
        if self.mode == "priority":
            self.begin()
            return self._resolver.priority_unmoved(records, names)
        flag = self.layout.force_flag
        owners: list[str] = []
        unions: list[int] = []
        where: dict[str, int] = {}
        for e, w in zip(records, words, strict=True):
            i = where.get(e.requirement)
            if i is None:
                where[e.requirement] = len(owners)
                owners.append(e.requirement)
                unions.append(w)
            else:
                unions[i] |= w
        # The union of every requirement's words but one, for each: a prefix and a suffix fold.
        before = [0]
        for w in unions:
            before.append(before[-1] | w)
        after = 0
        out: set[str] = set()
        for i in range(len(unions) - 1, -1, -1):
            w = unions[i]
            if owners[i] in names and not w & flag:
                others = before[i] | after
                if w | others == others:
                    out.add(owners[i])
            after |= w
        return out

    # -- deciding ------------------------------------------------------------------------

    def begin(self) -> None:
        """A new decision: its solver checks get a fresh wall clock (``Session.begin``)."""
        self._session.deadline = 0.0

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
            result = self._resolver.strict(records, words, word)
        else:
            result = self._resolver.priority(records)
        if isinstance(result, Clash):
            return result
        return self._build(records, result, tuple(yielded))

    def _build(self, records: tuple[Emitted, ...], s: Solved, yielded: tuple[Emitted, ...]) -> Pass:
        not_allowed, hidden_mask, hard, forcers, reasons, overridden = s
        allowed = pre_allowed = self._names(self.layout.full & ~not_allowed)
        can_stop = not not_allowed & self._fa_bit
        forced = hard
        if forcers and forced is None:
            forced = soft_forced(forcers, not_allowed, self._bit, self._position)
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
        notes: Callable[[], Sequence[str]] = no_notes
        tie: Callable[[], Tie | None] = no_tie
        forced_tie: Callable[[], ForcedTie | None] | None = None
        if forcers:
            forcing = _Forcing(self, forcers, not_allowed, hard)
            notes, tie, forced_tie = forcing.notes, forcing.tie, forcing.model
        # The explanation is built when first read (most passes are never explained).
        explain = partial(
            explained,
            (
                self.mode,
                self.tools,
                records,
                overridden,
                pre_allowed,
                allowed,
                hidden,
                forced,
                notes,
                tie,
                yielded,
            ),
        )
        return Pass._trusted(
            allowed, hidden, forced, can_stop, tool_choice, reasons, explain, forced_tie
        )

    def _tie(self, forcers: list[Emitted], not_allowed: int, hard: str | None) -> Tie | None:
        """The soft-force tie broken by declared order (none when a hard force decided)."""
        if hard is not None:
            return None
        return forced_tie(forcers, not_allowed, self._bit, self.tools)

    def _force_notes(self, forcers: list[Emitted], not_allowed: int, hard: str | None) -> list[str]:
        """The explanation's notes about soft forces: dropped ones, and a tie between tools."""
        notes = dropped_forces(forcers, not_allowed, self._bit)
        tie = self._tie(forcers, not_allowed, hard)
        if tie is not None:
            top, tied, _ = tie
            names = ", ".join(f"`{t}`" for t in tied)
            notes.append(
                f"forced tie at priority {top} between {names}: `{tied[0]}` wins by declared order"
            )
        return notes

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


class _Forcing:
    """What a pass's soft forces leave to explain, worked out when first read: one object
    per pass with forcers (its bound methods are the pass's explainers)."""

    __slots__ = ("_aggregator", "_forcers", "_hard", "_not_allowed")

    def __init__(
        self, aggregator: Aggregator, forcers: list[Emitted], not_allowed: int, hard: str | None
    ) -> None:
        self._aggregator = aggregator
        self._forcers = forcers
        self._not_allowed = not_allowed
        self._hard = hard

    def notes(self) -> list[str]:
        return self._aggregator._force_notes(self._forcers, self._not_allowed, self._hard)

    def tie(self) -> Tie | None:
        return self._aggregator._tie(self._forcers, self._not_allowed, self._hard)

    def model(self) -> ForcedTie | None:
        return tie_model(self.tie())


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


_RECORD_TYPE = frozenset({Emitted})

_COMPILED_LIMIT = 65536
"""Bound on the per-reasoner tables of compiled records and allowed-tuples (cleared when full)."""

_LITERAL_LIMIT = 100_000
"""Bound on the assumption literals of one solver session (a fresh session past it)."""
