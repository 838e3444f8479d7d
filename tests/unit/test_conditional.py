"""ConditionalRequirement (SPEC §5, §11 "Counting and steps"): each parameter on its own, the
counting modes, validation, tool references, and whole scenarios through ``Reasoner.decide``."""

from __future__ import annotations

import pytest

from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    ConflictError,
    PolicyError,
    Reasoner,
    RequirementError,
    Rule,
    RunState,
    forced,
    requirement,
)

TOOLS = ["think", "search", "weather"]


def items(req: ConditionalRequirement, trace: list, tools: list | None = None) -> tuple:
    """What the requirement emits after ``trace`` (bound to ``tools``)."""
    bound = req.bind(tools if tools is not None else TOOLS)
    return tuple(bound.run(RunState.from_trace(trace)))


def rule(req: ConditionalRequirement, trace: list, tools: list | None = None) -> Rule:
    """The one ``Rule`` the requirement emits after ``trace``."""
    out = [i for i in items(req, trace, tools) if isinstance(i, Rule)]
    assert len(out) == 1
    return out[0]


def hard(req: ConditionalRequirement, trace: list) -> bool:
    """Whether the requirement hard-forces its target after ``trace``."""
    found = [i for i in items(req, trace) if not isinstance(i, Rule)]
    assert found in ([], [forced(req.target)])
    return bool(found)


def decide(reqs: list, trace: list, tools: list | None = None):
    return Reasoner(tools if tools is not None else TOOLS, reqs).decide(RunState.from_trace(trace))


# -- defaults ----------------------------------------------------------------------------------


def test_defaults_allow_the_target_and_nothing_else():
    req = ConditionalRequirement("search")
    assert req.name == "conditional(search)"
    assert req.priority == 10
    assert req.enabled is True
    assert req.force_prevent_stop is True
    assert req.only_success_invocations is True
    assert req.consecutive_allowed is True
    assert req.min_invocations == 0
    assert req.max_invocations is None
    assert req.force_at_step is None
    assert items(req, []) == (Rule("search"),)
    assert items(req, ["search", "search", ("think", "error")]) == (Rule("search"),)


# -- max_invocations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        ([], True),
        (["search"], True),
        (["search", "think"], True),
        (["search", "think", "search"], False),
        (["search", ("search", "error")], True),
        (["search", ("search", "denied")], True),
        ([("search", "error"), ("search", "denied"), ("search", "error")], True),
    ],
)
def test_max_invocations_counts_ok_steps_by_default(trace, expected):
    req = ConditionalRequirement("search", max_invocations=2)
    assert rule(req, trace).allowed is expected


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        (["search"], True),
        (["search", ("search", "error")], False),
        (["search", ("search", "denied")], False),
        ([("search", "error"), ("search", "denied")], False),
        ([("search", "denied"), ("think", "error")], True),
    ],
)
def test_max_invocations_counts_every_step_without_only_success(trace, expected):
    req = ConditionalRequirement("search", max_invocations=2, only_success_invocations=False)
    assert rule(req, trace).allowed is expected


def test_max_invocations_zero_never_allows():
    req = ConditionalRequirement("search", max_invocations=0)
    assert rule(req, []).allowed is False
    p = decide([req], [])
    assert "search" not in p.allowed
    assert p.allowed == ("think", "weather", FINAL_ANSWER)


def test_max_invocations_reached_denies_through_the_reasoner():
    req = ConditionalRequirement("search", max_invocations=1, reason="one search is enough")
    assert decide([req], []).is_allowed("search")
    p = decide([req], ["search"])
    assert not p.is_allowed("search")
    assert p.reasons["search"] == "one search is enough"
    assert decide([req], [("search", "error")]).is_allowed("search")


# -- min_invocations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "prevents"),
    [
        (True, [], True),
        (True, ["search"], True),
        (True, ["search", ("search", "error")], True),
        (True, ["search", ("search", "denied"), "think", "search"], False),
        (False, ["search", ("search", "error")], False),
        (False, [("search", "denied"), ("search", "denied")], False),
        (False, [("search", "denied"), ("think", "denied")], True),
    ],
)
def test_min_invocations_prevents_stopping_until_enough_counted_calls(
    only_success, trace, prevents
):
    req = ConditionalRequirement("search", min_invocations=2, only_success_invocations=only_success)
    r = rule(req, trace)
    assert r.prevent_stop is prevents
    assert r.allowed is True
    assert r.forced is False


