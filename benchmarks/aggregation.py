"""Aggregation throughput: how long a step's decision takes, next to yardsticks.

The first table times ``Reasoner.resolve`` (emitted rules in, pass out) on two paths:
the solver path (``fast_path=False``: every cache miss asks Z3) and the default fast path
(literal-only steps decided from bit masks). Its yardstick is ``reference_aggregate``, a
plain-Python deny-wins aggregator with the behaviour of the original design's per-step loop
(group the rules by tool, fold their flags, pick the forced tool), run in the same process on
the same emitted sets. The second table times whole steps, ``Reasoner.decide(state)`` with
``ConditionalRequirement`` mixes (``end_to_end.py``), against the original design's per-step
cost as quoted in the issue. A third, when beeai-framework is installed, runs the identical
workload through BeeAI's own reasoner (``peer_beeai.py``).

Every row is timed per call with ``time.perf_counter_ns`` after a warm-up, in a few rounds; the
round with the lowest median is the one reported (this machine is a noisy VM).

Run ``python benchmarks/aggregation.py [--quick] [--no-peer] [--json PATH]``;
``benchmarks/README.md`` says how to read the tables. The workloads are deterministic (seeded
``random.Random``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Literal

import z3

from ruleengine import (
    FINAL_ANSWER,
    ConflictError,
    Expr,
    Pass,
    Reasoner,
    Rule,
    RunState,
    allowed,
    any_of,
    at_most,
    can_stop,
    exactly,
    forced,
    implies,
)
from ruleengine.rules import Emitted
from ruleengine.state import Step

# The end-to-end workload and the peer adapter live next to this file; the peer adapter is
# imported only when the peer run happens (it needs beeai-framework).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import end_to_end as e2e

__all__ = [
    "Config",
    "CrossCheck",
    "E2ERow",
    "E2EWorkload",
    "PEER_MISSING",
    "PathCheck",
    "PeerReport",
    "PeerRow",
    "ReferenceConflict",
    "ReferencePass",
    "Row",
    "Workload",
    "aggregation_path_check",
    "conflict_sets",
    "cross_check",
    "draw_sets",
    "e2e_path_check",
    "force_conflict_sets",
    "freshen",
    "main",
    "make_e2e_workload",
    "make_workload",
    "measure_e2e",
    "path_check",
    "reference_aggregate",
    "run",
    "run_peer",
]

SIZES: tuple[tuple[int, int], ...] = ((10, 20), (50, 100), (100, 200))
"""(tools, rules) per step; the tool count includes ``final_answer``."""

SEED = 20240611
PRIORITIES = (1, 5, 10, 10, 10, 20, 50)
"""Requirement priorities, drawn with these weights (10 is the default priority)."""


# -- the reference aggregator -------------------------------------------------------------------


class ReferenceConflict(Exception):
    """The reference aggregator's answer when no tool is left allowed."""


@dataclass(frozen=True, slots=True)
class ReferencePass:
    """What the reference aggregator decides for one step (the fields of ``Pass``)."""

    allowed: tuple[str, ...]
    hidden: tuple[str, ...]
    forced: str | None
    can_stop: bool
    tool_choice: str
    reasons: dict[str, str]


def reference_aggregate(
    emitted: Iterable[tuple[Any, str, int]],
    tools: Sequence[str],
    *,
    final_answer_as_tool: bool = True,
) -> ReferencePass:
    """Deny-wins aggregation of plain rules, one loop per tool, no solver.

    ``emitted`` holds ``(Rule, requirement name, priority)`` triples (``Emitted`` is one);
    ``tools`` is the declared order with ``final_answer`` last. Per tool, its rules are visited
    by priority, highest first: any deny denies; any hide hides and denies; a forcing rule makes
    the tool a force candidate at that rule's priority; any ``prevent_stop`` forbids stopping;
    the reason kept is the last one seen. The allowed candidate with the highest forcing
    priority is forced (ties: the first in declared order). Where the original kept
    ``can_stop`` true with ``final_answer`` denied, or forced a denied tool, this follows
    SPEC §4 so that both sides compute the same thing. Raises ``ReferenceConflict`` when no
    tool is allowed.
    """
    by_tool: dict[str, list[tuple[int, Rule]]] = {}
    for rule, _requirement, priority in emitted:
        by_tool.setdefault(rule.target, []).append((priority, rule))
    denied: set[str] = set()
    hidden: set[str] = set()
    candidates: dict[str, int] = {}
    reasons: dict[str, str] = {}
    prevent_stop = False
    for tool in tools:
        rules = by_tool.get(tool)
        if rules is None:
            continue
        rules.sort(key=_priority_of, reverse=True)
        for priority, rule in rules:
            if not rule.allowed:
                denied.add(tool)
            if rule.hidden:
                hidden.add(tool)
                denied.add(tool)
            if rule.forced and priority > candidates.get(tool, 0):
                candidates[tool] = priority
            if rule.prevent_stop:
                prevent_stop = True
            if rule.reason is not None:
                reasons[tool] = rule.reason
    if prevent_stop:
        denied.add(FINAL_ANSWER)
    return _reference_pass(tools, denied, hidden, candidates, reasons, final_answer_as_tool)


