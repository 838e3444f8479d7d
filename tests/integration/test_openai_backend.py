"""The real ``openai`` client against the real test server on 127.0.0.1: nothing is patched.

What the server receives (request mapping), what the model makes of every kind of answer,
streaming, retries and back-off, timeouts, the forcing fallback, malformed replies, and that
the API key never shows.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from backends import (
    AssistantMessage,
    BackendConnectionError,
    BackendError,
    BackendStatusError,
    BackendTimeoutError,
    BadResponseError,
    Capabilities,
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    OpenAIChatModel,
    ResponseFormat,
    RetryPolicy,
    ScriptedChatModel,
    StreamEnd,
    StreamEvent,
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
from backends.testing import OpenAICompatibleServer

pytestmark = pytest.mark.anyio

KEY = "sk-test-5e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b"
JITTER = 0.5  # every back-off is then 3/4 of its ceiling


class Query(BaseModel):
    query: str


SEARCH = ToolDefinition("search", "search the web", Query)
THINK = ToolDefinition("think", "think it over")
SAVE = ToolDefinition("save")
CALL = {"tool_calls": [{"name": "search", "arguments": {"query": "x"}}]}


class Sleeps(list[float]):
    """Records the back-off delays instead of waiting them."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


OPENED: list[OpenAIChatModel] = []


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    """Close every model a test made, in the test's event loop (no socket is left open)."""
    yield
    while OPENED:
        await OPENED.pop().aclose()


def model(
    server: OpenAICompatibleServer, sleeps: Sleeps | None = None, **kwargs: Any
) -> OpenAIChatModel:
    kwargs.setdefault(
        "retry", RetryPolicy(max_retries=3, base_delay=0.01, max_delay=5.0, jitter=lambda: JITTER)
    )
    llm = OpenAIChatModel(
        "test-model",
        base_url=server.base_url,
        api_key=KEY,
        sleep=sleeps if sleeps is not None else Sleeps(),
        **kwargs,
    )
    OPENED.append(llm)
    return llm


def ask(choice: Any = "auto", **kwargs: Any) -> ChatRequest:
    return ChatRequest(
        [UserMessage("question")], tools=[SEARCH, THINK, SAVE], tool_choice=choice, **kwargs
    )


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


# -- the request as the server sees it --------------------------------------------------------


async def test_every_message_kind_and_option_reaches_the_server() -> None:
    call = ToolCall("c1", "search", {"query": "x"})
    broken = InvalidToolCall("c2", "save", "{'oops", "broken")
    request = ChatRequest(
        [
            SystemMessage("be brief"),
            UserMessage("question"),
            AssistantMessage("looking", tool_calls=[call, broken]),
            ToolResultMessage("c1", "found it"),
            ToolResultMessage("c2", "your arguments were broken"),
        ],
        tools=[SEARCH, THINK, SAVE],
        tool_choice=ToolChoiceAllowed(("think", "save"), "required"),
        response_format=ResponseFormat("answer", {"type": "object"}),
        parallel_tool_calls=False,
        max_tokens=64,
        temperature=0.5,
    )
    with OpenAICompatibleServer([{"tool_calls": [{"name": "think"}]}], api_key=KEY) as server:
        await model(server).complete(request)
    (body,) = server.requests
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assistant = body["messages"][2]
    assert assistant["content"] == "looking"
    assert assistant["tool_calls"][0]["function"] == {
        "name": "search",
        "arguments": '{"query": "x"}',
    }
    assert assistant["tool_calls"][1]["function"]["arguments"] == "{'oops"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "found it"}
    assert [t["function"]["name"] for t in body["tools"]] == ["search", "think", "save"]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": n}} for n in ("think", "save")],
        },
    }
    assert body["response_format"]["json_schema"]["name"] == "answer"
    assert body["parallel_tool_calls"] is False
    assert (body["max_tokens"], body["temperature"], body["model"]) == (64, 0.5, "test-model")
    assert "stream" not in body


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("think", {"type": "function", "function": {"name": "think"}}),
    ],
)
async def test_tool_choice_forms_on_the_wire(choice: str, wire: object) -> None:
    entry = "fine" if choice in ("auto", "none") else {"tool_calls": [{"name": "think"}]}
    with OpenAICompatibleServer([entry]) as server:
        await model(server).complete(ask(choice))
    assert server.requests[0]["tool_choice"] == wire


