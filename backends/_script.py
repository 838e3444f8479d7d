"""Script entries: what ``ScriptedChatModel`` and ``OpenAICompatibleServer`` answer.

There is one entry per request.

An entry is a string (a text reply), a ``ChatResponse``, an exception (``ScriptedChatModel``
raises it), or a dict with these keys, all optional:

``text``            the reply's text (``content`` is an alias)
``tool_calls``      a list of ``{"name", "arguments", "id"}``; ``arguments`` is an object, or a
                    string sent as it is (broken JSON on purpose); any name, known or not
``refusal``         a refusal message
``finish_reason``   defaults to ``tool_calls`` when there are calls, else ``stop``
``usage``           ``{"prompt_tokens", "completion_tokens", "cached_prompt_tokens"}``
``error``           an HTTP status, or ``{"status", "message", "retry_after", "type", "code",
                    "param"}`` (a 400 whose ``param`` or message names ``tool_choice``,
                    ``response_format`` or ``parallel_tool_calls`` makes the forcing layer
                    drop that feature)
``malformed``       a broken reply: ``not_json``, ``bad_json``, ``not_object``, ``no_choices``,
                    ``empty_choices`` or ``no_message``
``body``            any JSON value, sent verbatim as the reply body
``delay``           seconds to wait before answering
``disconnect``      ``true``: close the connection without an answer
``drop_after``      a streamed answer breaks off after this many ``data:`` payloads: the
                    connection drops mid-stream (a request that is not streamed gets no answer)
``end_after``       a streamed answer ends cleanly after this many payloads, without the rest
                    (no finish reason, no ``[DONE]``): a truncated event stream

Both owners render an entry into chat completions JSON here and read it back through
``_wire``, so a script means the same thing offline and over HTTP.
"""

from __future__ import annotations

import inspect
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from backends.base import (
    ChatResponse,
)
from backends.errors import ScriptExhaustedError
from backends.messages import (
    InvalidToolCall,
    ToolCall,
)
from ruleengine.errors import PolicyError

__all__ = [
    "Malformed",
    "Reply",
    "Script",
    "ScriptEntry",
    "error_body",
    "read_entry",
    "render_body",
    "render_chunks",
]

ScriptEntry: TypeAlias = "str | Mapping[str, Any] | ChatResponse | BaseException"
Malformed: TypeAlias = Literal[
    "not_json", "bad_json", "not_object", "no_choices", "empty_choices", "no_message"
]
_MALFORMED: frozenset[str] = frozenset(get_args(Malformed))
_KEYS = (
    "text",
    "content",
    "tool_calls",
    "refusal",
    "finish_reason",
    "usage",
    "error",
    "malformed",
    "body",
    "delay",
    "disconnect",
    "drop_after",
    "end_after",
)
_NO_BODY = object()
_PIECE = 12  # characters per streamed piece: several chunks even for short replies


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call of a script entry; ``arguments`` is the JSON text put on the wire."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ScriptedError:
    """An HTTP error a script entry answers with."""

    status: int
    message: str
    retry_after: float | None = None
    type: str = "server_error"
    code: str | None = None
    param: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """One validated script entry."""

    text: str | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()
    refusal: str | None = None
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    error: ScriptedError | None = None
    malformed: Malformed | None = None
    body: object = _NO_BODY
    delay: float = 0.0
    disconnect: bool = False
    exception: BaseException | None = None
    drop_after: int | None = None
    end_after: int | None = None

    @property
    def has_body(self) -> bool:
        """Whether the entry gives a verbatim body."""
        return self.body is not _NO_BODY

    @property
    def cut(self) -> tuple[int, Literal["drop", "end"]] | None:
        """Where a streamed answer stops early, and how: the connection drops, or the stream
        ends cleanly; ``None`` when it is sent whole."""
        if self.drop_after is not None:
            return self.drop_after, "drop"
        if self.end_after is not None:
            return self.end_after, "end"
        return None