def _priority_of(pair: tuple[int, Rule]) -> int:
    return pair[0]


def _reference_pass(
    tools: Sequence[str],
    denied: set[str],
    hidden: set[str],
    candidates: dict[str, int],
    reasons: dict[str, str],
    final_answer_as_tool: bool,
) -> ReferencePass:
    allowed_tools = [t for t in tools if t not in denied]
    if not allowed_tools:
        raise ReferenceConflict("no tool is left allowed")
    can_stop_now = FINAL_ANSWER not in denied
    chosen: str | None = None
    best = 0
    for tool in allowed_tools:
        priority = candidates.get(tool, 0)
        if priority > best:
            chosen, best = tool, priority
    if chosen is not None:
        allowed_tools = [chosen]
        if can_stop_now and chosen != FINAL_ANSWER:
            allowed_tools.append(FINAL_ANSWER)
        tool_choice = chosen
    elif len(allowed_tools) == 1:
        tool_choice = allowed_tools[0]
    elif not can_stop_now or final_answer_as_tool:
        tool_choice = "required"
    else:
        tool_choice = "auto"
    return ReferencePass(
        allowed=tuple(allowed_tools),
        hidden=tuple(t for t in tools if t in hidden),
        forced=chosen,
        can_stop=can_stop_now,
        tool_choice=tool_choice,
        reasons=reasons,
    )


# -- workloads ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    """The declared tools, the number of items per step, and the pool steps draw from."""

    tools: tuple[str, ...]
    rules: int
    pool: tuple[Emitted, ...]
    denials: dict[str, tuple[Emitted, ...]]
    """Per tool, the pool's plain rules that make it not allowed (conflict sets use them)."""

    @property
    def label(self) -> str:
        return f"{len(self.tools)}/{self.rules}"


