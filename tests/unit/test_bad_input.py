"""Bad input raises our errors, naming the culprit (SPEC §9, STYLE §4).

Every case asserts the error type and that the message names the requirement or tool at fault,
and that the message has the house shape: one line, lowercase start, no final period.
"""

from __future__ import annotations

from typing import Any

import pytest

from ruleengine import (
    ConflictError,
    PolicyError,
    Reasoner,
    Requirement,
    RequirementError,
    Rule,
    RunState,
    allowed,
    at_most,
    can_stop,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine.errors import RuleEngineError
from ruleengine.rules import Emitted


def emitting(name: str, *items: object, priority: int = 10) -> Requirement:
    return requirement(name=name, priority=priority)(lambda state: list(items))


def returning(name: str, value: object) -> Requirement:
    return requirement(name=name)(lambda state: value)


def well_formed(exc: RuleEngineError) -> RuleEngineError:
    message = exc.message
    assert "\n" not in message
    assert not message.endswith(".")
    assert not message[:1].isupper(), message
    assert "Traceback" not in str(exc)
    return exc


def policy_error(tools: list[str], *reqs: Requirement, mode: str = "strict") -> PolicyError:
    r = Reasoner(tools, list(reqs), mode=mode)  # type: ignore[arg-type]
    with pytest.raises(PolicyError) as info:
        r.decide(RunState())
    well_formed(info.value)
    return info.value


# -- unknown tools ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "priority"])
@pytest.mark.parametrize(
    "item",
    [
        Rule("telepathy", allowed=False),
        Rule("telepathy"),
        Rule("telepathy", prevent_stop=True, reason="x"),
        allowed("telepathy"),
        ~hidden("telepathy"),
        implies(allowed("a"), at_most(1, allowed("telepathy"), can_stop, allowed("a"))),
        forced("telepathy"),
    ],
)
def test_an_unknown_tool_names_the_requirement_and_the_tool(mode: str, item: object) -> None:
    exc = policy_error(["a"], emitting("fine", Rule("a")), emitting("mind-reader", item), mode=mode)
    assert "`mind-reader`" in exc.message
    assert "`telepathy`" in exc.message
    assert "`fine`" not in exc.message
    assert exc.hint is not None and "`a`" in exc.hint


def test_an_unknown_tool_through_resolve_names_the_requirement() -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"]).resolve([Emitted(Rule("b", allowed=False), "direct", 3)])
    assert "`direct`" in info.value.message and "`b`" in info.value.message


def test_an_unknown_tool_is_reported_even_after_a_cached_compile() -> None:
    # The same item compiled for one reasoner says nothing about another's tools.
    Reasoner(["a", "b"]).resolve([Emitted(Rule("b"), "x", 1)])
    with pytest.raises(PolicyError):
        Reasoner(["a"]).resolve([Emitted(Rule("b"), "x", 1)])


# -- misplaced hard forces ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "item",
    [
        forced("a") & allowed("a"),
        ~forced("a"),
        implies(can_stop, forced("a")),
        at_most(1, forced("a"), allowed("a"), can_stop),
    ],
)
def test_a_nested_hard_force_names_the_requirement(item: object) -> None:
    exc = policy_error(["a"], emitting("nested-force", item))
    assert "`nested-force`" in exc.message
    assert "forced('a')" in exc.message
    assert exc.hint is not None and "on its own" in exc.hint


# -- what requirements return -------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, allowed("a"), "Rule('a')", {"a": True}, 3, {Rule("a")}])
def test_a_requirement_returning_a_non_list_is_named(value: object) -> None:
    exc = policy_error(["a"], returning("scalar", value))
    assert "`scalar`" in exc.message
    assert "list" in exc.message
    assert repr(value) in exc.message


def test_a_requirement_returning_a_bare_rule_is_named() -> None:
    exc = policy_error(["a"], returning("bare", Rule("a", allowed=False)))
    assert "`bare`" in exc.message


def test_a_requirement_returning_a_bare_rule_is_told_to_return_a_list() -> None:
    exc = policy_error(["a"], returning("bare", Rule("a", allowed=False)))
    assert "list" in exc.message
    assert "Rule('a', allowed=False)" in exc.message


def test_a_generator_is_not_a_list() -> None:
    exc = policy_error(["a"], returning("lazy", (r for r in [Rule("a")])))
    assert "`lazy`" in exc.message


@pytest.mark.parametrize(
    "element", ["a", None, True, 1, ("a", True, False, False, False, None), {"target": "a"}]
)
def test_a_requirement_returning_a_non_rule_element_is_named(element: object) -> None:
    exc = policy_error(["a"], returning("odd-one", [Rule("a"), element]))
    assert "`odd-one`" in exc.message
    assert repr(element) in exc.message
    assert exc.hint is not None


