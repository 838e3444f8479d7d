"""Compiling emitted items into *units*: what each part of an item asserts, as masks.

An item lowers (``rules.lower``) into a restricting part and, for rules, a permitting part;
each non-trivial part becomes a ``Unit``: the assumption literals that assert it in the
solver, and its tool masks packed as ``_layout`` describes. A conjunction of literals is
assumed literal by literal; any other formula through one guard literal (``encode``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from ruleengine._layout import Layout
from ruleengine.conditions.admission import ArgCheck
from ruleengine.encode import Vocabulary
from ruleengine.errors import PolicyError
from ruleengine.ir import Expr, mentioned_tools
from ruleengine.rules import Emitted, Literal, Lowered, literals_of, lower

__all__ = ["Compiled", "Compiler", "Unit", "literal_masks"]


def literal_masks(literals: Iterable[Literal], bit: Mapping[str, int]) -> tuple[int, int, int, int]:
    """The ``(denies, hides, allows, shows)`` tool masks of a conjunction of literals.

    A hidden tool is denied too (hidden ⇒ not allowed). The static checker's symbolic engine
    reads literal rules through this same function.
    """
    denies = hides = allows = shows = 0
    for kind, t, value in literals:
        if kind == "allowed":
            if value:
                allows |= bit[t]
            else:
                denies |= bit[t]
        elif value:
            hides |= bit[t]
            denies |= bit[t]
        else:
            shows |= bit[t]
    return denies, hides, allows, shows


@dataclass(frozen=True, slots=True, eq=False)
class Unit:
    """One assertable part of an item (its restricting or its permitting part), compiled."""

    lits: int
    """The assumption literals that assert it (a literal mask)."""
    hard_force: str | None
    """The tool a ``forced(t)`` item forces."""
    packed: int
    """Its tool masks (``_layout.Layout.pack``)."""


@dataclass(frozen=True, slots=True, eq=False)
class Compiled:
    """An item, lowered and compiled: its units and what the pass reads of it afterwards."""

    lowered: Lowered
    restrict: Unit | None
    """The restricting part (``None`` when it restricts nothing)."""
    permit: Unit | None
    """The permitting part (priority mode only; ``None`` when there is none)."""
    forces: bool
    """Whether the item is a rule with a soft force."""
    reasoned: bool
    """Whether the item is a rule with a reason."""

    @property
    def parts(self) -> int:
        """How many units the item has (0, 1 or 2)."""
        return (self.restrict is not None) + (self.permit is not None)


class Compiler:
    """Compiles items for one vocabulary and solver session; each distinct item once."""

    def __init__(self, vocabulary: Vocabulary, layout: Layout) -> None:
        self.vocabulary = vocabulary
        self.layout = layout
        self.tools = vocabulary.tools
        self._bit = {t: 1 << i for i, t in enumerate(self.tools)}
        self._table: dict[object, Compiled] = {}
        self.saw_argument_checks = False
        """Whether an ``ArgCheck`` was ever compiled (it compiles to nothing: the reasoner
        decides such checks apart, and reads this to know it must)."""

    def __len__(self) -> int:
        return len(self._table)

    def compiled(self, e: Emitted) -> Compiled:
        """The compiled form of ``e``'s item (compiled on first sight)."""
        c = self._table.get(e.item)
        if c is None:
            c = self._compile(e)
            self._table[e.item] = c
        return c

    def _compile(self, e: Emitted) -> Compiled:
        if type(e.item) is ArgCheck:
            self.saw_argument_checks = True
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
        return Compiled(
            lowered, restrict, permit, lowered.soft_force is not None, lowered.reason is not None
        )

    def _unit(self, expr: Expr, hard_force: str | None) -> Unit | None:
        bit = self._bit
        keys: tuple[Hashable, ...]
        denies = hides = general = allows = shows = forces = 0
        is_general = False
        if hard_force is not None:
            keys = (("force", hard_force),)
            forces = bit[hard_force]
        else:
            literals = literals_of(expr)
            if literals is None:
                keys = (("item", expr),)
                is_general = True
                for t in mentioned_tools(expr):
                    general |= bit[t]
            elif not literals:
                return None
            else:
                keys = literals
                denies, hides, allows, shows = literal_masks(literals, bit)
        session = self.vocabulary.session
        lits = 0
        for key in keys:
            self.vocabulary.ensure(key)
            lits |= session.slot(key)
        packed = self.layout.pack(
            denies=denies,
            hides=hides,
            general=general,
            forces=forces,
            allows=allows,
            shows=shows,
            is_general=is_general,
        )
        return Unit(lits, hard_force, packed)
