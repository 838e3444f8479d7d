"""Table 3, the peer run: table 2's states through BeeAI's reasoner, next to ours.

It runs only when beeai-framework is installed (``pip install -e '.[peer]'``): the adapter,
``peer_beeai.py``, is imported inside ``run_peer``, and its absence turns the table into one
line (``PEER_MISSING``). Per cell, BeeAI decides the first states of the end-to-end cell, then
our default reasoner decides the same states, each side in one round.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks._config import Config
from benchmarks._mixes import STEP_COUNTS, Mix, Trace, mix_reasoner, to_steps
from benchmarks._report import Column, format_table, p99
from benchmarks.end_to_end import (
    ORIGINAL_MS,
    E2EWorkload,
    e2e_label,
    time_decisions,
    warm_up,
)
from ruleengine import ConflictError, RunState

__all__ = ["PEER_MISSING", "PeerReport", "PeerRow", "format_peer_table", "run_peer"]

PEER_MISSING = (
    "peer run skipped: beeai-framework is not installed (pip install -e '.[peer]' to run the "
    "same end-to-end workload through BeeAI's reasoner)"
)


@dataclass(frozen=True, slots=True)
class PeerRow:
    """One cell of the peer table: BeeAI's reasoner next to ours on the same histories."""

    label: str
    size: str
    steps: int
    calls: int
    median_us: float
    p99_us: float
    conflicts: int
    quoted_ratio: float
    """BeeAI's median over the original design's per-step cost quoted in the issue."""
    ours_median_us: float
    """Our default reasoner's median on the same states, timed right after BeeAI's."""
    ours_miss_median_us: float | None
    ratio: float
    """BeeAI's median over ours."""
    miss_ratio: float | None
    """BeeAI's median over our cache misses' median."""
    same_allowed: int
    """Calls where both allow the same tools and agree on stopping (or both conflict)."""
    budget_hit: bool


@dataclass(frozen=True, slots=True)
class PeerReport:
    """The peer table's rows, or why there is none; and the beeai-framework version run."""

    rows: list[PeerRow]
    skipped: str | None
    version: str | None


def run_peer(
    workload: E2EWorkload,
    config: Config,
    *,
    log: Callable[[str], None] = print,
) -> PeerReport:
    """The identical end-to-end workload through BeeAI's reasoner, if it is installed.

    Per cell, BeeAI decides (at most) the first ``config.peer_calls`` timed states of the
    end-to-end cell, in one round; then our default reasoner, fresh and warmed up as in the
    end-to-end rows, decides the same states, also in one round. So both medians come from
    the same phase of the run (same load, same heap), not from the best of several rounds.
    """
    try:
        from benchmarks import peer_beeai
    except ImportError as exc:
        name = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if (name or "").partition(".")[0] == "beeai_framework":
            return PeerReport([], PEER_MISSING, None)
        return PeerReport([], f"peer run skipped: beeai-framework failed to import: {exc}", None)
    log(
        f"peer run: BeeAI's reasoner, at most {config.peer_calls} calls or "
        f"{config.peer_seconds:g} s per cell …"
    )
    cells = [
        (workload.mixes[size], steps, workload.timed[size, steps])
        for size in workload.mixes
        for steps in STEP_COUNTS
    ]
    results = peer_beeai.run_peer(
        cells,
        max_calls=config.peer_calls,
        seconds=config.peer_seconds,
        warm=min(3, config.peer_calls),
    )
    rows = [
        _peer_row(workload, mix, steps, traces, cell)
        for (mix, steps, traces), cell in zip(cells, results, strict=True)
    ]
    return PeerReport(rows, None, peer_beeai.peer_version())


def _peer_row(
    workload: E2EWorkload, mix: Mix, steps: int, traces: Sequence[Trace], cell: Any
) -> PeerRow:
    """BeeAI's ``cell`` (a ``peer_beeai.PeerCell``) next to our reasoner on its states."""
    calls = len(cell.times_ns)
    reasoner = mix_reasoner(mix)
    warm_up(reasoner, workload.warm[mix.label, steps])
    mine = time_decisions(reasoner, [to_steps(t) for t in traces[:calls]])
    ours_us = statistics.median(mine.times_ns) / 1000
    misses = [t for t, hit in zip(mine.times_ns, mine.hits, strict=True) if not hit]
    ours_miss_us = statistics.median(misses) / 1000 if misses else None
    median_us = statistics.median(cell.times_ns) / 1000
    return PeerRow(
        label=e2e_label(mix.label, steps, "fast"),
        size=mix.label,
        steps=steps,
        calls=calls,
        median_us=median_us,
        p99_us=p99(cell.times_ns) / 1000,
        conflicts=cell.conflicts,
        quoted_ratio=median_us / (ORIGINAL_MS[mix.label] * 1000),
        ours_median_us=ours_us,
        ours_miss_median_us=ours_miss_us,
        ratio=median_us / ours_us,
        miss_ratio=median_us / ours_miss_us if ours_miss_us else None,
        same_allowed=_same_allowed(mix, traces, cell.outcomes),
        budget_hit=cell.budget_hit,
    )


def _same_allowed(mix: Mix, traces: Sequence[Trace], outcomes: Sequence[Any]) -> int:
    """How many of BeeAI's answers match ours on the allowed tools and on stopping."""
    reasoner = mix_reasoner(mix)
    same = 0
    for trace, theirs in zip(traces, outcomes, strict=False):
        try:
            p = reasoner.decide(RunState(steps=to_steps(trace)))
        except ConflictError:
            same += theirs.allowed is None
            continue
        if theirs.allowed is not None:
            same += set(p.allowed) == set(theirs.allowed) and p.can_stop == theirs.can_stop
    return same


_COLUMNS: tuple[Column, ...] = (
    ("workload (tools/requirements, steps)", 34, "<"),
    ("BeeAI median µs", 15, ">"),
    ("BeeAI p99 µs", 12, ">"),
    ("calls", 5, ">"),
    ("conflicts", 9, ">"),
    ("BeeAI/quoted", 12, ">"),
    ("ours median µs", 14, ">"),
    ("BeeAI/ours", 10, ">"),
    ("BeeAI/ours miss", 15, ">"),
    ("same allowed", 12, ">"),
    ("note", 0, "<"),
)


def format_peer_table(rows: Sequence[PeerRow]) -> str:
    """The peer table, columns as in ``_COLUMNS``."""
    return format_table(
        _COLUMNS,
        [
            (
                row.label,
                f"{row.median_us:,.1f}",
                f"{row.p99_us:,.1f}",
                f"{row.calls}",
                f"{row.conflicts}",
                f"{row.quoted_ratio:.1f}×",
                f"{row.ours_median_us:.1f}",
                f"{row.ratio:.0f}×",
                "—" if row.miss_ratio is None else f"{row.miss_ratio:.0f}×",
                f"{row.same_allowed}/{row.calls}",
                "stopped by the time budget" if row.budget_hit else "",
            )
            for row in rows
        ],
    )
