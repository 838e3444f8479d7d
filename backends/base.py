"""The ``ChatModel`` protocol, and the request, reply and stream types every backend speaks.

Everything here is a frozen dataclass, validated once when built (a bad value raises
``PolicyError`` naming the field) and plain afterwards. Each backend maps these types to its
wire format (``_wire.py`` for chat completions); nothing here knows about HTTP or an SDK.
Messages live in ``messages.py``, tools and tool choices in ``tools.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, TypeAlias, get_args, runtime_checkable

from backends._check import as_tuple, dataclass_repr, fail, set_field, text
from backends.messages import (
    MESSAGE_TYPES,
    AnyToolCall,
    AssistantMessage,
    InvalidToolCall,
    Message,
    ToolCall,
    ToolResultMessage,
)
from backends.tools import (
    TOOL_CHOICE_KINDS,
    ResponseFormat,
    ToolChoice,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceKind,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
    to_tool_choice,
)

__all__ = [
    "Capabilities",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FEATURES",
    "Feature",
    "FinishReason",
    "RefusalDelta",
    "Route",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "Usage",
]

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "other"]
"""Why the model stopped; ``other`` stands for any value a server invents."""
Route: TypeAlias = Literal["native", "structured", "prompt"]
"""How a reply was obtained: as asked, through ``response_format``, or by prompt instructions."""
Feature: TypeAlias = Literal[
    "auto", "none", "required", "tool", "allowed", "response_format", "parallel_tool_calls"
]
"""A request feature a server may lack: a ``tool_choice`` form or an option."""
FEATURES: frozenset[Feature] = frozenset(get_args(Feature))


@dataclass(frozen=True, slots=True, init=False, repr=False)
class ChatRequest:
    """One call to a chat model: the conversation, the tools offered and the options."""

    messages: tuple[Message, ...]
    """The conversation so far, oldest first."""
    tools: tuple[ToolDefinition, ...]
    """The tools offered to the model, in order."""
    tool_choice: ToolChoice
    """What the model must do with the tools (strings are read by ``to_tool_choice``)."""
    response_format: ResponseFormat | None
    """Structured output for a text reply, if any."""
    parallel_tool_calls: bool | None
    """Whether several calls in one reply are welcome; ``None`` leaves the server's default."""
    max_tokens: int | None
    """A cap on the reply's tokens; ``None`` leaves the server's default."""
    temperature: float | None
    """Sampling temperature; ``None`` leaves the server's default."""

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDefinition] = (),
        tool_choice: ToolChoice | str = "auto",
        response_format: ResponseFormat | None = None,
        parallel_tool_calls: bool | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        set_field(self, "messages", _check_messages(messages))
        set_field(self, "tools", _check_tools(tools))
        set_field(self, "tool_choice", _check_choice(to_tool_choice(tool_choice), self.tools))
        if response_format is not None and not isinstance(response_format, ResponseFormat):
            raise fail(f"`response_format` must be a ResponseFormat: got `{response_format!r:.80}`")
        set_field(self, "response_format", response_format)
        if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
            raise fail(
                "`parallel_tool_calls` must be true, false or None:"
                f" got `{parallel_tool_calls!r:.80}`"
            )
        set_field(self, "parallel_tool_calls", parallel_tool_calls)
        set_field(self, "max_tokens", _check_max_tokens(max_tokens))
        set_field(self, "temperature", _check_temperature(temperature))

    def replace(self, **changes: Any) -> ChatRequest:
        """A copy with some fields changed (validated again)."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return ChatRequest(**values)

    def tool(self, name: str) -> ToolDefinition:
        """The offered tool called ``name``."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise fail(f"tool `{name}` is not offered in this request")

    def __repr__(self) -> str:
        shown = [f"messages=<{len(self.messages)} messages>"]
        if self.tools:
            shown.append(f"tools={[t.name for t in self.tools]!r}")
        if not isinstance(self.tool_choice, ToolChoiceAuto):
            shown.append(f"tool_choice={self.tool_choice!r}")
        for name in ("response_format", "parallel_tool_calls", "max_tokens", "temperature"):
            if getattr(self, name) is not None:
                shown.append(f"{name}={getattr(self, name)!r}")
        return f"ChatRequest({', '.join(shown)})"


