"""`ruleengine explain --format json`: the pass at each step of a trace, the refused call and
why, conflicts, the permission requirements covering each call; the same verdicts and exit
codes as the text. Runs the real command in this process (``ruleengine.cli.main``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruleengine.cli import main

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "policies"
REFUNDS = str(EX / "support_refunds.toml")
TRIAGE = str(EX / "ticket_triage.toml")
EMAIL = str(EX / "email_assistant.yaml")
STEP_KEYS = {"step", "pass", "conflict", "call"}
PASS_KEYS = {
    "allowed",
    "hidden",
    "forced",
    "can_stop",
    "tool_choice",
    "reasons",
    "tools",
    "yielded",
    "notes",
}
CALL_KEYS = {"tool", "status", "allowed", "refused", "permissions"}


def explained(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["explain", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert err == ""
    data = json.loads(out)
    assert set(data) == {"policy", "trace", "final_answer", "runs", "result", "steps"}
    for step in data["steps"]:
        assert set(step) == STEP_KEYS
        if step["pass"] is not None:
            assert set(step["pass"]) == PASS_KEYS
        if step["call"] is not None:
            assert set(step["call"]) == CALL_KEYS
    return code, data


def test_a_trace_that_runs_gives_every_pass_and_call(capsys: pytest.CaptureFixture[str]) -> None:
    trace = "lookup_order,refund_policy,refund,reply,final_answer"
    code, data = explained(capsys, REFUNDS, "--trace", trace)
    assert code == 0
    assert (data["runs"], data["result"], data["final_answer"]) == (True, "runs", True)
    assert data["policy"] == REFUNDS
    assert [s["tool"] for s in data["trace"]] == [
        "lookup_order",
        "refund_policy",
        "refund",
        "reply",
    ]
    steps = data["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    first = steps[0]["pass"]
    assert first["allowed"] == ["lookup_order"] and first["forced"] == "lookup_order"
    assert first["can_stop"] is False and first["hidden"] == []
    assert first["reasons"] == {"refund": "needs `lookup_order` and `refund_policy` first"}
    (forcing, *_) = first["tools"]["lookup_order"]["decided_by"]
    assert forcing["requirement"] == "lookup-first"
    assert forcing["location"] == {"file": REFUNDS, "line": 12, "column": 1}
    assert all(s["conflict"] is None for s in steps)
    assert [s["call"]["tool"] for s in steps] == [
        "lookup_order",
        "refund_policy",
        "refund",
        "reply",
        "final_answer",
    ]
    assert all(s["call"]["allowed"] and s["call"]["refused"] is None for s in steps)
    (permission,) = steps[2]["call"]["permissions"]
    assert permission == {
        "requirement": "manager-approves-refunds",
        "priority": 10,
        "answer": "ask",
        "remembered_from": None,
        "location": {"file": REFUNDS, "line": 26, "column": 1},
    }
    assert steps[4]["pass"]["can_stop"] is True


def test_the_pass_after_the_last_call_has_no_call(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = explained(capsys, REFUNDS, "--trace", "lookup_order")
    assert code == 0 and data["final_answer"] is False
    assert [s["step"] for s in data["steps"]] == [1, 2]
    assert data["steps"][1]["call"] is None
    assert data["steps"][1]["pass"]["allowed"] == ["lookup_order", "refund_policy", "reply"]


def test_the_empty_run_is_the_first_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = explained(capsys, REFUNDS)
    assert code == 0 and data["trace"] == []
    (only,) = data["steps"]
    assert only["call"] is None and only["pass"]["forced"] == "lookup_order"


def test_a_refused_call_ends_the_steps_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = explained(capsys, REFUNDS, "--trace", "lookup_order,refund,reply")
    assert code == 1
    assert (data["runs"], data["result"]) == (False, "refused")
    assert len(data["steps"]) == 2  # nothing after the refused call
    call = data["steps"][1]["call"]
    assert call == {
        "tool": "refund",
        "status": "ok",
        "allowed": False,
        "refused": "`refund` is not allowed here (needs `refund_policy` first)",
        "permissions": [],
    }


def test_a_final_answer_the_policy_prevents_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = explained(capsys, REFUNDS, "--trace", "lookup_order,final_answer")
    assert code == 1 and data["result"] == "refused"
    call = data["steps"][-1]["call"]
    assert call["tool"] == "final_answer" and call["allowed"] is False
    assert call["refused"] == (
        "the agent may not stop here (prevented by `reply-before-finishing`)"
    )


def test_a_conflict_gives_its_kind_and_core(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = explained(capsys, TRIAGE, "--trace", "classify:error")
    assert code == 1 and data["result"] == "conflict"
    last = data["steps"][-1]
    assert last["pass"] is None and last["call"] is None
    conflict = last["conflict"]
    assert conflict["kind"] == "deadlock" and conflict["forced"] == []
    assert [e["requirement"] for e in conflict["core"]] == [
        "classify-once",
        "escalate-after-classify",
    ]
    assert [e["location"]["line"] for e in conflict["core"]] == [9, 16]
    assert conflict["hint"]
    assert data["trace"] == [{"tool": "classify", "status": "error"}]


def test_a_remembered_answer_names_the_step_it_comes_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = "read_inbox,draft_reply,send_email,send_email"
    code, data = explained(capsys, EMAIL, "--trace", trace)
    assert code == 0
    answers = [
        [(p["answer"], p["remembered_from"]) for p in s["call"]["permissions"]]
        for s in data["steps"]
        if s["call"] is not None
    ]
    assert answers == [[], [], [("ask", None)], [("approved", 3)]]


def test_the_text_is_unchanged_and_json_is_only_asked_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", REFUNDS, "--trace", "lookup_order"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{REFUNDS}: lookup_order\nbefore step 1 (no calls yet)\n")


def test_a_bad_format_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", REFUNDS, "--format", "sarif"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ruleengine: explain: argument --format: invalid choice: 'sarif'")
