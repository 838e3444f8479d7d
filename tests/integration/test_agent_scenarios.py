"""The built-in requirements end to end, with the scripted model: each scenario runs an agent and
checks what ran, what was refused and what the model was offered; then many agents at once
(anyio tasks and threads) on one set of requirement objects, giving what they give alone."""

from __future__ import annotations

import functools
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest

from agent import RequirementAgent, tool
from backends import ChatRequest, ScriptedChatModel, ToolChoiceTool
from backends.messages import AssistantMessage
from ruleengine import (
    FINAL_ANSWER,
    AgentError,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Rule,
    requirement,
)


@tool
def think(thought: str) -> str:
    """Think."""
    return "noted"


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def summarize(text: str) -> str:
    """Summarize a text."""
    return text[:10]


@tool
def send(to: str) -> str:
    """Send the result."""
    return f"sent to {to}"


TOOLS = [think, search, summarize, send]


def c(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(calls)}


def done(text: str = "done") -> dict[str, Any]:
    return reply(c(FINAL_ANSWER, response=text))


def run(agent, prompt: str = "go", **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


def trace(out) -> list[tuple[str, str]]:
    return [(s.tool, s.status) for s in out.steps]


def journal(agent) -> list[tuple[str, str, str]]:
    """Every call of every run of ``agent`` as it was decided: ``(run_id, tool, what)``, where
    ``what`` is a step's status, or ``refused`` for a call the gate or a listener refused
    (not a step)."""
    seen: list[tuple[str, str, str]] = []

    def note(event) -> None:
        if event.kind == "tool.refused":
            seen.append((event.run_id, event.tool, "refused"))
        elif event.kind in ("tool.success", "tool.error", "tool.denied"):
            seen.append((event.run_id, event.step.tool, event.step.status))

    agent.emitter.on("tool.*", note)
    return seen


def calls_of(seen, run_id=None) -> list[tuple[str, str]]:
    return [(tool, what) for rid, tool, what in seen if run_id is None or rid == run_id]


def test_force_at_step_one_makes_the_first_call():
    llm = ScriptedChatModel([reply(c("think", thought="plan")), done()])
    out = run(RequirementAgent(llm, TOOLS, [ConditionalRequirement(think, force_at_step=1)]))
    assert trace(out) == [("think", "ok"), (FINAL_ANSWER, "ok")]
    assert llm.requests[0].tool_choice == ToolChoiceTool("think")
    assert out.passes[0].forced == "think"


def test_only_after_and_only_before():
    reqs = [
        ConditionalRequirement(summarize, only_after=[search]),
        ConditionalRequirement(think, only_before=[send]),
    ]
    llm = ScriptedChatModel(
        [
            reply(c("summarize", text="x"), c("search", query="q")),  # too early, then unlocked
            reply(c("summarize", text="found q"), c("send", to="bob")),
            reply(c("think", thought="late"), c(FINAL_ANSWER, response="ok")),  # after send
        ]
    )
    agent = RequirementAgent(llm, TOOLS, reqs)
    seen = journal(agent)
    out = run(agent)
    assert calls_of(seen) == [
        ("summarize", "refused"),
        ("search", "ok"),
        ("summarize", "ok"),
        ("send", "ok"),
        ("think", "refused"),
        (FINAL_ANSWER, "ok"),
    ]
    assert trace(out) == [(t, w) for t, w in calls_of(seen) if w != "refused"]


def test_max_invocations_and_consecutive_calls():
    reqs = [
        ConditionalRequirement(search, max_invocations=2),
        ConditionalRequirement(think, consecutive_allowed=False),
    ]
    llm = ScriptedChatModel(
        [
            reply(c("think", thought="a"), c("think", thought="b"), c("search", query="1")),
            reply(c("search", query="2"), c("search", query="3"), c(FINAL_ANSWER, response="ok")),
        ]
    )
    agent = RequirementAgent(llm, TOOLS, reqs, tool_call_checker=False)
    seen = journal(agent)
    out = run(agent)
    assert calls_of(seen) == [
        ("think", "ok"),
        ("think", "refused"),
        ("search", "ok"),
        ("search", "ok"),
        ("search", "refused"),
        (FINAL_ANSWER, "ok"),
    ]
    assert trace(out) == [(t, w) for t, w in calls_of(seen) if w != "refused"]


def test_force_after_and_min_invocations():
    reqs = [
        ConditionalRequirement(summarize, force_after=[search]),
        ConditionalRequirement(send, min_invocations=1),
    ]
    llm = ScriptedChatModel(
        [
            reply(c("search", query="q")),
            reply(c("summarize", text="found q")),
            reply(c(FINAL_ANSWER, response="early"), c("send", to="bob")),
            done("late"),
        ]
    )
    agent = RequirementAgent(llm, TOOLS, reqs)
    seen = journal(agent)
    out = run(agent)
    assert calls_of(seen) == [
        ("search", "ok"),
        ("summarize", "ok"),
        (FINAL_ANSWER, "refused"),
        ("send", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert trace(out) == [(t, w) for t, w in calls_of(seen) if w != "refused"]
    assert llm.requests[1].tool_choice == ToolChoiceTool("summarize")
    assert out.answer == "late"


def test_priority_mode_lets_the_higher_requirement_win():
    @requirement(name="no-send", priority=5)
    def no_send(state):
        return [Rule("send", allowed=False)]

    @requirement(name="must-send", priority=20)
    def must_send(state):
        return [Rule("send", allowed=True)] if not state.called("send") else []

    llm = ScriptedChatModel([reply(c("send", to="bob")), done()])
    out = run(RequirementAgent(llm, TOOLS, [no_send, must_send], mode="priority"))
    assert trace(out) == [("send", "ok"), (FINAL_ANSWER, "ok")]


def test_ask_permission_with_remembered_refusal_end_to_end():
    asked: list[str] = []

    def human(tool_name: str, arguments: Any) -> bool:
        asked.append(tool_name)
        return False

    llm = ScriptedChatModel(
        [
            reply(c("send", to="bob")),
            reply(c("send", to="eve"), c(FINAL_ANSWER, response="gave up")),
        ]
    )
    req = AskPermissionRequirement(include=[send], handler=human, remember_choices=True)
    agent = RequirementAgent(llm, TOOLS, [req])
    seen = journal(agent)
    out = run(agent)
    # The human's refusal is a step, remembered; the second `send` is the gate's to refuse.
    assert calls_of(seen) == [("send", "denied"), ("send", "refused"), (FINAL_ANSWER, "ok")]
    assert trace(out) == [("send", "denied"), (FINAL_ANSWER, "ok")]
    assert asked == ["send"]
    assert "send" not in out.passes[1].allowed
    assert out.passes[1].reasons["send"] == "the user refused `send`"


# -- many agents at once, one set of requirement objects ---------------------------------------

SHARED_HANDLER_ANSWERS = {"think": True, "search": True, "summarize": False, "send": True}


async def shared_handler(tool_name: str, arguments: Any) -> bool:
    await anyio.sleep(0)
    return SHARED_HANDLER_ANSWERS[tool_name]


SHARED = [
    ConditionalRequirement(think, force_at_step=1),
    ConditionalRequirement(send, only_after=[search]),
    ConditionalRequirement(search, max_invocations=3),
    AskPermissionRequirement(
        include=[summarize, send], handler=shared_handler, remember_choices=True
    ),
    CycleGuard(max_strike_length=1),
]
NAMES = ["think", "search", "summarize", "send", FINAL_ANSWER, "unknown"]


def plan(agent_index: int) -> list[list[dict[str, Any]]]:
    rng = random.Random(7000 + agent_index)
    rounds = []
    for number in range(6):
        batch = [c("think", thought="plan")] if number == 0 else []
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(NAMES)
            args = {
                "think": {"thought": "t"},
                "search": {"query": rng.choice("ab")},
                "summarize": {"text": "x"},
                "send": {"to": "bob"},
                FINAL_ANSWER: {"response": f"agent {agent_index}"},
            }.get(name, {})
            batch.append(c(name, **args))
        rounds.append(batch)
    return rounds


def scripted(agent_index: int) -> ScriptedChatModel:
    rounds = plan(agent_index)

    def script(request: ChatRequest) -> dict[str, Any]:
        done_rounds = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        if done_rounds < len(rounds):
            return reply(*rounds[done_rounds])
        return done(f"agent {agent_index}")

    return ScriptedChatModel(script)


def make_agent(index: int) -> RequirementAgent[str]:
    return RequirementAgent(scripted(index), TOOLS, SHARED, name=f"agent-{index}")


async def outcome(agent: RequirementAgent[str]) -> tuple[Any, ...]:
    seen = journal(agent)
    try:
        out = await agent.run("go", max_iterations=12, total_max_retries=12)
    except AgentError as exc:
        return "failed", type(exc).__name__, exc.message
    return out.answer, trace(out), [p.allowed for p in out.passes], calls_of(seen)


AGENTS = 12


@pytest.fixture(scope="module")
def alone() -> dict[int, tuple[Any, ...]]:
    return {i: anyio.run(outcome, make_agent(i)) for i in range(AGENTS)}


def test_the_plans_exercise_refusals(alone):
    finished = [o for o in alone.values() if o[0] != "failed"]
    assert len(finished) >= AGENTS // 2
    statuses = {status for _, steps, _, _ in finished for _, status in steps}
    assert statuses == {"ok", "denied"}  # `denied`: the handler refused `summarize`
    refusals = {what for _, _, _, calls in finished for _, what in calls}
    assert "refused" in refusals


def test_many_agents_in_anyio_tasks_share_the_requirements(alone):
    async def main() -> dict[int, tuple[Any, ...]]:
        results: dict[int, tuple[Any, ...]] = {}

        async def one(i: int) -> None:
            results[i] = await outcome(make_agent(i))

        async with anyio.create_task_group() as group:
            for i in range(AGENTS):
                group.start_soon(one, i)
        return results

    assert anyio.run(main) == alone


def test_many_agents_in_threads_share_the_requirements(alone):
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(
            zip(
                range(AGENTS),
                pool.map(lambda i: anyio.run(outcome, make_agent(i)), range(AGENTS)),
                strict=True,
            )
        )
    assert results == alone


def test_one_agent_serves_concurrent_runs_from_threads():
    # One agent (one reasoner, serialised by its lock) run from several threads at once. The
    # first `send` is refused by the gate (only after `search`): not a step, so not a
    # remembered answer; the second `send` is asked about, approved, and runs.
    def script(request: ChatRequest) -> dict[str, Any]:
        prompt = request.messages[1].content
        rounds = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        if rounds == 0:
            return reply(c("think", thought=prompt))
        if rounds == 1:
            return reply(c("send", to=prompt), c("search", query=prompt))
        return reply(c("send", to=prompt), c(FINAL_ANSWER, response=prompt))

    agent = RequirementAgent(ScriptedChatModel(script), TOOLS, SHARED)
    seen = journal(agent)

    def one(i: int) -> tuple[Any, ...]:
        out = anyio.run(functools.partial(agent.run, f"p{i}"))
        return out.answer, trace(out), calls_of(seen, out.run_id)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, range(8)))
    assert results == [
        (
            f"p{i}",
            [("think", "ok"), ("search", "ok"), ("send", "ok"), (FINAL_ANSWER, "ok")],
            [
                ("think", "ok"),
                ("send", "refused"),
                ("search", "ok"),
                ("send", "ok"),
                (FINAL_ANSWER, "ok"),
            ],
        )
        for i in range(8)
    ]