def test_min_invocations_blocks_stop_in_the_pass():
    req = ConditionalRequirement("search", min_invocations=1)
    p = decide([req], [])
    assert p.can_stop is False
    assert FINAL_ANSWER not in p.allowed
    assert p.tool_choice == "required"
    assert decide([req], [("search", "error")]).can_stop is False
    assert decide([req], ["search"]).can_stop is True


# -- only_after --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], False),
        (True, ["weather"], False),
        (True, ["weather", "think"], True),
        (True, ["think", "weather"], True),
        (True, [("weather", "error"), "think"], False),
        (True, [("weather", "denied"), "think"], False),
        (True, ["think", ("weather", "error"), "weather"], True),
        (False, [("weather", "error"), ("think", "denied")], True),
        (False, [("weather", "error")], False),
    ],
)
def test_only_after_needs_every_listed_tool_among_counted_steps(only_success, trace, expected):
    req = ConditionalRequirement(
        "search", only_after=["weather", "think"], only_success_invocations=only_success
    )
    assert rule(req, trace).allowed is expected


def test_only_after_accepts_a_single_name():
    req = ConditionalRequirement("search", only_after="weather")
    assert rule(req, []).allowed is False
    assert rule(req, ["weather"]).allowed is True


# -- only_before -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], True),
        (True, ["think"], True),
        (True, ["weather"], False),
        (True, ["think", "weather", "think"], False),
        (True, [("weather", "error")], True),
        (True, [("weather", "denied")], True),
        (False, [("weather", "error")], False),
        (False, [("weather", "denied")], False),
    ],
)
def test_only_before_is_enforced_on_its_own(only_success, trace, expected):
    # BeeAI only checks only_before together with only_after; SPEC §5 enforces it alone.
    req = ConditionalRequirement(
        "search", only_before="weather", only_success_invocations=only_success
    )
    assert rule(req, trace).allowed is expected


def test_only_before_with_several_tools():
    req = ConditionalRequirement("search", only_before=["weather", "think"])
    assert rule(req, []).allowed is True
    assert rule(req, ["think"]).allowed is False
    assert rule(req, ["weather"]).allowed is False


def test_only_before_and_only_after_together():
    req = ConditionalRequirement("search", only_after="think", only_before="weather")
    assert rule(req, []).allowed is False
    assert rule(req, ["think"]).allowed is True
    assert rule(req, ["think", "weather"]).allowed is False
    assert rule(req, ["weather", "think"]).allowed is False


# -- force_after -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], False),
        (True, ["weather"], True),
        (True, ["weather", "search"], False),
        (True, ["weather", "think"], False),
        (True, ["weather", ("think", "error")], True),
        (True, ["weather", ("think", "denied")], True),
        (True, [("weather", "error")], False),
        (False, ["weather", ("think", "error")], False),
        (False, [("weather", "denied")], True),
        (False, ["think", ("weather", "error")], True),
    ],
)
def test_force_after_looks_at_the_last_counted_step(only_success, trace, expected):
    req = ConditionalRequirement(
        "search", force_after="weather", only_success_invocations=only_success
    )
    r = rule(req, trace)
    assert r.forced is expected
    assert r.prevent_stop is expected  # force_prevent_stop defaults to true
    assert r.allowed is True


def test_force_after_any_of_several_tools():
    req = ConditionalRequirement("search", force_after=["weather", "think"])
    assert rule(req, ["think"]).forced is True
    assert rule(req, ["weather"]).forced is True
    assert rule(req, ["weather", "search"]).forced is False


def test_force_after_forces_only_while_allowed():
    req = ConditionalRequirement("search", force_after="weather", max_invocations=1)
    assert rule(req, ["weather"]).forced is True
    r = rule(req, ["search", "weather"])
    assert r.allowed is False
    assert r.forced is False
    assert r.prevent_stop is False


