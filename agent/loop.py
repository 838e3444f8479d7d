"""``RunLoop``: one run of a ``RequirementAgent``, phase by phase.

Each iteration (a model round):

1. **decide** — the pass for the run state so far (a ``ConflictError`` ends the run, or, with
   ``on_conflict="answer"``, leaves the model one thing to do: answer);
2. **render** — the request: the stable prefix (tool definitions, system prompt), the
   history, one step note, and ``tool_choice`` from the pass (``agent/prompt.py``);
3. **request** — the model call (a forced tool is asked for the way the server can take it);
4. **gate** — per returned call, in order, the gate against the pass of the state at that
   moment, then the ``tool.start`` listeners (permission);
5. **execute** — the admitted tool runs (an exception is an ``error`` step);
6. **record** — the step joins the state, the result joins the history as a tool message.

Every admission reads the pass of the run state at that instant, through one method
(``_pass_now``): the first call of a reply, the later calls of a batch, a text answer turned
into a ``final_answer`` call, and the calls of a reply asked for again. The state changes only
when a step is recorded (a call ran, or permission was refused); a call the gate or a
listener refuses is not a step: the model reads why; a reply none of whose calls was used is
asked again (a retry).

A reply with no call goes to the text rescue (``agent/rescue.py``): a ``final_answer`` call
when stopping is allowed, else a retry. The run ends when ``final_answer`` has run.

A streamed run (``agent.run_stream``) is this loop with a ``stream`` sink: each reply is read
with ``llm.stream`` instead of ``llm.complete`` — the same reply, so the same admissions —
and the pieces of it that may be the answer go to the sink as they come (``AnswerDraft``,
``agent/stream.py``), taken back when the reply turns out not to be the answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from agent.context import CURRENT, AgentOutput, Frame, Limits, RunConfig
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
    ToolRefusedEvent,
    ToolStartEvent,
    ToolSuccessEvent,
)
from agent.gate import Admitted, Refused
from agent.permission import PermissionListener
from agent.prompt import plan_tools
from agent.rescue import Rescued, Retry, call_a_tool, rescue
from agent.run_context import RunContext, entered
from agent.stream import AnswerDelta, AnswerDiscarded, AnswerDraft, Sink
from agent.tools import render_output
from backends import (
    AnyToolCall,
    AssistantMessage,
    BackendError,
    CapabilityError,
    ChatRequest,
    ChatResponse,
    Message,
    ResponseFormat,
    StreamEnd,
    SystemMessage,
    ToolCall,
    ToolChoiceNone,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ruleengine import FINAL_ANSWER, AgentError, ConflictError, Pass, RunState, Step

__all__ = ["RunLoop"]

_Outcome = Literal["answered", "ran", "denied", "refused"]


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What became of one call: it ran (and perhaps answered), permission was refused (a
    ``denied`` step), or it was refused before it ran (not a step)."""

    outcome: _Outcome
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class _Handled:
    """What became of one reply: the run answered; some call became a step (the round is
    over); or nothing of it was used, and the retry it costs says why."""

    answered: bool = False
    stepped: bool = False
    retry: Retry | None = None


