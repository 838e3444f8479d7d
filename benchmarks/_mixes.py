"""The run states of tables 2 and 3: ``ConditionalRequirement`` mixes and random histories.

A ``Mix`` is a deterministic set of conditional requirements over a tool list, described as
plain parameter dicts (``Mix.specs``), so that the peer run (``peer_beeai.py``) builds BeeAI's
requirements from the very same parameters (``make_mix``). A ``Trace`` is a random history of
a given length, in terms both engines can rebuild their steps from (``draw_traces``,
``to_steps``). Nothing here imports beeai-framework.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from benchmarks._workloads import PRIORITIES
from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    ConflictError,
    PolicyError,
    Reasoner,
    RunState,
    Step,
)
from ruleengine.state import Status

__all__ = [
    "E2E_SIZES",
    "STEP_COUNTS",
    "Mix",
    "Trace",
    "TraceStep",
    "build_requirements",
    "draw_traces",
    "make_mix",
    "mix_reasoner",
    "to_steps",
]

E2E_SIZES: tuple[tuple[int, int], ...] = ((10, 20), (50, 100))
"""(tools, requirements); the tool count includes ``final_answer``."""

STEP_COUNTS: tuple[int, ...] = (0, 10, 50)
"""The lengths of the run states decided."""

STATUSES: tuple[Status, ...] = ("ok", "error", "denied")
STATUS_WEIGHTS = (85, 10, 5)
"""Most calls succeed; some raise, a few are refused by a human or the gate."""

_REASONS = ("search first", "budget spent", "needs approval", "already done", "one at a time")
MAX_CONFLICT_RATE = 0.02
"""A mix is kept only when at most this share of probe states conflicts (else a new draw)."""


class TraceStep(NamedTuple):
    """One recorded tool call, in terms both engines can rebuild their step from."""

    tool: str
    status: Status
    arguments: dict[str, Any]
    output: str | None
    """What the tool returned (``ok`` steps only)."""
    error: str | None
    """Why the call failed or was refused (``error`` and ``denied`` steps)."""


Trace = tuple[TraceStep, ...]


@dataclass(frozen=True, slots=True)
class Mix:
    """Declared tools (``final_answer`` last) and the parameters of each requirement."""

    tools: tuple[str, ...]
    specs: tuple[dict[str, Any], ...]
    """Keyword arguments of ``ConditionalRequirement``, ``target`` included."""
    attempt: int
    """How many draws were rejected (too many conflicts) before this one."""

    @property
    def label(self) -> str:
        """The size as the tables write it: *tools*/*requirements*."""
        return f"{len(self.tools)}/{len(self.specs)}"

    @property
    def hard_forces(self) -> int:
        """How many requirements force their tool at a fixed step (``force_at_step``)."""
        return sum("force_at_step" in spec for spec in self.specs)


def build_requirements(mix: Mix) -> list[ConditionalRequirement]:
    """The engine's requirements of ``mix``."""
    return [ConditionalRequirement(**spec) for spec in mix.specs]


def mix_reasoner(mix: Mix, *, fast_path: bool = True, cache_size: int = 4096) -> Reasoner:
    """A fresh reasoner over ``mix``'s tools and requirements."""
    return Reasoner(mix.tools, build_requirements(mix), fast_path=fast_path, cache_size=cache_size)


def make_mix(tools: int, requirements: int, *, seed: int) -> Mix:
    """A deterministic, valid mix in which conflicts are rare.

    Draws are repeated (with a new seed) until, at every length of ``STEP_COUNTS``, at most
    ``MAX_CONFLICT_RATE`` of a probe set of states conflict (none of the empty state).
    """
    names = (*(f"tool_{i:03d}" for i in range(tools - 1)), FINAL_ANSWER)
    for attempt in range(50):
        rng = random.Random(f"{seed}:mix:{tools}:{requirements}:{attempt}")
        mix = Mix(names, tuple(_specs(rng, names, requirements)), attempt)
        if _conflict_rate(mix, seed=seed) <= MAX_CONFLICT_RATE:
            return mix
    raise AssertionError(f"no mix of {tools}/{requirements} with rare conflicts in 50 draws")


def _specs(rng: random.Random, tools: tuple[str, ...], count: int) -> list[dict[str, Any]]:
    """``count`` requirement parameter sets: a few hard forces, the rest a random mix.

    A hard-forced tool (``force_at_step``; at step 1 with ``consecutive_allowed=False``, as in
    "think first, never twice in a row") is the target of no other requirement, and no two
    hard forces share a step, so a hard force is always honoured; conflicts come from steps
    that leave no tool allowed.
    """
    callable_tools = list(tools[:-1])
    forces = 2 if count <= 20 else 4
    forced_tools = rng.sample(callable_tools, forces)
    steps = _force_steps(rng, forces)
    specs: list[dict[str, Any]] = []
    for i, (tool, step) in enumerate(zip(forced_tools, steps, strict=True)):
        spec: dict[str, Any] = {"target": tool, "force_at_step": step}
        if step == 1:
            spec["consecutive_allowed"] = False  # "think first, never twice in a row"
        if rng.random() < 0.5:
            spec["force_prevent_stop"] = False
        specs.append(_named(spec, i, rng))
    free = [t for t in callable_tools if t not in forced_tools]
    for i in range(forces, count):
        specs.append(_named(_conditional_spec(rng, free, callable_tools), i, rng))
    rng.shuffle(specs)
    return specs


def _force_steps(rng: random.Random, count: int) -> list[int]:
    """Distinct steps: always step 1 ("think first"), then one in each later band."""
    bands = [(1, 1), (6, 10), (2, 5), (38, 46)][:count]
    return [rng.randint(low, high) for low, high in bands]


def _named(spec: dict[str, Any], i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"req-{i:03d}-{spec['target']}",
        "priority": rng.choice(PRIORITIES),
        **spec,
    }


def _conditional_spec(
    rng: random.Random, targets: Sequence[str], tools: Sequence[str]
) -> dict[str, Any]:
    """One valid set of parameters with at least one restriction (drawn again until valid)."""
    for _ in range(100):
        target = rng.choice(targets)
        others = [t for t in tools if t != target]
        spec: dict[str, Any] = {"target": target}
        if rng.random() < 0.30:
            spec["only_after"] = rng.sample(others, rng.choice((1, 1, 2)))
        if rng.random() < 0.15:
            spec["only_before"] = rng.sample(_not_in(others, spec, "only_after"), 1)
        if rng.random() < 0.35:
            spec["max_invocations"] = rng.randint(1, 6)
        if rng.random() < 0.10:
            spec["min_invocations"] = rng.randint(1, min(2, spec.get("max_invocations", 2)))
        if rng.random() < 0.15:
            spec["force_after"] = rng.sample(_not_in(others, spec, "only_before"), 1)
        if rng.random() < 0.20:
            spec["consecutive_allowed"] = False
        if rng.random() < 0.30:
            spec["reason"] = rng.choice(_REASONS)
        if len(spec.keys() - {"target", "reason"}) == 0:
            continue  # a requirement that restricts nothing
        try:
            ConditionalRequirement(**spec)
        except PolicyError:
            continue
        return spec
    raise AssertionError("no valid conditional parameters in 100 draws")


def _not_in(tools: list[str], spec: dict[str, Any], key: str) -> list[str]:
    taken = set(spec.get(key, ()))
    return [t for t in tools if t not in taken]


def draw_traces(mix: Mix, length: int, count: int, *, seed: int | str) -> list[Trace]:
    """``count`` random histories of ``length`` calls of random tools (never final_answer).

    Statuses are drawn with ``STATUS_WEIGHTS``; every call has arguments, successful ones an
    output, the others an error text.
    """
    rng = random.Random(f"trace:{seed}:{mix.label}:{length}")
    callable_tools = mix.tools[:-1]
    traces: list[Trace] = []
    for _ in range(count):
        steps: list[TraceStep] = []
        for _ in range(length):
            tool = rng.choice(callable_tools)
            status = rng.choices(STATUSES, weights=STATUS_WEIGHTS)[0]
            arguments = {"query": f"q{rng.randrange(1000)}"}
            if status == "ok":
                steps.append(TraceStep(tool, status, arguments, f"result of {tool}", None))
            elif status == "error":
                steps.append(TraceStep(tool, status, arguments, None, "TimeoutError: no reply"))
            else:
                steps.append(TraceStep(tool, status, arguments, None, "refused by the user"))
        traces.append(tuple(steps))
    return traces


def to_steps(trace: Trace) -> tuple[Step, ...]:
    """The engine's ``Step`` records of a trace."""
    return tuple(
        Step(tool=s.tool, arguments=s.arguments, output=s.output, status=s.status, error=s.error)
        for s in trace
    )


def _conflict_rate(mix: Mix, *, seed: int) -> float:
    """The largest share of conflicting probe states over the lengths of ``STEP_COUNTS``."""
    reasoner = mix_reasoner(mix)
    worst = 0.0
    for length in STEP_COUNTS:
        traces = draw_traces(mix, length, 1 if length == 0 else 300, seed=f"probe:{seed}")
        conflicts = 0
        for trace in traces:
            try:
                reasoner.decide(RunState(steps=to_steps(trace)))
            except ConflictError:
                conflicts += 1
        worst = max(worst, conflicts / len(traces))
    return worst
