"""backends/base.py: requests, replies, capabilities and the protocol, validated when built."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from backends import (
    AssistantMessage,
    Capabilities,
    ChatModel,
    ChatRequest,
    ChatResponse,
    ScriptedChatModel,
    ToolCall,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceTool,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    to_tool_choice,
)
from ruleengine import PolicyError


class Query(BaseModel):
    query: str
    limit: int = 3


SEARCH = ToolDefinition("search", "search the web", Query)
THINK = ToolDefinition("think")


def request(**kwargs: Any) -> ChatRequest:
    return ChatRequest([UserMessage("hi")], tools=[SEARCH, THINK], **kwargs)


def check_error(error: PolicyError, *fragments: str) -> None:
    for fragment in fragments:
        assert fragment in error.message
    assert "\n" not in error.message
    assert not error.message[0].isupper()
    assert "Traceback" not in str(error)


# -- construction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "fragments"),
    [
        (lambda: Usage(prompt_tokens=-1), ("`prompt_tokens`",)),
        (lambda: Usage(completion_tokens=1.5), ("`completion_tokens`",)),  # type: ignore[arg-type]
        (lambda: Capabilities(tool_choice={"always"}), ("unknown tool_choice form `always`",)),  # type: ignore[arg-type]
        (lambda: Capabilities(tool_choice="auto"), ("must be a list",)),  # type: ignore[arg-type]
        (lambda: Capabilities(response_format="yes"), ("`response_format`",)),  # type: ignore[arg-type]
        (lambda: ChatResponse(usage=3), ("`usage`",)),  # type: ignore[arg-type]
        (lambda: ChatResponse(text=3), ("`text`",)),  # type: ignore[arg-type]
        (lambda: ChatResponse(tool_calls=["x"]), ("tool call 0",)),  # type: ignore[list-item]
    ],
)
def test_bad_values_name_the_culprit(build: Any, fragments: tuple[str, ...]) -> None:
    with pytest.raises(PolicyError) as caught:
        build()
    check_error(caught.value, *fragments)


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"messages": []}, ("`messages` is empty",)),
        ({"messages": "hello"}, ("`messages` must be a list",)),
        ({"messages": [{"role": "user", "content": "hi"}]}, ("message 0",)),
        ({"tools": [SEARCH, SEARCH]}, ("`search` is offered twice",)),
        ({"tools": ["search"]}, ("tool 0: must be a ToolDefinition",)),
        ({"tool_choice": "fetch"}, ("`fetch`, which is not offered", "offered: `search, think`")),
        ({"tool_choice": ToolChoiceAllowed(("search", "nope"))}, ("`nope`",)),
        ({"tools": [], "tool_choice": "required"}, ("no tool is offered",)),
        ({"response_format": {"type": "json_object"}}, ("`response_format`",)),
        ({"parallel_tool_calls": "yes"}, ("`parallel_tool_calls`",)),
        ({"max_tokens": 0}, ("`max_tokens`",)),
        ({"max_tokens": True}, ("`max_tokens`",)),
        ({"temperature": 3}, ("`temperature`",)),
    ],
)
def test_bad_requests_name_the_culprit(kwargs: dict[str, Any], fragments: tuple[str, ...]) -> None:
    messages = kwargs.pop("messages", [UserMessage("hi")])
    kwargs.setdefault("tools", [SEARCH, THINK])
    with pytest.raises(PolicyError) as caught:
        ChatRequest(messages, **kwargs)
    check_error(caught.value, *fragments)


def test_a_tool_result_must_answer_an_earlier_call() -> None:
    call = ToolCall("c1", "search", {"query": "x"})
    ok = [UserMessage("q"), AssistantMessage(tool_calls=[call]), ToolResultMessage("c1", "r")]
    assert len(ChatRequest(ok, tools=[SEARCH]).messages) == 3
    with pytest.raises(PolicyError) as caught:
        ChatRequest([UserMessage("q"), ToolResultMessage("c9", "r")])
    check_error(caught.value, "message 1", "`c9`")


def test_huge_inputs_are_accepted() -> None:
    text = "x" * 2_000_000
    tools = [ToolDefinition(f"tool_{i}") for i in range(500)]
    built = ChatRequest([UserMessage(text)], tools=tools, tool_choice="tool_499")
    assert built.tool_choice == ToolChoiceTool("tool_499")


@pytest.mark.parametrize("value", ["auto", "none", "required", "search"])
def test_tool_choice_takes_pass_values(value: str) -> None:
    assert request(tool_choice=value).tool_choice == to_tool_choice(value)


# -- derived values and reprs ------------------------------------------------------------


def test_request_replace_validates_again() -> None:
    base = request(tool_choice="search")
    assert base.replace(tool_choice="auto").tool_choice == ToolChoiceAuto()
    with pytest.raises(PolicyError, match="not offered"):
        base.replace(tools=[THINK])


def test_usage_adds_up() -> None:
    total = Usage(10, 2, 4) + Usage(5, 1, 0)
    assert total == Usage(prompt_tokens=15, completion_tokens=3, cached_prompt_tokens=4)
    assert total.total_tokens == 18


def test_a_response_becomes_an_assistant_message() -> None:
    call = ToolCall("c1", "search", {"query": "x"})
    assert ChatResponse(text="hi").message == AssistantMessage("hi")
    assert ChatResponse(tool_calls=(call,)).message == AssistantMessage(tool_calls=(call,))
    assert ChatResponse(refusal="no").message == AssistantMessage("no")
    assert ChatResponse().message == AssistantMessage("")


def test_reprs_show_what_was_given() -> None:
    assert repr(Usage(3)) == "Usage(prompt_tokens=3)"
    assert repr(Capabilities()) == "Capabilities()"
    weak = Capabilities(tool_choice=frozenset({"required", "auto"}), response_format=False)
    assert repr(weak) == "Capabilities(tool_choice={'auto', 'required'}, response_format=False)"
    shown = repr(request(tool_choice="search", max_tokens=5))
    assert shown == (
        "ChatRequest(messages=<1 messages>, tools=['search', 'think'],"
        " tool_choice=ToolChoiceTool(name='search'), max_tokens=5)"
    )


def test_capabilities_support_and_narrow() -> None:
    full = Capabilities()
    assert all(full.supports(f) for f in ("auto", "tool", "allowed", "response_format"))
    narrow = full.without("tool", "response_format")
    assert not narrow.supports("tool")
    assert not narrow.response_format
    assert narrow.supports("required")
    assert Capabilities(tool_choice=["auto"]).tool_choice == frozenset({"auto"})  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="unknown feature"):
        full.without("telepathy")  # type: ignore[arg-type]


def test_the_scripted_model_is_a_chat_model() -> None:
    assert isinstance(ScriptedChatModel([]), ChatModel)
