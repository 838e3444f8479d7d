"""Laws of the symbolic engine in priority mode (its tiers as decision diagrams,
``symbolic_priority``): on random priority-mode policies, cycle guards among them, it gives
the explicit engine's report, or refuses the policy with a clear error where the runtime's
choice of core would decide a step; ``auto`` then gives the explicit engine's report.
"""

from __future__ import annotations

from hypothesis import event, given
from policy_strategies import PolicyCase, priority_policies
from test_check_laws import checked, comparable

from ruleengine.check.symbolic import supports
from ruleengine.check.system import System
from ruleengine.errors import PolicyError


def _agree(case: PolicyCase) -> None:
    system = System(list(case.tools), case.requirements(), mode="priority")
    if supports(system) is not None:
        event("the symbolic engine does not apply")
        return
    explicit = checked(case, "explicit")
    try:
        symbolic = checked(case, "symbolic")
    except PolicyError as exc:
        assert "gives way depends on the core" in exc.message
        event("ambiguous: refused")
        mine, theirs = comparable(checked(case, "auto"), explicit)
        assert mine == theirs
        return
    event("decided by the symbolic engine")
    mine, theirs = comparable(symbolic, explicit)
    assert mine == theirs


@given(case=priority_policies())
def test_in_priority_mode_the_engines_agree(case: PolicyCase) -> None:
    _agree(case)


@given(case=priority_policies(guards=True))
def test_in_priority_mode_the_engines_agree_with_cycle_guards(case: PolicyCase) -> None:
    _agree(case)
