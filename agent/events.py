"""Events of a run, and the ``Emitter`` listeners attach to.

Every event is a frozen dataclass with a ``kind`` (``"tool.start"``, ``"run.finish"``, …),
the ``run_id`` of the run that emitted it and its ``path``: the names of the agents from the
outermost run down, so the events of an agent called as a tool of another (a handoff) nest
under the outer run. Each carries its ``timestamp``: when it was made, in ``time.time()``
seconds. Kinds are namespaced (``run``, ``step``, ``model``, ``tool``) and a
listener registers for one kind, a namespace (``"tool.*"``) or everything (``"*"``).

Listeners are functions of the event, sync or async. Per emitter they run in the order they
were registered; the events of a nested run go to its own agent's listeners first, then bubble
up to the enclosing runs' agents (listeners registered with ``nested=False`` see only their own
agent's runs). A *blocking* listener is awaited before the run goes on, and so is every sync
one; a non-blocking async listener runs in the background and the run waits for it only at
its end.

``tool.start`` is the exception, because it guards a tool: its listeners are always awaited
before the tool runs, sync or async, whatever ``blocking`` says, and one that returns
``Deny(reason)`` or raises refuses the call (fail closed). A refusal by an ask-permission
requirement's listener is a ``denied`` step; any other listener's refusal is not a step (the
state is unchanged): the call is answered with the reason, and the model asked again.
A blocking listener that raises on another event ends the run with ``ListenerError``; a
non-blocking one that raises is logged and ignored.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from agent.errors import ListenerError
from ruleengine import PolicyError, validate

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from backends import ChatRequest, ChatResponse, Usage
    from ruleengine import ConflictError, Pass, RunState, Step

__all__ = [
    "ConflictEvent",
    "Deny",
    "Emitter",
    "Event",
    "EventKind",
    "FinalAnswerEvent",
    "KINDS",
    "Listener",
    "ModelRequestEvent",
    "ModelResponseEvent",
    "RetryEvent",
    "RunFinishEvent",
    "RunStartEvent",
    "StepStartEvent",
    "ToolDeniedEvent",
    "ToolErrorEvent",
    "ToolRefusedEvent",
    "ToolStartEvent",
    "ToolSuccessEvent",
]

_log = logging.getLogger("agent")

EventKind: TypeAlias = Literal[
    "run.start",
    "run.finish",
    "step.start",
    "model.request",
    "model.response",
    "tool.start",
    "tool.success",
    "tool.error",
    "tool.denied",
    "tool.refused",
    "final_answer",
    "retry",
    "conflict",
]
KINDS: tuple[EventKind, ...] = get_args(EventKind)
NAMESPACES = frozenset(kind.split(".")[0] for kind in KINDS if "." in kind)


@dataclass(frozen=True, slots=True)
class Deny:
    """What a ``tool.start`` listener returns to refuse the call."""

    reason: str
    """Why, in one line: the model reads it (``the user refused `refund```)."""

    def __post_init__(self) -> None:
        validate.text(self.reason, name="reason", owner="Deny")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Event:
    run_id: str
    """The run that emitted the event."""
    path: tuple[str, ...]
    """Agent names from the outermost run down to the emitting one."""
    iteration: int
    """The model round the event belongs to (1-based; 0 before the first)."""
    timestamp: float = field(default_factory=time.time, compare=False)
    """When the event was made: seconds since the epoch, as ``time.time()`` gives them (not
    compared: two events that say the same thing are equal whenever they were made)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartEvent(_Event):
    """A run started."""

    input: str
    """The user's prompt."""
    parent_run_id: str | None = None
    """The enclosing run, when this one runs as a tool of another agent."""
    parent_call_id: str | None = None
    """The enclosing run's tool call that started this run."""
    kind: Literal["run.start"] = "run.start"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinishEvent(_Event):
    """A run ended, with an answer or an error."""

    answer: Any
    """The answer (``None`` when the run failed)."""
    steps: tuple[Step, ...]
    """Every recorded step."""
    usage: Usage
    """Tokens used by every model call of the run."""
    error: BaseException | None = None
    """Why the run failed, if it did."""
    kind: Literal["run.finish"] = "run.finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStartEvent(_Event):
    """A model round starts: the pass the model is asked under."""

    pass_: Pass
    """The pass for the state below."""
    state: RunState
    """The run state the pass was decided for."""
    kind: Literal["step.start"] = "step.start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequestEvent(_Event):
    """A request is about to go to the model."""

    request: ChatRequest
    """The whole request."""
    kind: Literal["model.request"] = "model.request"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponseEvent(_Event):
    """The model answered."""

    response: ChatResponse
    """The reply."""
    kind: Literal["model.response"] = "model.response"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartEvent(_Event):
    """A call passed the gate and is about to run; a listener may still refuse it."""

    call_id: str
    """The model's id for the call."""
    tool: str
    """The tool's name."""
    arguments: Mapping[str, Any]
    """The arguments (validated against the tool's input model)."""
    pass_: Pass
    """The pass that admitted the call: the pass of ``state``."""
    state: RunState
    """The run state before the call."""
    notes: tuple[str, ...] = ()
    """What the gate let pass and why (the repeat check yielded: nothing else was allowed)."""
    kind: Literal["tool.start"] = "tool.start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSuccessEvent(_Event):
    """A tool ran and returned."""

    call_id: str
    """The model's id for the call."""
    step: Step
    """The recorded step (status ``ok``, with the output)."""
    kind: Literal["tool.success"] = "tool.success"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolErrorEvent(_Event):
    """A tool raised (or timed out); the model is told the error."""

    call_id: str
    """The model's id for the call."""
    step: Step
    """The recorded step (status ``error``)."""
    exception: BaseException | None = field(default=None, compare=False)
    """What the tool raised."""
    kind: Literal["tool.error"] = "tool.error"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDeniedEvent(_Event):
    """Permission was refused (an ask-permission requirement): the call did not run and is a
    ``denied`` step, which requirements read."""

    call_id: str
    """The model's id for the call."""
    step: Step
    """The recorded step (status ``denied``; ``error`` says why)."""
    pass_: Pass | None = None
    """The pass the call was admitted under (the gate let it through to be asked about)."""
    kind: Literal["tool.denied"] = "tool.denied"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRefusedEvent(_Event):
    """A call was refused before it ran, and is not a step: the run state, and so the pass,
    are as before it. The model is told ``reason`` (as the call's result) and asked again."""

    call_id: str
    """The model's id for the call (for a text answer turned into a ``final_answer`` call,
    an id of the agent's own: ``rescued`` is then true)."""
    tool: str
    """The tool named (perhaps unknown, or hidden)."""
    arguments: Mapping[str, Any]
    """The arguments as the model sent them (empty when they were not a JSON object)."""
    reason: str
    """Why, as the model reads it."""
    by: Literal["gate", "listener", "run"]
    """Who refused: the gate (the pass, the input model, the repeat check), a ``tool.start``
    listener, or the run itself (``final_answer`` ran earlier in the same reply, or the
    requirements conflict after an earlier call of the reply)."""
    pass_: Pass | None
    """The pass the call was checked against (``None`` when the run could not decide one)."""
    rescued: bool = False
    """Whether the call was a text answer turned into a ``final_answer`` call."""
    kind: Literal["tool.refused"] = "tool.refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalAnswerEvent(_Event):
    """``final_answer`` ran: the run is over."""

    answer: Any
    """The answer (text, or the ``expected_output`` model)."""
    rescued: bool
    """Whether the answer came as plain text and was turned into a ``final_answer`` call."""
    kind: Literal["final_answer"] = "final_answer"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryEvent(_Event):
    """The model's reply could not be used; it is asked again."""

    reason: str
    """Why the reply was not used."""
    retries_in_step: int
    """Retries so far in this model round."""
    retries_total: int
    """Retries so far in the run."""
    kind: Literal["retry"] = "retry"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConflictEvent(_Event):
    """The requirements contradict each other: the run ends with this error."""

    error: ConflictError
    """The conflict, with its minimal core."""
    kind: Literal["conflict"] = "conflict"


