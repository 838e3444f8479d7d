"""Laws of the relaxed product (``check/relaxed.py``) on random strict policies:

* it over-approximates: every tool the explicit engine finds allowed in some reachable state
  is counted callable, by the whole system and by any part of it;
* a needed tool is called before every stop: without its calls no run may stop;
* a closing set is a real dead-tool set: the subsystem keeping only its requirements never
  allows the tool (explicit engine), and it is minimal in the relaxed product (without any
  one member the tool is counted callable again).

Unit tests: tests/unit/test_check_relaxed.py."""

from __future__ import annotations

from hypothesis import assume, event, given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies
from stopping import assert_never_stops

from ruleengine import FINAL_ANSWER
from ruleengine.check.explicit import analyse
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement as C

MAX_STATES = 3000
"""States of the explicit search; a case it does not finish is skipped."""


def _system(case: PolicyCase) -> System:
    note(case.source())
    assume(case.mode == "strict")
    return System(list(case.tools), case.requirements())


def _allowed(system: System) -> set[str]:
    analysis = analyse(system, max_states=MAX_STATES, live=False)
    assume(analysis.complete)
    return analysis.allowed_tools - {FINAL_ANSWER}


@given(policies(priority=False, max_requirements=6), st.data())
def test_the_relaxed_product_counts_every_allowed_tool_callable(
    case: PolicyCase, data: st.DataObject
) -> None:
    system = _system(case)
    relaxed = Relaxed(system.components, system.tools)
    assert _allowed(system) <= relaxed.callable()
    # Any part of the components: their subsystem allows no tool the part does not count.
    members = data.draw(
        st.sets(st.sampled_from(range(len(system.components))))
        if system.components
        else st.just(set())
    )
    part = sorted(members)
    sub = system.subsystem([system.components[i].requirement.name for i in part])
    assert _allowed(sub) <= relaxed.callable(part)


@given(policies(priority=False, max_requirements=6))
def test_no_run_stops_without_calling_a_needed_tool(case: PolicyCase) -> None:
    # Explored without the needed tool's calls, no reachable state lets the run stop.
    system = _system(case)
    needed = Relaxed(system.components, system.tools).needed()
    for tool in sorted(needed):
        assert_never_stops(system, lambda t, _, tool=tool: t == tool, MAX_STATES, tool)


@given(policies(priority=False, max_requirements=6), st.data())
def test_the_needed_tools_of_a_part_asked_of_the_whole_are_the_parts_own(
    case: PolicyCase, data: st.DataObject
) -> None:
    # Asked with ``members`` and ``tools``, the relaxed product of the whole answers as
    # that of the subsystem would, restricted to those tools.
    system = _system(case)
    whole = Relaxed(system.components, system.tools)
    indices = range(len(system.components))
    part = sorted(data.draw(st.sets(st.sampled_from(indices)) if indices else st.just(set())))
    tools = data.draw(st.sets(st.sampled_from(system.tools)))
    names = {system.components[i].requirement.name for i in part}
    # A requirement with several components is kept or dropped whole.
    part = [i for i, c in enumerate(system.components) if c.requirement.name in names]
    sub = system.subsystem(sorted(names))
    own = Relaxed(sub.components, sub.tools)
    assert whole.needed(part, tools) == own.needed() & tools
    assert whole.needed_ok(part, tools) == own.needed_ok() & tools
    assert whole.needed(None, None) == whole.needed()


@given(policies(priority=False, max_requirements=6))
def test_a_closing_set_is_a_minimal_relaxed_core_and_a_real_dead_tool_set(
    case: PolicyCase,
) -> None:
    system = _system(case)
    relaxed = Relaxed(system.components, system.tools)
    earlier: list[list[int]] = []
    for tool in system.callable:
        before = [list(found) for found in earlier]
        closing = relaxed.closing(tool, earlier)
        if closing is None:
            assert tool in relaxed.callable()
            continue
        event("a tool closed")
        assert tool not in relaxed.callable()
        assert tool not in relaxed.callable(closing)
        for member in closing:
            assert tool in relaxed.callable([i for i in closing if i != member])
        names = [system.components[i].requirement.name for i in closing]
        assert tool not in _allowed(system.subsystem(names))
        assert closing in earlier
        assert relaxed.closing(tool, before) == closing  # deterministic: its arguments alone


@given(policies(priority=False, max_requirements=5))
def test_a_set_that_keeps_a_tool_closed_until_another_runs_makes_that_rule_dead(
    case: PolicyCase,
) -> None:
    # The guess for a dead "`tool` only after `first`": the requirements that already keep
    # `tool` closed until `first` runs. Added to them, that rule changes no pass.
    system = _system(case)
    relaxed = Relaxed(system.components, system.tools)
    for tool in system.callable:
        for first in system.callable:
            for succeeded in (True, False):
                closing = relaxed.closed_until(tool, first, (), succeeded=succeeded)
                if closing is None:
                    continue
                event("closed until another runs")
                assert tool != first
                for member in closing:  # minimal: without any one member it opens
                    others = [
                        i for i in range(len(system.components)) if i not in closing or i == member
                    ]
                    assert relaxed.closed_until(tool, first, others, succeeded=succeeded) is None
                kept = [system.components[i].requirement for i in closing]
                probe = C(
                    tool, only_after=[first], only_success_invocations=succeeded, name="probe"
                )
                sub = System([t for t in system.tools if t != FINAL_ANSWER], [*kept, probe])
                analysis = analyse(sub, max_states=MAX_STATES, live=True)
                assume(analysis.complete)
                assert "probe" not in analysis.live
