"""Replaying a checker trace through the runtime: static and dynamic semantics are one.

``replay`` decides every prefix of a trace with ``Reasoner.decide`` (the requirements run
on real run states); ``confirm`` says whether a finding's trace, replayed, reaches that
finding: every step was allowed when it was taken, and the last state shows the finding.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import anyio

from ruleengine import _validate
from ruleengine.check.report import Finding, TraceStep
from ruleengine.errors import ConflictError, PolicyError
from ruleengine.passes import Pass
from ruleengine.reasoner import Reasoner
from ruleengine.rules import Emitted
from ruleengine.state import RunState, TraceEntry

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


def replay(
    reasoner: Reasoner, trace: Sequence[TraceStep | TraceEntry]
) -> list[Pass | ConflictError]:
    """The decision before each step of ``trace``, then after its last step. The steps are
    ``TraceStep``s (a finding's trace), tool names (status ``ok``) or ``(name, status)``
    pairs, as ``RunState.from_trace`` takes them."""
    _reasoner(reasoner, "replay")
    if isinstance(trace, str):
        raise PolicyError(
            f"replay: trace=`{trace!r}` is one string, not a list of steps",
            hint=f"pass a list: `[{trace!r}]`",
        )
    entries = [
        (s.tool, s.status) if isinstance(s, TraceStep) else s
        for s in _validate.sequence(trace, name="trace")
    ]
    steps = RunState.from_trace(entries).steps
    outcomes: list[Pass | ConflictError] = []
    for n in range(len(steps) + 1):
        state = RunState(steps=steps[:n])
        try:
            outcomes.append(reasoner.resolve(emit_state(reasoner, state), step=n + 1))
        except ConflictError as exc:
            outcomes.append(exc.with_traceback(None))  # a value now: no frames kept alive
    return outcomes


def confirm(reasoner: Reasoner, finding: Finding) -> str | None:
    """Why ``finding``'s trace does not replay to it, or ``None`` when it does."""
    _reasoner(reasoner, "confirm")
    if not isinstance(finding, Finding):
        raise PolicyError(
            f"confirm: expected a `Finding` (from a report's `findings`), got "
            f"`{type(finding).__name__}`"
        )
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


def _reasoner(reasoner: object, where: str) -> None:
    if not isinstance(reasoner, Reasoner):
        raise PolicyError(
            f"{where}: expected a `Reasoner`, got `{type(reasoner).__name__}`",
            hint="a policy's is `policy.reasoner()`",
        )


def _show(outcome: Pass | ConflictError) -> str:
    if isinstance(outcome, ConflictError):
        return f"conflict ({outcome.kind}, forced {outcome.forced})"
    return f"pass (allowed {outcome.allowed}, forced {outcome.forced})"
