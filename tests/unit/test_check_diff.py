"""``diff``: a shortest history after which two policies' passes differ, or a proof that none
does (SPEC §10). Passes are compared on allowed and hidden (as sets), forced, can_stop and
conflict-or-not; reasons and cores do not count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    Policy,
    PolicyError,
    Reasoner,
    RuleEngineError,
    RunState,
    requirement,
)
from ruleengine.check import DiffReport, PassView, diff, diff_policies

C = ConditionalRequirement


def strict(tools: list[str], reqs: list[Any]) -> tuple[list[str], list[Any], str]:
    return (tools, reqs, "strict")


def view(tools: list[str], reqs: list[Any], trace: list[Any], mode: str = "strict") -> PassView:
    """What the runtime decides after ``trace``, as diff shows it."""
    try:
        p = Reasoner(tools, reqs, mode=mode).decide(RunState.from_trace(trace))  # type: ignore[arg-type]
    except ConflictError:
        return PassView(conflict=True)
    return PassView(
        conflict=False, allowed=p.allowed, hidden=p.hidden, forced=p.forced, can_stop=p.can_stop
    )


def steps(report: DiffReport) -> list[tuple[str, str]]:
    return [(s.tool, s.status) for s in report.trace]


def assert_equivalent(report: DiffReport) -> None:
    data = report.model_dump(mode="json")
    assert json.loads(report.model_dump_json()) == data
    assert set(data) == {"old", "new", "equivalent", "complete", "trace", "difference", "stats"}
    assert data["equivalent"] is True and data["complete"] is True
    assert data["trace"] == [] and data["difference"] is None
    assert set(data["stats"]) == {"states", "seconds"}


# -- equivalent ----------------------------------------------------------------------------


def test_the_same_policy_is_equivalent_to_itself() -> None:
    old = strict(["a", "b"], [C("a", max_invocations=1, name="x")])
    new = strict(["a", "b"], [C("a", max_invocations=1, name="y")])
    assert_equivalent(diff(old, new))


def test_redundant_requirements_and_reasons_do_not_count() -> None:
    old = strict(["a", "b"], [C("a", max_invocations=1, reason="once")])
    new = strict(
        ["a", "b"],
        [C("a", max_invocations=1, reason="at most once", name="one"), C("a", max_invocations=3)],
    )
    assert_equivalent(diff(old, new))


def test_tool_order_does_not_count() -> None:
    assert_equivalent(diff(strict(["a", "b"], []), strict(["b", "a"], [])))


def test_a_tool_never_allowed_is_the_same_as_no_tool() -> None:
    assert_equivalent(diff(strict(["a", "b"], [C("b", max_invocations=0)]), strict(["a"], [])))


def test_modes_that_agree_on_plain_rules_are_equivalent() -> None:
    reqs = [C("a", max_invocations=2, name="cap")]
    assert_equivalent(diff((["a"], reqs, "strict"), (["a"], reqs, "priority")))


# -- different -------------------------------------------------------------------------------


def test_a_different_cap_differs_after_the_first_call() -> None:
    old = strict(["a", "b"], [C("a", max_invocations=1, name="x")])
    new = strict(["a", "b"], [C("a", max_invocations=2, name="y")])
    report = diff(old, new, old_name="old.toml", new_name="new.toml")
    data = report.model_dump(mode="json")
    assert data == {
        "old": "old.toml",
        "new": "new.toml",
        "equivalent": False,
        "complete": True,
        "trace": [{"tool": "a", "status": "ok"}],
        "difference": {
            "old": {
                "conflict": False,
                "allowed": ["b", "final_answer"],
                "hidden": [],
                "forced": None,
                "can_stop": True,
            },
            "new": {
                "conflict": False,
                "allowed": ["a", "b", "final_answer"],
                "hidden": [],
                "forced": None,
                "can_stop": True,
            },
        },
        "stats": data["stats"],
    }


def test_a_conflict_shows_as_conflict_only() -> None:
    nostop = C("final_answer", max_invocations=0, name="nostop")
    old = strict(["a"], [nostop, C("a", max_invocations=1, name="cap")])
    new = strict(["a"], [nostop, C("a", max_invocations=2, name="cap")])
    report = diff(old, new)
    assert steps(report) == [("a", "ok")]
    data = report.model_dump(mode="json")["difference"]
    assert data["old"] == {"conflict": True}
    assert data["new"] == {
        "conflict": False,
        "allowed": ["a"],
        "hidden": [],
        "forced": None,
        "can_stop": False,
    }


def test_different_tool_lists_differ_at_once() -> None:
    report = diff(strict(["a", "b"], []), strict(["a"], []))
    assert not report.equivalent and report.complete and report.trace == ()
    assert report.difference is not None
    assert report.difference["old"].allowed == ("a", "b", "final_answer")
    assert report.difference["new"].allowed == ("a", "final_answer")


def test_the_shortest_smallest_history_is_reported() -> None:
    # `a` and `b` both reach the difference; `a` comes first in declared order, `ok` before
    # `error`, and the history is as short as can be.
    old = strict(["a", "b"], [C("final_answer", only_after=["a", "b"], name="both")])
    new = strict(["a", "b"], [C("final_answer", only_after=["a", "b"], name="both")])
    assert_equivalent(diff(old, new))
    new = strict(
        ["a", "b"],
        [
            C("final_answer", only_after=["a", "b"], name="both"),
            C("b", only_before=["a"], name="b-first"),
        ],
    )
    report = diff(old, new)
    assert steps(report) == [("a", "ok")]
    assert report.difference is not None
    assert report.difference["old"].allowed == ("a", "b")
    assert report.difference["new"].allowed == ("a",)


def test_a_refusal_is_a_step_too() -> None:
    old = strict(["a"], [AskPermissionRequirement(["a"], remember_choices=True, name="ask")])
    report = diff(old, strict(["a"], []))
    assert steps(report) == [("a", "denied")]
    assert report.difference is not None
    assert report.difference["old"].allowed == ("final_answer",)


def test_a_deep_difference_is_found_and_replays() -> None:
    old_reqs, new_reqs = [C("b", max_invocations=30)], [C("b", max_invocations=31)]
    report = diff(strict(["a", "b"], old_reqs), strict(["a", "b"], new_reqs))
    trace = steps(report)
    assert trace == [("b", "ok")] * 30
    for n in range(len(trace)):
        assert view(["a", "b"], old_reqs, trace[:n]) == view(["a", "b"], new_reqs, trace[:n])
    assert report.difference == {
        "old": view(["a", "b"], old_reqs, trace),
        "new": view(["a", "b"], new_reqs, trace),
    }


def test_diff_policies_names_the_sources() -> None:
    old = Policy(["a"], [C("a", max_invocations=1)], source="old.toml")
    new = Policy(["a"], [C("a", max_invocations=1)], source="new.yaml")
    report = diff_policies(old, new)
    assert (report.old, report.new, report.equivalent, report.complete) == (
        "old.toml",
        "new.yaml",
        True,
        True,
    )


def test_different_budgets_are_reported_even_when_the_passes_agree() -> None:
    old = Policy(["a"], [C("a", max_invocations=1)], max_iterations=20, source="old.toml")
    new = Policy(["a"], [C("a", max_invocations=1)], max_iterations=10, source="new.toml")
    report = diff_policies(old, new)
    assert report.equivalent is True and report.complete is True  # about the passes
    assert report.budget is not None and (report.budget.old, report.budget.new) == (20, 10)
    data = report.model_dump(mode="json")
    assert data["budget"] == {"old": 20, "new": 10}
    assert set(data) == {
        "old", "new", "equivalent", "complete", "trace", "difference", "stats", "budget"
    }  # fmt: skip


def test_different_budgets_are_reported_beside_different_passes() -> None:
    old = Policy(["a"], [C("a", max_invocations=1)], max_iterations=5)
    new = Policy(["a"], [C("a", max_invocations=2)], max_iterations=6)
    data = diff_policies(old, new).model_dump(mode="json")
    assert data["equivalent"] is False and data["budget"] == {"old": 5, "new": 6}


def test_equal_budgets_add_no_key() -> None:
    policy = Policy(["a"], max_iterations=7)
    report = diff_policies(policy, policy)
    assert report.budget is None
    assert_equivalent(report)


# -- cut short, and bad input ---------------------------------------------------------------


def test_a_cut_search_is_not_a_proof() -> None:
    old = strict(["a", "b"], [C("b", max_invocations=300)])
    new = strict(["a", "b"], [C("b", max_invocations=301)])
    for options in ({"max_states": 5}, {"timeout": 1e-9}):
        report = diff(old, new, **options)
        data = report.model_dump(mode="json")
        assert data["complete"] is False and data["reason"]
        assert data["equivalent"] is True and data["difference"] is None


def test_bad_arguments_are_policy_errors() -> None:
    same = strict(["a"], [])
    with pytest.raises(PolicyError, match="timeout"):
        diff(same, same, timeout=-1)
    with pytest.raises(PolicyError, match="max_states"):
        diff(same, same, max_states=0)
    with pytest.raises(PolicyError, match="mode"):
        diff(same, (["a"], [], "fast"))  # type: ignore[arg-type]


@requirement(name="quiet")
def quiet(state: RunState) -> list[Any]:
    """No monitor, no rules."""
    return []


def test_a_requirement_without_a_monitor_is_not_a_crash() -> None:
    # A clear error, or a report that says it proves nothing; never an internal exception.
    try:
        report = diff(strict(["a"], [quiet]), strict(["a"], []))
    except RuleEngineError as exc:
        assert isinstance(exc, PolicyError) and "`quiet`" in str(exc)
        return
    assert not report.complete


# -- opaque parts: custom checks and cycle guards ------------------------------------------------


def always(state: RunState) -> bool:
    return True


def never(state: RunState) -> bool:
    return False


def replays(old: Any, new: Any, report: DiffReport) -> None:
    """The report's trace is a history both runtimes reach, after which they differ."""
    trace = [(s.tool, s.status) for s in report.trace]
    for n in range(len(trace)):
        before = view(*old, trace[:n]), view(*new, trace[:n])
        assert before[0] == before[1]
        assert all(trace[n][0] in (v.allowed or ()) for v in before)
    assert view(*old, trace) != view(*new, trace)
    assert report.difference == {"old": view(*old, trace), "new": view(*new, trace)}


