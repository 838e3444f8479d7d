"""agent.stream / ``agent.run_stream``, offline (``ScriptedChatModel``): the stream is the run
of ``run`` — the same events, in the same order, the same output or error — plus the final
answer's text as it comes; a reply that is not the answer is taken back; stopping early
cancels the run cleanly; bad input reads as it does for ``run``. The pieces of a streamed
``final_answer`` argument and of a text answer are checked on every split (hypothesis).

Over real HTTP (the openai client against the test server): tests/integration/
test_agent_stream_http.py; ``run`` against ``run_stream`` over random scripts:
tests/property/test_agent_stream_laws.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agent import (
    AgentOutput,
    AnswerDelta,
    AnswerDiscarded,
    Deny,
    Event,
    MaxIterationsError,
    RequirementAgent,
    RunStream,
    StreamItem,
    ToolStartEvent,
    tool,
)
from agent.stream import AnswerDraft
from backends import (
    BackendConnectionError,
    Capabilities,
    ScriptedChatModel,
    ScriptExhaustedError,
    TextDelta,
    ToolCallDelta,
)
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    PolicyError,
)

pytestmark = pytest.mark.anyio


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def send_email(to: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def answer(response: str) -> dict[str, Any]:
    return call(FINAL_ANSWER, response=response)


LONG = 'Z3 is an SMT solver "from" Microsoft Research.\nÉté: 🚀 — \\ done'


# -- helpers -------------------------------------------------------------------------------------


async def streamed(
    agent: RequirementAgent[Any], prompt: str = "go", **options: Any
) -> tuple[list[StreamItem], AgentOutput[Any] | Exception]:
    """Every item of the streamed run, and its output (or the error the stream raised)."""
    items: list[StreamItem] = []
    async with agent.run_stream(prompt, **options) as stream:
        try:
            async for item in stream:
                items.append(item)
        except Exception as exc:
            return items, exc
    return items, stream.output


async def listened(
    agent: RequirementAgent[Any], prompt: str = "go", **options: Any
) -> tuple[list[Event], AgentOutput[Any] | Exception]:
    """The events a listener of every kind, registered last, hears of ``run``; its output."""
    heard: list[Event] = []
    off = agent.emitter.on("*", heard.append)
    try:
        return heard, await agent.run(prompt, **options)
    except Exception as exc:
        return heard, exc
    finally:
        off()


def events_of(items: Sequence[StreamItem]) -> list[Event]:
    return [i for i in items if not isinstance(i, AnswerDelta | AnswerDiscarded)]


def shape(item: object) -> tuple[Any, ...]:
    """What an event says, without what differs from run to run (ids, times, error objects)."""
    fields = []
    for field in dataclasses.fields(item):  # type: ignore[arg-type]
        if field.name in ("run_id", "parent_run_id", "timestamp"):
            continue
        value = getattr(item, field.name)
        if isinstance(value, BaseException):
            value = (type(value).__name__, str(value))
        fields.append((field.name, value))
    return (type(item).__name__, tuple(fields))


def same_outcome(left: AgentOutput[Any] | Exception, right: AgentOutput[Any] | Exception) -> None:
    if isinstance(left, Exception) or isinstance(right, Exception):
        assert type(left) is type(right) and str(left) == str(right)
        return
    assert shape(left) == shape(right)


def check_answer_pieces(items: Sequence[StreamItem]) -> None:
    """The pieces since the last discard add up to a text answer by its ``final_answer`` event;
    a discard takes back something; no draft is left standing when a run fails; nothing is
    shown after the answer."""
    draft: list[str] = []
    answered = False
    for item in items:
        if isinstance(item, AnswerDelta):
            assert not answered and item.text
            draft.append(item.text)
        elif isinstance(item, AnswerDiscarded):
            assert draft, "a discard takes back something"
            draft = []
        elif item.kind == "final_answer":
            assert "".join(draft) == (item.answer if isinstance(item.answer, str) else "")
            answered = True
        elif item.kind == "run.finish" and item.error is not None:
            assert draft == [], "a failed run leaves no answer standing"


def agent_with(
    script: list[Any], tools: Sequence[Any] = (search,), requirements: Sequence[Any] = (), **kw: Any
) -> RequirementAgent[Any]:
    return RequirementAgent(ScriptedChatModel(script), list(tools), list(requirements), **kw)


# -- the answer's text, as it comes -------------------------------------------------------------


async def test_the_pieces_of_a_final_answer_call_add_up_to_the_answer() -> None:
    agent = agent_with(
        [call("search", query="z3"), answer(LONG)],
        requirements=[ConditionalRequirement(search, min_invocations=1)],
    )
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.answer == LONG
    pieces = [i.text for i in items if isinstance(i, AnswerDelta)]
    assert len(pieces) > 3  # it came in pieces, as it streamed
    assert "".join(pieces) == LONG
    kinds = [i.kind for i in items]
    # the pieces come while the reply streams: after its request, before its response
    first = kinds.index("answer.delta")
    last = max(i for i, k in enumerate(kinds) if k == "answer.delta")
    assert kinds[first - 1] == "model.request" and kinds[last + 1] == "model.response"
    assert kinds.index("final_answer") > last
    assert kinds[-1] == "run.finish" and "answer.discarded" not in kinds
    check_answer_pieces(items)


async def test_a_text_answer_streams_as_it_is_taken() -> None:
    # whitespace around the text is not part of the answer: it is held back, never shown
    agent = agent_with(["  \n A plain answer, streamed in several pieces.  \n"])
    items, out = await streamed(agent)
    assert (
        isinstance(out, AgentOutput) and out.answer == "A plain answer, streamed in several pieces."
    )
    pieces = [i.text for i in items if isinstance(i, AnswerDelta)]
    assert len(pieces) > 2 and "".join(pieces) == out.answer
    check_answer_pieces(items)


async def test_text_before_a_call_is_taken_back_when_the_call_starts() -> None:
    agent = agent_with(
        [
            {"text": "Let me search that for you.", **call("search", query="z3")},
            "Z3 is an SMT solver.",
        ],
        final_answer_as_tool=False,
    )
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.answer == "Z3 is an SMT solver."
    kinds = [i.kind for i in items]
    discard = next(i for i in items if isinstance(i, AnswerDiscarded))
    assert discard.reason == "the reply went on to call a tool"
    # taken back while the reply still streamed, before the call ran
    assert (
        kinds.index("answer.discarded") < kinds.index("model.response") < kinds.index("tool.start")
    )
    check_answer_pieces(items)


async def test_no_piece_is_shown_while_the_run_may_not_stop() -> None:
    agent = agent_with(
        ["I think it is a solver.", call("search", query="z3"), answer("An SMT solver.")],
        requirements=[ConditionalRequirement(search, min_invocations=1)],
    )
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.retries == 1
    assert "".join(i.text for i in items if isinstance(i, AnswerDelta)) == "An SMT solver."
    assert not any(isinstance(i, AnswerDiscarded) for i in items)


async def test_an_answer_a_listener_refuses_is_taken_back() -> None:
    agent = agent_with([answer("Too early."), answer("The answer.")])
    refused: list[str] = []

    def once(event: ToolStartEvent) -> Deny | None:
        if event.tool == FINAL_ANSWER and not refused:
            refused.append(event.call_id)
            return Deny("check with the user first")
        return None

    agent.emitter.on("tool.start", once)
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.answer == "The answer."
    discards = [i for i in items if isinstance(i, AnswerDiscarded)]
    assert len(discards) == 1 and "was refused" in discards[0].reason
    # the refused call never reached the stream as a tool start: it was refused first
    starts = [i for i in items if isinstance(i, ToolStartEvent)]
    assert len(starts) == 1 and starts[0].call_id != refused[0]
    assert [i.call_id for i in items if i.kind == "tool.refused"] == refused
    check_answer_pieces(items)


async def test_a_typed_answer_is_not_streamed_as_text() -> None:
    class Verdict(BaseModel):
        approved: bool
        amount: float

    agent = RequirementAgent(
        ScriptedChatModel([call(FINAL_ANSWER, approved=True, amount=30)]),
        [search],
        expected_output=Verdict,
    )
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.answer == Verdict(approved=True, amount=30)
    assert not any(isinstance(i, AnswerDelta | AnswerDiscarded) for i in items)


async def test_an_answer_obtained_through_structured_output_comes_whole() -> None:
    # The server cannot force a tool: the answer comes as JSON text, read once complete.
    llm = ScriptedChatModel(
        ['{"response": "Forced through the structured rung."}'],
        capabilities=Capabilities(tool_choice=frozenset({"auto"})),
    )
    agent = RequirementAgent(llm, [])  # `final_answer` alone: it is forced
    items, out = await streamed(agent)
    assert isinstance(out, AgentOutput) and out.answer == "Forced through the structured rung."
    pieces = [i.text for i in items if isinstance(i, AnswerDelta)]
    assert pieces == ["Forced through the structured rung."]
    assert all(r.stream for r in llm.requests) and llm.requests[0].response_format is not None


# -- the same run as `run` ----------------------------------------------------------------------


def first_denied(tool_name: str, arguments: Any) -> bool:
    first_denied.calls += 1  # type: ignore[attr-defined]
    return first_denied.calls > 1  # type: ignore[attr-defined]


def refuse_first_answer() -> Callable[[ToolStartEvent], Deny | None]:
    seen: list[str] = []

    def listener(event: ToolStartEvent) -> Deny | None:
        if event.tool != FINAL_ANSWER:
            return None
        seen.append(event.call_id)
        return Deny("not yet") if len(seen) == 1 else None

    return listener


def scenario(name: str) -> RequirementAgent[Any]:
    """A fresh agent (and model) for each scenario, the same every time it is built."""
    if name == "tools-then-answer":
        return agent_with(
            [call("search", query="z3"), answer(LONG)],
            requirements=[ConditionalRequirement(search, min_invocations=1)],
        )
    if name == "refusals-and-a-rescued-text":
        return agent_with(
            [
                {
                    "tool_calls": [
                        {"name": "send_email", "arguments": {"to": "ada"}},
                        {"name": "nope", "arguments": {}},
                    ]
                },
                {"text": "Searching.", **call("search", query="z3")},
                {"tool_calls": [{"name": "send_email", "arguments": "{'to': 'ada',}"}]},
                "  Sent it.  ",
            ],
            tools=[search, send_email],
            requirements=[ConditionalRequirement(send_email, only_after=[search])],
            final_answer_as_tool=False,
        )
    if name == "a-listener-refuses-the-answer":
        agent = agent_with([answer("first"), answer("second")])
        agent.emitter.on("tool.start", refuse_first_answer())
        return agent
    if name == "permission-denied":
        first_denied.calls = 0  # type: ignore[attr-defined]
        return agent_with(
            [call("search", query="a"), call("search", query="b"), answer("done")],
            requirements=[AskPermissionRequirement(include=[search], handler=first_denied)],
        )
    if name == "conflict-answered":
        return agent_with(
            [call("search", query="z3"), call("search", query="z3"), answer("I cannot go on.")],
            requirements=[
                ConditionalRequirement(search, min_invocations=1),
                AskPermissionRequirement(
                    include=[search], handler=lambda t, a: False, remember_choices=True
                ),
            ],
            on_conflict="answer",
        )
    if name == "conflict-raised":
        return agent_with(
            [call("search", query="z3")],
            requirements=[
                ConditionalRequirement(search, min_invocations=1),
                AskPermissionRequirement(
                    include=[search], handler=lambda t, a: False, remember_choices=True
                ),
            ],
        )
    if name == "script-runs-out":
        return agent_with([call("search", query="z3")])
    if name == "budget-runs-out":
        return agent_with([call("search", query="a"), call("search", query="b")])
    raise AssertionError(name)


SCENARIOS = [
    "tools-then-answer",
    "refusals-and-a-rescued-text",
    "a-listener-refuses-the-answer",
    "permission-denied",
    "conflict-answered",
    "conflict-raised",
    "script-runs-out",
    "budget-runs-out",
]


@pytest.mark.parametrize("name", SCENARIOS)
async def test_the_stream_is_the_run_of_run(name: str) -> None:
    options = {"max_iterations": 2} if name == "budget-runs-out" else {}
    heard, ran = await listened(scenario(name), **options)
    items, got = await streamed(scenario(name), **options)
    # the same events in the same order, and the same output (or the same error)
    assert [shape(e) for e in events_of(items)] == [shape(e) for e in heard]
    same_outcome(got, ran)
    check_answer_pieces(items)


@pytest.mark.parametrize("name", SCENARIOS)
async def test_the_stream_yields_the_event_objects_listeners_get(name: str) -> None:
    agent = scenario(name)
    heard: list[Event] = []
    agent.emitter.on("*", heard.append)
    options = {"max_iterations": 2} if name == "budget-runs-out" else {}
    items, _ = await streamed(agent, **options)
    assert len(events_of(items)) == len(heard)
    assert all(a is b for a, b in zip(events_of(items), heard, strict=True))


async def test_a_failed_run_ends_with_its_finish_event_then_raises_what_run_raises() -> None:
    items, error = await streamed(scenario("script-runs-out"))
    assert isinstance(error, ScriptExhaustedError)
    last = items[-1]
    assert last.kind == "run.finish" and last.error is error
    with pytest.raises(ConflictError):
        async with scenario("conflict-raised").run_stream("go") as stream:
            await stream.result()
    stream2 = scenario("budget-runs-out").run_stream("go", max_iterations=1)
    async with stream2:
        with pytest.raises(MaxIterationsError):
            await stream2.result()
        assert isinstance(stream2.error, MaxIterationsError)
        with pytest.raises(PolicyError, match="it failed with MaxIterationsError"):
            stream2.output  # noqa: B018
        # once raised, the iteration is over
        assert [item async for item in stream2] == []


async def test_result_reads_the_rest_and_returns_the_output() -> None:
    agent = scenario("tools-then-answer")
    async with agent.run_stream("go") as stream:
        with pytest.raises(PolicyError, match="has not ended yet"):
            stream.output  # noqa: B018
        first = await anext(stream)
        assert first.kind == "run.start"
        out = await stream.result()
    assert out.answer == LONG and stream.output is out and stream.error is None


async def test_a_handoffs_events_reach_the_stream_but_not_its_answer() -> None:
    inner = RequirementAgent(
        ScriptedChatModel([answer("refunded 30 EUR")]), [search], name="refunds"
    )
    outer = RequirementAgent(
        ScriptedChatModel([call("refunds", task="refund order 7"), answer("Done.")]),
        [inner.as_tool()],
        name="support",
    )
    items, out = await streamed(outer)
    assert isinstance(out, AgentOutput) and out.answer == "Done."
    paths = {i.path for i in events_of(items)}
    assert paths == {("support",), ("support", "refunds")}
    # only the streamed run's answer comes in pieces
    deltas = [i for i in items if isinstance(i, AnswerDelta)]
    assert "".join(d.text for d in deltas) == "Done."
    assert {d.path for d in deltas} == {("support",)}
    inner_answer = next(i for i in items if i.kind == "final_answer" and i.path[-1] == "refunds")
    assert inner_answer.answer == "refunded 30 EUR"


async def test_a_stream_inside_a_streamed_runs_tool_feeds_both() -> None:
    inner = RequirementAgent(ScriptedChatModel([answer("inner answer")]), name="inner")
    inner_items: list[StreamItem] = []

    @tool
    async def delegate(task: str) -> str:
        """Ask the inner agent."""
        async with inner.run_stream(task) as stream:
            async for item in stream:
                inner_items.append(item)
        return str(stream.output.answer)

    outer = agent_with([call("delegate", task="x"), answer("outer answer")], tools=[delegate])
    items, out = await streamed(outer)
    assert isinstance(out, AgentOutput) and out.steps[0].output == "inner answer"
    # the inner stream has its run's events and answer; the outer one its events too
    assert "".join(i.text for i in inner_items if isinstance(i, AnswerDelta)) == "inner answer"
    inner_events = [shape(e) for e in events_of(inner_items)]
    nested = [shape(e) for e in events_of(items) if e.path == ("agent", "inner")]
    assert nested == inner_events
    assert "".join(i.text for i in items if isinstance(i, AnswerDelta)) == "outer answer"


# -- a stream cut off ----------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [{"drop_after": 4}, {"end_after": 4}])
async def test_a_stream_cut_off_ends_the_run_with_a_connection_error(cut: dict[str, int]) -> None:
    agent = agent_with([{"text": "A text answer cut off in the middle of it.", **cut}])
    items, error = await streamed(agent)
    assert isinstance(error, BackendConnectionError)
    kinds = [i.kind for i in items]
    # pieces were shown, then taken back; no answer, no response: the run failed
    assert "answer.delta" in kinds and "final_answer" not in kinds
    assert "model.response" not in kinds
    discard = next(i for i in items if isinstance(i, AnswerDiscarded))
    assert discard.reason.startswith("the reply failed: BackendConnectionError")
    assert kinds[-2:] == ["answer.discarded", "run.finish"]
    check_answer_pieces(items)
    # `run` fails the same way on the same script (a request that is not streamed gets no
    # answer at all)
    _, ran = await listened(agent_with([{"text": "x", **cut}]))
    assert isinstance(ran, BackendConnectionError)


# -- stopping early ------------------------------------------------------------------------------


class Blocking:
    """A tool that runs until cancelled, and records its cleanup."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cleaned_up = False

        @tool
        async def wait() -> str:
            """Wait for something that never comes."""
            self.started.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.cleaned_up = True
            return "never"

        self.tool = wait


