"""What a run is given and gives back: the agent it runs, its budgets, the call a nested run
sits in, its output.

``RunnableAgent`` is what a run (``loop.py``) and a handoff (``handoff.py``) read of their
agent. ``RequirementAgent`` (``runner.py``) is that agent, and it builds both, so they name it
by this protocol instead of importing it back.

``CURRENT`` is set while a tool runs; a run started inside that tool (a handoff) reads it and
nests under the call: its events carry the outer path and reach the outer listeners.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from agent.events import RunEvents
from agent.gate import Gate
from agent.memory import Memory
from agent.tools import FinalAnswerTool, Tool
from backends import ChatModel, Message, Usage
from ruleengine import ConflictError, Pass, Reasoner, RunState, Step

__all__ = [
    "CURRENT",
    "AgentConfig",
    "AgentOutput",
    "Frame",
    "Limits",
    "OnConflict",
    "RunConfig",
    "RunnableAgent",
]

OutputT = TypeVar("OutputT")

OnConflict = Literal["raise", "answer"]
"""What a run does when the requirements conflict."""


@dataclass(frozen=True, slots=True)
class AgentOutput(Generic[OutputT]):
    """What a run gives back."""

    answer: OutputT
    """The final answer: text, or the ``expected_output`` model."""
    steps: tuple[Step, ...]
    """Every step, oldest first: each call that ran (``ok`` or ``error``) or whose permission
    was refused (``denied``). Calls the gate or a listener refused are not steps."""
    passes: tuple[Pass, ...]
    """The pass each step was admitted under: ``passes[i]`` is the pass of the run state just
    before ``steps[i]``."""
    usage: Usage
    """Tokens used by every model call of the run."""
    messages: tuple[Message, ...]
    """The conversation: system prompt, memory, prompt, replies, tool results, step notes."""
    iterations: int
    """How many model rounds the run took."""
    retries: int
    """How many replies could not be used and were asked again."""
    run_id: str
    """The run's id, as its events carry it."""
    conflict: ConflictError | None = None
    """The conflict the run ended on, when the agent answers conflicts
    (``on_conflict="answer"``): the answer then says why the run could not go on."""

    @property
    def state(self) -> RunState:
        """The run state at the end (the steps, as requirements read them)."""
        return RunState(steps=self.steps, iteration=self.iterations)


@dataclass(frozen=True, slots=True)
class Limits:
    """A run's budgets, checked once."""

    max_iterations: int
    max_retries_per_step: int
    total_max_retries: int


@dataclass(frozen=True, slots=True)
class Frame:
    """The run and tool call a tool is executing in (read by runs nested in it)."""

    events: RunEvents
    run_id: str
    path: tuple[str, ...]
    call_id: str
    thread: int = field(default_factory=threading.get_ident)
    """The thread of the run's event loop: a run in another thread (a sync tool starting its
    own event loop) cannot share the outer run's task group, so it does not nest."""


class AgentConfig(Protocol):
    """The configuration a run reads of its agent (``RequirementAgent`` documents each)."""

    name: str
    llm: ChatModel
    tools: tuple[Tool, ...]
    final_tool: FinalAnswerTool
    reasoner: Reasoner
    gate: Gate
    memory: Memory | None
    expected_output: type[BaseModel] | None
    final_answer_as_tool: bool
    save_intermediate_steps: bool
    on_conflict: OnConflict

    def system_prompt(self, visible: Sequence[str]) -> str:
        """The system prompt for these visible tools."""
        ...


class RunnableAgent(AgentConfig, Protocol):
    """What a handoff and telemetry read of an agent: its configuration, its description and
    ``run``."""

    description: str | None

    async def run(
        self,
        prompt: str,
        *,
        max_iterations: int = ...,
        max_retries_per_step: int = ...,
        total_max_retries: int = ...,
    ) -> AgentOutput[Any]:
        """Run the agent on ``prompt`` until ``final_answer`` runs."""
        ...


class RunConfig(AgentConfig, Protocol):
    """What one run reads of its agent: the agent's configuration with the run's own
    options applied (``expected_output``, ``instructions``, ``deps``; ``agent/per_run.py``)."""

    deps: Any

    def step_note(self, pass_: Pass, offered: Sequence[str]) -> str:
        """The note before a model round, for ``pass_`` with these tools offered."""
        ...


CURRENT: ContextVar[Frame | None] = ContextVar("agent_current_call", default=None)
"""Set while a tool runs: a run started inside it (a handoff) nests under that call."""
