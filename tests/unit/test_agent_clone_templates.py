"""``agent.clone()``: the same configuration, independent afterwards; ``Templates``: the system
prompt and the step note in the user's words, the built-in text byte for byte by default."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agent import Memory, RequirementAgent, Templates, tool
from agent.permission import PermissionListener
from agent.prompt import step_note, system_prompt
from backends import ScriptedChatModel, SystemMessage, UserMessage
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Pass,
    Policy,
    PolicyError,
)


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def send(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


class Verdict(BaseModel):
    approved: bool


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


# -- clone -----------------------------------------------------------------------------------


def make_agent(llm: ScriptedChatModel) -> RequirementAgent[Verdict]:
    return RequirementAgent(
        llm,
        [search, send],
        [
            ConditionalRequirement(send, only_after=[search], name="send-after-search"),
            AskPermissionRequirement([send], handler=lambda tool, args: True),
        ],
        instructions=["Be brief."],
        role="You are a clerk.",
        expected_output=Verdict,
        memory=Memory(),
        tool_call_checker=CycleGuard(max_strike_length=2),
        name="clerk",
        description="Approves things.",
        mode="priority",
        on_conflict="answer",
        templates=Templates(step="Note: {note}"),
    )


def test_a_clone_has_the_same_configuration():
    agent = make_agent(ScriptedChatModel([]))
    agent.max_iterations = 7
    twin = agent.clone()
    assert type(twin) is RequirementAgent
    for attribute in (
        "llm",
        "tools",
        "final_tool",
        "name",
        "description",
        "role",
        "instructions",
        "expected_output",
        "expected_output_text",
        "final_answer_as_tool",
        "save_intermediate_steps",
        "on_conflict",
        "max_iterations",
        "policy",
        "templates",
    ):
        assert getattr(twin, attribute) == getattr(agent, attribute), attribute
    assert twin.reasoner.mode == "priority"
    assert twin.reasoner.requirements == agent.reasoner.requirements
    assert twin.gate.cycle_guard is agent.gate.cycle_guard
    assert twin.system_prompt(["search", "send", FINAL_ANSWER]) == agent.system_prompt(
        ["search", "send", FINAL_ANSWER]
    )


def test_a_clone_has_its_own_reasoner_gate_emitter_and_memory():
    agent = make_agent(ScriptedChatModel([]))
    agent.memory.add(UserMessage("earlier"))  # type: ignore[union-attr]
    twin = agent.clone()
    assert twin.reasoner is not agent.reasoner
    assert twin.gate is not agent.gate
    assert twin.emitter is not agent.emitter
    assert twin.memory is not agent.memory
    assert twin.memory is not None and twin.memory.messages == (UserMessage("earlier"),)
    twin.memory.add(UserMessage("only the clone's"))
    assert len(agent.memory) == 1  # type: ignore[arg-type]
    agent.memory.clear()  # type: ignore[union-attr]
    assert len(twin.memory) == 2
    twin.instructions = ("Changed.",)
    assert agent.instructions == ("Be brief.",)


def test_a_clone_keeps_its_permission_listeners_but_not_the_users():
    agent = make_agent(ScriptedChatModel([]))
    heard: list[str] = []
    agent.emitter.on("tool.start", lambda event: heard.append(event.tool))
    twin = agent.clone()
    (listener,) = twin.emitter.listeners("tool.start")
    assert isinstance(listener, PermissionListener)
    assert len(agent.emitter.listeners("tool.start")) == 2


def test_a_clone_runs_on_its_own():
    llm = ScriptedChatModel(
        [
            call("search", query="z3"),
            call(FINAL_ANSWER, approved=True),
            call(FINAL_ANSWER, approved=False),
        ]
    )
    agent = make_agent(llm)
    heard: list[str] = []
    agent.emitter.on("run.start", lambda event: heard.append("agent"))
    twin = agent.clone()
    twin.emitter.on("run.start", lambda event: heard.append("twin"))
    assert twin.run_sync("Approve?").answer == Verdict(approved=True)
    assert agent.run_sync("Approve?").answer == Verdict(approved=False)
    assert heard == ["twin", "agent"]
    assert len(twin.memory) == 6 and len(agent.memory) == 4  # type: ignore[arg-type]
    note = llm.requests[0].messages[-1]
    assert isinstance(note, UserMessage) and note.content.startswith("Note: Now: ")


def test_a_clone_of_an_agent_without_memory_or_guard_has_none():
    agent = RequirementAgent(ScriptedChatModel([]), [search], tool_call_checker=False)
    twin = agent.clone()
    assert twin.memory is None and twin.gate.cycle_guard is None


def test_a_clone_of_a_policy_agent_keeps_the_policy_and_its_budget():
    policy = Policy(["search"], max_iterations=3)
    agent = RequirementAgent.from_policy(policy, [search], ScriptedChatModel([]))
    twin = agent.clone()
    assert twin.policy is policy and twin.max_iterations == 3


# -- templates -------------------------------------------------------------------------------


def test_without_templates_the_text_is_the_built_in_one():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")] * 2)
    plain = RequirementAgent(llm, [search], instructions="Be brief.")
    templated = RequirementAgent(llm, [search], instructions="Be brief.", templates=Templates())
    plain.run_sync("Q")
    templated.run_sync("Q")
    first, second = llm.requests
    assert first.messages == second.messages
    assert first.messages[0] == SystemMessage(
        system_prompt(
            role=None,
            instructions=("Be brief.",),
            tools=[search, plain.final_tool],
            final_answer_as_tool=True,
        )
    )


def test_the_system_template_fills_its_placeholders():
    template = (
        "{role} ({name})\n{instructions}\nTOOLS:\n{tools}\nSTEPS:\n{steps}\nFINISH: {finish}\n"
        "OUT: {expected_output}|{answer_schema}|{{literal}}"
    )
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")])
    agent = RequirementAgent(
        llm,
        [search],
        instructions=["One.", "Two."],
        name="helper",
        expected_output="Short.",
        templates=Templates(system=template),
    )
    agent.run_sync("Q")
    system = llm.requests[0].messages[0].content  # type: ignore[union-attr]
    assert system.startswith(
        "You are a helpful assistant. You solve the user's task by calling tools. (helper)\n"
        "- One.\n- Two.\nTOOLS:\n- `search`: Search the web.\n- `final_answer`: Give the final"
    )
    assert "\nSTEPS:\n- Before each of your turns" in system
    assert system.endswith(
        "- Finish by calling `final_answer`; it is the only way to finish.\n"
        "FINISH: Finish by calling `final_answer`; it is the only way to finish.\n"
        "OUT: Short.||{literal}"
    )


def test_the_default_placeholder_wraps_the_built_in_prompt():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")])
    agent = RequirementAgent(llm, [search], templates=Templates(system="ACME.\n\n{default}"))
    agent.run_sync("Q")
    plain = RequirementAgent(llm, [search]).system_prompt(["search", FINAL_ANSWER])
    assert llm.requests[0].messages[0] == SystemMessage("ACME.\n\n" + plain)


def test_a_run_with_its_own_instructions_renders_the_template_with_them():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")])
    agent = RequirementAgent(llm, [search], templates=Templates(system="Do: {instructions}"))
    agent.run_sync("Q", instructions="Hurry.")
    assert llm.requests[0].messages[0] == SystemMessage("Do: - Hurry.")


def test_the_step_template_fills_its_placeholders():
    template = (
        "{note}\nallowed={allowed} forced={forced} blocked={blocked}"
        " finish={can_finish} why={why_not_finish}"
    )
    llm = ScriptedChatModel([call("search", query="z3"), call(FINAL_ANSWER, response="a")])
    agent = RequirementAgent(
        llm,
        [search, send],
        [
            ConditionalRequirement(send, only_after=[search]),
            ConditionalRequirement(search, force_at_step=1, min_invocations=1),
        ],
        templates=Templates(step=template),
    )
    agent.run_sync("Q")
    first = llm.requests[0].messages[-1]
    assert isinstance(first, UserMessage)
    pass_ = agent.reasoner.decide()
    assert first.content == (
        step_note(pass_, ["search", "send"], final_answer_as_tool=True)
        + "\nallowed=`search` forced=`search` blocked=`send` (needs `search` first)"
        " finish=no why=" + (pass_.reasons.get(FINAL_ANSWER) or "")
    )
    second = llm.requests[1].messages[-1]
    assert isinstance(second, UserMessage)
    assert second.content.endswith("allowed=`search`, `send` forced= blocked= finish=yes why=")


def test_step_values_say_why_the_model_cannot_finish():
    pass_ = Pass(
        allowed=("search",),
        hidden=(),
        forced=None,
        can_stop=False,
        tool_choice="required",
        reasons={FINAL_ANSWER: "search first"},
    )
    rendered = Templates(step="{can_finish}: {why_not_finish}").render_step(
        pass_, ["search"], final_answer_as_tool=True
    )
    assert rendered == "no: search first"


@pytest.mark.parametrize(
    ("kwargs", "message", "parameter"),
    [
        ({"system": "{rol}"}, "templates: system names unknown placeholder `{rol}`", "system"),
        ({"step": "{note} {0}"}, "templates: step names unknown placeholder `{0}`", "step"),
        ({"step": "{}"}, "templates: step names unknown placeholder `{}`", "step"),
        ({"step": "{note.x}"}, "templates: step names unknown placeholder `{note.x}`", "step"),
        ({"system": "a { b"}, "templates: system is not a valid template:", "system"),
        ({"system": "{role:{name}}"}, "templates: system is not a valid template:", "system"),
        ({"system": ""}, "templates: system=`''` must be a non-empty text", "system"),
        ({"step": 3}, "templates: step=`3` must be a non-empty text", "step"),
    ],
)
def test_bad_templates_are_refused_naming_the_culprit(kwargs, message, parameter):
    with pytest.raises(PolicyError) as caught:
        Templates(**kwargs)
    assert caught.value.message.startswith(message)
    assert caught.value.parameter == parameter


def test_unknown_placeholders_list_the_known_ones():
    with pytest.raises(PolicyError) as caught:
        Templates(step="{notes}")
    assert caught.value.hint == (
        "placeholders: `{note}`, `{allowed}`, `{forced}`, `{blocked}`, `{conditions}`,"
        " `{can_finish}`, `{why_not_finish}`; write `{{` and `}}` for literal braces"
    )


def test_templates_must_be_templates():
    with pytest.raises(PolicyError) as caught:
        RequirementAgent(ScriptedChatModel([]), [search], templates="{note}")  # type: ignore[arg-type]
    assert caught.value.message == "templates=`'{note}'` is not a `Templates`"
