"""Worst cases: how long a pathological step takes to fail closed, and a big explanation.

Table 4 times single operations that are not on the per-step hot path but must stay bounded:

* a hard step (an NP-hard independent-set instance the solver cannot settle: tools in
  conflict pairs ``allowed(a) ⇒ ¬allowed(b)`` and ``at_least(k, …)``), under the default
  budgets and under a tight ``timeout_ms``: it must fail closed with ``SolverError`` within the
  documented bound (``timeout_ms``, default 10 s);
* the pigeonhole step (at most 11 and at least 12 of 24 tools) that Z3's cardinality
  extension used to search for ~30 s;
* a large satisfiable step with formulas (500 tools, 1,000 ``implies``, one ``at_least(250,
  …)``), and the first read of its pass's explanation, which must cost at most a few
  decisions.

Each row runs in a fresh reasoner (nothing cached), a few rounds; the fastest round is
reported. Run it alone with ``python -m benchmarks.latency [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks._report import Column, format_table
from ruleengine import (
    ConflictError,
    Expr,
    Reasoner,
    SolverError,
    allowed,
    at_least,
    at_most,
    implies,
    requirement,
)
from ruleengine.requirements import Requirement

__all__ = ["LatencyRow", "format_latency_table", "main", "measure_latency"]

SEED = 0


@dataclass(frozen=True, slots=True)
class LatencyRow:
    """One worst case: what it is, how long it took, what it answered, against which bound."""

    case: str
    seconds: float
    outcome: str
    checks: int
    bound: str
    met: bool | None


def _one_each(items: Sequence[Expr]) -> list[Requirement]:
    """One requirement per item (so the explanation has one record per requirement)."""
    return [requirement(name=f"r{i:04d}")(lambda state, it=it: [it]) for i, it in enumerate(items)]


def independent_set(n: int, edges: int, k: int) -> tuple[list[str], list[Expr]]:
    """``n`` tools, ``edges`` random conflict pairs, and at least ``k`` tools allowed."""
    rng = random.Random(SEED)
    tools = [f"t{i}" for i in range(n)]
    items: list[Expr] = [
        implies(allowed(a), ~allowed(b)) for a, b in (rng.sample(tools, 2) for _ in range(edges))
    ]
    items.append(at_least(k, *map(allowed, tools)))
    return tools, items


def implications(n: int, edges: int, k: int) -> tuple[list[str], list[Expr]]:
    """A large satisfiable step: ``allowed(a) ⇒ allowed(b)`` pairs and at least ``k`` allowed."""
    rng = random.Random(SEED)
    tools = [f"t{i}" for i in range(n)]
    items: list[Expr] = [
        implies(allowed(a), allowed(b)) for a, b in (rng.sample(tools, 2) for _ in range(edges))
    ]
    items.append(at_least(k, *map(allowed, tools)))
    return tools, items


def _timed(build: Callable[[], Reasoner], rounds: int) -> tuple[float, str, int]:
    """The fastest of ``rounds`` decisions of the empty run, each in a fresh reasoner."""
    best: tuple[float, str, int] | None = None
    for _ in range(rounds):
        reasoner = build()
        start = time.perf_counter()
        try:
            reasoner.decide()
            outcome = "pass"
        except ConflictError as e:
            outcome = f"ConflictError ({e.kind})"
        except SolverError as e:
            outcome = (
                "SolverError (" + ("timeout_ms" if "timeout_ms" in e.message else "rlimit") + ")"
            )
        seconds = time.perf_counter() - start
        if best is None or seconds < best[0]:
            best = (seconds, outcome, reasoner.solver_checks)
    assert best is not None
    return best


def measure_latency(*, quick: bool = False) -> list[LatencyRow]:
    """Every row of table 4 (``quick``: one round each, a smaller big step, and no hard step
    under the default budgets, which takes seconds by design)."""
    rounds = 1 if quick else 3
    rows: list[LatencyRow] = []

    tools, items = independent_set(100, 200, 50)
    reqs = _one_each(items)
    if not quick:  # seconds by design: too slow for a smoke test
        seconds, outcome, checks = _timed(lambda: Reasoner(tools, reqs), rounds)
        rows.append(
            LatencyRow(
                "hard step, defaults (100 tools, 200 conflicts, at_least 50)",
                seconds,
                outcome,
                checks,
                "fails closed ≤ 10 s",
                outcome.startswith("SolverError") and seconds <= 10,
            )
        )
    seconds, outcome, checks = _timed(
        lambda: Reasoner(tools, reqs, rlimit=2**32 - 1, timeout_ms=200), rounds
    )
    rows.append(
        LatencyRow(
            "hard step, timeout_ms=200, no rlimit to speak of",
            seconds,
            outcome,
            checks,
            "fails closed ≤ 0.25 s",
            outcome.startswith("SolverError") and seconds <= 0.25,
        )
    )

    pigeon_tools = [f"t{i}" for i in range(24)]
    pigeon = _one_each(
        [at_most(11, *map(allowed, pigeon_tools)), at_least(12, *map(allowed, pigeon_tools))]
    )
    seconds, outcome, checks = _timed(lambda: Reasoner(pigeon_tools, pigeon), rounds)
    rows.append(
        LatencyRow(
            "pigeonhole (at most 11 and at least 12 of 24)", seconds, outcome, checks, "—", None
        )
    )

    n, edges, k = (200, 400, 100) if quick else (500, 1000, 250)
    big_tools, big_items = implications(n, edges, k)
    big = _one_each(big_items)
    decision, outcome, checks = _timed(lambda: Reasoner(big_tools, big), rounds)
    rows.append(
        LatencyRow(
            f"big step ({n} tools, {edges} implies, at_least {k}): decision",
            decision,
            outcome,
            checks,
            "—",
            None,
        )
    )
    explained = []
    for _ in range(rounds):
        p = Reasoner(big_tools, big).decide()
        start = time.perf_counter()
        p.explanation  # noqa: B018  (reading it is what is timed)
        explained.append(time.perf_counter() - start)
    seconds = min(explained)
    rows.append(
        LatencyRow(
            f"big step: first read of the explanation ({len(big)} requirements)",
            seconds,
            f"{seconds / decision:.2f}× the decision",
            0,
            "≤ 5× the decision",
            seconds <= 5 * decision,
        )
    )
    return rows


def format_latency_table(rows: Sequence[LatencyRow]) -> str:
    """Table 4 as aligned text."""
    width = max(len(r.case) for r in rows)
    outcome_width = max(len(r.outcome) for r in rows)
    bound_width = max(len(r.bound) for r in rows)
    columns: list[Column] = [
        ("case", width, "<"),
        ("seconds", 9, ">"),
        ("outcome", outcome_width, "<"),
        ("checks", 6, ">"),
        ("bound", bound_width, "<"),
        ("met?", 4, "<"),
    ]
    met = {True: "yes", False: "no", None: "—"}
    return format_table(
        columns,
        ((r.case, f"{r.seconds:.3f}", r.outcome, str(r.checks), r.bound, met[r.met]) for r in rows),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print table 4."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one round each, a smaller step")
    args = parser.parse_args(argv)
    print(format_latency_table(measure_latency(quick=args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