def read_entry(entry: object, where: str, *, exceptions: bool = True) -> Reply:
    """Validate one entry; ``where`` names it in errors (``script entry 3``)."""
    if isinstance(entry, str):
        return Reply(text=entry)
    if isinstance(entry, ChatResponse):
        return _from_response(entry)
    if isinstance(entry, BaseException):
        if not exceptions:
            raise PolicyError(
                f"{where}: an exception cannot be sent over HTTP",
                hint='use `{"error": 500}` or `{"disconnect": True}`',
            )
        return Reply(exception=entry)
    if not isinstance(entry, Mapping):
        raise PolicyError(
            f"{where}: must be text, a dict or a ChatResponse: got `{entry!r:.80}`",
            hint='e.g. `{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}`',
        )
    unknown = [str(key) for key in entry if key not in _KEYS]
    if unknown:
        raise PolicyError(
            f"{where}: unknown key `{unknown[0]}`", hint=f"use some of `{', '.join(_KEYS)}`"
        )
    text = entry.get("text", entry.get("content"))
    return Reply(
        text=_optional_text(text, where, "text"),
        tool_calls=_calls(entry.get("tool_calls", ()), where),
        refusal=_optional_text(entry.get("refusal"), where, "refusal"),
        finish_reason=_optional_text(entry.get("finish_reason"), where, "finish_reason"),
        usage=_usage(entry.get("usage"), where),
        error=_error(entry.get("error"), where),
        malformed=_malformed(entry.get("malformed"), where),
        body=_body(entry, where),
        delay=_delay(entry.get("delay", 0), where),
        disconnect=_flag(entry.get("disconnect", False), where, "disconnect"),
        drop_after=_cut(entry, where, "drop_after"),
        end_after=_cut(entry, where, "end_after"),
    )


def _from_response(response: ChatResponse) -> Reply:
    calls = []
    for call in response.tool_calls:
        if isinstance(call, ToolCall):
            arguments = call.raw_arguments or json.dumps(dict(call.arguments))
        else:
            assert isinstance(call, InvalidToolCall)
            arguments = call.raw_arguments
        calls.append(ScriptedCall(call.name, arguments, call.id))
    usage = response.usage
    return Reply(
        text=response.text,
        tool_calls=tuple(calls),
        refusal=response.refusal,
        finish_reason=response.finish_reason,
        usage={
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cached_prompt_tokens": usage.cached_prompt_tokens,
        },
    )


