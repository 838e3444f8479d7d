"""Laws of the symbolic engine in priority mode (its tiers as decision diagrams,
``symbolic_priority``): on random priority-mode policies, cycle guards among them, it gives
the explicit engine's report, or refuses the policy with a clear error where the runtime's
choice of core would decide a step; ``auto`` then gives the explicit engine's report.
"""

from __future__ import annotations

from functools import reduce

from hypothesis import event, given
from hypothesis import strategies as st
from policy_strategies import PolicyCase, priority_policies
from test_check_laws import checked, comparable

from ruleengine.check._bdd import dd
from ruleengine.check.symbolic import supports
from ruleengine.check.symbolic_priority import _Denied
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


@st.composite
def _denial_tables(draw: st.DrawFn) -> tuple[int, dict[int, int], int]:
    """A number of tools, per tool (some left out: denied nowhere) a function of three
    variables as its truth table, and a unit's own denials (a mask over the tools)."""
    n = draw(st.integers(1, 7))
    table = draw(st.dictionaries(st.integers(0, n - 1), st.integers(0, 255), max_size=n))
    return n, table, draw(st.integers(0, (1 << n) - 1))


@given(case=_denial_tables())
def test_where_every_tool_is_denied_is_the_plain_conjunction(
    case: tuple[int, dict[int, int], int],
) -> None:
    """``_Denied.every``, from its prefix and suffix conjunctions, is the conjunction of the
    denials of every tool the unit leaves (false where one of them is denied nowhere), for
    every unit asked of one table in turn."""
    n, truth, besides = case
    bdd = dd.BDD()
    bdd.declare("a", "b", "c")
    cubes = [
        bdd.add_expr(f"{'' if k & 1 else '~'}a & {'' if k & 2 else '~'}b & {'' if k & 4 else '~'}c")
        for k in range(8)
    ]
    tools = [f"t{i}" for i in range(n)]
    deny = {
        tools[i]: reduce(lambda u, k: u | cubes[k] if bits >> k & 1 else u, range(8), bdd.false)
        for i, bits in truth.items()
    }
    denied = _Denied(bdd, tools, deny)
    ends = 1 | 1 << (n - 1)  # the first and the last tool: every other one between
    for mask in (besides, 0, besides ^ ((1 << n) - 1), ends, besides):
        plain = bdd.true
        for i, t in enumerate(tools):
            if not mask >> i & 1:
                plain &= deny.get(t, bdd.false)
        assert denied.every(mask) == plain
