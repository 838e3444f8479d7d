"""Table 2, end-to-end steps: ``Reasoner.decide`` on run states, with ``ConditionalRequirement``
mixes, next to the original design's per-step cost quoted in the issue.

Per size and history length (a cell), on the default reasoner and on the solver path
(``fast_path=False``): each round starts a fresh reasoner, decides some warm-up states, then
times one ``decide`` per state on a fresh ``RunState`` (``time_decisions``). The mixes and the
histories come from ``_mixes.py``; the peer run (``peer.py``) reuses this module's cells.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from benchmarks._config import SEED, Config
from benchmarks._mixes import (
    E2E_SIZES,
    STEP_COUNTS,
    Mix,
    Trace,
    draw_traces,
    make_mix,
    mix_reasoner,
    to_steps,
)
from benchmarks._report import Column, format_table, lowest_median, met, p99
from ruleengine import ConflictError, Reasoner, RunState, Step

__all__ = [
    "ORIGINAL_MS",
    "PATHS",
    "SPEEDUP",
    "DecisionSample",
    "E2ERow",
    "E2EWorkload",
    "e2e_label",
    "format_e2e_table",
    "make_e2e_workload",
    "measure_e2e",
    "time_decisions",
    "warm_up",
]

ORIGINAL_MS: dict[str, float] = {"10/20": 4.9, "50/100": 25.0}
"""The original design's per-step cost, measured on this machine by the issue's author (ms)."""

SPEEDUP = 25
"""The issue's target: at least this many times faster per step than the original design."""

Path = Literal["fast", "solver"]
PATHS: tuple[Path, ...] = ("fast", "solver")
"""The default reasoner, and ``fast_path=False``."""


@dataclass(frozen=True, slots=True)
class DecisionSample:
    """One timed pass over a list of states: nanoseconds per call, hit or miss, conflicts."""

    times_ns: list[int]
    hits: list[bool]
    conflicts: int
    checks: int


def warm_up(reasoner: Reasoner, states: Sequence[tuple[Step, ...]]) -> None:
    """Decide ``states`` untimed: the reasoner compiles their items and caches their passes."""
    for steps in states:
        with contextlib.suppress(ConflictError):
            reasoner.decide(RunState(steps=steps))


def time_decisions(reasoner: Reasoner, states: Sequence[tuple[Step, ...]]) -> DecisionSample:
    """Time ``reasoner.decide`` once per state, on a fresh ``RunState`` each time.

    The ``RunState`` objects are built before the clock starts (an agent builds one per step
    anyway), one per call, so no call reuses the summary another call computed.
    """
    fresh = [RunState(steps=steps) for steps in states]
    clock = time.perf_counter_ns
    decide: Callable[[RunState], object] = reasoner.decide
    times: list[int] = []
    hits: list[bool] = []
    conflicts = 0
    checks = reasoner.solver_checks
    gc.collect()
    for state in fresh:
        before = reasoner.hits
        start = clock()
        try:
            decide(state)
        except ConflictError:
            conflicts += 1
        times.append(clock() - start)
        hits.append(reasoner.hits != before)
    return DecisionSample(times, hits, conflicts, reasoner.solver_checks - checks)


@dataclass
class E2EWorkload:
    """Per size: the mix, and per length the warm-up and the timed histories."""

    mixes: dict[str, Mix]
    warm: dict[tuple[str, int], list[tuple[Step, ...]]]
    timed: dict[tuple[str, int], list[Trace]]

    def states(self, size: str, steps: int) -> list[tuple[Step, ...]]:
        """The engine's steps of the timed histories of a cell."""
        return [to_steps(t) for t in self.timed[size, steps]]


def make_e2e_workload(config: Config) -> E2EWorkload:
    """The mix of each size and, per length, ``config.warm`` and ``config.states`` histories."""
    mixes: dict[str, Mix] = {}
    warm: dict[tuple[str, int], list[tuple[Step, ...]]] = {}
    timed: dict[tuple[str, int], list[Trace]] = {}
    for tools, requirements in E2E_SIZES:
        mix = make_mix(tools, requirements, seed=SEED)
        mixes[mix.label] = mix
        for steps in STEP_COUNTS:
            drawn = draw_traces(mix, steps, config.warm, seed="warm")
            warm[mix.label, steps] = [to_steps(t) for t in drawn]
            timed[mix.label, steps] = draw_traces(mix, steps, config.states[mix.label], seed=SEED)
    return E2EWorkload(mixes, warm, timed)