class RunLoop:
    """The state of one run and its phases. Built by ``RequirementAgent.run``, used once."""

    def __init__(
        self,
        agent: RunConfig,
        prompt: str,
        limits: Limits,
        events: RunEvents,
        *,
        run_id: str,
        path: tuple[str, ...],
        parent: Frame | None,
        stream: Sink | None = None,
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
        self.conflict: ConflictError | None = None
        """The conflict the run ended on (``on_conflict="answer"``), once there is one."""
        self._decided: tuple[tuple[int, int], Pass] | None = None  # the pass of which state
        self._conflict_pass: Pass | None = None
        self.stream = stream
        """Where a streamed run hands the answer's pieces (``None``: the run is not streamed,
        or it is nested in a streamed one, whose answer it is not)."""
        self._draft: AnswerDraft | None = None  # what the streamed reply showed of an answer

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
            conflict=self.conflict,
        )

    async def _loop(self) -> None:
        for iteration in range(1, self.limits.max_iterations + 1):
            self.iteration = iteration
            if await self._iterate():
                return
        if self.conflict is not None:
            raise self.conflict  # the conflict ended the run: no round was left to answer it
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
        # Every decision of round k, its rendering and each admission alike, reads the state
        # with `iteration` k - 1: the rounds completed before it.
        self.state = dataclasses.replace(self.state, iteration=self.iteration - 1)
        try:
            pass_ = await self._pass_now()
        except ConflictError as conflict:
            pass_ = await self._conflicted(conflict)
        await self.emit(StepStartEvent(**self._where(), pass_=pass_, state=self.state))
        self._note(pass_, self._conflict_instruction() if pass_ is self._conflict_pass else None)
        try:
            return await self._round(pass_)
        except ConflictError as conflict:  # after a call of the reply was recorded
            await self._conflicted(conflict)
            return False

    async def _round(self, pass_: Pass) -> bool:
        """Ask the model until a reply makes a step (or the answer); whether the run is over."""
        retries_here = 0
        while True:
            response = await self._request(self._render(pass_), pass_)
            if isinstance(response, Retry):
                retries_here = await self._retry(response, retries_here, pass_, note=True)
                continue
            self.history.append(response.message)
            try:
                if response.tool_calls:
                    handled = await self._gate_batch(response.tool_calls)
                else:
                    handled = await self._answer_in_text(response)
            except Exception as exc:
                await self._drop_draft(f"the reply was not the answer: {_why(exc)}")
                raise
            if handled.answered:
                return True
            await self._drop_draft(
                handled.retry.reason
                if handled.retry is not None
                else "the reply was not the answer"
            )
            if handled.stepped:
                return False  # the round is over (its refused calls were answered with why)
            # Nothing of the reply was used: the model is asked again, under the pass of the
            # state now, which is the same state (nothing was recorded), so the same pass.
            assert handled.retry is not None  # INVARIANT: an unused reply says why
            pass_ = await self._pass_now()
            retries_here = await self._retry(handled.retry, retries_here, pass_, note=True)

    # -- decide, render, request --------------------------------------------------------------

    async def _pass_now(self) -> Pass:
        """The pass of the run state at this instant: the one every admission reads.

        A state is its steps and its iteration; the pass is decided once per state (the
        reasoner's memory of the conversation is the one of that decision). Once the run
        has met a conflict (``on_conflict="answer"``), the pass that lets it only answer.
        """
        if self._conflict_pass is not None:
            return self._conflict_pass
        key = (len(self.state.steps), self.state.iteration)
        decided = self._decided
        if decided is not None and decided[0] == key:
            return decided[1]
        self.state = dataclasses.replace(self.state, memory=self._conversation())
        pass_ = await self.agent.reasoner.adecide(self.state)
        self._decided = (key, pass_)
        return pass_

    async def _conflicted(self, conflict: ConflictError) -> Pass:
        """The requirements conflict: end the run with the error, or (``on_conflict=
        "answer"``) leave the model only ``final_answer``, to say it cannot go on."""
        await self._quietly(ConflictEvent(**self._where(), error=conflict))
        if self.agent.on_conflict == "raise":
            raise conflict
        self.conflict = conflict
        reason = f"the requirements conflict: {conflict.message}"
        last = self._last_pass()
        hidden = last.hidden if last is not None else ()
        self._conflict_pass = Pass(
            allowed=(FINAL_ANSWER,),
            # What was hidden stays hidden (the prompt's prefix stays the same), but the answer.
            hidden=tuple(t for t in hidden if t != FINAL_ANSWER),
            forced=FINAL_ANSWER,
            can_stop=True,
            tool_choice=FINAL_ANSWER,
            reasons={FINAL_ANSWER: reason},
        )
        return self._conflict_pass

    def _last_pass(self) -> Pass | None:
        """The pass decided last (None before the first decision)."""
        return self._decided[1] if self._decided is not None else None

    def _conflict_instruction(self) -> str:
        # INVARIANT: only called once the run met a conflict
        assert self.conflict is not None
        return (
            "The run cannot go on: the requirements that govern your tools contradict each"
            f" other ({self.conflict.message}). No tool may be called any more. In your final"
            " answer, say what was done and why the task cannot be finished."
        )

    def _note(self, pass_: Pass, instruction: str | None = None) -> None:
        offered = [t.name for t in self._visible(pass_)]
        note = self.agent.step_note(pass_, offered)
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
            if self.stream is None:
                response = await self.agent.llm.complete(request)
            else:
                response = await self._streamed(request, pass_)
        except CapabilityError as exc:
            # The backend could not get a usable reply out of the server: ask again.
            opening = "Your reply did not call a tool."
            return Retry(f"no tool call: {exc.message}", call_a_tool(pass_, opening))
        self.usage = self.usage + response.usage
        await self.emit(ModelResponseEvent(**self._where(), response=response))
        return response

    async def _streamed(self, request: ChatRequest, pass_: Pass) -> ChatResponse:
        """The reply, read as it streams (the one ``complete`` gives); the pieces that may be
        the answer go to the stream as they come. A stream that fails takes them back."""
        draft = AnswerDraft(pass_.can_stop and self.agent.expected_output is None)
        self._draft = draft
        response: ChatResponse | None = None
        events = self.agent.llm.stream(request)
        try:
            async for event in events:
                if isinstance(event, StreamEnd):
                    response = event.response
                elif response is None:
                    await self._show(draft.feed(event, self._where()))
            if response is None:
                raise BackendError(
                    f"the model's stream ended without the reply (`StreamEnd`):"
                    f" `{self.agent.llm!r:.60}`"
                )
        except Exception as exc:
            await self._drop_draft(f"the reply failed: {_why(exc)}")
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):  # the connection closes, even when cancelled
                    await close()
        return response

    async def _show(self, items: Sequence[AnswerDelta | AnswerDiscarded]) -> None:
        for item in items:
            # INVARIANT: only a streamed run has a draft, so pieces to show
            assert self.stream is not None
            await self.stream(item)

    async def _drop_draft(self, reason: str) -> None:
        """The streamed reply was not the answer: take back what it showed of one."""
        draft, self._draft = self._draft, None
        if draft is not None:
            await self._show(draft.drop(reason, self._where()))

    async def _settle_draft(self, answer: Any) -> None:
        """The answer was given: complete what the stream showed of it, exactly."""
        if self.stream is None:
            return
        draft, self._draft = self._draft, None
        await self._show((draft or AnswerDraft(False)).settle(answer, self._where()))

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

    async def _gate_batch(self, calls: Sequence[AnyToolCall]) -> _Handled:
        """Admit, run and record each call in order, each against the pass of the state at
        that moment (the calls before it recorded)."""
        refused: list[tuple[AnyToolCall, str]] = []
        stepped = False
        for index, call in enumerate(calls):
            try:
                attempt = await self._attempt(call)
            except ConflictError as conflict:
                # Earlier calls were recorded and the state now conflicts: no pass for the rest.
                await self._skip(calls[index:], f"the requirements conflict: {conflict.message}")
                raise
            if attempt.outcome == "answered":
                await self._skip(calls[index + 1 :], "the run is over")
                return _Handled(answered=True)
            if attempt.outcome == "refused":
                refused.append((call, attempt.reason or ""))
            else:
                stepped = True
        if stepped:
            return _Handled(stepped=True)
        return _Handled(retry=_refused_retry(refused))

    async def _answer_in_text(self, response: ChatResponse) -> _Handled:
        """A reply without calls: the answer, if stopping is allowed and the gate admits it."""
        pass_ = await self._pass_now()
        outcome = rescue(
            response, pass_, self.agent.final_tool, as_tool=self.agent.final_answer_as_tool
        )
        if not isinstance(outcome, Rescued):
            return _Handled(retry=outcome)
        call = ToolCall(f"rescued_{self.iteration}_{self.retries}", FINAL_ANSWER, outcome.arguments)
        attempt = await self._attempt(call, rescued=True)
        if attempt.outcome == "answered":
            self.rescued = True
            return _Handled(answered=True)
        if attempt.outcome != "refused":
            return _Handled(stepped=True)  # `final_answer` failed: an `error` step
        reason = attempt.reason or "the answer was refused"
        retry = Retry(f"the answer was not used: {reason}", f"Your answer was not used: {reason}.")
        return _Handled(retry=retry)

    async def _attempt(self, call: AnyToolCall, *, rescued: bool = False) -> _Attempt:
        """Gate, ask the ``tool.start`` listeners, then run and record one call."""
        pass_ = await self._pass_now()
        verdict = self.agent.gate.admit(call, pass_, self.state)
        arguments = dict(call.arguments) if isinstance(call, ToolCall) else {}
        if isinstance(verdict, Refused):
            await self._refuse(call, arguments, pass_, verdict.reason, "gate", rescued)
            return _Attempt("refused", verdict.reason)
        # From here on the call is what the gate admitted: its arguments as validated (typed,
        # defaults filled in), which the permission listeners judge and the step records, so
        # a condition reads the same values at the gate, at the listener and later on.
        arguments = verdict.input.model_dump(mode="python")
        refusal = await self.events.start(
            ToolStartEvent(
                **self._where(),
                call_id=call.id,
                tool=call.name,
                arguments=arguments,
                pass_=pass_,
                state=self.state,
                notes=verdict.notes,
            )
        )
        if refusal is None:
            return await self._execute(call, arguments, pass_, verdict, rescued)
        reason = f"`{call.name}` did not run: {refusal.reason}"
        if isinstance(refusal.listener, PermissionListener):
            # Permission refused: a `denied` step, which requirements read.
            step = Step(tool=call.name, arguments=arguments, status="denied", error=reason)
            self._record(step, pass_, call, reason, rescued)
            await self.emit(
                ToolDeniedEvent(**self._where(), call_id=call.id, step=step, pass_=pass_)
            )
            return _Attempt("denied", reason)
        await self._refuse(call, arguments, pass_, reason, "listener", rescued)
        return _Attempt("refused", reason)

    async def _execute(
        self,
        call: AnyToolCall,
        arguments: dict[str, Any],
        pass_: Pass,
        admitted: Admitted,
        rescued: bool,
    ) -> _Attempt:
        tool = admitted.tool
        token = CURRENT.set(Frame(self.events, self.run_id, self.path, call.id))
        context = RunContext(
            deps=self.agent.deps,
            run_id=self.run_id,
            path=self.path,
            prompt=self.prompt,
            state=self.state,
            iteration=self.iteration,
            tool=call.name,
            call_id=call.id,
        )
        output: Any = None
        try:
            # `move_on_after`: a `TimeoutError` the tool raises is its own failure, not ours.
            with entered(context), anyio.move_on_after(tool.timeout) as deadline:
                output = await tool.run(admitted.input)
            if deadline.cancelled_caught:
                raise _TimedOut(f"`{tool.name}` timed out after {tool.timeout:g} s")
        except Exception as exc:
            message = exc.args[0] if isinstance(exc, _TimedOut) else _failure(tool.name, exc)
            step = Step(tool=call.name, arguments=arguments, status="error", error=message)
            self._record(step, pass_, call, f"error: {message}", rescued)
            await self.emit(
                ToolErrorEvent(**self._where(), call_id=call.id, step=step, exception=exc)
            )
            return _Attempt("ran", message)
        finally:
            CURRENT.reset(token)
        step = Step(tool=call.name, arguments=arguments, output=output, status="ok")
        final = tool is self.agent.final_tool
        content = "the answer was given" if final else render_output(output)
        self._record(step, pass_, call, content, rescued)
        await self.emit(ToolSuccessEvent(**self._where(), call_id=call.id, step=step))
        if not final:
            return _Attempt("ran")
        self.answer = output
        await self._settle_draft(output)
        await self.emit(FinalAnswerEvent(**self._where(), answer=output, rescued=rescued))
        return _Attempt("answered")

    async def _refuse(
        self,
        call: AnyToolCall,
        arguments: dict[str, Any],
        pass_: Pass | None,
        reason: str,
        by: Literal["gate", "listener", "run"],
        rescued: bool,
    ) -> None:
        """A call that does not run and is not a step: the model reads why."""
        if not rescued:  # a rescued call has no id in the conversation: its retry note says it
            self.history.append(ToolResultMessage(call.id, reason))
        await self.emit(
            ToolRefusedEvent(
                **self._where(),
                call_id=call.id,
                tool=call.name,
                arguments=arguments,
                reason=reason,
                by=by,
                pass_=pass_,
                rescued=rescued,
            )
        )

    async def _skip(self, calls: Sequence[AnyToolCall], why: str) -> None:
        """Answer the calls of a reply the run cannot go on to (every call is answered)."""
        pass_ = self._last_pass()
        for call in calls:
            arguments = dict(call.arguments) if isinstance(call, ToolCall) else {}
            reason = f"`{call.name}` did not run: {why}"
            await self._refuse(call, arguments, pass_, reason, "run", False)

    def _record(
        self, step: Step, pass_: Pass, call: AnyToolCall, message: str, rescued: bool
    ) -> None:
        self.state = self.state.with_step(step)
        self.passes.append(pass_)
        if not rescued:
            self.history.append(ToolResultMessage(call.id, message))
        elif step.status != "ok":
            # A rescued answer has no call in the conversation: say what became of it.
            self.notes.add(len(self.history))
            self.history.append(UserMessage(f"Your answer was not used: {message}"))

    # -- events, memory -----------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "path": self.path, "iteration": self.iteration}

    async def emit(self, event: Event) -> None:
        await self.events.emit(event)

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


def _refused_retry(refused: Sequence[tuple[AnyToolCall, str]]) -> Retry:
    """The retry a reply costs when all its calls were refused (their results say why).

    The note names no tool: the model may have named a hidden one, which stays unnamed.
    """
    first = refused[0][1]
    if len(refused) == 1:
        return Retry(f"a call was refused: {first}", "Your call did not run (its result says why).")
    more = f" (and {len(refused) - 1} more)"
    return Retry(
        f"every call was refused: {first}{more}",
        "None of your calls ran (their results say why).",
    )


class _TimedOut(TimeoutError):
    """A tool ran past its ``timeout`` (raised here, so that it becomes an ``error`` step)."""


def _why(exc: Exception) -> str:
    """An error in a few words: its type and the first line of its message."""
    text = exc.message if isinstance(exc, AgentError) else str(exc)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _failure(name: str, exc: Exception) -> str:
    text = exc.message if isinstance(exc, AgentError) else str(exc)
    text = " ".join(text.split())
    return f"`{name}` failed: {type(exc).__name__}: {text}" if text else f"`{name}` failed"
