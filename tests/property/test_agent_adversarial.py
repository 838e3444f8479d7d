"""The gate under an adversarial model and adversarial listeners: hypothesis writes the model's
replies (any tool name, hidden, forbidden and unknown ones included, any arguments, broken
JSON, parallel batches, text between calls, refusals, empty replies) and ``tool.start``
listeners (sync or async, registered blocking or not, refusing or raising on some calls), and
the laws hold:

1. every call that went past the gate was admitted under the pass ``decide`` gives, afresh,
   for the run state at that instant (or, after a conflict the agent answers, only
   ``final_answer``), with arguments its input model accepts; the repeat check objected only
   where the pass allowed nothing else, and the admission says it yielded;
2. a tool ran exactly when its call was admitted and no listener refused it; a refused call
   never runs and is not a step; a ``denied`` step is a refusal of an ask-permission
   requirement; ``out.passes[i]`` is the pass ``steps[i]`` was admitted under;
3. every reply is accounted for: each call is admitted (``tool.start``) or refused
   (``tool.refused``), exactly once; a reply without calls is rescued or retried;
4. every run ends — with an answer, a clear error (a conflict) or a budget — within its
   limits: at most ``max_iterations`` rounds, and at most ``max_iterations`` plus
   ``total_max_retries`` model calls.

The model answers through ``RawModel`` (what hypothesis wrote reaches the gate as is) and
through ``ScriptedChatModel`` (the backends' forcing layer in between).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio
from hypothesis import event as label
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import (
    Deny,
    MaxIterationsError,
    RequirementAgent,
    RetryLimitError,
    ToolStartEvent,
    tool,
)
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
    """Answers the drawn replies in a loop, exactly as drawn (each call with an id of its own,
    as servers give them)."""

    def __init__(self, replies: list[ChatResponse], capabilities: Capabilities) -> None:
        self.replies = replies
        self.capabilities = capabilities
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        reply = self.replies[(len(self.requests) - 1) % len(self.replies)]
        number = len(self.requests)
        calls = tuple(
            dataclasses.replace(call, id=f"r{number}-{call.id}") for call in reply.tool_calls
        )
        return dataclasses.replace(reply, tool_calls=calls)

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


@st.composite
def listeners(draw: st.DrawFn) -> dict[str, Any]:
    """A ``tool.start`` listener: which calls it refuses (or raises on), how it is written."""
    return {
        "target": draw(st.sampled_from(["a", "b", "c", FINAL_ANSWER, "*"])),
        "when": draw(st.sampled_from(["always", "first", "odd"])),
        "action": draw(st.sampled_from(["deny", "raise"])),
        "sync": draw(st.booleans()),
        "blocking": draw(st.booleans()),
    }


def make_listener(spec: dict[str, Any]) -> Any:
    heard: list[str] = []

    def decide(event: ToolStartEvent) -> Deny | None:
        if spec["target"] not in ("*", event.tool):
            return None
        heard.append(event.tool)
        if spec["when"] == "first" and len(heard) != 1:
            return None
        if spec["when"] == "odd" and len(heard) % 2 == 0:
            return None
        if spec["action"] == "raise":
            raise RuntimeError("listener down")
        return Deny("a guard said no")

    async def asynchronous(event: ToolStartEvent) -> Deny | None:
        await anyio.sleep(0)
        return decide(event)

    return decide if spec["sync"] else asynchronous


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
        "listeners": st.lists(listeners(), max_size=3),
        "on_conflict": st.sampled_from(["raise", "answer"]),
    }
)


class Record:
    """What the events of one run said, in order."""

    def __init__(self, agent: RequirementAgent[Any]) -> None:
        self.events: list[Any] = []
        agent.emitter.on("*", self.events.append)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]


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
        on_conflict=case["on_conflict"],
    )
    for spec in case["listeners"]:
        agent.emitter.on("tool.start", make_listener(spec), blocking=spec["blocking"])
    record = Record(agent)
    limits = {k: case[k] for k in ("max_iterations", "max_retries_per_step", "total_max_retries")}
    out = None
    try:
        out = anyio.run(functools.partial(agent.run, "go", **limits))
        error = None
        assert out.steps[-1].tool == FINAL_ANSWER and out.steps[-1].status == "ok"
    except (MaxIterationsError, RetryLimitError, ConflictError) as exc:
        error = exc

    # Law 4: the run ended, within its limits.
    (finished,) = record.of("run.finish")
    assert finished.error is error
    assert len(record.of("step.start")) <= limits["max_iterations"]
    model_calls = len(record.of("model.request"))
    assert model_calls <= limits["max_iterations"] + limits["total_max_retries"]

    # Law 1: each admission read the pass of its instant, decided afresh here. The calls the
    # gate admitted are the ones that ran (`tool.start`, heard last, after every guard), the
    # ones permission refused (`tool.denied`), and the ones another listener refused.
    steps = finished.steps
    admitted = [
        e
        for e in record.events
        if e.kind in ("tool.start", "tool.denied")
        or (e.kind == "tool.refused" and e.by == "listener")
    ]
    guard = agent.gate.cycle_guard
    recorded = 0  # steps recorded before the admission at hand
    stepped: list[Any] = []
    for admission in admitted:
        tool_name = admission.step.tool if admission.kind == "tool.denied" else admission.tool
        arguments = (
            admission.step.arguments if admission.kind == "tool.denied" else admission.arguments
        )
        the_pass = admission.pass_
        before = RunState(steps=steps[:recorded])
        if admission.kind == "tool.start":
            assert admission.state.steps == before.steps
        try:
            fresh = agent.reasoner.decide(before)
        except ConflictError:
            assert case["on_conflict"] == "answer" and tool_name == FINAL_ANSWER
            assert the_pass.allowed == (FINAL_ANSWER,)
        else:
            assert fresh == the_pass, (tool_name, before)
        assert tool_name in the_pass.allowed and tool_name not in the_pass.hidden
        agent.gate.tools[tool_name].validate(arguments)
        if tool_name == FINAL_ANSWER:
            assert the_pass.can_stop
        elif guard is not None and guard.would_cycle(before.steps, tool_name, arguments):
            assert the_pass.allowed == (tool_name,)  # it yielded: nothing else was allowed
            if admission.kind == "tool.start":
                assert any("yielded" in note for note in admission.notes)
        if admission.kind != "tool.refused":
            stepped.append(admission)
            recorded += 1

    # Law 2: what ran is what was admitted and not refused; the steps are exactly those calls
    # and the permission refusals, each with the pass it was admitted under.
    ran = [
        (s.tool, dict(s.arguments))
        for s in stepped
        if s.kind == "tool.start" and s.tool != FINAL_ANSWER
    ]
    assert executed == ran
    assert "h" not in [name for name, _ in executed]
    assert len(steps) == len(stepped)
    for step, admission in zip(steps, stepped, strict=True):
        assert (step.status == "denied") == (admission.kind == "tool.denied")
        if admission.kind == "tool.start":
            assert (step.tool, dict(step.arguments)) == (admission.tool, dict(admission.arguments))
        if step.status == "denied":  # only permission refusals are steps
            assert any(name.startswith("ask-c") for name in case["requirements"])
            assert step.tool == "c"
        if step.tool == "c" and "ask-c" in case["requirements"]:  # asked every time
            assert (step.status == "denied") == (step.arguments.get("note") == "no")
    if out is not None:
        assert out.passes == tuple(s.pass_ for s in stepped)
        assert (out.conflict is not None) == any(
            s.pass_.reasons.get(FINAL_ANSWER, "").startswith("the requirements conflict")
            for s in stepped
        )

    # Law 3: every reply is accounted for.
    admitted_ids = [s.call_id for s in admitted]
    assert len(admitted_ids) == len(set(admitted_ids))
    for position, reply in enumerate(record.events):
        if reply.kind != "model.response":
            continue
        later = record.events[position + 1 :]
        upto = next(
            (i for i, e in enumerate(later) if e.kind in ("model.request", "run.finish")),
            len(later),
        )
        window = later[:upto]
        calls_made = reply.response.tool_calls
        if calls_made:
            # each call: admitted and ran, or permission refused, or refused (gate, listener,
            # or the run over), exactly once
            fates = [
                e.call_id for e in window if e.kind in ("tool.start", "tool.denied", "tool.refused")
            ]
            assert sorted(fates) == sorted(made.id for made in calls_made), (fates, calls_made)
        else:
            rescued = [e for e in window if e.kind == "final_answer" and e.rescued]
            retried = [e for e in window if e.kind == "retry"]
            # ...or the retry it cost was over budget, and the run ended there
            ended = upto < len(later) and later[upto] is finished and error is not None
            assert rescued or retried or ended, [e.kind for e in window]

    refusals = record.of("tool.refused")
    label(f"ended with {type(error).__name__ if error else 'an answer'}")
    label(f"refused calls: {'some' if refusals else 'none'}")
    by_listener = any(e.by == "listener" for e in refusals)
    label(f"listener refusals: {'some' if by_listener else 'none'}")
    label(f"tools ran: {'some' if ran else 'none'}")


@given(CASES)
def test_no_reply_makes_a_forbidden_tool_run(case):
    check_run(case, scripted=False)


@settings(max_examples=30)
@given(CASES)
def test_no_reply_makes_a_forbidden_tool_run_through_the_scripted_backend(case):
    check_run(case, scripted=True)