def test_force_after_without_force_prevent_stop_lets_the_agent_stop():
    req = ConditionalRequirement("search", force_after="weather", force_prevent_stop=False)
    r = rule(req, ["weather"])
    assert (r.forced, r.prevent_stop) == (True, False)
    p = decide([req], ["weather"])
    assert p.forced == "search"
    assert p.can_stop is True
    assert p.allowed == ("search", FINAL_ANSWER)


def test_force_after_in_the_pass():
    req = ConditionalRequirement("search", force_after="weather")
    p = decide([req], ["weather"])
    assert p.forced == "search"
    assert p.allowed == ("search",)
    assert p.can_stop is False
    assert p.tool_choice == "search"
    p = decide([req], ["weather", "search"])
    assert p.forced is None
    assert p.can_stop is True


# -- consecutive_allowed -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], True),
        (True, ["search"], False),
        (True, ["search", "think"], True),
        (True, ["search", ("think", "error")], False),
        (True, ["search", ("think", "denied")], False),
        (True, [("search", "error")], True),
        (True, ["think", ("search", "denied")], True),
        (False, [("search", "error")], False),
        (False, ["search", ("think", "error")], True),
    ],
)
def test_consecutive_allowed_false_looks_at_the_last_counted_step(only_success, trace, expected):
    req = ConditionalRequirement(
        "search", consecutive_allowed=False, only_success_invocations=only_success
    )
    assert rule(req, trace).allowed is expected


def test_consecutive_allowed_true_allows_repeats():
    req = ConditionalRequirement("search", consecutive_allowed=True)
    assert rule(req, ["search", "search"]).allowed is True


# -- force_at_step -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], True),
        (True, ["search"], False),
        (True, [("search", "error")], True),
        (True, [("search", "denied"), ("think", "error")], True),
        (True, ["think"], False),
        (False, [("search", "error")], False),
        (False, [("think", "denied")], False),
    ],
)
def test_force_at_step_1_keeps_forcing_while_no_step_counts(only_success, trace, expected):
    req = ConditionalRequirement("search", force_at_step=1, only_success_invocations=only_success)
    assert hard(req, trace) is expected


@pytest.mark.parametrize(
    ("only_success", "trace", "expected"),
    [
        (True, [], False),
        (True, ["think"], True),
        (True, ["think", ("weather", "denied")], True),
        (True, [("think", "error")], False),
        (True, ["think", "weather"], False),
        (False, [("think", "error")], True),
        (False, [("think", "error"), ("think", "error")], False),
    ],
)
def test_force_at_step_counts_steps_in_its_own_mode(only_success, trace, expected):
    req = ConditionalRequirement("search", force_at_step=2, only_success_invocations=only_success)
    assert hard(req, trace) is expected


def test_force_at_step_is_a_hard_force_that_prevents_stopping():
    req = ConditionalRequirement("search", force_at_step=1)
    out = items(req, [])
    assert out == (Rule("search", prevent_stop=True), forced("search"))
    p = decide([req], [])
    assert p.forced == "search"
    assert p.allowed == ("search",)
    assert p.can_stop is False
    assert p.tool_choice == "search"


def test_force_at_step_without_force_prevent_stop():
    req = ConditionalRequirement("search", force_at_step=1, force_prevent_stop=False)
    assert items(req, []) == (Rule("search"), forced("search"))
    p = decide([req], [])
    assert p.forced == "search"
    assert p.can_stop is True
    assert p.allowed == ("search", FINAL_ANSWER)


def test_force_at_step_beats_a_higher_priority_soft_force():
    hard_req = ConditionalRequirement("search", force_at_step=2, priority=1, name="hard")
    soft_req = ConditionalRequirement("weather", force_after="think", priority=50, name="soft")
    p = decide([hard_req, soft_req], ["think"])
    assert p.forced == "search"


# -- reason ------------------------------------------------------------------------------------


