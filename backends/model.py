"""``BaseChatModel``: the shared layer between the agent loop and every backend.

The agent calls ``complete`` or ``stream``; a backend implements only ``send`` and
``send_stream``, which put one request on the wire as it is. In between, this layer walks the
forcing ladder of ``_forcing.py``: it plans a request the server's capabilities allow, reads
the reply as the rung expects it, retries through the next rung when the server answered 400
naming a feature's parameter, and remembers, per model object, what the server lacks.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field

from backends._forcing import Attempt, interpret, plan
from backends.base import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    Feature,
    RefusalDelta,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from backends.errors import BackendError, BackendStatusError, CapabilityError
from backends.messages import (
    ToolCall,
)
from ruleengine.errors import PolicyError

__all__ = ["BaseChatModel"]

_log = logging.getLogger("backends")

# Statuses that mean "the request is invalid", as servers answer an unsupported field.
_REJECTED = frozenset({400, 422})
# More than the ladder's rungs plus the options that may be dropped one by one.
_MAX_ATTEMPTS = 8
# The request parameters through which a server rejects each feature.
_PARAMETERS: dict[Feature, frozenset[str]] = {
    **{
        kind: frozenset({"tool_choice", "allowed_tools"})
        for kind in ("auto", "none", "required", "tool", "allowed")
    },
    "response_format": frozenset({"response_format"}),
    "parallel_tool_calls": frozenset({"parallel_tool_calls"}),
}


class BaseChatModel(abc.ABC):
    """Implements ``ChatModel`` on top of two backend methods, ``send`` and ``send_stream``.

    ``capabilities`` are what the server is declared to honour; the layer works around the
    rest, and narrows them when the server turns out to lack more: a 400 whose error names
    the feature's parameter. That knowledge lives on the model object. What a model chooses
    (another tool than the forced one, text) is never taken as the server's lack: the reply
    goes back to the caller as it came.
    """

    def __init__(self, *, capabilities: Capabilities | None = None) -> None:
        if capabilities is not None and not isinstance(capabilities, Capabilities):
            raise PolicyError(
                f"`capabilities` must be a Capabilities object: got `{capabilities!r:.80}`"
            )
        self._declared = capabilities if capabilities is not None else Capabilities()
        self._lacking: frozenset[Feature] = frozenset()
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> Capabilities:
        """What the server honours now: the declared capabilities minus ``lacking``."""
        return self._declared.without(*self._lacking) if self._lacking else self._declared

    @property
    def declared_capabilities(self) -> Capabilities:
        """The capabilities given at construction."""
        return self._declared

    @property
    def lacking(self) -> frozenset[Feature]:
        """Features the server rejected (a 400 naming them), and that are no longer used."""
        return self._lacking

    def forget(self) -> None:
        """Trust the declared capabilities again (after a server upgrade, say)."""
        with self._lock:
            self._lacking = frozenset()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One reply to ``request``, the model's own: a forced tool is *asked for* the way the
        server can take it, and a JSON reply to a structured or prompt rung becomes the call.

        The reply may still call another tool, or none: the caller judges it. Raises
        ``BackendError`` (a subclass says which failure) when the server cannot answer.
        """
        final: StreamEvent | None = None
        async with aclosing(self._drive(request, streaming=False)) as events:
            async for event in events:
                final = event
        # INVARIANT: _drive ends with StreamEnd or raises
        assert isinstance(final, StreamEnd)
        return final.response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """The reply as events, ending with ``StreamEnd`` (the reply ``complete`` gives).

        The native rung streams live. On the structured and prompt rungs, whose JSON text
        becomes a call, the events come once the reply has been read (derived from the call).
        """
        async with aclosing(self._drive(request, streaming=True)) as events:
            async for event in events:
                yield event

    @abc.abstractmethod
    async def send(self, request: ChatRequest) -> ChatResponse:
        """Put ``request`` on the wire as it is and parse the reply (implemented per backend).

        Callers use ``complete``; this layer only sends features the capabilities allow.
        """

    @abc.abstractmethod
    def send_stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Like ``send``, streamed; must end with one ``StreamEnd`` (implemented per backend)."""

    async def _drive(
        self, request: ChatRequest, *, streaming: bool
    ) -> AsyncGenerator[StreamEvent, None]:
        """Walk the ladder: plan, send, read; on a 400 naming a feature, the next rung."""
        if not isinstance(request, ChatRequest):
            raise PolicyError(f"`request` must be a ChatRequest: got `{request!r:.80}`")
        capabilities = self.capabilities
        suspects: set[Feature] = set()  # rejected with a 400; confirmed by the next 200
        trail: list[str] = []
        for _ in range(_MAX_ATTEMPTS):
            attempt = plan(request, capabilities)
            sent = _Sent()
            try:
                # Closed as soon as this generator is (a consumer that stops early), not when
                # the garbage collector finds it: its stream holds a connection.
                async with aclosing(self._send_rung(attempt, streaming, sent)) as events:
                    async for event in events:
                        yield event
            except BackendStatusError as error:
                blamed = None if sent.started else _rejected_feature(error, attempt.features)
                if blamed is None:
                    if not trail:
                        raise
                    raise _with_trail(error, trail) from error
                trail.append(f"{_describe(blamed)} rejected ({error.status_code})")
                suspects.add(blamed)
                capabilities = capabilities.without(blamed)
                continue
            # INVARIANT: _send_rung sets the response or raises
            assert sent.response is not None
            self._learn(suspects)
            result = interpret(attempt, sent.response)
            final = dataclasses.replace(result, route=attempt.route)
            for event in _held_events(sent, result, final):
                yield event
            yield StreamEnd(final)
            return
        raise CapabilityError(f"gave up after {_MAX_ATTEMPTS} attempts: {'; '.join(trail)}")

    async def _send_rung(
        self, attempt: Attempt, streaming: bool, sent: _Sent
    ) -> AsyncGenerator[StreamEvent, None]:
        """Send one rung; pass stream events on live when nothing needs checking, else hold
        them. The reply is left in ``sent.response``."""
        if not streaming:
            sent.response = await self.send(attempt.wire)
            return
        # A reply the rung turns from JSON text into a call is checked before it is passed on.
        sent.holding = attempt.route != "native" and attempt.must_call is not None
        async with aclosing(self.send_stream(attempt.wire)) as events:
            async for event in events:
                if isinstance(event, StreamEnd):
                    sent.response = event.response
                elif sent.response is not None:
                    continue  # nothing counts after the end
                elif sent.holding:
                    sent.held.append(event)
                else:
                    sent.started = True
                    yield event
        if sent.response is None:
            raise BackendError(f"{type(self).__name__}.send_stream ended without `StreamEnd`")

    def _learn(self, features: set[Feature]) -> None:
        new = frozenset(features) - self._lacking
        if not new:
            return
        with self._lock:
            self._lacking = self._lacking | new
        for feature in sorted(new):
            _log.info(
                "%r: the server lacks %s: working around it from now on", self, _describe(feature)
            )


@dataclass
class _Sent:
    """What one rung's sending produced."""

    response: ChatResponse | None = None
    holding: bool = False  # a streamed reply to check first: events are held, not passed on
    held: list[StreamEvent] = field(default_factory=list)
    started: bool = False  # events were passed on live: too late for a fallback


