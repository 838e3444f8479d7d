"""``RequirementAgent.from_policy``: the agent runs exactly a checked policy — its tools (all of
them, no other, in its order), its requirements, its mode and its budget — and every mistake is
a ``PolicyError`` naming it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent import MaxIterationsError, Memory, RequirementAgent, Tool, tool
from backends import ScriptedChatModel
from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    ConflictError,
    CycleGuard,
    Policy,
    PolicyError,
)

ROOT = Path(__file__).resolve().parents[2]
RESEARCH = str(ROOT / "examples" / "policies" / "research.toml")


@tool
def think(thought: str) -> str:
    """Think aloud."""
    return "noted"


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"the page at {url}"


@tool
def cite(source: str) -> str:
    """Cite a source."""
    return f"cited {source}"


@tool
def browse(url: str) -> str:
    """Browse a site."""
    return url


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def answer(text: str = "done") -> dict[str, Any]:
    return call(FINAL_ANSWER, response=text)


def research_script() -> list[dict[str, Any]]:
    return [
        call("think", thought="plan"),
        call("search", query="z3"),
        call("fetch", url="https://z3"),
        call("cite", source="https://z3"),
        answer("Z3 is an SMT solver."),
    ]


def run(agent: RequirementAgent[Any], prompt: str = "what is z3?", **kwargs: Any) -> Any:
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


def error_of(policy: object, tools: object, llm: object = None, **options: Any) -> PolicyError:
    model = llm if llm is not None else ScriptedChatModel([answer()])
    with pytest.raises(PolicyError) as info:
        RequirementAgent.from_policy(policy, tools, model, **options)  # type: ignore[arg-type]
    return info.value


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- the policy's tools, requirements, mode and budget ---------------------------------------------


def test_a_policy_file_runs_with_its_tools_in_its_order() -> None:
    agent = RequirementAgent.from_policy(
        RESEARCH, [cite, fetch, search, think], ScriptedChatModel(research_script())
    )
    assert [t.name for t in agent.tools] == ["think", "search", "fetch", "cite", FINAL_ANSWER]
    assert agent.policy == Policy.load(RESEARCH)
    assert agent.policy is not None and agent.policy.source == RESEARCH
    assert [r.name for r in agent.reasoner.requirements] == sorted(
        ["think-first", "search-budget", "fetch-after-search", "cite-sources"]
    )
    out = run(agent)
    assert [s.tool for s in out.steps] == ["think", "search", "fetch", "cite", FINAL_ANSWER]
    assert out.passes[0].forced == "think"  # `think-first`: the policy's requirements rule
    assert out.answer == "Z3 is an SMT solver."


def test_the_policy_may_be_a_policy_a_path_object_or_module_attr() -> None:
    loaded = Policy.load(RESEARCH)
    tools = [think, search, fetch, cite]
    for source in (loaded, Path(RESEARCH)):
        agent = RequirementAgent.from_policy(source, tools, ScriptedChatModel([answer()]))
        assert agent.policy == loaded
    lookup_order = Tool("lookup_order", "Look it up.", function=lambda: "found")
    refund = Tool("refund", "Refund.", function=lambda: "refunded")
    agent = RequirementAgent.from_policy(
        str(ROOT / "examples" / "policies" / "business_hours.py") + ":policy",
        [refund, lookup_order],
        ScriptedChatModel([answer()]),
    )
    assert [t.name for t in agent.tools] == ["lookup_order", "refund", FINAL_ANSWER]
    assert agent.max_iterations == 8


def test_the_policy_budget_is_the_default_of_run(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "short.toml",
        'tools = ["search"]\nmax_iterations = 2\n',
    )
    forever = functools.partial(ScriptedChatModel, lambda request: call("search", query="more"))
    agent = RequirementAgent.from_policy(path, [search], forever())
    assert agent.max_iterations == 2
    with pytest.raises(MaxIterationsError) as info:
        run(agent)
    assert info.value.message == (
        "the run did not finish within max_iterations=2 model rounds (2 steps)"
    )
    # `run` may still say otherwise, for one run.
    with pytest.raises(MaxIterationsError, match="max_iterations=3 model rounds"):
        run(agent, max_iterations=3)
    # As a tool of another agent, it runs on the policy's budget too.
    assert agent.as_tool().limits["max_iterations"] == 2
    assert agent.as_tool(max_iterations=5).limits["max_iterations"] == 5
    # An agent built by hand keeps the usual budget.
    assert RequirementAgent(forever(), [search]).max_iterations == 20


def test_the_policy_mode_decides_the_run(tmp_path: Path) -> None:
    requirements = """
[[requirements]]
type = "conditional"
name = "a-first"
target = "a"
force_at_step = 1
priority = 20