def test_a_tuple_of_rules_is_accepted() -> None:
    r = Reasoner(["a", "b"], [returning("tuple", (Rule("a", allowed=False),))])
    assert r.decide().allowed == ("b", "final_answer")


def test_a_bad_rule_built_inside_run_names_the_requirement() -> None:
    @requirement(name="sloppy")
    def sloppy(state: RunState) -> list[object]:
        return [Rule("a", allowed="no")]  # type: ignore[arg-type]

    exc = policy_error(["a"], sloppy)
    assert exc.message.startswith("requirement `sloppy`: ")
    assert "allowed" in exc.message


def test_resolve_rejects_an_item_that_is_not_a_rule_nor_a_formula() -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"]).resolve([Emitted("a", "raw", 10)])  # type: ignore[arg-type]
    assert "`raw`" in info.value.message


@pytest.mark.parametrize("mode", ["strict", "priority"])
@pytest.mark.parametrize("priority", [0, "high"])
def test_resolve_rejects_a_bad_priority(mode: str, priority: object) -> None:
    r = Reasoner(["a"], mode=mode)  # type: ignore[arg-type]
    with pytest.raises(PolicyError) as info:
        r.resolve([Emitted(Rule("a", reason="r"), "ranked", priority)])  # type: ignore[arg-type]
    assert "`ranked`" in info.value.message


# -- priorities and requirement construction -------------------------------------------------------


def test_class_attributes_give_a_subclass_its_name_and_priority() -> None:
    class Budget(Requirement):
        name = "budget"
        priority = 20

        def run(self, state: RunState) -> list[object]:
            return []

    assert (Budget().name, Budget().priority) == ("budget", 20)
    assert Budget(priority=None).priority == 20
    assert Budget(name="other", priority=3).priority == 3

    class BadDefault(Requirement):
        priority = 0

    with pytest.raises(PolicyError) as info:
        BadDefault()
    assert "`BadDefault`" in info.value.message


@pytest.mark.parametrize("priority", [0, -3, 1.5, "10", None, True])
def test_a_bad_priority_fails_at_construction(priority: Any) -> None:
    class Careful(Requirement):
        def run(self, state: RunState) -> list[object]:
            return []

    if priority is not None:  # on a subclass, `None` means "the class attribute"
        with pytest.raises(PolicyError) as info:
            Careful(name="careful", priority=priority)
        assert "`careful`" in well_formed(info.value).message
        assert "priority" in info.value.message
    with pytest.raises(PolicyError) as info:
        requirement(name="decorated", priority=priority)(lambda state: [])
    assert "`decorated`" in info.value.message


def test_priority_one_is_the_smallest() -> None:
    assert requirement(name="least", priority=1)(lambda state: []).priority == 1


def test_a_bad_priority_set_after_construction_fails_at_the_reasoner() -> None:
    class Skipper(Requirement):
        priority = 0

        def __init__(self) -> None:  # does not call super().__init__
            pass

        def run(self, state: RunState) -> list[object]:
            return []

    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], [Skipper()])
    assert "`Skipper`" in well_formed(info.value).message


def test_other_bad_requirement_parameters() -> None:
    with pytest.raises(PolicyError):
        requirement(name="")(lambda state: [])
    with pytest.raises(PolicyError) as info:
        requirement(name="flag", enabled="yes")(lambda state: [])  # type: ignore[arg-type]
    assert "`flag`" in info.value.message
    with pytest.raises(PolicyError):
        requirement(name="x")(42)  # type: ignore[arg-type]


def test_a_requirement_without_run_is_a_policy_error() -> None:
    class Empty(Requirement):
        pass

    exc = policy_error(["a"], Empty())
    assert "`Empty`" in exc.message


# -- failures inside requirements ----------------------------------------------------------------


def test_a_raising_requirement_is_a_requirement_error_with_the_cause() -> None:
    @requirement(name="explodes")
    def explodes(state: RunState) -> list[object]:
        raise ZeroDivisionError("division by zero")

    r = Reasoner(["a"], [emitting("fine"), explodes])
    with pytest.raises(RequirementError) as info:
        r.decide()
    exc = well_formed(info.value)
    assert isinstance(exc, RequirementError)
    assert exc.requirement == "explodes"
    assert "`explodes`" in exc.message
    assert "ZeroDivisionError" in exc.message
    assert isinstance(exc.__cause__, ZeroDivisionError)
    assert exc.hint is not None


def test_our_own_errors_pass_through_unwrapped() -> None:
    @requirement(name="conflicted")
    def conflicted(state: RunState) -> list[object]:
        raise ConflictError("inner", core=[])

    with pytest.raises(ConflictError):
        Reasoner(["a"], [conflicted]).decide()


