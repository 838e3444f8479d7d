"""Messages of a conversation, and the tool calls an assistant message carries.

``SystemMessage``, ``UserMessage``, ``AssistantMessage`` (text and/or tool calls) and
``ToolResultMessage`` (answering one call by its id); a call is a ``ToolCall`` with parsed
arguments, or an ``InvalidToolCall`` whose arguments could not be read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from backends._check import as_tuple, dataclass_repr, fail, json_value, set_field, text

__all__ = [
    "AnyToolCall",
    "AssistantMessage",
    "InvalidToolCall",
    "MESSAGE_TYPES",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
]


@dataclass(frozen=True, slots=True, repr=False)
class ToolCall:
    """A call the model asked for, with its arguments parsed into a JSON object."""

    id: str
    """The call id; the tool result that answers it quotes it."""
    name: str
    """The tool the model called (maybe unknown or forbidden: the agent's gate decides)."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The arguments, as one JSON object (treat it as read-only)."""
    raw_arguments: str | None = None
    """The arguments as the model wrote them, when they came as text."""
    repaired: bool = False
    """Whether the text was broken JSON that the bounded repair fixed."""
    kind: Literal["tool_call"] = "tool_call"

    def __post_init__(self) -> None:
        text(self.id, "tool call: `id`", allow_empty=False)
        text(self.name, "tool call: `name`", allow_empty=False)
        if not isinstance(self.arguments, Mapping) or not all(
            isinstance(k, str) for k in self.arguments
        ):
            raise fail(
                f"tool call `{self.name}`: `arguments` must be a JSON object with text keys:"
                f" got `{self.arguments!r:.80}`"
            )
        json_value(self.arguments, f"tool call `{self.name}`: `arguments`")
        if self.raw_arguments is not None:
            text(self.raw_arguments, f"tool call `{self.name}`: `raw_arguments`")

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class InvalidToolCall:
    """A call whose arguments could not be read as a JSON object, even repaired.

    The agent does not run it: it answers with ``error`` so that the model can try again.
    """

    id: str
    """The call id."""
    name: str
    """The tool the model called."""
    raw_arguments: str
    """The arguments exactly as the model wrote them."""
    error: str
    """Why they could not be read, in one line meant for the model."""
    kind: Literal["invalid_tool_call"] = "invalid_tool_call"

    def __post_init__(self) -> None:
        text(self.id, "invalid tool call: `id`", allow_empty=False)
        text(self.name, "invalid tool call: `name`", allow_empty=False)
        text(self.raw_arguments, f"invalid tool call `{self.name}`: `raw_arguments`")
        text(self.error, f"invalid tool call `{self.name}`: `error`", allow_empty=False)

    __repr__ = dataclass_repr


AnyToolCall: TypeAlias = ToolCall | InvalidToolCall


@dataclass(frozen=True, slots=True, repr=False)
class SystemMessage:
    """Instructions from the developer (the rendered system prompt)."""

    content: str
    """The text of the message."""
    kind: Literal["system"] = "system"

    def __post_init__(self) -> None:
        text(self.content, "system message: `content`")

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class UserMessage:
    """A message from the user."""

    content: str
    """The text of the message."""
    kind: Literal["user"] = "user"

    def __post_init__(self) -> None:
        text(self.content, "user message: `content`")

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class AssistantMessage:
    """A reply of the model, kept in the conversation: text, tool calls, or both."""

    content: str | None = None
    """The text of the reply, if any."""
    tool_calls: tuple[AnyToolCall, ...] = ()
    """The calls the model asked for, in order."""
    kind: Literal["assistant"] = "assistant"

    def __post_init__(self) -> None:
        if self.content is not None:
            text(self.content, "assistant message: `content`")
        calls = as_tuple(self.tool_calls, "assistant message: `tool_calls`")
        for position, call in enumerate(calls):
            if not isinstance(call, ToolCall | InvalidToolCall):
                raise fail(
                    f"assistant message: tool call {position} must be a `ToolCall`:"
                    f" got `{call!r:.80}`"
                )
        set_field(self, "tool_calls", calls)
        if self.content is None and not calls:
            raise fail(
                "assistant message: needs `content` or `tool_calls`",
                'use `content=""` for an empty reply',
            )

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolResultMessage:
    """What a tool returned (or why it did not run), answering one tool call."""

    call_id: str
    """The id of the tool call this answers."""
    content: str
    """The tool's output, or the error, as text."""
    kind: Literal["tool"] = "tool"

    def __post_init__(self) -> None:
        text(self.call_id, "tool result: `call_id`", allow_empty=False)
        text(self.content, "tool result: `content`")

    __repr__ = dataclass_repr


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)
