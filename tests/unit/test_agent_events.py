"""agent.events: the emitter (kinds, namespaces, catch-all, order, blocking or not, sync or async,
Deny, failing listeners), the events of a run in order, and the trajectory logger."""

from __future__ import annotations

import functools
import io

import anyio
import anyio.lowlevel
import pytest

from agent import (
    Deny,
    Emitter,
    ListenerError,
    RequirementAgent,
    StepStartEvent,
    ToolStartEvent,
    TrajectoryLogger,
    tool,
)
from agent.events import KINDS, RunEvents
from backends import ScriptedChatModel
from ruleengine import FINAL_ANSWER, ConditionalRequirement, PolicyError

ran: list[str] = []


@tool
def search(query: str) -> str:
    """Search the web."""
    ran.append(query)
    return f"found {query}"


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def script() -> list[dict]:
    return [call("search", query="z3"), call(FINAL_ANSWER, response="Z3 is a solver.")]


def run(agent, prompt: str = "what is z3?", **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


def test_a_run_emits_its_events_in_order():
    agent = RequirementAgent(ScriptedChatModel(script()), [search], name="researcher")
    kinds: list[str] = []
    agent.emitter.on("*", lambda event: kinds.append(event.kind))
    out = run(agent)
    assert kinds == [
        "run.start",
        "step.start",
        "model.request",
        "model.response",
        "tool.start",
        "tool.success",
        "step.start",
        "model.request",
        "model.response",
        "tool.start",
        "tool.success",
        "final_answer",
        "run.finish",
    ]
    assert out.answer == "Z3 is a solver."


def test_events_carry_the_run_and_its_path():
    agent = RequirementAgent(ScriptedChatModel(script()), [search], name="researcher")
    events = []
    agent.emitter.on("*", events.append)
    out = run(agent)
    assert {e.run_id for e in events} == {out.run_id}
    assert {e.path for e in events} == {("researcher",)}
    step = next(e for e in events if isinstance(e, StepStartEvent))
    assert step.pass_.allowed == ("search", FINAL_ANSWER)
    start = next(e for e in events if isinstance(e, ToolStartEvent))
    assert (start.tool, dict(start.arguments), start.iteration) == ("search", {"query": "z3"}, 1)


def test_namespaces_and_order():
    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    seen: list[str] = []
    agent.emitter.on("tool.*", lambda e: seen.append(f"a:{e.kind}"))
    agent.emitter.on("tool.success", lambda e: seen.append(f"b:{e.kind}"))
    run(agent)
    assert seen == [
        "a:tool.start",
        "a:tool.success",
        "b:tool.success",
        "a:tool.start",
        "a:tool.success",
        "b:tool.success",
    ]


def test_a_blocking_async_listener_is_awaited_before_the_tool_runs():
    order: list[str] = []

    async def slow_first(event):
        # Gives the event loop a turn: a tool started without awaiting this would run now.
        await anyio.lowlevel.checkpoint()
        order.append(f"listener:{event.tool}")

    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    agent.emitter.on("tool.start", slow_first, blocking=True)
    agent.emitter.on("tool.success", lambda e: order.append(f"ran:{e.step.tool}"))
    run(agent)
    assert order == [
        "listener:search",
        "ran:search",
        f"listener:{FINAL_ANSWER}",
        f"ran:{FINAL_ANSWER}",
    ]


def refusing_script() -> list[dict]:
    return [call("search", query="z3"), *script()]


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_start_listener_refuses_whatever_its_kind(blocking, kind):
    # Sync or async, registered blocking or not: a `tool.start` listener guards the tool, so
    # it is awaited before the tool runs and its `Deny` holds. A refusal is not a step: the
    # model is told why and asked again (a retry).
    asked: list[str] = []

    def guard(event):
        asked.append(event.tool)
        if event.tool == "search" and asked.count("search") == 1:
            return Deny("searching is paused")
        return None

    async def async_guard(event):
        await anyio.sleep(0)
        return guard(event)

    llm = ScriptedChatModel(refusing_script())
    agent = RequirementAgent(llm, [search])
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    agent.emitter.on("tool.start", guard if kind == "sync" else async_guard, blocking=blocking)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [("search", "ok"), (FINAL_ANSWER, "ok")]
    assert ran == ["z3"] and out.retries == 1
    (event,) = refused
    assert (event.tool, event.by, event.reason) == (
        "search",
        "listener",
        "`search` did not run: searching is paused",
    )
    told = [m for m in out.messages if getattr(m, "call_id", None) == event.call_id]
    assert [m.content for m in told] == ["`search` did not run: searching is paused"]


@pytest.mark.parametrize("blocking", [False, True])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_failing_tool_start_listener_refuses_the_call_it_guards(blocking, kind):
    heard: list[str] = []

    def broken(event):
        heard.append(event.tool)
        if heard == ["search"]:
            raise KeyError("oops")

    async def async_broken(event):
        broken(event)

    agent = RequirementAgent(ScriptedChatModel(refusing_script()), [search])
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    agent.emitter.on("tool.start", broken if kind == "sync" else async_broken, blocking=blocking)
    out = run(agent)
    assert [s.status for s in out.steps] == ["ok", "ok"] and out.retries == 1
    assert refused[0].reason == (
        "`search` did not run: a listener failed (KeyError: 'oops'), so it was refused"
    )


def test_a_refusing_listener_stops_the_later_ones_from_hearing_of_the_call():
    first: list[str] = []
    later: list[str] = []

    def refuse_once(event):
        first.append(event.tool)
        return Deny("no") if len(first) == 1 else None

    agent = RequirementAgent(ScriptedChatModel(refusing_script()), [search])
    agent.emitter.on("tool.start", refuse_once)
    agent.emitter.on("tool.start", lambda e: later.append(e.tool))
    run(agent)
    assert later == ["search", FINAL_ANSWER]


def test_non_blocking_listeners_of_other_events_finish_before_run_returns():
    finished: list[str] = []

    async def background(event):
        await anyio.sleep(0)
        finished.append(event.kind)

    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    agent.emitter.on("tool.success", background)
    out = run(agent)
    assert [s.status for s in out.steps] == ["ok", "ok"]
    assert finished == ["tool.success", "tool.success"]


def test_a_failing_blocking_listener_elsewhere_ends_the_run():
    def broken(event):
        raise ValueError("bad listener")

    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    agent.emitter.on("step.start", broken, blocking=True)
    finishes = []
    agent.emitter.on("run.finish", finishes.append)
    with pytest.raises(ListenerError) as info:
        run(agent)
    assert "bad listener" in info.value.message
    assert isinstance(info.value.__cause__, ValueError)
    assert isinstance(finishes[0].error, ListenerError)


def test_a_failing_non_blocking_listener_is_logged_and_ignored(caplog):
    async def broken(event):
        raise ValueError("oops")

    def also_broken(event):
        raise ValueError("oops too")

    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    agent.emitter.on("tool.success", broken)
    agent.emitter.on("tool.success", also_broken)
    assert run(agent).answer == "Z3 is a solver."
    assert "failed on tool.success" in caplog.text


def test_off_detaches_and_listeners_lists():
    emitter = Emitter()
    seen: list[str] = []

    def listener(event):
        seen.append(event.kind)

    off = emitter.on("tool.start", listener)
    assert emitter.listeners("tool.start") == (listener,)
    off()
    off()  # twice is fine
    assert emitter.listeners("tool.start") == ()


@pytest.mark.parametrize("kind", ["tool", "tool.begin", "x.*", "", 3])
def test_unknown_kinds_are_refused(kind):
    with pytest.raises(PolicyError) as info:
        Emitter().on(kind, print)
    assert "kind=" in str(info.value)


def test_bad_listener_arguments():
    for kwargs in ({"blocking": "yes"}, {"nested": 1}):
        with pytest.raises(PolicyError):
            Emitter().on("*", print, **kwargs)
    with pytest.raises(PolicyError):
        Emitter().on("*", 3)  # type: ignore[arg-type]
    with pytest.raises(PolicyError):
        Emitter().listeners("nope")


def test_every_kind_is_namespaced_or_top_level():
    assert all(kind.count(".") <= 1 for kind in KINDS)
    assert isinstance(RunEvents((), None), RunEvents)


# -- the trajectory logger ---------------------------------------------------------------------


def test_the_trajectory_logger_prints_a_readable_run():
    llm = ScriptedChatModel(
        [
            {
                "tool_calls": [
                    {"name": FINAL_ANSWER, "arguments": {"response": "too early"}},
                    {"name": "search", "arguments": {"query": "z3"}},
                ]
            },
            call(FINAL_ANSWER, response="Z3 is a solver."),
        ]
    )
    agent = RequirementAgent(
        llm, [search], [ConditionalRequirement(search, min_invocations=1)], name="researcher"
    )
    out = io.StringIO()
    TrajectoryLogger(out).attach(agent)
    run(agent)
    assert out.getvalue().splitlines() == [
        "[researcher] run: what is z3?",
        "[researcher] round 1: may call search; may not finish",
        "[researcher]   refused: `final_answer` did not run: you cannot finish yet; allowed now:"
        " `search`",
        '[researcher]   -> search {"query": "z3"}',
        "[researcher]   ok search: found z3",
        "[researcher] round 2: may call search; may finish",
        "[researcher] answer: Z3 is a solver.",
        "[researcher] done: 2 steps, 0 tokens",
    ]


def test_the_trajectory_logger_takes_a_function_and_shows_the_model():
    lines: list[str] = []
    agent = RequirementAgent(ScriptedChatModel(script()), [search])
    detach = TrajectoryLogger(lines.append, show_model=True, width=30).attach(agent)
    run(agent)
    assert any(line.startswith("[agent]   model <- 3 messages") for line in lines)
    assert any("model -> calls search" in line for line in lines)
    detach()
    lines.clear()
    agent2 = RequirementAgent(ScriptedChatModel(script()), [search])
    run(agent2)
    assert lines == []
    with pytest.raises(PolicyError):
        TrajectoryLogger(lines.append).attach("nothing")
    with pytest.raises(PolicyError):
        TrajectoryLogger(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("reason", ["", 3, None])
def test_a_deny_needs_a_reason_and_a_bad_one_still_refuses(reason):
    with pytest.raises(PolicyError):
        Deny(reason)  # type: ignore[arg-type]
    # built inside a listener, the mistake is the listener's failure: the call is refused
    agent = RequirementAgent(ScriptedChatModel(refusing_script()), [search])
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    agent.emitter.on("tool.start", lambda e: Deny(reason) if not refused else None)
    out = run(agent)
    assert ran == ["z3"] and out.retries == 1
    assert "a listener failed (PolicyError: Deny: reason" in refused[0].reason
