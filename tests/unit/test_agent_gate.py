"""agent.gate: refusals in order (bad JSON, unknown or hidden, not allowed, bad arguments, cycle),
and batch admission in a run: each call of a parallel batch is checked against the pass
recomputed after the calls before it."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import pytest

from agent import Admitted, Gate, Refused, RequirementAgent, tool
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


def test_a_first_call_that_forbids_the_second():
    reqs = [ConditionalRequirement(search, max_invocations=1)]
    llm = RawModel(
        [
            calls(("search", {"query": "a"}), ("search", {"query": "b"})),
            calls((FINAL_ANSWER, {"response": "done"})),
        ]
    )
    out = run(RequirementAgent(llm, [search], reqs))
    assert [(s.tool, s.status) for s in out.steps][:2] == [("search", "ok"), ("search", "denied")]
    assert ran == ["search:a"]
    # the model reads why, answering the second call of the batch
    second = llm.requests[1].messages
    assert second[-2].content == out.steps[1].error  # the tool message, before the step note
    assert "it is not allowed at this step" in out.steps[1].error


def test_final_answer_in_a_batch_waits_for_what_it_depends_on():
    reqs = [ConditionalRequirement(search, min_invocations=1)]
    llm = RawModel(
        [
            calls((FINAL_ANSWER, {"response": "early"}), ("search", {"query": "a"})),
            calls(("search", {"query": "b"}), (FINAL_ANSWER, {"response": "late"})),
        ]
    )
    out = run(RequirementAgent(llm, [search], reqs))
    assert [(s.tool, s.status) for s in out.steps] == [
        (FINAL_ANSWER, "denied"),
        ("search", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.answer == "late"
    assert out.steps[0].error.startswith("`final_answer` did not run: you cannot finish yet")


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
    out = run(RequirementAgent(llm, [search, send_email, secret], [hide_secret]))
    assert [s.status for s in out.steps] == ["denied"] * 5 + ["ok"]
    assert ran == []
    # the hidden tool is absent from every request (tools, system prompt, step notes), and
    # calling it reads exactly like calling a tool that does not exist
    for request in llm.requests:
        assert "secret" not in [t.name for t in request.tools]
        written = [m for m in request.messages if isinstance(m, SystemMessage | UserMessage)]
        assert all("secret" not in m.content for m in written)
    assert out.steps[1].error == out.steps[0].error.replace("telepathy", "secret")


def test_cycle_guard_denies_then_replans():
    llm = RawModel(
        [
            calls(("search", {"query": "x"})),
            calls(("search", {"query": "x"})),
            calls(("send_email", {"to": "bob"})),
            calls(("search", {"query": "x"})),
            calls((FINAL_ANSWER, {"response": "ok"})),
        ]
    )
    out = run(RequirementAgent(llm, [search, send_email]))
    assert [(s.tool, s.status) for s in out.steps] == [
        ("search", "ok"),
        ("search", "denied"),
        ("send_email", "ok"),
        ("search", "ok"),
        (FINAL_ANSWER, "ok"),
    ]
    assert "called repeatedly" in out.steps[1].error
    # after the refused repeat, the guard's rule denies `search` for the next round: the
    # model re-plans; once the history moved on, `search` is allowed again
    assert "search" not in out.passes[2].allowed
    assert "search" in out.passes[3].allowed
    assert ran == ["search:x", "send_email:bob", "search:x"]


def test_repeated_unknown_calls_do_not_break_the_cycle_guard():
    llm = RawModel(
        [calls(("nope", {})), calls(("nope", {})), calls((FINAL_ANSWER, {"response": "x"}))]
    )
    out = run(RequirementAgent(llm, [search]))
    assert [s.status for s in out.steps] == ["denied", "denied", "ok"]


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
    out = run(RequirementAgent(llm, [search], [guard]))
    assert [s.status for s in out.steps] == ["ok", "ok", "denied", "ok"]
    assert Reasoner  # the reasoner stays the one public way to decide passes
