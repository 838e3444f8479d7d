"""``bench``: what a policy costs per step at run time, measured on random walks.

Each walk starts from the empty run and, at every step, times ``Reasoner.decide`` on the run
so far (the requirements run on a real ``RunState``, as in an agent), then calls a random
allowed tool (never ``final_answer``) with a random status: ``ok`` mostly, ``error`` or
``denied`` sometimes, as the checker's steps may. A walk ends at the step limit, when only
``final_answer`` is allowed, or at a conflict. One reasoner serves every walk, as one serves
every run of a deployed agent, so its cache warms up as it would in production.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ruleengine import _validate
from ruleengine.errors import ConflictError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.reasoner import Reasoner
from ruleengine.state import RunState, Status, Step

__all__ = ["MAX_STEPS", "MAX_WALKS", "STATUS_WEIGHTS", "BenchResult", "bench"]

MAX_WALKS = 100_000
"""The most walks one bench takes (more measures nothing new, and never ends)."""
MAX_STEPS = 10_000
"""The most steps of one walk (a run state is read whole at every step: a longer walk costs
quadratic time, and no agent runs that long)."""

STATUS_WEIGHTS: dict[Status, int] = {"ok": 8, "error": 1, "denied": 1}
"""How often a walk's call ends each way (out of 10)."""


class Benched(Protocol):
    """What ``bench`` reads of a policy (``ruleengine.Policy`` has it)."""

    @property
    def source(self) -> str: ...

    @property
    def max_iterations(self) -> int: ...

    def reasoner(self, **options: Any) -> Reasoner: ...


@dataclass(frozen=True, slots=True)
class BenchResult:
    """The cost of a policy's decisions on random walks."""

    policy: str
    """Where the policy came from."""
    walks: int
    """How many walks ran."""
    steps: int
    """The most steps a walk takes."""
    seed: int
    """The seed of the walks (the same seed gives the same walks)."""
    decisions: int
    """How many decisions were timed (one per state a walk reached)."""
    p50_us: float
    """Median decision time, in microseconds."""
    p99_us: float
    """99th percentile decision time, in microseconds."""
    max_us: float
    """The slowest decision, in microseconds."""
    first_us: float
    """The first decision of the fresh reasoner (cold cache), in microseconds."""
    cache_hit_rate: float
    """The share of decisions answered from the reasoner's pass cache (0 to 1)."""
    solver_checks_per_decision: float
    """Z3 checks per decision, on average (the fast path and the cache make none)."""
    ended: dict[str, int]
    """How walks ended: ``steps`` (the step limit), ``finish`` (only ``final_answer`` was
    allowed) and ``conflict`` (a state had no pass)."""

    def as_json(self) -> dict[str, Any]:
        """The result as a JSON object."""
        return asdict(self)


def bench(
    policy: Benched, *, walks: int = 100, steps: int | None = None, seed: int = 0
) -> BenchResult:
    """Time ``policy``'s decisions on ``walks`` random walks of at most ``steps`` steps each
    (default: the policy's ``max_iterations``), drawn from ``seed``."""
    walks = _validate.integer(walks, name="walks", least=1, most=MAX_WALKS)
    if steps is None:
        steps = min(policy.max_iterations, MAX_STEPS)
    steps = _validate.integer(steps, name="steps", most=MAX_STEPS)
    _validate.integer(seed, name="seed", least=-sys.maxsize)
    reasoner = policy.reasoner()
    rng = random.Random(seed)
    times: list[int] = []
    ended = {"steps": 0, "finish": 0, "conflict": 0}
    for _ in range(walks):
        ended[_walk(reasoner, rng, steps, times)] += 1
    decided = reasoner.hits + reasoner.misses
    ordered = sorted(times)
    return BenchResult(
        policy=policy.source,
        walks=walks,
        steps=steps,
        seed=seed,
        decisions=len(times),
        p50_us=_percentile(ordered, 50),
        p99_us=_percentile(ordered, 99),
        max_us=round(ordered[-1] / 1000, 1),
        first_us=round(times[0] / 1000, 1),
        cache_hit_rate=round(reasoner.hits / decided, 4) if decided else 0.0,
        solver_checks_per_decision=round(reasoner.solver_checks / len(times), 4),
        ended=ended,
    )


def _walk(reasoner: Reasoner, rng: random.Random, steps: int, times: list[int]) -> str:
    """One walk; appends each decision's time (ns) to ``times``; says how the walk ended."""
    statuses = list(STATUS_WEIGHTS)
    weights = list(STATUS_WEIGHTS.values())
    history: list[Step] = []
    for _ in range(steps + 1):
        state = RunState(steps=tuple(history))
        started = time.perf_counter_ns()
        try:
            decided = reasoner.decide(state)
        except ConflictError:
            times.append(time.perf_counter_ns() - started)
            return "conflict"
        times.append(time.perf_counter_ns() - started)
        if len(history) == steps:
            return "steps"
        callable_ = [t for t in decided.allowed if t != FINAL_ANSWER]
        if not callable_:
            return "finish"
        status = rng.choices(statuses, weights)[0]
        history.append(Step(tool=rng.choice(callable_), status=status))
    raise AssertionError("a walk ends within its steps")  # pragma: no cover


def _percentile(ordered: Sequence[int], percent: int) -> float:
    """The nearest-rank percentile of sorted nanoseconds, in microseconds."""
    rank = max(1, -(-len(ordered) * percent // 100))
    return round(ordered[rank - 1] / 1000, 1)
