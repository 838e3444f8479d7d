"""``agent.run_stream`` over real HTTP: the real ``openai`` client (``OpenAIChatModel``) reads
the real test server's server-sent events on 127.0.0.1, nothing patched. The answer's pieces
arrive as the server sends them and add up to the answer; the stream is the run of ``run``
(the same events, the same output, over the same scripts); a stream the server cuts off
(the connection drops, or the event stream ends early) ends the run with the connection
error ``run`` raises for a failed reply, never a hang and never a half answer given as the
answer; a consumer that stops early closes the model's stream and leaves nothing running.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from agent import (
    AgentOutput,
    AnswerDelta,
    AnswerDiscarded,
    Event,
    RequirementAgent,
    StreamItem,
    tool,
)
from backends import (
    BackendConnectionError,
    ChatRequest,
    OpenAIChatModel,
    RetryPolicy,
    UserMessage,
)
from backends.testing import OpenAICompatibleServer
from ruleengine import FINAL_ANSWER, ConditionalRequirement

KEY = "sk-stream-test-0123456789abcdef"
ANSWER = 'Z3 is an SMT solver "from" Microsoft Research.\nIt decides ∀∃ formulas 🚀.'


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPTS = {
    "tool-then-answer": [call("search", query="z3"), call(FINAL_ANSWER, response=ANSWER)],
    "refused-then-text": [
        "I believe it is a solver.",  # may not stop yet: refused, asked again
        call("search", query="z3"),
        # may stop now: the text may be the answer, until the call starts
        {"text": "Let me check once more.", **call("search", query="z3 solver")},
        {"text": ANSWER, "usage": {"prompt_tokens": 40, "completion_tokens": 12}},
    ],
}


def model(server: OpenAICompatibleServer) -> OpenAIChatModel:
    # No retries: a failed reply fails the run at once, streamed or not.
    return OpenAIChatModel(
        "test-model", base_url=server.base_url, api_key=KEY, retry=RetryPolicy(max_retries=0)
    )


def agent_for(llm: OpenAIChatModel) -> RequirementAgent[Any]:
    return RequirementAgent(
        llm, [search], [ConditionalRequirement(search, min_invocations=1)], name="researcher"
    )


async def stream_against(
    server: OpenAICompatibleServer,
) -> tuple[list[StreamItem], AgentOutput[Any] | Exception]:
    async with model(server) as llm:
        items: list[StreamItem] = []
        async with agent_for(llm).run_stream("What is Z3?") as stream:
            try:
                async for item in stream:
                    items.append(item)
            except Exception as exc:
                return items, exc
        return items, stream.output


async def run_against(
    server: OpenAICompatibleServer,
) -> tuple[list[Event], AgentOutput[Any] | Exception]:
    async with model(server) as llm:
        agent = agent_for(llm)
        heard: list[Event] = []
        agent.emitter.on("*", heard.append)
        try:
            return heard, await agent.run("What is Z3?")
        except Exception as exc:
            return heard, exc


def shape(item: object) -> tuple[Any, ...]:
    """What an event or an output says, without ids, times and error objects."""
    fields = []
    for field in dataclasses.fields(item):  # type: ignore[arg-type]
        if field.name in ("run_id", "parent_run_id", "timestamp"):
            continue
        value = getattr(item, field.name)
        if isinstance(value, BaseException):
            value = (type(value).__name__, str(value))
        fields.append((field.name, value))
    return (type(item).__name__, tuple(fields))


def events_of(items: Sequence[StreamItem]) -> list[Event]:
    return [i for i in items if not isinstance(i, AnswerDelta | AnswerDiscarded)]


def running_tasks() -> set[int]:
    """The tasks running now, but asyncio's closing of async generators a library left
    suspended when its stream was closed early (the HTTP client's): they belong to no run,
    and end on their own."""
    return {
        task.id
        for task in anyio.get_running_tasks()
        if type(task.coro).__name__ != "async_generator_athrow"
    }


def answer_pieces(items: Sequence[StreamItem]) -> list[str]:
    """The pieces of the last draft (those since the last discard)."""
    pieces: list[str] = []
    for item in items:
        if isinstance(item, AnswerDelta):
            pieces.append(item.text)
        elif isinstance(item, AnswerDiscarded):
            pieces = []
    return pieces


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_answer_streams_over_http_and_adds_up(name: str) -> None:
    with OpenAICompatibleServer(SCRIPTS[name], api_key=KEY) as server:
        items, out = anyio.run(stream_against, server)
    assert isinstance(out, AgentOutput) and out.answer == ANSWER
    pieces = answer_pieces(items)
    assert len(pieces) > 3 and "".join(pieces) == ANSWER  # piece by piece, as it was sent
    assert all(body["stream"] is True for body in server.requests)
    kinds = [item.kind for item in items]
    assert kinds[-2:] == ["final_answer", "run.finish"]
    if name == "refused-then-text":  # the preamble of the call was shown, then taken back
        assert kinds.count("answer.discarded") == 1 and out.retries == 1


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_over_http_the_stream_is_the_run_of_run(name: str) -> None:
    with OpenAICompatibleServer(SCRIPTS[name], api_key=KEY) as server:
        heard, ran = anyio.run(run_against, server)
    with OpenAICompatibleServer(SCRIPTS[name], api_key=KEY) as server:
        items, got = anyio.run(stream_against, server)
    assert [shape(e) for e in events_of(items)] == [shape(e) for e in heard]
    assert isinstance(ran, AgentOutput) and isinstance(got, AgentOutput)
    assert shape(got) == shape(ran)


@pytest.mark.parametrize("cut", ["drop_after", "end_after"])
def test_a_stream_cut_off_mid_way_ends_the_run_with_a_connection_error(cut: str) -> None:
    script = [call("search", query="z3"), {**call(FINAL_ANSWER, response=ANSWER), cut: 5}]
    with OpenAICompatibleServer(script, api_key=KEY) as server:
        items, error = anyio.run(stream_against, server)
    assert isinstance(error, BackendConnectionError)
    assert "the reply is incomplete" in (error.hint or "")
    kinds = [item.kind for item in items]
    # pieces of the answer were shown, then taken back: the run failed, it did not answer
    assert "answer.delta" in kinds and "final_answer" not in kinds
    assert kinds[-2:] == ["answer.discarded", "run.finish"] and answer_pieces(items) == []
    finish = items[-1]
    assert finish.kind == "run.finish" and finish.error is error and finish.answer is None
    assert [s.tool for s in finish.steps] == ["search"]
    # `run` fails on the same reply with the same kind of error
    script = [call("search", query="z3"), {**call(FINAL_ANSWER, response=ANSWER), cut: 5}]
    with OpenAICompatibleServer(script, api_key=KEY) as server:
        _, ran = anyio.run(run_against, server)
    assert isinstance(ran, BackendConnectionError)


def test_a_break_mid_answer_closes_the_models_stream_and_leaves_nothing_running() -> None:
    script = [call("search", query="z3"), call(FINAL_ANSWER, response=ANSWER), "next reply"]

    async def main(server: OpenAICompatibleServer) -> tuple[int, str | None, bool]:
        async with model(server) as llm:
            before = running_tasks()
            async with agent_for(llm).run_stream("What is Z3?") as stream:
                async for item in stream:
                    if isinstance(item, AnswerDelta):
                        break
            left = running_tasks() - before
            # the same model, on the same server, answers the next request
            reply = await llm.complete(ChatRequest([UserMessage("again")]))
            return len(left), reply.text, stream.error is None

    with OpenAICompatibleServer(script, api_key=KEY) as server:
        left, text, no_error = anyio.run(main, server)
    assert left == 0 and text == "next reply" and no_error