def test_cycle_guards_with_other_thresholds_differ_where_they_really_do() -> None:
    from ruleengine import CycleGuard

    old = (["a", "b"], [CycleGuard()])
    new = (["a", "b"], [CycleGuard(max_strike_length=3)])
    report = diff(strict(*old), strict(*new))
    assert not report.equivalent and report.complete
    assert steps(report) == [("a", "ok"), ("a", "ok")]  # a strike of 2: only the first cycles
    replays(old, new, report)


def test_custom_checks_that_differ_are_not_proved_equivalent() -> None:
    old = (["a"], [C("a", custom_checks=always)])
    new = (["a"], [C("a", custom_checks=never)])
    report = diff(strict(*old), strict(*new))
    assert not report.equivalent and steps(report) == []
    replays(old, new, report)


def test_a_shared_custom_check_is_one_unknown_and_may_be_proved() -> None:
    old = (["a", "b"], [C("a", custom_checks=always)])
    new = (["a", "b"], [C("a", custom_checks=always), C("b", max_invocations=None)])
    report = diff(strict(*old), strict(*new))
    assert_equivalent(report)
    from ruleengine import CycleGuard

    guarded = (["a", "b"], [C("a", custom_checks=always, name="x"), CycleGuard(name="g")])
    alike = (["a", "b"], [C("a", custom_checks=always, name="x"), CycleGuard(name="h")])
    assert_equivalent(diff(strict(*guarded), strict(*alike)))


