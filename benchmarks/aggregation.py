"""Aggregation throughput: how long a step's decision takes, next to yardsticks.

Table 1 (this module) times ``Reasoner.resolve`` (emitted rules in, pass out) on two paths:
the solver path (``fast_path=False``: every cache miss asks Z3) and the default fast path
(literal-only steps decided from bit masks). Its yardstick is ``reference_aggregate``
(``_reference.py``), a plain-Python deny-wins aggregator with the behaviour of the original
design's per-step loop, run in the same process on the same emitted sets (``_workloads.py``).
Table 2 times whole steps, ``Reasoner.decide(state)`` with ``ConditionalRequirement`` mixes
(``end_to_end.py``); table 3, when beeai-framework is installed, runs the identical workload
through BeeAI's own reasoner (``peer.py``).

Every row is timed per call with ``time.perf_counter_ns`` after a warm-up, in a few rounds; the
round with the lowest median is the one reported (this machine is a noisy VM). The benchmark
only times: that the engine agrees with the yardstick, and the fast path with the solver path,
on these very workloads is tested in ``tests/unit/test_benchmark_agreement.py``.

Run ``python -m benchmarks.aggregation [--quick] [--no-peer] [--json PATH]`` from the
repository's root; ``benchmarks/README.md`` says how to read the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Literal

import z3

from benchmarks._config import Config
from benchmarks._reference import ReferenceConflict, reference_aggregate
from benchmarks._report import (
    Column,
    format_table,
    lowest_median,
    met,
    p99,
    ratio,
    write_json,
)
from benchmarks._workloads import (
    SIZES,
    Workload,
    conflict_sets,
    draw_sets,
    force_conflict_sets,
    freshen,
    make_workload,
)
from benchmarks.end_to_end import (
    ORIGINAL_MS,
    E2ERow,
    format_e2e_table,
    make_e2e_workload,
    measure_e2e,
)
from benchmarks.latency import LatencyRow, format_latency_table, measure_latency
from benchmarks.peer import PeerReport, format_peer_table, run_peer
from ruleengine import ConflictError, Emitted, Reasoner, Rule

__all__ = [
    "KINDS",
    "TARGETS",
    "Report",
    "Row",
    "Sample",
    "format_aggregation_table",
    "main",
    "measure_size",
    "print_report",
    "run",
]


# -- timing -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed pass over a list of sets: nanoseconds per call, solver checks, conflicts."""

    times_ns: list[int]
    checks: int | None
    conflicts: int

    @property
    def median_ns(self) -> float:
        """The median nanoseconds per call."""
        return statistics.median(self.times_ns)


def time_each(
    call: Callable[[list[Emitted]], object], sets: Sequence[list[Emitted]]
) -> tuple[list[int], int]:
    """Nanoseconds per ``call(s)`` for each set, and how many calls answered a conflict."""
    clock = time.perf_counter_ns
    times: list[int] = []
    append = times.append
    conflicts = 0
    gc.collect()
    for s in sets:
        start = clock()
        try:
            call(s)
        except (ConflictError, ReferenceConflict):
            conflicts += 1
        append(clock() - start)
    return times, conflicts


def warmed_reasoner(
    workload: Workload,
    warm: Sequence[list[Emitted]],
    *,
    mode: Literal["strict", "priority"] = "strict",
    room: int = 0,
    fast_path: bool = True,
) -> Reasoner:
    """A fresh reasoner that has compiled every pool item and decided the ``warm`` sets.

    Its cache has room for ``room`` more sets, so a second pass over them is all hits.
    """
    size = len(workload.pool) + len(warm) + room + 1
    reasoner = Reasoner(workload.tools, [], mode=mode, cache_size=size, fast_path=fast_path)
    for s in warm:
        _decide_quietly(reasoner, s)
    seen = {e for s in warm for e in s}
    for e in workload.pool:
        if e not in seen:
            _decide_quietly(reasoner, [e])
    return reasoner


def _decide_quietly(reasoner: Reasoner, s: list[Emitted]) -> None:
    with contextlib.suppress(ConflictError):
        reasoner.resolve(s)


def engine_sample(reasoner: Reasoner, sets: Sequence[list[Emitted]], *, hits: bool) -> Sample:
    """Time ``reasoner.resolve`` once per set; ``hits`` says whether all must be cache hits."""
    checks, before = reasoner.solver_checks, (reasoner.hits, reasoner.misses)
    times, conflicts = time_each(reasoner.resolve, sets)
    expected = (before[0] + len(sets), before[1]) if hits else (before[0], before[1] + len(sets))
    # INVARIANT: a miss row never hits the cache and a hit row never asks the solver.
    assert (reasoner.hits, reasoner.misses) == expected, "cache behaved unexpectedly"
    return Sample(times, reasoner.solver_checks - checks, conflicts)


