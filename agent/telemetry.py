"""OpenTelemetry spans for agent runs, named and shaped by the GenAI semantic conventions.

``instrument(agent)`` (or ``Telemetry(...).attach(agent)``) listens to an agent's events and
turns every run into spans:

- ``invoke_agent {name}``, one per run: the root of the run's spans; the run of an agent
  called as a tool of another (a handoff) sits under the span of that tool call;
- ``chat {model}``, one per model call, a child of its run's span;
- ``execute_tool {tool}``, one per call that passed the gate, a child of its run's span (a
  ``tool.start`` listener registered after this one may still refuse the call: the span then
  ends as ``refused``).

The pass rides along under a ``ruleengine.`` prefix (``ruleengine.pass.allowed``, …): on each
``chat`` span the pass the model was asked under, on each ``execute_tool`` span the pass that
admitted the call. Calls refused before they ran are ``ruleengine.tool.refused`` events on the
run's span, with who refused them and why. A failure sets the span's status to ``ERROR`` and
records the exception. Spans start and end at their events' ``timestamp``.

This is the one module that imports ``opentelemetry`` (the ``otel`` extra: ``pip install
'ruleengine[otel]'``); ``import agent`` never does.
"""

from __future__ import annotations

try:
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
    from opentelemetry.util.types import AttributeValue
except ImportError as _missing:  # the extra is not installed
    raise ModuleNotFoundError(
        "agent.telemetry needs OpenTelemetry, which is not installed:"
        " pip install 'ruleengine[otel]'",
        name="opentelemetry",
    ) from _missing

import functools
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from agent.context import RunnableAgent
from agent.events import (
    ConflictEvent,
    Emitter,
    Event,
    FinalAnswerEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    RetryEvent,
    RunFinishEvent,
    RunStartEvent,
    StepStartEvent,
    ToolDeniedEvent,
    ToolErrorEvent,
    ToolRefusedEvent,
    ToolStartEvent,
    ToolSuccessEvent,
)
from agent.handoff import HandoffTool
from agent.tools import Tool, render_output
from backends import OpenAIChatModel, Usage
from ruleengine import Pass, PolicyError, validate

if TYPE_CHECKING:
    from agent.runner import RequirementAgent

__all__ = ["Telemetry", "instrument"]

_log = logging.getLogger("agent")

SCOPE = "agent.telemetry"
"""The instrumentation scope the spans are created under."""

Attributes = dict[str, AttributeValue]


def instrument(
    agent: RequirementAgent[Any],
    tracer_provider: TracerProvider | None = None,
    *,
    capture_content: bool = False,
) -> Callable[[], None]:
    """Trace every run of ``agent`` (and of the agents it calls as tools); returns a function
    that stops it.

    ``tracer_provider``: where the spans go (``None``: the global one). ``capture_content``:
    also record tool arguments and results (``gen_ai.tool.call.arguments``,
    ``gen_ai.tool.call.result``), which may hold what users and tools said.
    """
    return Telemetry(tracer_provider, capture_content=capture_content).attach(agent)