def task_ids() -> set[int]:
    """The tasks running now (asyncio's closing of an async generator a library left
    suspended belongs to no run: it is not counted)."""
    return {
        task.id
        for task in anyio.get_running_tasks()
        if type(task.coro).__name__ != "async_generator_athrow"
    }


async def test_a_break_cancels_the_run_and_its_running_tool() -> None:
    blocking = Blocking()
    agent = agent_with([call("wait")], tools=[blocking.tool])
    heard: list[str] = []
    agent.emitter.on("*", lambda e: heard.append(e.kind))
    before = task_ids()
    async with agent.run_stream("go") as stream:
        async for item in stream:
            if item.kind == "tool.start":
                await blocking.started.wait()  # the tool is running
                break
    assert blocking.cleaned_up
    assert task_ids() == before  # nothing left running
    assert heard[-1] == "tool.start" and "run.finish" not in heard
    with pytest.raises(PolicyError, match="closed before the run ended"):
        stream.output  # noqa: B018
    assert [item async for item in stream] == []


async def test_a_break_in_the_middle_of_the_answer_closes_the_models_stream() -> None:
    llm = ScriptedChatModel([answer(LONG), "next"])
    agent = RequirementAgent(llm, [search])
    before = task_ids()
    async with agent.run_stream("go") as stream:
        async for item in stream:
            if isinstance(item, AnswerDelta):
                break
    assert task_ids() == before
    # the model is free for the next request
    assert (await llm.complete(llm.requests[0].request)).text == "next"


