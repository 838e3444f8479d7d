"""Chat completions on the wire: a ``ChatRequest`` as a request body, a reply as a ``ChatResponse``.

Pure functions over plain JSON values. ``OpenAIChatModel`` hands the body to the openai SDK
and parses what comes back here; ``ScriptedChatModel`` and the test server render their
scripts into the same JSON and parse it with the same code, so the three read every reply,
broken ones included, the same way.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any, get_args

from backends._json import parse_json_object
from backends.base import (
    ChatRequest,
    ChatResponse,
    FinishReason,
    RefusalDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from backends.errors import (
    ArgumentsError,
    BackendConnectionError,
    BackendStatusError,
    BadResponseError,
)
from backends.messages import (
    AnyToolCall,
    AssistantMessage,
    InvalidToolCall,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from backends.tools import (
    ResponseFormat,
    ToolChoice,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
)

__all__ = [
    "StreamAssembler",
    "chunk_not_json",
    "decode_body",
    "message_from_wire",
    "message_to_wire",
    "parse_completion",
    "request_body",
    "status_error",
    "tool_choice_to_wire",
]

_FINISH_REASONS: frozenset[str] = frozenset(get_args(FinishReason))
_URL_HINT = "check `base_url`: it must point at an OpenAI-compatible API, usually ending in `/v1`"
_SHAPE_HINT = "the server is not fully OpenAI-compatible here, or it failed: read its log"


def _excerpt(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Requests


def request_body(
    request: ChatRequest, *, model: str, stream: bool = False, send_auto: bool = True
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for ``request``.

    ``send_auto=False`` leaves ``tool_choice`` out instead of sending ``"auto"`` (the
    default of chat completions) for servers that reject the field.
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [message_to_wire(message) for message in request.messages],
    }
    if request.tools:
        body["tools"] = [_tool_to_wire(tool) for tool in request.tools]
        if send_auto or not isinstance(request.tool_choice, ToolChoiceAuto):
            body["tool_choice"] = tool_choice_to_wire(request.tool_choice)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        body["response_format"] = _response_format_to_wire(request.response_format)
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def message_to_wire(message: Message) -> dict[str, Any]:
    """One message as chat completions spells it."""
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
    wire: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [_call_to_wire(call) for call in message.tool_calls]
    return wire


def _call_to_wire(call: AnyToolCall) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
    else:  # the model sees what it sent; the tool result tells it what was wrong
        arguments = call.raw_arguments
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def message_from_wire(wire: Mapping[str, Any]) -> Message:
    """The message a chat completions message object stands for (the test server's view)."""
    role = wire.get("role")
    content = wire.get("content")
    if role in ("system", "developer"):
        return SystemMessage(_content_text(content) or "")
    if role == "user":
        return UserMessage(_content_text(content) or "")
    if role == "tool":
        return ToolResultMessage(str(wire.get("tool_call_id")), _content_text(content) or "")
    if role == "assistant":
        calls = wire.get("tool_calls") or []
        parsed = tuple(_plain(_parse_call(i, call, cut_off=False)) for i, call in enumerate(calls))
        text = _content_text(content)
        return AssistantMessage(
            content="" if text is None and not parsed else text, tool_calls=parsed
        )
    raise BadResponseError(f"unknown message role `{_excerpt(role)}`", hint=_SHAPE_HINT)


def _plain(call: AnyToolCall) -> AnyToolCall:
    """A call from history as it was first built: valid JSON text is not worth keeping."""
    if isinstance(call, ToolCall) and not call.repaired:
        return ToolCall(call.id, call.name, call.arguments)
    return call


def _tool_to_wire(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = dict(tool.parameters)
    return {"type": "function", "function": function}


def tool_choice_to_wire(choice: ToolChoice) -> str | dict[str, Any]:
    """``tool_choice`` as chat completions spells it (``allowed`` is ``allowed_tools``)."""
    if isinstance(choice, ToolChoiceAuto | ToolChoiceNone | ToolChoiceRequired):
        return choice.kind
    if isinstance(choice, ToolChoiceTool):
        return {"type": "function", "function": {"name": choice.name}}
    tools = [{"type": "function", "function": {"name": name}} for name in choice.tools]
    return {"type": "allowed_tools", "allowed_tools": {"mode": choice.mode, "tools": tools}}


def _response_format_to_wire(response_format: ResponseFormat) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "name": response_format.name,
        "schema": dict(response_format.schema),
        "strict": response_format.strict,
    }
    if response_format.description is not None:
        schema["description"] = response_format.description
    return {"type": "json_schema", "json_schema": schema}


# ---------------------------------------------------------------------------------------------
# Replies


def decode_body(text: str) -> object:
    """The JSON value of a reply body, or ``BadResponseError`` when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise BadResponseError(
            f"the server's reply is not JSON: `{_excerpt(text)}`", hint=_URL_HINT
        ) from error


def chunk_not_json(text: str) -> BadResponseError:
    """The error for a streamed ``data:`` payload that is not JSON."""
    return BadResponseError(
        f"the server sent a stream chunk that is not JSON: `{_excerpt(text)}`", hint=_SHAPE_HINT
    )


def parse_completion(body: object) -> ChatResponse:
    """The ``ChatResponse`` of a chat completion object, or a ``BadResponseError``."""
    if not isinstance(body, Mapping):
        raise BadResponseError(
            f"the server's reply is not a JSON object: `{_excerpt(body)}`", hint=_URL_HINT
        )
    choices = body.get("choices")
    if choices is None:
        error = body.get("error")
        if error is not None:
            raise BadResponseError(
                f"the server answered with an error: `{_error_text(error)}`", hint=_SHAPE_HINT
            )
        raise BadResponseError(
            f"the server's reply has no `choices`: `{_excerpt(body)}`", hint=_URL_HINT
        )
    if not isinstance(choices, list):
        raise BadResponseError(
            f"the server's `choices` is not a list: `{_excerpt(choices)}`", hint=_SHAPE_HINT
        )
    if not choices:
        raise BadResponseError(
            "the server returned no choices",
            hint="the model produced no reply: retry, or read the server's log",
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(message, Mapping):
        raise BadResponseError(
            f"the server's choice has no `message`: `{_excerpt(choice)}`", hint=_SHAPE_HINT
        )
    finish = _finish_reason(choice.get("finish_reason"))
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise BadResponseError(
            f"the server's `tool_calls` is not a list: `{_excerpt(raw_calls)}`", hint=_SHAPE_HINT
        )
    calls = tuple(
        _parse_call(index, call, cut_off=finish == "length") for index, call in enumerate(raw_calls)
    )
    refusal = message.get("refusal")
    model = body.get("model")
    return ChatResponse(
        text=_content_text(message.get("content")),
        tool_calls=calls,
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        finish_reason=finish,
        usage=_usage(body.get("usage")),
        model=model if isinstance(model, str) else None,
    )


def _content_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        texts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "".join(t for t in texts if isinstance(t, str))
    raise BadResponseError(
        f"the server's message content is not text: `{_excerpt(content)}`", hint=_SHAPE_HINT
    )


def _finish_reason(value: object) -> FinishReason | None:
    if value is None:
        return None
    if isinstance(value, str) and value in _FINISH_REASONS:
        return value  # type: ignore[return-value]  # checked against the Literal's values
    if value == "function_call":
        return "tool_calls"
    return "other"


def _usage(value: object) -> Usage:
    if not isinstance(value, Mapping):
        return Usage()
    details = value.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(
        prompt_tokens=_count(value.get("prompt_tokens")),
        completion_tokens=_count(value.get("completion_tokens")),
        cached_prompt_tokens=_count(cached),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _parse_call(index: int, raw: object, *, cut_off: bool) -> AnyToolCall:
    if not isinstance(raw, Mapping):
        raise BadResponseError(
            f"the server's tool call {index} is not an object: `{_excerpt(raw)}`", hint=_SHAPE_HINT
        )
    function = raw.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        raise BadResponseError(
            f"the server's tool call {index} has no function name: `{_excerpt(raw)}`",
            hint=_SHAPE_HINT,
        )
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{uuid.uuid4().hex[:24]}"
    # INVARIANT: `function` is a Mapping here, since it gave a name
    assert isinstance(function, Mapping)
    arguments = function.get("arguments")
    if isinstance(arguments, Mapping):  # a few servers send an object instead of JSON text
        return ToolCall(call_id, name, dict(arguments))
    if arguments is None:
        return ToolCall(call_id, name, {})
    if not isinstance(arguments, str):
        text = json.dumps(arguments)
        return InvalidToolCall(call_id, name, text, f"arguments of `{name}` must be a JSON object")
    if cut_off:
        return _cut_off_call(call_id, name, arguments)
    try:
        value, repaired = parse_json_object(arguments)
    except ArgumentsError as error:
        return InvalidToolCall(call_id, name, arguments, f"`{name}`: {error.message}")
    return ToolCall(call_id, name, value, raw_arguments=arguments, repaired=repaired)


def _cut_off_call(call_id: str, name: str, arguments: str) -> AnyToolCall:
    """A reply cut at the token limit: complete JSON is kept, a torso is not repaired."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return ToolCall(call_id, name, value, raw_arguments=arguments)
    return InvalidToolCall(
        call_id,
        name,
        arguments,
        f"the arguments of `{name}` were cut off at the token limit: send shorter arguments",
    )


def _error_text(error: object) -> str:
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return _excerpt(error["message"], 200)
    return _excerpt(error, 200)


def status_error(
    status: int, body: object, *, retry_after: float | None = None
) -> BackendStatusError:
    """The ``BackendStatusError`` for an HTTP error answer (``body``: its JSON, or text)."""
    detail = body.get("error", body) if isinstance(body, Mapping) else body
    text = _error_text(detail) if detail not in (None, "") else "no message"
    return BackendStatusError(
        f"the server answered {status}: `{text}`",
        status_code=status,
        retry_after=retry_after,
        parameter=named_parameter(detail),
        hint=_STATUS_HINTS.get(status, _STATUS_HINTS[500] if status >= 500 else None),
    )


# How a server's error may spell the request parameters the forcing layer can drop, and the
# parameter each spelling names; the more specific first (`allowed_tools` is a form of
# `tool_choice`, a `json_schema` one of `response_format`).
_SPELLINGS = (
    ("allowed_tools", "allowed_tools"),
    ("tool_choice", "tool_choice"),
    ("json_schema", "response_format"),
    ("response_format", "response_format"),
    ("parallel_tool_calls", "parallel_tool_calls"),
)
_WORD_JOINERS = re.compile(r"[\s\-.]+")


def named_parameter(detail: object) -> str | None:
    """The request parameter an error names: its ``param`` field when that is one of ours,
    else the first of ours its message or code spells (``tool choice``, ``tool-choice`` and
    ``tool_choice`` alike), else ``None``."""
    texts: list[str] = []
    if isinstance(detail, Mapping):
        for key in ("param", "message", "code", "type"):
            value = detail.get(key)
            if isinstance(value, str):
                texts.append(value)
    elif isinstance(detail, str):
        texts.append(detail)
    for text in texts:
        flat = _WORD_JOINERS.sub("_", text.lower())
        for spelling, parameter in _SPELLINGS:
            if spelling in flat:
                return parameter
    return None


_STATUS_HINTS = {
    400: "the server rejected the request; its message says which part",
    401: "check the API key: `api_key=` or the `OPENAI_API_KEY` environment variable",
    403: "the API key may not use this model or endpoint",
    404: "check `model` and `base_url` (which usually ends in `/v1`)",
    408: "the server timed out; retry, or send a shorter request",
    413: "the request is too large for the server: shorten the conversation",
    422: "the server could not process the request; its message says which part",
    429: "the server is rate limiting: wait, or raise the retry budget",
    500: "the server failed; retry later, or read the server's log",
}


# ---------------------------------------------------------------------------------------------
# Streams


class StreamAssembler:
    """Turns streamed chunk objects into events, and the whole stream into one reply."""

    def __init__(self) -> None:
        self._text: list[str] | None = None  # `None` until a `content` text came, even ""
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: object = None
        self._usage: object = None
        self._model: object = None
        self._chunks = 0
        self._seen_choice = False

    def feed(self, chunk: object) -> list[StreamEvent]:
        """The events of one chunk (a decoded ``data:`` object)."""
        self._chunks += 1
        if not isinstance(chunk, Mapping):
            raise BadResponseError(
                f"stream chunk {self._chunks} is not a JSON object: `{_excerpt(chunk)}`",
                hint=_SHAPE_HINT,
            )
        if chunk.get("error") is not None:
            raise BadResponseError(
                f"the server reported an error mid-stream: `{_error_text(chunk['error'])}`",
                hint=_SHAPE_HINT,
            )
        self._model = chunk.get("model", self._model)
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise BadResponseError(
                f"stream chunk {self._chunks}: `choices` is not a list", hint=_SHAPE_HINT
            )
        events: list[StreamEvent] = []
        for choice in choices:
            if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        return events

    def _choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        self._seen_choice = True
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        delta = choice.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise BadResponseError(
                f"stream chunk {self._chunks}: `delta` is not an object", hint=_SHAPE_HINT
            )
        events: list[StreamEvent] = []
        if isinstance(delta.get("content"), str):
            # An empty `content` still says the reply has text (`""`, as `complete` reads it).
            self._text = self._text if self._text is not None else []
            if delta["content"]:
                self._text.append(delta["content"])
                events.append(TextDelta(delta["content"]))
        if isinstance(delta.get("refusal"), str) and delta["refusal"]:
            self._refusal.append(delta["refusal"])
            events.append(RefusalDelta(delta["refusal"]))
        for piece in delta.get("tool_calls") or []:
            if isinstance(piece, Mapping):
                events.append(self._call_piece(piece))
        return events

    def _call_piece(self, piece: Mapping[str, Any]) -> ToolCallDelta:
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = max(self._calls, default=0) if not piece.get("id") else len(self._calls)
        slot = self._calls.setdefault(index, {"id": None, "name": None, "arguments": []})
        raw_function = piece.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, Mapping) else {}
        new_id = piece.get("id") if isinstance(piece.get("id"), str) and not slot["id"] else None
        name = function.get("name")
        new_name = name if isinstance(name, str) and name and not slot["name"] else None
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else ""
        slot["id"] = slot["id"] or new_id
        slot["name"] = slot["name"] or new_name
        slot["arguments"].append(text)
        return ToolCallDelta(index=index, id=new_id, name=new_name, arguments=text)

    def finish(self) -> ChatResponse:
        """The whole reply, parsed exactly as a non-streamed one.

        A stream that ends before its finish reason came was cut off (the connection closed
        early, or a proxy ended it): what arrived is not the reply, and is not passed on as one.
        """
        if not self._seen_choice:
            raise BadResponseError(
                "the server's stream ended without a choice",
                hint="the model produced no reply: retry, or read the server's log",
            )
        if self._finish is None:
            raise BackendConnectionError(
                f"the server's stream ended before the reply did (after {self._chunks} chunks,"
                " with no finish reason): the connection was cut",
                hint="the reply is incomplete and was not used: retry the request",
            )
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) if self._text is not None else None,
            "refusal": "".join(self._refusal) or None,
        }
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for _, slot in sorted(self._calls.items())
            ]
        choice = {"index": 0, "message": message, "finish_reason": self._finish}
        return parse_completion({"choices": [choice], "usage": self._usage, "model": self._model})
