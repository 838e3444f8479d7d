"""How the aggregator packs tool sets into Python ints: the one place the bit layout is written.

A *tool mask* has one bit per declared tool (bit ``i`` = the ``i``-th tool). A compiled unit
keeps six tool masks and a flag in one int, its *packed* value; a record's *word* adds two
flags and the unit's assumption literals above that. Sets of units are combined with ``|``,
so a whole step folds with one C-level reduction::

    packed  = denies | hides << n | general << 2n | forces << 3n | allows << 4n | shows << 5n
              | is_general << 6n
    word    = packed | soft_force << 7n | reasoned << 7n + 1 | lits << 7n + 2

* ``denies`` — tools a literal denies (a hidden tool is denied too);
* ``hides`` / ``shows`` — tools a literal hides / keeps visible;
* ``general`` — tools mentioned by a general formula (one that is not a conjunction of
  literals): their fate needs the solver;
* ``forces`` — the tool a hard force (``forced(t)``) names;
* ``allows`` — tools a literal requires allowed (priority mode's permitting parts);
* ``is_general`` — set when the unit is a general formula;
* ``soft_force`` / ``reasoned`` — the record is a rule with a soft force / a reason;
* ``lits`` — the unit's assumption literals (a *literal mask*, see ``_solver.Session``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Layout"]


@dataclass(frozen=True, slots=True)
class Layout:
    """The packed layout for ``n`` declared tools (offsets computed once)."""

    n: int
    """How many tools (bits per tool mask)."""
    full: int
    """Every tool's bit."""
    general_flag: int
    """The *is a general formula* bit of a packed value."""
    packed_mask: int
    """The bits of a word that hold its packed value."""
    force_flag: int
    """The *has a soft force* bit of a word."""
    reason_flag: int
    """The *has a reason* bit of a word."""
    lits_shift: int
    """Where a word's literal mask starts."""
    forces_mask: int
    """The ``forces`` field of a packed value, in place."""

    @classmethod
    def for_tools(cls, n: int) -> Layout:
        """The layout for ``n`` tools."""
        return cls(
            n=n,
            full=(1 << n) - 1,
            general_flag=1 << 6 * n,
            packed_mask=(1 << 7 * n) - 1,
            force_flag=1 << 7 * n,
            reason_flag=1 << 7 * n + 1,
            lits_shift=7 * n + 2,
            forces_mask=((1 << n) - 1) << 3 * n,
        )

    def pack(
        self,
        *,
        denies: int = 0,
        hides: int = 0,
        general: int = 0,
        forces: int = 0,
        allows: int = 0,
        shows: int = 0,
        is_general: bool = False,
    ) -> int:
        """One packed value from its tool masks."""
        n = self.n
        return (
            denies
            | hides << n
            | general << 2 * n
            | forces << 3 * n
            | allows << 4 * n
            | shows << 5 * n
            | (self.general_flag if is_general else 0)
        )

    def verdict(self, packed: int) -> tuple[int, int, int, int]:
        """The ``(denies, hides, general, forces)`` masks: what deciding a step reads (a plain
        tuple: this runs once per solver-path decision)."""
        n, full = self.n, self.full
        return packed & full, packed >> n & full, packed >> 2 * n & full, packed >> 3 * n & full

    def word(self, packed: int, lits: int, *, soft_force: bool, reasoned: bool) -> int:
        """A record's word: its packed value, its flags and its literal mask."""
        return (
            packed
            | (self.force_flag if soft_force else 0)
            | (self.reason_flag if reasoned else 0)
            | lits << self.lits_shift
        )

    def literal_pass(self, packed: int) -> tuple[int, int, int] | None:
        """The ``(denies, hides, forces)`` masks of literal units that hold together, or
        ``None`` when they do not (``literal_consistent`` and ``masks`` in one go: this is
        the whole decision of a literal-only step)."""
        n, full = self.n, self.full
        denies = packed & full
        forces = packed >> 3 * n & full
        hides = packed >> n & full
        if (
            (packed >> 4 * n) & denies
            or hides & (packed >> 5 * n)
            or denies == full
            or forces & (forces - 1)
            or forces & denies
        ):
            return None
        return denies, hides, forces

    def literal_consistent(self, packed: int) -> bool:
        """Whether literal units with these packed masks hold together with the axioms.

        Only meaningful for units without general formulas: no literal contradicts another
        (allowed vs denied or hidden, hidden vs visible), some tool stays allowed, and the
        hard forces name at most one tool, an allowed one. This is exactly the solver's
        answer for such sets (a tested law), without a call.
        """
        n, full = self.n, self.full
        denies = packed & full
        forces = packed >> 3 * n & full
        return bool(
            not (packed >> 4 * n) & denies
            and not (packed >> n) & (packed >> 5 * n) & full
            and denies != full
            and not forces & (forces - 1)
            and not forces & denies
        )
