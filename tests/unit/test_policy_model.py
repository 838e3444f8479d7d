"""``Policy`` built in Python (ruleengine/policy/model.py): validation, equality, locations."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Policy,
    PolicyError,
    Reasoner,
    Requirement,
    Rule,
    RunState,
    requirement,
)
from ruleengine.policy import Location


@dataclass
class SearchTool:
    name: str = "search"
    description: str = "Search the web."


@dataclass
class Nameless:
    title: str = "x"


def policy_error(*args: object, **kwargs: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        Policy(*args, **kwargs)  # type: ignore[arg-type]
    return info.value


def test_defaults() -> None:
    policy = Policy(["search"])
    assert policy.tools == ("search",)
    assert policy.requirements == ()
    assert (policy.max_iterations, policy.mode, policy.source) == (20, "strict", "<python>")
    assert dict(policy.descriptions) == {}
    assert policy.location() is None


def test_tools_as_names_pairs_and_objects() -> None:
    policy = Policy(["think", ("mail", "Send mail."), SearchTool(), "final_answer"])
    assert policy.tools == ("think", "mail", "search")
    assert dict(policy.descriptions) == {"mail": "Send mail.", "search": "Search the web."}
    with pytest.raises(TypeError):
        policy.descriptions["x"] = "y"  # type: ignore[index]


def test_requirements_may_name_tools_by_class() -> None:
    think_then_search = ConditionalRequirement(SearchTool, only_after="think")
    policy = Policy(["think", SearchTool()], [think_then_search])
    bound = policy.requirements[0]
    assert isinstance(bound, ConditionalRequirement)
    assert bound.target == "search"
    assert policy.reasoner().decide(RunState()).allowed == ("think", "final_answer")


def test_one_requirement_alone_is_accepted() -> None:
    guard = CycleGuard()
    alone = Policy(["a"], guard)
    assert alone == Policy(["a"], [guard])
    assert [r.name for r in alone.requirements] == [guard.name]


def test_requirements_keep_their_declared_order() -> None:
    reqs = [CycleGuard(name="z"), ConditionalRequirement("a", name="b")]
    assert [r.name for r in Policy(["a"], reqs).requirements] == ["z", "b"]


def test_custom_requirements_are_held_as_they_are() -> None:
    @requirement(name="custom")
    def custom(state: RunState) -> list[Rule]:
        return []

    policy = Policy(["a"], [custom])
    assert policy.requirements == (custom,)
    assert policy == Policy(["a"], [custom])
    assert policy != Policy(["a"], [requirement(name="custom")(lambda s: [])])


@pytest.mark.parametrize(
    ("args", "kwargs", "message", "parameter"),
    [
        (([],), {}, "the policy declares no tool", "tools"),
        ((["final_answer"],), {}, "the policy declares no tool but `final_answer`", "tools"),
        ((["a", "b", "a"],), {}, "tool `a` is declared twice", "tools[2]"),
        ((["a", "final_answer", "final_answer"],), {}, "tool `final_answer` is declared twice",
         "tools[2]"),
        (("search",), {}, "tools=`'search'` must be a list", "tools"),
        ((["a", ""],), {}, "tools[1] must not be empty", "tools[1]"),
        ((["a", 3],), {}, "tools[1]=`3` is not a tool", "tools[1]"),
        ((["a", ("b",)],), {}, "tools[1]=`('b',)` is not a tool", "tools[1]"),
        ((["a", ("b", 3)],), {}, "tools[1].description=`3` must be text", "tools[1].description"),
        ((["a", {"name": "b"}],), {}, "tools[1]=`{'name': 'b'}` is not a tool", "tools[1]"),
        ((["a", Nameless()],), {}, "tools[1]=`Nameless(title='x')` is not a tool", "tools[1]"),
        ((["a"], ["not a requirement"]), {},
         "requirements[0]=`'not a requirement'` is not a requirement", "requirements[0]"),
        ((["a"], [CycleGuard(name="x"), ConditionalRequirement("a", name="x")]), {},
         "two requirements are named `x`", "requirements[1].name"),
        ((["a"], [ConditionalRequirement("a", only_after="b")]), {},
         "requirement `conditional(a)`: only_after names unknown tool `b`",
         "requirements[0].only_after"),
        ((["a"], [AskPermissionRequirement(exclude=["c"])]), {},
         "requirement `ask-permission`: exclude names unknown tool `c`",
         "requirements[0].exclude"),
        ((["a"],), {"max_iterations": 0}, "max_iterations=`0` must be at least 1",
         "max_iterations"),
        ((["a"],), {"max_iterations": True}, "max_iterations=`True` must be an integer",
         "max_iterations"),
        ((["a"],), {"max_iterations": 2.0}, "max_iterations=`2.0` must be an integer",
         "max_iterations"),
        ((["a"],), {"max_iterations": "5"}, "max_iterations=`'5'` must be an integer",
         "max_iterations"),
        ((["a"],), {"mode": "fast"}, "mode=`fast` must be `strict` or `priority`", "mode"),
        ((["a"],), {"source": 3}, "source=`3` must be text", "source"),
    ],
)  # fmt: skip
def test_mistakes_name_their_key_path(
    args: tuple[object, ...], kwargs: dict[str, object], message: str, parameter: str
) -> None:
    error = policy_error(*args, **kwargs)
    assert error.message == message
    assert error.parameter == parameter
    assert error.location is None


def test_bad_tool_entries_say_how_to_name_tools() -> None:
    assert policy_error(["a", 3]).hint == (
        "name a tool by string, by a `(name, description)` pair, or by an object with a `name`"
    )


def test_the_reasoner_has_the_policys_tools_requirements_and_mode() -> None:
    first = ConditionalRequirement("think", force_at_step=1, name="think-first")
    policy = Policy(["search", "think"], [first], mode="priority")
    reasoner = policy.reasoner(cache_size=0)
    assert isinstance(reasoner, Reasoner)
    assert reasoner.tools == ("search", "think", "final_answer")
    assert reasoner.mode == "priority"
    assert [r.name for r in reasoner.requirements] == ["think-first"]
    assert reasoner.decide(RunState()).forced == "think"


def test_reasoner_options_are_checked_by_the_reasoner() -> None:
    with pytest.raises(PolicyError, match="cache_size"):
        Policy(["a"]).reasoner(cache_size=-1)


def test_equality_compares_built_ins_by_their_parameters() -> None:
    def make(**changes: object) -> Policy:
        options: dict[str, object] = {"max_iterations": 7, "mode": "strict"} | changes
        return Policy(
            ["a", ("b", "B.")],
            [
                ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="c"),
                AskPermissionRequirement(include="b", remember_choices=True),
                CycleGuard(window_size=4),
            ],
            **options,  # type: ignore[arg-type]
        )

    assert make() == make()
    assert hash(make()) == hash(make())
    assert make() == make(source="elsewhere.toml")
    assert make() != make(max_iterations=8)
    assert make() != make(mode="priority")
    assert make() != Policy(["a", "b"])
    assert make() != "a policy"


@pytest.mark.parametrize(
    "other",
    [
        ConditionalRequirement("a", only_after=["b"], max_invocations=3, name="c"),
        ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="d"),
        ConditionalRequirement("a", only_before=["b"], max_invocations=2, name="c"),
        ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="c", priority=3),
        ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="c", enabled=False),
        ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="c", reason="r"),
    ],
)
def test_a_changed_parameter_makes_another_policy(other: Requirement) -> None:
    base = ConditionalRequirement("a", only_after=["b"], max_invocations=2, name="c")
    assert Policy(["a", "b"], [base]) != Policy(["a", "b"], [other])


def test_permission_and_guard_parameters_count() -> None:
    assert Policy(["a"], [AskPermissionRequirement()]) == Policy(
        ["a"], [AskPermissionRequirement(include=["a"])]
    )
    assert Policy(["a"], [AskPermissionRequirement()]) != Policy(
        ["a"], [AskPermissionRequirement(hide_disallowed=True)]
    )
    assert Policy(["a"], [CycleGuard()]) != Policy(["a"], [CycleGuard(max_strike_length=2)])


def test_repr_shows_construction() -> None:
    assert repr(Policy(["a"])) == "Policy(['a'])"
    policy = Policy(
        [("a", "A."), "b"],
        [CycleGuard()],
        max_iterations=5,
        mode="priority",
        source="p.toml",
    )
    assert repr(policy) == (
        "Policy([('a', 'A.'), 'b'], [CycleGuard(name='cycle-guard', priority=1)], "
        "max_iterations=5, mode='priority', source='p.toml')"
    )


def test_locations_point_into_the_file() -> None:
    at = {
        "": Location("p.toml", 1, 1),
        "tools": Location("p.toml", 1, 1),
        "tools[1]": Location("p.toml", 1, 15),
        "requirements[0]": Location("p.toml", 3, 1),
        "requirements[0].target": Location("p.toml", 5, 1),
        "requirements[1]": Location("p.toml", 8, 1),
    }
    policy = Policy(
        ["a", "b"],
        [ConditionalRequirement("a", name="first"), CycleGuard()],
        source="p.toml",
        locations=at,
    )
    assert policy.location() == Location("p.toml", 1, 1)
    assert policy.location("first") == Location("p.toml", 3, 1)
    assert policy.location("first", "target") == Location("p.toml", 5, 1)
    assert policy.location("first", "only_after[0]") == Location("p.toml", 3, 1)
    assert policy.location("cycle-guard", "window_size") == Location("p.toml", 8, 1)
    assert policy.location("nobody") is None
    assert policy.location(key="tools[1]") == Location("p.toml", 1, 15)
    assert policy.location(key="max_iterations") == Location("p.toml", 1, 1)
    assert dict(policy.locations) == at
    for bad in (3, ["first"], ("first",)):
        with pytest.raises(PolicyError, match="requirement_name"):
            policy.location(bad)  # type: ignore[arg-type]
        with pytest.raises(PolicyError, match="key"):
            policy.location("first", bad)  # type: ignore[arg-type]


def test_a_location_reads_as_file_line_column() -> None:
    assert str(Location("p.yaml", 3)) == "p.yaml:3"
    assert str(Location("p.yaml", 3, 7)) == "p.yaml:3:7"


def test_load_accepts_a_policy() -> None:
    policy = Policy(["a"])
    assert Policy.load(policy) is policy
