"""Table 3's adapter: the end-to-end workload through BeeAI's own ``RequirementsReasoner``.

Imported by ``peer.py``, inside ``run_peer``, only when a peer run happens; it needs
beeai-framework (``pip install -e '.[peer]'``), and nothing else imports it. It rebuilds, in
BeeAI's terms, exactly what the end-to-end rows decide:

* the same tools: one ``Tool`` subclass instance per declared name (input ``{"query": str}``),
  plus BeeAI's ``FinalAnswerTool``;
* the same requirements: BeeAI's ``ConditionalRequirement`` with the very same parameter dicts
  (``_mixes.Mix.specs``);
* the same histories: one ``RequirementAgentRunStateStep`` per trace step, with the tool
  instance, the input and a ``StringToolOutput``. An ``error`` step carries a ``ToolError``.
  BeeAI has no ``denied`` status: its permission requirement answers a refused call with the
  output "This tool is not allowed to be used." and no error, so BeeAI would count it as a
  successful call. Here a ``denied`` step carries that output *and* a ``ToolError``, so that
  BeeAI skips it when counting, as our engine does (SPEC §5, ``only_success_invocations``).

The reasoner is created as BeeAI's agent runner creates it: inside a ``RunContext`` (entered
for a small host object, as ``RequirementAgent.run`` enters one for the agent), with
``update(requirements)`` run once. Each timed call is ``await reasoner.create_request(state,
force_tool_call=False)`` on a fresh ``RequirementAgentRunState``, which runs every requirement
and aggregates their rules. A call that raises (BeeAI's ``RequirementError`` when a
``force_at_step`` tool may not run, ``AgentError`` when no tool is left) counts as a conflict.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from beeai_framework.agents.requirement.requirements.conditional import ConditionalRequirement
from beeai_framework.agents.requirement.types import (
    RequirementAgentRunState,
    RequirementAgentRunStateStep,
)
from beeai_framework.agents.requirement.utils._llm import RequirementsReasoner
from beeai_framework.agents.requirement.utils._tool import FinalAnswerTool
from beeai_framework.backend import UserMessage
from beeai_framework.context import RunContext
from beeai_framework.emitter import Emitter
from beeai_framework.errors import FrameworkError
from beeai_framework.memory import UnconstrainedMemory
from beeai_framework.tools import StringToolOutput, Tool, ToolError, ToolRunOptions
from pydantic import BaseModel, Field

from benchmarks._mixes import Mix, Trace

__all__ = ["PeerCell", "PeerOutcome", "peer_version", "run_peer"]

DENIED_OUTPUT = "This tool is not allowed to be used."
"""What BeeAI's ``AskPermissionRequirement`` answers for a refused call."""


class _QueryInput(BaseModel):
    query: str = Field(description="What to look up.")


