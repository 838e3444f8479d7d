"""Streaming a run: ``agent.run_stream(prompt)`` and what it yields.

A ``RunStream`` runs the same ``RunLoop`` as ``agent.run`` — the same phases, the same gate,
the same events — in a task of its own, and hands the consumer, in order:

- every event a listener registered last, for every kind (``"*"``), would hear: the run's own
  and those of agents it calls as tools (a ``tool.start`` only once no listener refused it);
- ``AnswerDelta``: a piece of the final answer's text, as the model writes it;
- ``AnswerDiscarded``: the pieces given since the last discard are not the answer after all
  (the reply went on to call a tool, the gate refused the answer, the stream broke off…).

The events reach the consumer through a ``StreamEvents``: the run's ``RunEvents``, with the
consumer (a *sink*) after the listeners. Each item is handed over before the run goes on (the
channel holds nothing), so a consumer that stops reading holds the run where it is, and
leaving ``async with`` cancels it there.

Which text is the answer is decided only after the reply was read, by the gate: an
``AnswerDraft`` follows one streamed reply and says which of its pieces may be the answer
(text, until a call starts; the ``response`` argument of its first ``final_answer`` call), and,
once the answer is given, what completes it exactly.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

import anyio

from agent.context import AgentOutput
from agent.events import Emitter, Event, RunEvents, ToolStartEvent
from backends import StreamEvent, TextDelta, ToolCallDelta
from ruleengine import FINAL_ANSWER, PolicyError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from agent.events import Refusal

__all__ = [
    "AnswerDelta",
    "AnswerDiscarded",
    "AnswerDraft",
    "RunStream",
    "Sink",
    "StreamEvents",
    "StreamItem",
    "streaming",
]

OutputT = TypeVar("OutputT")


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerDelta:
    """A piece of the final answer's text, as the model writes it.

    The pieces given since the last ``AnswerDiscarded`` (or since the start) add up to the
    answer by the time the ``final_answer`` event comes.
    """

    text: str
    """The new text."""
    run_id: str
    """The run whose answer it is."""
    path: tuple[str, ...]
    """Agent names from the outermost run down to this one."""
    iteration: int
    """The model round the reply belongs to."""
    kind: Literal["answer.delta"] = "answer.delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerDiscarded:
    """The ``AnswerDelta`` pieces given since the last discard are not the answer."""

    reason: str
    """Why, in one line (``the reply went on to call a tool``)."""
    run_id: str
    """The run whose answer it is."""
    path: tuple[str, ...]
    """Agent names from the outermost run down to this one."""
    iteration: int
    """The model round the reply belongs to."""
    kind: Literal["answer.discarded"] = "answer.discarded"


StreamItem: TypeAlias = Event | AnswerDelta | AnswerDiscarded
"""What a ``RunStream`` yields."""

Sink: TypeAlias = Callable[[StreamItem], Awaitable[None]]
"""Where a streamed run hands its items: awaited until the consumer took the item."""


# ---------------------------------------------------------------------------------------------
# Events, to the listeners and then to the stream


class StreamEvents(RunEvents):
    """A run's ``RunEvents`` that also hands each event to ``sinks``, after the listeners.

    ``sinks``: the streams this run's events reach, its own first, then those of the streamed
    runs it is nested in. A ``tool.start`` reaches them once no listener refused the call.
    Runs nested in this one (handoffs) get the same sinks.
    """

    sinks: tuple[Sink, ...]

    async def emit(self, event: Event) -> None:
        """Deliver ``event`` to the listeners, then to the sinks."""
        await super().emit(event)  # a `tool.start` goes through `start`, below
        if not isinstance(event, ToolStartEvent):
            await self._to_sinks(event)

    async def start(self, event: ToolStartEvent) -> Refusal | None:
        """Deliver a ``tool.start`` to the listeners; if none refused, to the sinks."""
        refusal = await super().start(event)
        if refusal is None:
            await self._to_sinks(event)
        return refusal

    def nested(self, emitter: Emitter, background: TaskGroup | None) -> RunEvents:
        """The view of a run nested in this one: its events reach the same sinks."""
        return streaming(super().nested(emitter, background), *self.sinks)

    async def _to_sinks(self, event: Event) -> None:
        for sink in self.sinks:
            await sink(event)


def streaming(events: RunEvents, *sinks: Sink) -> StreamEvents:
    """``events``, whose events also reach ``sinks`` (and the sinks it already fed)."""
    found = StreamEvents.__new__(StreamEvents)
    # Every attribute of `events` is kept as it is: only the sinks are added.
    found.__dict__.update(vars(events))
    found.sinks = (*sinks, *getattr(events, "sinks", ()))
    return found


# ---------------------------------------------------------------------------------------------
# Which pieces of a streamed reply may be the answer


class AnswerDraft:
    """Follows one streamed reply and says which of its pieces may be the answer.

    ``enabled``: the reply may give the answer (the pass lets the run stop, and the answer is
    text). Its text is a draft of the answer until a call starts (a text reply becomes the
    answer only when it calls nothing); the ``response`` argument of its first ``final_answer``
    call is one from its first piece. ``shown`` is what the live draft gave out.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        """Whether the reply's pieces may be the answer."""
        self.shown: list[str] = []
        """The pieces given out since the last discard."""
        self._text = _Trimmed()
        self._calling = False  # a call started: the text is not the answer
        self._call: int | None = None  # the index of the `final_answer` call followed
        self._field = _ResponseField()

    def feed(
        self, event: StreamEvent, where: dict[str, Any]
    ) -> list[AnswerDelta | AnswerDiscarded]:
        """The items one stream event gives (``where``: the run's ``run_id``, ``path`` and
        ``iteration``)."""
        if not self.enabled:
            return []
        if isinstance(event, TextDelta):
            return [] if self._calling else self._show(self._text.feed(event.text), where)
        if not isinstance(event, ToolCallDelta):
            return []  # a refusal is not streamed: if it becomes the answer, it comes whole
        items: list[AnswerDelta | AnswerDiscarded] = []
        if not self._calling:
            self._calling = True
            items += self.drop("the reply went on to call a tool", where)
        if self._call is None and event.name == FINAL_ANSWER:
            self._call = event.index
        if event.index == self._call:
            items += self._show(self._field.feed(event.arguments), where)
        return items

    def drop(self, reason: str, where: dict[str, Any]) -> list[AnswerDelta | AnswerDiscarded]:
        """Take back what was shown (nothing to say when nothing was)."""
        if not self.shown:
            return []
        self.shown = []
        return [AnswerDiscarded(reason=reason, **where)]

    def settle(self, answer: object, where: dict[str, Any]) -> list[AnswerDelta | AnswerDiscarded]:
        """The answer was given: the items after which what was shown is exactly ``answer``
        (a typed answer is not text: what was shown, if anything, is taken back)."""
        if not isinstance(answer, str):
            return self.drop("the answer is not text", where)
        shown = "".join(self.shown)
        if answer == shown:
            return []
        items: list[AnswerDelta | AnswerDiscarded] = []
        if not answer.startswith(shown):
            items += self.drop("the answer differs from the text streamed", where)
            shown = ""
        return items + self._show(answer[len(shown) :], where)

    def _show(self, text: str, where: dict[str, Any]) -> list[AnswerDelta | AnswerDiscarded]:
        if not text:
            return []
        self.shown.append(text)
        return [AnswerDelta(text=text, **where)]