@dataclass(frozen=True, slots=True)
class E2ERow:
    """One line of the end-to-end table (µs; the best round of several)."""

    label: str
    size: str
    steps: int
    path: Path
    decisions: int
    median_us: float
    p99_us: float
    miss_median_us: float | None
    """The median of the calls that missed the cache (``None`` if every call hit)."""
    hit_rate: float
    conflicts: int
    checks_per_decision: float
    original_us: float
    """The original design's per-step cost, as quoted in the issue."""
    ratio: float
    """``original_us`` over this row's median."""
    target: str
    met: bool


def e2e_label(size: str, steps: int, path: str) -> str:
    """A row's name in the table, e.g. ``10/20 50 steps, solver path``."""
    return f"{size} {steps} steps" + (", solver path" if path == "solver" else "")


def measure_e2e(workload: E2EWorkload, config: Config) -> list[E2ERow]:
    """Every end-to-end row, the rounds interleaved over all cells and both paths.

    Each round and path starts a fresh reasoner per cell, decides the cell's warm-up states
    (other random histories of the same length), then times the cell's states.
    """
    samples: dict[tuple[str, int, Path], list[DecisionSample]] = {}
    cells = [(size, steps) for size in workload.mixes for steps in STEP_COUNTS]
    states = {cell: workload.states(*cell) for cell in cells}
    for _ in range(config.rounds):
        for size, steps in cells:
            mix = workload.mixes[size]
            for path in PATHS:
                reasoner = mix_reasoner(mix, fast_path=path == "fast")
                warm_up(reasoner, workload.warm[size, steps])
                sample = time_decisions(reasoner, states[size, steps])
                samples.setdefault((size, steps, path), []).append(sample)
    return [
        _e2e_row(size, steps, path, samples[size, steps, path])
        for size, steps in cells
        for path in PATHS
    ]


def _e2e_row(size: str, steps: int, path: Path, rounds: list[DecisionSample]) -> E2ERow:
    best = lowest_median(rounds)
    n = len(best.times_ns)
    median_ns = statistics.median(best.times_ns)
    misses = [t for t, hit in zip(best.times_ns, best.hits, strict=True) if not hit]
    original_us = ORIGINAL_MS[size] * 1000
    bound = original_us / SPEEDUP
    return E2ERow(
        label=e2e_label(size, steps, path),
        size=size,
        steps=steps,
        path=path,
        decisions=n,
        median_us=median_ns / 1000,
        p99_us=p99(best.times_ns) / 1000,
        miss_median_us=statistics.median(misses) / 1000 if misses else None,
        hit_rate=sum(best.hits) / n,
        conflicts=best.conflicts,
        checks_per_decision=best.checks / n,
        original_us=original_us,
        ratio=original_us * 1000 / median_ns,
        target=f"≥ {SPEEDUP}× (≤ {bound:g} µs)",
        met=median_ns / 1000 <= bound,
    )


_COLUMNS: tuple[Column, ...] = (
    ("workload (tools/requirements, steps)", 34, "<"),
    ("median µs", 10, ">"),
    ("p99 µs", 10, ">"),
    ("miss med µs", 11, ">"),
    ("hit rate", 8, ">"),
    ("conflicts", 9, ">"),
    ("checks/dec", 10, ">"),
    ("original design (quoted) µs", 27, ">"),
    ("orig/ours", 9, ">"),
    ("target", 22, "<"),
    ("met?", 0, "<"),
)


def format_e2e_table(rows: Sequence[E2ERow]) -> str:
    """The end-to-end table, columns as in ``_COLUMNS``."""
    return format_table(
        _COLUMNS,
        [
            (
                row.label,
                f"{row.median_us:.1f}",
                f"{row.p99_us:.1f}",
                "—" if row.miss_median_us is None else f"{row.miss_median_us:.1f}",
                f"{row.hit_rate:.0%}",
                f"{row.conflicts}/{row.decisions}",
                f"{row.checks_per_decision:.2f}",
                f"{row.original_us:,.0f}",
                f"{row.ratio:.0f}×",
                row.target,
                met(row.met),
            )
            for row in rows
        ],
    )
