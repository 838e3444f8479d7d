"""Every checker trace through conditions on arguments carries example values that replay
(issue 31, item 6): loaded from a policy file, each step's tool is allowed in that step's
pass and its example call admitted (``Pass.admits``), the run state built from the steps'
arguments and outputs (``RunState.from_trace`` takes them as dicts), and the last state
shows the finding. Conditions that read the run's input are one value for the whole run,
which the checker does not know: only there may a trace go without examples."""

from __future__ import annotations

from typing import Any

from condition_policies import condition_policies, load
from hypothesis import given, note

from ruleengine import ConflictError, Pass, Policy, RunState
from ruleengine.check import Finding, confirm

TRACED = ("deadlock", "forced-conflict", "no-finish", "forced-tie")


def decide(policy: Policy, steps: list[dict[str, Any]], given: str | None) -> Pass | ConflictError:
    try:
        return policy.reasoner().decide(RunState.from_trace(steps, input=given))
    except ConflictError as exc:
        return exc


def assert_replays(policy: Policy, finding: Finding) -> None:
    """The brief's replay, written out: allowed and admitted at every step, then shown."""
    steps = [s.model_dump(mode="json") for s in finding.trace]
    for n, step in enumerate(steps):
        assert set(step) <= {"tool", "status", "arguments", "output"}
        before = decide(policy, steps[:n], finding.input)
        assert isinstance(before, Pass), (n, before)
        assert step["tool"] in before.allowed, (n, before.allowed)
        admission = before.admits(step["tool"], step["arguments"])
        assert admission.ok, (n, admission.reason)
    last = decide(policy, steps, finding.input)
    if finding.id == "deadlock":
        assert isinstance(last, ConflictError) and last.kind == "deadlock"
    elif finding.id == "forced-conflict":
        assert isinstance(last, ConflictError) and finding.tool in last.forced
    elif finding.id == "forced-tie":
        assert isinstance(last, Pass) and last.forced_tie is not None
    else:
        assert isinstance(last, Pass)


@given(condition_policies())
def test_every_trace_through_conditions_carries_values_that_replay(text: str) -> None:
    note(text)
    policy = load(text)
    report = policy.check()
    reasoner = policy.reasoner()
    for finding in report.findings:
        if finding.id not in TRACED:
            continue
        note(repr(finding))
        examples = all(s.arguments is not None for s in finding.trace)
        if not examples or (not finding.trace and confirm(reasoner, finding) is not None):
            # no values found that replay: only a finding that needs particular values (of
            # the outputs, or one input for every step) may lack them, and it says so
            assert finding.depends_on_tool_outputs
            continue
        assert confirm(reasoner, finding) is None
        assert_replays(policy, finding)
        if finding.input is not None:
            # an input is named only where the trace needs one: without it, it does not show
            assert confirm(reasoner, finding.model_copy(update={"input": None})) is not None
