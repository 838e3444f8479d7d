"""Replaying a checker trace through the runtime: static and dynamic semantics are one.

``replay`` decides every prefix of a trace with ``Reasoner.decide`` (the requirements run
on real run states); ``confirm`` says whether a finding's trace, replayed, reaches that
finding: every step was allowed when it was taken, and the last state shows the finding.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import anyio

from ruleengine.check.report import Finding, TraceStep
from ruleengine.errors import ConflictError
from ruleengine.passes import Pass
from ruleengine.reasoner import Reasoner
from ruleengine.rules import Emitted
from ruleengine.state import RunState, Step

__all__ = ["confirm", "emit_state", "replay"]


def _is_async(reasoner: Reasoner) -> bool:
    return any(
        getattr(r, "is_async", False) or inspect.iscoroutinefunction(getattr(r, "run", None))
        for r in reasoner.requirements
    )


def emit_state(reasoner: Reasoner, state: RunState) -> list[Emitted]:
    """What the requirements emit on ``state``, awaiting async ones when there are some."""
    if _is_async(reasoner):
        return anyio.run(reasoner.aemit, state)
    return reasoner.emit(state)


def replay(reasoner: Reasoner, trace: Sequence[TraceStep]) -> list[Pass | ConflictError]:
    """The decision before each step of ``trace``, then after its last step."""
    outcomes: list[Pass | ConflictError] = []
    for n in range(len(trace) + 1):
        state = RunState(steps=tuple(Step(tool=s.tool, status=s.status) for s in trace[:n]))
        try:
            outcomes.append(reasoner.resolve(emit_state(reasoner, state), step=n + 1))
        except ConflictError as exc:
            outcomes.append(exc.with_traceback(None))  # a value now: no frames kept alive
    return outcomes


def confirm(reasoner: Reasoner, finding: Finding) -> str | None:
    """Why ``finding``'s trace does not replay to it, or ``None`` when it does."""
    outcomes = replay(reasoner, finding.trace)
    for n, step in enumerate(finding.trace):
        before = outcomes[n]
        if isinstance(before, ConflictError):
            return f"step {n + 1}: the state before it conflicts ({before.kind})"
        if step.tool not in before.allowed or step.tool == "final_answer":
            return f"step {n + 1}: `{step.tool}` is not allowed then ({before.allowed})"
    last = outcomes[-1]
    match finding.id:
        case "deadlock":
            if not (isinstance(last, ConflictError) and last.kind == "deadlock"):
                return f"the last state does not deadlock: {_show(last)}"
        case "forced-conflict":
            if not (isinstance(last, ConflictError) and finding.tool in last.forced):
                return f"the last state is no forced-conflict on `{finding.tool}`: {_show(last)}"
        case "forced-tie":
            if not (isinstance(last, Pass) and last.forced_tie is not None):
                return f"the last state has no forced tie: {_show(last)}"
        case "no-finish":
            if isinstance(last, ConflictError):
                return "the last state conflicts (a no-finish state must not)"
        case _:
            if finding.trace:
                return f"a `{finding.id}` finding has no trace"
    return None


def _show(outcome: Pass | ConflictError) -> str:
    if isinstance(outcome, ConflictError):
        return f"conflict ({outcome.kind}, forced {outcome.forced})"
    return f"pass (allowed {outcome.allowed}, forced {outcome.forced})"