class Telemetry:
    """A listener that turns runs into OpenTelemetry spans; ``attach`` it to agents.

    One ``Telemetry`` may serve many agents and concurrent runs: a run's spans live from its
    ``run.start`` to its ``run.finish``. A run is traced once, by the first ``Telemetry`` that
    hears it start, even when several are attached along a handoff chain.
    """

    def __init__(
        self, tracer_provider: TracerProvider | None = None, *, capture_content: bool = False
    ) -> None:
        if tracer_provider is not None and not isinstance(tracer_provider, TracerProvider):
            raise PolicyError(
                f"tracer_provider=`{tracer_provider!r:.60}` is not an OpenTelemetry"
                " `TracerProvider`",
                hint="pass `opentelemetry.sdk.trace.TracerProvider()` (configured with your"
                " exporter), or nothing for the global one",
                parameter="tracer_provider",
            )
        self.capture_content = validate.flag(capture_content, name="capture_content")
        """Whether tool arguments and results are recorded."""
        self.tracer = trace.get_tracer(SCOPE, _version(), tracer_provider)
        """Where the spans are made."""

    def attach(self, target: RequirementAgent[Any] | Emitter) -> Callable[[], None]:
        """Trace every run of ``target`` (an agent, or its emitter); returns a detach function.

        Attached to an emitter, the spans lack what only the agent knows (its description,
        its model's name before the model answers).
        """
        emitter = getattr(target, "emitter", target)
        if not isinstance(emitter, Emitter):
            raise PolicyError(
                f"cannot attach telemetry to `{target!r:.60}`: not an agent or an emitter",
                hint="pass a `RequirementAgent`",
                parameter="target",
            )
        agent: RunnableAgent | None = None if isinstance(target, Emitter) else target
        return emitter.on("*", functools.partial(self._listen, agent))

    def _listen(self, agent: RunnableAgent | None, event: Event) -> None:
        # Never raise: a failing `tool.start` listener would refuse the call.
        try:
            self._handle(agent, event)
        except Exception:
            _log.exception("telemetry failed on %s", event.kind)

    # -- the events ----------------------------------------------------------------------------

    def _handle(self, agent: RunnableAgent | None, event: Event) -> None:
        if isinstance(event, RunStartEvent):
            if _find(event.run_id) is None:
                _keep(self._start_run(agent, event))
            return
        run = _find(event.run_id)
        if run is None or run.owner is not self or run.last is event:
            return  # not ours, or heard already (attached to an inner agent and an outer one)
        run.last = event
        if isinstance(event, StepStartEvent):
            run.pass_ = event.pass_
        elif isinstance(event, ModelRequestEvent):
            self._start_chat(run, event)
        elif isinstance(event, ModelResponseEvent):
            _end_chat(run, event)
        elif isinstance(event, ToolStartEvent):
            self._start_tool(run, event)
        elif isinstance(event, ToolSuccessEvent | ToolErrorEvent | ToolDeniedEvent):
            self._end_tool(run, event)
        elif isinstance(event, ToolRefusedEvent):
            self._refused(run, event)
        elif isinstance(event, RetryEvent):
            _retried(run, event)
        elif isinstance(event, ConflictEvent):
            _conflicted(run, event)
        elif isinstance(event, FinalAnswerEvent):
            run.span.set_attribute("ruleengine.answer.rescued", event.rescued)
        elif isinstance(event, RunFinishEvent):
            _finish_run(run, event)

    def _start_run(self, heard_by: RunnableAgent | None, event: RunStartEvent) -> _Run:
        parent: Context | None = None  # None: the current context (a span around `run`)
        agent: RunnableAgent | None = None
        outer = _find(event.parent_run_id) if event.parent_run_id is not None else None
        if outer is not None:
            call = outer.calls.get(event.parent_call_id or "")
            parent = trace.set_span_in_context(call.span if call is not None else outer.span)
            if call is not None and isinstance(call.tool, HandoffTool):
                agent = call.tool.agent
        elif heard_by is not None and heard_by.name == event.path[-1]:
            # No traced run encloses this one, so the listener that heard it is its agent's.
            agent = heard_by
        name = event.path[-1]
        model = _model_name(agent)
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "ruleengine.run.id": event.run_id,
            "ruleengine.run.path": list(event.path),
        }
        if agent is not None:
            if agent.description:
                attributes["gen_ai.agent.description"] = agent.description
            attributes["ruleengine.mode"] = agent.reasoner.mode
            policy = getattr(agent, "policy", None)
            source = getattr(policy, "source", None)
            if isinstance(source, str):
                attributes["ruleengine.policy.source"] = source
            attributes.update(_model_attributes(agent, model))
        if event.parent_run_id is not None:
            attributes["ruleengine.run.parent_id"] = event.parent_run_id
        span = self.tracer.start_span(
            f"invoke_agent {name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )
        return _Run(self, event.run_id, span, agent, model, last=event)

    def _start_chat(self, run: _Run, event: ModelRequestEvent) -> None:
        if run.chat is not None:  # a request left unanswered (a retry or the end closes it)
            run.chat.end(_ns(event.timestamp))
        request = event.request
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "ruleengine.iteration": event.iteration,
            "ruleengine.request.tools": [t.name for t in request.tools],
        }
        attributes.update(_model_attributes(run.agent, run.model))
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if run.pass_ is not None:
            attributes.update(_pass_attributes(run.pass_))
        run.chat = self.tracer.start_span(
            f"chat {run.model}" if run.model else "chat",
            context=run.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )

    def _start_tool(self, run: _Run, event: ToolStartEvent) -> None:
        tool = _tool(run.agent, event.tool)
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "ruleengine.iteration": event.iteration,
            **_pass_attributes(event.pass_),
        }
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        if event.notes:
            attributes["ruleengine.tool.notes"] = list(event.notes)
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _json(event.arguments)
        span = self.tracer.start_span(
            f"execute_tool {event.tool}",
            context=run.context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(event.timestamp),
        )
        run.calls[event.call_id] = _Call(span, tool)

    def _end_tool(
        self, run: _Run, event: ToolSuccessEvent | ToolErrorEvent | ToolDeniedEvent
    ) -> None:
        at = _ns(event.timestamp)
        step = event.step
        if isinstance(event, ToolDeniedEvent):
            run.span.add_event(
                "ruleengine.tool.denied",
                {
                    "gen_ai.tool.name": step.tool,
                    "gen_ai.tool.call.id": event.call_id,
                    "ruleengine.denial.reason": step.error or "",
                },
                timestamp=at,
            )
        call = run.calls.pop(event.call_id, None)
        if call is None:
            return  # refused by a `tool.start` listener heard before this one: no span
        span = call.span
        span.set_attribute("ruleengine.tool.outcome", step.status)
        if isinstance(event, ToolSuccessEvent) and self.capture_content:
            span.set_attribute("gen_ai.tool.call.result", render_output(step.output))
        if isinstance(event, ToolErrorEvent):
            _fail(span, event.exception, step.error or "the tool failed", at)
        span.end(at)

    def _refused(self, run: _Run, event: ToolRefusedEvent) -> None:
        at = _ns(event.timestamp)
        attributes: Attributes = {
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "ruleengine.refusal.reason": event.reason,
            "ruleengine.refusal.by": event.by,
            "ruleengine.refusal.rescued": event.rescued,
        }
        if event.pass_ is not None:
            attributes.update(_pass_attributes(event.pass_))
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = _json(event.arguments)
        run.span.add_event("ruleengine.tool.refused", attributes, timestamp=at)
        call = run.calls.pop(event.call_id, None)
        if call is not None:  # a `tool.start` listener heard after this one refused it
            call.span.set_attribute("ruleengine.tool.outcome", "refused")
            call.span.set_attribute("ruleengine.refusal.reason", event.reason)
            call.span.end(at)


