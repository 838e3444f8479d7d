"""``run`` and ``run_stream`` are the same run: over the adversarial cases of
``test_agent_adversarial`` (hypothesis writes the model's replies, the requirements, the
``tool.start`` listeners and the budgets), through ``ScriptedChatModel`` (the forcing layer in
between, streamed or not), the laws hold:

1. the stream's events are the events a listener of every kind, registered last, hears of
   ``run``, in the same order and saying the same things;
2. the same tools ran with the same arguments, and the run gave the same output, or raised
   the same error;
3. the answer's pieces since the last discard add up to a text answer when its
   ``final_answer`` event comes; a discard always takes something back; a failed run leaves no
   piece standing; nothing is shown after the answer.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import anyio
from hypothesis import given, settings
from test_agent_adversarial import (
    CASES,
    POOL,
    a,
    as_entry,
    b,
    c,
    executed,
    h,
    hide_h,
    make_listener,
)

from agent import AnswerDelta, AnswerDiscarded, RequirementAgent, StreamItem
from backends import Capabilities, ScriptedChatModel


def build(case: dict[str, Any]) -> RequirementAgent[Any]:
    """A fresh agent for ``case``: its own model (the script from its start), its own
    listeners (whose memory of calls starts empty)."""
    kinds = {"auto", "none", "required", "tool"} | (
        {"allowed"} if case["allowed_subsets"] else set()
    )
    entries = itertools.cycle([as_entry(reply) for reply in case["replies"]])
    llm = ScriptedChatModel(
        lambda request: next(entries), capabilities=Capabilities(tool_choice=frozenset(kinds))
    )
    agent = RequirementAgent(
        llm,
        [a, b, c, h],
        [POOL[name](name) for name in case["requirements"]] + [hide_h],
        tool_call_checker=case["checker"],
        final_answer_as_tool=case["final_answer_as_tool"],
        on_conflict=case["on_conflict"],
    )
    for spec in case["listeners"]:
        agent.emitter.on("tool.start", make_listener(spec), blocking=spec["blocking"])
    return agent


def limits(case: dict[str, Any]) -> dict[str, int]:
    return {k: case[k] for k in ("max_iterations", "max_retries_per_step", "total_max_retries")}


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


def outcome(result: object) -> tuple[Any, ...]:
    if isinstance(result, BaseException):
        return (type(result).__name__, str(result))
    return shape(result)


def ran(case: dict[str, Any]) -> tuple[list[Any], object, list[tuple[str, dict[str, Any]]]]:
    """``run``: what a listener of every kind, registered last, heard; the output or error;
    the tools that ran."""
    executed.clear()
    agent = build(case)
    heard: list[Any] = []
    agent.emitter.on("*", heard.append)

    async def main() -> object:
        try:
            return await agent.run("go", **limits(case))
        except Exception as exc:  # the run's error (a budget, a conflict, …)
            return exc

    result = anyio.run(main)
    return heard, result, list(executed)


def streamed(
    case: dict[str, Any],
) -> tuple[list[StreamItem], object, list[tuple[str, dict[str, Any]]]]:
    """``run_stream``: every item; the output or the error the stream raised; the tools that
    ran."""
    executed.clear()
    agent = build(case)

    async def main() -> tuple[list[StreamItem], object]:
        items: list[StreamItem] = []
        async with agent.run_stream("go", **limits(case)) as stream:
            try:
                async for item in stream:
                    items.append(item)
            except Exception as exc:  # the run's error (a budget, a conflict, …)
                return items, exc
        return items, stream.output

    items, result = anyio.run(main)
    return items, result, list(executed)


def check_pieces(items: Sequence[StreamItem]) -> None:
    draft: list[str] = []
    answered = False
    for item in items:
        if isinstance(item, AnswerDelta):
            assert not answered and item.text
            draft.append(item.text)
        elif isinstance(item, AnswerDiscarded):
            assert draft
            draft = []
        elif item.kind == "final_answer":
            assert "".join(draft) == (item.answer if isinstance(item.answer, str) else "")
            answered = True
        elif item.kind == "run.finish" and item.error is not None:
            assert draft == []


@settings(max_examples=60)
@given(CASES)
def test_run_and_run_stream_are_the_same_run(case: dict[str, Any]) -> None:
    heard, ran_result, ran_tools = ran(case)
    items, streamed_result, streamed_tools = streamed(case)
    events = [i for i in items if not isinstance(i, AnswerDelta | AnswerDiscarded)]
    # Law 1: the same events, in the same order
    assert [shape(e) for e in events] == [shape(e) for e in heard]
    # Law 2: the same tools ran, and the same output (or error)
    assert streamed_tools == ran_tools
    assert outcome(streamed_result) == outcome(ran_result)
    # Law 3: the pieces add up to the answer, and are taken back when they are not it
    check_pieces(items)