async def test_aclose_inside_the_block_stops_the_run_and_not_the_block() -> None:
    blocking = Blocking()
    agent = agent_with([call("wait")], tools=[blocking.tool])
    async with agent.run_stream("go") as stream:
        async for item in stream:
            if item.kind == "tool.start":
                await blocking.started.wait()
                await stream.aclose()
        assert blocking.cleaned_up
        await anyio.lowlevel.checkpoint()  # the block itself was not cancelled
        after_close = "still here"
    assert after_close == "still here"


async def test_an_error_in_the_block_cancels_the_run_and_comes_out_as_it_is() -> None:
    blocking = Blocking()
    agent = agent_with([call("wait")], tools=[blocking.tool])
    with pytest.raises(KeyError, match="consumer"):
        async with agent.run_stream("go") as stream:
            async for item in stream:
                if item.kind == "tool.start":
                    await blocking.started.wait()
                    raise KeyError("consumer")
    assert blocking.cleaned_up


async def test_a_stream_left_unread_is_cancelled_when_the_block_ends() -> None:
    llm = ScriptedChatModel([answer("never read")])
    agent = RequirementAgent(llm, [search])
    before = task_ids()
    async with agent.run_stream("go"):
        pass
    assert task_ids() == before
    # the run held at its first event: it never asked the model
    assert llm.requests == []


