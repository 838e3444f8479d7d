"""agent.runner / agent.loop: the constructor and ``run`` (bad input named), text rescue that never
fails open, retry budgets, ``max_iterations``, conflicts ending the run with their core, tool
errors, typed answers, memory."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import pytest
from pydantic import BaseModel

from agent import (
    AgentOutput,
    ConflictEvent,
    Deny,
    MaxIterationsError,
    Memory,
    RequirementAgent,
    RetryLimitError,
    RunFinishEvent,
    tool,
)
from agent.rescue import Rescued, Retry, rescue
from agent.tools import FinalAnswerTool
from backends import (
    AssistantMessage,
    Capabilities,
    CapabilityError,
    ChatRequest,
    ChatResponse,
    ScriptedChatModel,
    StreamEnd,
    StreamEvent,
    ToolCall,
    UserMessage,
)
from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    ConflictError,
    CycleGuard,
    Pass,
    PolicyError,
    Rule,
    forced,
    requirement,
)


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


@tool(timeout=0.02)
async def slow() -> str:
    """Never answers in time."""
    await anyio.sleep(30)
    return "late"


class RawModel:
    """A chat model that answers exactly what the test scripted: no forcing ladder."""

    def __init__(
        self,
        replies: Sequence[ChatResponse | Exception] | Callable[[ChatRequest], ChatResponse],
        capabilities: Capabilities | None = None,
    ) -> None:
        self._replies = replies
        self.capabilities = capabilities or Capabilities()
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if callable(self._replies):
            return self._replies(request)
        reply = self._replies[len(self.requests) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield StreamEnd(await self.complete(request))


def calls(*pairs: tuple[str, dict]) -> ChatResponse:
    return ChatResponse(tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(pairs)))


def text(words: str) -> ChatResponse:
    return ChatResponse(text=words)


ANSWER = calls((FINAL_ANSWER, {"response": "done"}))
MUST_SEARCH = ConditionalRequirement(search, min_invocations=1)


def run(agent, prompt: str = "go", **kwargs) -> AgentOutput:
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


# -- text rescue -------------------------------------------------------------------------------


def test_plain_text_becomes_the_answer_when_stopping_is_allowed():
    llm = RawModel([text("Z3 is an SMT solver.")])
    agent = RequirementAgent(llm, [search])
    finals = []
    agent.emitter.on("final_answer", finals.append)
    out = run(agent)
    assert out.answer == "Z3 is an SMT solver."
    assert [(s.tool, s.status) for s in out.steps] == [(FINAL_ANSWER, "ok")]
    assert finals[0].rescued is True


def test_plain_text_is_refused_while_stopping_is_forbidden():
    llm = RawModel([text("I know it already."), calls(("search", {"query": "z3"})), text("Z3.")])
    out = run(RequirementAgent(llm, [search], [MUST_SEARCH]))
    assert out.answer == "Z3."
    assert [s.tool for s in out.steps] == ["search", FINAL_ANSWER]
    assert out.retries == 1
    retry = llm.requests[1].messages
    assert retry[-2] == AssistantMessage(content="I know it already.")
    assert retry[-1].content.startswith("Your reply was not used: you cannot finish yet")
    assert "Call `search`." in retry[-1].content


def test_a_reply_that_is_exactly_the_final_answer_object_is_read_as_such():
    llm = RawModel([text('{"response": "forty-two"}')])
    assert run(RequirementAgent(llm, [search])).answer == "forty-two"


class Verdict(BaseModel):
    approved: bool
    amount: float


def test_a_typed_answer_is_read_from_the_first_json_object_of_the_text():
    llm = RawModel([text('Here: {"approved": true, "amount": 30} as asked.')])
    out = run(RequirementAgent(llm, [search], expected_output=Verdict))
    assert out.answer == Verdict(approved=True, amount=30.0)


def test_a_typed_answer_that_does_not_validate_is_retried():
    llm = RawModel(
        [text('{"approved": "perhaps"}'), calls((FINAL_ANSWER, {"approved": False, "amount": 0}))]
    )
    out = run(RequirementAgent(llm, [search], expected_output=Verdict))
    assert out.answer == Verdict(approved=False, amount=0)
    assert out.retries == 1
    assert "could not be used" in llm.requests[1].messages[-1].content


def test_the_per_step_retry_budget_ends_the_run():
    llm = RawModel(lambda request: text("no tools for me"))
    with pytest.raises(RetryLimitError) as info:
        run(RequirementAgent(llm, [search], [MUST_SEARCH]), max_retries_per_step=2)
    assert info.value.scope == "step"
    assert len(llm.requests) == 3
    assert "you cannot finish yet" in info.value.last


def test_the_run_retry_budget_ends_the_run():
    replies: list[ChatResponse] = []
    for i in range(4):
        replies += [text("chat"), calls(("search", {"query": str(i)}))]
    llm = RawModel(replies)
    with pytest.raises(RetryLimitError) as info:
        run(
            RequirementAgent(llm, [search], [ConditionalRequirement(search, min_invocations=9)]),
            total_max_retries=3,
        )
    assert info.value.scope == "run"
    assert len(llm.requests) == 7


def test_empty_and_cut_off_replies_are_retried():
    llm = RawModel([text(""), ChatResponse(text="Z3 is", finish_reason="length"), ANSWER])
    out = run(RequirementAgent(llm, [search]))
    assert out.retries == 2
    assert out.answer == "done"


def test_a_model_that_cannot_be_forced_is_asked_again():
    llm = RawModel([CapabilityError("the model could not be made to call `search`"), ANSWER])
    out = run(RequirementAgent(llm, [search]))
    assert out.retries == 1
    assert llm.requests[1].messages[-1].content.startswith("Your reply did not call a tool.")


def test_rescue_alone():
    final = FinalAnswerTool()
    stop = Pass(
        allowed=("a", FINAL_ANSWER), hidden=(), forced=None, can_stop=True, tool_choice="auto"
    )
    go_on = Pass(allowed=("a",), hidden=(), forced="a", can_stop=False, tool_choice="a")
    assert rescue(text("hi"), stop, final) == Rescued({"response": "hi"})
    assert isinstance(rescue(text("hi"), go_on, final), Retry)
    assert rescue(text("hi"), go_on, final).instruction.endswith("Call `a` now.")  # type: ignore[union-attr]
    assert rescue(ChatResponse(refusal="I can't."), stop, final) == Rescued(
        {"response": "I can't."}
    )


# -- limits and failures -----------------------------------------------------------------------


def test_max_iterations_ends_with_a_clear_error():
    llm = RawModel(lambda request: calls(("search", {"query": str(len(request.messages))})))
    agent = RequirementAgent(llm, [search], [ConditionalRequirement(search, min_invocations=99)])
    with pytest.raises(MaxIterationsError) as info:
        run(agent, max_iterations=3)
    assert info.value.max_iterations == 3
    assert "max_iterations=3" in info.value.message
    assert len(llm.requests) == 3


def test_a_conflict_ends_the_run_with_its_core_and_nothing_unchecked_runs():
    ran = []

    @tool
    def think() -> str:
        """Think."""
        ran.append("think")
        return "ok"

    @requirement(name="never-think", priority=20)
    def never_think(state):
        return [Rule("think", allowed=False)]

    @requirement(name="think-first")
    def think_first(state):
        return [forced("think")] if not state.steps else []

    llm = RawModel([calls(("think", {}))])
    agent = RequirementAgent(llm, [think], [never_think, think_first])
    seen = []
    agent.emitter.on("conflict", seen.append)
    agent.emitter.on("run.finish", seen.append)
    with pytest.raises(ConflictError) as info:
        run(agent)
    assert {e.requirement for e in info.value.core} == {"never-think", "think-first"}
    assert info.value.kind == "forced-conflict"
    assert llm.requests == []  # no pass, no model call, nothing ran
    assert ran == []
    assert isinstance(seen[0], ConflictEvent) and seen[0].error is info.value
    assert isinstance(seen[1], RunFinishEvent) and seen[1].error is info.value


def test_a_conflict_in_the_middle_of_a_batch_stops_the_batch():
    ran = []

    @tool
    def a() -> str:
        """A."""
        ran.append("a")
        return "a"

    @requirement(name="after-a")
    def after_a(state):
        return [Rule(t, allowed=False) for t in ("a", FINAL_ANSWER)] if state.steps else []

    llm = RawModel([calls(("a", {}), ("a", {}))])
    with pytest.raises(ConflictError):
        run(RequirementAgent(llm, [a], [after_a], tool_call_checker=False))
    assert ran == ["a"]


def test_a_tool_that_raises_is_an_error_step_the_model_reads():
    llm = RawModel([calls(("explode", {"reason": "disk full"})), ANSWER])
    out = run(RequirementAgent(llm, [explode]))
    step = out.steps[0]
    assert (step.status, step.error) == ("error", "`explode` failed: RuntimeError: disk full")
    assert llm.requests[1].messages[-2].content == f"error: {step.error}"


def test_a_tool_that_times_out_is_an_error_step():
    out = run(RequirementAgent(RawModel([calls(("slow", {})), ANSWER]), [slow]))
    assert out.steps[0].error == "`slow` timed out after 0.02 s"


def test_a_timeout_error_the_tool_raises_itself_is_its_own_failure():
    @tool(timeout=30)
    def fetch() -> str:
        """Fetch from a slow service."""
        raise TimeoutError("the service timed out")

    out = run(RequirementAgent(RawModel([calls(("fetch", {})), ANSWER]), [fetch]))
    assert out.steps[0].error == "`fetch` failed: TimeoutError: the service timed out"


def test_the_output_carries_steps_passes_usage_and_messages():
    llm = ScriptedChatModel(
        [
            {
                "tool_calls": [{"name": "search", "arguments": {"query": "z3"}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10},
            },
            {
                "tool_calls": [{"name": FINAL_ANSWER, "arguments": {"response": "ok"}}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 5, "cached_prompt_tokens": 90},
            },
        ]
    )
    out = run(RequirementAgent(llm, [search]))
    assert len(out.steps) == len(out.passes) == 2
    assert out.steps[0].output == "found z3"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (220, 15)
    assert out.usage.cached_prompt_tokens == 90
    assert out.iterations == 2
    assert out.state.steps == out.steps
    assert out.messages[1] == UserMessage("go")


# -- memory ------------------------------------------------------------------------------------


def test_memory_carries_the_conversation_to_the_next_run():
    memory = Memory()
    llm = RawModel(
        [calls(("search", {"query": "z3"})), ANSWER, calls((FINAL_ANSWER, {"response": "again"}))]
    )
    agent = RequirementAgent(llm, [search], memory=memory)
    run(agent, "first")
    saved = memory.messages
    assert saved[0] == UserMessage("first")
    assert saved[-1] == AssistantMessage(content="done")
    assert not any(m.content.startswith("Now:") for m in saved if isinstance(m, UserMessage))
    run(agent, "second")
    second = llm.requests[2].messages
    assert second[1 : 1 + len(saved)] == saved
    assert second[1 + len(saved)] == UserMessage("second")


def test_memory_without_intermediate_steps_keeps_prompt_and_answer():
    memory = Memory()
    llm = RawModel([calls(("search", {"query": "z3"})), ANSWER])
    run(RequirementAgent(llm, [search], memory=memory, save_intermediate_steps=False), "q")
    assert memory.messages == (UserMessage("q"), AssistantMessage(content="done"))


# -- bad input ---------------------------------------------------------------------------------

LLM = RawModel([])


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"llm": "gpt"}, "llm="),
        ({"tools": "search"}, "tools="),
        ({"tools": [3]}, "tools holds `3`"),
        ({"tools": [search, search]}, "`search` is declared twice"),
        ({"tools": [FinalAnswerTool()]}, "built in"),
        ({"requirements": [3]}, "requirements holds `3`"),
        ({"requirements": [CycleGuard(), CycleGuard()]}, "two cycle guards"),
        ({"tool_call_checker": "yes"}, "tool_call_checker="),
        ({"tool_call_checker": CycleGuard(), "requirements": [CycleGuard()]}, "hold another"),
        ({"expected_output": int}, "expected_output="),
        ({"instructions": [1]}, "instruction"),
        ({"role": 5}, "role="),
        ({"memory": []}, "memory="),
        ({"final_answer_as_tool": 1}, "final_answer_as_tool="),
        ({"save_intermediate_steps": None}, "save_intermediate_steps="),
        ({"name": ""}, "name"),
        ({"mode": "loose"}, "mode="),
        ({"on_conflict": "ignore"}, "on_conflict="),
        ({"on_conflict": None}, "on_conflict="),
        ({"requirements": [ConditionalRequirement("telepathy")]}, "telepathy"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs, fragment):
    arguments = {"llm": LLM, "tools": [search], **kwargs}
    with pytest.raises(PolicyError) as info:
        RequirementAgent(**arguments)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("prompt", "kwargs", "fragment"),
    [
        (3, {}, "prompt="),
        ("", {}, "prompt must not be empty"),
        ("go", {"max_iterations": 0}, "max_iterations=`0` must be at least 1"),
        ("go", {"max_iterations": 2.5}, "max_iterations="),
        ("go", {"max_retries_per_step": -1}, "max_retries_per_step="),
        ("go", {"total_max_retries": True}, "total_max_retries="),
    ],
)
def test_bad_run_arguments_are_named(prompt, kwargs, fragment):
    agent = RequirementAgent(RawModel([ANSWER]), [search])
    with pytest.raises(PolicyError) as info:
        run(agent, prompt, **kwargs)
    assert fragment in str(info.value)


def test_plain_functions_become_tools_and_one_requirement_is_accepted():
    def shout(words: str) -> str:
        """Shout."""
        return words.upper()

    llm = RawModel([calls(("shout", {"words": "hi"})), ANSWER])
    alone = ConditionalRequirement("shout", max_invocations=1)
    out = run(RequirementAgent(llm, [shout], alone))  # one requirement, not in a list
    assert out.steps[0].output == "HI"
    assert repr(RequirementAgent(llm, [shout])) == (
        "RequirementAgent(name='agent', tools=['shout', 'final_answer'])"
    )


def test_run_sync():
    agent = RequirementAgent(RawModel([ANSWER]), [search])
    assert agent.run_sync("go").answer == "done"


def test_run_sync_inside_an_event_loop_says_to_await():
    agent = RequirementAgent(RawModel([ANSWER]), [search])

    async def main() -> None:
        agent.run_sync("go")

    with pytest.raises(PolicyError, match=r"await agent\.run"):
        anyio.run(main)


def test_the_gate_checks_its_arguments():
    from agent import Gate

    with pytest.raises(PolicyError):
        Gate({"x": search}, None)
    with pytest.raises(PolicyError):
        Gate({"search": search}, "guard")  # type: ignore[arg-type]


# -- replies the model chose, on every capability and both backends ----------------------------

B_AFTER_A_TOOLS: list = []


@tool
def a() -> str:
    """Tool a."""
    B_AFTER_A_TOOLS.append("a")
    return "a"


@tool
def b() -> str:
    """Tool b."""
    B_AFTER_A_TOOLS.append("b")
    return "b"


CAPABILITY_SETS = [
    Capabilities(),
    Capabilities().without("allowed"),
    Capabilities().without("allowed", "required"),
    Capabilities().without("allowed", "tool"),
    Capabilities(tool_choice=frozenset({"auto"})),
    Capabilities(tool_choice=frozenset({"auto"}), response_format=False),
    Capabilities(parallel_tool_calls=False),
]


@pytest.mark.parametrize("capabilities", CAPABILITY_SETS, ids=repr)
def test_a_call_outside_the_pass_is_refused_told_and_asked_again(capabilities):
    # `b` only after `a`; the model's first reply calls only `b`. Whatever the server can
    # honour, that reply reaches the gate, which refuses it and says why: a retry, and nothing
    # is held against the server.
    B_AFTER_A_TOOLS.clear()
    structured = not capabilities.supports("tool") and not capabilities.supports("required")
    first = '{"name": "b", "arguments": {}}' if structured else {"tool_calls": [{"name": "b"}]}
    then_a = '{"name": "a", "arguments": {}}' if structured else {"tool_calls": [{"name": "a"}]}
    llm = ScriptedChatModel(
        [first, then_a, {"tool_calls": [{"name": FINAL_ANSWER, "arguments": {"response": "ok"}}]}],
        capabilities=capabilities,
    )
    agent = RequirementAgent(
        llm,
        [a, b],
        [ConditionalRequirement(b, only_after=[a]), ConditionalRequirement(a, force_at_step=1)],
    )
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [("a", "ok"), (FINAL_ANSWER, "ok")]
    assert B_AFTER_A_TOOLS == ["a"] and out.retries == 1
    ((reason, by),) = [(e.reason, e.by) for e in refused]
    assert by == "gate" and reason.startswith("`b` did not run: it is not allowed at this step")
    assert llm.lacking == frozenset()
    # the model read why, answering its call, and was asked again under the same pass
    told = [
        m for m in llm.requests[1].messages if getattr(m, "call_id", None) == refused[0].call_id
    ]
    assert [m.content for m in told] == [reason]
    assert len(llm.requests) == 3


@pytest.mark.parametrize("as_tool", [True, False])
@pytest.mark.parametrize("capabilities", CAPABILITY_SETS, ids=repr)
def test_a_text_answer_ends_the_run_when_stopping_is_allowed(as_tool, capabilities):
    llm = ScriptedChatModel(["Z3 is an SMT solver."], capabilities=capabilities)
    agent = RequirementAgent(llm, [search], final_answer_as_tool=as_tool)
    finals = []
    agent.emitter.on("final_answer", finals.append)
    out = run(agent)
    assert out.answer == "Z3 is an SMT solver." and finals[0].rescued
    assert [(s.tool, s.status) for s in out.steps] == [(FINAL_ANSWER, "ok")]
    assert out.retries == 0 and len(llm.requests) == 1 and llm.lacking == frozenset()


@pytest.mark.parametrize("as_tool", [True, False])
def test_a_text_answer_goes_through_final_answers_own_rules(as_tool):
    # The rescued answer is a `final_answer` call like any other: a listener may refuse it,
    # and the model is told, and asked again; its second answer is taken.
    heard: list[str] = []

    def second_answer_only(event):
        heard.append(event.tool)
        return Deny("say it in one sentence") if heard.count(FINAL_ANSWER) == 1 else None

    llm = RawModel([text("Z3... it is a long story."), text("Z3 is an SMT solver.")])
    agent = RequirementAgent(llm, [search], final_answer_as_tool=as_tool)
    agent.emitter.on("tool.start", second_answer_only)
    out = run(agent)
    assert out.answer == "Z3 is an SMT solver." and out.retries == 1
    note = llm.requests[1].messages[-1].content
    assert note.startswith(
        "Your answer was not used: `final_answer` did not run: say it in one sentence."
    )


def test_a_text_reply_while_stopping_is_forbidden_says_what_is_left_to_do():
    llm = ScriptedChatModel(
        [
            "Done, I think.",
            {"tool_calls": [{"name": "search", "arguments": {"query": "z3"}}]},
            "Done.",
        ]
    )
    out = run(RequirementAgent(llm, [search], [MUST_SEARCH]))
    assert out.answer == "Done." and out.retries == 1
    note = llm.requests[1].messages[-1].content
    assert note.startswith("Your reply was not used: you cannot finish yet")
    assert "Call `search`." in note


# -- only permission refusals are steps --------------------------------------------------------


def test_a_listener_refusing_an_allowed_answer_leaves_the_checked_states_alone():
    # This policy checks clean. When a listener's refusal of the first (allowed) answer was a
    # `denied` step, it made that refusal step 1, so the hard force on `x` at step 2 met a
    # state the checker never explores (`x` needs `y` first), and the run ended in a forced
    # conflict. A refusal is no step: the run goes on from the state the checker knows.
    from ruleengine import Policy

    requirement_x = ConditionalRequirement(
        "x", force_at_step=2, only_after=["y"], only_success_invocations=False
    )
    policy = Policy(["x", "y"], [requirement_x])
    report = policy.check()
    assert report.complete and report.findings == ()

    @tool
    def x() -> str:
        """Tool x."""
        return "x"

    @tool
    def y() -> str:
        """Tool y."""
        return "y"

    heard: list[str] = []

    def refuse_first_answer(event):
        heard.append(event.tool)
        return Deny("not yet") if heard == [FINAL_ANSWER] else None

    llm = RawModel(
        [
            calls((FINAL_ANSWER, {"response": "early"})),
            calls(("y", {})),
            calls(("x", {})),
            calls((FINAL_ANSWER, {"response": "done"})),
        ]
    )
    agent = RequirementAgent(llm, [x, y], policy.requirements, tool_call_checker=False)
    agent.emitter.on("tool.start", refuse_first_answer)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("y", "ok"),
        ("x", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.answer == "done" and out.retries == 1


# -- ending on a conflict ----------------------------------------------------------------------


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def meteorologist(llm, **kwargs) -> RequirementAgent:
    """BeeAI's meteorologist: it must look the weather up once; the user refuses it."""
    from ruleengine import AskPermissionRequirement

    return RequirementAgent(
        llm,
        [weather],
        [
            ConditionalRequirement(weather, min_invocations=1),
            AskPermissionRequirement(
                include=[weather], handler=lambda tool, arguments: False, remember_choices=True
            ),
        ],
        **kwargs,
    )


