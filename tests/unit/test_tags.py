"""Tool tags: ``tags("read")`` / ``"tag:read"`` in tool lists resolve, when a requirement is
bound, to the declared tools carrying the tag, in declared order; unknown tags are errors
naming them; a bound requirement (so its monitor, a policy's reasoner, the checker) sees plain
names."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent import RequirementAgent, Tool, tool
from backends import ScriptedChatModel
from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    Policy,
    PolicyError,
    Reasoner,
    RunState,
    Tags,
    tags,
)
from ruleengine.conditions.types import ToolSpec

ROOT = Path(__file__).resolve().parents[2]


class Named:
    """A declared tool: a name and its tags."""

    def __init__(self, name: str, tags: tuple[str, ...] = ()) -> None:
        self.name = name
        self.tags = tags


TOOLS = [
    Named("search", ("read",)),
    Named("fetch", ("read", "net")),
    Named("think"),
    Named("send", ("write", "net")),
    Named("pay", ("write",)),
]


def bound(req, tools=TOOLS):
    return Reasoner(tools, [req]).requirements[0]


def error(make, tools=TOOLS) -> PolicyError:
    with pytest.raises(PolicyError) as caught:
        Reasoner(tools, [make()])
    return caught.value


# -- the reference ------------------------------------------------------------------------


def test_tags_makes_a_reference_that_shows_itself():
    ref = tags("read", "net", "read")
    assert isinstance(ref, Tags)
    assert ref.names == ("read", "net")
    assert repr(ref) == "tags('read', 'net')"
    assert str(ref) == "tag:read, tag:net"
    assert ref == tags("read", "net") and hash(ref) == hash(tags("read", "net"))


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ((), "tags() needs at least one tag name"),
        (("",), "tags(): `''` is not a tag name"),
        (("two words",), "tags(): `'two words'` is not a tag name"),
        ((3,), "tags(): `3` is not a tag name"),
    ],
)
def test_tags_refuses_what_is_not_a_tag_name(names, message):
    with pytest.raises(PolicyError) as caught:
        tags(*names)
    assert caught.value.message == message


# -- ConditionalRequirement ------------------------------------------------------------------


def test_a_tag_in_only_after_is_every_tool_carrying_it_in_declared_order():
    req = bound(ConditionalRequirement("pay", only_after=tags("read")))
    assert req.monitor().only_after == ("search", "fetch")
    reasoner = Reasoner(TOOLS, [req])
    assert reasoner.decide(RunState.from_trace(["search"])).reasons == {
        "pay": "needs `fetch` first"
    }
    assert "pay" in reasoner.decide(RunState.from_trace(["fetch", "search"])).allowed


def test_text_tags_and_tag_objects_are_the_same_and_mix_with_names():
    a = bound(ConditionalRequirement("pay", only_after=["think", "tag:read"]))
    b = bound(ConditionalRequirement("pay", only_after=["think", tags("read")]))
    assert a.monitor().only_after == b.monitor().only_after == ("think", "search", "fetch")


def test_several_tags_are_the_tools_carrying_any_of_them():
    req = bound(ConditionalRequirement("think", only_before=tags("write", "net")))
    assert req.monitor().only_before == ("fetch", "send", "pay")


def test_force_after_a_tag_forces_the_target_after_each_tagged_tool():
    req = bound(ConditionalRequirement("think", force_after="tag:read"))
    reasoner = Reasoner(TOOLS, [req])
    for last in ("search", "fetch"):
        assert reasoner.decide(RunState.from_trace([last])).forced == "think"
    assert reasoner.decide(RunState.from_trace(["pay"])).forced is None


def test_the_target_is_left_out_of_a_tag_it_carries():
    # `send` carries `net` too: "send only after the net tools" means the others.
    req = bound(ConditionalRequirement("send", only_after="tag:net"))
    assert req.monitor().only_after == ("fetch",)


def test_a_tag_only_the_target_carries_is_an_error():
    # `pay` carries `write`, but so does `send`: the list is `send`.
    assert bound(ConditionalRequirement("pay", only_after="tag:write")).monitor().only_after == (
        "send",
    )
    e = error(
        lambda: ConditionalRequirement("think", only_after="tag:mind"),
        [*TOOLS[:2], Named("think", ("mind",))],
    )
    assert e.message == (
        "requirement `conditional(think)`: only_after names tag `mind`, which no declared tool"
        " carries but the target `think` itself"
    )
    assert e.parameter == "only_after"


def test_an_unknown_tag_is_named_with_the_known_ones():
    e = error(lambda: ConditionalRequirement("pay", only_after=["search", "tag:raed"]))
    assert e.message == (
        "requirement `conditional(pay)`: only_after names tag `raed`, which no declared tool"
        " carries"
    )
    assert e.hint == "did you mean `read`? known tags: `read`, `net`, `write`"
    assert e.parameter == "only_after"


def test_an_unknown_tag_without_any_tag_says_how_to_declare_them():
    e = error(lambda: ConditionalRequirement("b", force_after=tags("read")), ["a", "b"])
    assert "force_after names tag `read`, which no declared tool carries" in e.message
    assert "`@tool(tags=[...])`" in (e.hint or "")


def test_a_target_tag_must_match_exactly_one_tool():
    one = bound(
        ConditionalRequirement(tags("mind"), max_invocations=1), [*TOOLS, Named("x", ("mind",))]
    )
    assert one.target == "x"
    assert one.name == "conditional(tag:mind)"
    e = error(lambda: ConditionalRequirement("tag:write", max_invocations=1))
    assert e.message == (
        "requirement `conditional(tag:write)`: target names tag `write`, which 2 tools carry:"
        " `send`, `pay`"
    )
    assert e.hint == "target is one tool: name it by its name"
    e = error(lambda: ConditionalRequirement("tag:nope"))
    assert "target names tag `nope`, which no declared tool carries" in e.message


def test_a_malformed_tag_text_is_an_error_at_construction():
    with pytest.raises(PolicyError) as caught:
        ConditionalRequirement("pay", only_after="tag:")
    assert caught.value.message == (
        "requirement `conditional(pay)`: only_after holds `tag:`, which is not a tag name"
    )


def test_a_tag_resolved_once_binds_again_by_name():
    req = bound(ConditionalRequirement("pay", only_after="tag:read"))
    # The checker and a policy's reasoner bind the bound requirement to the names alone.
    again = req.bind(["search", "fetch", "think", "send", "pay"])
    assert again is req


def test_tags_and_the_tool_lists_they_stand_for_make_equal_policies():
    tagged = Policy(TOOLS, [ConditionalRequirement("pay", only_after="tag:read")])
    named = Policy(TOOLS, [ConditionalRequirement("pay", only_after=["search", "fetch"])])
    assert tagged == named
    assert dict(tagged.tags) == {
        "search": ("read",),
        "fetch": ("read", "net"),
        "send": ("write", "net"),
        "pay": ("write",),
    }
    plain = Policy(["search", "fetch", "think", "send", "pay"], named.requirements)
    assert plain != named  # the tags are part of the declaration


def test_arguments_requirements_take_no_tags():
    from ruleengine import ArgumentsRequirement

    with pytest.raises(PolicyError) as caught:
        ArgumentsRequirement(tags("write"), allow_if="true")
    assert "which is not a tool" in caught.value.message


# -- AskPermissionRequirement ----------------------------------------------------------------


def test_ask_permission_includes_and_excludes_tags():
    req = bound(AskPermissionRequirement(include="tag:write", exclude=["pay"]))
    assert req.monitor().covered == ("send",)
    assert req.covers("send") and not req.covers("pay") and not req.covers("search")
    req = bound(AskPermissionRequirement(exclude=tags("read")))
    assert req.monitor().covered == ("think", "send", "pay")
    assert req.bind(["search", "fetch", "think", "send", "pay"]).monitor().covered == (
        "think",
        "send",
        "pay",
    )


def test_ask_permission_with_an_unknown_tag_is_an_error():
    e = error(lambda: AskPermissionRequirement(include=["tag:writes"]))
    assert e.message == (
        "requirement `ask-permission`: include names tag `writes`, which no declared tool carries"
    )
    assert e.hint is not None and e.hint.startswith("did you mean `write`?")


# -- declared tags ---------------------------------------------------------------------------


def test_tool_tags_are_checked_where_they_are_declared():
    with pytest.raises(PolicyError) as caught:
        Policy([Named("a", ("fine", "not fine"))])  # type: ignore[arg-type]
    assert caught.value.message == "tool `a`: tags holds `not fine`, which is not a tag name"
    assert caught.value.parameter == "tools[0].tags"
    with pytest.raises(PolicyError) as caught:
        Tool("a", "A.", function=lambda: "x", tags=[1])  # type: ignore[list-item]
    assert caught.value.message == "tool `a`: tags holds `1`, which is not a tag name"


def test_agent_tools_carry_tags_and_requirements_name_them():
    @tool(tags=["read"])
    def search(query: str) -> str:
        """Search."""
        return "found"

    @tool(tags="write")
    def send(to: str) -> str:
        """Send."""
        return "sent"

    assert search.tags == ("read",) and send.tags == ("write",)
    agent = RequirementAgent(
        ScriptedChatModel([]),
        [search, send],
        [ConditionalRequirement(tags("write"), only_after=tags("read"))],
        tool_call_checker=False,
    )
    (req,) = agent.reasoner.requirements
    assert isinstance(req, ConditionalRequirement)
    assert (req.target, req.monitor().only_after) == ("send", ("search",))
    with pytest.raises(PolicyError) as caught:
        RequirementAgent(
            ScriptedChatModel([]),
            [search, send],
            [ConditionalRequirement(send, only_after="tag:net")],
        )
    assert "only_after names tag `net`" in caught.value.message
    assert caught.value.hint == "known tags: `read`, `write`"


# -- policy files ----------------------------------------------------------------------------

TOML = """\
[[tools]]
name = "search"
tags = ["read"]

