"""How much a benchmark run measures: the seed of every workload and the counts of each table.

``Config.full()`` is ``make bench``; ``Config.quick()`` (``--quick``) keeps every row with tiny
counts, so a run takes a few seconds and serves as a smoke test.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SEED", "Config"]

SEED = 20240611
"""The seed every workload is drawn from (with a label per workload and size)."""


@dataclass(frozen=True, slots=True)
class Config:
    """How much to run: sets per row and round, and rounds per measurement."""

    decisions: dict[str, int]
    """Per size, the sets of the reference, ``miss`` (both paths) and ``hit`` rows."""
    conflicts: dict[str, int]
    """Per size, the sets of the conflict rows (they cost milliseconds each)."""
    extras: int
    """The sets of each 10/20-only row: cold items, general constraints, priority mode."""
    rounds: int
    warm: int
    """The sets (and end-to-end states) each fresh reasoner decides before a timed loop."""
    states: dict[str, int]
    """Per end-to-end size (tools/requirements), the states of each length, per row."""
    peer_calls: int
    """The peer run's bound on calls per cell (its first states of the cell)."""
    peer_seconds: float
    """The peer run's time budget per cell (it stops early, and says so)."""

    @classmethod
    def full(cls) -> Config:
        """The counts of ``make bench``: a few minutes."""
        return cls(
            decisions={"10/20": 3000, "50/100": 2000, "100/200": 1500},
            conflicts={"10/20": 150, "50/100": 30, "100/200": 10},
            extras=1000,
            rounds=5,
            warm=200,
            states={"10/20": 2000, "50/100": 1000},
            peer_calls=200,
            peer_seconds=8.0,
        )

    @classmethod
    def quick(cls) -> Config:
        """Tiny counts (``--quick``): every row, in a few seconds."""
        return cls(
            decisions={"10/20": 60, "50/100": 30, "100/200": 20},
            conflicts={"10/20": 6, "50/100": 2, "100/200": 1},
            extras=30,
            rounds=2,
            warm=10,
            states={"10/20": 30, "50/100": 15},
            peer_calls=8,
            peer_seconds=1.0,
        )