LOOK_UP = calls(("weather", {"city": "Oslo"}))


def test_by_default_a_conflict_ends_the_run():
    with pytest.raises(ConflictError) as info:
        run(meteorologist(RawModel([LOOK_UP])))
    assert info.value.kind == "deadlock"


@pytest.mark.parametrize("as_tool", [True, False])
def test_with_on_conflict_answer_the_model_says_why_it_cannot_go_on(as_tool):
    answer = (
        calls((FINAL_ANSWER, {"response": "I may not look the weather up."}))
        if as_tool
        else text("I may not look the weather up.")
    )
    llm = RawModel([LOOK_UP, calls(("weather", {"city": "Oslo"})), answer])
    agent = meteorologist(llm, on_conflict="answer", final_answer_as_tool=as_tool)
    events = []
    agent.emitter.on("*", events.append)
    out = run(agent)
    assert out.answer == "I may not look the weather up."
    assert out.conflict is not None and out.conflict.kind == "deadlock"
    assert [(s.tool, s.status) for s in out.steps] == [("weather", "denied"), (FINAL_ANSWER, "ok")]
    # the model could call nothing else: its call of `weather` was refused (a retry)
    refused = [e for e in events if e.kind == "tool.refused"]
    assert [e.tool for e in refused] == ["weather"] and out.retries == 1
    assert [e.kind for e in events].count("conflict") == 1
    # it was told the conflict's explanation, and offered only `final_answer`
    asked = llm.requests[1]
    assert asked.messages[-1].content.startswith("The run cannot go on: the requirements")
    assert out.conflict.message in asked.messages[-1].content
    offered = [t.name for t in asked.tools]
    # (`final_answer` as a tool: it alone is offered or named; else text, no call allowed)
    assert offered in ([FINAL_ANSWER], ["weather", FINAL_ANSWER], ["weather"])
    assert asked.tool_choice.kind == ("tool" if as_tool else "none")
    assert out.passes[-1].allowed == (FINAL_ANSWER,)
    assert out.passes[-1].reasons[FINAL_ANSWER].startswith("the requirements conflict")


