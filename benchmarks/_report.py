"""What every table shares: the best of several rounds, p99, cell formatting, the JSON file.

Each table's module owns its row type and its columns; this module turns rounds of timings
into statistics and rows of cells into aligned text. Nothing here knows a table.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "Column",
    "Timed",
    "format_table",
    "lowest_median",
    "met",
    "p99",
    "ratio",
    "write_json",
]

Column = tuple[str, int, str]
"""A table column: its heading, its width (0: as wide as its cells) and its alignment."""


class Timed(Protocol):
    """One round of a timed loop: nanoseconds per call."""

    @property
    def times_ns(self) -> Sequence[int]: ...


T = TypeVar("T", bound=Timed)


def lowest_median(rounds: Sequence[T]) -> T:
    """The round a table reports: the one with the lowest median (this machine is noisy)."""
    return min(rounds, key=lambda s: statistics.median(s.times_ns))


def p99(times_ns: Sequence[int]) -> float:
    """The 99th percentile by nearest rank."""
    ordered = sorted(times_ns)
    return float(ordered[max(0, -(-99 * len(ordered) // 100) - 1)])


def format_table(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> str:
    """A heading line, a rule, then one line per row of cells; trailing blanks stripped."""
    lines = ["  ".join(f"{name:{align}{width}}" for name, width, align in columns).rstrip()]
    lines.append("-" * len(lines[0]))
    for cells in rows:
        lines.append(
            "  ".join(
                f"{cell:{align}{width}}"
                for cell, (_, width, align) in zip(cells, columns, strict=True)
            ).rstrip()
        )
    return "\n".join(lines)


def met(met: bool | None) -> str:
    """A target's cell: ``yes``, ``no``, or ``—`` for a row without a target."""
    return {True: "yes", False: "no", None: "—"}[met]


def ratio(ratio: float | None) -> str:
    """A ratio's cell: two decimals, two significant digits below 0.1, ``—`` for none."""
    if ratio is None:
        return "—"
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def write_json(path: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path``, indented, non-ASCII kept (µ, ×, ≤)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