def test_an_async_requirement_in_decide_is_a_policy_error() -> None:
    @requirement(name="remote")
    async def remote(state: RunState) -> list[object]:
        return []

    exc = policy_error(["a"], emitting("local"), remote)
    assert "`remote`" in exc.message
    assert "adecide" in exc.message


# -- reasoner parameters ---------------------------------------------------------------------------


def test_bad_reasoner_parameters() -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], mode="lenient")  # type: ignore[arg-type]
    assert "`lenient`" in well_formed(info.value).message
    for size in (-1, True, 1.0, "10"):
        with pytest.raises(PolicyError) as info:
            Reasoner(["a"], cache_size=size)  # type: ignore[arg-type]
        assert "cache_size" in info.value.message


def test_bad_tool_lists() -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["search", "think", "search"])
    assert "`search`" in well_formed(info.value).message
    with pytest.raises(PolicyError):
        Reasoner("search")
    with pytest.raises(PolicyError):
        Reasoner(["search", ""])
    with pytest.raises(PolicyError):
        Reasoner(["search", 3])


def test_bad_requirement_lists() -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], [emitting("twin"), emitting("twin")])
    assert "`twin`" in well_formed(info.value).message
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], [lambda state: []])  # type: ignore[list-item]
    assert info.value.hint is not None and "@requirement" in info.value.hint


# -- the Python edge, as a new user meets it (engine-seams issue, item 8) -----------------------


def test_a_bare_string_is_not_a_trace() -> None:
    with pytest.raises(PolicyError) as info:
        RunState.from_trace("search")  # type: ignore[arg-type]
    assert well_formed(info.value).message == "trace=`'search'` is one string, not a list of steps"
    assert info.value.hint == "pass a list: `RunState.from_trace(['search'])`"
    with pytest.raises(PolicyError, match="trace=`5` must be a list"):
        RunState.from_trace(5)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="unknown argument `steps`"):
        RunState.from_trace([], steps=())


@pytest.mark.parametrize(
    ("kwargs", "culprit"),
    [
        ({"steps": ("search", "think")}, "steps[0]=`'search'` is not a `Step`"),
        ({"steps": "search"}, "steps=`'search'` must be a list"),
        ({"iteration": -1}, "iteration=`-1` must not be negative"),
        ({"iteration": "2"}, "iteration=`'2'` must be an integer"),
        ({"input": 5}, "input=`5` must be text"),
    ],
)
def test_a_malformed_state_is_blamed_on_its_builder(kwargs: dict[str, Any], culprit: str) -> None:
    with pytest.raises(PolicyError) as info:
        RunState(**kwargs)
    assert culprit in well_formed(info.value).message
    assert info.value.message.startswith("run state: ")


def test_a_state_built_from_a_list_of_steps_is_accepted() -> None:
    from ruleengine import Step

    state = RunState(steps=[Step(tool="a")])  # type: ignore[arg-type]
    assert state.steps == (Step(tool="a"),)
    assert state.called("a")
    with pytest.raises(PolicyError, match="`5` is not a tool name"):
        state.called(5)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="is not a `Step`"):
        state.with_step("b")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "culprit"),
    [
        (lambda: Reasoner(None), "tools=`None` must be a list"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"], [3]), "`3` is not a requirement"),  # type: ignore[list-item]
        (lambda: Reasoner(["a"], "x"), "requirements=`'x'` must be a list"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"], fast_path="no"), "fast_path=`'no'` must be true or false"),  # type: ignore[arg-type]
        (
            lambda: Reasoner(["a"], final_answer_as_tool="no"),  # type: ignore[arg-type]
            "final_answer_as_tool=`'no'` must be true or false",
        ),
        (lambda: Reasoner(["a"], mode=None), "mode=`None` must be `strict` or `priority`"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"]).resolve(None), "emitted=`None` must be a list"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"]).resolve([], step=0), "step=`0` must be at least 1"),
        (lambda: Reasoner(["a"]).decide("a"), "state=`'a'` is not a run state"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"]).decide(5), "state=`5` is not a run state"),  # type: ignore[arg-type]
        (lambda: Reasoner(["a"]).wrap("req", []), "wrap: `'req'` is not a requirement"),  # type: ignore[arg-type]
    ],
)
def test_reasoner_arguments_are_checked(call: Any, culprit: str) -> None:
    with pytest.raises(PolicyError) as info:
        call()
    assert culprit in well_formed(info.value).message