def reference_sample(workload: Workload, sets: Sequence[list[Emitted]]) -> Sample:
    """Time the yardstick once per set."""
    # `partial` is a C-level wrapper: the yardstick pays no extra Python frame per call.
    times, conflicts = time_each(partial(reference_aggregate, tools=workload.tools), sets)
    return Sample(times, None, conflicts)


# -- rows ---------------------------------------------------------------------------------------

KINDS: dict[str, str] = {
    "reference": "reference deny-wins (no solver)",
    "solver": "miss, solver path",
    "fast": "miss, fast path",
    "hit": "hit",
    "cold": "miss, cold items",
    "general": "miss, general constraints",
    "priority": "miss, priority mode",
    "conflict": "conflict: no tool left",
    "force": "conflict: hard force vs deny",
}
"""Row kinds and their names in the table. ``solver`` and ``hit`` use a reasoner with
``fast_path=False``; every other engine row uses the default reasoner (fast path on)."""

TARGETS: dict[tuple[str, str], tuple[str, float]] = {
    ("solver", "10/20"): ("median", 50.0),
    ("solver", "50/100"): ("median", 150.0),
    ("hit", "10/20"): ("median", 5.0),
    ("solver", "100/200"): ("p99", 1000.0),
}
"""The issue's targets, in µs: (statistic, bound) per (kind, size)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table (µs; the best round of several)."""

    label: str
    kind: str
    size: str
    decisions: int
    median_us: float
    p99_us: float
    ratio: float | None
    """Reference median at the same size over this row's median (> 1: the engine is faster)."""
    target: str
    met: bool | None
    checks_per_decision: float | None
    per_second: float
    conflicts: int
    note: str = ""


def make_row(kind: str, size: str, rounds: Sequence[Sample], reference_ns: float) -> Row:
    """The row of the round with the lowest median, its ratio to the reference and target."""
    best = lowest_median(rounds)
    median_us, p99_us = best.median_ns / 1000, p99(best.times_ns) / 1000
    target, is_met = "", None
    if (kind, size) in TARGETS:
        statistic, bound = TARGETS[kind, size]
        target = f"{statistic} ≤ {bound:g} µs"
        is_met = (median_us if statistic == "median" else p99_us) <= bound
    n = len(best.times_ns)
    return Row(
        label=f"{size} {KINDS[kind]}",
        kind=kind,
        size=size,
        decisions=n,
        median_us=median_us,
        p99_us=p99_us,
        ratio=reference_ns / best.median_ns if kind != "reference" else None,
        target=target,
        met=is_met,
        checks_per_decision=None if best.checks is None else best.checks / n,
        per_second=n / (sum(best.times_ns) / 1e9),
        conflicts=best.conflicts,
    )


# -- measuring ----------------------------------------------------------------------------------


def measure_size(tools: int, rules: int, config: Config) -> list[Row]:
    """Every row of one size, the rows' rounds interleaved so noise spreads over all of them."""
    workload = make_workload(tools, rules)
    size = workload.label
    count, warm_count = config.decisions[size], config.warm
    drawn = draw_sets(workload, warm_count + count)
    warm, sets = drawn[:warm_count], drawn[warm_count:]
    clashes = conflict_sets(workload, config.conflicts[size])
    extras = _extras(workload, sets, config) if size == "10/20" else None
    samples: dict[str, list[Sample]] = {}
    for _ in range(config.rounds):
        _add(samples, "reference", reference_sample(workload, sets))
        reasoner = warmed_reasoner(workload, warm, room=len(sets), fast_path=False)
        _add(samples, "solver", engine_sample(reasoner, sets, hits=False))
        _add(samples, "hit", engine_sample(reasoner, sets, hits=True))
        reasoner = warmed_reasoner(workload, warm, room=len(sets))
        _add(samples, "fast", engine_sample(reasoner, sets, hits=False))
        reasoner = warmed_reasoner(workload, warm, room=len(clashes))
        _add(samples, "conflict", engine_sample(reasoner, clashes, hits=False))
        notes = {"conflict": f"core of {core_size(reasoner, clashes[0])} items"}
        if extras is not None:
            notes.update(extras.round(samples, warm))
    reference_ns = min(s.median_ns for s in samples["reference"])
    rows = [make_row(kind, size, samples[kind], reference_ns) for kind in KINDS if kind in samples]
    return [_annotate(row, notes) for row in rows]


def _add(samples: dict[str, list[Sample]], kind: str, sample: Sample) -> None:
    samples.setdefault(kind, []).append(sample)