class _Trimmed:
    """Text as it streams, without its leading and trailing whitespace (held back until more
    text follows), as a text answer is taken."""

    def __init__(self) -> None:
        self._started = False
        self._held = ""

    def feed(self, piece: str) -> str:
        if not self._started:
            piece = piece.lstrip()
            if not piece:
                return ""
            self._started = True
        text = self._held + piece
        body = text.rstrip()
        self._held = text[len(body) :]
        return body


_JSON_SPACE = " \t\n\r"
_OPENING = ("{", '"response"', ":", '"')


class _ResponseField:
    """The text of the ``response`` field of a JSON object, decoded as the object streams in.

    It follows ``{"response": "…`` (the field first, as models write ``final_answer``'s one
    argument) and gives the decoded text up to the last complete character; anything else
    (another field first, a broken escape) ends it, and the answer then comes whole when it
    is given.
    """

    def __init__(self) -> None:
        self._raw = ""
        self._at = 0  # where the undecoded rest of the value starts in `_raw`
        self._state: Literal["opening", "value", "over"] = "opening"

    def feed(self, piece: str) -> str:
        if self._state == "over":
            return ""
        self._raw += piece
        if self._state == "opening":
            at = _opening(self._raw)
            if at is None:
                return ""
            if at < 0:
                self._state = "over"
                return ""
            self._at, self._state = at, "value"
        return self._decode()

    def _decode(self) -> str:
        raw, end, closed = self._raw, self._at, False
        while end < len(raw):
            if raw[end] == '"':
                closed = True
                break
            size = _escape_size(raw, end) if raw[end] == "\\" else 1
            if size is None:
                break  # an escape not complete yet
            end += size
        try:
            text = json.loads(f'"{raw[self._at : end]}"', strict=False)
        except ValueError:
            self._state = "over"
            return ""
        self._at = end
        if closed:
            self._state = "over"
        return str(text)


def _opening(raw: str) -> int | None:
    """Where the value of ``{"response": "`` starts in ``raw``; ``None`` while ``raw`` may
    still become that opening, ``-1`` once it cannot."""
    at = 0
    for token in _OPENING:
        while at < len(raw) and raw[at] in _JSON_SPACE:
            at += 1
        found = raw[at : at + len(token)]
        if found != token:
            return None if at + len(found) == len(raw) and token.startswith(found) else -1
        at += len(token)
    return at


