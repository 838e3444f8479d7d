"""Laws of the tools a soft force adds to those every finishing history calls
(``followed.followed``) and of the requirements it shows never live (``never_live``),
against the explicit engine: explored with such a tool's calls left out (its successful
ones, for one needed so), no reachable state lets the run stop; and a requirement shown
never live is live in no reachable state.

Random policies from the shared generator and from the landmark laws' own (soft forces
after random triggers, with random priorities, counting modes and consecutive calls), each
with a requirement that waits for a call of a random tool added, so that some of them are
dead for the reason ``never_live`` sees."""

from __future__ import annotations

from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies
from stopping import assert_never_stops
from test_check_landmarks_laws import FORCING_EXAMPLES, forcing

from ruleengine.check.explicit import analyse
from ruleengine.check.followed import followed, never_live
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement, Requirement

MAX_STATES = 3000
"""States of the explicit search; a case it does not finish is skipped."""

Drawn = tuple[tuple[str, ...], list[Requirement]]


def _drawn(drawn: PolicyCase | Drawn) -> tuple[list[str], list[Requirement]]:
    if isinstance(drawn, PolicyCase):
        note(drawn.source())
        assume(drawn.mode == "strict")
        return list(drawn.tools), drawn.requirements()
    note(repr(drawn[1]))
    return list(drawn[0]), drawn[1]


def _adds_only_needed(tools: list[str], requirements: list[Requirement]) -> None:
    system = System(tools, requirements)
    relaxed = Relaxed(system.components, system.tools)
    needed, needed_ok = relaxed.needed(), relaxed.needed_ok()
    more, more_ok = followed(system, needed, needed_ok)
    assert needed <= more and needed_ok <= more_ok <= more
    for tool in sorted(more - needed):
        assert_never_stops(system, lambda t, _, tool=tool: t == tool, MAX_STATES, tool)
    for tool in sorted(more_ok - needed_ok):
        assert_never_stops(
            system, lambda t, status, tool=tool: t == tool and status == "ok", MAX_STATES, tool
        )


@given(policies(priority=False, max_requirements=6))
def test_no_run_stops_without_calling_a_tool_a_force_adds(case: PolicyCase) -> None:
    _adds_only_needed(*_drawn(case))


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing())
def test_so_where_soft_forces_set_off_and_drop_one_another(drawn: Drawn) -> None:
    _adds_only_needed(*_drawn(drawn))


@settings(max_examples=FORCING_EXAMPLES)
@given(
    st.one_of(policies(priority=False, max_requirements=5), forcing()),
    st.integers(0, 4),
    st.booleans(),
)
def test_a_requirement_shown_never_live_is_live_nowhere(
    drawn: PolicyCase | Drawn, which: int, ok_only: bool
) -> None:
    tools, requirements = _drawn(drawn)
    waiting = ConditionalRequirement(
        tools[which % len(tools)],
        min_invocations=1,
        only_success_invocations=ok_only,
        name="waits",
    )
    system = System(tools, [*requirements, waiting])
    analysis = analyse(system, max_states=MAX_STATES)
    assume(analysis.complete)
    for req in system.requirements:
        if never_live(system, req.name):
            assert req.name not in analysis.live, req.name