@dataclass
class _Extras:
    """The 10/20-only rows: cold items, general constraints, priority mode, hard-force clashes."""

    workload: Workload
    sets: list[list[Emitted]]
    cold: list[list[Emitted]]
    general: Workload
    general_warm: list[list[Emitted]]
    general_sets: list[list[Emitted]]
    forces: list[list[Emitted]]

    def round(
        self, samples: dict[str, list[Sample]], warm: Sequence[list[Emitted]]
    ) -> dict[str, str]:
        """One round of each extra row; answers the rows' notes."""
        reasoner = warmed_reasoner(self.workload, warm, room=len(self.cold))
        _add(samples, "cold", engine_sample(reasoner, self.cold, hits=False))
        general = warmed_reasoner(self.general, self.general_warm, room=len(self.general_sets))
        _add(samples, "general", engine_sample(general, self.general_sets, hits=False))
        priority = warmed_reasoner(self.workload, warm, mode="priority", room=len(self.sets))
        _add(samples, "priority", engine_sample(priority, self.sets, hits=False))
        reasoner = warmed_reasoner(self.workload, warm, room=len(self.forces))
        _add(samples, "force", engine_sample(reasoner, self.forces, hits=False))
        formulas = sum(not isinstance(e.item, Rule) for s in self.general_sets for e in s)
        return {
            "cold": "every item new to the reasoner",
            "general": f"{formulas / len(self.general_sets):.1f} formulas per set",
            "force": f"core of {core_size(reasoner, self.forces[0])} items",
        }


def _extras(workload: Workload, sets: list[list[Emitted]], config: Config) -> _Extras:
    general = make_workload(len(workload.tools), workload.rules, general=True)
    probe = Reasoner(general.tools, [], cache_size=0)
    count = config.extras + config.warm
    general_drawn = draw_sets(general, count, keep=partial(_engine_satisfiable, probe))
    sets = sets[: config.extras]
    return _Extras(
        workload=workload,
        sets=sets,
        cold=freshen(sets),
        general=general,
        general_warm=general_drawn[: config.warm],
        general_sets=general_drawn[config.warm :],
        forces=force_conflict_sets(workload, sets[: config.conflicts[workload.label]]),
    )


def _engine_satisfiable(probe: Reasoner, drawn: list[Emitted]) -> bool:
    try:
        probe.resolve(drawn)
    except ConflictError:
        return False
    return True


def _annotate(row: Row, notes: dict[str, str]) -> Row:
    """Add the row's note; a conflict where none belongs is noted too."""
    note = notes.get(row.kind, "")
    if row.conflicts and row.kind not in ("conflict", "force"):
        note = f"{note}; {row.conflicts} conflicts" if note else f"{row.conflicts} conflicts"
    return Row(**{**asdict(row), "note": note})


def core_size(reasoner: Reasoner, drawn: list[Emitted]) -> int:
    """The size of the minimal core ``reasoner`` answers for ``drawn`` (cached: no new solving)."""
    try:
        reasoner.resolve(drawn)
    except ConflictError as exc:
        return len(exc.core)
    raise AssertionError("a conflict set has a pass")


_COLUMNS: tuple[Column, ...] = (
    ("workload (tools/rules)", 44, "<"),
    ("median µs", 10, ">"),
    ("p99 µs", 10, ">"),
    ("ref/ours", 9, ">"),
    ("target", 18, "<"),
    ("met?", 5, "<"),
    ("checks/dec", 10, ">"),
    ("dec/s", 10, ">"),
    ("note", 0, "<"),
)


def format_aggregation_table(rows: Sequence[Row]) -> str:
    """The aggregation table, one row per line, columns as in ``_COLUMNS``."""
    return format_table(
        _COLUMNS,
        [
            (
                row.label,
                f"{row.median_us:.1f}",
                f"{row.p99_us:.1f}",
                ratio(row.ratio),
                row.target or "—",
                met(row.met),
                "—" if row.checks_per_decision is None else f"{row.checks_per_decision:.2f}",
                f"{row.per_second:,.0f}",
                row.note,
            )
            for row in rows
        ],
    )


# -- the command line ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Report:
    """Every table's rows, and what the run was (versions, counts, load, duration)."""

    rows: list[Row]
    e2e_rows: list[E2ERow]
    peer: PeerReport
    latency: list[LatencyRow]
    meta: dict[str, Any]