async def test_extra_headers_and_body_are_sent() -> None:
    with OpenAICompatibleServer(["ok"]) as server:
        llm = model(server, default_headers={"X-Trace": "t1"}, extra_body={"top_k": 20})
        await llm.complete(ask())
    assert server.received[0].headers["x-trace"] == "t1"
    assert server.requests[0]["top_k"] == 20


# -- replies ------------------------------------------------------------------------------------


async def test_replies_of_every_kind_are_parsed() -> None:
    script = [
        {
            "text": "calling",
            "tool_calls": [
                {"name": "search", "arguments": {"query": "x"}},
                {"name": "search", "arguments": "{'query': 'y',}"},
                {"name": "search", "arguments": "{{{"},
                {"name": "unknown_tool", "arguments": {}},
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 9, "cached_prompt_tokens": 16},
        },
        {"refusal": "I can't help with that"},
        {
            "tool_calls": [{"name": "search", "arguments": '{"query": "trunc'}],
            "finish_reason": "length",
        },
    ]
    with OpenAICompatibleServer(script) as server:
        llm = model(server)
        first = await llm.complete(ask())
        refused = await llm.complete(ask())
        cut = await llm.complete(ask())
    assert first.text == "calling" and first.model == "test-model"
    assert first.usage == Usage(30, 9, 16)
    good, repaired, broken, unknown = first.tool_calls
    assert isinstance(good, ToolCall) and good.arguments == {"query": "x"} and not good.repaired
    assert (
        isinstance(repaired, ToolCall)
        and repaired.repaired
        and repaired.arguments == {"query": "y"}
    )
    assert isinstance(broken, InvalidToolCall) and "not valid JSON" in broken.error
    assert unknown.name == "unknown_tool"
    assert refused.refusal == "I can't help with that" and refused.text is None
    assert cut.finish_reason == "length"
    assert isinstance(cut.tool_calls[0], InvalidToolCall) and "cut off" in cut.tool_calls[0].error


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [
        ("not_json", "the server's reply is not JSON: `<html>"),
        ("bad_json", "the server's reply is not JSON"),
        ("not_object", "not a JSON object"),
        ("no_choices", "has no `choices`"),
        ("empty_choices", "the server returned no choices"),
        ("no_message", "has no `message`"),
    ],
)
async def test_malformed_replies_are_clear_errors(kind: str, fragment: str) -> None:
    with (
        OpenAICompatibleServer([{"malformed": kind}]) as server,
        pytest.raises(BadResponseError) as caught,
    ):
        await model(server).complete(ask())
    assert fragment in caught.value.message
    assert "\n" not in caught.value.message and caught.value.hint


async def test_an_error_object_with_status_200() -> None:
    with (
        OpenAICompatibleServer([{"body": {"error": {"message": "model is loading"}}}]) as server,
        pytest.raises(BadResponseError, match="answered with an error: `model is loading`"),
    ):
        await model(server).complete(ask())


# -- streaming ----------------------------------------------------------------------------------


async def stream(llm: OpenAIChatModel, request: ChatRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(request)]