def test_reason_is_given_only_while_denying():
    req = ConditionalRequirement(
        "search", only_after="weather", force_after="think", reason="check the weather first"
    )
    assert rule(req, []).reason == "check the weather first"
    assert rule(req, ["weather"]).reason is None
    assert rule(req, ["weather", "think"]).reason is None  # forced, still no reason
    assert decide([req], []).reasons == {"search": "check the weather first"}
    assert decide([req], ["weather"]).reasons == {}


# -- final_answer as target --------------------------------------------------------------------


def test_force_after_on_final_answer_never_prevents_stopping():
    req = ConditionalRequirement(FINAL_ANSWER, force_after="search")
    r = rule(req, ["search"])
    assert (r.allowed, r.forced, r.prevent_stop) == (True, True, False)
    p = decide([req], ["search"])
    assert p.forced == FINAL_ANSWER
    assert p.can_stop is True
    assert p.allowed == (FINAL_ANSWER,)


def test_force_at_step_on_final_answer_never_prevents_stopping():
    req = ConditionalRequirement(FINAL_ANSWER, force_at_step=2)
    assert items(req, ["search"]) == (Rule(FINAL_ANSWER), forced(FINAL_ANSWER))
    p = decide([req], ["search"])
    assert p.forced == FINAL_ANSWER
    assert p.can_stop is True


def test_final_answer_only_after_blocks_stopping():
    req = ConditionalRequirement(FINAL_ANSWER, only_after="search")
    assert decide([req], []).can_stop is False
    assert decide([req], [("search", "error")]).can_stop is False
    assert decide([req], ["search"]).can_stop is True


def test_min_invocations_on_final_answer_is_rejected():
    with pytest.raises(PolicyError, match="min_invocations"):
        ConditionalRequirement(FINAL_ANSWER, min_invocations=1)


# -- custom_checks -----------------------------------------------------------------------------


def test_custom_checks_all_must_pass():
    seen = []

    def long_enough(state):
        seen.append(state)
        return len(state.steps) >= 2

    req = ConditionalRequirement("search", custom_checks=[long_enough, lambda s: True])
    state = RunState.from_trace(["think"])
    assert req.check_values(state) == (False, True)
    assert seen[-1] is state
    assert rule(req, ["think"]).allowed is False
    assert rule(req, ["think", "weather"]).allowed is True


def test_a_false_check_denies_and_gives_the_reason():
    req = ConditionalRequirement("search", custom_checks=[lambda s: False], reason="not now")
    p = decide([req], [])
    assert not p.is_allowed("search")
    assert p.reasons["search"] == "not now"


def test_a_raising_check_is_a_requirement_error_naming_the_requirement():
    def broken(state):
        raise ValueError("boom")

    req = ConditionalRequirement("search", custom_checks=[broken], name="guarded-search")
    with pytest.raises(RequirementError) as info:
        decide([req], [])
    assert info.value.requirement == "guarded-search"
    assert "guarded-search" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.parametrize("value", [1, None, "yes", 0])
def test_a_check_returning_a_non_bool_is_a_policy_error(value):
    req = ConditionalRequirement("search", custom_checks=[lambda s: value], name="odd-check")
    with pytest.raises(PolicyError) as info:
        decide([req], [])
    assert "odd-check" in str(info.value)
    assert repr(value) in str(info.value)


def test_a_non_bool_check_message_names_the_requirement_once():
    req = ConditionalRequirement("search", custom_checks=[lambda s: 1], name="odd-check")
    with pytest.raises(PolicyError) as info:
        decide([req], [])
    assert info.value.message.count("odd-check") == 1


def test_custom_checks_must_be_callable():
    with pytest.raises(PolicyError, match="custom_checks holds `3`, which is not callable"):
        ConditionalRequirement("search", custom_checks=[3])
    with pytest.raises(PolicyError, match="custom_checks=`'odd'` must be a list"):
        ConditionalRequirement("search", custom_checks="odd")


def test_a_single_custom_check_is_accepted():
    def odd(state: RunState) -> bool:
        return len(state.steps) % 2 == 1

    req = ConditionalRequirement("search", custom_checks=odd)
    assert req.custom_checks == (odd,)
    assert "search" not in decide([req], []).allowed
    assert "search" in decide([req], ["think"]).allowed


