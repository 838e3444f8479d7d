"""The gate under an adversarial model: hypothesis writes the model's replies (any tool name,
hidden, forbidden and unknown ones included, any arguments, broken JSON, parallel batches,
text, refusals, empty replies) and the laws hold:

1. no tool runs unless the pass for the state at that moment allowed it (recomputed here,
   independently, from the recorded steps), with arguments its input model accepts, and the
   cycle guard did not object; a refused call never runs;
2. ``final_answer`` never runs while stopping is forbidden;
3. every run ends — with an answer, a clear error (a conflict) or a budget — within its
   limits: at most ``max_iterations`` rounds, and at most ``max_iterations`` plus
   ``total_max_retries`` model calls.

The model answers through ``RawModel`` (what hypothesis wrote reaches the gate as is) and
through ``ScriptedChatModel`` (the backends' forcing layer in between).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent import MaxIterationsError, RequirementAgent, RetryLimitError, RunFinishEvent, tool
from backends import (
    AnyToolCall,
    Capabilities,
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    ScriptedChatModel,
    StreamEnd,
    StreamEvent,
    ToolCall,
)
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    Rule,
    RunState,
    requirement,
)

executed: list[tuple[str, dict[str, Any]]] = []


@tool
def a(x: int) -> str:
    """Tool a."""
    executed.append(("a", {"x": x}))
    return f"a{x}"


@tool
def b() -> str:
    """Tool b."""
    executed.append(("b", {}))
    return "b"


@tool
def c(note: str) -> str:
    """Tool c."""
    executed.append(("c", {"note": note}))
    return note


@tool
def h() -> str:
    """A tool that is always hidden."""
    executed.append(("h", {}))
    return "h"


@requirement(name="hide-h")
def hide_h(state: RunState) -> list[Rule]:
    return [Rule("h", hidden=True)]


def approve(tool_name: str, arguments: Any) -> bool:
    return arguments.get("note") != "no"


POOL = {
    "b-after-a": lambda name: ConditionalRequirement(b, only_after=[a], name=name),
    "c-once": lambda name: ConditionalRequirement(
        c, max_invocations=1, only_success_invocations=False, name=name
    ),
    "a-first": lambda name: ConditionalRequirement(a, min_invocations=1, name=name),
    "b-forced-after-a": lambda name: ConditionalRequirement(b, force_after=[a], name=name),
    "no-a-twice": lambda name: ConditionalRequirement(a, consecutive_allowed=False, name=name),
    "c-forced-at-2": lambda name: ConditionalRequirement(c, force_at_step=2, name=name),
    "ask-c": lambda name: AskPermissionRequirement(include=[c], handler=approve, name=name),
    "ask-c-remember": lambda name: AskPermissionRequirement(
        include=[c], handler=approve, remember_choices=True, hide_disallowed=True, name=name
    ),
}

NAMES = st.sampled_from(["a", "b", "c", "h", FINAL_ANSWER, "zz", "A", "final", "b-"])
ARGUMENTS = st.one_of(
    st.fixed_dictionaries({"x": st.integers(-3, 3)}),
    st.fixed_dictionaries({"note": st.sampled_from(["ok", "no", ""])}),
    st.fixed_dictionaries({"response": st.text(max_size=8)}),
    st.just({}),
    st.dictionaries(
        st.sampled_from(["x", "note", "response", "y"]),
        st.one_of(st.integers(-2, 2), st.text(max_size=3), st.none(), st.booleans()),
        max_size=3,
    ),
)
FITTING = {
    "a": st.fixed_dictionaries({"x": st.integers(0, 2)}),
    "b": st.just({}),
    "c": st.fixed_dictionaries({"note": st.sampled_from(["ok", "no"])}),
    "h": st.just({}),
    FINAL_ANSWER: st.fixed_dictionaries({"response": st.text(max_size=5)}),
}


@st.composite
def calls(draw: st.DrawFn) -> list[AnyToolCall]:
    batch: list[AnyToolCall] = []
    for index in range(draw(st.integers(1, 4))):
        name = draw(NAMES)
        if draw(st.integers(0, 9)) == 9:  # sometimes arguments that are not JSON
            raw = draw(st.sampled_from(["{", '{"x": ', "[1, 2]", "nope"]))
            batch.append(InvalidToolCall(f"k{index}", name, raw, "arguments are not valid JSON"))
        elif name in FITTING and draw(st.integers(0, 9)) < 7:  # mostly well-formed calls
            batch.append(ToolCall(f"k{index}", name, draw(FITTING[name])))
        else:
            batch.append(ToolCall(f"k{index}", name, draw(ARGUMENTS)))
    return batch


OTHER_REPLIES = st.one_of(
    st.text(max_size=20).map(lambda t: ChatResponse(text=t)),
    st.sampled_from(['{"response": "x"}', '{"response": ', "{", '{"x": 1}']).map(
        lambda t: ChatResponse(text=t)
    ),
    st.just(ChatResponse(refusal="I refuse.")),
    st.just(ChatResponse(text="cut", finish_reason="length")),
)


@st.composite
def replies(draw: st.DrawFn) -> ChatResponse:
    """Mostly batches of calls, sometimes text, broken JSON, a refusal or a cut-off reply."""
    if draw(st.integers(0, 9)) < 7:
        return ChatResponse(tool_calls=tuple(draw(calls())))
    return draw(OTHER_REPLIES)


class RawModel:
    """Answers the drawn replies in a loop, exactly as drawn."""

    def __init__(self, replies: list[ChatResponse], capabilities: Capabilities) -> None:
        self.replies = replies
        self.capabilities = capabilities
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return self.replies[(len(self.requests) - 1) % len(self.replies)]

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield StreamEnd(await self.complete(request))


def as_entry(response: ChatResponse) -> object:
    """A drawn reply as a script entry (broken JSON arguments sent as they are)."""
    if response.text is not None or response.refusal is not None:
        return {
            "text": response.text,
            "refusal": response.refusal,
            "finish_reason": response.finish_reason,
        }
    return {
        "tool_calls": [
            {
                "name": call.name,
                "arguments": call.raw_arguments
                if isinstance(call, InvalidToolCall)
                else dict(call.arguments),
            }
            for call in response.tool_calls
        ]
    }


CASES = st.fixed_dictionaries(
    {
        "requirements": st.lists(st.sampled_from(sorted(POOL)), unique=True, max_size=4),
        "replies": st.lists(replies(), min_size=1, max_size=8),
        "max_iterations": st.integers(1, 6),
        "max_retries_per_step": st.integers(0, 2),
        "total_max_retries": st.integers(0, 4),
        "allowed_subsets": st.booleans(),
        "final_answer_as_tool": st.booleans(),
        "checker": st.booleans(),
    }
)


def check_run(case: dict[str, Any], scripted: bool) -> None:
    executed.clear()
    requirements = [POOL[name](name) for name in case["requirements"]] + [hide_h]
    kinds = {"auto", "none", "required", "tool"} | (
        {"allowed"} if case["allowed_subsets"] else set()
    )
    capabilities = Capabilities(tool_choice=frozenset(kinds))
    if scripted:
        entries = itertools.cycle([as_entry(r) for r in case["replies"]])
        llm: Any = ScriptedChatModel(lambda request: next(entries), capabilities=capabilities)
    else:
        llm = RawModel(case["replies"], capabilities)
    agent = RequirementAgent(
        llm,
        [a, b, c, h],
        requirements,
        tool_call_checker=case["checker"],
        final_answer_as_tool=case["final_answer_as_tool"],
    )
    finished: list[RunFinishEvent] = []
    agent.emitter.on("run.finish", finished.append)
    limits = {k: case[k] for k in ("max_iterations", "max_retries_per_step", "total_max_retries")}
    rounds: list[int] = []
    agent.emitter.on("step.start", lambda event: rounds.append(event.iteration))
    model_calls: list[int] = []
    agent.emitter.on("model.request", lambda event: model_calls.append(1))
    try:
        out = anyio.run(functools.partial(agent.run, "go", **limits))
        error = None
        assert out.steps[-1].tool == FINAL_ANSWER and out.steps[-1].status == "ok"
    except (MaxIterationsError, RetryLimitError, ConflictError) as exc:
        error = exc

    # Law 3: the run ended, within its limits.
    assert len(finished) == 1 and finished[0].error is error
    assert len(rounds) <= limits["max_iterations"]
    assert len(model_calls) <= limits["max_iterations"] + limits["total_max_retries"]

    # Laws 1 and 2: replay the recorded steps and re-decide each one independently.
    steps = finished[0].steps
    ran = []
    for index, step in enumerate(steps):
        before = RunState(steps=steps[:index])
        the_pass = agent.reasoner.decide(before)
        if step.status == "denied":
            continue
        assert step.tool in the_pass.allowed, (step, the_pass)
        assert step.tool not in the_pass.hidden
        tool_object = agent.gate.tools[step.tool]
        tool_object.validate(step.arguments)  # raises if the arguments were not valid
        if step.tool == FINAL_ANSWER:
            assert the_pass.can_stop
            assert index == len(steps) - 1
            continue
        guard = agent.gate.cycle_guard
        assert guard is None or not guard.would_cycle(before.steps, step.tool, step.arguments)
        if step.tool == "c" and "ask-c" in case["requirements"]:
            assert step.arguments.get("note") != "no"  # asked every time: refused
        ran.append((step.tool, dict(step.arguments)))
    event(f"ended with {type(error).__name__ if error else 'an answer'}")
    event(f"refused calls: {'some' if any(s.status == 'denied' for s in steps) else 'none'}")
    event(f"tools ran: {'some' if ran else 'none'}")
    # What ran is exactly what was recorded as run (ok or error): nothing refused ran.
    assert executed == ran
    assert "h" not in [name for name, _ in executed]


@given(CASES)
def test_no_reply_makes_a_forbidden_tool_run(case):
    check_run(case, scripted=False)


@settings(max_examples=30)
@given(CASES)
def test_no_reply_makes_a_forbidden_tool_run_through_the_scripted_backend(case):
    check_run(case, scripted=True)
