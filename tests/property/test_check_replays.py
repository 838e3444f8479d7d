"""A core search that replays histories refuting earlier questions gives the same report as
one that asks the engine every question (tests/unit/test_check_guesses.py has the unit
tests): a replay answers "the finding does not hold" only when it truly does not."""

from __future__ import annotations

import pytest
from hypothesis import given, note
from policy_strategies import PolicyCase, policies

from ruleengine.check import check, properties, symbolic
from ruleengine.check.system import System


def report_of(case: PolicyCase) -> dict[str, object]:
    out = check(
        list(case.tools), case.requirements(), engine="symbolic", **case.kwargs()
    ).model_dump(mode="json")
    out.pop("stats")
    return out


@given(case=policies(max_tools=4, max_requirements=5, priority=False, opaque=False, user=False))
def test_replays_never_change_a_report(case: PolicyCase) -> None:
    note(case.source())
    if symbolic.supports(System(list(case.tools), case.requirements())) is not None:
        return
    patch = pytest.MonkeyPatch()
    try:
        # Every core question goes to the engine (no short explicit search first).
        patch.setattr(properties, "QUICK_STATES", 1)
        with_replays = report_of(case)
        patch.setattr(properties, "EXAMPLES", 0)
        without = report_of(case)
    finally:
        patch.undo()
    assert with_replays == without