[[requirements]]
type = "conditional"
name = "a-after-b"
target = "a"
only_after = ["b"]
"""
    a = Tool("a", "Do a.", function=lambda: "a done")
    b = Tool("b", "Do b.", function=lambda: "b done")
    strict = write(tmp_path, "strict.toml", 'tools = ["a", "b"]\n' + requirements)
    priority = write(
        tmp_path, "priority.toml", 'tools = ["a", "b"]\nmode = "priority"\n' + requirements
    )

    # Strict: a deny always wins, so the hard force on `a` cannot be honoured.
    agent = RequirementAgent.from_policy(strict, [a, b], ScriptedChatModel([call("a"), answer()]))
    assert agent.reasoner.mode == "strict"
    with pytest.raises(ConflictError) as info:
        run(agent)
    assert info.value.kind == "forced-conflict"

    # Priority: `a-first` (priority 20) outweighs `a-after-b`: `a` is forced and runs.
    agent = RequirementAgent.from_policy(priority, [a, b], ScriptedChatModel([call("a"), answer()]))
    assert agent.reasoner.mode == "priority"
    out = run(agent)
    assert [s.tool for s in out.steps] == ["a", FINAL_ANSWER]
    assert out.passes[0].forced == "a"


def test_options_pass_through_to_the_constructor() -> None:
    memory = Memory()
    agent = RequirementAgent.from_policy(
        RESEARCH,
        [think, search, fetch, cite],
        ScriptedChatModel([answer()]),
        name="researcher",
        description="Researches.",
        memory=memory,
        on_conflict="answer",
        instructions="Be brief.",
    )
    assert (agent.name, agent.description, agent.memory, agent.on_conflict) == (
        "researcher",
        "Researches.",
        memory,
        "answer",
    )
    assert agent.instructions == ("Be brief.",)
    # A bad value is the constructor's error, as ever.
    error = error_of(RESEARCH, [think, search, fetch, cite], on_conflict="ignore")
    assert error.message == "on_conflict=`'ignore'` must be `raise` or `answer`"


def test_no_cycle_guard_is_added_unless_the_policy_declares_one_or_it_is_asked_for() -> None:
    tools = [think, search, fetch, cite]
    agent = RequirementAgent.from_policy(RESEARCH, tools, ScriptedChatModel([answer()]))
    assert agent.gate.cycle_guard is None
    assert len(agent.reasoner.requirements) == len(Policy.load(RESEARCH).requirements)

    asked = RequirementAgent.from_policy(
        RESEARCH, tools, ScriptedChatModel([answer()]), tool_call_checker=True
    )
    assert isinstance(asked.gate.cycle_guard, CycleGuard)

    coding = str(ROOT / "examples" / "policies" / "coding_agent.yaml")
    names = ["read_file", "edit_file", "run_tests", "git_commit"]
    declared = RequirementAgent.from_policy(
        coding,
        [Tool(n, "", function=lambda: "ok") for n in names],
        ScriptedChatModel([answer()]),
    )
    guard = declared.gate.cycle_guard
    assert isinstance(guard, CycleGuard)
    assert (guard.name, guard.max_strike_length) == ("no-loops", 3)


def test_a_tool_without_a_description_takes_the_policys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "described.toml",
        'tools = [{name = "search", description = "Search the web, for the policy."},'
        ' {name = "fetch", description = "Fetch, for the policy."}]\n',
    )
    bare = Tool("fetch", "", function=lambda url: url)
    agent = RequirementAgent.from_policy(path, [search, bare], ScriptedChatModel([answer()]))
    by_name = {t.name: t for t in agent.tools}
    assert by_name["search"] is search  # its own description wins
    assert by_name["search"].description == "Search the web."
    assert by_name["fetch"].description == "Fetch, for the policy."
    assert by_name["fetch"].definition.description == "Fetch, for the policy."
    assert bare.description == ""  # the tool given is left as it was


# -- mistakes ------------------------------------------------------------------------------------


HINT = (
    "give one tool for each tool the policy declares (`think`, `search`, `fetch`, `cite`),"
    " and no other"
)


@pytest.mark.parametrize(
    ("tools", "difference"),
    [
        ([think, search, browse], "missing: `fetch`, `cite`; undeclared: `browse`"),
        ([think, search], "missing: `fetch`, `cite`"),
        ([], "missing: `think`, `search`, `fetch`, `cite`"),
        ([browse, think, search, fetch, cite], "undeclared: `browse`"),
    ],
)
def test_tools_that_do_not_match_the_policy_are_named(tools: list[Tool], difference: str) -> None:
    error = error_of(RESEARCH, tools)
    assert error.message == (
        f"from_policy: the tools do not match the policy ({RESEARCH}): {difference}"
    )
    assert error.hint == HINT
    assert error.parameter == "tools"


@pytest.mark.parametrize(
    ("options", "message", "hint"),
    [
        (
            {"mode": "priority"},
            "from_policy: `mode` comes from the policy ({source})",
            "change the policy's `mode`, and check it again (`ruleengine check`)",
        ),
        (
            {"requirements": [ConditionalRequirement("search")]},
            "from_policy: `requirements` come from the policy ({source})",
            "add them to the policy, and check it again (`ruleengine check`)",
        ),
        (
            {"max_iterations": 5},
            "from_policy: `max_iterations` comes from the policy ({source})",
            "change the policy's `max_iterations`, or give `run` a `max_iterations`",
        ),
        (
            {"nmae": "researcher"},
            "from_policy: unknown option `nmae`",
            "options: `description`, `expected_output`, `final_answer_as_tool`, `instructions`,"
            " `memory`, `name`, `on_conflict`, `role`, `save_intermediate_steps`, `templates`,"
            " `tool_call_checker`",
        ),
    ],
)
def test_options_the_policy_decides_or_nobody_knows_are_refused(
    options: dict[str, Any], message: str, hint: str
) -> None:
    error = error_of(RESEARCH, [think, search, fetch, cite], **options)
    assert error.message == message.format(source=RESEARCH)
    assert error.hint == hint
    assert error.parameter == next(iter(options))


POLICY_HINT = (
    "give a `Policy`, a policy file's path (`.toml`, `.yaml`, `.json`), or `module:attr`"
    " naming a `Policy`"
)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (42, "from_policy: policy=`42` is not a policy"),
        (None, "from_policy: policy=`None` is not a policy"),
        (b"research.toml", "from_policy: policy=`b'research.toml'` is not a policy"),
        (["think"], "from_policy: policy=`['think']` is not a policy"),
        ("", "from_policy: `policy` is empty"),
        ("  ", "from_policy: `policy` is empty"),
    ],
)
def test_a_policy_of_the_wrong_type_is_a_policy_error(policy: object, message: str) -> None:
    error = error_of(policy, [think])
    assert (error.message, error.hint, error.parameter) == (message, POLICY_HINT, "policy")


def test_a_missing_policy_file_is_the_loaders_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.toml")
    assert error_of(missing, [think]).message == f"{missing}: no such file"


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ("think", "tools=`'think'` must be a list"),
        (None, "tools=`None` must be a list"),
        ([1], "tools holds `1`, which is not a tool"),
        ([think, think], "tools: `think` is declared twice"),
        ([think, FINAL_ANSWER], "tools holds `'final_answer'`, which is not a tool"),
    ],
)
def test_tools_of_the_wrong_type_are_a_policy_error(tools: object, message: str) -> None:
    assert error_of(RESEARCH, tools).message == message


def test_a_wrong_llm_is_a_policy_error() -> None:
    error = error_of(RESEARCH, [think, search, fetch, cite], llm="gpt")
    assert error.message == "llm=`'gpt'` is not a chat model"


def test_an_agents_budget_set_by_hand_is_checked_at_run_time() -> None:
    agent = RequirementAgent(ScriptedChatModel([answer()]), [search])
    agent.max_iterations = 0
    with pytest.raises(PolicyError, match="max_iterations"):
        run(agent)


def test_the_tools_must_take_the_parameters_the_policy_declares(tmp_path) -> None:
    from agent import RequirementAgent, tool
    from backends import ScriptedChatModel
    from ruleengine import PolicyError

    path = tmp_path / "p.toml"
    path.write_text(
        '[[tools]]\nname = "pay"\nparameters = { amount = "number", to = "string" }\n\n'
        '[[requirements]]\ntype = "arguments"\ntarget = "pay"\nallow_if = "arg.amount < 10"\n',
        encoding="utf-8",
    )

    @tool
    def pay(amount: float, to: str, memo: str = "") -> str:
        """Pay."""
        return "paid"

    agent = RequirementAgent.from_policy(str(path), [pay], ScriptedChatModel([]))
    assert [t.name for t in agent.tools if t.name != "final_answer"] == ["pay"]

    @tool(name="pay")
    def pay_text(amount: str, to: str) -> str:
        """Pay."""
        return "paid"

    with pytest.raises(PolicyError, match="tool `pay` takes `amount` as string, where the policy"):
        RequirementAgent.from_policy(str(path), [pay_text], ScriptedChatModel([]))

    @tool(name="pay")
    def pay_short(amount: float) -> str:
        """Pay."""
        return "paid"

    with pytest.raises(PolicyError, match="tool `pay` takes no parameter `to`"):
        RequirementAgent.from_policy(str(path), [pay_short], ScriptedChatModel([]))