async def test_text_and_tool_calls_stream_with_usage() -> None:
    script = [
        {
            "text": "a streamed answer in pieces",
            "usage": {"prompt_tokens": 7, "completion_tokens": 5},
        },
        {
            "text": "and calls",
            "tool_calls": [{"name": "search", "arguments": {"query": "streaming works"}}],
        },
    ]
    with OpenAICompatibleServer(script) as server:
        llm = model(server)
        text = await stream(llm, ask())
        calls = await stream(llm, ask())
    assert all(isinstance(e, TextDelta) for e in text[:-1]) and len(text) > 3
    end = text[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.text == "a streamed answer in pieces" and end.response.usage == Usage(7, 5)
    deltas = [e for e in calls if isinstance(e, ToolCallDelta)]
    assert deltas[0].name == "search" and deltas[0].id == "call_1"
    assert "".join(d.arguments for d in deltas) == '{"query": "streaming works"}'
    final = calls[-1]
    assert isinstance(final, StreamEnd) and final.response.tool_calls[0].arguments == {
        "query": "streaming works"
    }  # type: ignore[union-attr]
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("kind", ["bad_json", "not_object", "empty_choices"])
async def test_malformed_streams_are_clear_errors(kind: str) -> None:
    with (
        OpenAICompatibleServer([{"malformed": kind}]) as server,
        pytest.raises(BadResponseError),
    ):
        await stream(model(server), ask())


async def test_an_error_event_in_a_stream() -> None:
    # A chunk carrying an error object, as servers send when generation fails midway.
    def reply(body: dict[str, Any]) -> object:
        return {"body": {"error": {"message": "generation failed"}}}

    with (
        OpenAICompatibleServer(reply) as server,
        pytest.raises(BackendError, match="generation failed"),
    ):
        await stream(model(server), ask())


async def test_a_stream_cut_off_mid_way_is_a_connection_error(sleeps: Sleeps) -> None:
    text = "a streamed answer that the server cuts off in the middle"
    script = [
        {"text": text, "drop_after": 3},  # the connection drops: the chunked body never ends
        {"text": text, "end_after": 3},  # the event stream ends early, without a finish
    ]
    with OpenAICompatibleServer(script, api_key=KEY) as server:
        llm = model(server, sleeps)
        seen: list[StreamEvent] = []
        with pytest.raises(BackendConnectionError) as dropped:
            async for event in llm.stream(ask()):
                seen.append(event)
        with pytest.raises(BackendConnectionError) as ended:
            await stream(llm, ask())
    # the pieces before the cut were passed on as they came; no reply followed them
    assert seen == [TextDelta(text[:12]), TextDelta(text[12:24])]
    assert "broke off before the reply ended" in dropped.value.message
    assert dropped.value.__cause__ is not None
    assert "ended before the reply did" in ended.value.message
    for error in (dropped.value, ended.value):
        assert error.hint == "the reply is incomplete and was not used: retry the request"
        assert KEY not in str(error)
    # a stream that broke off after it started is not retried: what was passed on stays
    assert sleeps == [] and len(server.requests) == 2


# -- retries and timeouts ----------------------------------------------------------------------


async def test_429_and_503_are_retried_with_backoff_and_retry_after(sleeps: Sleeps) -> None:
    script = [
        {"error": {"status": 429, "message": "slow down", "retry_after": 2}},
        {"error": 503},
        {"error": 502},
        "finally",
    ]
    with OpenAICompatibleServer(script) as server:
        response = await model(server, sleeps).complete(ask())
    assert response.text == "finally"
    # Retry-After first; then 3/4 of the ceilings 0.01 * 2**1 and 0.01 * 2**2.
    assert sleeps == [2.0, pytest.approx(0.015), pytest.approx(0.03)]
    assert len(server.requests) == 4


async def test_a_plain_function_may_stand_in_for_sleep() -> None:
    waited: list[float] = []
    with OpenAICompatibleServer([{"error": 503}, "ok"]) as server:
        assert (await model(server, waited.append).complete(ask())).text == "ok"  # type: ignore[arg-type]
    assert waited == [pytest.approx(0.0075)]


async def test_400_is_not_retried(sleeps: Sleeps) -> None:
    with (
        OpenAICompatibleServer(
            [{"error": {"status": 400, "message": "bad messages"}}, "unused"]
        ) as server,
        pytest.raises(BackendStatusError) as caught,
    ):
        await model(server, sleeps).complete(ChatRequest([UserMessage("hi")]))
    assert caught.value.status_code == 400 and "bad messages" in caught.value.message
    assert sleeps == [] and len(server.requests) == 1


async def test_retries_run_out(sleeps: Sleeps) -> None:
    with (
        OpenAICompatibleServer([{"error": 503}] * 4) as server,
        pytest.raises(BackendStatusError) as caught,
    ):
        await model(server, sleeps).complete(ask())
    assert caught.value.message == "the server answered 503: `scripted error 503` (after 3 retries)"
    assert len(sleeps) == 3 and len(server.requests) == 4
    assert isinstance(caught.value.__cause__, Exception)
    assert type(caught.value.__cause__).__module__.startswith("openai")


async def test_a_retry_after_beyond_max_delay_is_not_waited(sleeps: Sleeps) -> None:
    with (
        OpenAICompatibleServer([{"error": {"status": 429, "retry_after": 600}}]) as server,
        pytest.raises(BackendStatusError) as caught,
    ):
        await model(server, sleeps).complete(ask())
    assert caught.value.retry_after == 600.0 and sleeps == []


async def test_dropped_connections_are_retried(sleeps: Sleeps) -> None:
    with OpenAICompatibleServer(
        [{"disconnect": True}, "after the drop", {"disconnect": True}] + [{"disconnect": True}] * 3
    ) as server:
        llm = model(server, sleeps)
        assert (await llm.complete(ask())).text == "after the drop"
        with pytest.raises(BackendConnectionError) as caught:
            await llm.complete(ask())
    assert "could not reach" in caught.value.message and "(after 3 retries)" in caught.value.message
    assert caught.value.hint is not None and "base_url" in caught.value.hint


async def test_a_stream_that_fails_to_start_is_retried(sleeps: Sleeps) -> None:
    with OpenAICompatibleServer([{"error": 503}, "streamed after a retry"]) as server:
        events = await stream(model(server, sleeps), ask())
    assert (
        isinstance(events[-1], StreamEnd) and events[-1].response.text == "streamed after a retry"
    )
    assert len(sleeps) == 1


HELD = {"delay": 600, "text": "too late"}
"""An answer held back past any test's end (the server drops it when it stops): only the
client's timeout ends the wait for it."""


async def test_timeouts(sleeps: Sleeps) -> None:
    with OpenAICompatibleServer([HELD]) as server:
        llm = model(server, sleeps, timeout=0.05, retry=RetryPolicy(max_retries=0))
        with pytest.raises(BackendTimeoutError) as caught:
            await llm.complete(ask())
        assert caught.value.message == f"no answer from `{server.base_url}` within 0.05 s"
    assert sleeps == []


async def test_a_request_that_timed_out_is_retried(sleeps: Sleeps) -> None:
    # Every request is held until the client has timed out once (its back-off is in `sleeps`
    # by then), and answered after: whatever order the server reads them in. The timeout is
    # also what that answer must come within, so it is ample for a loaded machine; the test
    # waits it out once, for the held request.
    with OpenAICompatibleServer(lambda body: "in time" if sleeps else HELD) as server:
        patient = model(
            server,
            sleeps,
            timeout=2.0,
            retry=RetryPolicy(max_retries=2, base_delay=0.01, jitter=lambda: 0),
        )
        assert (await patient.complete(ask())).text == "in time"
    assert sleeps == [0.005]  # one timeout, one retry


# -- forcing against servers that cannot -------------------------------------------------------


async def test_a_server_that_rejects_tool_choice() -> None:
    with OpenAICompatibleServer(
        ['{"query": "from structured output"}', '{"query": "again"}'], reject_tool_choice=True
    ) as server:
        llm = model(server)
        first = await llm.complete(ask("search"))
        assert first.route == "structured"
        assert first.tool_calls[0].arguments == {"query": "from structured output"}  # type: ignore[union-attr]
        assert llm.lacking == {"tool", "required"}
        second = await llm.complete(ask("search"))
        assert second.tool_calls[0].arguments == {"query": "again"}  # type: ignore[union-attr]
    named, required, structured, direct = server.requests
    assert named["tool_choice"] == {"type": "function", "function": {"name": "search"}}
    assert required["tool_choice"] == "required" and [
        t["function"]["name"] for t in required["tools"]
    ] == ["search"]
    assert (
        "tools" not in structured
        and structured["response_format"]["json_schema"]["schema"] == SEARCH.parameters
    )
    assert "tools" not in direct and "response_format" in direct


async def test_a_server_that_ignores_tool_choice() -> None:
    # The model's text comes back as it is: that a reply ignored `tool_choice` says nothing
    # the forcing layer may hold against the server (the agent asks the model again).
    with OpenAICompatibleServer(["I'd rather chat"], ignore_tool_choice=True) as server:
        llm = model(server)
        response = await llm.complete(ask("search"))
    assert (response.route, response.text, response.tool_calls) == ("native", "I'd rather chat", ())
    assert len(server.requests) == 1 and llm.lacking == frozenset()


@pytest.mark.parametrize(
    ("choice", "form", "feature"),
    [
        ("search", "function", "tool"),
        ("required", "required", "required"),
        ("none", "none", "none"),
        (ToolChoiceAllowed(("think", "save"), "required"), "allowed_tools", "allowed"),
    ],
)
async def test_only_the_servers_400_marks_a_tool_choice_form_missing(
    choice: Any, form: str, feature: str
) -> None:
    # The server honours the form; the model calls a tool outside what was asked: not a lack.
    with OpenAICompatibleServer([{"tool_calls": [{"name": "search"}]}]) as server:
        llm = model(server)
        response = await llm.complete(ask(choice))
    assert [c.name for c in response.tool_calls] == ["search"] and llm.lacking == frozenset()
    # The server rejects the form with a 400 naming `tool_choice`: that is the lack.
    with OpenAICompatibleServer(["fine"], reject_tool_choice=[form]) as server:
        llm = model(server)
        await llm.complete(ask(choice))
    assert llm.lacking == {feature}


async def test_a_server_that_rejects_tool_choice_and_response_format() -> None:
    script = ['{"name": "save", "arguments": {}}']
    with OpenAICompatibleServer(
        script, reject_tool_choice=True, reject_response_format=True
    ) as server:
        response = await model(server).complete(
            ask(ToolChoiceAllowed(("think", "save"), "required"))
        )
    assert response.route == "prompt" and response.tool_calls[0].name == "save"
    last = server.requests[-1]
    assert "response_format" not in last and "tools" not in last
    assert "`think`, `save`" in last["messages"][-1]["content"]


async def test_a_forced_stream_against_a_server_that_rejects_tool_choice() -> None:
    with OpenAICompatibleServer(['{"query": "streamed"}'], reject_tool_choice=True) as server:
        events = await stream(model(server), ask("search"))
    assert [type(e).__name__ for e in events] == ["ToolCallDelta", "StreamEnd"]
    assert events[0] == ToolCallDelta(0, events[0].id, "search", '{"query": "streamed"}')  # type: ignore[union-attr]
    assert all(body["stream"] for body in server.requests)


async def test_a_model_that_cannot_be_forced_answers_in_text() -> None:
    capabilities = Capabilities(tool_choice=frozenset({"auto"}), response_format=False)
    with OpenAICompatibleServer(["I simply won't"]) as server:
        response = await model(server, capabilities=capabilities).complete(ask("search"))
    assert (response.route, response.text, response.tool_calls) == ("prompt", "I simply won't", ())


async def test_a_server_that_rejects_parallel_tool_calls() -> None:
    with OpenAICompatibleServer(["ok"], reject_parallel_tool_calls=True) as server:
        llm = model(server)
        assert (await llm.complete(ask(parallel_tool_calls=False))).text == "ok"
    assert llm.lacking == {"parallel_tool_calls"}


# -- secrets ------------------------------------------------------------------------------------


async def test_the_api_key_never_shows(caplog: pytest.LogCaptureFixture, sleeps: Sleeps) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {
        "error": {
            "status": 401,
            "message": f"Incorrect API key provided: {KEY[:12]}****{KEY[-4:]} ({KEY})",
        }
    }
    with OpenAICompatibleServer(
        [echo, {"error": 503}] + [{"disconnect": True}] * 4, api_key=None
    ) as server:
        llm = model(server, sleeps)
        errors: list[BaseException] = []
        for _ in range(3):
            try:
                await llm.complete(ask())
            except BackendError as error:
                errors.append(error)
        with OpenAICompatibleServer(["x"], api_key="another-key") as other:
            try:
                await model(other).complete(ask())
            except BackendError as error:
                errors.append(error)
    assert len(errors) == 4
    shown = [repr(llm), str(llm.__dict__.get("retry"))]
    for error in errors:
        shown += [str(error), repr(error), "".join(traceback.format_exception(error))]
    shown += [record.getMessage() for record in caplog.records]
    for text in shown:
        assert KEY not in text
        assert KEY[8:20] not in text
    assert "Incorrect API key provided: ***" in str(errors[0])


# -- one reading of a script, offline or over HTTP ---------------------------------------------

ENTRIES = st.one_of(
    st.text(max_size=40),
    st.fixed_dictionaries(
        {},
        optional={
            "text": st.text(max_size=30),
            "refusal": st.text(min_size=1, max_size=20),
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["search", "think", "ghost"])},
                    optional={
                        "arguments": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)
                        | st.sampled_from(["{'a': 1,}", "{{", '{"query": "cut', ""])
                    },
                ),
                max_size=3,
            ),
            "finish_reason": st.sampled_from(
                ["stop", "length", "tool_calls", "content_filter", "eos"]
            ),
            "usage": st.fixed_dictionaries(
                {"prompt_tokens": st.integers(0, 99), "completion_tokens": st.integers(0, 99)}
            ),
        },
    ),
)