def _check_messages(messages: object) -> tuple[Message, ...]:
    items = as_tuple(messages, "`messages`")
    if not items:
        raise fail("`messages` is empty", "start the conversation with a user message")
    call_ids: set[str] = set()
    for index, message in enumerate(items):
        if not isinstance(message, MESSAGE_TYPES):
            raise fail(
                f"message {index}: must be a System, User, Assistant or ToolResult message:"
                f" got `{message!r:.80}`"
            )
        if isinstance(message, AssistantMessage):
            call_ids.update(call.id for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage) and message.call_id not in call_ids:
            raise fail(
                f"message {index}: tool result for call `{message.call_id}`, which no earlier"
                " assistant message made",
                "answer each tool call after the assistant message that made it",
            )
    return items


def _check_tools(tools: object) -> tuple[ToolDefinition, ...]:
    items = as_tuple(tools, "`tools`")
    seen: set[str] = set()
    for index, tool in enumerate(items):
        if not isinstance(tool, ToolDefinition):
            raise fail(f"tool {index}: must be a ToolDefinition: got `{tool!r:.80}`")
        if tool.name in seen:
            raise fail(f"tool `{tool.name}` is offered twice")
        seen.add(tool.name)
    return items


def _check_choice(choice: ToolChoice, tools: tuple[ToolDefinition, ...]) -> ToolChoice:
    offered = [tool.name for tool in tools]
    named: tuple[str, ...] = ()
    if isinstance(choice, ToolChoiceTool):
        named = (choice.name,)
    elif isinstance(choice, ToolChoiceAllowed):
        named = choice.tools
    elif isinstance(choice, ToolChoiceRequired) and not tools:
        raise fail("`tool_choice` is `required` but no tool is offered")
    for name in named:
        if name not in offered:
            raise fail(
                f"`tool_choice` names `{name}`, which is not offered:"
                f" offered: `{', '.join(offered) or 'none'}`"
            )
    return choice