# -- priority, enabled, name -------------------------------------------------------------------


def test_disabled_requirement_is_not_run():
    req = ConditionalRequirement("search", max_invocations=0, enabled=False)
    assert decide([req], []).is_allowed("search")


def test_priority_and_name_are_cited_in_cores():
    a = ConditionalRequirement("search", force_at_step=1, priority=7, name="first-search")
    b = ConditionalRequirement("search", max_invocations=0, priority=3, name="no-search")
    with pytest.raises(ConflictError) as info:
        decide([a, b], [])
    cited = {(e.requirement, e.priority) for e in info.value.core}
    assert cited == {("first-search", 7), ("no-search", 3)}


# -- scenarios through the reasoner -------------------------------------------------------------


def test_scenario_think_first_then_search_only_after_weather():
    reqs = [
        ConditionalRequirement("think", force_at_step=1),
        ConditionalRequirement(
            "search",
            only_after="weather",
            min_invocations=1,
            max_invocations=2,
            reason="weather first",
        ),
    ]

    p = decide(reqs, [])
    assert (p.allowed, p.forced, p.can_stop, p.tool_choice) == (
        ("think",),
        "think",
        False,
        "think",
    )
    p = decide(reqs, [("think", "error")])
    assert p.forced == "think"  # still step 1: the failed call does not count

    p = decide(reqs, ["think"])
    assert p.allowed == ("think", "weather")
    assert p.forced is None
    assert p.can_stop is False
    assert p.reasons == {"search": "weather first"}

    p = decide(reqs, ["think", "weather"])
    assert p.allowed == ("think", "search", "weather")
    assert p.can_stop is False

    p = decide(reqs, ["think", "weather", "search"])
    assert p.allowed == ("think", "search", "weather", FINAL_ANSWER)
    assert p.can_stop is True

    p = decide(reqs, ["think", "weather", "search", ("search", "error")])
    assert p.is_allowed("search")

    p = decide(reqs, ["think", "weather", "search", "search"])
    assert p.allowed == ("think", "weather", FINAL_ANSWER)
    assert p.can_stop is True


def test_scenario_forced_order_think_then_search():
    reqs = [
        ConditionalRequirement("think", force_at_step=1),
        ConditionalRequirement("search", force_at_step=2),
    ]
    assert decide(reqs, []).forced == "think"
    assert decide(reqs, [("think", "error")]).forced == "think"
    assert decide(reqs, ["think"]).forced == "search"
    assert decide(reqs, ["think", ("search", "denied")]).forced == "search"
    p = decide(reqs, ["think", "search"])
    assert p.forced is None
    assert p.allowed == ("think", "search", "weather", FINAL_ANSWER)


def test_scenario_react_think_after_every_other_tool():
    react = ConditionalRequirement(
        "think", force_after=["search", "weather"], consecutive_allowed=False
    )
    p = decide([react], [])
    assert p.forced is None
    assert p.allowed == ("think", "search", "weather", FINAL_ANSWER)

    for trace in (["search"], ["weather"], ["think", "search"], ["search", ("weather", "error")]):
        p = decide([react], trace)
        assert p.forced == "think", trace
        assert p.allowed == ("think",), trace
        assert p.can_stop is False

    p = decide([react], ["search", "think"])
    assert p.forced is None
    assert p.allowed == ("search", "weather", FINAL_ANSWER)
    p = decide([react], ["search", "think", ("think", "denied")])
    assert not p.is_allowed("think")


def test_scenario_min_invocations_blocks_stop_while_the_tool_is_disallowed():
    req = ConditionalRequirement(
        "search", only_after="weather", min_invocations=1, reason="weather first"
    )
    p = decide([req], [])
    assert p.can_stop is False
    assert not p.is_allowed("search")
    assert p.allowed == ("think", "weather")
    assert p.reasons == {"search": "weather first"}
    assert p.tool_choice == "required"


