"""backends/scripted.py: the scripted model, its weak behaviours, and what it records."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from backends import (
    BackendConnectionError,
    BackendStatusError,
    BadResponseError,
    Capabilities,
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    ScriptedChatModel,
    ScriptExhaustedError,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
    Usage,
    UserMessage,
)
from ruleengine import PolicyError

pytestmark = pytest.mark.anyio


class Query(BaseModel):
    query: str


SEARCH = ToolDefinition("search", "search the web", Query)
THINK = ToolDefinition("think")


def ask(choice: Any = "auto", **kwargs: Any) -> ChatRequest:
    return ChatRequest(
        [UserMessage("question")], tools=[SEARCH, THINK], tool_choice=choice, **kwargs
    )


async def test_the_spec_example() -> None:
    llm = ScriptedChatModel(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}, "plain text reply"]
    )
    first = await llm.complete(ask())
    assert first.tool_calls == (
        ToolCall("call_1", "search", {"query": "x"}, raw_arguments='{"query": "x"}'),
    )
    assert first.finish_reason == "tool_calls"
    second = await llm.complete(ask())
    assert second.text == "plain text reply" and second.tool_calls == ()
    assert [r.tools for r in llm.requests] == [("search", "think")] * 2
    assert llm.remaining == 0


async def test_requests_are_recorded() -> None:
    llm = ScriptedChatModel([{"tool_calls": [{"name": "search", "arguments": {"query": "q"}}]}])
    await llm.complete(ask("search", parallel_tool_calls=False))
    (seen,) = llm.requests
    assert seen.messages == (UserMessage("question"),)
    assert seen.tools == ("search", "think")
    assert seen.tool_choice == ToolChoiceTool("search")
    assert seen.parallel_tool_calls is False
    assert seen.response_format is None
    assert seen.stream is False
    assert seen.request.tools == (SEARCH, THINK)


async def test_weak_behaviours() -> None:
    llm = ScriptedChatModel(
        [
            'Sure! {"query": "x"} is what I would search.',  # JSON wrapped in prose: just text
            {
                "tool_calls": [{"name": "search", "arguments": "{'query': 'x',}"}]
            },  # broken, repairable
            {"tool_calls": [{"name": "search", "arguments": "{{{"}]},  # broken beyond repair
            {"tool_calls": [{"name": "send_email", "arguments": {}}]},  # unknown or forbidden
            {"tool_calls": [{"name": "search", "arguments": {"query": "a"}}, {"name": "think"}]},
            {"refusal": "I can't help with that"},
            {"text": "cut", "finish_reason": "length"},
        ]
    )
    prose = await llm.complete(ask())
    assert prose.text is not None and prose.text.startswith("Sure!") and not prose.tool_calls
    repaired = (await llm.complete(ask())).tool_calls[0]
    assert (
        isinstance(repaired, ToolCall)
        and repaired.repaired
        and repaired.arguments == {"query": "x"}
    )
    broken = (await llm.complete(ask())).tool_calls[0]
    assert isinstance(broken, InvalidToolCall) and broken.raw_arguments == "{{{"
    assert "not valid JSON" in broken.error
    assert (await llm.complete(ask())).tool_calls[0].name == "send_email"
    several = await llm.complete(ask())
    assert [c.name for c in several.tool_calls] == ["search", "think"]
    assert several.tool_calls[1].arguments == {}  # type: ignore[union-attr]
    refused = await llm.complete(ask())
    assert refused.refusal == "I can't help with that" and refused.text is None
    cut = await llm.complete(ask())
    assert cut.finish_reason == "length"


async def test_a_reply_that_ignores_tool_choice_comes_back_as_it_is() -> None:
    llm = ScriptedChatModel(["I don't feel like calling tools"])
    response = await llm.complete(ask("search"))
    assert response.text == "I don't feel like calling tools" and not response.tool_calls
    assert len(llm.requests) == 1 and llm.lacking == frozenset()


async def test_a_rejected_tool_choice_walks_down_the_ladder() -> None:
    rejected = {"error": {"status": 400, "message": "x", "param": "tool_choice"}}
    llm = ScriptedChatModel([rejected, rejected, '{"query": "x"}'])
    response = await llm.complete(ask("search"))
    assert response.route == "structured"
    assert response.tool_calls[0].arguments == {"query": "x"}  # type: ignore[union-attr]
    named, required, structured = llm.requests
    assert named.tool_choice == ToolChoiceTool("search")
    assert (required.tools, required.tool_choice) == (("search",), ToolChoiceRequired())
    assert structured.tools == () and structured.response_format is not None
    assert llm.lacking == {"tool", "required"}


async def test_the_script_runs_out_with_a_clear_error() -> None:
    llm = ScriptedChatModel(["only one"])
    await llm.complete(ask())
    with pytest.raises(ScriptExhaustedError) as caught:
        await llm.complete(ask())
    assert caught.value.message == "the script has no reply for request 2: it holds 1 entries"
    assert caught.value.hint is not None


async def test_a_function_script_sees_each_request() -> None:
    def reply(request: ChatRequest) -> object:
        if request.tool_choice == ToolChoiceTool("search"):
            return {
                "tool_calls": [
                    {"name": "search", "arguments": {"query": request.messages[-1].content}}
                ]
            }  # type: ignore[union-attr]
        return "no tool needed"

    llm = ScriptedChatModel(reply)
    assert (await llm.complete(ask("search"))).tool_calls[0].arguments == {"query": "question"}  # type: ignore[union-attr]
    assert (await llm.complete(ask())).text == "no tool needed"
    assert llm.remaining is None

    async def slow(request: ChatRequest) -> object:
        await anyio.sleep(0)
        return "async reply"

    assert (await ScriptedChatModel(slow).complete(ask())).text == "async reply"
    with pytest.raises(PolicyError, match="script reply for request 1: unknown key `txt`"):
        await ScriptedChatModel(lambda r: {"txt": "x"}).complete(ask())


async def test_failures_can_be_scripted() -> None:
    llm = ScriptedChatModel(
        [
            {"error": {"status": 503, "message": "overloaded", "retry_after": 2}},
            {"error": 401},
            {"disconnect": True},
            {"malformed": "empty_choices"},
            {"malformed": "not_json"},
            BackendConnectionError("scripted failure"),
            ChatResponse(text="from a ChatResponse", usage=Usage(5, 1)),
        ]
    )
    with pytest.raises(BackendStatusError) as caught:
        await llm.complete(ask())
    assert (caught.value.status_code, caught.value.retry_after) == (503, 2.0)
    assert "overloaded" in caught.value.message
    with pytest.raises(BackendStatusError, match="401"):
        await llm.complete(ask())
    with pytest.raises(BackendConnectionError, match="closed the connection"):
        await llm.complete(ask())
    with pytest.raises(BadResponseError, match="no choices"):
        await llm.complete(ask())
    with pytest.raises(BadResponseError, match="not JSON"):
        await llm.complete(ask())
    with pytest.raises(BackendConnectionError, match="scripted failure"):
        await llm.complete(ask())
    last = await llm.complete(ask())
    assert (last.text, last.usage) == ("from a ChatResponse", Usage(5, 1))


async def test_a_scripted_reply_streams() -> None:
    llm = ScriptedChatModel(
        [
            {
                "text": "hello there, streaming world",
                "usage": {"prompt_tokens": 3, "completion_tokens": 5},
            },
            {"tool_calls": [{"name": "search", "arguments": {"query": "a long query text"}}]},
            {"malformed": "bad_json"},
        ]
    )
    events = [event async for event in llm.stream(ask())]
    assert all(isinstance(e, TextDelta) for e in events[:-1]) and len(events) > 2
    assert "".join(e.text for e in events[:-1]) == "hello there, streaming world"  # type: ignore[union-attr]
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.usage == Usage(3, 5)
    calls = [event async for event in llm.stream(ask())]
    assert isinstance(calls[0], ToolCallDelta) and calls[0].name == "search"
    assert isinstance(calls[-1], StreamEnd)
    assert calls[-1].response.tool_calls[0].arguments == {"query": "a long query text"}  # type: ignore[union-attr]
    assert llm.requests[0].stream is True
    with pytest.raises(BadResponseError, match="stream chunk that is not JSON"):
        [event async for event in llm.stream(ask())]


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ("just a string", "a list of entries or a function"),
        ([3], "script entry 0: must be text, a dict or a ChatResponse"),
        ([{"tool_call": []}], "script entry 0: unknown key `tool_call`"),
        ([{"tool_calls": {"name": "x"}}], "`tool_calls` must be a list"),
        ([{"tool_calls": [{"arguments": {}}]}], "tool call 0: `name` must be non-empty text"),
        ([{"tool_calls": [{"name": "x", "args": {}}]}], "tool call 0: unknown key `args`"),
        (
            [{"tool_calls": [{"name": "x", "arguments": {"a": object()}}]}],
            "`arguments` are not JSON",
        ),
        ([{"error": 200}], "`error.status` must be an HTTP error status"),
        ([{"error": {"status": 500, "retry_after": -1}}], "`error.retry_after`"),
        ([{"malformed": "wobbly"}], "unknown `malformed` kind"),
        ([{"delay": "1s"}], "`delay` must be seconds"),
        ([{"usage": {"tokens": 3}}], "`usage` must be a dict"),
        ([{"disconnect": "yes"}], "`disconnect` must be true or false"),
        ([{"drop_after": -1}], "`drop_after` must be a whole number ≥ 0"),
        ([{"end_after": 1.5}], "`end_after` must be a whole number ≥ 0"),
        ([{"drop_after": 1, "end_after": 2}], "`drop_after` and `end_after` exclude each other"),
        ([{"text": 5}], "`text` must be text"),
    ],
)
def test_bad_scripts_are_refused_at_construction(script: Any, fragment: str) -> None:
    with pytest.raises(PolicyError) as caught:
        ScriptedChatModel(script)
    assert fragment in caught.value.message


def test_bad_options_are_refused() -> None:
    with pytest.raises(PolicyError, match="`model`"):
        ScriptedChatModel([], model="")
    with pytest.raises(PolicyError, match="`capabilities`"):
        ScriptedChatModel([], capabilities={"tool_choice": []})  # type: ignore[arg-type]


def test_repr() -> None:
    assert repr(ScriptedChatModel(["a", "b"])) == "ScriptedChatModel(<2 entries left>)"
    weak = ScriptedChatModel(lambda r: "x", capabilities=Capabilities(response_format=False))
    assert (
        repr(weak)
        == "ScriptedChatModel(<function>, capabilities=Capabilities(response_format=False))"
    )


async def test_a_bad_request_is_a_usage_error() -> None:
    with pytest.raises(PolicyError, match="`request` must be a ChatRequest"):
        await ScriptedChatModel(["x"]).complete("hello")  # type: ignore[arg-type]


async def test_a_scripted_stream_cut_off_mid_way() -> None:
    text = "a reply long enough to be cut off in the middle"
    llm = ScriptedChatModel(
        [{"text": text, "drop_after": 3}, {"text": text, "end_after": 3}, {"drop_after": 0}]
    )
    seen: list[object] = []
    with pytest.raises(BackendConnectionError, match="dropped the connection mid-stream"):
        async for event in llm.stream(ask()):
            seen.append(event)
    # what came before the drop was passed on as it came; no reply was
    assert seen and all(isinstance(e, TextDelta) for e in seen)
    assert "".join(e.text for e in seen) == text[: len(seen) * 12]  # type: ignore[union-attr]
    with pytest.raises(BackendConnectionError, match="ended before the reply did"):
        [event async for event in llm.stream(ask())]
    # a request that is not streamed gets no answer at all
    with pytest.raises(BackendConnectionError, match="without an answer"):
        await llm.complete(ask())