async def test_a_script_reads_the_same_offline_and_over_http() -> None:
    current: list[object] = [None]

    async def three_readings(entry: object) -> list[tuple[Any, ...]]:
        async with OpenAIChatModel("test-model", base_url=server.base_url, api_key=KEY) as remote:
            offline = await ScriptedChatModel([entry], model="test-model").complete(ask())
            over_http = await remote.complete(ask())
            end = [e async for e in remote.stream(ask())][-1]
        assert isinstance(end, StreamEnd)
        return [_comparable(r) for r in (offline, over_http, end.response)]

    @settings(max_examples=25)
    @given(entry=ENTRIES)
    def same_reading(entry: object) -> None:
        current[0] = entry
        offline, over_http, streamed = anyio.run(three_readings, entry)
        assert offline == over_http == streamed

    with OpenAICompatibleServer(lambda body: current[0]) as server:
        # Hypothesis drives its examples synchronously, each in its own event loop.
        await anyio.to_thread.run_sync(same_reading)


def _comparable(response: ChatResponse) -> tuple[Any, ...]:
    calls = tuple(
        (c.name, c.arguments if isinstance(c, ToolCall) else c.raw_arguments, type(c).__name__)
        for c in response.tool_calls
    )
    return (response.text or None, calls, response.refusal, response.finish_reason, response.usage)


async def test_one_model_serves_several_event_loops() -> None:
    async def once(llm: OpenAIChatModel) -> str | None:
        async with llm:
            return (await llm.complete(ask())).text

    def in_two_loops(llm: OpenAIChatModel) -> list[str | None]:
        return [anyio.run(once, llm), anyio.run(once, llm)]

    with OpenAICompatibleServer(["one", "two"]) as server:
        llm = model(server)
        assert await anyio.to_thread.run_sync(in_two_loops, llm) == ["one", "two"]


async def test_the_model_closes_its_connections() -> None:
    with OpenAICompatibleServer(["one", "two"]) as server:
        async with model(server) as llm:
            assert (await llm.complete(ask())).text == "one"
        await llm.aclose()  # closing twice is fine
        assert (await llm.complete(ask())).text == "two"  # and it opens new ones when needed
        await llm.aclose()
