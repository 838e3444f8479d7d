"""backends/_wire.py: requests as chat completions bodies, and replies parsed back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from backends import (
    AssistantMessage,
    BackendConnectionError,
    BadResponseError,
    ChatRequest,
    InvalidToolCall,
    ResponseFormat,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoiceAllowed,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from backends._wire import (
    StreamAssembler,
    decode_body,
    message_from_wire,
    message_to_wire,
    parse_completion,
    request_body,
    status_error,
)


class Query(BaseModel):
    query: str


SEARCH = ToolDefinition("search", "search the web", Query)
THINK = ToolDefinition("think")


def completion(
    message: dict[str, Any], finish: str | None = "stop", **extra: Any
) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], **extra}


# -- requests ----------------------------------------------------------------------------


def test_every_option_is_mapped() -> None:
    call = ToolCall("c1", "search", {"query": "x"})
    request = ChatRequest(
        [
            SystemMessage("be brief"),
            UserMessage("hi"),
            AssistantMessage("let me look", tool_calls=[call]),
            ToolResultMessage("c1", "found"),
        ],
        tools=[SEARCH, THINK],
        tool_choice=ToolChoiceAllowed(("search",), mode="required"),
        response_format=ResponseFormat("answer", {"type": "object"}, strict=True),
        parallel_tool_calls=False,
        max_tokens=50,
        temperature=0.2,
    )
    body = request_body(request, model="m", stream=True)
    assert body["model"] == "m"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "let me look",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "search the web",
            "parameters": SEARCH.parameters,
        },
    }
    assert body["tools"][1] == {
        "type": "function",
        "function": {"name": "think", "parameters": {"type": "object", "properties": {}}},
    }
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": "search"}}],
        },
    }
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    assert body["parallel_tool_calls"] is False
    assert body["max_tokens"] == 50
    assert body["temperature"] == 0.2
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    json.dumps(body)  # all plain JSON


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("search", {"type": "function", "function": {"name": "search"}}),
    ],
)
def test_tool_choice_forms(choice: str, wire: object) -> None:
    body = request_body(
        ChatRequest([UserMessage("hi")], tools=[SEARCH], tool_choice=choice), model="m"
    )
    assert body["tool_choice"] == wire


def test_no_tools_means_no_tool_options() -> None:
    body = request_body(ChatRequest([UserMessage("hi")], parallel_tool_calls=True), model="m")
    assert set(body) == {"model", "messages"}


def test_auto_can_be_left_out() -> None:
    request = ChatRequest([UserMessage("hi")], tools=[SEARCH])
    assert "tool_choice" not in request_body(request, model="m", send_auto=False)
    assert request_body(request, model="m")["tool_choice"] == "auto"


def test_an_invalid_call_goes_back_as_it_was_sent() -> None:
    bad = InvalidToolCall("c1", "search", "{'query", "broken")
    wire = message_to_wire(AssistantMessage(tool_calls=[bad]))
    assert wire["tool_calls"][0]["function"]["arguments"] == "{'query"
    assert wire["content"] is None


TEXT = st.text(max_size=30)
ARGS = st.dictionaries(
    st.text(max_size=6), st.integers() | st.text(max_size=6) | st.booleans(), max_size=3
)
NAMES = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
CALLS = st.builds(ToolCall, id=NAMES.map(lambda s: "call_" + s), name=NAMES, arguments=ARGS)
MESSAGES = st.one_of(
    st.builds(SystemMessage, TEXT),
    st.builds(UserMessage, TEXT),
    st.builds(ToolResultMessage, NAMES, TEXT),
    st.builds(
        AssistantMessage, st.none() | TEXT, st.lists(CALLS, min_size=1, max_size=3).map(tuple)
    ),
    st.builds(AssistantMessage, TEXT),
)


@given(MESSAGES)
def test_messages_round_trip_through_the_wire(message: Any) -> None:
    wire = json.loads(json.dumps(message_to_wire(message)))
    back = message_from_wire(wire)
    if isinstance(message, AssistantMessage) and message.content is None:
        assert back == AssistantMessage(content=None, tool_calls=message.tool_calls)
    else:
        assert back == message


def test_unknown_roles_are_refused() -> None:
    with pytest.raises(BadResponseError, match="unknown message role `robot`"):
        message_from_wire({"role": "robot", "content": "beep"})


# -- replies -------------------------------------------------------------------------------------


def test_a_full_reply_is_parsed() -> None:
    body = completion(
        {
            "role": "assistant",
            "content": "looking",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "x"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "nope", "arguments": "{'a': 1,}"},
                },
                {
                    "id": "c3",
                    "type": "function",
                    "function": {"name": "search", "arguments": "{{{oops"},
                },
                {"type": "function", "function": {"name": "think", "arguments": ""}},
                {
                    "id": "c5",
                    "type": "function",
                    "function": {"name": "think", "arguments": {"a": 1}},
                },
            ],
        },
        "tool_calls",
        usage={
            "prompt_tokens": 10,
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 8},
        },
        model="gpt-x",
    )
    response = parse_completion(body)
    assert response.text == "looking"
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(10, 3, 8)
    assert response.model == "gpt-x"
    first, second, third, fourth, fifth = response.tool_calls
    assert first == ToolCall("c1", "search", {"query": "x"}, raw_arguments='{"query": "x"}')
    assert isinstance(second, ToolCall) and second.arguments == {"a": 1} and second.repaired
    assert second.name == "nope"  # unknown tools pass: the gate decides
    assert isinstance(third, InvalidToolCall)
    assert third.error.startswith("`search`: arguments are not valid JSON")
    assert isinstance(fourth, ToolCall) and fourth.arguments == {} and fourth.id.startswith("call_")
    assert fifth == ToolCall("c5", "think", {"a": 1})


def test_refusals_and_content_parts() -> None:
    refused = parse_completion(completion({"role": "assistant", "content": None, "refusal": "no"}))
    assert refused.refusal == "no" and refused.text is None
    parts = [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    assert parse_completion(completion({"role": "assistant", "content": parts})).text == "ab"


def test_a_cut_off_reply_does_not_guess_arguments() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "function": {"name": "search", "arguments": '{"query": "a very long'}},
            {"id": "c2", "function": {"name": "think", "arguments": "{}"}},
        ],
    }
    response = parse_completion(completion(message, "length"))
    assert response.finish_reason == "length"
    cut, whole = response.tool_calls
    assert isinstance(cut, InvalidToolCall) and "cut off at the token limit" in cut.error
    assert whole == ToolCall("c2", "think", {}, raw_arguments="{}")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("stop", "stop"), ("function_call", "tool_calls"), ("eos", "other"), (None, None)],
)
def test_finish_reasons_are_normalised(reason: str | None, expected: str | None) -> None:
    assert (
        parse_completion(completion({"role": "assistant", "content": "x"}, reason)).finish_reason
        == expected
    )


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ([1, 2], "not a JSON object"),
        ({"id": "x"}, "has no `choices`"),
        ({"error": {"message": "model overloaded"}}, "answered with an error: `model overloaded`"),
        ({"choices": "all"}, "`choices` is not a list"),
        ({"choices": []}, "returned no choices"),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "has no `message`"),
        ({"choices": ["x"]}, "has no `message`"),
        (completion({"role": "assistant", "content": 5}), "content is not text"),
        (completion({"role": "assistant", "tool_calls": {"a": 1}}), "`tool_calls` is not a list"),
        (completion({"role": "assistant", "tool_calls": ["x"]}), "tool call 0 is not an object"),
        (
            completion({"role": "assistant", "tool_calls": [{"id": "c"}]}),
            "tool call 0 has no function name",
        ),
    ],
)
def test_malformed_replies_are_clear_errors(body: object, fragment: str) -> None:
    with pytest.raises(BadResponseError) as caught:
        parse_completion(body)
    assert fragment in caught.value.message
    assert "\n" not in caught.value.message


def test_bodies_that_are_not_json() -> None:
    with pytest.raises(BadResponseError) as caught:
        decode_body("<html>502</html>")
    assert "not JSON: `<html>502</html>`" in caught.value.message
    assert caught.value.hint is not None and "base_url" in caught.value.hint


def test_status_errors_carry_the_server_message_and_a_hint() -> None:
    error = status_error(429, {"error": {"message": "slow down"}}, retry_after=2.0)
    assert error.message == "the server answered 429: `slow down`"
    assert error.status_code == 429 and error.retry_after == 2.0
    assert error.hint is not None and "rate limiting" in error.hint
    assert (
        status_error(503, "<html>down</html>").message
        == "the server answered 503: `<html>down</html>`"
    )
    assert status_error(502, None).message == "the server answered 502: `no message`"
    assert status_error(401, {"message": "bad key"}).hint.startswith("check the API key")  # type: ignore[union-attr]


# -- streams -----------------------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_a_stream_assembles_into_the_same_reply() -> None:
    assembler = StreamAssembler()
    events = []
    for piece in [
        chunk({"role": "assistant", "content": ""}, model="m"),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "x"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {"index": 1, "id": "c2", "function": {"name": "think", "arguments": "{}"}}
                ]
            }
        ),
        chunk({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
    ]:
        events.extend(assembler.feed(piece))
    assert events[:2] == [TextDelta("Hel"), TextDelta("lo")]
    assert events[2] == ToolCallDelta(0, "c1", "search", "")
    assert events[3] == ToolCallDelta(0, None, None, '{"query"')
    response = assembler.finish()
    assert response.text == "Hello"
    assert response.tool_calls[0] == ToolCall(
        "c1", "search", {"query": "x"}, raw_arguments='{"query": "x"}'
    )
    assert response.tool_calls[1].name == "think"
    assert response.usage == Usage(4, 2)
    assert response.finish_reason == "tool_calls"
    assert response.model == "m"


@pytest.mark.parametrize(
    ("chunks", "fragment"),
    [
        ([[1]], "stream chunk 1 is not a JSON object"),
        ([{"error": {"message": "overloaded"}}], "error mid-stream: `overloaded`"),
        ([{"choices": "x"}], "`choices` is not a list"),
        ([chunk("x")], "`delta` is not an object"),  # type: ignore[arg-type]
        ([], "ended without a choice"),
        ([{"choices": [], "usage": {}}], "ended without a choice"),
    ],
)
def test_malformed_streams_are_clear_errors(chunks: list[object], fragment: str) -> None:
    assembler = StreamAssembler()
    with pytest.raises(BadResponseError) as caught:
        for piece in chunks:
            assembler.feed(piece)
        assembler.finish()
    assert fragment in caught.value.message


def test_a_stream_that_ends_before_its_finish_reason_was_cut_off() -> None:
    # The connection closed (or a proxy ended the stream) mid-reply: what came is not a reply.
    assembler = StreamAssembler()
    for piece in [chunk({"role": "assistant", "content": ""}), chunk({"content": "Half an ans"})]:
        assembler.feed(piece)
    with pytest.raises(BackendConnectionError) as caught:
        assembler.finish()
    assert "ended before the reply did (after 2 chunks" in caught.value.message
    assert "not used" in (caught.value.hint or "")


def test_an_empty_text_streams_as_the_reply_complete_reads() -> None:
    # `content: ""` says the reply has text, empty; `content: null` that it has none.
    for opening, text in (("", ""), (None, None)):
        assembler = StreamAssembler()
        assembler.feed(chunk({"role": "assistant", "content": opening}))
        assembler.feed(chunk({}, "stop"))
        streamed = assembler.finish()
        whole = parse_completion(
            {"choices": [{"message": {"role": "assistant", "content": opening}}]}
        )
        assert streamed.text == whole.text == text
