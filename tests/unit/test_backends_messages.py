"""backends/messages.py: messages and tool calls, validated at construction, and their reprs."""

from __future__ import annotations

from typing import Any

import pytest

from backends import (
    AssistantMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ruleengine import PolicyError


@pytest.mark.parametrize(
    ("build", "fragments"),
    [
        (lambda: UserMessage(3), ("user message", "`content`", "`3`")),  # type: ignore[arg-type]
        (lambda: SystemMessage(None), ("system message",)),  # type: ignore[arg-type]
        (lambda: AssistantMessage(), ("needs `content` or `tool_calls`",)),
        (lambda: AssistantMessage(tool_calls="x"), ("`tool_calls` must be a list",)),  # type: ignore[arg-type]
        (lambda: AssistantMessage(tool_calls=[{"name": "x"}]), ("tool call 0",)),  # type: ignore[list-item]
        (lambda: ToolResultMessage("", "out"), ("`call_id`", "must not be empty")),
        (lambda: ToolCall("", "search"), ("`id`",)),
        (lambda: ToolCall("c1", "search", [1]), ("`arguments` must be a JSON object",)),  # type: ignore[arg-type]
        (lambda: ToolCall("c1", "search", {1: 2}), ("text keys",)),  # type: ignore[dict-item]
        (lambda: ToolCall("c1", "x", {"a": object()}), ("`arguments` are not JSON",)),
        (lambda: ToolCall("c1", "x", raw_arguments=5), ("`raw_arguments`",)),  # type: ignore[arg-type]
        (lambda: InvalidToolCall("c1", "search", "{", ""), ("`error`",)),
    ],
)
def test_bad_values_name_the_culprit(build: Any, fragments: tuple[str, ...]) -> None:
    with pytest.raises(PolicyError) as caught:
        build()
    error = caught.value
    for fragment in fragments:
        assert fragment in error.message
    assert "\n" not in error.message
    assert not error.message[0].isupper()


def test_calls_are_kept_as_a_tuple() -> None:
    call = ToolCall("c1", "search", {"query": "x"})
    message = AssistantMessage(tool_calls=[call])  # type: ignore[arg-type]
    assert message.tool_calls == (call,)
    assert message.kind == "assistant" and call.kind == "tool_call"
    assert AssistantMessage("") == AssistantMessage(content="")


def test_reprs_show_what_was_given() -> None:
    assert (
        repr(ToolCall("c1", "search", {"q": 1}))
        == "ToolCall(id='c1', name='search', arguments={'q': 1})"
    )
    assert repr(UserMessage("hi")) == "UserMessage(content='hi')"
    assert repr(ToolResultMessage("c1", "ok")) == "ToolResultMessage(call_id='c1', content='ok')"
    assert (
        repr(InvalidToolCall("c1", "t", "{", "bad"))
        == "InvalidToolCall(id='c1', name='t', raw_arguments='{', error='bad')"
    )