[[tools]]
name = "fetch"
description = "Read a page."
tags = ["read", "net"]

[[tools]]
name = "send_email"
tags = "write"

[[tools]]
name = "refund"
tags = ["write"]
parameters = { amount = "number" }

[[requirements]]
type = "conditional"
target = "send_email"
only_after = ["tag:read"]

[[requirements]]
type = "conditional"
target = "refund"
only_after = "tag:read"
max_invocations = 1

[[requirements]]
type = "ask_permission"
include = ["tag:write"]
remember_choices = true
"""


def load(tmp_path: Path, name: str, text: str) -> Policy:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with contextlib.chdir(tmp_path):
        return Policy.load(name)


def test_a_policy_file_declares_tags_and_requirements_name_them(tmp_path: Path):
    policy = load(tmp_path, "policy.toml", TOML)
    assert policy.tools == ("search", "fetch", "send_email", "refund")
    assert dict(policy.tags) == {
        "search": ("read",),
        "fetch": ("read", "net"),
        "send_email": ("write",),
        "refund": ("write",),
    }
    assert dict(policy.descriptions) == {"fetch": "Read a page."}
    send, refund, ask = policy.requirements
    assert isinstance(send, ConditionalRequirement) and isinstance(refund, ConditionalRequirement)
    assert send.monitor().only_after == refund.monitor().only_after == ("search", "fetch")
    assert isinstance(ask, AskPermissionRequirement)
    assert ask.monitor().covered == ("send_email", "refund")
    # The reasoner is built from the tool names alone: the tags were resolved at load.
    assert policy.reasoner().decide(RunState()).allowed == ("search", "fetch", "final_answer")


def test_yaml_and_json_policies_take_tags_too(tmp_path: Path):
    yaml = load(
        tmp_path,
        "policy.yaml",
        "tools:\n  - {name: a, tags: [r]}\n  - {name: b, tags: [r]}\n  - c\n"
        "requirements:\n  - {type: conditional, target: c, only_after: 'tag:r'}\n",
    )
    data = {
        "tools": [{"name": "a", "tags": ["r"]}, {"name": "b", "tags": ["r"]}, "c"],
        "requirements": [{"type": "conditional", "target": "c", "only_after": "tag:r"}],
    }
    json_policy = load(tmp_path, "policy.json", json.dumps(data))
    assert yaml == json_policy
    assert yaml.requirements[0].monitor().only_after == ("a", "b")  # type: ignore[attr-defined]


def test_a_tags_declaration_with_parameters_keeps_both(tmp_path: Path):
    policy = load(tmp_path, "policy.toml", TOML)
    from ruleengine import ArgumentsRequirement

    # `refund` declared `parameters` and `tags`: conditions on its arguments still type-check.
    text = (
        TOML
        + '\n[[requirements]]\ntype = "arguments"\ntarget = "refund"\n'
        + 'allow_if = "arg.amount <= 100"\n'
    )
    with_args = load(tmp_path, "args.toml", text)
    assert isinstance(with_args.requirements[-1], ArgumentsRequirement)
    assert policy.tags["refund"] == ("write",)
    assert ToolSpec("x").tags == ()


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        (
            TOML.replace('only_after = "tag:read"', 'only_after = "tag:raed"'),
            "policy.toml:27: requirements[1].only_after: requirement `conditional(refund)`:"
            " only_after names tag `raed`, which no declared tool carries",
            "did you mean `read`? known tags: `read`, `net`, `write`",
        ),
        (
            TOML.replace(
                'tags = ["read"]\n\n[[tools]]\nname = "fetch"',
                'tags = ["re ad"]\n\n[[tools]]\nname = "fetch"',
            ),
            "policy.toml:3: tools[0].tags: tool `search`: tags holds `re ad`, which is not a tag"
            " name",
            "a tag is letters, digits, `_`, `-` and `.` (e.g. `read`, `side-effects`)",
        ),
        (
            'tools = [{name = "a", tags = 3}]\n',
            "policy.toml:1: tools[0].tags: tool `a`: tags=`3` must be a list of tags",
            None,
        ),
        (
            TOML.replace('include = ["tag:write"]', 'include = ["tag:"]'),
            "policy.toml:32: requirements[2].include: requirement `ask-permission`: include holds"
            " `tag:`, which is not a tag name",
            "a tag is letters, digits, `_`, `-` and `.` (e.g. `read`, `side-effects`)",
        ),
        (
            TOML.replace('target = "refund"', 'target = "tag:write"'),
            "policy.toml:26: requirements[1].target: requirement `conditional(tag:write)`: target"
            " names tag `write`, which 2 tools carry: `send_email`, `refund`",
            "target is one tool: name it by its name",
        ),
    ],
)
def test_tag_mistakes_in_files_are_located(tmp_path: Path, text: str, message: str, hint):
    with pytest.raises(PolicyError) as caught:
        load(tmp_path, "policy.toml", text)
    assert caught.value.message == message
    assert caught.value.hint == hint


def test_the_json_schema_describes_tool_tags():
    schema = Policy.json_schema()
    tool = schema["$defs"]["ToolEntry"]["properties"]["tags"]
    assert {"type": "array", "items": {"type": "string", "minLength": 1}} in tool["anyOf"]
    assert "tag:NAME" in tool["description"]


# -- the checker -----------------------------------------------------------------------------


def test_the_checker_checks_a_tagged_policy_as_the_named_one(tmp_path: Path):
    tagged = load(tmp_path, "policy.toml", TOML)
    report = tagged.check()
    assert report.findings == ()
    # A deadlock written with tags is found, and explained with the tools' names.
    broken = load(
        tmp_path,
        "broken.toml",
        TOML + '\n[[requirements]]\ntype = "conditional"\nname = "read-after-write"\n'
        'target = "search"\nonly_after = "tag:write"\n'
        '\n[[requirements]]\ntype = "conditional"\nname = "must-search"\n'
        'target = "search"\nmin_invocations = 1\n'
        '\n[[requirements]]\ntype = "conditional"\nname = "fetch-never"\n'
        'target = "fetch"\nmax_invocations = 0\n',
    )
    assert broken.check().findings


def test_ruleengine_check_runs_on_a_policy_file_with_tags(tmp_path: Path):
    (tmp_path / "policy.toml").write_text(TOML, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ruleengine", "check", "policy.toml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no findings" in done.stdout