def _optional_text(value: object, where: str, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise PolicyError(f"{where}: `{key}` must be text: got `{value!r:.80}`")
    return value


def _calls(value: object, where: str) -> tuple[ScriptedCall, ...]:
    if isinstance(value, str | Mapping) or not isinstance(value, Sequence):
        raise PolicyError(f"{where}: `tool_calls` must be a list: got `{value!r:.80}`")
    calls = []
    for position, call in enumerate(value):
        label = f"{where}: tool call {position}"
        if not isinstance(call, Mapping):
            raise PolicyError(f"{label} must be a dict: got `{call!r:.80}`")
        extra = [str(key) for key in call if key not in ("name", "arguments", "id")]
        if extra:
            raise PolicyError(
                f"{label}: unknown key `{extra[0]}`", hint="use `name`, `arguments`, `id`"
            )
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise PolicyError(f"{label}: `name` must be non-empty text: got `{name!r:.80}`")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise PolicyError(f"{label}: `arguments` are not JSON: {error}") from error
        call_id = call.get("id")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise PolicyError(f"{label}: `id` must be non-empty text: got `{call_id!r:.80}`")
        calls.append(ScriptedCall(name, arguments, call_id))
    return tuple(calls)


def _usage(value: object, where: str) -> Mapping[str, int] | None:
    if value is None:
        return None
    keys = ("prompt_tokens", "completion_tokens", "cached_prompt_tokens")
    if not isinstance(value, Mapping) or any(key not in keys for key in value):
        raise PolicyError(f"{where}: `usage` must be a dict of `{', '.join(keys)}`")
    for key, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PolicyError(f"{where}: `usage.{key}` must be a whole number ≥ 0")
    return dict(value)


def _error(value: object, where: str) -> ScriptedError | None:
    if value is None:
        return None
    spec: Mapping[str, Any] = {"status": value} if isinstance(value, int) else value  # type: ignore[assignment]
    if not isinstance(spec, Mapping):
        raise PolicyError(f"{where}: `error` must be a status or a dict: got `{value!r:.80}`")
    status = spec.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise PolicyError(f"{where}: `error.status` must be an HTTP error status from 400 to 599")
    keys = ("status", "message", "retry_after", "type", "code", "param")
    extra = [str(k) for k in spec if k not in keys]
    if extra:
        raise PolicyError(f"{where}: `error` has an unknown key `{extra[0]}`")
    retry_after = spec.get("retry_after")
    if retry_after is not None:
        retry_after = _delay(retry_after, where, key="error.retry_after")
    message = spec.get("message", f"scripted error {status}")
    kind = spec.get("type", "invalid_request_error" if status < 500 else "server_error")
    return ScriptedError(
        status,
        _optional_text(message, where, "error.message") or "",
        retry_after,
        _optional_text(kind, where, "error.type") or "",
        _optional_text(spec.get("code"), where, "error.code"),
        _optional_text(spec.get("param"), where, "error.param"),
    )


def _malformed(value: object, where: str) -> Malformed | None:
    if value is None:
        return None
    if value not in _MALFORMED:
        raise PolicyError(
            f"{where}: unknown `malformed` kind `{value!r:.80}`",
            hint=f"use one of `{', '.join(sorted(_MALFORMED))}`",
        )
    return value  # type: ignore[return-value]  # checked against the Literal's values


def _body(entry: Mapping[str, Any], where: str) -> object:
    if "body" not in entry:
        return _NO_BODY
    try:
        json.dumps(entry["body"], allow_nan=False)
    except (TypeError, ValueError) as error:
        raise PolicyError(f"{where}: `body` is not JSON: {error}") from error
    return entry["body"]


def _delay(value: object, where: str, *, key: str = "delay") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 3600:
        raise PolicyError(f"{where}: `{key}` must be seconds from 0 to 3600: got `{value!r:.80}`")
    if not math.isfinite(value):
        raise PolicyError(f"{where}: `{key}` must be finite")
    return float(value)


def _cut(entry: Mapping[str, Any], where: str, key: str) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if "drop_after" in entry and "end_after" in entry:
        raise PolicyError(f"{where}: `drop_after` and `end_after` exclude each other")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PolicyError(f"{where}: `{key}` must be a whole number ≥ 0: got `{value!r:.80}`")
    return value


def _flag(value: object, where: str, key: str) -> bool:
    if not isinstance(value, bool):
        raise PolicyError(f"{where}: `{key}` must be true or false: got `{value!r:.80}`")
    return value


# ---------------------------------------------------------------------------------------------
# The script itself


class Script:
    """A list of validated replies, or a function of the request; thread-safe."""

    def __init__(self, script: object, *, exceptions: bool, owner: str) -> None:
        self._function: Callable[[Any], object] | None = None
        self._replies: tuple[Reply, ...] = ()
        if callable(script):
            self._function = script
        elif isinstance(script, str | bytes | Mapping) or not isinstance(script, Sequence):
            raise PolicyError(
                f"{owner}: the script must be a list of entries or a function of the request:"
                f" got `{script!r:.80}`",
                hint='e.g. `["plain text reply", {"tool_calls": [...]}]`',
            )
        else:
            self._replies = tuple(
                read_entry(entry, f"script entry {index}", exceptions=exceptions)
                for index, entry in enumerate(script)
            )
        self._exceptions = exceptions
        self._lock = threading.Lock()
        self.used = 0
        """How many entries (or function calls) have been taken."""

    @property
    def remaining(self) -> int | None:
        """Entries not yet used; ``None`` for a function script."""
        return None if self._function is not None else len(self._replies) - self.used

    def take(self, argument: object) -> tuple[int, object]:
        """The request number (from 1) and its entry: a ``Reply``, or what the function gave."""
        with self._lock:
            self.used += 1
            number = self.used
        if self._function is None:
            if number > len(self._replies):
                raise ScriptExhaustedError(
                    f"the script has no reply for request {number}: it holds"
                    f" {len(self._replies)} entries",
                    hint="add an entry, or see in `requests` which request was one too many"
                    " (a fallback for a rejected feature makes one more)",
                )
            return number, self._replies[number - 1]
        return number, self._function(argument)

    def read(self, number: int, value: object) -> Reply:
        """Validate what a function script gave for request ``number``."""
        if inspect.isawaitable(value):
            raise PolicyError(
                f"script reply for request {number}: the function must not be async here"
            )
        return read_entry(value, f"script reply for request {number}", exceptions=self._exceptions)


# ---------------------------------------------------------------------------------------------
# Rendering as chat completions


def error_body(error: ScriptedError) -> dict[str, Any]:
    """The JSON body of an HTTP error answer, shaped as OpenAI's."""
    detail = {
        "message": error.message,
        "type": error.type,
        "param": error.param,
        "code": error.code,
    }
    return {"error": detail}


def render_body(reply: Reply, *, model: str, ids: Iterator[int]) -> tuple[str, str]:
    """The content type and the text of a 200 answer for ``reply``."""
    if reply.has_body:
        return "application/json", json.dumps(reply.body)
    broken = _broken_body(reply.malformed, model)
    if broken is not None:
        return broken
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    calls = _wire_calls(reply, ids)
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": _finish(reply)}
    body = {**_envelope(model, "chat.completion"), "choices": [choice], "usage": _wire_usage(reply)}
    return "application/json", json.dumps(body)


def _broken_body(kind: Malformed | None, model: str) -> tuple[str, str] | None:
    envelope = _envelope(model, "chat.completion")
    if kind == "not_json":
        return "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"
    if kind == "bad_json":
        return "application/json", '{"id": "chatcmpl-0", "choices": [{"index": 0, "mess'
    if kind == "not_object":
        return "application/json", '["not", "a", "completion"]'
    if kind == "no_choices":
        return "application/json", json.dumps(envelope)
    if kind == "empty_choices":
        return "application/json", json.dumps({**envelope, "choices": []})
    if kind == "no_message":
        choice = {"index": 0, "finish_reason": "stop"}
        return "application/json", json.dumps({**envelope, "choices": [choice]})
    return None


def render_chunks(reply: Reply, *, model: str, ids: Iterator[int]) -> list[str]:
    """The ``data:`` payloads of a streamed answer for ``reply`` (``[DONE]`` not included)."""
    if reply.has_body:  # one payload: e.g. an error object sent mid-stream
        return [json.dumps(reply.body)]
    if reply.malformed in ("not_json", "bad_json"):
        return [json.dumps(_chunk(model, {"role": "assistant", "content": "Hel"})), '{"choices": [']
    if reply.malformed == "not_object":
        return ['["not", "a", "chunk"]']
    if reply.malformed in ("no_choices", "empty_choices"):
        return [json.dumps({**_envelope(model, "chat.completion.chunk"), "choices": []})]
    # The first chunk's `content` is `""` when the reply has text, `null` when it has none.
    opening = "" if reply.text is not None else None
    chunks = [_chunk(model, {"role": "assistant", "content": opening})]
    for piece in _pieces(reply.text or ""):
        chunks.append(_chunk(model, {"content": piece}))
    for piece in _pieces(reply.refusal or ""):
        chunks.append(_chunk(model, {"refusal": piece}))
    for index, call in enumerate(_wire_calls(reply, ids)):
        head = {"index": index, "id": call["id"], "type": "function"}
        first = {**head, "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(_chunk(model, {"tool_calls": [first]}))
        for piece in _pieces(call["function"]["arguments"]):
            delta = {"index": index, "function": {"arguments": piece}}
            chunks.append(_chunk(model, {"tool_calls": [delta]}))
    chunks.append(_chunk(model, {}, finish_reason=_finish(reply)))
    usage = {
        **_envelope(model, "chat.completion.chunk"),
        "choices": [],
        "usage": _wire_usage(reply),
    }
    return [json.dumps(chunk) for chunk in chunks] + [json.dumps(usage)]


def _envelope(model: str, kind: str) -> dict[str, Any]:
    return {"id": "chatcmpl-scripted", "object": kind, "created": int(time.time()), "model": model}


def _chunk(
    model: str, delta: dict[str, Any], *, finish_reason: str | None = None
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {**_envelope(model, "chat.completion.chunk"), "choices": [choice]}


def _pieces(text: str) -> list[str]:
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)]


def _wire_calls(reply: Reply, ids: Iterator[int]) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_{next(ids)}",
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for call in reply.tool_calls
    ]


def _finish(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _wire_usage(reply: Reply) -> dict[str, Any]:
    usage = reply.usage or {}
    prompt = usage.get("prompt_tokens", 0)
    completion = usage.get("completion_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": usage.get("cached_prompt_tokens", 0)},
    }
