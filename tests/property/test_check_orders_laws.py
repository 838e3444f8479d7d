"""Laws of the orders every finishing history keeps (``check/orders.py``): where they
contradict each other, no reachable state lets the run stop, under any values of the opaque
checks, as the explicit engine explores; a requirement that only keeps the stop closed
where the others' orders clash (``waits_in_vain``) is live nowhere; and a tool the orders of
the histories that would call it rule out (``Orders.never_called``) is never allowed.

Besides the shared random policies, a generator of its own: conditionals over a few tools
that order them ("only before", "only after", with either counting mode), need them
("at least"), cap them, or force them, with a cycle guard or a user requirement now and
then, so that orders and counts meet in cycles."""

from __future__ import annotations

from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from policy_strategies import PolicyCase, UserParams, drawn_conditional, policies
from stopping import assert_never_stops

from ruleengine import CycleGuard
from ruleengine.check.explicit import analyse
from ruleengine.check.orders import Orders, never_finishes, waits_in_vain
from ruleengine.check.system import System
from ruleengine.requirements import Requirement

MAX_STATES = 3000
"""States of the explicit search; a case it does not finish is skipped."""

TOOLS = ("a", "b", "c", "d")

KINDS = (
    ["only_after", "only_before"] * 3 + ["min_invocations"] * 3 + ["max_invocations", "force_after"]
)
"""The kinds of conditional drawn, weighted by repetition."""

ORDER_EXAMPLES = 600
"""Examples of the ordering generator (small policies, milliseconds each)."""


@st.composite
def ordering(draw: st.DrawFn) -> tuple[tuple[str, ...], list[Requirement]]:
    """A few tools and random conditionals over them, most of them orders and counts."""
    tools = TOOLS[: draw(st.integers(2, 4))]
    out: list[Requirement] = []
    if draw(st.integers(0, 3)) == 0:
        tool, other = draw(st.permutations(tools))[:2]
        kind = draw(st.sampled_from(["exclusive", "guard", "force", "deny"]))
        out.append(UserParams(tool, other, draw(st.integers(0, 2)), kind).build("user"))
    if draw(st.integers(0, 4)) == 0:
        out.append(CycleGuard(max_strike_length=draw(st.integers(1, 2)), name="guard"))
    for i in range(draw(st.integers(1, 7))):
        out.append(drawn_conditional(draw, tools, KINDS, f"r{i}"))
    return tools, out


def _holds(system: System) -> None:
    if never_finishes(system):
        assert_never_stops(system, lambda tool, status: False, MAX_STATES, "orders clash")
    waiting = [r.name for r in system.requirements if waits_in_vain(system, r.name)]
    orders = Orders(system)
    uncalled = [t for t in system.callable if orders.never_called(t)]
    if waiting or uncalled:
        exact = analyse(system, max_states=MAX_STATES)
        assume(exact.complete)
        assert not set(waiting) & exact.live, waiting
        assert not set(uncalled) & exact.allowed_tools, uncalled


@given(policies(max_requirements=6))
def test_orders_that_clash_leave_no_finish_on_random_policies(case: PolicyCase) -> None:
    note(case.source())
    system = System(list(case.tools), case.requirements(), mode=case.mode)
    if case.mode != "strict":
        assert not never_finishes(system)  # strict mode only
    _holds(system)


@settings(max_examples=ORDER_EXAMPLES)
@given(ordering())
def test_orders_that_clash_leave_no_finish_where_orders_meet_in_cycles(
    drawn: tuple[tuple[str, ...], list[Requirement]],
) -> None:
    tools, requirements = drawn
    note(repr(requirements))
    _holds(System(list(tools), requirements))
