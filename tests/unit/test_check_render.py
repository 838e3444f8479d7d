"""The text renderers of check/render.py: what people read of reports, diffs and traces."""

from __future__ import annotations

import re

import pytest

from ruleengine import AskPermissionRequirement, ConditionalRequirement, Policy
from ruleengine.check import DiffReport, Report, Stats, TraceStep, replay
from ruleengine.check.render import numbered, steps_text, text_diff, text_explain, text_report
from ruleengine.check.report import Budgets
from ruleengine.check.trace import parse_trace, permissions


def summary(states: int) -> str:
    report = Report(policy="p.toml", complete=True, stats=Stats(states=states, seconds=0.5))
    return text_report(report).splitlines()[-1]


@pytest.mark.parametrize(
    ("states", "shown"),
    [
        (1, "1 state"),
        (32, "32 states"),
        (10**6, "1000000 states"),
        (10**6 + 1, "~1.0e6 states"),
        (4_782_969, "~4.8e6 states"),
        (12 * 10**143, "~1.2e144 states"),
        (3**1000, "~1.3e477 states"),  # past what a float holds
    ],
)
def test_state_counts_above_a_million_are_rounded(states: int, shown: str) -> None:
    assert summary(states).endswith(f" · {shown} · 0.50 s")


def test_json_keeps_the_exact_count() -> None:
    report = Report(policy="p.toml", complete=True, stats=Stats(states=3**300, seconds=0.5))
    assert report.model_dump(mode="json")["stats"]["states"] == 3**300


def test_a_diff_rounds_its_state_count_too() -> None:
    report = DiffReport(
        old="a", new="b", equivalent=True, complete=True, stats=Stats(states=5 * 10**9, seconds=1)
    )
    assert text_diff(report).endswith("complete: this is a proof · ~5.0e9 states · 1.00 s")


# -- diff: budgets -----------------------------------------------------------------------------


def diff_report(**fields: object) -> DiffReport:
    base: dict[str, object] = {
        "old": "a.toml",
        "new": "b.toml",
        "equivalent": True,
        "complete": True,
        "stats": Stats(states=3, seconds=0.01),
    }
    return DiffReport(**{**base, **fields})


def test_a_diff_of_budgets_only_says_so() -> None:
    text = text_diff(diff_report(budget=Budgets(old=20, new=10)))
    assert text.splitlines() == [
        "a.toml and b.toml differ only in their budgets: no history of any length gives them "
        "different passes",
        "  budget: max_iterations 20 (old), 10 (new)",
        "  complete: this is a proof · 3 states · 0.01 s",
    ]


def test_an_incomplete_diff_with_other_budgets_says_both() -> None:
    text = text_diff(
        diff_report(
            complete=False, reason="the state limit (2) was reached", budget=Budgets(old=1, new=2)
        )
    )
    assert text.splitlines() == [
        "a.toml and b.toml: only their budgets differ so far",
        "  budget: max_iterations 1 (old), 2 (new)",
        "  incomplete (the state limit (2) was reached): not a proof · 3 states · 0.01 s",
    ]


def test_equal_budgets_print_no_budget_line() -> None:
    assert "budget" not in text_diff(diff_report())


# -- explain: asking permission ----------------------------------------------------------------


def explained(policy: Policy, trace_text: str) -> str:
    trace, _ = parse_trace(trace_text, policy.tools)
    outcomes = replay(policy.reasoner(), trace)
    text, _ = text_explain(policy, trace, outcomes, asking=permissions(policy.requirements, trace))
    return text


POLICY = Policy(
    ["search", "send", "pay"],
    [
        AskPermissionRequirement(include=["send", "pay"], remember_choices=True, name="user"),
        AskPermissionRequirement(include=["pay"], always_allow=True, name="auto", priority=5),
        AskPermissionRequirement(include=["search"], enabled=False, name="off"),
        ConditionalRequirement("pay", only_after="send"),
    ],
)


def permission_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"(step \d|  permission:)", line)]


def test_each_step_names_the_permissions_covering_its_tool() -> None:
    text = explained(POLICY, "search,send,pay,send")
    assert permission_lines(text) == [
        "step 1: search: allowed",
        "step 2: send: allowed",
        "  permission: user (priority 10): asks before the call runs",
        "step 3: pay: allowed",
        "  permission: user (priority 10): asks before the call runs",
        "  permission: auto (priority 5): approves without asking (always_allow)",
        "step 4: send: allowed",
        "  permission: user (priority 10): approves without asking: the answer to step 2 is "
        "remembered",
    ]


def test_a_remembered_refusal_is_named_where_the_pass_still_allows_the_tool() -> None:
    policy = Policy(
        ["send"],
        [
            AskPermissionRequirement(include="send", remember_choices=True, name="user"),
            ConditionalRequirement("send", name="always", priority=20),
        ],
        mode="priority",
    )
    text = explained(policy, "send:denied,send")
    assert permission_lines(text)[-1] == (
        "  permission: user (priority 10): refuses without asking: the answer to step 1 is "
        "remembered"
    )


def test_a_long_core_is_cut_in_text_and_whole_in_json() -> None:
    from ruleengine import ConditionalRequirement, Policy
    from ruleengine.check import check_policy
    from ruleengine.check.render import CORE_LINES, text_report

    tools = [f"t{i}" for i in range(CORE_LINES + 6)]
    # Every tool after the next one, in a ring: all dead, and every one needed for each.
    ring = [
        ConditionalRequirement(t, only_after=[tools[(i + 1) % len(tools)]], name=f"r{i:02}")
        for i, t in enumerate(tools)
    ]
    policy = Policy(tools, ring)
    report = check_policy(policy)
    dead = [f for f in report.findings if f.id == "dead-tool"]
    assert dead and len(dead[0].core) == len(tools)
    text = text_report(report, policy)
    assert text.count("… and 6 more (`--format json` lists them all)") == len(dead)
    assert "r25 (conditional" not in text.split("dead-tool")[1].split("hint:")[0]


def test_a_long_run_of_one_step_prints_as_one_line() -> None:

    a, b = TraceStep(tool="a"), TraceStep(tool="b", status="error")
    trace = [b, *[a] * 100_000, b, a, a, a]
    assert numbered(trace) == [
        "1. b (error)",
        "2–100001. a (100000 times)",
        "100002. b (error)",
        "100003. a",
        "100004. a",
        "100005. a",
    ]
    assert steps_text(trace) == "b (error), a × 100000, b (error), a, a, a"
    # steps with example values differ, and print one by one
    valued = [a.model_copy(update={"arguments": {"n": i}}) for i in range(5)]
    assert len(numbered(valued)) == 5