# -- one run's spans -----------------------------------------------------------------------------


@dataclass(eq=False)
class _Call:
    """An ``execute_tool`` span still open, and the tool it runs (when the agent is known)."""

    span: Span
    tool: Tool | None


@dataclass(eq=False)
class _Run:
    """The spans of one run, from ``run.start`` to ``run.finish``."""

    owner: Telemetry
    run_id: str
    span: Span
    agent: RunnableAgent | None
    model: str | None
    last: object = None
    """The last event handled (an event reaches the listener twice when it is attached to an
    inner agent and to an outer one)."""
    pass_: Pass | None = None
    """The pass of the current round (from ``step.start``)."""
    chat: Span | None = None
    """The ``chat`` span of the model call under way."""
    calls: dict[str, _Call] = field(default_factory=dict)
    """The open ``execute_tool`` spans, by call id."""
    context: Context = field(init=False)
    """The context whose current span is the run's: its children's parent."""

    def __post_init__(self) -> None:
        self.context = trace.set_span_in_context(self.span)


# Open runs, by run id, for every `Telemetry`: a nested run finds its parent's tool span here,
# even when another `Telemetry` (attached to the outer agent) traces the parent.
_RUNS: dict[str, _Run] = {}
_RUNS_LOCK = threading.Lock()


def _find(run_id: str | None) -> _Run | None:
    with _RUNS_LOCK:
        return _RUNS.get(run_id) if run_id is not None else None


def _keep(run: _Run) -> None:
    with _RUNS_LOCK:
        _RUNS[run.run_id] = run


def _drop(run: _Run) -> None:
    with _RUNS_LOCK:
        _RUNS.pop(run.run_id, None)


def _end_chat(run: _Run, event: ModelResponseEvent) -> None:
    span = run.chat
    if span is None:
        return
    run.chat = None
    response = event.response
    if response.model:
        span.set_attribute("gen_ai.response.model", response.model)
        if not run.model:  # the span is named after the model as soon as it is known
            span.update_name(f"chat {response.model}")
    if response.finish_reason is not None:
        span.set_attribute("gen_ai.response.finish_reasons", [response.finish_reason])
    span.set_attribute("ruleengine.response.tool_calls", [c.name for c in response.tool_calls])
    span.set_attribute("ruleengine.response.route", response.route)
    for key, value in _usage_attributes(response.usage).items():
        span.set_attribute(key, value)
    span.end(_ns(event.timestamp))


