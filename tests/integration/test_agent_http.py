"""The agent over real HTTP: the real ``openai`` client (``OpenAIChatModel``) against the real
test server on 127.0.0.1, nothing patched. What the server receives at each step (a stable
prefix, the pass as ``allowed_tools``), and the forcing fallback: a server that rejects or
ignores ``tool_choice`` still gets the forced tool called, and the agent never sees the
difference."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import anyio
import pytest

from agent import RequirementAgent, tool
from backends import Capabilities, OpenAIChatModel
from backends.testing import OpenAICompatibleServer
from ruleengine import FINAL_ANSWER, ConditionalRequirement

KEY = "sk-agent-test-0123456789abcdef"

thoughts: list[str] = []


@tool
def think(thought: str) -> str:
    """Write down a thought before acting."""
    thoughts.append(thought)
    return "noted"


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


REQUIREMENTS = [
    ConditionalRequirement(think, force_at_step=1, consecutive_allowed=False),
    ConditionalRequirement(search, min_invocations=1),
]


@pytest.fixture(autouse=True)
def _clear() -> None:
    thoughts.clear()


def run_against(
    server: OpenAICompatibleServer,
    capabilities: Capabilities | None = None,
    *,
    tools: list[Any] | None = None,
    requirements: list[Any] | None = None,
    prompt: str = "What is Z3?",
) -> tuple[Any, frozenset[str]]:
    """The agent's run against ``server`` through the real client, and what the model
    learned its server lacks."""

    async def main():
        async with OpenAIChatModel(
            "test-model", base_url=server.base_url, api_key=KEY, capabilities=capabilities
        ) as llm:
            agent = RequirementAgent(
                llm,
                [think, search] if tools is None else tools,
                REQUIREMENTS if requirements is None else requirements,
            )
            return await agent.run(prompt), llm.lacking

    return anyio.run(main)


def test_a_run_over_http_keeps_its_prefix_and_sends_the_pass():
    script = [
        call("think", thought="search first"),
        call("search", query="z3"),
        call(FINAL_ANSWER, response="Z3 is an SMT solver."),
    ]
    with OpenAICompatibleServer(script, api_key=KEY) as server:
        out, _ = run_against(server)
    assert out.answer == "Z3 is an SMT solver."
    assert [s.tool for s in out.steps] == ["think", "search", FINAL_ANSWER]
    bodies = server.requests
    assert len(bodies) == 3
    for before, after in itertools.pairwise(bodies):
        assert after["tools"] == before["tools"]
        assert after["messages"][: len(before["messages"])] == before["messages"]
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "think"}}
    # step 2: `think` may not run twice in a row and the agent may not stop: `search` alone
    assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "search"}}
    # step 3: everything is allowed, a call is required (final_answer is a tool)
    assert bodies[2]["tool_choice"] == "required"


def test_the_forcing_fallback_through_a_server_that_rejects_tool_choice():
    script = [
        '{"thought": "search first"}',  # the structured-output rung: the forced tool's input
        call("search", query="z3"),
        call(FINAL_ANSWER, response="Z3 is an SMT solver."),
    ]
    caps = Capabilities(tool_choice=frozenset({"auto", "none"}))
    with OpenAICompatibleServer(script, api_key=KEY, reject_tool_choice=True) as server:
        out, _ = run_against(server, caps)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("think", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert thoughts == ["search first"]
    first = server.requests[0]
    assert "tools" not in first  # forced through response_format, with the tool's schema
    schema = first["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["thought"]
    assert all("tool_choice" not in body for body in server.requests)


def test_the_forcing_fallback_learns_a_server_that_rejects_tool_choice():
    def script(body: dict[str, Any]) -> object:
        schema = json.dumps(body["response_format"]["json_schema"]["schema"])
        if "anyOf" in schema:  # one of several tools: the union of {name, arguments}
            return json.dumps({"name": FINAL_ANSWER, "arguments": {"response": "Z3."}})
        if '"thought"' in schema:
            return json.dumps({"thought": "plan"})
        return json.dumps({"query": "z3"})

    with OpenAICompatibleServer(script, api_key=KEY, reject_tool_choice=True) as server:
        out, lacking = run_against(server)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("think", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert thoughts == ["plan"]
    assert out.answer == "Z3."
    # learned from the 400s that name `tool_choice`, then straight to structured output
    assert lacking == {"tool", "required"}
    forms = [body.get("tool_choice") for body in server.requests]
    assert forms[:2] == [{"type": "function", "function": {"name": "think"}}, "required"]
    assert all(form is None for form in forms[2:])


def test_a_model_that_ignores_tool_choice_is_told_and_asked_again():
    # The server accepts `tool_choice` and drops it. The model's text is its own choice, not
    # the server's lack: the agent tells it what to call, and asks again (a retry).
    def script(body: dict[str, Any]) -> object:
        last = body["messages"][-1]["content"]
        told = re.search(r"Your reply was not used: .*? Call `(\w+)`", last)
        if told is None:
            if "Now: you may call" in last and "You cannot finish yet" not in last:
                return call(FINAL_ANSWER, response="Z3.")
            return "I would rather chat."
        arguments = {"think": {"thought": "plan"}, "search": {"query": "z3"}}[told[1]]
        return call(told[1], **arguments)

    with OpenAICompatibleServer(script, api_key=KEY, ignore_tool_choice=True) as server:
        out, lacking = run_against(server)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("think", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert lacking == frozenset() and out.retries == 2
    assert out.answer == "Z3."


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR"


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@pytest.mark.parametrize(
    "capabilities",
    [
        None,
        Capabilities().without("allowed"),
        Capabilities().without("allowed", "tool"),
        Capabilities(tool_choice=frozenset({"auto"})),
        Capabilities(parallel_tool_calls=False),
    ],
    ids=repr,
)
def test_a_call_outside_the_pass_is_refused_and_the_model_asked_again_over_http(capabilities):
    # The server honours `allowed_tools`; the model calls `refund` anyway. The call reaches the
    # gate, which refuses it; the model reads why (the tool message) and is asked again: one
    # retry, and nothing is held against the server.
    script = [
        call("refund", order="7"),
        call("lookup", order="7"),
        call("refund", order="7"),
        call(FINAL_ANSWER, response="Refunded."),
    ]
    requirements = [ConditionalRequirement(refund, only_after=[lookup])]
    with OpenAICompatibleServer(script, api_key=KEY) as server:
        out, lacking = run_against(
            server,
            capabilities,
            tools=[lookup, refund],
            requirements=requirements,
            prompt="Refund order 7.",
        )
    assert [(s.tool, s.status) for s in out.steps] == [
        ("lookup", "ok"),
        ("refund", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.retries == 1 and lacking == frozenset()
    assert len(server.requests) == 4
    told = server.requests[1]["messages"]
    results = [m["content"] for m in told if m["role"] == "tool"]
    assert results == [
        "`refund` did not run: it is not allowed at this step (needs `lookup` first);"
        " allowed now: `lookup`, `final_answer`"
    ]