def run(
    config: Config,
    *,
    peer: bool = True,
    quick: bool = False,
    log: Callable[[str], None] = print,
) -> Report:
    """Measure tables 1, 2 and 4, and (with ``peer``, if installed) run BeeAI on table 2's
    states (table 3)."""
    started = time.perf_counter()
    load = os.getloadavg()[0]
    rows: list[Row] = []
    for tools, rules in SIZES:
        log(f"measuring {tools} tools / {rules} rules …")
        rows.extend(measure_size(tools, rules, config))
    log("measuring end-to-end steps …")
    steps_workload = make_e2e_workload(config)
    e2e_rows = measure_e2e(steps_workload, config)
    skipped = "peer run skipped: --no-peer"
    peer_report = (
        run_peer(steps_workload, config, log=log) if peer else PeerReport([], skipped, None)
    )
    log("measuring worst cases …")
    latency = measure_latency(quick=quick)
    meta = {
        "python": platform.python_version(),
        "z3": z3.get_version_string(),
        "machine": platform.machine(),
        "rounds": config.rounds,
        "decisions": config.decisions,
        "conflicts": config.conflicts,
        "extras": config.extras,
        "states": config.states,
        "mixes": {
            size: {"attempt": mix.attempt, "hard_forces": mix.hard_forces}
            for size, mix in steps_workload.mixes.items()
        },
        "original_ms_quoted": ORIGINAL_MS,
        "beeai_framework": peer_report.version,
        "seconds": round(time.perf_counter() - started, 1),
        "cpus": os.cpu_count(),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    return Report(rows, e2e_rows, peer_report, latency, meta)


def print_report(report: Report) -> None:
    """The four tables (or the line saying why the third is missing), then the load."""
    meta = report.meta
    print()
    _print_aggregation(report.rows, meta)
    print()
    _print_e2e(report.e2e_rows, meta)
    print()
    _print_peer(report.peer)
    print()
    print(
        "4. Worst cases: single decisions in a fresh reasoner, fastest of a few rounds "
        "(benchmarks/latency.py)."
    )
    print()
    print(format_latency_table(report.latency))
    print()
    print(
        f"total {meta['seconds']} s; 1-minute load average {meta['load_before']} before, "
        f"{meta['load_after']} after, on {meta['cpus']} CPUs (above ~0.5 before means contention)"
    )


def _print_aggregation(rows: Sequence[Row], meta: dict[str, Any]) -> None:
    print(
        f"1. Reasoner.resolve per decision, Python {meta['python']}, z3 {meta['z3']}; each row "
        f"is the best of {meta['rounds']} rounds (the round with the lowest median; noisy VM)."
    )
    print("ref/ours = reference median at the same size / this row's median (> 1: we are faster).")
    print(
        "`miss, solver path` and `hit` use Reasoner(fast_path=False) (every miss asks Z3); "
        "all other engine rows use the default reasoner (fast path on)."
    )
    print()
    print(format_aggregation_table(rows))


def _print_e2e(rows: Sequence[E2ERow], meta: dict[str, Any]) -> None:
    print(
        "2. End-to-end steps: Reasoner.decide(RunState(steps)) with ConditionalRequirement "
        f"mixes, a fresh RunState per call; best of {meta['rounds']} rounds."
    )
    print(
        "original design (quoted) = its per-step cost measured on this machine by the issue's "
        "author (not measured here); orig/ours = that / this row's median. Rows without "
        "`solver path` use the default reasoner."
    )
    print()
    print(format_e2e_table(rows))


def _print_peer(peer: PeerReport) -> None:
    if peer.skipped is not None:
        print(peer.skipped)
        return
    print(
        f"3. Peer run: the same end-to-end states through BeeAI {peer.version}'s "
        "RequirementsReasoner.create_request (requirements run + aggregation), in this "
        "process, one round."
    )
    print(
        "BeeAI/quoted = BeeAI's median / the quoted original cost; ours = our default "
        "reasoner on the same states right after, one round; BeeAI/ours = the medians' ratio."
    )
    print()
    print(format_peer_table(peer.rows))


def _payload(report: Report) -> dict[str, Any]:
    """The JSON file's content: the meta data and every row of every table."""
    return {
        "meta": report.meta,
        "rows": [asdict(row) for row in report.rows],
        "end_to_end": [asdict(row) for row in report.e2e_rows],
        "peer": {
            "skipped": report.peer.skipped,
            "version": report.peer.version,
            "rows": [asdict(row) for row in report.peer.rows],
        },
        "latency": [asdict(row) for row in report.latency],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (``--quick``: tiny counts), print the tables, write ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke test")
    parser.add_argument(
        "--no-peer", action="store_true", help="skip the BeeAI peer run even if installed"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config.full()
    report = run(config, peer=not args.no_peer, quick=args.quick)
    print_report(report)
    if args.json:
        write_json(args.json, _payload(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
