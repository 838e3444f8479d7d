"""``TrajectoryLogger``: a readable run log, built on events.

Attach it to an agent (``TrajectoryLogger().attach(agent)``) and every run prints one line per
event that matters: the pass of each model round, each call with its arguments, its result
(ok, error, denied by permission, or refused before it ran, and why), retries, conflicts and
the answer. Runs of agents called as tools
(handoffs) are indented under the outer call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

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
from agent.tools import render_output
from ruleengine import FINAL_ANSWER, PolicyError, validate

__all__ = ["TrajectoryLogger"]


class TrajectoryLogger:
    """Prints a run log: ``write`` is a text stream (default: standard output) or a function.

    ``width`` cuts long values (arguments, outputs, answers); ``show_model`` also prints each
    model request (tools offered, ``tool_choice``) and reply.
    """

    def __init__(
        self,
        write: TextIO | Callable[[str], object] | None = None,
        *,
        width: int = 100,
        show_model: bool = False,
    ) -> None:
        if write is None or hasattr(write, "write"):
            stream = write

            def emit(line: str) -> None:
                target: Any = stream if stream is not None else sys.stdout
                target.write(line + "\n")

            self._write: Callable[[str], object] = emit
        elif callable(write):
            self._write = write
        else:
            raise PolicyError(f"write=`{write!r:.60}` is neither a text stream nor a function")
        self.width = validate.integer(width, name="width", least=20)
        """The longest a value is shown."""
        self.show_model = validate.flag(show_model, name="show_model")
        """Whether model requests and replies are shown too."""
        self._last: object = None

    def attach(self, target: Any) -> Callable[[], None]:
        """Log every run of ``target`` (an agent or an emitter); returns a detach function."""
        emitter = getattr(target, "emitter", target)
        if not isinstance(emitter, Emitter):
            raise PolicyError(f"cannot attach to `{target!r:.60}`: not an agent or an emitter")
        return emitter.on("*", self)

    def __call__(self, event: Event) -> None:
        if event is self._last:  # attached to an inner agent and to the outer one
            return
        self._last = event
        line = self.line(event)
        if line is not None:
            indent = "  " * (len(event.path) - 1)
            self._write(f"{indent}[{event.path[-1]}] {line}")

    def line(self, event: Event) -> str | None:
        """The log line of ``event`` (without indentation and name), or ``None``."""
        if isinstance(event, RunStartEvent):
            return f"run: {self._cut(event.input)}"
        if isinstance(event, StepStartEvent):
            return f"round {event.iteration}: {_describe_pass(event)}"
        if isinstance(event, ToolStartEvent):
            if event.tool == FINAL_ANSWER:
                return None
            notes = "".join(f" ({note})" for note in event.notes)
            return f"  -> {event.tool} {self._cut(_json(event.arguments))}{notes}"
        if isinstance(event, ToolSuccessEvent):
            if event.step.tool == FINAL_ANSWER:
                return None
            return f"  ok {event.step.tool}: {self._cut(render_output(event.step.output))}"
        if isinstance(event, ToolErrorEvent):
            return f"  error: {self._cut(event.step.error or '')}"
        if isinstance(event, ToolDeniedEvent):
            return f"  denied: {self._cut(event.step.error or '')}"
        if isinstance(event, ToolRefusedEvent):
            what = "not run" if event.by == "run" else "refused"
            return f"  {what}: {self._cut(event.reason)}"
        if isinstance(event, RetryEvent):
            return f"  retry ({event.retries_total} so far): {event.reason}"
        if isinstance(event, FinalAnswerEvent):
            how = " (from plain text)" if event.rescued else ""
            return f"answer{how}: {self._cut(render_output(event.answer))}"
        if isinstance(event, ConflictEvent):
            return f"conflict: {self._cut(event.error.message)}"
        if isinstance(event, RunFinishEvent):
            return self._finish(event)
        if self.show_model and isinstance(event, ModelRequestEvent):
            request = event.request
            tools = ", ".join(t.name for t in request.tools) or "none"
            choice = request.tool_choice
            return f"  model <- {len(request.messages)} messages, tools: {tools}, {choice!r}"
        if self.show_model and isinstance(event, ModelResponseEvent):
            response = event.response
            calls = ", ".join(c.name for c in response.tool_calls)
            said = f"calls {calls}" if calls else f"says {self._cut(response.text or '')!s}"
            return f"  model -> {said}"
        return None

    def _finish(self, event: RunFinishEvent) -> str:
        steps = len(event.steps)
        tokens = event.usage.prompt_tokens + event.usage.completion_tokens
        cost = f"{steps} step{'s' if steps != 1 else ''}, {tokens} tokens"
        if event.error is None:
            return f"done: {cost}"
        message = getattr(event.error, "message", str(event.error))
        return f"failed ({cost}): {type(event.error).__name__}: {self._cut(message)}"

    def _cut(self, text: str) -> str:
        flat = " ".join(text.split())
        return flat if len(flat) <= self.width else flat[: self.width - 1] + "…"


def _describe_pass(event: StepStartEvent) -> str:
    p = event.pass_
    tools = [t for t in p.allowed if t != FINAL_ANSWER]
    parts = [f"must call {p.forced}" if p.forced else "may call " + (", ".join(tools) or "nothing")]
    parts.append("may finish" if p.can_stop else "may not finish")
    return "; ".join(parts)


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)