def _check_max_tokens(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise fail(f"`max_tokens` must be a positive whole number: got `{value!r:.80}`")
    return value


def _check_temperature(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 2:
        raise fail(f"`temperature` must be a number from 0 to 2: got `{value!r:.80}`")
    return float(value)


# ---------------------------------------------------------------------------------------------
# Replies


@dataclass(frozen=True, slots=True, repr=False)
class Usage:
    """Tokens a call consumed, as the server reported them (zeros when it did not)."""

    prompt_tokens: int = 0
    """Tokens of the request."""
    completion_tokens: int = 0
    """Tokens of the reply."""
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, those served from the server's prompt cache."""

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise fail(f"usage: `{name}` must be a whole number ≥ 0: got `{value!r:.80}`")

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
        )

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ChatResponse:
    """What the model answered: text, tool calls, or a refusal, and what it cost."""

    text: str | None = None
    """The text of the reply, if any."""
    tool_calls: tuple[AnyToolCall, ...] = ()
    """The calls the model asked for, in order (unknown or forbidden tools included)."""
    refusal: str | None = None
    """The model's refusal message, when it refused."""
    finish_reason: FinishReason | None = None
    """Why the model stopped, when the server said; ``length`` means it was cut off."""
    usage: Usage = field(default_factory=Usage)
    """Tokens used (a request the server rejected with a 400 used none)."""
    model: str | None = None
    """The model that answered, as the server named it."""
    route: Route = "native"
    """How the tool calls were obtained (see docs/backends.md, "Forcing")."""

    def __post_init__(self) -> None:
        if self.text is not None:
            text(self.text, "response: `text`")
        if self.refusal is not None:
            text(self.refusal, "response: `refusal`")
        calls = as_tuple(self.tool_calls, "response: `tool_calls`")
        for position, call in enumerate(calls):
            if not isinstance(call, ToolCall | InvalidToolCall):
                raise fail(f"response: tool call {position} must be a `ToolCall`")
        set_field(self, "tool_calls", calls)
        if not isinstance(self.usage, Usage):
            raise fail(f"response: `usage` must be a Usage: got `{self.usage!r:.80}`")

    @property
    def message(self) -> AssistantMessage:
        """The reply as an assistant message, to append to the conversation."""
        content = self.text if self.text is not None else self.refusal
        if content is None and not self.tool_calls:
            content = ""
        return AssistantMessage(content=content, tool_calls=self.tool_calls)

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class TextDelta:
    """A piece of the reply's text, as it streams."""

    text: str
    """The new text."""
    kind: Literal["text"] = "text"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class RefusalDelta:
    """A piece of the model's refusal message, as it streams."""

    text: str
    """The new text."""
    kind: Literal["refusal"] = "refusal"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallDelta:
    """A piece of a tool call, as it streams: the first piece of a call carries id and name."""

    index: int
    """Which call of the reply this belongs to (0 for the first)."""
    id: str | None = None
    """The call id, on the call's first piece."""
    name: str | None = None
    """The tool name, on the call's first piece."""
    arguments: str = ""
    """The next piece of the arguments' JSON text."""
    kind: Literal["tool_call"] = "tool_call"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class StreamEnd:
    """The last event of every stream: the whole reply, parsed as ``complete`` would."""

    response: ChatResponse
    """The assembled reply."""
    kind: Literal["end"] = "end"

    __repr__ = dataclass_repr


StreamEvent: TypeAlias = TextDelta | RefusalDelta | ToolCallDelta | StreamEnd


# ---------------------------------------------------------------------------------------------
# Capabilities and the protocol


@dataclass(frozen=True, slots=True, repr=False)
class Capabilities:
    """What a server honours; the shared forcing layer works around everything else."""

    tool_choice: frozenset[ToolChoiceKind] = TOOL_CHOICE_KINDS
    """The ``tool_choice`` forms honoured: ``auto``, ``none``, ``required``, ``tool`` (one
    named tool), ``allowed`` (an allowed subset, chat completions' ``allowed_tools``)."""
    response_format: bool = True
    """Whether ``response_format`` with a JSON schema constrains the reply."""
    parallel_tool_calls: bool = True
    """Whether the server accepts ``parallel_tool_calls`` and may return several calls."""

    def __post_init__(self) -> None:
        kinds = as_tuple(self.tool_choice, "capabilities: `tool_choice`")
        unknown = sorted(str(k) for k in kinds if k not in TOOL_CHOICE_KINDS)
        if unknown:
            raise fail(
                f"capabilities: unknown tool_choice form `{', '.join(unknown)}`",
                f"use some of `{', '.join(sorted(TOOL_CHOICE_KINDS))}`",
            )
        set_field(self, "tool_choice", frozenset(kinds))
        for name in ("response_format", "parallel_tool_calls"):
            if not isinstance(getattr(self, name), bool):
                raise fail(f"capabilities: `{name}` must be true or false")

    def supports(self, feature: Feature) -> bool:
        """Whether the server honours ``feature`` (a tool_choice form or an option)."""
        if feature == "response_format":
            return self.response_format
        if feature == "parallel_tool_calls":
            return self.parallel_tool_calls
        return feature in self.tool_choice

    def without(self, *features: Feature) -> Capabilities:
        """These capabilities minus ``features``."""
        for feature in features:
            if feature not in FEATURES:
                raise fail(f"capabilities: unknown feature `{feature}`")
        return Capabilities(
            tool_choice=self.tool_choice - set(features),
            response_format=self.response_format and "response_format" not in features,
            parallel_tool_calls=self.parallel_tool_calls and "parallel_tool_calls" not in features,
        )

    def __repr__(self) -> str:
        shown = []
        if self.tool_choice != TOOL_CHOICE_KINDS:
            order = [k for k in get_args(ToolChoiceKind) if k in self.tool_choice]
            shown.append(f"tool_choice={{{', '.join(repr(k) for k in order)}}}")
        for name in ("response_format", "parallel_tool_calls"):
            if not getattr(self, name):
                shown.append(f"{name}=False")
        return f"Capabilities({', '.join(shown)})"


@runtime_checkable
class ChatModel(Protocol):
    """What the agent loop calls. ``BaseChatModel`` implements it for every backend."""

    @property
    def capabilities(self) -> Capabilities:
        """What the server honours now (declared, minus what it was seen to lack)."""
        ...

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One reply; a forced or required tool comes back as tool calls, or an error."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """The reply as events; the last one is ``StreamEnd`` with the whole reply."""
        ...
