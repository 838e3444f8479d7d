"""``RunLoop``: one run of a ``RequirementAgent``, phase by phase.

Each iteration (a model round):

1. **decide** — the pass for the run state so far (a ``ConflictError`` ends the run);
2. **render** — the request: the stable prefix (tool definitions, system prompt), the
   history, one step note, and ``tool_choice`` from the pass (``agent/prompt.py``);
3. **request** — the model call (a forced tool is obtained by the backend's forcing ladder);
4. **gate** — per returned call, in order, the gate against the pass recomputed for the state
   at that moment (batch admission), then the blocking ``tool.start`` listeners (permission);
5. **execute** — the admitted tool runs (an exception is an ``error`` step);
6. **record** — the step joins the state, the result joins the history as a tool message.

A reply with no call goes to the text rescue (``agent/rescue.py``): a ``final_answer`` call
when stopping is allowed, else a retry. The run ends when ``final_answer`` has run.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any, Literal

import anyio

from agent.context import CURRENT, AgentOutput, Frame, Limits
from agent.errors import MaxIterationsError, RetryLimitError
from agent.events import (
    ConflictEvent,
    Event,
    FinalAnswerEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    RetryEvent,
    RunEvents,
    RunFinishEvent,
    RunStartEvent,
    StepStartEvent,
    ToolDeniedEvent,
    ToolErrorEvent,
    ToolStartEvent,
    ToolSuccessEvent,
)
from agent.gate import Admitted, Refused
from agent.prompt import plan_tools, step_note
from agent.rescue import Rescued, Retry, call_a_tool, rescue
from agent.tools import render_output
from backends import (
    AnyToolCall,
    AssistantMessage,
    CapabilityError,
    ChatRequest,
    ChatResponse,
    Message,
    ResponseFormat,
    SystemMessage,
    ToolCall,
    ToolChoiceNone,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ruleengine import AgentError, ConflictError, Pass, RunState, Step

if TYPE_CHECKING:
    from agent.runner import RequirementAgent

__all__ = ["RunLoop"]

_Outcome = Literal["answered", "ran", "denied"]


class RunLoop:
    """The state of one run and its phases. Built by ``RequirementAgent.run``, used once."""

    def __init__(
        self,
        agent: RequirementAgent[Any],
        prompt: str,
        limits: Limits,
        events: RunEvents,
        *,
        run_id: str,
        path: tuple[str, ...],
        parent: Frame | None,
    ) -> None:
        self.agent = agent
        self.prompt = prompt
        self.limits = limits
        self.events = events
        self.run_id = run_id
        self.path = path
        self.parent = parent
        self.memory: tuple[Message, ...] = agent.memory.messages if agent.memory else ()
        self.history: list[Message] = [UserMessage(prompt)]
        self.notes: set[int] = set()  # positions in `history` of step notes and retry notes
        self.state = RunState(input=prompt)
        self.passes: list[Pass] = []
        self.usage = Usage()
        self.iteration = 0
        self.retries = 0
        self.answer: Any = None
        self.rescued = False
        self.last_request: ChatRequest | None = None

    # -- the run ------------------------------------------------------------------------------

    async def execute(self) -> AgentOutput[Any]:
        """Run to the answer; emit ``run.start`` and ``run.finish`` (also on failure)."""
        await self.emit(
            RunStartEvent(
                **self._where(),
                input=self.prompt,
                parent_run_id=self.parent.run_id if self.parent else None,
                parent_call_id=self.parent.call_id if self.parent else None,
            )
        )
        try:
            await self._loop()
        except Exception as exc:
            if isinstance(exc, ConflictError):
                await self._quietly(ConflictEvent(**self._where(), error=exc))
            await self._quietly(
                RunFinishEvent(
                    **self._where(),
                    answer=None,
                    steps=self.state.steps,
                    usage=self.usage,
                    error=exc,
                )
            )
            raise
        self._save_memory()
        await self.emit(
            RunFinishEvent(
                **self._where(), answer=self.answer, steps=self.state.steps, usage=self.usage
            )
        )
        return AgentOutput(
            answer=self.answer,
            steps=self.state.steps,
            passes=tuple(self.passes),
            usage=self.usage,
            messages=self._conversation(),
            iterations=self.iteration,
            retries=self.retries,
            run_id=self.run_id,
        )

    async def _loop(self) -> None:
        for iteration in range(1, self.limits.max_iterations + 1):
            self.iteration = iteration
            if await self._iterate():
                return
        steps = len(self.state.steps)
        raise MaxIterationsError(
            f"the run did not finish within max_iterations={self.limits.max_iterations}"
            f" model rounds ({steps} step{'' if steps == 1 else 's'})",
            max_iterations=self.limits.max_iterations,
            hint="raise `max_iterations`, or check that the requirements let the agent finish"
            " (`ruleengine check` finds `budget` and `no-finish` problems)",
        )

    async def _iterate(self) -> bool:
        """One model round; whether the run is over."""
        self.state = dataclasses.replace(self.state, iteration=self.iteration - 1)
        pass_ = await self._decide()
        await self.emit(StepStartEvent(**self._where(), pass_=pass_, state=self.state))
        self._note(pass_)
        retries_here = 0
        while True:
            response = await self._request(self._render(pass_), pass_)
            if isinstance(response, Retry):
                retries_here = await self._retry(response, retries_here, pass_, note=True)
                continue
            self.state = dataclasses.replace(self.state, iteration=self.iteration)
            if response.tool_calls:
                self.history.append(response.message)
                return await self._gate_batch(pass_, response.tool_calls)
            self.history.append(response.message)
            outcome = rescue(
                response, pass_, self.agent.final_tool, as_tool=self.agent.final_answer_as_tool
            )
            if isinstance(outcome, Rescued):
                refusal = await self._answer_rescued(pass_, outcome)
                if refusal is None:
                    return True
                outcome = refusal
            retries_here = await self._retry(outcome, retries_here, pass_, note=True)

    # -- decide, render, request --------------------------------------------------------------

    async def _decide(self) -> Pass:
        self.state = dataclasses.replace(self.state, memory=self._conversation())
        return await self.agent.reasoner.adecide(self.state)

    def _note(self, pass_: Pass, instruction: str | None = None) -> None:
        offered = [t.name for t in self._visible(pass_)]
        note = step_note(pass_, offered, final_answer_as_tool=self.agent.final_answer_as_tool)
        self.notes.add(len(self.history))
        self.history.append(UserMessage(f"{instruction}\n\n{note}" if instruction else note))

    def _visible(self, pass_: Pass) -> list[Any]:
        return [t for t in self.agent.tools if t.name not in pass_.hidden]

    def _render(self, pass_: Pass) -> ChatRequest:
        agent = self.agent
        visible = self._visible(pass_)
        system = agent.system_prompt([t.name for t in visible])
        tools, choice = plan_tools(
            pass_,
            visible,
            supports_allowed=agent.llm.capabilities.supports("allowed"),
            final_answer_as_tool=agent.final_answer_as_tool,
        )
        response_format = None
        answering = isinstance(choice, ToolChoiceNone) or not tools
        if agent.expected_output is not None and not agent.final_answer_as_tool and answering:
            response_format = ResponseFormat.from_model(agent.expected_output, name="answer")
        return ChatRequest(
            (SystemMessage(system), *self.memory, *self.history),
            tools=tools,
            tool_choice=choice,
            response_format=response_format,
        )

    async def _request(self, request: ChatRequest, pass_: Pass) -> ChatResponse | Retry:
        self.last_request = request
        await self.emit(ModelRequestEvent(**self._where(), request=request))
        try:
            response = await self.agent.llm.complete(request)
        except CapabilityError as exc:
            # The backend's forcing ladder could not get a call out of the model: ask again.
            opening = "Your reply did not call a tool."
            return Retry(f"no tool call: {exc.message}", call_a_tool(pass_, opening))
        self.usage = self.usage + response.usage
        await self.emit(ModelResponseEvent(**self._where(), response=response))
        return response

    async def _retry(self, retry: Retry, retries_here: int, pass_: Pass, *, note: bool) -> int:
        retries_here += 1
        self.retries += 1
        limits = self.limits
        if retries_here > limits.max_retries_per_step:
            raise RetryLimitError(
                f"iteration {self.iteration}: no usable reply after"
                f" {limits.max_retries_per_step} retries: {retry.reason}",
                scope="step",
                last=retry.reason,
                hint="raise `max_retries_per_step`, or use a model that follows tool calls",
            )
        if self.retries > limits.total_max_retries:
            raise RetryLimitError(
                f"the run used up total_max_retries={limits.total_max_retries}: {retry.reason}",
                scope="run",
                last=retry.reason,
                hint="raise `total_max_retries`, or use a model that follows tool calls",
            )
        await self.emit(
            RetryEvent(
                **self._where(),
                reason=retry.reason,
                retries_in_step=retries_here,
                retries_total=self.retries,
            )
        )
        if note:
            self._note(pass_, retry.instruction)
        return retries_here

    # -- gate, execute, record ----------------------------------------------------------------

    async def _gate_batch(self, pass_: Pass, calls: tuple[AnyToolCall, ...]) -> bool:
        """Admit, run and record each call in order; whether ``final_answer`` ran."""
        for index, call in enumerate(calls):
            # The pass for the state at this moment: earlier calls of the batch are recorded.
            current = pass_ if index == 0 else await self._decide()
            outcome, _ = await self._call(call, current)
            if outcome == "answered":
                for later in calls[index + 1 :]:
                    self.history.append(
                        ToolResultMessage(later.id, f"`{later.name}` did not run: the run is over")
                    )
                return True
        return False

    async def _answer_rescued(self, pass_: Pass, rescued: Rescued) -> Retry | None:
        """Run the ``final_answer`` call a text reply became; a ``Retry`` if it was refused."""
        call = ToolCall(
            f"rescued_{self.iteration}_{self.retries}", "final_answer", rescued.arguments
        )
        outcome, reason = await self._call(call, pass_, rescued=True)
        if outcome == "answered":
            self.rescued = True
            return None
        return Retry(reason or "the answer was refused", f"Your answer was not used: {reason}.")

    async def _call(
        self, call: AnyToolCall, pass_: Pass, *, rescued: bool = False
    ) -> tuple[_Outcome, str | None]:
        """Gate, then run and record one call."""
        verdict = self.agent.gate.admit(call, pass_, self.state)
        arguments = dict(call.arguments) if isinstance(call, ToolCall) else {}
        if isinstance(verdict, Refused):
            await self._deny(call, arguments, pass_, verdict.reason, "gate", rescued)
            return "denied", verdict.reason
        denied = await self.emit(
            ToolStartEvent(
                **self._where(),
                call_id=call.id,
                tool=call.name,
                arguments=arguments,
                pass_=pass_,
                state=self.state,
            )
        )
        if denied is not None:
            reason = f"`{call.name}` did not run: {denied.reason}"
            await self._deny(call, arguments, pass_, reason, "listener", rescued)
            return "denied", reason
        return await self._execute(call, arguments, pass_, verdict, rescued)

    async def _execute(
        self,
        call: AnyToolCall,
        arguments: dict[str, Any],
        pass_: Pass,
        admitted: Admitted,
        rescued: bool,
    ) -> tuple[_Outcome, str | None]:
        tool = admitted.tool
        token = CURRENT.set(Frame(self.events, self.run_id, self.path, call.id))
        try:
            with anyio.fail_after(tool.timeout):
                output = await tool.run(admitted.input)
        except Exception as exc:
            message = _failure(tool.name, exc, tool.timeout)
            step = Step(tool=call.name, arguments=arguments, status="error", error=message)
            self._record(step, pass_, call, None if rescued else f"error: {message}")
            await self.emit(
                ToolErrorEvent(**self._where(), call_id=call.id, step=step, exception=exc)
            )
            return "ran", message
        finally:
            CURRENT.reset(token)
        step = Step(tool=call.name, arguments=arguments, output=output, status="ok")
        final = tool is self.agent.final_tool
        content = "the answer was given" if final else render_output(output)
        self._record(step, pass_, call, None if rescued else content)
        await self.emit(ToolSuccessEvent(**self._where(), call_id=call.id, step=step))
        if not final:
            return "ran", None
        self.answer = output
        await self.emit(FinalAnswerEvent(**self._where(), answer=output, rescued=rescued))
        return "answered", None

    async def _deny(
        self,
        call: AnyToolCall,
        arguments: dict[str, Any],
        pass_: Pass,
        reason: str,
        by: Literal["gate", "listener"],
        rescued: bool,
    ) -> None:
        step = Step(tool=call.name, arguments=arguments, status="denied", error=reason)
        self._record(step, pass_, call, None if rescued else reason)
        await self.emit(ToolDeniedEvent(**self._where(), call_id=call.id, step=step, by=by))

    def _record(self, step: Step, pass_: Pass, call: AnyToolCall, message: str | None) -> None:
        self.state = self.state.with_step(step)
        self.passes.append(pass_)
        if message is not None:
            self.history.append(ToolResultMessage(call.id, message))

    # -- events, memory -----------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "path": self.path, "iteration": self.iteration}

    async def emit(self, event: Event) -> Any:
        return await self.events.emit(event)

    async def _quietly(self, event: Event) -> None:
        """Emit while the run is already failing: a listener error must not hide the cause."""
        with contextlib.suppress(AgentError):
            await self.events.emit(event)

    def _conversation(self) -> tuple[Message, ...]:
        request = self.last_request
        system = request.messages[0] if request is not None else None
        head: tuple[Message, ...] = (system,) if system is not None else ()
        return (*head, *self.memory, *self.history)

    def _save_memory(self) -> None:
        memory = self.agent.memory
        if memory is None:
            return
        saved: list[Message] = [self.history[0]]
        if self.agent.save_intermediate_steps:
            saved += [m for i, m in enumerate(self.history[1:], 1) if i not in self.notes]
        if not (self.rescued and self.agent.save_intermediate_steps):
            saved.append(AssistantMessage(content=render_output(self.answer)))
        memory.add(*saved)


def _failure(name: str, exc: Exception, timeout: float | None) -> str:
    if isinstance(exc, TimeoutError) and timeout is not None:
        return f"`{name}` timed out after {timeout:g} s"
    text = exc.message if isinstance(exc, AgentError) else str(exc)
    text = " ".join(text.split())
    return f"`{name}` failed: {type(exc).__name__}: {text}" if text else f"`{name}` failed"
