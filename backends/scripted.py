"""``ScriptedChatModel``: a chat model that replays a script, for tests and offline demos.

Each request takes the next script entry (see ``_script.py`` for every form an entry may
take), rendered into chat completions JSON and read back exactly as ``OpenAIChatModel`` reads
a server's reply. It goes through the same forcing layer as every backend, with capabilities
you choose, and records every request it saw in ``requests``.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio

from backends._script import (
    Reply,
    Script,
    ScriptEntry,
    error_body,
    read_entry,
    render_body,
    render_chunks,
)
from backends._wire import (
    StreamAssembler,
    chunk_not_json,
    decode_body,
    parse_completion,
    status_error,
)
from backends.base import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    StreamEnd,
    StreamEvent,
)
from backends.errors import BackendConnectionError
from backends.messages import (
    Message,
)
from backends.model import BaseChatModel
from backends.tools import (
    ResponseFormat,
    ToolChoice,
)
from ruleengine.errors import PolicyError

__all__ = ["RecordedRequest", "ScriptedChatModel"]

_ScriptFunction = Callable[[ChatRequest], "ScriptEntry | Awaitable[ScriptEntry]"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request as the scripted model received it (after the forcing layer)."""

    messages: tuple[Message, ...]
    """The conversation sent, with any instruction the forcing layer added."""
    tools: tuple[str, ...]
    """The names of the tools offered, in order."""
    tool_choice: ToolChoice
    """The ``tool_choice`` sent."""
    response_format: ResponseFormat | None
    """The structured-output format sent, if any."""
    parallel_tool_calls: bool | None
    """The ``parallel_tool_calls`` option sent, if any."""
    stream: bool
    """Whether the request was streamed."""
    request: ChatRequest
    """The whole request."""


class ScriptedChatModel(BaseChatModel):
    """Replies from a script: a list of entries, or a function of the request.

    ``ScriptedChatModel(["plain text", {"tool_calls": [{"name": "search", "arguments": {}}]}])``
    answers the first request with text and the second with a call. An entry may also be a
    broken reply on purpose: JSON in prose, broken arguments (a string), an unknown tool,
    several calls, a refusal, an HTTP error (``{"error": 429}``), a malformed body. A function
    script gets each ``ChatRequest`` and returns an entry (it may be async).
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry] | _ScriptFunction,
        *,
        capabilities: Capabilities | None = None,
        model: str = "scripted",
    ) -> None:
        super().__init__(capabilities=capabilities)
        if not isinstance(model, str) or not model.strip():
            raise PolicyError(f"`model` must be a non-empty name: got `{model!r:.80}`")
        self._script = Script(script, exceptions=True, owner="ScriptedChatModel")
        self._model = model
        self._ids = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        """Every request received, oldest first."""

    @property
    def remaining(self) -> int | None:
        """Script entries not used yet (``None`` for a function script)."""
        return self._script.remaining

    def __repr__(self) -> str:
        remaining = self._script.remaining
        script = "function" if remaining is None else f"{remaining} entries left"
        extra = (
            ""
            if self.declared_capabilities == Capabilities()
            else f", capabilities={self.declared_capabilities!r}"
        )
        return f"ScriptedChatModel(<{script}>{extra})"

    async def send(self, request: ChatRequest) -> ChatResponse:
        """Answer with the next entry, read as ``OpenAIChatModel`` reads a server's reply."""
        reply = await self._next(request, stream=False)
        _, text = render_body(reply, model=self._model, ids=self._ids)
        return parse_completion(decode_body(text))

    async def send_stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Answer with the next entry as a stream of chunks (cut short where it says so)."""
        reply = await self._next(request, stream=True)
        assembler = StreamAssembler()
        payloads = render_chunks(reply, model=self._model, ids=self._ids)
        cut = reply.cut
        for data in payloads if cut is None else payloads[: cut[0]]:
            try:
                chunk = json.loads(data)
            except ValueError as error:
                raise chunk_not_json(data) from error
            for event in assembler.feed(chunk):
                yield event
        if cut is not None and cut[1] == "drop":
            raise BackendConnectionError(
                f"the scripted server dropped the connection mid-stream, after {cut[0]} chunks",
                hint="the reply is incomplete and was not used",
            )
        yield StreamEnd(assembler.finish())

    async def _next(self, request: ChatRequest, *, stream: bool) -> Reply:
        self.requests.append(
            RecordedRequest(
                messages=request.messages,
                tools=tuple(tool.name for tool in request.tools),
                tool_choice=request.tool_choice,
                response_format=request.response_format,
                parallel_tool_calls=request.parallel_tool_calls,
                stream=stream,
                request=request,
            )
        )
        number, entry = self._script.take(request)
        if inspect.isawaitable(entry):
            entry = await entry
        reply = (
            entry
            if isinstance(entry, Reply)
            else read_entry(entry, f"script reply for request {number}")
        )
        if reply.delay:
            await anyio.sleep(reply.delay)
        if reply.exception is not None:
            raise reply.exception
        if reply.disconnect or (reply.cut is not None and not stream):
            raise BackendConnectionError(
                "the scripted server closed the connection without an answer"
            )
        if reply.error is not None:
            error = reply.error
            raise status_error(error.status, error_body(error), retry_after=error.retry_after)
        return reply