def _escape_size(raw: str, at: int) -> int | None:
    """The length of the escape at ``raw[at]`` (a backslash); ``None`` when it is not complete
    yet (a high surrogate waits for its low half)."""
    if at + 1 >= len(raw):
        return None
    if raw[at + 1] != "u":
        return 2
    if at + 6 > len(raw):
        return None
    try:
        code = int(raw[at + 2 : at + 6], 16)
    except ValueError:
        return 6  # broken: the decoding says so
    if not 0xD800 <= code <= 0xDBFF:
        return 6
    after = raw[at + 6 : at + 12]
    if not after.startswith("\\u"[: len(after)]):
        return 6  # a lone high surrogate
    return None if len(after) < 6 else 12


# ---------------------------------------------------------------------------------------------
# The stream


class RunStream(Generic[OutputT]):
    """One run, streamed: ``async with agent.run_stream(prompt) as stream: async for item in
    stream``.

    Entering starts the run in a task of its own; iterating yields its events and the answer's
    text pieces (``StreamItem``), each handed over before the run goes on. The last item is
    the ``run.finish`` event; then the iteration ends, or raises the error ``agent.run`` would
    have raised. ``output`` is the ``AgentOutput`` once the run answered; ``await
    stream.result()`` reads what is left and returns it.

    Leaving the ``async with`` block (a ``break``, an exception) or ``await stream.aclose()``
    before the end cancels the run where it is: a running tool is cancelled (its cleanup
    runs), the model's stream is closed, and no task is left behind.
    """

    def __init__(self, start: Callable[[Sink], Awaitable[AgentOutput[OutputT]]]) -> None:
        self._start = start
        self._state: Literal["new", "running", "ended", "closed"] = "new"
        self._group: TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None  # the run's: cancelling it stops the run
        self._done: anyio.Event | None = None  # set once the run has unwound
        self._send: MemoryObjectSendStream[StreamItem] | None = None
        self._receive: MemoryObjectReceiveStream[StreamItem] | None = None
        self._output: AgentOutput[OutputT] | None = None
        self._error: Exception | None = None
        self._raised = False

    def __repr__(self) -> str:
        return f"RunStream(<{self._state}>)"

    # -- the context ------------------------------------------------------------------------

    async def __aenter__(self) -> RunStream[OutputT]:
        if self._state != "new":
            raise PolicyError(
                "this run stream was entered already",
                hint="call `agent.run_stream(...)` again for another run",
            )
        self._send, self._receive = anyio.create_memory_object_stream[StreamItem](0)
        self._scope, self._done = anyio.CancelScope(), anyio.Event()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        self._state = "running"
        group.start_soon(self._produce)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
        group, self._group = self._group, None
        if group is not None:
            # The run has unwound and raises nothing (its error is the consumer's to read):
            # what leaves the block is the block's own exception, never wrapped in a group.
            await group.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Stop reading: a run still going is cancelled, and this returns once it unwound."""
        if self._scope is None or self._done is None:
            self._state = "closed"
            return
        self._scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._done.wait()
        if self._receive is not None:
            self._receive.close()
        if self._state == "running":
            self._state = "closed"

    async def _produce(self) -> None:
        # INVARIANT: started by __aenter__, after the channel and the scope were made
        assert self._send is not None and self._scope is not None and self._done is not None
        try:
            with self._scope:
                try:
                    self._output = await self._start(self._send.send)
                except Exception as exc:  # the consumer gets it after the run's last event
                    self._error = exc
        finally:
            self._send.close()
            self._done.set()

    # -- iterating --------------------------------------------------------------------------

    def __aiter__(self) -> RunStream[OutputT]:
        return self

    async def __anext__(self) -> StreamItem:
        if self._state == "new" or self._receive is None:
            raise PolicyError(
                "a run stream is read inside `async with`",
                hint="`async with agent.run_stream(prompt) as stream: async for item in"
                " stream: ...` (leaving the block stops the run if it is still going)",
            )
        if self._state == "running":
            try:
                return await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._state = "ended"
        if self._state == "ended" and self._error is not None and not self._raised:
            self._raised = True  # once, as a generator does; `result()` raises it again
            raise self._error
        raise StopAsyncIteration

    async def result(self) -> AgentOutput[OutputT]:
        """Read the rest of the stream (dropping it) and return the output; raises what the
        run raised, as ``agent.run`` does."""
        async for _ in self:
            pass
        if self._error is not None:
            raise self._error
        return self.output

    @property
    def output(self) -> AgentOutput[OutputT]:
        """The run's ``AgentOutput``, once the stream has ended with the answer."""
        if self._output is not None:
            return self._output
        if self._error is not None:
            raise PolicyError(
                f"the run has no output: it failed with {type(self._error).__name__}",
                hint="`await stream.result()` raises the run's error",
            )
        if self._state == "closed":
            raise PolicyError("the run has no output: the stream was closed before the run ended")
        raise PolicyError(
            "the run has not ended yet",
            hint="read the stream to its end, or `await stream.result()`",
        )

    @property
    def error(self) -> Exception | None:
        """The error the run ended with (what ``agent.run`` would have raised), if it failed."""
        return self._error
