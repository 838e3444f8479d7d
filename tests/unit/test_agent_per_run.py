"""Per-run options of ``run``/``run_sync``/``run_stream``: ``expected_output`` and
``instructions`` replace the agent's for that run only; ``deps`` reaches the tools that take a
``RunContext``, which is not part of their input."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from agent import AgentOutput, RequirementAgent, RunContext, Tool, tool
from backends import ScriptedChatModel, SystemMessage, ToolResultMessage
from ruleengine import FINAL_ANSWER, PolicyError

ROOT = Path(__file__).resolve().parents[2]


class Verdict(BaseModel):
    approved: bool
    amount: float


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def system_of(llm: ScriptedChatModel, index: int = 0) -> str:
    message = llm.requests[index].messages[0]
    assert isinstance(message, SystemMessage)
    return message.content


# -- expected_output -------------------------------------------------------------------------


def test_a_run_may_ask_for_a_typed_answer_of_its_own():
    llm = ScriptedChatModel(
        [
            call(FINAL_ANSWER, approved=True, amount=30),
            call(FINAL_ANSWER, response="plain text again"),
        ]
    )
    agent = RequirementAgent(llm, [search])
    out = agent.run_sync("Approve?", expected_output=Verdict)
    assert out.answer == Verdict(approved=True, amount=30)
    offered = {t.name: t for t in llm.requests[0].request.tools}
    assert set(offered[FINAL_ANSWER].parameters["properties"]) == {"approved", "amount"}
    # The agent is unchanged: the next run answers text, with the agent's own final_answer.
    assert agent.run_sync("Again?").answer == "plain text again"
    assert agent.expected_output is None
    assert agent.final_tool.expected_output is None


def test_a_typed_run_refuses_an_answer_that_does_not_match():
    llm = ScriptedChatModel(
        [call(FINAL_ANSWER, response="yes"), call(FINAL_ANSWER, approved=False, amount=0)]
    )
    agent = RequirementAgent(llm, [search])
    out = agent.run_sync("Approve?", expected_output=Verdict)
    assert out.answer == Verdict(approved=False, amount=0)
    assert out.retries == 1


def test_a_run_may_answer_text_on_an_agent_that_answers_a_model():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="no idea")])
    agent = RequirementAgent(llm, [search], expected_output=Verdict)
    out = agent.run_sync("Approve?", expected_output=str)
    assert out.answer == "no idea"


def test_an_expected_output_text_describes_the_answer_in_the_system_prompt():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="- a\n- b\n- c"), "x"])
    agent = RequirementAgent(llm, [search])
    out = agent.run_sync("List three.", expected_output="A bulleted list of three items.")
    assert out.answer == "- a\n- b\n- c"
    assert system_of(llm).endswith("\n\n# Expected output\nA bulleted list of three items.")
    agent.run_sync("Again.")
    assert "# Expected output" not in system_of(llm, 1)


def test_the_agent_takes_an_expected_output_text_too():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="ok")])
    agent = RequirementAgent(llm, [search], expected_output="One word.")
    assert agent.expected_output is None and agent.expected_output_text == "One word."
    assert agent.run_sync("Go.").answer == "ok"
    assert "# Expected output\nOne word." in system_of(llm)


def test_a_typed_run_without_the_tool_asks_for_its_schema():
    llm = ScriptedChatModel(['{"approved": true, "amount": 5}'])
    agent = RequirementAgent(llm, [search], final_answer_as_tool=False)
    out = agent.run_sync("Approve?", expected_output=Verdict)
    assert out.answer == Verdict(approved=True, amount=5)
    assert '# Final answer\nThe final answer is one JSON object matching: {"' in system_of(llm)


def test_the_same_model_reuses_one_final_answer_tool():
    agent = RequirementAgent(ScriptedChatModel([]), [search])
    assert agent.final_answer_tool(Verdict) is agent.final_answer_tool(Verdict)
    assert agent.final_answer_tool(None) is agent.final_tool


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            42,
            "run: expected_output=`42` must be `str`, a pydantic model class, a text describing"
            " the answer, or None",
        ),
        (dict, "run: expected_output=`<class 'dict'>` must be `str`, a pydantic model class,"),
        ("  ", "run: expected_output is an empty text"),
    ],
)
def test_a_bad_expected_output_is_refused_before_the_run(value, message):
    llm = ScriptedChatModel([])
    agent = RequirementAgent(llm, [search])
    with pytest.raises(PolicyError) as caught:
        agent.run_sync("x", expected_output=value)
    assert caught.value.message.startswith(message)
    assert caught.value.parameter == "expected_output"
    with pytest.raises(PolicyError) as caught:
        agent.run_stream("x", expected_output=value)
    assert caught.value.message.startswith(message.replace("run:", "run_stream:"))
    assert llm.requests == []


# -- instructions ----------------------------------------------------------------------------


def test_run_instructions_replace_the_agents_for_that_run_only():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")] * 3)
    agent = RequirementAgent(llm, [search], instructions=["Be thorough."])
    agent.run_sync("Q", instructions="Be brief.")
    agent.run_sync("Q")
    agent.run_sync("Q", instructions=[])
    assert "# Instructions\n- Be brief.\n\n" in system_of(llm, 0)
    assert "Be thorough." not in system_of(llm, 0)
    assert "# Instructions\n- Be thorough.\n\n" in system_of(llm, 1)
    assert "# Instructions" not in system_of(llm, 2)
    assert agent.instructions == ("Be thorough.",)


def test_a_run_without_options_sends_the_agents_system_prompt_unchanged():
    llm = ScriptedChatModel([call(FINAL_ANSWER, response="a")] * 2)
    agent = RequirementAgent(llm, [search], instructions="Be thorough.")
    agent.run_sync("Q")
    agent.run_sync("Q", instructions="Be thorough.")
    assert system_of(llm, 0) == system_of(llm, 1) == agent.system_prompt(["search", FINAL_ANSWER])


def test_bad_run_instructions_are_refused():
    agent = RequirementAgent(ScriptedChatModel([]), [search])
    with pytest.raises(PolicyError) as caught:
        agent.run_sync("Q", instructions=["ok", 3])  # type: ignore[list-item]
    assert caught.value.message == "run: an instruction=`3` must be text"
    with pytest.raises(PolicyError) as caught:
        agent.run_sync("Q", instructions=5)  # type: ignore[arg-type]
    assert caught.value.message == "run: instructions=`5` must be a list"


def test_run_stream_takes_the_per_run_options():
    llm = ScriptedChatModel([call(FINAL_ANSWER, approved=True, amount=1)])
    agent = RequirementAgent(llm, [search])

    async def main() -> AgentOutput[Verdict]:
        async with agent.run_stream(
            "Approve?", expected_output=Verdict, instructions="Be fair."
        ) as stream:
            return await stream.result()

    assert anyio.run(main).answer == Verdict(approved=True, amount=1)
    assert "- Be fair." in system_of(llm)


def test_concurrent_runs_keep_their_own_options():
    def reply(request):
        system = request.messages[0].content
        if "Be fair." in system:
            return call(FINAL_ANSWER, approved=True, amount=2)
        return call(FINAL_ANSWER, response="text")

    agent = RequirementAgent(ScriptedChatModel(reply), [search])
    results: dict[str, object] = {}

    async def main() -> None:
        async def typed() -> None:
            out = await agent.run("A", expected_output=Verdict, instructions="Be fair.")
            results["typed"] = out.answer

        async def text() -> None:
            results["text"] = (await agent.run("B")).answer

        async with anyio.create_task_group() as group:
            group.start_soon(typed)
            group.start_soon(text)

    anyio.run(main)
    assert results == {"typed": Verdict(approved=True, amount=2), "text": "text"}


# -- deps and RunContext ---------------------------------------------------------------------


class Deps(BaseModel):
    user: str


def test_a_tool_asking_for_the_run_context_gets_the_runs_deps():
    seen: list[RunContext[Deps]] = []

    @tool
    def whoami(ctx: RunContext[Deps], greeting: str) -> str:
        """Say who the user is.

        Args:
            ctx: the run
            greeting: how to greet
        """
        seen.append(ctx)
        return f"{greeting}, {ctx.deps.user}"

    assert whoami.context_parameter == "ctx"
    assert list(whoami.definition.parameters["properties"]) == ["greeting"]
    llm = ScriptedChatModel(
        [
            call("search", query="z3"),
            call("whoami", greeting="hi"),
            call(FINAL_ANSWER, response="x"),
        ]
    )
    agent = RequirementAgent(llm, [search, whoami], name="helper")
    out = agent.run_sync("Who am I?", deps=Deps(user="ada"))
    assert out.steps[1].output == "hi, ada"
    (ctx,) = seen
    assert ctx.deps == Deps(user="ada")
    assert (ctx.run_id, ctx.path, ctx.prompt, ctx.tool, ctx.iteration) == (
        out.run_id,
        ("helper",),
        "Who am I?",
        "whoami",
        2,
    )
    assert [s.tool for s in ctx.state.steps] == ["search"]
    results = [m for m in out.messages if isinstance(m, ToolResultMessage)]
    assert ctx.call_id == results[1].call_id


def test_sync_and_async_tools_and_unparameterised_contexts_get_it():
    @tool
    async def a(ctx: RunContext[int]) -> str:
        """A."""
        return f"a{ctx.deps}"

    @tool
    def b(context: RunContext, x: int = 1) -> str:  # type: ignore[type-arg]
        """B."""
        return f"b{context.deps + x}{threading.current_thread() is threading.main_thread()}"

    llm = ScriptedChatModel([call("a"), call("b"), call(FINAL_ANSWER, response="x")])
    out = RequirementAgent(llm, [a, b]).run_sync("go", deps=41)
    assert [s.output for s in out.steps[:2]] == ["a41", "b42False"]


def test_without_deps_the_context_holds_none():
    @tool
    def peek(ctx: RunContext[None]) -> str:
        """Peek."""
        return repr(ctx.deps)

    llm = ScriptedChatModel([call("peek"), call(FINAL_ANSWER, response="x")])
    assert RequirementAgent(llm, [peek]).run_sync("go").steps[0].output == "None"


def test_a_tool_subclass_reads_the_context_it_runs_in():
    class Whoami(Tool):
        def __init__(self) -> None:
            super().__init__("whoami", "Who the user is.")

        async def run(self, input: BaseModel) -> str:
            return f"user {RunContext.current().deps}"

    llm = ScriptedChatModel([call("whoami"), call(FINAL_ANSWER, response="x")])
    out = RequirementAgent(llm, [Whoami()]).run_sync("go", deps="ada")
    assert out.steps[0].output == "user ada"
    with pytest.raises(PolicyError, match="no tool call of an agent run is running here"):
        RunContext.current()


def test_a_context_tool_called_outside_a_run_says_so():
    @tool
    def whoami(ctx: RunContext[str]) -> str:
        """Who."""
        return ctx.deps

    with pytest.raises(PolicyError) as caught:
        anyio.run(whoami.run, whoami.input_model())
    assert caught.value.message == (
        "tool `whoami` takes a `RunContext`, so it runs only as a tool of an agent run"
    )


def test_the_context_must_be_the_first_parameter():
    def late(x: int, ctx: RunContext[str]) -> str:
        return ""

    with pytest.raises(PolicyError) as caught:
        tool(late)
    assert caught.value.message == (
        "tool `late`: parameter `ctx` is a `RunContext`, but only the first parameter may be"
    )

    def twice(a: RunContext[str], b: RunContext[str]) -> str:
        return ""

    with pytest.raises(PolicyError, match="parameter `b` is a `RunContext`"):
        tool(twice)

    def positional(ctx: RunContext[str], /, x: int) -> str:
        return ""

    with pytest.raises(PolicyError, match="the `RunContext` parameter `ctx` cannot be passed"):
        tool(positional)


def test_a_handoff_runs_the_inner_agent_without_the_outer_deps():
    @tool
    def peek(ctx: RunContext[object]) -> str:
        """Peek."""
        return repr(ctx.deps)

    inner = RequirementAgent(
        ScriptedChatModel([call("peek"), call(FINAL_ANSWER, response="inner")]), [peek], name="in"
    )
    outer = RequirementAgent(
        ScriptedChatModel([call("in", task="t"), call(FINAL_ANSWER, response="outer")]),
        [inner.as_tool()],
    )
    seen: list[object] = []
    inner.emitter.on("tool.success", lambda event: seen.append(event.step.output))
    outer.run_sync("go", deps="secret")
    assert seen[0] == "None"


# -- types -----------------------------------------------------------------------------------

TYPED = """\
from typing import assert_type

