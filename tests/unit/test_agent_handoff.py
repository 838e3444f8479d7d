"""agent.handoff: an agent as a tool of another. The outer requirements decide when it may be
called, the inner requirements govern its run (here: refusing a call), its answer is the
tool's output, its failure an ``error`` step, and its events nest under the outer call."""

from __future__ import annotations

import functools
import io

import anyio
import pytest
from pydantic import BaseModel

from agent import HandoffTool, RequirementAgent, TrajectoryLogger, tool
from backends import ScriptedChatModel
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    PolicyError,
)

refunds: list[str] = []


@tool
def check_policy(order: str) -> str:
    """Check the refund policy for an order."""
    return "refundable"


@tool
def refund(order: str) -> str:
    """Refund an order."""
    refunds.append(order)
    return f"refunded {order}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR, broken"


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def batch(*replies: dict) -> dict:
    """Several calls in one reply (a forbidden call next to an allowed one reaches the gate:
    the backend's forcing layer lets a reply through when one of its calls is allowed)."""
    return {"tool_calls": [c for r in replies for c in r["tool_calls"]]}


@pytest.fixture(autouse=True)
def _clear():
    refunds.clear()


def inner_agent(script: list[dict]) -> RequirementAgent[str]:
    return RequirementAgent(
        ScriptedChatModel(script),
        [check_policy, refund],
        [
            ConditionalRequirement(
                refund, only_after=[check_policy], reason="check the policy first"
            )
        ],
        name="refunds",
        description="Refunds orders, after checking the policy.",
    )


def run(agent, prompt: str, **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


def test_the_inner_requirements_refuse_a_call_and_the_answer_comes_back():
    inner = inner_agent(
        [
            batch(call("refund", order="7"), call("check_policy", order="7")),
            call("refund", order="7"),
            call(FINAL_ANSWER, response="order 7 refunded"),
        ]
    )
    handoff = inner.as_tool()
    assert isinstance(handoff, HandoffTool)
    assert (handoff.name, handoff.description) == (
        "refunds",
        "Refunds orders, after checking the policy.",
    )
    outer = RequirementAgent(
        ScriptedChatModel(
            [
                batch(call("refunds", task="refund order 7"), call("lookup", order="7")),
                call("refunds", task="refund order 7"),
                call(FINAL_ANSWER, response="Done: order 7 is refunded."),
            ]
        ),
        [lookup, handoff],
        [ConditionalRequirement(handoff, only_after=[lookup])],
        name="support",
    )
    events = []
    outer.emitter.on("*", events.append)
    out = run(outer, "my order 7 arrived broken")
    assert [(s.tool, s.status) for s in out.steps] == [
        ("lookup", "ok"),
        ("refunds", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.steps[1].output == "order 7 refunded"
    assert refunds == ["7"]
    outer_refused = [e for e in events if e.path == ("support",) and e.kind == "tool.refused"]
    assert [e.reason for e in outer_refused] == [
        "`refunds` did not run: it is not allowed at this step (needs `lookup` first);"
        " allowed now: `lookup`, `final_answer`"
    ]
    inner_events = [e for e in events if e.path == ("support", "refunds")]
    refused = [e for e in inner_events if e.kind == "tool.refused"]
    assert len(refused) == 1
    assert refused[0].tool == "refund"
    assert "check the policy first" in refused[0].reason
    start = next(e for e in inner_events if e.kind == "run.start")
    outer_start = next(e for e in events if e.kind == "tool.start" and e.tool == "refunds")
    assert start.parent_call_id == outer_start.call_id
    assert start.parent_run_id == out.run_id
    # the inner run sits between the outer call's start and its success
    kinds = [(e.path, e.kind) for e in events]
    begin = kinds.index((("support",), "tool.start"), kinds.index((("support",), "tool.success")))
    assert kinds[begin + 1] == (("support", "refunds"), "run.start")


def test_an_inner_failure_is_an_error_step_of_the_outer_run():
    inner = inner_agent([call("check_policy", order=str(n)) for n in range(3)])
    outer = RequirementAgent(
        ScriptedChatModel(
            [call("refunds", task="refund order 1"), call(FINAL_ANSWER, response="sorry")]
        ),
        [inner.as_tool(max_iterations=2)],
        name="support",
    )
    out = run(outer, "refund order 1")
    step = out.steps[0]
    assert step.status == "error"
    assert step.error.startswith("`refunds` failed: MaxIterationsError: the run did not finish")
    assert out.answer == "sorry"


def test_the_outer_permission_does_not_ask_about_inner_tools():
    asked: list[str] = []

    def handler(tool_name, arguments):
        asked.append(tool_name)
        return True

    inner = inner_agent(
        [
            call("check_policy", order="7"),
            call("refund", order="7"),
            call(FINAL_ANSWER, response="ok"),
        ]
    )
    outer = RequirementAgent(
        ScriptedChatModel([call("refunds", task="t"), call(FINAL_ANSWER, response="ok")]),
        [inner.as_tool()],
        [AskPermissionRequirement(handler=handler)],
        name="support",
    )
    run(outer, "refund order 7")
    assert asked == ["refunds"]  # not `check_policy` nor `refund`: the inner run's own tools


def test_a_typed_inner_answer_is_the_output_and_the_trajectory_nests():
    class Refund(BaseModel):
        order: str
        amount: float

    inner = RequirementAgent(
        ScriptedChatModel([call(FINAL_ANSWER, order="7", amount=30.0)]),
        [],
        expected_output=Refund,
        name="refunds",
    )
    outer = RequirementAgent(
        ScriptedChatModel([call("refunds", task="t"), call(FINAL_ANSWER, response="ok")]),
        [inner.as_tool("refunds", "Refund an order.")],
        name="support",
    )
    log = io.StringIO()
    TrajectoryLogger(log).attach(outer)
    out = run(outer, "refund 7")
    assert out.steps[0].output == Refund(order="7", amount=30.0)
    lines = log.getvalue().splitlines()
    assert '[support]   -> refunds {"task": "t"}' in lines
    assert "  [refunds] run: t" in lines
    assert '  [refunds] answer: {"order":"7","amount":30.0}' in lines
    assert lines.index("  [refunds] run: t") > lines.index('[support]   -> refunds {"task": "t"}')


def test_bad_handoff_arguments():
    inner = inner_agent([])
    with pytest.raises(PolicyError):
        inner.as_tool(max_iterations=0)
    with pytest.raises(PolicyError):
        inner.as_tool(name="bad name")
    with pytest.raises(PolicyError):
        HandoffTool("not an agent")  # type: ignore[arg-type]


def test_a_sync_tool_may_run_another_agent_in_its_own_event_loop():
    inner = RequirementAgent(
        ScriptedChatModel([call(FINAL_ANSWER, response="inner answer")]), [], name="inner"
    )

    @tool
    def ask_inner(question: str) -> str:
        """Ask the inner agent (from a worker thread, with its own event loop)."""
        return inner.run_sync(question).answer

    outer = RequirementAgent(
        ScriptedChatModel([call("ask_inner", question="q"), call(FINAL_ANSWER, response="ok")]),
        [ask_inner],
        name="outer",
    )
    paths = []
    inner.emitter.on("run.start", lambda e: paths.append(e.path))
    out = run(outer, "go")
    assert out.steps[0].output == "inner answer"
    assert paths == [("inner",)]  # a run in another thread does not nest