def test_scenario_force_at_step_on_a_tool_another_requirement_denies():
    force = ConditionalRequirement("search", force_at_step=1, name="search-first")

    @requirement(name="no-search")
    def no_search(state):
        return [Rule("search", allowed=False)]

    with pytest.raises(ConflictError) as info:
        decide([force, no_search], [])
    assert sorted(e.requirement for e in info.value.core) == ["no-search", "search-first"]
    assert info.value.step == 1
    assert "search" in str(info.value)


def test_scenario_force_at_step_on_a_tool_whose_only_after_is_unmet():
    force = ConditionalRequirement("search", force_at_step=1, name="search-first")
    order = ConditionalRequirement("search", only_after="weather", name="weather-before-search")
    with pytest.raises(ConflictError) as info:
        decide([force, order], [])
    core = info.value.core
    assert sorted(e.requirement for e in core) == ["search-first", "weather-before-search"]
    assert {core[i].requirement for i in range(len(core))} == {
        "search-first",
        "weather-before-search",
    }
    # once the force has passed, there is no conflict
    assert decide([force, order], [("search", "error"), "weather"]).forced is None


def test_scenario_two_hard_forces_in_one_step_conflict():
    a = ConditionalRequirement("think", force_at_step=1, name="think-first")
    b = ConditionalRequirement("search", force_at_step=1, name="search-first")
    with pytest.raises(ConflictError) as info:
        decide([a, b], [])
    assert sorted(e.requirement for e in info.value.core) == ["search-first", "think-first"]


def test_force_at_step_on_its_own_denied_target_conflicts_alone():
    req = ConditionalRequirement("search", force_at_step=1, only_after="weather", name="x")
    with pytest.raises(ConflictError) as info:
        decide([req], [])
    assert {e.requirement for e in info.value.core} == {"x"}


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "parameter", "value"),
    [
        ({"min_invocations": -1}, "min_invocations", "`-1`"),
        ({"max_invocations": -2}, "max_invocations", "`-2`"),
        ({"min_invocations": 3, "max_invocations": 2}, "min_invocations", "`3`"),
        ({"min_invocations": 3, "max_invocations": 2}, "max_invocations", "`2`"),
        ({"force_at_step": 0}, "force_at_step", "`0`"),
        ({"force_at_step": -3}, "force_at_step", "`-3`"),
        ({"force_at_step": 1.5}, "force_at_step", "`1.5`"),
        ({"force_at_step": "1"}, "force_at_step", "`'1'`"),
        ({"force_at_step": True}, "force_at_step", "`True`"),
        ({"min_invocations": 1.0}, "min_invocations", "`1.0`"),
        ({"max_invocations": "2"}, "max_invocations", "`'2'`"),
        ({"only_before": "search"}, "only_before", "`search`"),
        ({"only_after": ["think", "search"]}, "only_after", "`search`"),
        ({"force_after": "search"}, "force_after", "`search`"),
        ({"only_before": "think", "only_after": "think"}, "only_before", "`think`"),
        ({"only_before": "think", "only_after": "think"}, "only_after", "`think`"),
        (
            {"only_before": ["weather"], "force_after": ["think", "weather"]},
            "force_after",
            "`weather`",
        ),
        ({"only_before": ["weather"], "force_after": ["weather"]}, "only_before", "`weather`"),
        ({"consecutive_allowed": "no"}, "consecutive_allowed", "`'no'`"),
        ({"only_success_invocations": 0}, "only_success_invocations", "`0`"),
        ({"force_prevent_stop": None}, "force_prevent_stop", "`None`"),
        ({"reason": 5}, "reason", "`5`"),
        ({"priority": 0}, "priority", "`0`"),
    ],
)
def test_invalid_parameters_fail_at_construction_naming_parameter_and_value(
    kwargs, parameter, value
):
    with pytest.raises(PolicyError) as info:
        ConditionalRequirement("search", **kwargs)
    message = str(info.value)
    assert parameter in message
    assert value in message
    assert "conditional(search)" in message


def test_valid_edge_values_are_accepted():
    ConditionalRequirement("search", min_invocations=2, max_invocations=2)
    ConditionalRequirement("search", min_invocations=0, max_invocations=0)
    ConditionalRequirement("search", force_at_step=1)
    ConditionalRequirement("search", only_after="think", force_after="think")