from pydantic import BaseModel

from agent import AgentOutput, RequirementAgent, RunContext, RunStream, tool
from backends import ScriptedChatModel


class Verdict(BaseModel):
    approved: bool


@tool
def whoami(ctx: RunContext[str]) -> str:
    return ctx.deps


agent = RequirementAgent(ScriptedChatModel([]), [whoami])
typed = RequirementAgent(ScriptedChatModel([]), expected_output=Verdict)
assert_type(agent.run_sync("x"), AgentOutput[str])
assert_type(agent.run_sync("x", expected_output=Verdict, deps="ada"), AgentOutput[Verdict])
assert_type(agent.run_sync("x", expected_output="A list."), AgentOutput[str])
assert_type(typed.run_sync("x"), AgentOutput[Verdict])
assert_type(typed.run_sync("x", expected_output=str), AgentOutput[str])
assert_type(typed.run_stream("x"), RunStream[Verdict])
assert_type(agent.run_stream("x", expected_output=Verdict), RunStream[Verdict])
assert_type(typed.clone(), RequirementAgent[Verdict])


async def main() -> None:
    assert_type(await agent.run("x", expected_output=Verdict), AgentOutput[Verdict])
    assert_type(await typed.run("x", instructions=["a"]), AgentOutput[Verdict])
"""


def test_per_run_answers_type_check(tmp_path: Path):
    (tmp_path / "app.py").write_text(TYPED, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "app.py",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