async def test_a_cancelled_consumer_cancels_the_run() -> None:
    blocking = Blocking()
    agent = agent_with([call("wait")], tools=[blocking.tool])
    with anyio.CancelScope() as scope:
        async with agent.run_stream("go") as stream:
            async for item in stream:
                if item.kind == "tool.start":
                    await blocking.started.wait()
                    scope.cancel()
                    await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught and blocking.cleaned_up


# -- using it wrong ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": 3}, "run_stream: prompt=`3` must be text"),
        (
            {"prompt": "go", "max_iterations": 0},
            "run_stream: max_iterations=`0` must be at least 1",
        ),
        ({"prompt": "go", "max_iterations": True}, "run_stream: max_iterations="),
        ({"prompt": "go", "max_retries_per_step": -1}, "run_stream: max_retries_per_step="),
        ({"prompt": "go", "total_max_retries": "3"}, "run_stream: total_max_retries="),
    ],
)
async def test_bad_options_are_the_errors_of_run(options: dict[str, Any], message: str) -> None:
    agent = agent_with([])
    with pytest.raises(PolicyError) as streamed_error:
        agent.run_stream(**options)  # raised at once, before anything runs
    with pytest.raises(PolicyError) as run_error:
        await agent.run(**options)
    assert streamed_error.value.message.startswith(message)
    assert streamed_error.value.message == run_error.value.message.replace("run:", "run_stream:", 1)


