"""backends/model.py: the shared layer walks the forcing ladder, learns, and streams."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from backends import (
    BackendError,
    BackendStatusError,
    BaseChatModel,
    Capabilities,
    ChatRequest,
    ChatResponse,
    ResponseFormat,
    ScriptedChatModel,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoiceAllowed,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
    Usage,
    UserMessage,
)

pytestmark = pytest.mark.anyio


class Query(BaseModel):
    query: str


SEARCH = ToolDefinition("search", "search the web", Query)
THINK = ToolDefinition("think")
SAVE = ToolDefinition("save")
CALL_SEARCH = {"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}
REJECT = {"error": {"status": 400, "message": "tool_choice is not supported"}}


def ask(choice: Any = "auto", **kwargs: Any) -> ChatRequest:
    return ChatRequest(
        [UserMessage("question")], tools=[SEARCH, THINK, SAVE], tool_choice=choice, **kwargs
    )


async def test_a_rejected_named_choice_falls_back_and_is_remembered() -> None:
    llm = ScriptedChatModel([REJECT, CALL_SEARCH, CALL_SEARCH])
    first = await llm.complete(ask("search"))
    assert first.tool_calls[0].name == "search" and first.route == "native"
    assert [r.tool_choice for r in llm.requests] == [ToolChoiceTool("search"), ToolChoiceRequired()]
    assert llm.requests[1].tools == ("search",)
    assert llm.lacking == {"tool"}
    assert not llm.capabilities.supports("tool")
    await llm.complete(ask("search"))
    assert llm.requests[2].tool_choice == ToolChoiceRequired()  # straight to what works
    llm.forget()
    assert llm.capabilities == Capabilities()


async def test_declared_capabilities_avoid_wasted_requests() -> None:
    llm = ScriptedChatModel(
        ['{"query": "x"}'], capabilities=Capabilities(tool_choice=frozenset({"auto"}))
    )
    response = await llm.complete(ask("search"))
    assert response.route == "structured" and len(llm.requests) == 1


async def test_a_rejected_response_format_falls_back_to_the_prompt() -> None:
    rejected = {"error": {"status": 400, "message": "response_format is not supported"}}
    llm = ScriptedChatModel(
        [rejected, 'Here: ```json\n{"query": "y"}\n```'],
        capabilities=Capabilities(tool_choice=frozenset({"auto"})),
    )
    response = await llm.complete(ask("search"))
    assert response.route == "prompt"
    assert response.tool_calls[0].arguments == {"query": "y"}  # type: ignore[union-attr]
    assert llm.requests[1].response_format is None
    assert "matching this JSON schema" in llm.requests[1].messages[-1].content  # type: ignore[union-attr]
    assert llm.lacking == {"response_format"}


async def test_a_reply_that_ignores_the_force_comes_back_as_it_is() -> None:
    # Text, or a call of another tool, is the model's choice: nothing is learned about the
    # server, no fallback request is made; the agent's gate (or text rescue) judges it.
    llm = ScriptedChatModel(["no", {"tool_calls": [{"name": "save"}]}])
    text = await llm.complete(ask("search"))
    assert (text.text, text.tool_calls, text.route) == ("no", (), "native")
    other = await llm.complete(ask("search"))
    assert [c.name for c in other.tool_calls] == ["save"]
    assert len(llm.requests) == 2 and llm.lacking == frozenset()
    assert llm.capabilities == Capabilities()


@pytest.mark.parametrize(
    ("choice", "feature"),
    [
        ("search", "tool"),
        ("required", "required"),
        ("none", "none"),
        (ToolChoiceAllowed(("think", "save"), "required"), "allowed"),
        (ToolChoiceAllowed(("think", "save"), "auto"), "allowed"),
    ],
)
async def test_each_tool_choice_form_is_learned_only_from_a_400_naming_it(
    choice: Any, feature: str
) -> None:
    # A model that calls a tool outside the list teaches nothing...
    outside = ScriptedChatModel([{"tool_calls": [{"name": "search"}]}])
    await outside.complete(ask(choice))
    assert outside.lacking == frozenset()
    # ...nor does a 400 that names another part of the request...
    unrelated = ScriptedChatModel([{"error": {"status": 400, "message": "bad `messages`"}}])
    with pytest.raises(BackendStatusError):
        await unrelated.complete(ask(choice))
    assert unrelated.lacking == frozenset() and len(unrelated.requests) == 1
    # ...while a 400 naming `tool_choice` (in `param`, or in the message) is the server's lack.
    for error in (
        {"status": 400, "message": "unsupported value", "param": "tool_choice"},
        {"status": 400, "message": "Tool choice of this kind is not supported"},
        {"status": 422, "message": "allowed-tools are not supported"},
    ):
        llm = ScriptedChatModel([{"error": error}, "fine"])
        await llm.complete(ask(choice))
        assert llm.lacking == {feature}, error


async def test_response_format_and_parallel_calls_are_learned_only_from_a_400_naming_them() -> None:
    typed = ResponseFormat("answer", {"type": "object"})
    for option, feature in (
        ({"response_format": typed}, "response_format"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
    ):
        name = "json_schema" if feature == "response_format" else feature
        llm = ScriptedChatModel(
            [{"error": {"status": 400, "message": f"`{name}` is not supported"}}, "fine"]
        )
        assert (await llm.complete(ask(**option))).text == "fine"
        assert llm.lacking == {feature}
        # A reply that ignores the option (text, not JSON; several calls) teaches nothing.
        ignored = ScriptedChatModel(
            [{"tool_calls": [{"name": "think"}, {"name": "save"}]}, "not json"]
        )
        await ignored.complete(ask(**option))
        await ignored.complete(ask(**option))
        assert ignored.lacking == frozenset()


async def test_a_400_naming_nothing_the_layer_can_drop_is_raised_as_it_is() -> None:
    llm = ScriptedChatModel([{"error": {"status": 400, "message": "context too long"}}])
    with pytest.raises(BackendStatusError) as caught:
        await llm.complete(ask("search"))
    assert caught.value.message == "the server answered 400: `context too long`"
    assert caught.value.parameter is None and llm.lacking == frozenset()


async def test_when_every_rung_is_rejected_the_server_message_is_kept() -> None:
    llm = ScriptedChatModel([REJECT] * 4)
    with pytest.raises(BackendStatusError) as caught:
        await llm.complete(ask("search"))
    error = caught.value
    assert error.status_code == 400
    # Named tool, then `required`, were rejected; the structured rung sends no `tool_choice`,
    # so a 400 that still names it is not about a feature the layer could drop.
    assert error.message == (
        "the server answered 400: `tool_choice is not supported`: after `tool_choice` naming"
        " a tool rejected (400); `tool_choice` `required` rejected (400)"
    )
    assert len(llm.requests) == 3
    assert llm.lacking == frozenset()  # nothing proven: no request without them succeeded


async def test_other_errors_are_not_fallbacks() -> None:
    llm = ScriptedChatModel([{"error": 500}, {"error": 400}])
    with pytest.raises(BackendStatusError, match="500"):
        await llm.complete(ask("search"))
    with pytest.raises(BackendStatusError) as caught:  # nothing to drop from a plain request
        await llm.complete(ChatRequest([UserMessage("hi")]))
    assert caught.value.message == "the server answered 400: `scripted error 400`"


async def test_a_refusal_is_passed_on() -> None:
    llm = ScriptedChatModel([{"refusal": "I won't"}])
    response = await llm.complete(ask("search"))
    assert response.refusal == "I won't" and not response.tool_calls and len(llm.requests) == 1


async def test_usage_is_the_answering_replys() -> None:
    llm = ScriptedChatModel(
        [
            REJECT,
            {
                "text": '{"query": "x"}',
                "usage": {"prompt_tokens": 12, "completion_tokens": 4, "cached_prompt_tokens": 8},
            },
        ],
        capabilities=Capabilities(tool_choice=frozenset({"auto", "tool"})),
    )
    response = await llm.complete(ask("search"))
    assert response.route == "structured" and response.usage == Usage(12, 4, 8)


async def test_allowed_subsets_are_sent_or_narrowed() -> None:
    choice = ToolChoiceAllowed(("think", "save"), "required")
    full = ScriptedChatModel([{"tool_calls": [{"name": "think"}]}])
    await full.complete(ask(choice))
    assert full.requests[0].tools == ("search", "think", "save")
    assert full.requests[0].tool_choice == choice
    narrow = ScriptedChatModel(
        [{"tool_calls": [{"name": "save"}]}], capabilities=Capabilities().without("allowed")
    )
    await narrow.complete(ask(choice))
    assert narrow.requests[0].tools == ("think", "save")
    assert narrow.requests[0].tool_choice == ToolChoiceRequired()


async def test_learning_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="backends")
    await ScriptedChatModel([REJECT, CALL_SEARCH]).complete(ask("search"))
    assert "lacks `tool_choice` naming a tool" in caplog.text


async def test_one_model_serves_many_tasks() -> None:
    llm = ScriptedChatModel(lambda request: CALL_SEARCH)
    results: list[ChatResponse] = []

    async def one() -> None:
        results.append(await llm.complete(ask("search")))

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(one)
    assert len(results) == 20 and len(llm.requests) == 20
    assert len({r.tool_calls[0].id for r in results}) == 20


# -- streaming --------------------------------------------------------------------------------


async def collect(llm: BaseChatModel, request: ChatRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(request)]


async def test_text_streams_live_and_ends_with_the_reply() -> None:
    llm = ScriptedChatModel(["a reply long enough for several chunks"])
    events = await collect(llm, ask())
    assert len(events) > 3 and all(isinstance(e, TextDelta) for e in events[:-1])
    assert (
        isinstance(events[-1], StreamEnd)
        and events[-1].response.text == "a reply long enough for several chunks"
    )


async def test_a_structured_call_streams_once_read_and_a_native_one_live() -> None:
    llm = ScriptedChatModel(['{"query": "x"}'], capabilities=Capabilities(tool_choice={"auto"}))
    events = await collect(llm, ask("search"))
    # the JSON text never reaches the caller as text: it comes as the one call it spells
    assert events[0] == ToolCallDelta(0, events[0].id, "search", '{"query": "x"}')  # type: ignore[union-attr]
    assert len(events) == 2
    assert isinstance(events[-1], StreamEnd) and events[-1].response.route == "structured"
    assert all(r.stream for r in llm.requests)
    native = ScriptedChatModel([CALL_SEARCH])
    replayed = await collect(native, ask("search"))
    assert all(isinstance(e, ToolCallDelta) for e in replayed[:-1]) and len(replayed) > 2
    assert "".join(e.arguments for e in replayed[:-1]) == '{"query": "x"}'  # type: ignore[union-attr]
    ignored = ScriptedChatModel(["some text that is long enough"])
    live = await collect(ignored, ask("search"))  # text under a force: live, as it came
    assert all(isinstance(e, TextDelta) for e in live[:-1]) and len(live) > 2


async def test_a_stream_rejected_before_it_starts_falls_back() -> None:
    llm = ScriptedChatModel(
        [{"error": {"status": 400, "message": "no parallel_tool_calls"}}, "fine"]
    )
    events = await collect(llm, ask(parallel_tool_calls=True))
    assert isinstance(events[-1], StreamEnd) and events[-1].response.text == "fine"
    assert llm.requests[1].parallel_tool_calls is None
    assert llm.lacking == {"parallel_tool_calls"}


async def test_stopping_a_stream_early_is_fine() -> None:
    llm = ScriptedChatModel(["a reply long enough for several chunks", "next"])
    async for event in llm.stream(ask()):
        assert isinstance(event, TextDelta)
        break
    assert (await llm.complete(ask())).text == "next"


class NoEnd(BaseChatModel):
    async def send(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(tool_calls=(ToolCall("c1", "search", {"query": "x"}),))

    async def send_stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        yield TextDelta("hi")


async def test_a_backend_may_be_written_in_two_methods() -> None:
    response = await NoEnd().complete(ask("search"))
    assert response.tool_calls[0].name == "search"
    with pytest.raises(BackendError, match=r"NoEnd.send_stream ended without `StreamEnd`"):
        await collect(NoEnd(), ask())
