"""``RequirementAgent``: an LLM agent whose every step obeys the pass (SPEC §6).

The agent object is configuration: the model, the tools (``final_answer`` last), one
``Reasoner`` over the requirements, the gate, the emitter and its listeners. It holds no run
state, so one agent serves any number of concurrent runs; each ``run`` builds a ``RunLoop``
(``agent/loop.py``) that owns that run's state and walks the phases decide → render →
request → gate → execute → record.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

import anyio
from pydantic import BaseModel

from agent.context import CURRENT, AgentOutput, Limits, OnConflict
from agent.events import Emitter, RunEvents
from agent.gate import Gate
from agent.handoff import HandoffTool
from agent.loop import RunLoop
from agent.memory import Memory
from agent.per_run import RunView, answer_of, instructions_of, render_system
from agent.permission import PermissionListener
from agent.stream import RunStream, Sink, streaming
from agent.templates import Templates
from agent.tools import FinalAnswerTool, Tool, tool
from backends import ChatModel, ToolDefinition
from ruleengine import (
    FINAL_ANSWER,
    ArgumentsRequirement,
    AskPermissionRequirement,
    CycleGuard,
    Policy,
    PolicyError,
    Reasoner,
    Requirement,
    validate,
)
from ruleengine.conditions.types import ParamType
from ruleengine.passes import Mode
from ruleengine.requirements import parameters_of

__all__ = ["AgentOutput", "RequirementAgent"]

OutputT = TypeVar("OutputT")
ModelT = TypeVar("ModelT", bound=BaseModel)

DEFAULT_MAX_ITERATIONS = 20
"""A run's budget of model rounds when neither ``run`` nor the agent's policy says."""


class RequirementAgent(Generic[OutputT]):
    """An agent whose tool calls are decided by requirements and checked by a gate.

    ``llm`` is a chat model (``backends``); ``tools`` are ``Tool`` objects (plain functions
    are made tools with ``@tool``); ``requirements`` are ruleengine requirements. The
    ``final_answer`` tool is added last; its input is ``{"response": str}``, or the fields of
    ``expected_output`` when it is a pydantic model (then ``run`` answers that model).

    ``tool_call_checker``: ``True`` (a default ``CycleGuard``), ``False``, or a ``CycleGuard``
    with your thresholds; a ``CycleGuard`` among the requirements is used instead.
    ``final_answer_as_tool=False`` lets the model answer in plain text instead of calling
    ``final_answer``. ``on_conflict``: when the requirements contradict each other in some
    state, ``"raise"`` ends the run with the ``ConflictError``; ``"answer"`` lets the model
    call nothing but ``final_answer``, told why it cannot go on (``AgentOutput.conflict``).
    ``memory`` carries the conversation from run to run; ``save_intermediate_steps`` also
    saves tool calls and results into it.
    """

    @overload
    def __init__(
        self: RequirementAgent[str],
        llm: ChatModel,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        requirements: Sequence[Requirement] = (),
        *,
        instructions: str | Sequence[str] | None = None,
        role: str | None = None,
        expected_output: type[str] | str | None = None,
        memory: Memory | None = None,
        tool_call_checker: bool | CycleGuard = True,
        final_answer_as_tool: bool = True,
        save_intermediate_steps: bool = True,
        name: str = "agent",
        description: str | None = None,
        mode: Mode = "strict",
        on_conflict: OnConflict = "raise",
        templates: Templates | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: RequirementAgent[ModelT],
        llm: ChatModel,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        requirements: Sequence[Requirement] = (),
        *,
        instructions: str | Sequence[str] | None = None,
        role: str | None = None,
        expected_output: type[ModelT],
        memory: Memory | None = None,
        tool_call_checker: bool | CycleGuard = True,
        final_answer_as_tool: bool = True,
        save_intermediate_steps: bool = True,
        name: str = "agent",
        description: str | None = None,
        mode: Mode = "strict",
        on_conflict: OnConflict = "raise",
        templates: Templates | None = None,
    ) -> None: ...

    def __init__(
        self,
        llm: ChatModel,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        requirements: Sequence[Requirement] = (),
        *,
        instructions: str | Sequence[str] | None = None,
        role: str | None = None,
        expected_output: type[Any] | str | None = None,
        memory: Memory | None = None,
        tool_call_checker: bool | CycleGuard = True,
        final_answer_as_tool: bool = True,
        save_intermediate_steps: bool = True,
        name: str = "agent",
        description: str | None = None,
        mode: Mode = "strict",
        on_conflict: OnConflict = "raise",
        templates: Templates | None = None,
    ) -> None:
        if not isinstance(llm, ChatModel):
            raise PolicyError(
                f"llm=`{llm!r:.60}` is not a chat model",
                hint="pass a `backends.OpenAIChatModel` or `backends.ScriptedChatModel`",
                parameter="llm",
            )
        self.llm = llm
        """The chat model."""
        self.name = validate.text(name, name="name", owner="agent")
        """The agent's name: its events' path, its default name as a tool."""
        self.description = validate.optional_text(description, name="description")
        """What the agent does (its description as a tool)."""
        self.role = validate.optional_text(role, name="role")
        """Who the model is, the system prompt's first line (a default when ``None``)."""
        self.instructions = instructions_of(instructions)
        """The instructions listed in the system prompt."""
        self.expected_output: type[BaseModel] | None
        """The model of a typed answer, or ``None`` for text."""
        self.expected_output_text: str | None
        """The answer described in words (``expected_output`` given as a text), or ``None``."""
        self.expected_output, self.expected_output_text = answer_of(expected_output)
        if templates is not None and not isinstance(templates, Templates):
            raise PolicyError(
                f"templates=`{templates!r:.60}` is not a `Templates`",
                hint="pass `agent.Templates(system=..., step=...)`",
                parameter="templates",
            )
        self.templates: Templates = templates or Templates()
        """The text of the system prompt and the step notes (the built-in text by default)."""
        self.final_answer_as_tool = validate.flag(final_answer_as_tool, name="final_answer_as_tool")
        """Whether the model finishes by calling ``final_answer`` (else with plain text)."""
        self.save_intermediate_steps = validate.flag(
            save_intermediate_steps, name="save_intermediate_steps"
        )
        """Whether ``memory`` also keeps tool calls and results."""
        if on_conflict not in ("raise", "answer"):
            raise PolicyError(
                f"on_conflict=`{on_conflict!r:.60}` must be `raise` or `answer`",
                parameter="on_conflict",
            )
        self.on_conflict: OnConflict = on_conflict
        """What a run does when the requirements conflict: ``"raise"`` the ``ConflictError``,
        or ``"answer"``: the model gives a final answer from the conflict's explanation."""
        self.max_iterations: int = DEFAULT_MAX_ITERATIONS
        """The model rounds a run may take when ``run`` is not told (``from_policy``: the
        policy's ``max_iterations``)."""
        self.policy: Policy | None = None
        """The policy the agent runs, when it was made by ``from_policy``."""
        if memory is not None and not isinstance(memory, Memory):
            raise PolicyError(f"memory=`{memory!r:.60}` is not a `Memory`", parameter="memory")
        self.memory = memory
        """The conversation carried from run to run, if any."""
        self._final_tools: dict[type[BaseModel] | None, FinalAnswerTool] = {}
        self.final_tool = self.final_answer_tool(self.expected_output)
        """The ``final_answer`` tool."""
        self.tools: tuple[Tool, ...] = (*_tools(tools), self.final_tool)
        """Every tool, in declared order, ``final_answer`` last."""
        reqs = _requirements(requirements)
        guard = _cycle_guard(tool_call_checker, reqs)
        if guard is not None:
            # Bound to the declared tools: a tool that is not declared is not the guard's to
            # deny (the gate refuses its calls anyway).
            bound = guard.bind(self.tools)
            reqs = [r for r in reqs if r is not guard] + [bound]
            guard = bound
        self.reasoner = Reasoner(
            self.tools, reqs, mode=mode, final_answer_as_tool=self.final_answer_as_tool
        )
        """Decides each step's pass (one per agent; it serialises its solver)."""
        self.gate = Gate({t.name: t for t in self.tools}, guard)
        """Checks every call against the pass before it runs."""
        self.emitter = _emitter(self.reasoner)
        """Where listeners attach: ``agent.emitter.on("tool.start", ...)``."""
        self._prompts: dict[tuple[str, ...], str] = {}

    def __repr__(self) -> str:
        names = [t.name for t in self.tools]
        return f"RequirementAgent(name={self.name!r}, tools={names!r})"

    @classmethod
    def from_policy(
        cls,
        policy: Policy | str | os.PathLike[str],
        tools: Sequence[Tool | Callable[..., Any]],
        llm: ChatModel,
        **options: Any,
    ) -> RequirementAgent[Any]:
        """An agent that runs exactly ``policy``: its tools, requirements, mode and budget.

        ``policy`` is a ``Policy``, a policy file's path, or ``module:attr`` (``Policy.load``
        reads them). ``tools`` implement the policy's tools, one each, in any order: the agent
        declares them in the policy's order. A policy tool left out, or a tool the policy does
        not declare, is a ``PolicyError`` naming them. A tool's own description is the one the
        model reads; a tool without one takes the policy's. The policy's ``max_iterations``
        becomes the agent's, the default budget of ``run``.

        ``options`` are the constructor's other keyword arguments (``name``, ``memory``,
        ``on_conflict``, …); ``mode`` is the policy's. ``tool_call_checker`` defaults to
        ``False``: the agent adds no cycle guard the policy does not declare.
        """
        loaded = _load_policy(policy)
        given = _policy_options(options, loaded)
        declared = _policy_tools(loaded, tools)
        agent: RequirementAgent[Any] = cls(
            llm, declared, list(loaded.requirements), mode=loaded.mode, **given
        )
        agent.max_iterations = loaded.max_iterations
        agent.policy = loaded
        return agent

    # -- running ----------------------------------------------------------------------------

    @overload
    async def run(
        self,
        prompt: str,
        *,
        expected_output: None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[OutputT]: ...

    @overload
    async def run(
        self,
        prompt: str,
        *,
        expected_output: type[ModelT],
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[ModelT]: ...

    @overload
    async def run(
        self,
        prompt: str,
        *,
        expected_output: type[str] | str,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[str]: ...

    async def run(
        self,
        prompt: str,
        *,
        expected_output: type[Any] | str | None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[Any]:
        """Run the agent on ``prompt`` until ``final_answer`` runs.

        ``expected_output`` and ``instructions`` replace the agent's for this run only
        (``None``: the agent's): ``expected_output`` is ``str``, a pydantic model (the answer
        is then that model), or a text describing the answer. ``deps`` is handed to the tools
        that take a ``RunContext`` (``context.deps``).

        ``max_iterations`` bounds the model rounds that reach the gate (``MaxIterationsError``
        past it; ``None``: the agent's ``max_iterations``, 20 unless its policy says another);
        ``max_retries_per_step`` and ``total_max_retries`` bound the replies that could not be
        used and were asked again (``RetryLimitError``). A ``ConflictError``
        (the requirements contradict each other) ends the run as it is, with its core, unless
        the agent answers conflicts (``on_conflict="answer"``).
        """
        limits = self._limits(
            "run", prompt, max_iterations, max_retries_per_step, total_max_retries
        )
        view = RunView(
            self,
            owner="run",
            expected_output=expected_output,
            instructions=instructions,
            deps=deps,
        )
        return await self._run(prompt, limits, view)

    @overload
    def run_stream(
        self,
        prompt: str,
        *,
        expected_output: None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> RunStream[OutputT]: ...

    @overload
    def run_stream(
        self,
        prompt: str,
        *,
        expected_output: type[ModelT],
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> RunStream[ModelT]: ...

    @overload
    def run_stream(
        self,
        prompt: str,
        *,
        expected_output: type[str] | str,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> RunStream[str]: ...

    def run_stream(
        self,
        prompt: str,
        *,
        expected_output: type[Any] | str | None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> RunStream[Any]:
        """``run``, streamed: ``async with agent.run_stream(prompt) as stream: async for item
        in stream: ...``.

        The same run as ``run`` (the same options, checks and errors, the same gate and
        events); the items are its events, as a listener of every kind registered last hears
        them, and the final answer's text as the model writes it (``AnswerDelta``, taken back
        by ``AnswerDiscarded`` when a reply turns out not to be the answer). The stream ends
        with the ``run.finish`` event, then raises what ``run`` would raise; ``stream.output``
        is the ``AgentOutput``. Leaving the block early cancels the run (see docs/agent.md).
        """
        limits = self._limits(
            "run_stream", prompt, max_iterations, max_retries_per_step, total_max_retries
        )
        view = RunView(
            self,
            owner="run_stream",
            expected_output=expected_output,
            instructions=instructions,
            deps=deps,
        )
        return RunStream(lambda sink: self._run(prompt, limits, view, sink))

    def _limits(
        self,
        owner: str,
        prompt: object,
        max_iterations: object,
        max_retries_per_step: object,
        total_max_retries: object,
    ) -> Limits:
        """The options of ``run`` and ``run_stream``, checked (``owner`` names the method)."""
        validate.text(prompt, name="prompt", owner=owner)
        return Limits(
            validate.integer(
                self.max_iterations if max_iterations is None else max_iterations,
                name="max_iterations",
                owner=owner,
                least=1,
            ),
            validate.integer(max_retries_per_step, name="max_retries_per_step", owner=owner),
            validate.integer(total_max_retries, name="total_max_retries", owner=owner),
        )

    async def _run(
        self, prompt: str, limits: Limits, view: RunView, stream: Sink | None = None
    ) -> AgentOutput[Any]:
        """One run, for ``run`` and ``run_stream`` alike (``view``: the agent as the run sees
        it, with its own options; ``stream``: where a streamed run hands its items)."""
        parent = CURRENT.get()
        if parent is not None and parent.thread != threading.get_ident():
            parent = None  # another event loop: the run cannot nest in the outer one
        run_id = uuid.uuid4().hex[:12]
        path = (*parent.path, self.name) if parent is not None else (self.name,)
        output: AgentOutput[Any] | None = None
        failure: Exception | None = None
        async with anyio.create_task_group() as background:
            events = (
                parent.events.nested(self.emitter, background)
                if parent is not None
                else RunEvents(((self.emitter, 0),), background)
            )
            if stream is not None:
                events = streaming(events, stream)
            loop = RunLoop(
                view, prompt, limits, events, run_id=run_id, path=path, parent=parent, stream=stream
            )
            try:
                output = await loop.execute()
            except Exception as exc:  # raised after the background listeners finished
                failure = exc
        if failure is not None:
            raise failure
        assert output is not None
        return output

    @overload
    def run_sync(
        self,
        prompt: str,
        *,
        expected_output: None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[OutputT]: ...

    @overload
    def run_sync(
        self,
        prompt: str,
        *,
        expected_output: type[ModelT],
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[ModelT]: ...

    @overload
    def run_sync(
        self,
        prompt: str,
        *,
        expected_output: type[str] | str,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[str]: ...

    def run_sync(
        self,
        prompt: str,
        *,
        expected_output: type[Any] | str | None = None,
        instructions: str | Sequence[str] | None = None,
        deps: Any = None,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> AgentOutput[Any]:
        """``run`` from synchronous code (starts an event loop; not from inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise PolicyError(
                "run_sync was called inside a running event loop",
                hint="`await agent.run(...)` there instead",
            )

        async def main() -> AgentOutput[Any]:
            return await self.run(
                prompt,
                expected_output=expected_output,
                instructions=instructions,
                deps=deps,
                max_iterations=max_iterations,
                max_retries_per_step=max_retries_per_step,
                total_max_retries=total_max_retries,
            )

        return anyio.run(main)

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        max_iterations: int | None = None,
        max_retries_per_step: int = 3,
        total_max_retries: int = 20,
    ) -> HandoffTool:
        """This agent as a tool of another: its input is a task, its output the answer.

        The outer agent's requirements decide when it may be called; this agent's own
        requirements govern its run; a failed run is an ``error`` step; its events nest under
        the outer step. ``max_iterations=None``: this agent's ``max_iterations``.
        """
        return HandoffTool(
            self,
            name=name,
            description=description,
            max_iterations=self.max_iterations if max_iterations is None else max_iterations,
            max_retries_per_step=max_retries_per_step,
            total_max_retries=total_max_retries,
        )

    def clone(self) -> RequirementAgent[OutputT]:
        """A new agent with this one's configuration, independent afterwards.

        The clone has the same model, tools, requirements, instructions, expected output,
        templates, budget and policy, and a reasoner, gate and emitter of its own; its
        memory is a new ``Memory`` holding a copy of this one's messages (``None`` stays
        ``None``). Listeners are not copied: the clone has only those the constructor adds
        (the permission listeners of its requirements); attach yours to it as to any new
        agent. The model and the tools are the same objects: they hold no run state.
        """
        twin = copy.copy(self)  # a subclass stays itself; its own attributes are shared
        twin.memory = self.memory.clone() if self.memory is not None else None
        twin.reasoner = Reasoner(
            self.tools,
            self.reasoner.requirements,
            mode=self.reasoner.mode,
            final_answer_as_tool=self.final_answer_as_tool,
        )
        twin.gate = Gate(self.gate.tools, self.gate.cycle_guard)
        twin.emitter = _emitter(twin.reasoner)
        twin._prompts = {}
        twin._final_tools = dict(self._final_tools)
        return twin

    # -- rendering (shared by runs: depends only on configuration) ---------------------------

    def system_prompt(self, visible: Sequence[str]) -> str:
        """The system prompt for these visible tools (the same text each time)."""
        key = tuple(visible)
        found = self._prompts.get(key)
        if found is None:
            found = self._prompts[key] = render_system(self, key)
        return found

    def final_answer_tool(self, model: type[BaseModel] | None) -> FinalAnswerTool:
        """The ``final_answer`` tool for answers of type ``model`` (``None``: text); one per
        model, made once."""
        found = self._final_tools.get(model)
        if found is None:
            found = self._final_tools[model] = FinalAnswerTool(model)
        return found


def _emitter(reasoner: Reasoner) -> Emitter:
    """A new emitter with the permission listeners of ``reasoner``'s requirements."""
    emitter = Emitter()
    for req in reasoner.requirements:
        if isinstance(req, AskPermissionRequirement) or (
            isinstance(req, ArgumentsRequirement) and req.asks
        ):
            emitter.on("tool.start", PermissionListener(req), blocking=True, nested=False)
    return emitter


def _tools(tools: object) -> tuple[Tool, ...]:
    items = validate.sequence(tools, name="tools")
    found: list[Tool] = []
    names: set[str] = set()
    for item in items:
        if not isinstance(item, Tool):
            if not callable(item) or isinstance(item, type):
                raise PolicyError(
                    f"tools holds `{item!r:.60}`, which is not a tool",
                    hint="pass `Tool` objects, or functions decorated with `@tool`",
                    parameter="tools",
                )
            item = tool(item)
        if item.name == FINAL_ANSWER:
            raise PolicyError(
                f"tools: `{FINAL_ANSWER}` is built in",
                hint="use `expected_output=` to shape the final answer",
                parameter="tools",
            )
        if item.name in names:
            raise PolicyError(f"tools: `{item.name}` is declared twice", parameter="tools")
        names.add(item.name)
        found.append(item)
    return tuple(found)


def _requirements(value: object) -> list[Requirement]:
    if isinstance(value, Requirement):
        return [value]
    items = validate.sequence(value, name="requirements")
    for item in items:
        if not isinstance(item, Requirement):
            raise PolicyError(
                f"requirements holds `{item!r:.60}`, which is not a requirement",
                hint="subclass `Requirement` or decorate a function with `@requirement`",
                parameter="requirements",
            )
    return list(items)


def _cycle_guard(checker: object, requirements: Sequence[Requirement]) -> CycleGuard | None:
    guards = [r for r in requirements if isinstance(r, CycleGuard)]
    if len(guards) > 1:
        raise PolicyError("requirements hold two cycle guards", hint="keep one `CycleGuard`")
    if isinstance(checker, CycleGuard):
        if guards and guards[0] is not checker:
            raise PolicyError(
                "tool_call_checker is a `CycleGuard` and the requirements hold another",
                hint="pass the guard once, either way",
                parameter="tool_call_checker",
            )
        return checker
    if checker is not True and checker is not False:
        raise PolicyError(
            f"tool_call_checker=`{checker!r:.60}` must be true, false or a `CycleGuard`",
            parameter="tool_call_checker",
        )
    if guards:
        return guards[0]
    return CycleGuard() if checker else None


# -- from_policy ------------------------------------------------------------------------------

_POLICY_HINT = (
    "give a `Policy`, a policy file's path (`.toml`, `.yaml`, `.json`), or `module:attr`"
    " naming a `Policy`"
)
_FROM_THE_POLICY = {
    "requirements": "add them to the policy, and check it again (`ruleengine check`)",
    "mode": "change the policy's `mode`, and check it again (`ruleengine check`)",
    "max_iterations": "change the policy's `max_iterations`, or give `run` a `max_iterations`",
}


def _load_policy(policy: object) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, str) and not policy.strip():
        raise PolicyError("from_policy: `policy` is empty", hint=_POLICY_HINT, parameter="policy")
    if not isinstance(policy, str | os.PathLike):
        raise PolicyError(
            f"from_policy: policy=`{policy!r:.60}` is not a policy",
            hint=_POLICY_HINT,
            parameter="policy",
        )
    return Policy.load(policy)


def _policy_options(options: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """The constructor's keyword arguments ``from_policy`` passes on, checked by name."""
    accepted = [
        name
        for name, parameter in inspect.signature(RequirementAgent.__init__).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY and name not in _FROM_THE_POLICY
    ]
    for name in options:
        if name in _FROM_THE_POLICY:
            raise PolicyError(
                f"from_policy: `{name}` {'come' if name == 'requirements' else 'comes'} from"
                f" the policy ({policy.source})",
                hint=_FROM_THE_POLICY[name],
                parameter=name,
            )
        if name not in accepted:
            raise PolicyError(
                f"from_policy: unknown option `{name}`",
                hint="options: " + ", ".join(f"`{n}`" for n in sorted(accepted)),
                parameter=name,
            )
    return {"tool_call_checker": False, **options}


def _policy_tools(policy: Policy, tools: object) -> list[Tool]:
    """``tools`` in the policy's order; a tool left out or not declared is a ``PolicyError``."""
    given = {t.name: t for t in _tools(tools)}
    missing = [name for name in policy.tools if name not in given]
    undeclared = [name for name in given if name not in policy.tools]
    if missing or undeclared:
        parts = []
        if missing:
            parts.append("missing: " + ", ".join(f"`{n}`" for n in missing))
        if undeclared:
            parts.append("undeclared: " + ", ".join(f"`{n}`" for n in undeclared))
        raise PolicyError(
            f"from_policy: the tools do not match the policy ({policy.source}): "
            + "; ".join(parts),
            hint="give one tool for each tool the policy declares ("
            + ", ".join(f"`{n}`" for n in policy.tools)
            + "), and no other",
            parameter="tools",
        )
    for name, params in policy.parameters.items():
        _same_parameters(name, params, given[name], policy.source)
    declared = []
    for name in policy.tools:
        item = given[name]
        description = policy.descriptions.get(name)
        if description and not item.description.strip():
            item = _described(item, description)
        declared.append(item)
    return declared


def _same_parameters(name: str, declared: Mapping[str, ParamType], item: Tool, source: str) -> None:
    """A ``PolicyError`` unless ``item`` takes every parameter the policy declares for it,
    of the declared type (its other parameters are its own business)."""
    own = parameters_of(item) or {}
    for param, kind in declared.items():
        found = own.get(param)
        if found is None:
            problem = f"takes no parameter `{param}`"
        elif found.kind != kind.kind or (kind.choices and found.choices != kind.choices):
            problem = f"takes `{param}` as {found}, where the policy declares {kind}"
        else:
            continue
        raise PolicyError(
            f"from_policy: tool `{name}` {problem} ({source})",
            hint="the policy's conditions are typed against the parameters it declares: "
            "make the tool's input model match them",
            parameter="tools",
        )


def _described(item: Tool, description: str) -> Tool:
    """A copy of ``item`` whose description (for the model) is ``description``."""
    described = copy.copy(item)
    described.description = description
    described.definition = ToolDefinition(item.name, description, item.input_model)
    return described
