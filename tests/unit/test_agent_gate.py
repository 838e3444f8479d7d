"""agent.gate: refusals in order (bad JSON, unknown or hidden, not allowed, bad arguments, cycle),
the repeat check yielding, and admission in a run: every call (the first of a reply, the later
ones of a batch, a text answer, a retry) is checked against the pass of the state at that
instant, and a refused call is not a step."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import pytest

from agent import Admitted, Deny, Gate, Refused, RequirementAgent, tool
from agent.tools import FinalAnswerTool
from backends import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    StreamEnd,
    StreamEvent,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    CycleGuard,
    Pass,
    Reasoner,
    Rule,
    RunState,
    Step,
    requirement,
)

ran: list[str] = []


@tool
def search(query: str) -> str:
    """Search."""
    ran.append(f"search:{query}")
    return f"found {query}"


@tool
def send_email(to: str) -> str:
    """Send an e-mail."""
    ran.append(f"send_email:{to}")
    return "sent"


@tool
def secret() -> str:
    """A tool the pass hides."""
    ran.append("secret")
    return "boo"


TOOLS = {t.name: t for t in (search, send_email, secret, FinalAnswerTool())}


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


class RawModel:
    """A chat model that answers exactly what the test scripted: no forcing ladder."""

    def __init__(
        self,
        replies: Sequence[ChatResponse] | Callable[[ChatRequest], ChatResponse],
        capabilities: Capabilities | None = None,
    ) -> None:
        self._replies = replies
        self.capabilities = capabilities or Capabilities()
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        if callable(self._replies):
            return self._replies(request)
        return self._replies[len(self.requests) - 1]

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        yield StreamEnd(await self.complete(request))


def calls(*pairs: tuple[str, dict]) -> ChatResponse:
    return ChatResponse(
        tool_calls=tuple(ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(pairs))
    )


def run(agent, prompt: str = "go", **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


def a_pass(allowed, hidden=(), forced=None, reasons=None) -> Pass:
    allowed = tuple(allowed)
    can_stop = FINAL_ANSWER in allowed
    choice = forced or ("required" if not can_stop else "auto")
    return Pass(
        allowed=allowed,
        hidden=tuple(hidden),
        forced=forced,
        can_stop=can_stop,
        tool_choice=choice,
        reasons=reasons or {},
    )


# -- the gate alone ----------------------------------------------------------------------------


def test_admits_an_allowed_call_with_valid_arguments():
    gate = Gate(TOOLS, None)
    verdict = gate.admit(ToolCall("1", "search", {"query": "x"}), a_pass(TOOLS), RunState())
    assert isinstance(verdict, Admitted)
    assert verdict.tool is search
    assert verdict.input.query == "x"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("call", "the_pass", "reason"),
    [
        (
            InvalidToolCall("1", "search", "{{", "`search`: arguments are not valid JSON"),
            a_pass(TOOLS),
            "`search` did not run: `search`: arguments are not valid JSON",
        ),
        (
            ToolCall("1", "telepathy", {}),
            a_pass(["search", "final_answer"], hidden=["secret"]),
            "there is no tool `telepathy`: the tools are `search`, `send_email`, `final_answer`",
        ),
        (
            ToolCall("1", "secret", {}),
            a_pass(["search", "final_answer"], hidden=["secret"]),
            "there is no tool `secret`: the tools are `search`, `send_email`, `final_answer`",
        ),
        (
            ToolCall("1", "send_email", {"to": "bob"}),
            a_pass(["search"], reasons={"send_email": "search first"}),
            "`send_email` did not run: it is not allowed at this step (search first);"
            " allowed now: `search`",
        ),
        (
            ToolCall("1", "send_email", {"to": "bob"}),
            a_pass(["search", "final_answer"], forced="search"),
            "`send_email` did not run: it is not allowed at this step; call `search` now",
        ),
        (
            ToolCall("1", FINAL_ANSWER, {"response": "x"}),
            a_pass(["search"], reasons={FINAL_ANSWER: "search first"}),
            "`final_answer` did not run: you cannot finish yet (search first);"
            " allowed now: `search`",
        ),
        (
            ToolCall("1", "search", {"q": "x"}),
            a_pass(TOOLS),
            "`search` did not run: invalid arguments for `search`: `query`: field required;"
            " `q`: extra inputs are not permitted",
        ),
    ],
)
def test_refusals_say_why(call, the_pass, reason):
    verdict = Gate(TOOLS, None).admit(call, the_pass, RunState())
    assert verdict == Refused(reason)


def test_the_cycle_guard_refuses_a_repeat_with_its_reason():
    gate = Gate(TOOLS, CycleGuard(max_strike_length=1))
    state = RunState.from_trace([Step(tool="search", arguments={"query": "x"})])
    repeat = ToolCall("1", "search", {"query": "x"})
    verdict = gate.admit(repeat, a_pass(TOOLS), state)
    assert isinstance(verdict, Refused)
    assert "called repeatedly with the same arguments" in verdict.reason
    other = ToolCall("2", "search", {"query": "y"})
    assert isinstance(gate.admit(other, a_pass(TOOLS), state), Admitted)
    final = ToolCall("3", FINAL_ANSWER, {"response": "r"})
    done = RunState.from_trace([Step(tool=FINAL_ANSWER, arguments={"response": "r"})])
    assert isinstance(gate.admit(final, a_pass(TOOLS), done), Admitted)


# -- batch admission in a run ------------------------------------------------------------------


def test_a_first_call_that_unlocks_the_second():
    # `send_email` only after `search`: in one batch, the second call is admitted because
    # the pass is recomputed after the first one ran.
    reqs = [ConditionalRequirement(send_email, only_after=[search])]
    llm = RawModel(
        [
            calls(("search", {"query": "bob"}), ("send_email", {"to": "bob"})),
            calls((FINAL_ANSWER, {"response": "done"})),
        ]
    )
    out = run(RequirementAgent(llm, [search, send_email], reqs))
    assert [(s.tool, s.status) for s in out.steps] == [
        ("search", "ok"),
        ("send_email", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert "send_email" not in out.passes[0].allowed
    assert "send_email" in out.passes[1].allowed
    assert ran == ["search:bob", "send_email:bob"]


def refusals(agent) -> list:
    found: list = []
    agent.emitter.on("tool.refused", found.append)
    return found


def test_a_first_call_that_forbids_the_second():
    reqs = [ConditionalRequirement(search, max_invocations=1)]
    llm = RawModel(
        [
            calls(("search", {"query": "a"}), ("search", {"query": "b"})),
            calls((FINAL_ANSWER, {"response": "done"})),
        ]
    )
    agent = RequirementAgent(llm, [search], reqs)
    refused = refusals(agent)
    out = run(agent)
    # The refused second call is not a step: the state is as the first call left it.
    assert [(s.tool, s.status) for s in out.steps] == [("search", "ok"), (FINAL_ANSWER, "ok")]
    assert ran == ["search:a"]
    ((reason, by),) = [(e.reason, e.by) for e in refused]
    assert by == "gate" and "it is not allowed at this step" in reason
    # the model reads why, answering the second call of the batch; the reply made a step,
    # so it cost no retry
    second = llm.requests[1].messages
    assert second[-2].content == reason  # the tool message, before the step note
    assert out.retries == 0


def test_final_answer_in_a_batch_waits_for_what_it_depends_on():
    reqs = [ConditionalRequirement(search, min_invocations=1)]
    llm = RawModel(
        [
            calls((FINAL_ANSWER, {"response": "early"}), ("search", {"query": "a"})),
            calls(("search", {"query": "b"}), (FINAL_ANSWER, {"response": "late"})),
        ]
    )
    agent = RequirementAgent(llm, [search], reqs)
    refused = refusals(agent)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("search", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.answer == "late"
    assert refused[0].reason.startswith("`final_answer` did not run: you cannot finish yet")


def test_calls_after_final_answer_do_not_run():
    llm = RawModel([calls((FINAL_ANSWER, {"response": "now"}), ("search", {"query": "x"}))])
    out = run(RequirementAgent(llm, [search]))
    assert out.answer == "now"
    assert [s.tool for s in out.steps] == [FINAL_ANSWER]
    assert ran == []
    # every call of the conversation is answered (a valid history for memory)
    assert out.messages[-1].content == "`search` did not run: the run is over"


def test_unknown_hidden_forbidden_and_malformed_calls_never_run():
    @requirement(name="hide-secret")
    def hide_secret(state):
        return [Rule("secret", hidden=True), Rule("send_email", allowed=False, reason="no")]

    bad = ChatResponse(
        tool_calls=(
            ToolCall("a", "telepathy", {}),
            ToolCall("b", "secret", {}),
            ToolCall("c", "send_email", {"to": "x"}),
            InvalidToolCall("d", "search", "{{{", "`search`: arguments are not valid JSON"),
            ToolCall("e", "search", {"query": 5}),
        )
    )
    llm = RawModel([bad, calls((FINAL_ANSWER, {"response": "ok"}))])
    agent = RequirementAgent(llm, [search, send_email, secret], [hide_secret])
    refused = refusals(agent)
    out = run(agent)
    # Five refusals, none a step; the reply made no step, so it cost one retry.
    assert [s.tool for s in out.steps] == [FINAL_ANSWER] and out.retries == 1
    assert [(e.call_id, e.by) for e in refused] == [(c, "gate") for c in "abcde"]
    assert ran == []
    # the hidden tool is absent from every request (tools, system prompt, step notes), and
    # calling it reads exactly like calling a tool that does not exist
    for request in llm.requests:
        assert "secret" not in [t.name for t in request.tools]
        written = [m for m in request.messages if isinstance(m, SystemMessage | UserMessage)]
        assert all("secret" not in m.content for m in written)
    assert refused[1].reason == refused[0].reason.replace("telepathy", "secret")


def test_the_repeat_check_refuses_a_repeat_and_the_model_replans():
    llm = RawModel(
        [
            calls(("search", {"query": "x"})),
            calls(("search", {"query": "x"})),
            calls(("send_email", {"to": "bob"})),
            calls(("search", {"query": "x"})),
            calls((FINAL_ANSWER, {"response": "ok"})),
        ]
    )
    agent = RequirementAgent(llm, [search, send_email])
    refused = refusals(agent)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("search", "ok"),
        ("send_email", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    (repeat,) = refused
    assert "called repeatedly" in repeat.reason and out.retries == 1
    # the refused repeat is not a step: the state, and so the pass, stay as they were
    assert out.passes[0] == out.passes[1]
    assert ran == ["search:x", "send_email:bob", "search:x"]


def test_repeated_unknown_calls_do_not_break_the_cycle_guard():
    llm = RawModel(
        [calls(("nope", {})), calls(("nope", {})), calls((FINAL_ANSWER, {"response": "x"}))]
    )
    agent = RequirementAgent(llm, [search])
    refused = refusals(agent)
    out = run(agent)
    assert [s.status for s in out.steps] == ["ok"] and out.retries == 2
    assert [e.tool for e in refused] == ["nope", "nope"]


def test_without_the_checker_repeats_run():
    llm = RawModel(
        [
            calls(("search", {"query": "x"})),
            calls(("search", {"query": "x"})),
            calls((FINAL_ANSWER, {"response": "ok"})),
        ]
    )
    out = run(RequirementAgent(llm, [search], tool_call_checker=False))
    assert [s.status for s in out.steps] == ["ok", "ok", "ok"]


def test_a_cycle_guard_among_the_requirements_is_the_one_used():
    guard = CycleGuard(max_strike_length=2)
    llm = RawModel(
        [calls(("search", {"query": "x"}))] * 3 + [calls((FINAL_ANSWER, {"response": "ok"}))]
    )
    agent = RequirementAgent(llm, [search], [guard])
    refused = refusals(agent)
    out = run(agent)
    assert [s.status for s in out.steps] == ["ok", "ok", "ok"]
    assert [e.tool for e in refused] == ["search"] and out.retries == 1
    assert Reasoner  # the reasoner stays the one public way to decide passes


# -- one pass per instant ----------------------------------------------------------------------


@tool
def x() -> str:
    """Tool x."""
    ran.append("x")
    return "x"


@tool
def y() -> str:
    """Tool y."""
    ran.append("y")
    return "y"


@tool
def tick() -> str:
    """A tool without arguments: every call of it is the same call."""
    ran.append("tick")
    return "tock"


def admissions(agent) -> list:
    starts: list = []
    agent.emitter.on("tool.start", starts.append)
    return starts


def test_a_refused_text_answer_leaves_the_state_and_so_the_pass_as_they_were():
    # The run that let `y` run under a stale pass: a listener refuses the first (rescued)
    # answer; that refusal is not a step, so the next call and the next text answer are
    # decided on the state as it is, the one the static checker explores.
    reqs = [ConditionalRequirement(x, force_at_step=2, only_success_invocations=False)]
    listened: list[str] = []

    def refuse_first_answer(event):
        listened.append(event.tool)
        if event.tool == FINAL_ANSWER and listened.count(FINAL_ANSWER) == 1:
            return Deny("not yet")
        return None

    llm = RawModel(
        [
            ChatResponse(text="I am done."),
            calls(("y", {})),
            calls(("x", {})),
            ChatResponse(text="Now I am done."),
        ]
    )
    agent = RequirementAgent(llm, [x, y], reqs, final_answer_as_tool=False, tool_call_checker=False)
    agent.emitter.on("tool.start", refuse_first_answer)
    starts = admissions(agent)
    refused = refusals(agent)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("y", "ok"),
        ("x", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert [(e.tool, e.by, e.rescued) for e in refused] == [(FINAL_ANSWER, "listener", True)]
    # `y` ran at step 1, where it is allowed; `x` was forced at step 2, and was called.
    assert out.passes[0].forced is None and out.passes[1].forced == "x"
    for event in starts:
        assert agent.reasoner.decide(event.state) == event.pass_
        assert event.tool in event.pass_.allowed
    for index in range(len(out.steps)):
        assert out.passes[index] == starts_pass(starts, out.steps[index])


def starts_pass(starts, step):
    return next(e.pass_ for e in starts if e.tool == step.tool and e.arguments == step.arguments)


def test_a_permission_refusal_is_a_step_and_the_rest_of_the_batch_sees_it():
    # Permission refused: a `denied` step. The second call of the batch is decided on the
    # state with that step, where `x` is forced (every step counts): `y` is refused.
    from ruleengine import AskPermissionRequirement

    reqs = [
        ConditionalRequirement(x, force_at_step=2, only_success_invocations=False),
        AskPermissionRequirement(include=[y], handler=lambda tool, args: False),
    ]
    llm = RawModel(
        [
            calls(("y", {}), ("y", {})),
            calls(("x", {})),
            calls((FINAL_ANSWER, {"response": "done"})),
        ]
    )
    agent = RequirementAgent(llm, [x, y], reqs, tool_call_checker=False)
    starts = admissions(agent)
    refused = refusals(agent)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("y", "denied"),
        ("x", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert [(e.tool, e.by) for e in refused] == [("y", "gate")]
    assert "call `x` now" in refused[0].reason
    assert refused[0].pass_ == out.passes[1] and out.passes[1].forced == "x"
    for event in starts:
        assert agent.reasoner.decide(event.state) == event.pass_
    assert ran == ["x"]


def test_every_call_of_a_round_reads_the_same_iteration():
    # A requirement that reads `state.iteration` sees the same value for every admission of
    # a round as for the pass the model was shown.
    @requirement(name="y-in-the-first-round-only")
    def first_round_only(state):
        return [Rule("y", allowed=state.iteration < 1)]

    llm = RawModel([calls(("y", {}), ("y", {})), calls((FINAL_ANSWER, {"response": "done"}))])
    agent = RequirementAgent(llm, [x, y], [first_round_only], tool_call_checker=False)
    starts = admissions(agent)
    out = run(agent)
    assert [s.tool for s in out.steps] == ["y", "y", FINAL_ANSWER]
    assert [e.state.iteration for e in starts] == [0, 0, 1]
    assert "y" not in out.passes[2].allowed


def test_the_repeat_check_yields_when_refusing_would_leave_nothing_to_do():
    # `tick` takes no arguments, so every call of it repeats the last; twice is required.
    # The pass forces `tick` (nothing else is allowed): refusing the repeat would leave the
    # model nothing it may do, so the check yields, and says so.
    reqs = [ConditionalRequirement(tick, min_invocations=2)]
    llm = RawModel(
        lambda request: (
            calls(("tick", {})) if len(ran) < 2 else calls((FINAL_ANSWER, {"response": "done"}))
        )
    )
    agent = RequirementAgent(llm, [tick], reqs)
    starts = admissions(agent)
    out = run(agent, max_iterations=5, total_max_retries=0)
    assert [s.tool for s in out.steps] == ["tick", "tick", FINAL_ANSWER]
    assert [e.notes for e in starts][:1] == [()]
    assert "the repeat check yielded" in starts[1].notes[0]
    assert out.retries == 0


def test_the_repeat_check_does_not_yield_while_something_else_is_allowed():
    gate = Gate(TOOLS, CycleGuard())
    state = RunState.from_trace([Step(tool="search", arguments={"query": "x"})])
    repeat = ToolCall("1", "search", {"query": "x"})
    only_search = a_pass(["search"])
    verdict = gate.admit(repeat, only_search, state)
    assert isinstance(verdict, Admitted) and "yielded" in verdict.notes[0]
    for other in (a_pass(["search", "send_email"]), a_pass(["search", FINAL_ANSWER])):
        assert isinstance(gate.admit(repeat, other, state), Refused)