def make_workload(tools: int, rules: int, *, general: bool = False, seed: int = SEED) -> Workload:
    """A deterministic pool of four times ``rules`` items over ``tools`` declared tools.

    The kinds of rule come in fixed quotas (``_quotas``); with ``general``, one item in five is
    a formula instead.
    """
    rng = random.Random(f"{seed}:{tools}:{rules}:{general}")
    names = (*(f"tool_{i:03d}" for i in range(tools - 1)), FINAL_ANSWER)
    requirements = [(f"req-{i:02d}", rng.choice(PRIORITIES)) for i in range(max(4, rules // 2))]
    size = 4 * rules
    formulas = size // 5 if general else 0
    kinds = [*_quotas(size - formulas, tools), *["formula"] * formulas]
    pool: dict[Emitted, None] = {}
    for kind in kinds:
        for _ in range(100):  # draw again on a duplicate
            name, priority = rng.choice(requirements)
            item = _random_formula(rng, names) if kind == "formula" else _rule(rng, kind, names)
            if Emitted(item, name, priority) not in pool:
                pool[Emitted(item, name, priority)] = None
                break
    items = tuple(rng.sample(list(pool), len(pool)))
    denials: dict[str, list[Emitted]] = {t: [] for t in names}
    for e in items:
        for t in _blocked(e.item):
            denials[t].append(e)
    for t, found in denials.items():  # conflict sets deny every tool: each needs a denial
        if not found:
            found.append(Emitted(Rule(t, allowed=False), "lockdown", 10))
    return Workload(names, rules, items, {t: tuple(es) for t, es in denials.items()})


_REASONS = ("search first", "budget spent", "needs approval", "already done", "use the cache")


def _quotas(size: int, tools: int) -> list[str]:
    """How many rules of each kind a pool of ``size`` holds: a realistic, mostly-deny mix.

    About half the tools end up denied in a step of ``2 × tools`` rules. Forces and
    ``prevent_stop`` are per-step events, not per-tool ones: their share shrinks as the tool
    count grows, so a step has one or two forcing rules and less than one ``prevent_stop``
    at any size.
    """
    per_step = 10 / tools
    weights = {
        "deny": 14,
        "deny+reason": 10,
        "hide": 3,
        "allow+reason": 24,
        "allow": 12,
        "force": 6 * per_step,
        "stop": 2 * per_step,
        "force+stop": 1 * per_step,
    }
    total = sum(weights.values())
    counts = {kind: max(1, round(w / total * size)) for kind, w in weights.items()}
    counts["allow"] += size - sum(counts.values())  # rounding slack goes to a no-op kind
    return [kind for kind, n in counts.items() for _ in range(n)]


def _rule(rng: random.Random, kind: str, tools: Sequence[str]) -> Rule:
    """One rule of ``kind``; apart from ``prevent_stop``, about a tool other than the last."""
    target = rng.choice(tools[:-1])
    reason = rng.choice(_REASONS)
    match kind:
        case "deny":
            return Rule(target, allowed=False)
        case "deny+reason":
            return Rule(target, allowed=False, reason=reason)
        case "hide":
            return Rule(target, hidden=True, reason=reason if rng.random() < 0.5 else None)
        case "allow+reason":
            return Rule(target, reason=reason)
        case "allow":
            return Rule(target)
        case "force":
            return Rule(target, forced=True)
        case "stop":
            where = rng.choice(tools)
            return Rule(where, prevent_stop=True, reason=reason if rng.random() < 0.3 else None)
        case "force+stop":
            return Rule(target, forced=True, prevent_stop=True)
        case _:
            raise AssertionError(f"unknown kind {kind!r}")


def _random_formula(rng: random.Random, tools: Sequence[str]) -> Expr:
    a, b, c = rng.sample(tools[:-1], 3)
    templates: tuple[Callable[[], Expr], ...] = (
        lambda: at_most(1, allowed(a), allowed(b)),
        lambda: at_most(1, allowed(a), allowed(b), allowed(c)),
        lambda: implies(allowed(a), ~can_stop),
        lambda: implies(allowed(a), ~allowed(b)),
        lambda: any_of(allowed(a), allowed(b)),
        lambda: exactly(1, allowed(a), allowed(b)),
        lambda: forced(a),
    )
    return rng.choices(templates, weights=(4, 2, 3, 3, 2, 1, 1))[0]()


def _blocked(item: Rule | Expr) -> tuple[str, ...]:
    """The tools a plain rule makes not allowed (none for formulas)."""
    if not isinstance(item, Rule):
        return ()
    blocked = (item.target,) if not item.allowed or item.hidden else ()
    return (*blocked, FINAL_ANSWER) if item.prevent_stop else blocked


def _denied(drawn: Iterable[Emitted]) -> set[str]:
    return {t for e in drawn for t in _blocked(e.item)}


def draw_sets(
    workload: Workload,
    count: int,
    *,
    seed: int = 0,
    keep: Callable[[list[Emitted]], bool] | None = None,
) -> list[list[Emitted]]:
    """``count`` distinct random subsets of ``workload.rules`` pool items that ``keep`` accepts.

    By default a set is kept when the reference finds a pass (plain rules only); pass another
    ``keep`` for pools with formulas.
    """
    rng = random.Random(f"draw:{seed}:{workload.label}")
    accept = keep if keep is not None else _reference_satisfiable(workload.tools)
    seen: set[frozenset[Emitted]] = set()
    sets: list[list[Emitted]] = []
    for _ in range(count * 50):
        if len(sets) == count:
            break
        drawn = rng.sample(workload.pool, workload.rules)
        key = frozenset(drawn)
        if key not in seen and accept(drawn):
            seen.add(key)
            sets.append(drawn)
    # INVARIANT: pools are sparse enough that almost every draw is kept.
    assert len(sets) == count, f"only {len(sets)} of {count} sets drawn"
    return sets


def _reference_satisfiable(tools: Sequence[str]) -> Callable[[list[Emitted]], bool]:
    def accept(drawn: list[Emitted]) -> bool:
        try:
            reference_aggregate(drawn, tools)
        except ReferenceConflict:
            return False
        return True

    return accept


def conflict_sets(workload: Workload, count: int, *, seed: int = 0) -> list[list[Emitted]]:
    """Distinct sets of ``workload.rules`` items in which every tool is denied.

    Each holds one random denial per tool plus random pool items; the minimal core is one
    denial per tool, so its size is the tool count.
    """
    rng = random.Random(f"conflict:{seed}:{workload.label}")
    tools = workload.tools
    sets: list[list[Emitted]] = []
    seen: set[frozenset[Emitted]] = set()
    while len(sets) < count:
        chosen = {rng.choice(workload.denials[t]): None for t in tools}
        rest = [e for e in workload.pool if e not in chosen]
        drawn = [*chosen, *rng.sample(rest, workload.rules - len(chosen))]
        key = frozenset(drawn)
        if key not in seen:
            seen.add(key)
            sets.append(drawn)
    return sets


def force_conflict_sets(
    workload: Workload, base: Sequence[list[Emitted]], *, seed: int = 0
) -> list[list[Emitted]]:
    """Each satisfiable ``base`` set plus a hard force on a tool that one of its rules denies.

    The typical run-time clash (a ``force_at_step`` when its tool may not run). Other denials
    of that tool are dropped, and random items to keep the size, so the core is those two.
    """
    rng = random.Random(f"force:{seed}:{workload.label}")
    out: list[list[Emitted]] = []
    for drawn in base:
        denied = sorted(_denied(drawn) - {FINAL_ANSWER})
        if not denied:
            continue
        tool = rng.choice(denied)
        keep = [e for e in drawn if tool not in _blocked(e.item)]
        survivor = next(e for e in drawn if tool in _blocked(e.item))
        rng.shuffle(keep)
        hard = Emitted(forced(tool), "force-at-step", 10)
        out.append([*keep[: workload.rules - 2], survivor, hard])
    return out


def freshen(sets: Sequence[list[Emitted]], *, tag: str = "cold") -> list[list[Emitted]]:
    """Copies of ``sets`` whose rules are new objects never seen: each gets a unique reason."""
    out: list[list[Emitted]] = []
    serial = 0
    for drawn in sets:
        copy = []
        for e in drawn:
            serial += 1
            r = e.item
            assert isinstance(r, Rule)
            fresh = Rule(
                r.target,
                allowed=r.allowed,
                hidden=r.hidden,
                forced=r.forced,
                prevent_stop=r.prevent_stop,
                reason=f"{r.reason or tag} #{serial}",
            )
            copy.append(Emitted(fresh, e.requirement, e.priority))
        out.append(copy)
    return out


# -- timing -------------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed pass over a list of sets: nanoseconds per call, solver checks, conflicts."""

    times_ns: list[int]
    checks: int | None
    conflicts: int

    @property
    def median_ns(self) -> float:
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


def row_label(kind: str, size: str) -> str:
    return f"{size} {KINDS[kind]}"


def p99(times_ns: Sequence[int]) -> float:
    """The 99th percentile by nearest rank."""
    ordered = sorted(times_ns)
    return float(ordered[max(0, -(-99 * len(ordered) // 100) - 1)])


def make_row(kind: str, size: str, rounds: Sequence[Sample], reference_ns: float) -> Row:
    best = min(rounds, key=lambda s: s.median_ns)
    median_us, p99_us = best.median_ns / 1000, p99(best.times_ns) / 1000
    target, met = "", None
    if (kind, size) in TARGETS:
        statistic, bound = TARGETS[kind, size]
        target = f"{statistic} ≤ {bound:g} µs"
        met = (median_us if statistic == "median" else p99_us) <= bound
    n = len(best.times_ns)
    return Row(
        label=row_label(kind, size),
        kind=kind,
        size=size,
        decisions=n,
        median_us=median_us,
        p99_us=p99_us,
        ratio=reference_ns / best.median_ns if kind != "reference" else None,
        target=target,
        met=met,
        checks_per_decision=None if best.checks is None else best.checks / n,
        per_second=n / (sum(best.times_ns) / 1e9),
        conflicts=best.conflicts,
    )


# -- running ------------------------------------------------------------------------------------


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


# -- the correctness cross-check ----------------------------------------------------------------


@dataclass
class CrossCheck:
    """Strict mode against the reference on plain rules: counts and any disagreements."""

    compared: int = 0
    conflicts: int = 0
    forced: int = 0
    """Sets with a forced tool and no tie at the top forcing priority (forced compared)."""
    ties: int = 0
    """Sets with a forced tie: both must pick one of the tied tools."""
    hidden: int = 0
    no_stop: int = 0
    mismatches: list[str] = field(default_factory=list)


def cross_check(workload: Workload, sets: Iterable[list[Emitted]]) -> CrossCheck:
    """Compare ``allowed``, ``hidden``, ``can_stop``, ``forced`` and conflicts set by set.

    Reasons are not compared: by design we keep the highest-priority reason, the original the
    last one of its loop. A forced tie is broken by declared order on our side; there only
    membership in the tie is checked.
    """
    result = CrossCheck()
    reasoner = Reasoner(workload.tools, [], cache_size=0)
    for s in sets:
        result.compared += 1
        ours = _ours_or_none(reasoner, s)
        try:
            ref: ReferencePass | None = reference_aggregate(s, workload.tools)
        except ReferenceConflict:
            ref = None
        if ours is None or ref is None:
            if (ours is None) != (ref is None):
                result.mismatches.append(f"conflict only on one side: {s!r}")
            result.conflicts += 1
            continue
        _compare(result, workload.tools, s, ours, ref)
    return result


def _ours_or_none(reasoner: Reasoner, s: list[Emitted]) -> Any:
    try:
        return reasoner.resolve(s)
    except ConflictError:
        return None


def _compare(
    result: CrossCheck, tools: Sequence[str], s: list[Emitted], ours: Any, ref: ReferencePass
) -> None:
    tied = _top_forced(s)
    same = ours.hidden == ref.hidden and ours.can_stop == ref.can_stop
    if len(tied) > 1:
        result.ties += 1
        stop = (FINAL_ANSWER,) if ours.can_stop else ()
        same = same and ours.forced in tied and ref.forced in tied
        same = same and ours.allowed == (ours.forced, *stop)
    else:
        same = same and ours.allowed == ref.allowed and ours.forced == ref.forced
        result.forced += ours.forced is not None
    result.hidden += bool(ref.hidden)
    result.no_stop += not ref.can_stop
    if not same:
        result.mismatches.append(f"ours {ours!r} != reference {ref!r} for {s!r}")


def _top_forced(s: list[Emitted]) -> set[str]:
    """The tools whose forcing rules tie at the top priority among tools left allowed."""
    denied = _denied(s)
    bids: dict[str, int] = {}
    for rule, _requirement, priority in s:
        if isinstance(rule, Rule) and rule.forced and rule.target not in denied:
            bids[rule.target] = max(priority, bids.get(rule.target, 0))
    top = max(bids.values(), default=0)
    return {t for t, p in bids.items() if p == top}


# -- fast path against solver path --------------------------------------------------------------


@dataclass
class PathCheck:
    """The default reasoner (fast path) against ``fast_path=False`` on the same inputs."""

    compared: int = 0
    conflicts: int = 0
    """Inputs both paths answer with a ``ConflictError`` (their cores are compared)."""
    forced: int = 0
    hidden: int = 0
    no_stop: int = 0
    fast_checks: int = 0
    """Solver checks the fast-path reasoner made (conflicts only, on literal-only inputs)."""
    solver_checks: int = 0
    """Solver checks the solver-path reasoner made."""
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: PathCheck) -> None:
        self.compared += other.compared
        self.conflicts += other.conflicts
        self.forced += other.forced
        self.hidden += other.hidden
        self.no_stop += other.no_stop
        self.fast_checks += other.fast_checks
        self.solver_checks += other.solver_checks
        self.mismatches.extend(other.mismatches)


Outcome = tuple[Any, ...]


def outcome(call: Callable[[], Pass]) -> Outcome:
    """What a decision answers, comparably: the pass's fields, or the conflict's core."""
    try:
        p = call()
    except ConflictError as exc:
        return ("conflict", tuple((c.requirement, c.priority, c.rule) for c in exc.core))
    reasons = tuple(sorted(p.reasons.items()))
    return ("pass", p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, reasons)


def _compare_paths(
    result: PathCheck, fast: Outcome, solver: Outcome, what: Callable[[], str]
) -> None:
    result.compared += 1
    if fast != solver:
        result.mismatches.append(f"fast path {fast!r} != solver path {solver!r} for {what()}")
    elif fast[0] == "conflict":
        result.conflicts += 1
    else:
        result.forced += fast[3] is not None
        result.hidden += bool(fast[2])
        result.no_stop += not fast[4]


def path_check(
    tools: Sequence[str],
    sets: Iterable[list[Emitted]],
    *,
    mode: Literal["strict", "priority"] = "strict",
) -> PathCheck:
    """Compare ``resolve`` on both paths set by set: ``allowed``, ``hidden``, ``forced``,
    ``can_stop``, ``tool_choice``, ``reasons``, or the conflict's core."""
    fast = Reasoner(tools, [], mode=mode, cache_size=0)
    solver = Reasoner(tools, [], mode=mode, cache_size=0, fast_path=False)
    result = PathCheck()
    for s in sets:
        ours = outcome(partial(fast.resolve, s))
        theirs = outcome(partial(solver.resolve, s))
        _compare_paths(result, ours, theirs, partial(repr, s))
    result.fast_checks = fast.solver_checks
    result.solver_checks = solver.solver_checks
    return result


def e2e_path_check(mix: e2e.Mix, states: Iterable[tuple[Step, ...]]) -> PathCheck:
    """Compare ``decide`` on both paths, state by state, with the mix's requirements."""
    fast = e2e.mix_reasoner(mix, cache_size=0)
    solver = e2e.mix_reasoner(mix, cache_size=0, fast_path=False)
    result = PathCheck()
    for steps in states:
        ours = outcome(partial(fast.decide, RunState(steps=steps)))
        theirs = outcome(partial(solver.decide, RunState(steps=steps)))
        trace = [(s.tool, s.status) for s in steps]
        _compare_paths(result, ours, theirs, partial(repr, trace))
    result.fast_checks = fast.solver_checks
    result.solver_checks = solver.solver_checks
    return result


PATH_CHECK_CAP = 1000
"""At most this many sets (or states) per size and kind in the path checks of a full run."""


def aggregation_path_check(config: Config) -> dict[str, PathCheck]:
    """Per size, both paths on plain sets and conflict sets; at 10/20 also on hard-force
    clashes, general constraints and priority mode (the solver path calls Z3 for each tier)."""
    checks: dict[str, PathCheck] = {}
    for tools, rules in SIZES:
        workload = make_workload(tools, rules)
        size = workload.label
        plain = draw_sets(workload, min(PATH_CHECK_CAP, config.decisions[size]), seed=2)
        clashes = conflict_sets(workload, config.conflicts[size], seed=2)
        check = path_check(workload.tools, [*plain, *clashes])
        if size == "10/20":
            forces = force_conflict_sets(workload, plain[: config.conflicts[size]], seed=2)
            check.add(path_check(workload.tools, forces))
            check.add(path_check(workload.tools, plain[: config.extras], mode="priority"))
            general = make_workload(tools, rules, general=True)
            check.add(path_check(general.tools, draw_sets(general, config.extras, keep=_any_set)))
        checks[size] = check
    return checks


def _any_set(drawn: list[Emitted]) -> bool:
    return True


# -- end-to-end steps ---------------------------------------------------------------------------


Path = Literal["fast", "solver"]
PATHS: tuple[Path, ...] = ("fast", "solver")
"""The default reasoner, and ``fast_path=False``."""


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
    return f"{size} {steps} steps" + (", solver path" if path == "solver" else "")


@dataclass
class E2EWorkload:
    """Per size: the mix, and per length the warm-up and the timed histories."""

    mixes: dict[str, e2e.Mix]
    warm: dict[tuple[str, int], list[tuple[Step, ...]]]
    timed: dict[tuple[str, int], list[e2e.Trace]]

    def states(self, size: str, steps: int) -> list[tuple[Step, ...]]:
        return [e2e.to_steps(t) for t in self.timed[size, steps]]


def make_e2e_workload(config: Config) -> E2EWorkload:
    mixes: dict[str, e2e.Mix] = {}
    warm: dict[tuple[str, int], list[tuple[Step, ...]]] = {}
    timed: dict[tuple[str, int], list[e2e.Trace]] = {}
    for tools, requirements in e2e.E2E_SIZES:
        mix = e2e.make_mix(tools, requirements, seed=SEED)
        mixes[mix.label] = mix
        for steps in e2e.STEP_COUNTS:
            drawn = e2e.draw_traces(mix, steps, config.warm, seed="warm")
            warm[mix.label, steps] = [e2e.to_steps(t) for t in drawn]
            timed[mix.label, steps] = e2e.draw_traces(
                mix, steps, config.states[mix.label], seed=SEED
            )
    return E2EWorkload(mixes, warm, timed)


def measure_e2e(workload: E2EWorkload, config: Config) -> list[E2ERow]:
    """Every end-to-end row, the rounds interleaved over all cells and both paths.

    Each round and path starts a fresh reasoner per cell, decides the cell's warm-up states
    (other random histories of the same length), then times the cell's states.
    """
    samples: dict[tuple[str, int, Path], list[e2e.DecisionSample]] = {}
    cells = [(size, steps) for size in workload.mixes for steps in e2e.STEP_COUNTS]
    states = {cell: workload.states(*cell) for cell in cells}
    for _ in range(config.rounds):
        for size, steps in cells:
            mix = workload.mixes[size]
            for path in PATHS:
                reasoner = e2e.mix_reasoner(mix, fast_path=path == "fast")
                e2e.warm_up(reasoner, workload.warm[size, steps])
                sample = e2e.time_decisions(reasoner, states[size, steps])
                samples.setdefault((size, steps, path), []).append(sample)
    return [
        _e2e_row(size, steps, path, samples[size, steps, path])
        for size, steps in cells
        for path in PATHS
    ]


def _e2e_row(size: str, steps: int, path: Path, rounds: list[e2e.DecisionSample]) -> E2ERow:
    best = min(rounds, key=lambda s: statistics.median(s.times_ns))
    n = len(best.times_ns)
    median_ns = statistics.median(best.times_ns)
    misses = [t for t, hit in zip(best.times_ns, best.hits, strict=True) if not hit]
    original_us = e2e.ORIGINAL_MS[size] * 1000
    bound = original_us / e2e.SPEEDUP
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
        target=f"≥ {e2e.SPEEDUP}× (≤ {bound:g} µs)",
        met=median_ns / 1000 <= bound,
    )


# -- the peer run -------------------------------------------------------------------------------

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
        import peer_beeai
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
        for steps in e2e.STEP_COUNTS
    ]
    results = peer_beeai.run_peer(
        cells,
        max_calls=config.peer_calls,
        seconds=config.peer_seconds,
        warm=min(3, config.peer_calls),
    )
    peer_rows = []
    for (mix, steps, traces), cell in zip(cells, results, strict=True):
        calls = len(cell.times_ns)
        reasoner = e2e.mix_reasoner(mix)
        e2e.warm_up(reasoner, workload.warm[mix.label, steps])
        mine = e2e.time_decisions(reasoner, [e2e.to_steps(t) for t in traces[:calls]])
        ours_us = statistics.median(mine.times_ns) / 1000
        misses = [t for t, hit in zip(mine.times_ns, mine.hits, strict=True) if not hit]
        ours_miss_us = statistics.median(misses) / 1000 if misses else None
        median_us = statistics.median(cell.times_ns) / 1000
        peer_rows.append(
            PeerRow(
                label=e2e_label(mix.label, steps, "fast"),
                size=mix.label,
                steps=steps,
                calls=calls,
                median_us=median_us,
                p99_us=p99(cell.times_ns) / 1000,
                conflicts=cell.conflicts,
                quoted_ratio=median_us / (e2e.ORIGINAL_MS[mix.label] * 1000),
                ours_median_us=ours_us,
                ours_miss_median_us=ours_miss_us,
                ratio=median_us / ours_us,
                miss_ratio=median_us / ours_miss_us if ours_miss_us else None,
                same_allowed=_same_allowed(mix, traces, cell.outcomes),
                budget_hit=cell.budget_hit,
            )
        )
    return PeerReport(peer_rows, None, peer_beeai.peer_version())


def _same_allowed(mix: e2e.Mix, traces: Sequence[e2e.Trace], outcomes: Sequence[Any]) -> int:
    """How many of BeeAI's answers match ours on the allowed tools and on stopping."""
    reasoner = e2e.mix_reasoner(mix)
    same = 0
    for trace, theirs in zip(traces, outcomes, strict=False):
        try:
            p = reasoner.decide(RunState(steps=e2e.to_steps(trace)))
        except ConflictError:
            same += theirs.allowed is None
            continue
        if theirs.allowed is not None:
            same += set(p.allowed) == set(theirs.allowed) and p.can_stop == theirs.can_stop
    return same


# -- report -------------------------------------------------------------------------------------

_COLUMNS = (
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


def format_table(rows: Sequence[Row]) -> str:
    """The aggregation table, one row per line, columns as in ``_COLUMNS``."""
    return _format(
        _COLUMNS,
        [
            (
                row.label,
                f"{row.median_us:.1f}",
                f"{row.p99_us:.1f}",
                _ratio(row.ratio),
                row.target or "—",
                _met(row.met),
                "—" if row.checks_per_decision is None else f"{row.checks_per_decision:.2f}",
                f"{row.per_second:,.0f}",
                row.note,
            )
            for row in rows
        ],
    )


_E2E_COLUMNS = (
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
    """The end-to-end table, columns as in ``_E2E_COLUMNS``."""
    return _format(
        _E2E_COLUMNS,
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
                _met(row.met),
            )
            for row in rows
        ],
    )


_PEER_COLUMNS = (
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
    """The peer table, columns as in ``_PEER_COLUMNS``."""
    return _format(
        _PEER_COLUMNS,
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


def _format(columns: Sequence[tuple[str, int, str]], rows: Iterable[Sequence[str]]) -> str:
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


def _met(met: bool | None) -> str:
    return {True: "yes", False: "no", None: "—"}[met]


def _ratio(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


@dataclass(frozen=True, slots=True)
class Report:
    rows: list[Row]
    checks: dict[str, CrossCheck]
    paths: dict[str, PathCheck]
    """Fast path against solver path: per aggregation size, and per end-to-end size."""
    e2e_rows: list[E2ERow]
    peer: PeerReport
    meta: dict[str, Any]

    @property
    def failed(self) -> bool:
        """Whether some cross-check or path check found a disagreement."""
        return any(c.mismatches for c in self.checks.values()) or any(
            c.mismatches for c in self.paths.values()
        )


def run(config: Config, *, peer: bool = True, log: Callable[[str], None] = print) -> Report:
    """Measure both tables, check strict mode against the reference and the fast path against
    the solver path, and (with ``peer``, if installed) run BeeAI on the end-to-end workload."""
    started = time.perf_counter()
    load = os.getloadavg()[0]
    rows: list[Row] = []
    checks: dict[str, CrossCheck] = {}
    for tools, rules in SIZES:
        log(f"measuring {tools} tools / {rules} rules …")
        rows.extend(measure_size(tools, rules, config))
        workload = make_workload(tools, rules)
        plain = draw_sets(workload, config.decisions[workload.label], seed=1)
        clashes = conflict_sets(workload, config.conflicts[workload.label], seed=1)
        checks[workload.label] = cross_check(workload, [*plain, *clashes])
    log("checking the fast path against the solver path …")
    paths = aggregation_path_check(config)
    log("measuring end-to-end steps …")
    steps_workload = make_e2e_workload(config)
    e2e_rows = measure_e2e(steps_workload, config)
    for size, mix in steps_workload.mixes.items():
        cap = PATH_CHECK_CAP // len(e2e.STEP_COUNTS)
        states = [s for n in e2e.STEP_COUNTS for s in steps_workload.states(size, n)[:cap]]
        paths[f"{size} end-to-end"] = e2e_path_check(mix, states)
    skipped = "peer run skipped: --no-peer"
    peer_report = (
        run_peer(steps_workload, config, log=log) if peer else PeerReport([], skipped, None)
    )
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
        "original_ms_quoted": e2e.ORIGINAL_MS,
        "beeai_framework": peer_report.version,
        "seconds": round(time.perf_counter() - started, 1),
        "cpus": os.cpu_count(),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    return Report(rows, checks, paths, e2e_rows, peer_report, meta)


def print_report(report: Report) -> None:
    meta = report.meta
    print()
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
    print(format_table(report.rows))
    print()
    for size, check in report.checks.items():
        verdict = "agree" if not check.mismatches else f"{len(check.mismatches)} MISMATCHES"
        print(
            f"cross-check {size}: strict mode and reference {verdict} on {check.compared} sets "
            f"({check.forced} forced, {check.ties} forced ties, {check.conflicts} conflicts, "
            f"{check.hidden} with hidden tools, {check.no_stop} with can_stop false)"
        )
        for line in check.mismatches[:3]:
            print(f"  {line}")
    _print_path_checks({k: v for k, v in report.paths.items() if "end-to-end" not in k})
    print()
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
    print(format_e2e_table(report.e2e_rows))
    print()
    _print_path_checks({k: v for k, v in report.paths.items() if "end-to-end" in k})
    print()
    peer = report.peer
    if peer.skipped is not None:
        print(peer.skipped)
    else:
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
    print()
    print(
        f"total {meta['seconds']} s; 1-minute load average {meta['load_before']} before, "
        f"{meta['load_after']} after, on {meta['cpus']} CPUs (above ~0.5 before means contention)"
    )


def _print_path_checks(paths: dict[str, PathCheck]) -> None:
    for size, check in paths.items():
        verdict = "agree" if not check.mismatches else f"{len(check.mismatches)} MISMATCHES"
        print(
            f"paths {size}: fast path and solver path {verdict} on {check.compared} inputs "
            f"({check.conflicts} conflicts with equal cores, {check.forced} forced, "
            f"{check.hidden} with hidden tools, {check.no_stop} with can_stop false; "
            f"solver checks: {check.fast_checks} fast, {check.solver_checks} solver)"
        )
        for line in check.mismatches[:3]:
            print(f"  {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny counts: a smoke test")
    parser.add_argument(
        "--no-peer", action="store_true", help="skip the BeeAI peer run even if installed"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    report = run(Config.quick() if args.quick else Config.full(), peer=not args.no_peer)
    print_report(report)
    if args.json:
        payload = {
            "meta": report.meta,
            "rows": [asdict(row) for row in report.rows],
            "cross_check": {size: asdict(c) for size, c in report.checks.items()},
            "path_check": {size: asdict(c) for size, c in report.paths.items()},
            "end_to_end": [asdict(row) for row in report.e2e_rows],
            "peer": {
                "skipped": report.peer.skipped,
                "version": report.peer.version,
                "rows": [asdict(row) for row in report.peer.rows],
            },
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2, ensure_ascii=False)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