Event: TypeAlias = (
    RunStartEvent
    | RunFinishEvent
    | StepStartEvent
    | ModelRequestEvent
    | ModelResponseEvent
    | ToolStartEvent
    | ToolSuccessEvent
    | ToolErrorEvent
    | ToolDeniedEvent
    | ToolRefusedEvent
    | FinalAnswerEvent
    | RetryEvent
    | ConflictEvent
)

Listener: TypeAlias = Callable[[Any], "Deny | Awaitable[Deny | None] | None"]
"""A function of an event, sync or async; a ``tool.start`` listener may return ``Deny``."""


@dataclass(frozen=True, slots=True)
class _Subscription:
    pattern: str
    listener: Listener
    blocking: bool
    nested: bool
    is_async: bool

    def matches(self, kind: str, depth: int) -> bool:
        if depth > 0 and not self.nested:
            return False
        if self.pattern == "*" or self.pattern == kind:
            return True
        return self.pattern.endswith(".*") and kind.startswith(self.pattern[:-1])


class Emitter:
    """Where listeners attach: ``emitter.on("tool.start", listener, blocking=True)``.

    Each agent has one (``agent.emitter``), shared by all its runs: it holds listeners, never
    run state.
    """

    def __init__(self) -> None:
        self._subscriptions: tuple[_Subscription, ...] = ()
        self._lock = threading.Lock()

    def on(
        self,
        kind: str,
        listener: Listener,
        *,
        blocking: bool = False,
        nested: bool = True,
    ) -> Callable[[], None]:
        """Call ``listener`` for every event of ``kind``; returns a function that detaches it.

        ``kind`` is an event kind (``"tool.start"``), a namespace (``"tool.*"``) or ``"*"``.
        ``blocking``: the run waits for the listener (always the case for sync ones, and for
        every listener of ``tool.start``, which may refuse the call).
        ``nested``: also for the runs of agents called as tools inside this agent's runs.
        """
        pattern = _pattern(kind)
        if not callable(listener):
            raise PolicyError(f"listener=`{listener!r}` is not callable", parameter="listener")
        blocking = validate.flag(blocking, name="blocking")
        nested = validate.flag(nested, name="nested")
        subscription = _Subscription(pattern, listener, blocking, nested, _is_async(listener))
        with self._lock:
            self._subscriptions = (*self._subscriptions, subscription)

        def off() -> None:
            with self._lock:
                self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)

        return off

    def listeners(self, kind: str) -> tuple[Listener, ...]:
        """The listeners an event of ``kind`` reaches on this emitter, in order."""
        if kind not in KINDS:
            raise PolicyError(f"kind=`{kind}` is not an event kind", hint=_KINDS_HINT)
        return tuple(s.listener for s in self._subscriptions if s.matches(kind, 0))

    def subscriptions(self, kind: str, depth: int) -> tuple[_Subscription, ...]:
        """The subscriptions an event of ``kind`` from a run ``depth`` levels down reaches."""
        return tuple(s for s in self._subscriptions if s.matches(kind, depth))


