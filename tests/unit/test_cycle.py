"""CycleGuard (SPEC §5 "Cycle guard"): strikes, occurrences within a window, canonical
arguments, would_cycle, the denial it emits, and yielding instead of a conflict."""

from __future__ import annotations

import pytest

from ruleengine import (
    FINAL_ANSWER,
    ConditionalRequirement,
    ConflictError,
    CycleGuard,
    PolicyError,
    Reasoner,
    Rule,
    RunState,
    Step,
    requirement,
)
from ruleengine.requirements import canonical_arguments


def call(tool: str, status: str = "ok", **arguments) -> Step:
    return Step(tool=tool, arguments=arguments, status=status)


def state(*steps: Step) -> RunState:
    return RunState(steps=tuple(steps))


# -- detection ---------------------------------------------------------------------------------


def test_empty_history_has_no_cycle():
    assert CycleGuard().detect(()) is None


@pytest.mark.parametrize(
    ("strike", "limit", "cycles"),
    [(1, 1, False), (2, 1, True), (2, 2, False), (3, 2, True), (4, 3, True), (3, 3, False)],
)
def test_a_strike_longer_than_max_strike_length_cycles(strike, limit, cycles):
    guard = CycleGuard(max_strike_length=limit, max_total_occurrences=100)
    steps = [call("search", q="x")] * strike
    assert guard.detect(steps) == ("search" if cycles else None)


def test_a_strike_is_broken_by_a_different_call():
    guard = CycleGuard(max_strike_length=2, max_total_occurrences=100)
    x = call("search", q="x")
    assert guard.detect([x, x, call("search", q="y"), x]) is None
    assert guard.detect([x, x, call("think"), x, x]) is None
    assert guard.detect([call("think"), x, x, x]) == "search"


def test_only_the_last_call_is_judged():
    guard = CycleGuard(max_strike_length=1, max_total_occurrences=100)
    x = call("search", q="x")
    assert guard.detect([x, x, call("think")]) is None


@pytest.mark.parametrize(
    ("window", "total", "cycles"),
    [(5, 2, True), (4, 2, False), (5, 3, False), (10, 2, True), (3, 1, True)],
)
def test_occurrences_within_the_window(window, total, cycles):
    guard = CycleGuard(max_strike_length=10, max_total_occurrences=total, window_size=window)
    x = call("search", q="x")
    steps = [x, call("think"), x, call("weather"), x]  # 3 identical calls in the last 5
    assert guard.detect(steps) == ("search" if cycles else None)


def test_occurrences_only_count_identical_calls():
    guard = CycleGuard(max_strike_length=10, max_total_occurrences=2, window_size=10)
    steps = [call("search", q="a"), call("search", q="b"), call("search", q="c"), call("think")]
    assert guard.detect(steps) is None
    steps = [call("search", q="a"), call("think"), call("search", q="a"), call("search", q="a")]
    assert guard.detect(steps) == "search"


def test_default_parameters():
    guard = CycleGuard()
    assert (guard.max_strike_length, guard.max_total_occurrences, guard.window_size) == (1, 5, 10)
    assert guard.priority == 1
    assert guard.name == "cycle-guard"
    assert guard.yielding is True


def test_argument_key_order_is_irrelevant():
    guard = CycleGuard(max_strike_length=1)
    a = Step(tool="search", arguments={"q": "x", "page": 2})
    b = Step(tool="search", arguments={"page": 2, "q": "x"})
    assert guard.detect([a, b]) == "search"
    nested_a = Step(tool="search", arguments={"f": {"x": 1, "y": [1, 2]}, "q": "z"})
    nested_b = Step(tool="search", arguments={"q": "z", "f": {"y": [1, 2], "x": 1}})
    assert guard.detect([nested_a, nested_b]) == "search"
    assert canonical_arguments(a.arguments) == canonical_arguments(b.arguments)
    assert canonical_arguments(nested_a.arguments) == canonical_arguments(nested_b.arguments)


def test_different_arguments_or_tools_are_different_calls():
    guard = CycleGuard(max_strike_length=1)
    assert guard.detect([call("search", q="x"), call("search", q="y")]) is None
    assert guard.detect([call("search", q="x"), call("find", q="x")]) is None
    assert guard.detect([call("search", q=[1, 2]), call("search", q=[2, 1])]) is None
    assert canonical_arguments({"q": 1}) != canonical_arguments({"q": "1"})


def test_canonical_arguments_handles_unserialisable_values():
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque()"

    assert canonical_arguments({"o": Opaque(), "a": 1}) == canonical_arguments(
        {"a": 1, "o": Opaque()}
    )


def test_would_cycle():
    guard = CycleGuard(max_strike_length=2)
    steps = [call("search", q="x"), call("search", q="x")]
    assert guard.would_cycle(steps, "search", {"q": "x"}) is True
    assert guard.would_cycle(steps, "search", {"q": "y"}) is False
    assert guard.would_cycle(steps, "think", {}) is False
    assert guard.would_cycle(steps[:1], "search", {"q": "x"}) is False
    assert guard.would_cycle([], "search", {}) is False


# -- rules -------------------------------------------------------------------------------------