def _held_events(sent: _Sent, result: ChatResponse, final: ChatResponse) -> list[StreamEvent]:
    """The events to pass on once a held reply is accepted: its own, or derived ones when a
    fallback turned JSON text into a call."""
    if not sent.holding:
        return []
    return sent.held if result is sent.response else _events_of(final)


def _describe(feature: Feature) -> str:
    if feature in ("response_format", "parallel_tool_calls"):
        return f"`{feature}`"
    return {
        "tool": "`tool_choice` naming a tool",
        "allowed": "`tool_choice` with `allowed_tools`",
    }.get(feature, f"`tool_choice` `{feature}`")


def _with_trail(error: BackendStatusError, trail: list[str]) -> BackendStatusError:
    return BackendStatusError(
        f"{error.message}: after {'; '.join(trail)}",
        status_code=error.status_code,
        retry_after=error.retry_after,
        hint=error.hint,
    )


def _rejected_feature(error: BackendStatusError, features: tuple[Feature, ...]) -> Feature | None:
    """The feature a 400 (or 422) rejects: one of ``features`` whose parameter the server's
    error names. ``None`` when it names none of them: the request is wrong for some other
    reason, and no fallback would help (nor is anything learned about the server)."""
    if error.status_code not in _REJECTED or error.parameter is None:
        return None
    for feature in features:
        if error.parameter in _PARAMETERS[feature]:
            return feature
    return None


def _events_of(response: ChatResponse) -> list[StreamEvent]:
    """Stream events that add up to ``response`` (for replies a fallback produced)."""
    events: list[StreamEvent] = []
    if response.text:
        events.append(TextDelta(response.text))
    if response.refusal:
        events.append(RefusalDelta(response.refusal))
    for index, call in enumerate(response.tool_calls):
        if isinstance(call, ToolCall):
            arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
        else:
            arguments = call.raw_arguments
        events.append(ToolCallDelta(index, call.id, call.name, arguments))
    return events