_KINDS_HINT = "kinds: " + ", ".join(f"`{k}`" for k in KINDS) + "; or `namespace.*`, or `*`"


def _pattern(kind: object) -> str:
    if not isinstance(kind, str):
        raise PolicyError(f"kind=`{kind!r}` must be text", hint=_KINDS_HINT, parameter="kind")
    if kind == "*" or kind in KINDS:
        return kind
    if kind.endswith(".*") and kind[:-2] in NAMESPACES:
        return kind
    raise PolicyError(f"kind=`{kind}` is not an event kind", hint=_KINDS_HINT, parameter="kind")


def _is_async(listener: object) -> bool:
    if inspect.iscoroutinefunction(listener):
        return True
    call = getattr(listener, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


class RunEvents:
    """One run's view of the emitters: its agent's, then the enclosing runs' (bubbling).

    ``chain`` pairs each emitter with its depth (0: this run's agent). Non-blocking async
    listeners start in ``background``, the run's task group.
    """

    def __init__(
        self, chain: tuple[tuple[Emitter, int], ...], background: TaskGroup | None
    ) -> None:
        self.chain = chain
        self.background = background

    def nested(self, emitter: Emitter, background: TaskGroup | None) -> RunEvents:
        """The view of a run nested in this one (a handoff's inner agent)."""
        return RunEvents(
            ((emitter, 0), *((e, d + 1) for e, d in self.chain)), background=background
        )

    async def emit(self, event: Event) -> None:
        """Deliver ``event`` to every listener it reaches (for ``tool.start``, see ``start``)."""
        if isinstance(event, ToolStartEvent):
            await self.start(event)
            return
        for emitter, depth in self.chain:
            for subscription in emitter.subscriptions(event.kind, depth):
                await self._deliver(subscription, event)

    async def start(self, event: ToolStartEvent) -> Refusal | None:
        """Deliver a ``tool.start``: every listener awaited in turn, until one refuses.

        The first ``Deny`` (or exception: fail closed) ends the delivery: the tool will not
        run, so later listeners never hear of it.
        """
        for emitter, depth in self.chain:
            for subscription in emitter.subscriptions(event.kind, depth):
                listener = subscription.listener
                try:
                    result = listener(event)
                    if inspect.isawaitable(result):
                        result = await result
                except Exception as exc:
                    text = " ".join(str(exc).split())
                    failed = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
                    reason = f"a listener failed ({failed}), so it was refused"
                    return Refusal(reason, listener)
                if isinstance(result, Deny):
                    return Refusal(result.reason, listener)
        return None

    async def _deliver(self, subscription: _Subscription, event: Event) -> None:
        listener = subscription.listener
        if subscription.is_async and not subscription.blocking and self.background is not None:
            self.background.start_soon(_quietly, listener, event)
            return
        try:
            result = listener(event)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            if not subscription.blocking:
                _log.exception("listener %r failed on %s", listener, event.kind)
                return
            raise ListenerError(
                f"listener `{_name(listener)}` raised on `{event.kind}`:"
                f" {type(exc).__name__}: {exc}",
                hint="fix the listener, or register it with `blocking=False`",
            ) from exc


@dataclass(frozen=True, slots=True)
class Refusal:
    """A ``tool.start`` listener refused the call: why, and which listener it was."""

    reason: str
    """The listener's ``Deny`` reason (or what it raised)."""
    listener: Listener
    """The listener that refused (an ask-permission requirement's, or another)."""


async def _quietly(listener: Listener, event: Event) -> None:
    try:
        result = listener(event)
        if inspect.isawaitable(result):
            await result
    except Exception:
        _log.exception("listener %r failed on %s", listener, event.kind)


def _name(listener: object) -> str:
    return str(getattr(listener, "__qualname__", None) or type(listener).__name__)
