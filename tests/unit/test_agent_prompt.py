"""agent.prompt: a prefix that stays put (tools, system prompt), a history that only grows, the
pass at the end (tool_choice, one step note); only the allowed tools where the backend cannot
take an allowed subset; hidden tools absent everywhere."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence

import anyio
import pytest
from pydantic import BaseModel

from agent import RequirementAgent, tool
from agent.prompt import plan_tools, step_note, system_prompt
from agent.tools import FinalAnswerTool
from backends import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    ScriptedChatModel,
    StreamEnd,
    StreamEvent,
    ToolCall,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    UserMessage,
)
from backends._wire import request_body
from ruleengine import FINAL_ANSWER, ConditionalRequirement, Pass, Rule, requirement


@tool
def think(thought: str) -> str:
    """Think out loud."""
    return "noted"


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def save(text: str) -> str:
    """Save a note."""
    return "saved"


class RawModel:
    """A chat model that records the requests as the agent built them (no forcing ladder)."""

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
    return ChatResponse(tool_calls=tuple(ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(pairs)))


def run(agent, prompt: str = "write a note about z3", **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


REQUIREMENTS = [
    ConditionalRequirement(think, force_at_step=1),
    ConditionalRequirement(save, only_after=[search], reason="search first"),
    ConditionalRequirement(save, min_invocations=1, name="must-save"),
]
SCRIPT = [
    calls(("think", {"thought": "plan"})),
    calls(("search", {"query": "z3"})),
    calls(("search", {"query": "smt"})),
    calls(("save", {"text": "z3 is an smt solver"})),
    calls((FINAL_ANSWER, {"response": "saved"})),
]


def test_the_prefix_stays_put_and_the_history_only_grows():
    llm = RawModel(SCRIPT)
    run(RequirementAgent(llm, [think, search, save], REQUIREMENTS, instructions="Be brief."))
    assert len(llm.requests) == 5
    first = llm.requests[0]
    for request in llm.requests[1:]:
        assert request.messages[0] == first.messages[0]  # the system prompt, byte for byte
        assert [t.name for t in request.tools] == [t.name for t in first.tools]
        assert [t.parameters for t in request.tools] == [t.parameters for t in first.tools]
    bodies = [request_body(r, model="m") for r in llm.requests]
    for before, after in itertools.pairwise(bodies):
        assert after["messages"][: len(before["messages"])] == before["messages"]
        assert after["tools"] == before["tools"]
    # what changes travels at the end: tool_choice and one step note per round
    assert [type(r.tool_choice).__name__ for r in llm.requests] == [
        "ToolChoiceTool",
        "ToolChoiceAllowed",
        "ToolChoiceAllowed",
        "ToolChoiceAllowed",
        "ToolChoiceRequired",
    ]
    assert all(isinstance(r.messages[-1], UserMessage) for r in llm.requests)
    assert llm.requests[0].messages[-1].content == "Now: call `think`. You cannot finish yet."


def test_the_system_prompt_has_role_instructions_and_tool_descriptions():
    llm = RawModel(SCRIPT[-1:])
    agent = RequirementAgent(
        llm, [search], role="You are a librarian.", instructions=["Cite sources.", "Be brief."]
    )
    run(agent)
    text = llm.requests[0].messages[0].content
    assert text.startswith("You are a librarian.\n\n# Instructions\n- Cite sources.\n- Be brief.")
    assert "- `search`: Search the web." in text
    assert "- `final_answer`: Give the final answer" in text


def test_without_allowed_subsets_only_the_allowed_tools_are_sent():
    llm = RawModel(SCRIPT, capabilities=Capabilities(tool_choice=frozenset({"auto", "required"})))
    run(RequirementAgent(llm, [think, search, save], REQUIREMENTS))
    offered = [[t.name for t in r.tools] for r in llm.requests]
    assert offered == [
        ["think"],
        ["think", "search"],
        ["think", "search", "save"],
        ["think", "search", "save"],
        ["think", "search", "save", FINAL_ANSWER],
    ]
    assert llm.requests[0].tool_choice == ToolChoiceTool("think")
    assert llm.requests[1].tool_choice == ToolChoiceRequired()


def test_hidden_tools_are_absent_from_tools_prompt_and_notes():
    @requirement(name="hide-save")
    def hide_save(state):
        return [Rule("save", hidden=True, reason="saving is off today")]

    llm = RawModel([calls((FINAL_ANSWER, {"response": "ok"}))])
    run(RequirementAgent(llm, [search, save], [hide_save]))
    request = llm.requests[0]
    assert [t.name for t in request.tools] == ["search", FINAL_ANSWER]
    for message in request.messages:
        assert "save" not in message.content  # type: ignore[union-attr]


def test_the_scripted_backend_receives_the_same_layout():
    llm = ScriptedChatModel(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "z3"}}]}, "Z3 is a solver."],
        capabilities=Capabilities(),
    )
    out = run(RequirementAgent(llm, [search], final_answer_as_tool=False))
    assert out.answer == "Z3 is a solver."
    assert llm.requests[0].messages[0] == llm.requests[1].messages[0]
    assert llm.requests[0].tools == ("search",)  # final_answer is not a tool here
    assert llm.requests[0].tool_choice == ToolChoiceAuto()


# -- the pieces --------------------------------------------------------------------------------


def a_pass(allowed, *, forced=None, hidden=(), reasons=None, choice=None) -> Pass:
    allowed = tuple(allowed)
    can_stop = FINAL_ANSWER in allowed
    if choice is None:
        choice = forced or (allowed[0] if len(allowed) == 1 else "required")
    return Pass(
        allowed=allowed,
        hidden=tuple(hidden),
        forced=forced,
        can_stop=can_stop,
        tool_choice=choice,
        reasons=reasons or {},
    )


FINAL = FinalAnswerTool()
VISIBLE = [think, search, save, FINAL]


@pytest.mark.parametrize(
    ("the_pass", "allowed_subsets", "names", "choice"),
    [
        (a_pass(["think", "search", "save", FINAL_ANSWER]), True, 4, ToolChoiceRequired()),
        (
            a_pass(["search", FINAL_ANSWER]),
            True,
            4,
            ToolChoiceAllowed(("search", FINAL_ANSWER), "required"),
        ),
        (a_pass(["search", FINAL_ANSWER]), False, 2, ToolChoiceRequired()),
        (a_pass(["think", FINAL_ANSWER], forced="think"), True, 4, ToolChoiceTool("think")),
        (a_pass(["think", FINAL_ANSWER], forced="think"), False, 2, ToolChoiceTool("think")),
        (a_pass(["search"]), True, 4, ToolChoiceTool("search")),
        (a_pass(["search", "save"], choice="auto"), True, 4, ToolChoiceAllowed(("search", "save"))),
    ],
)
def test_plan_tools(the_pass, allowed_subsets, names, choice):
    tools, got = plan_tools(
        the_pass, VISIBLE, supports_allowed=allowed_subsets, final_answer_as_tool=True
    )
    assert len(tools) == names
    assert got == choice


def test_plan_tools_without_final_answer_as_a_tool():
    only_answer = a_pass([FINAL_ANSWER])
    tools, choice = plan_tools(
        only_answer, VISIBLE, supports_allowed=True, final_answer_as_tool=False
    )
    assert [t.name for t in tools] == ["think", "search", "save"]
    assert choice == ToolChoiceNone()
    tools, choice = plan_tools(
        only_answer, VISIBLE, supports_allowed=False, final_answer_as_tool=False
    )
    assert (tools, choice) == ((), ToolChoiceAuto())
    some = a_pass(["search", FINAL_ANSWER], choice="auto")
    tools, choice = plan_tools(some, VISIBLE, supports_allowed=True, final_answer_as_tool=False)
    assert choice == ToolChoiceAllowed(("search",), "auto")


def test_step_notes():
    offered = ["think", "search", "save", FINAL_ANSWER]
    note = functools.partial(step_note, offered=offered, final_answer_as_tool=True)
    forced = a_pass(["think"], forced="think", reasons={"think": "plan first"})
    assert note(forced) == "Now: call `think` (plan first). You cannot finish yet."
    blocked = a_pass(
        ["think", "search"], reasons={"save": "search first", FINAL_ANSWER: "save first"}
    )
    assert note(blocked) == (
        "Now: you may call `think`, `search`. Not now: `save` (search first)."
        " You cannot finish yet (save first)."
    )
    free = a_pass(["think", "search", "save", FINAL_ANSWER])
    assert (
        note(free) == "Now: you may call `think`, `search`, `save`, or finish with `final_answer`."
    )
    assert note(a_pass([FINAL_ANSWER])).startswith("Now: give your final answer")
    text = step_note(free, offered, final_answer_as_tool=False)
    assert text.endswith("or answer in plain text.")


def test_system_prompt_is_a_function_of_its_inputs():
    one = system_prompt(role=None, instructions=(), tools=VISIBLE, final_answer_as_tool=True)
    two = system_prompt(role=None, instructions=(), tools=VISIBLE, final_answer_as_tool=True)
    assert one == two
    assert "`final_answer`" in one
    plain = system_prompt(role=None, instructions=(), tools=VISIBLE, final_answer_as_tool=False)
    assert "- `final_answer`" not in plain


def test_a_typed_answer_without_the_tool_asks_for_structured_output():
    class Verdict(BaseModel):
        approved: bool

    llm = RawModel(lambda request: ChatResponse(text='{"approved": true}'))
    agent = RequirementAgent(llm, [], expected_output=Verdict, final_answer_as_tool=False)
    out = run(agent)
    assert out.answer == Verdict(approved=True)
    request = llm.requests[0]
    assert request.response_format is not None
    assert json.loads(json.dumps(dict(request.response_format.schema)))["required"] == ["approved"]
    assert "# Final answer" in request.messages[0].content


def test_the_step_note_states_the_conditions_on_arguments():
    from agent.prompt import step_note
    from ruleengine import ArgumentsRequirement, Reasoner, RunState
    from ruleengine.conditions.types import ToolSpec, parameters_from_spec

    pay = ToolSpec("pay", None, parameters_from_spec({"amount": "number"}, owner="t"))
    limit = ArgumentsRequirement("pay", allow_if="arg.amount <= 100", name="limit")
    p = Reasoner([pay, "search"], [limit]).decide(RunState())
    note = step_note(p, ["pay", "search", "final_answer"], final_answer_as_tool=True)
    assert note == (
        "Now: you may call `pay`, `search`, or finish with `final_answer`."
        " Arguments must meet: `pay` only if arg.amount <= 100."
    )
    # Without conditions, the note is what it always was.
    plain = Reasoner([pay, "search"], []).decide(RunState())
    assert "Arguments" not in step_note(plain, ["pay", "search"], final_answer_as_tool=True)
