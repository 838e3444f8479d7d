"""Bounded search over concrete histories, for policies with requirements the engines cannot
abstract (no monitor): every trace up to a depth, decided by ``Reasoner.decide`` running the
requirements themselves. What it finds is real; what it does not find is not proved, so its
analyses are always incomplete.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from ruleengine.check.analysis import Analysis, Witness
from ruleengine.check.progress import note as note_progress
from ruleengine.check.system import Event
from ruleengine.check.trace import emit_state
from ruleengine.conditions.admission import ArgCheck
from ruleengine.conditions.evaluate import Undefined
from ruleengine.errors import ConflictError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Mode, Pass
from ruleengine.reasoner import Reasoner
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES, RunState, Step

__all__ = ["ConcreteSystem", "analyse_concrete"]


class ConcreteSystem:
    """A policy as the concrete search sees it: just its reasoner."""

    components: tuple[()] = ()

    def __init__(self, tools: Sequence[object], requirements: Sequence[object], mode: Mode):
        self.reasoner = Reasoner(tools, requirements, mode=mode)  # type: ignore[arg-type]
        self.tools = self.reasoner.tools
        self.mode: Mode = mode
        self.requirements = tuple(r for r in self.reasoner.requirements if r.enabled)

    def subsystem(self, keep: Sequence[str]) -> ConcreteSystem:
        """The same policy with only the requirements named in ``keep``."""
        return ConcreteSystem(
            self.tools, [r for r in self.requirements if r.name in keep], self.mode
        )


def analyse_concrete(
    reasoner: Reasoner,
    *,
    depth: int,
    max_states: int | None,
    deadline: float | None,
) -> Analysis:
    """Every history of at most ``depth`` steps, breadth-first (shortest witnesses first)."""
    result = Analysis(complete=False)
    queue: deque[tuple[tuple[Event, ...], bool]] = deque([((), False)])
    seen = 0
    guessed = False
    limit = max_states if max_states is not None else 100_000
    while queue:
        trace, uncertain = queue.popleft()
        seen += 1
        if seen % 64 == 0:
            note_progress(states=seen, engine="concrete")
        if deadline is not None and seen % 64 == 0 and time.monotonic() > deadline:
            result.reason = f"the time limit ran out after {seen} histories"
            break
        state = RunState(steps=tuple(Step(tool=t, status=s) for t, s in trace))
        records, dropped = _without_values(tuple(emit_state(reasoner, state)))
        # A condition reading a value a history of tool names does not hold (an output, an
        # argument, the input) is left out: the tool counts as admissible (the search goes on
        # as if it were), and nothing found from here on is reported, as it could hinge on
        # the value.
        uncertain = uncertain or dropped
        guessed = guessed or dropped
        outcome = _decide(reasoner, records)
        if isinstance(outcome, ConflictError):
            if not uncertain:
                _conflict(result, trace, records, outcome)
            continue
        result.allowed_tools.update(outcome.allowed)
        if outcome.can_stop and result.finish_depth is None and not uncertain:
            result.finish_depth = len(trace)
        if result.tie is None and outcome.forced_tie is not None and not uncertain:
            result.tie = Witness(trace, records)
        if len(trace) >= depth:
            continue
        for tool in outcome.allowed:
            if tool == FINAL_ANSWER:
                continue
            for status in STATUSES:
                if seen + len(queue) >= limit:
                    result.reason = f"the history limit ({limit}) was reached"
                    break
                queue.append(((*trace, (tool, status)), uncertain))
        if result.reason is not None:
            break
    result.states = seen
    if guessed:
        result.reason = (
            (result.reason + "; " if result.reason else "")
            + "conditions that read tool outputs, arguments or the input were not decided"
            " (a history of tool names does not hold them): nothing that could depend on"
            " them is reported"
        )
    if result.reason is None:
        result.reason = (
            f"requirements without a monitor were checked on histories of at most {depth} steps"
        )
        result.depth_done = depth
    else:
        result.depth_done = len(trace) - 1 if queue else depth
    return result


def _without_values(records: tuple[Emitted, ...]) -> tuple[tuple[Emitted, ...], bool]:
    """``records`` without the checks whose run values a history of names cannot hold, and
    whether there were any."""
    kept = tuple(
        e
        for e in records
        if not (
            type(e.item) is ArgCheck
            and isinstance(e.item.residual, Undefined)
            and not e.item.residual.no_call
        )
    )
    return kept, len(kept) != len(records)


def _decide(reasoner: Reasoner, records: Sequence[Emitted]) -> Pass | ConflictError:
    try:
        return reasoner.resolve(records)
    except ConflictError as exc:
        # Kept as a value: drop the traceback, whose frames would tie the caller's locals
        # (BDD nodes and their manager among them) into a reference cycle.
        return exc.with_traceback(None)


def _conflict(
    result: Analysis, trace: tuple[Event, ...], records: tuple[Emitted, ...], exc: ConflictError
) -> None:
    if exc.kind == "deadlock":
        if result.deadlock is None:
            result.deadlock = Witness(trace, records)
        return
    for tool in exc.forced:
        result.forced_conflicts.setdefault(tool, Witness(trace, records))