def test_duplicate_names_in_lists_are_harmless():
    req = ConditionalRequirement("search", only_after=["weather", "weather"])
    assert rule(req, []).allowed is False
    assert rule(req, ["weather"]).allowed is True


@pytest.mark.parametrize("parameter", ["target", "only_before", "only_after", "force_after"])
def test_unknown_tool_names_fail_when_bound(parameter):
    kwargs = {"target": "search"}
    kwargs[parameter] = "telepathy"
    target = kwargs.pop("target")
    req = ConditionalRequirement(target, **kwargs)  # unknown until bound
    with pytest.raises(PolicyError) as info:
        Reasoner(TOOLS, [req])
    assert parameter in str(info.value)
    assert "telepathy" in str(info.value)


def test_unknown_tool_name_is_shown_in_plain_backticks():
    req = ConditionalRequirement("search", only_after="telepathy")
    with pytest.raises(PolicyError) as info:
        Reasoner(TOOLS, [req])
    assert "`telepathy`" in str(info.value)


# -- tool references: names, objects, classes ---------------------------------------------------


class SearchTool:
    def __init__(self, name: str = "search") -> None:
        self.name = name


class WeatherTool:
    def __init__(self) -> None:
        self.name = "weather"


class NeverDeclared:
    name = "nowhere"


def test_targets_by_tool_object():
    tools = ["think", SearchTool(), WeatherTool()]
    req = ConditionalRequirement(tools[1], only_after=tools[2], max_invocations=1)
    assert req.name == "conditional(search)"
    assert req.target == "search"
    p = decide([req], [], tools)
    assert not p.is_allowed("search")
    assert decide([req], ["weather"], tools).is_allowed("search")
    assert not decide([req], ["weather", "search"], tools).is_allowed("search")


def test_targets_by_tool_class_resolve_at_bind():
    tools = ["think", SearchTool(), WeatherTool()]
    req = ConditionalRequirement(SearchTool, only_after=WeatherTool, name="by-class")
    with pytest.raises(PolicyError, match="bind"):
        _ = req.target
    bound = req.bind(tools)
    assert bound.target == "search"
    assert bound.monitor().only_after == ("weather",)
    assert bound.name == "by-class"
    with pytest.raises(PolicyError):
        _ = req.target  # binding answers a copy, never mutates
    assert not decide([req], [], tools).is_allowed("search")
    assert decide([req], ["weather"], tools).is_allowed("search")


def test_default_name_of_a_class_target():
    req = ConditionalRequirement(SearchTool)
    assert req.name == "conditional(SearchTool)"


def test_a_class_with_two_declared_instances_is_ambiguous():
    tools = [SearchTool("search"), SearchTool("search2"), "think"]
    req = ConditionalRequirement("think", only_after=SearchTool)
    with pytest.raises(PolicyError) as info:
        Reasoner(tools, [req])
    message = str(info.value)
    assert "ambiguous" in message
    assert "SearchTool" in message
    assert "only_after" in message
    assert "search2" in message


def test_a_class_with_no_declared_instance_is_an_error():
    req = ConditionalRequirement(NeverDeclared, name="x")
    with pytest.raises(PolicyError) as info:
        Reasoner(TOOLS, [req])
    assert "NeverDeclared" in str(info.value)
    assert "target" in str(info.value)


def test_self_reference_through_a_class_is_caught_at_bind():
    tools = [SearchTool(), "think"]
    req = ConditionalRequirement(SearchTool, only_after="search")
    with pytest.raises(PolicyError) as info:
        Reasoner(tools, [req])
    assert "only_after" in str(info.value)
    assert "search" in str(info.value)


def test_binding_to_the_same_names_keeps_the_object():
    req = ConditionalRequirement("search", only_after="weather")
    assert req.bind(TOOLS) is req


def test_not_a_tool_reference_is_rejected():
    with pytest.raises(PolicyError, match="only_after"):
        ConditionalRequirement("search", only_after=[3])
    with pytest.raises(PolicyError, match="target"):
        ConditionalRequirement(["search", "think"])