def test_a_witness_that_needs_the_opaque_values_is_never_reported_unless_it_replays() -> None:
    # Without and with a cycle guard: after `a` the guard could deny `a` abstractly, but one
    # call never cycles; the real difference comes after `a, a`.
    from ruleengine import CycleGuard

    old = (["a", "b"], [])
    new = (["a", "b"], [CycleGuard()])
    report = diff(strict(*old), strict(*new))
    assert not report.equivalent
    assert steps(report) == [("a", "ok"), ("a", "ok")]
    replays(old, new, report)


def test_when_no_history_shows_a_difference_the_search_says_it_is_not_a_proof() -> None:
    # The checks differ as functions, but they agree on every history these policies allow
    # within the bound: the unknowns make no proof possible.
    def short(state: RunState) -> bool:
        return len(state.steps) < 50

    capped = {"max_invocations": 2, "only_success_invocations": False}
    old = (["a"], [C("a", custom_checks=always, **capped)])
    new = (["a"], [C("a", custom_checks=short, **capped)])
    report = diff(strict(*old), strict(*new))
    data = report.model_dump(mode="json")
    assert data["equivalent"] is True and data["complete"] is False
    assert "custom checks or the cycle guard" in data["reason"]
    assert "every history was decided" in data["reason"]


def test_a_requirement_without_a_monitor_is_compared_on_concrete_histories() -> None:
    @requirement(name="no-b-after-a")
    def no_b_after_a(state: RunState) -> list[Any]:
        from ruleengine import Rule

        return [Rule("b", allowed=False)] if state.called("a") else []

    old = (["a", "b"], [])
    new = (["a", "b"], [no_b_after_a])
    report = diff(strict(*old), strict(*new))
    assert not report.equivalent and steps(report) == [("a", "ok")]
    replays(old, new, report)
    same = diff(strict(*new), strict(*new), max_states=50)
    assert same.equivalent and not same.complete
    assert "has no monitor" in (same.reason or "") and "history limit (50)" in (same.reason or "")


def test_a_monitor_with_wrong_check_keys_is_named() -> None:
    from ruleengine import Monitor, Rule

    class Keys(Monitor):
        checks = 1

        def __init__(self, keys: Any) -> None:
            self.keys = keys

        def initial(self) -> int:
            return 0

        def advance(self, view: Any, tool: str, status: Any) -> int:
            return 0

        def emit(self, view: Any, checks: tuple[bool, ...] = ()) -> list[Any]:
            return [Rule("a", allowed=checks[0])] if checks else []

        def check_keys(self) -> Any:
            return self.keys

    for keys, needle in (((), "one key per check"), (([1],), "unhashable key")):
        odd = requirement(name="odd", monitor=Keys(keys))(lambda state: [])
        with pytest.raises(
            PolicyError, match=rf"requirement `odd`: Keys.check_keys\(\) .*{needle}"
        ):
            diff(strict(["a"], [odd]), strict(["a"], []))