def test_what_a_user_obviously_means_is_accepted() -> None:
    one = emitting("no-a", Rule("a", allowed=False))
    assert Reasoner(["a", "b"], one).decide().allowed == ("b", "final_answer")
    assert Reasoner(["a", "b"], None).decide().allowed == ("a", "b", "final_answer")
    # A trace where a state is expected.
    r = Reasoner(["a", "b"], [emitting("after-a", Rule("b", allowed=False))])
    assert r.decide(["a", ("b", "error")]) == r.decide(RunState.from_trace(["a", ("b", "error")]))


@pytest.mark.parametrize(
    ("kwargs", "culprit"),
    [
        ({"only_after": {"b": 1}}, "only_after=`{'b': 1}` is not a tool or a list of tools"),
        ({"max_invocations": True}, "max_invocations=`True` must be an integer"),
        ({"min_invocations": 1.0}, "min_invocations=`1.0` must be an integer"),
        ({"force_at_step": False}, "force_at_step=`False` must be an integer"),
        ({"custom_checks": [len, 3]}, "custom_checks holds `3`, which is not callable"),
        ({"reason": 3}, "reason=`3` must be text"),
        ({"consecutive_allowed": 0}, "consecutive_allowed=`0` must be true or false"),
    ],
)
def test_conditional_parameters_share_one_message_style(
    kwargs: dict[str, Any], culprit: str
) -> None:
    from ruleengine import ConditionalRequirement

    with pytest.raises(PolicyError) as info:
        ConditionalRequirement("a", name="c", **kwargs)
    assert well_formed(info.value).message == f"requirement `c`: {culprit}"


def test_the_same_mistake_gets_the_same_message_in_every_builtin() -> None:
    from ruleengine import AskPermissionRequirement, ConditionalRequirement, CycleGuard

    messages = []
    for build in (
        lambda: ConditionalRequirement("a", name="x", priority=True),
        lambda: AskPermissionRequirement(name="x", priority=True),
        lambda: CycleGuard(name="x", priority=True),
        lambda: requirement(name="x", priority=True)(lambda state: []),
    ):
        with pytest.raises(PolicyError) as info:
            build()
        messages.append(info.value.message)
    assert set(messages) == {"requirement `x`: priority=`True` must be an integer"}
    flags = []
    for build in (
        lambda: ConditionalRequirement("a", name="x", enabled="yes"),
        lambda: AskPermissionRequirement(name="x", enabled="yes"),
        lambda: CycleGuard(name="x", enabled="yes"),
    ):
        with pytest.raises(PolicyError) as info:
            build()
        flags.append(info.value.message)
    assert set(flags) == {"requirement `x`: enabled=`'yes'` must be true or false"}


def test_cycle_guard_and_permission_arguments() -> None:
    from ruleengine import AskPermissionRequirement, CycleGuard

    guard = CycleGuard(name="g")
    with pytest.raises(PolicyError, match="steps=`5` must be a list"):
        guard.detect(5)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="steps holds `'a'`, not a `Step`"):
        guard.detect(["a"])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match="arguments=`5` must be a mapping"):
        guard.would_cycle([], "a", 5)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="window_size=`0` must be at least 1"):
        CycleGuard(window_size=0)
    with pytest.raises(PolicyError, match="timeout=`0` must be positive"):
        AskPermissionRequirement(timeout=0)
    with pytest.raises(PolicyError, match="timeout=`nan` must be finite"):
        AskPermissionRequirement(timeout=float("nan"))
    with pytest.raises(PolicyError, match="tools=`5` must be a list"):
        AskPermissionRequirement().bind(5)  # type: ignore[arg-type]


def test_result_models_built_by_hand_give_our_error() -> None:
    from ruleengine import CoreEntry, Pass

    with pytest.raises(PolicyError) as info:
        Pass(allowed=5)  # type: ignore[arg-type]
    assert well_formed(info.value).message.startswith("not a valid `Pass`: `allowed`")
    with pytest.raises(PolicyError, match="not a valid `CoreEntry`: `priority`"):
        CoreEntry(requirement="r", priority="high", rule="x")  # type: ignore[arg-type]


def test_a_monitor_must_be_a_monitor() -> None:
    with pytest.raises(PolicyError, match="monitor=`5` is not a `Monitor`"):
        requirement(name="m", monitor=5)(lambda state: [])  # type: ignore[arg-type]


def test_huge_inputs_are_handled() -> None:
    tools = [f"t{i}" for i in range(2000)]
    reqs = [emitting(f"no-{t}", Rule(t, allowed=False)) for t in tools[:1999]]
    p = Reasoner(tools, reqs).decide()
    assert p.allowed == ("t1999", "final_answer")
    with pytest.raises(PolicyError, match="must be at most"):
        Reasoner(["a"], rlimit=10**30)
    long_name = "x" * 10_000
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], [emitting(long_name, Rule("zzz", allowed=False))]).decide()
    assert "`zzz`" in info.value.message