def test_run_denies_the_cycling_tool():
    guard = CycleGuard(max_strike_length=1)
    out = tuple(guard.run(state(call("search", q="x"), call("search", q="x"))))
    assert len(out) == 1
    (rule,) = out
    assert isinstance(rule, Rule)
    assert (rule.target, rule.allowed, rule.hidden, rule.forced, rule.prevent_stop) == (
        "search",
        False,
        False,
        False,
        False,
    )
    assert rule.reason is not None and "search" in rule.reason


def test_run_emits_nothing_without_a_cycle():
    guard = CycleGuard(max_strike_length=1)
    assert tuple(guard.run(RunState())) == ()
    assert tuple(guard.run(state(call("search", q="x"), call("search", q="y")))) == ()


def test_the_pass_denies_the_cycling_tool():
    r = Reasoner(["search", "think"], [CycleGuard()])
    p = r.decide(state(call("search", q="x"), call("search", q="x")))
    assert p.allowed == ("think", FINAL_ANSWER)
    assert "search" in p.reasons
    assert p.explanation.yielded == ()
    p = r.decide(state(call("search", q="x"), call("search", q="y")))
    assert p.allowed == ("search", "think", FINAL_ANSWER)


def test_failed_and_denied_attempts_are_calls_too():
    # The guard reads call attempts (SPEC §3: a step is one tool call attempt).
    guard = CycleGuard(max_strike_length=1)
    assert guard.detect([call("search", "error", q="x"), call("search", "denied", q="x")]) == (
        "search"
    )


# -- yielding ----------------------------------------------------------------------------------


def test_the_guard_yields_when_denying_would_leave_nothing_allowed():
    needs_search = ConditionalRequirement("search", min_invocations=5, name="needs-search")
    r = Reasoner(["search"], [CycleGuard(), needs_search])
    p = r.decide(state(call("search", q="x"), call("search", q="x")))
    assert p.allowed == ("search",)
    assert p.can_stop is False
    yielded = p.explanation.yielded
    assert len(yielded) >= 1
    assert {e.requirement for e in yielded} == {"cycle-guard"}
    assert any("cycle-guard" in note for note in p.explanation.notes)
    assert "search" not in p.reasons  # the yielded rule's reason is dropped with it


def test_the_guard_gives_way_in_priority_mode_too():
    needs_search = ConditionalRequirement("search", min_invocations=5, name="needs-search")
    r = Reasoner(["search"], [CycleGuard(), needs_search], mode="priority")
    p = r.decide(state(call("search", q="x"), call("search", q="x")))
    assert p.allowed == ("search",)
    dropped = (*p.explanation.yielded, *p.explanation.overridden)
    assert {e.requirement for e in dropped} == {"cycle-guard"}


def test_the_guard_yields_to_a_hard_force():
    force = ConditionalRequirement("search", force_at_step=3, name="search-third")
    r = Reasoner(["search", "think"], [CycleGuard(), force])
    p = r.decide(state(call("search", q="x"), call("search", q="x")))
    assert p.forced == "search"
    assert {e.requirement for e in p.explanation.yielded} == {"cycle-guard"}


def test_without_the_guard_the_same_clash_is_a_conflict():
    @requirement(name="deny-search")
    def deny_search(s):
        return [Rule("search", allowed=False), Rule(FINAL_ANSWER, allowed=False)]

    r = Reasoner(["search"], [deny_search, CycleGuard()])
    with pytest.raises(ConflictError) as info:
        r.decide(state(call("search", q="x"), call("search", q="x")))
    assert {e.requirement for e in info.value.core} == {"deny-search"}


def test_a_non_yielding_requirement_does_not_yield():
    class Strict(CycleGuard):
        yielding = False

    needs_search = ConditionalRequirement("search", min_invocations=5, name="needs-search")
    r = Reasoner(["search"], [Strict(name="strict-guard"), needs_search])
    with pytest.raises(ConflictError) as info:
        r.decide(state(call("search", q="x"), call("search", q="x")))
    assert {e.requirement for e in info.value.core} == {"needs-search", "strict-guard"}


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "parameter", "value"),
    [
        ({"max_strike_length": 0}, "max_strike_length", "`0`"),
        ({"max_strike_length": -1}, "max_strike_length", "`-1`"),
        ({"max_total_occurrences": 0}, "max_total_occurrences", "`0`"),
        ({"max_total_occurrences": "3"}, "max_total_occurrences", "`'3'`"),
        ({"window_size": 0}, "window_size", "`0`"),
        ({"window_size": True}, "window_size", "`True`"),
        ({"window_size": 2.5}, "window_size", "`2.5`"),
        ({"priority": 0}, "priority", "`0`"),
    ],
)
def test_invalid_parameters_are_policy_errors(kwargs, parameter, value):
    with pytest.raises(PolicyError) as info:
        CycleGuard(**kwargs)
    assert parameter in str(info.value)
    assert value in str(info.value)


def test_a_cycle_of_calls_to_an_undeclared_tool_is_not_denied() -> None:
    # The gate records refused calls to unknown tools as `denied` steps; repeating one is
    # a cycle, but there is no such tool to deny (the rule would name an unknown tool).
    reasoner = Reasoner(["a"], [CycleGuard()])
    steps = (Step(tool="zzz", status="denied"), Step(tool="zzz", status="denied"))
    assert reasoner.decide(RunState(steps=steps)).allowed == ("a", "final_answer")
    steps = (Step(tool="a"), Step(tool="a"))
    assert reasoner.decide(RunState(steps=steps)).allowed == ("final_answer",)