class BenchTool(Tool[_QueryInput, ToolRunOptions, StringToolOutput]):
    """A tool with a name and a one-string input; it is never run here."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return f"Benchmark tool {self._name}."

    @property
    def input_schema(self) -> type[_QueryInput]:
        return _QueryInput

    def _create_emitter(self) -> Emitter:
        return Emitter.root().child(namespace=["tool", "bench", self._name], creator=self)

    async def _run(
        self, input: _QueryInput, options: ToolRunOptions | None, context: RunContext
    ) -> StringToolOutput:
        return StringToolOutput(f"result of {self._name}")


class _Host:
    """The run-context owner (BeeAI's ``RunInstance``: anything with an emitter)."""

    def __init__(self) -> None:
        self.emitter = Emitter.root().child(namespace=["agent", "bench"], creator=self)


@dataclass(frozen=True, slots=True)
class PeerOutcome:
    """What BeeAI decided for one state: allowed tool names and stopping, or a conflict."""

    allowed: tuple[str, ...] | None
    """``None`` when the call raised (a conflict)."""
    can_stop: bool | None


@dataclass(frozen=True, slots=True)
class PeerCell:
    """One (mix, length) cell: nanoseconds per call and what each call decided."""

    size: str
    steps: int
    times_ns: list[int]
    outcomes: list[PeerOutcome]
    conflicts: int
    budget_hit: bool
    """Whether the time budget stopped the cell before every state was decided."""


def peer_version() -> str:
    from importlib.metadata import version

    return version("beeai-framework")


def run_peer(
    cells: Sequence[tuple[Mix, int, Sequence[Trace]]],
    *,
    max_calls: int,
    seconds: float,
    warm: int,
) -> list[PeerCell]:
    """Decide each cell's traces through BeeAI, at most ``max_calls`` or ``seconds`` per cell.

    ``cells`` holds ``(mix, length, traces)``: a ``Mix``, the history length and its traces.
    The first ``warm`` traces of a cell are decided once, untimed.
    """

    async def body(ctx: RunContext) -> list[PeerCell]:
        return [
            await _cell(ctx, mix, length, traces, max_calls=max_calls, seconds=seconds, warm=warm)
            for mix, length, traces in cells
        ]

    async def main() -> list[PeerCell]:
        result: list[PeerCell] = await RunContext.enter(_Host(), body)
        return result

    return asyncio.run(main())


async def _cell(
    ctx: RunContext,
    mix: Mix,
    length: int,
    traces: Sequence[Trace],
    *,
    max_calls: int,
    seconds: float,
    warm: int,
) -> PeerCell:
    tools = {name: BenchTool(name) for name in mix.tools[:-1]}
    holder = await _state(())
    reasoner = RequirementsReasoner(
        tools=list(tools.values()),
        final_answer=FinalAnswerTool(None, state=holder),
        context=ctx,
    )
    await reasoner.update([ConditionalRequirement(**spec) for spec in mix.specs])
    histories = [_steps(trace, tools) for trace in traces[:max_calls]]
    for steps in histories[:warm]:
        await _decide(reasoner, await _state(steps))
    clock = time.perf_counter_ns
    times: list[int] = []
    outcomes: list[PeerOutcome] = []
    conflicts = 0
    deadline = time.perf_counter() + seconds
    budget_hit = False
    gc.collect()
    for steps in histories:
        if time.perf_counter() > deadline:
            budget_hit = True
            break
        state = await _state(steps)  # fresh per call, built before the clock starts
        start = clock()
        try:
            request = await reasoner.create_request(state, force_tool_call=False)
        except FrameworkError:
            elapsed = clock() - start
            conflicts += 1
            outcomes.append(PeerOutcome(None, None))
        else:
            elapsed = clock() - start
            names = tuple(t.name for t in request.allowed_tools)
            outcomes.append(PeerOutcome(names, request.can_stop))
        times.append(elapsed)
    return PeerCell(mix.label, length, times, outcomes, conflicts, budget_hit)


async def _decide(reasoner: RequirementsReasoner, state: RequirementAgentRunState) -> None:
    with contextlib.suppress(FrameworkError):
        await reasoner.create_request(state, force_tool_call=False)


def _steps(trace: Trace, tools: dict[str, BenchTool]) -> tuple[Any, ...]:
    steps = []
    for i, s in enumerate(trace):
        if s.status == "ok":
            output, error = StringToolOutput(s.output or ""), None
        elif s.status == "error":
            output, error = StringToolOutput(""), ToolError(s.error or "the tool raised")
        else:  # denied: counted like a failed call (see the module's docstring)
            output, error = StringToolOutput(DENIED_OUTPUT), ToolError(s.error or "denied")
        steps.append(
            RequirementAgentRunStateStep(
                id=f"step-{i + 1}",
                iteration=i + 1,
                tool=tools[s.tool],
                input=dict(s.arguments),
                output=output,
                error=error,
            )
        )
    return tuple(steps)


async def _state(steps: Sequence[Any]) -> RequirementAgentRunState:
    memory = UnconstrainedMemory()
    await memory.add(UserMessage("Answer the question with the tools."))
    return RequirementAgentRunState(
        answer=None,
        result=None,
        memory=memory,
        iteration=len(steps) + 1,
        steps=list(steps),
    )