async def test_a_stream_is_read_inside_async_with_and_entered_once() -> None:
    agent = agent_with([answer("x")])
    stream: RunStream[Any] = agent.run_stream("go")
    with pytest.raises(PolicyError, match="inside `async with`"):
        async for _ in stream:
            pass
    async with stream:
        await stream.result()
    with pytest.raises(PolicyError, match="entered already"):
        async with stream:
            pass


def test_a_stream_not_entered_runs_nothing() -> None:
    llm = ScriptedChatModel([answer("x")])
    agent = RequirementAgent(llm, [search])
    heard: list[Event] = []
    agent.emitter.on("*", heard.append)
    assert repr(agent.run_stream("go")) == "RunStream(<new>)"
    assert heard == [] and llm.requests == []


# -- the draft, piece by piece -------------------------------------------------------------------

WHERE = {"run_id": "r", "path": ("a",), "iteration": 1}


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(max(c, 0), len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@given(st.text(), st.lists(st.integers(0, 400), max_size=12), st.booleans())
def test_a_final_answer_argument_decodes_on_every_split(
    text: str, cuts: list[int], ascii_only: bool
) -> None:
    raw = json.dumps({"response": text}, ensure_ascii=ascii_only)
    draft = AnswerDraft(True)
    shown: list[Any] = []
    for index, piece in enumerate(pieces_of(raw, cuts)):
        name = FINAL_ANSWER if index == 0 else None
        shown += draft.feed(ToolCallDelta(0, "c" if index == 0 else None, name, piece), WHERE)
    assert all(isinstance(item, AnswerDelta) for item in shown)
    assert "".join(item.text for item in shown) == text
    assert draft.settle(text, WHERE) == []


@given(st.text(), st.lists(st.integers(0, 200), max_size=12))
def test_a_text_answer_is_shown_trimmed_on_every_split(text: str, cuts: list[int]) -> None:
    draft = AnswerDraft(True)
    shown: list[Any] = []
    for piece in pieces_of(text, cuts):
        shown += draft.feed(TextDelta(piece), WHERE)
    assert "".join(item.text for item in shown) == text.strip()
    # the answer the rescue takes is the stripped text: nothing to add, nothing to take back
    assert draft.settle(text.strip(), WHERE) == []


@pytest.mark.parametrize(
    "raw",
    [
        '{"answer": "x", "response": "y"}',  # another field first
        '["response"]',
        '{"response": 42}',
        "{'response': 'single quotes'}",
        '{"response": "bad \\q escape"}',
    ],
)
def test_an_argument_it_cannot_follow_shows_nothing_and_comes_whole(raw: str) -> None:
    draft = AnswerDraft(True)
    shown = draft.feed(ToolCallDelta(0, "c", FINAL_ANSWER, raw), WHERE)
    assert shown == []
    settled = draft.settle("the answer", WHERE)
    assert settled == [AnswerDelta(text="the answer", **WHERE)]


def test_an_answer_that_differs_from_what_was_shown_is_shown_again() -> None:
    draft = AnswerDraft(True)
    draft.feed(TextDelta('{"response": "x"}'), WHERE)
    assert draft.settle("x", WHERE) == [
        AnswerDiscarded(reason="the answer differs from the text streamed", **WHERE),
        AnswerDelta(text="x", **WHERE),
    ]
    # a shown prefix is completed, not repeated
    prefix = AnswerDraft(True)
    prefix.feed(TextDelta("Hello"), WHERE)
    assert prefix.settle("Hello, world", WHERE) == [AnswerDelta(text=", world", **WHERE)]
    # nothing is shown when the reply may not be the answer
    off = AnswerDraft(False)
    assert off.feed(TextDelta("Hello"), WHERE) == []
    assert off.feed(ToolCallDelta(0, "c", FINAL_ANSWER, '{"response": "x"}'), WHERE) == []


def test_only_the_first_final_answer_call_of_a_reply_is_followed() -> None:
    draft = AnswerDraft(True)
    items = draft.feed(ToolCallDelta(0, "c0", "search", '{"query": "x"}'), WHERE)
    items += draft.feed(ToolCallDelta(1, "c1", FINAL_ANSWER, '{"response": "one"}'), WHERE)
    items += draft.feed(ToolCallDelta(2, "c2", FINAL_ANSWER, '{"response": "two"}'), WHERE)
    assert items == [AnswerDelta(text="one", **WHERE)]