def _retried(run: _Run, event: RetryEvent) -> None:
    at = _ns(event.timestamp)
    if run.chat is not None:
        # A retry while a model call is open: the backend got no usable reply out of it.
        _fail(run.chat, None, event.reason, at)
        run.chat.end(at)
        run.chat = None
    run.span.add_event(
        "ruleengine.retry",
        {
            "ruleengine.retry.reason": event.reason,
            "ruleengine.retry.in_step": event.retries_in_step,
            "ruleengine.retry.total": event.retries_total,
        },
        timestamp=at,
    )


def _conflicted(run: _Run, event: ConflictEvent) -> None:
    error = event.error
    run.span.add_event(
        "ruleengine.conflict",
        {
            "ruleengine.conflict.kind": error.kind,
            "ruleengine.conflict.message": error.message,
            "ruleengine.conflict.core": [str(entry) for entry in error.core],
            "ruleengine.conflict.forced": list(error.forced),
        },
        timestamp=_ns(event.timestamp),
    )


def _finish_run(run: _Run, event: RunFinishEvent) -> None:
    _drop(run)
    at = _ns(event.timestamp)
    error = event.error
    why = _message(error) if error is not None else ""
    # Spans the run left open: the model call or the tool it failed in.
    open_spans = [run.chat] if run.chat is not None else []
    open_spans += [call.span for call in run.calls.values()]
    run.chat = None
    run.calls.clear()
    for span in open_spans:
        if error is not None:
            _fail(span, error, why, at)
        span.end(at)
    span = run.span
    span.set_attribute("ruleengine.run.steps", len(event.steps))
    span.set_attribute("ruleengine.run.iterations", event.iteration)
    for key, value in _usage_attributes(event.usage).items():
        span.set_attribute(key, value)
    if error is not None:
        _fail(span, error, why, at)
    span.end(at)


# -- attributes ---------------------------------------------------------------------------------


def _pass_attributes(pass_: Pass) -> Attributes:
    attributes: Attributes = {
        "ruleengine.pass.allowed": list(pass_.allowed),
        "ruleengine.pass.hidden": list(pass_.hidden),
        "ruleengine.pass.can_stop": pass_.can_stop,
        "ruleengine.pass.tool_choice": pass_.tool_choice,
    }
    if pass_.forced is not None:
        attributes["ruleengine.pass.forced"] = pass_.forced
    return attributes


def _model_attributes(agent: RunnableAgent | None, model: str | None) -> Attributes:
    attributes: Attributes = {}
    if model:
        attributes["gen_ai.request.model"] = model
    if agent is not None and isinstance(agent.llm, OpenAIChatModel):
        attributes["gen_ai.provider.name"] = "openai"
    return attributes


def _usage_attributes(usage: Usage) -> Attributes:
    """Token counts, when the server reported them (a usage of zeros says nothing)."""
    if not usage.total_tokens:
        return {}
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    if usage.cached_prompt_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_prompt_tokens
    return attributes


def _model_name(agent: RunnableAgent | None) -> str | None:
    """The name of the agent's model, when the model says it (``OpenAIChatModel.model``)."""
    name = getattr(agent.llm, "model", None) if agent is not None else None
    return name if isinstance(name, str) and name else None


def _tool(agent: RunnableAgent | None, name: str) -> Tool | None:
    if agent is None:
        return None
    return next((t for t in agent.tools if t.name == name), None)


def _fail(span: Span, error: BaseException | None, why: str, at: int) -> None:
    """Mark ``span`` failed: status ``ERROR``, ``error.type``, the exception recorded."""
    if error is not None:
        span.record_exception(error, timestamp=at)
        kind = type(error)
        qualified = kind.__qualname__
        span.set_attribute(
            "error.type",
            qualified if kind.__module__ == "builtins" else f"{kind.__module__}.{qualified}",
        )
    else:
        span.set_attribute("error.type", "_OTHER")
    span.set_status(Status(StatusCode.ERROR, why))


def _message(error: BaseException) -> str:
    message = getattr(error, "message", None)
    text = message if isinstance(message, str) else str(error)
    return text or type(error).__name__


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, default=str)


def _ns(seconds: float) -> int:
    """An event's ``timestamp`` (``time.time()`` seconds) in OpenTelemetry's nanoseconds."""
    return int(seconds * 1e9)


def _version() -> str | None:
    try:
        return metadata.version("ruleengine")
    except metadata.PackageNotFoundError:
        return None