def test_a_conflict_with_no_round_left_to_answer_is_raised():
    # The refusal of the first call makes the state conflict: the second call of the batch
    # has no pass, and no round is left for an answer.
    twice = calls(("weather", {"city": "Oslo"}), ("weather", {"city": "Rome"}))
    agent = meteorologist(RawModel([twice, ANSWER]), on_conflict="answer", tool_call_checker=False)
    with pytest.raises(ConflictError) as info:
        run(agent, max_iterations=1)
    assert info.value.kind == "deadlock"


def test_a_conflict_in_the_middle_of_a_batch_is_answered_in_the_next_round():
    @tool
    def step() -> str:
        """One step."""
        return "ok"

    @requirement(name="after-one-step")
    def after_one_step(state):
        return [Rule(t, allowed=False) for t in ("step", FINAL_ANSWER)] if state.steps else []

    llm = RawModel(
        [calls(("step", {}), ("step", {})), calls((FINAL_ANSWER, {"response": "stuck"}))]
    )
    agent = RequirementAgent(
        llm, [step], [after_one_step], tool_call_checker=False, on_conflict="answer"
    )
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    out = run(agent)
    assert out.answer == "stuck" and out.conflict is not None and out.iterations == 2
    assert [(e.by, e.reason.split(":")[1].strip()) for e in refused] == [
        ("run", "the requirements conflict")
    ]
