"""agent.events: every event carries its ``timestamp`` (``time.time()`` seconds, when it was
made), which equality ignores."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import anyio

from agent import Event, RequirementAgent, ToolStartEvent, tool
from backends import ScriptedChatModel
from ruleengine import FINAL_ANSWER


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_every_event_carries_when_it_was_made() -> None:
    agent = RequirementAgent(
        ScriptedChatModel([call("search", query="z3"), call(FINAL_ANSWER, response="ok")]),
        [search],
    )
    heard: list[Event] = []
    agent.emitter.on("*", heard.append)
    before = time.time()
    anyio.run(agent.run, "what is z3?")
    after = time.time()
    stamps = [event.timestamp for event in heard]
    assert len(stamps) == 13
    assert all(isinstance(t, float) for t in stamps)
    assert before <= stamps[0] and stamps[-1] <= after
    assert stamps == sorted(stamps)


def test_equality_ignores_the_timestamp() -> None:
    agent = RequirementAgent(
        ScriptedChatModel([call("search", query="z3"), call(FINAL_ANSWER, response="ok")]),
        [search],
    )
    heard: list[ToolStartEvent] = []
    agent.emitter.on("tool.start", heard.append)
    anyio.run(agent.run, "what is z3?")
    start = heard[0]
    later = dataclasses.replace(start, timestamp=start.timestamp + 60)
    assert later == start and later.timestamp != start.timestamp
