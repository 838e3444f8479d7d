"""What one run reads of its agent: the agent's configuration, with the run's own options.

``run(prompt, expected_output=..., instructions=..., deps=...)`` changes these for that run
only: ``RunView`` is the agent as the run sees it (``RunConfig``, ``agent/context.py``). A run
with a typed answer of its own has its own ``final_answer`` tool (the model's fields), and a
gate that knows it; a run with its own instructions or expected output has its own system
prompt (rendered once per set of visible tools, as the agent's is). Everything else — the
model, the other tools, the reasoner, the memory, the listeners — is the agent's.

The same checks serve the constructor and the runs: ``answer_of`` (``expected_output``) and
``instructions_of``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel

from agent.context import OnConflict
from agent.gate import Gate
from agent.memory import Memory
from agent.templates import Templates
from agent.tools import FinalAnswerTool, Tool
from backends import ChatModel
from ruleengine import Pass, PolicyError, Reasoner, validate

__all__ = ["Configured", "RunView", "answer_of", "instructions_of", "render_system"]


class Configured(Protocol):
    """What the system prompt is rendered from: an agent, or a run's view of it."""

    name: str
    role: str | None
    instructions: tuple[str, ...]
    tools: tuple[Tool, ...]
    final_tool: FinalAnswerTool
    expected_output_text: str | None
    final_answer_as_tool: bool
    templates: Templates


def render_system(config: Configured, visible: Sequence[str]) -> str:
    """The system prompt of ``config`` for these visible tools."""
    schema = None
    if config.final_tool.expected_output is not None and not config.final_answer_as_tool:
        schema = json.dumps(config.final_tool.definition.parameters, separators=(",", ":"))
    return config.templates.render_system(
        name=config.name,
        role=config.role,
        instructions=config.instructions,
        tools=[t for t in config.tools if t.name in visible],
        final_answer_as_tool=config.final_answer_as_tool,
        answer_schema=schema,
        expected_output=config.expected_output_text,
    )


def answer_of(
    value: object, *, owner: str | None = None
) -> tuple[type[BaseModel] | None, str | None]:
    """``expected_output`` as ``(model, text)``: ``str`` or ``None`` is a text answer
    (``(None, None)``), a pydantic model class a typed one (``(model, None)``), and a text
    describes a text answer (``(None, text)``, said in the system prompt)."""
    if value is None or value is str:
        return None, None
    if isinstance(value, type) and issubclass(value, BaseModel):
        return value, None
    if isinstance(value, str):
        if not value.strip():
            raise PolicyError(
                _owned(owner, "expected_output is an empty text"),
                hint="describe the answer in words, or pass `str` for any text",
                parameter="expected_output",
            )
        return None, value
    raise PolicyError(
        _owned(
            owner,
            f"expected_output=`{value!r:.60}` must be `str`, a pydantic model class, a text"
            " describing the answer, or None",
        ),
        parameter="expected_output",
    )


def instructions_of(value: object, *, owner: str | None = None) -> tuple[str, ...]:
    """``instructions`` as a tuple of lines: a text (one instruction) or a list of them."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    items = validate.sequence(value, name="instructions", owner=owner)
    for item in items:
        validate.text(item, name="an instruction", owner=owner)
    return tuple(items)


class _Agent(Configured, Protocol):
    """What a run's view reads of its agent (``RequirementAgent``)."""

    description: str | None
    llm: ChatModel
    reasoner: Reasoner
    gate: Gate
    memory: Memory | None
    expected_output: type[BaseModel] | None
    save_intermediate_steps: bool
    on_conflict: OnConflict

    def system_prompt(self, visible: Sequence[str]) -> str: ...

    def final_answer_tool(self, model: type[BaseModel] | None) -> FinalAnswerTool: ...


class RunView:
    """The agent as one run sees it: its configuration, with the run's ``expected_output``
    and ``instructions`` (``None``: the agent's), and the run's ``deps``."""

    def __init__(
        self,
        agent: _Agent,
        *,
        owner: str,
        expected_output: object = None,
        instructions: object = None,
        deps: Any = None,
    ) -> None:
        self._agent = agent
        self.name = agent.name
        self.description = agent.description
        self.llm = agent.llm
        self.reasoner = agent.reasoner
        self.memory = agent.memory
        self.role = agent.role
        self.templates = agent.templates
        self.final_answer_as_tool = agent.final_answer_as_tool
        self.save_intermediate_steps = agent.save_intermediate_steps
        self.on_conflict = agent.on_conflict
        self.deps = deps
        """What the run's tools receive in their ``RunContext``."""
        model, text = agent.expected_output, agent.expected_output_text
        if expected_output is not None:
            model, text = answer_of(expected_output, owner=owner)
        self.expected_output = model
        self.expected_output_text = text
        self.instructions = (
            agent.instructions
            if instructions is None
            else instructions_of(instructions, owner=owner)
        )
        self.final_tool = agent.final_tool
        self.tools = agent.tools
        self.gate = agent.gate
        if model is not agent.expected_output:
            self.final_tool = agent.final_answer_tool(model)
            self.tools = (*agent.tools[:-1], self.final_tool)
            self.gate = Gate({t.name: t for t in self.tools}, agent.gate.cycle_guard)
        self._own_prompt = (model, text, self.instructions) != (
            agent.expected_output,
            agent.expected_output_text,
            agent.instructions,
        )
        self._prompts: dict[tuple[str, ...], str] = {}

    def system_prompt(self, visible: Sequence[str]) -> str:
        """The run's system prompt for these visible tools (the agent's, unless the run has
        its own instructions or expected output)."""
        if not self._own_prompt:
            return self._agent.system_prompt(visible)
        key = tuple(visible)
        found = self._prompts.get(key)
        if found is None:
            found = self._prompts[key] = render_system(self, key)
        return found

    def step_note(self, pass_: Pass, offered: Sequence[str]) -> str:
        """The note before a model round."""
        return self.templates.render_step(
            pass_, offered, final_answer_as_tool=self.final_answer_as_tool
        )


def _owned(owner: str | None, message: str) -> str:
    return f"{owner}: {message}" if owner else message
