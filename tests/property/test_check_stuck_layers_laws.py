"""The one-by-one analysis's search of the first layers for the no-finish witness
(``compositional._Decider._stuck_in_layers``) decides only what holds.

On random strict policies, some with a tool that a requirement counting every call caps and
another needs to succeed (so the run is stuck once the cap is spent on failures, and not
before), the search is asked with a probe of the first state alone (so every witness is
past it): where it decides, the no-finish it gives is the explicit engine's, the same
history to the same state with the same dependence on check values, or none where the
engine finds none. And the whole one-by-one analysis, with the backward search of the
states that can finish given no time at first (so the layers are searched before it is
tried again), gives the engine's no-finish wherever it decides it.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st
from policy_strategies import policies

from ruleengine import ConditionalRequirement, Requirement
from ruleengine.check import compositional
from ruleengine.check.compositional import _Decider, analyse_compositional
from ruleengine.check.explicit import _Explorer, analyse
from ruleengine.check.symbolic import Encoding, supports
from ruleengine.check.system import System

MAX_STATES = 3000
"""States the explicit engine may take to check a drawn policy whole (else skipped)."""


@st.composite
def sometimes_stuck(draw: st.DrawFn) -> System:
    """A random strict policy, and with it (mostly) a tool capped at one or two calls of
    any status and needed to succeed once."""
    case = draw(policies(priority=False, max_tools=4, max_requirements=4))
    tools = list(case.tools)
    extra: list[Requirement] = []
    if draw(st.integers(0, 3)) > 0:
        capped = draw(st.sampled_from(tools))
        extra += [
            ConditionalRequirement(
                capped,
                max_invocations=draw(st.integers(1, 2)),
                only_success_invocations=False,
                name="cap",
            ),
            ConditionalRequirement(capped, min_invocations=1, name="need"),
        ]
    system = System(tools, [*case.requirements(), *extra])
    note(f"tools={tools} requirements={[r.name for r in system.requirements]}")
    assume(supports(system) is None)
    return system


@given(system=sometimes_stuck())
def test_the_witness_the_layers_give_is_the_engines(system: System) -> None:
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    explorer = _Explorer(system, 1, None, True)
    probe = explorer.run()
    decider = _Decider(system, Encoding(system), explorer, probe, 30, time.monotonic() + 600)
    decided = decider._stuck_in_layers()
    result = decider.result
    assert result.decided is not None
    assert decided == ("no-finish" in result.decided)
    event(f"decided: {decided}, witness: {decided and result.no_finish is not None}")
    if decided:
        assert result.no_finish == exact.no_finish


@given(system=sometimes_stuck())
def test_the_analysis_with_the_layers_first_gives_the_engines_no_finish(system: System) -> None:
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    searched: list[bool] = []
    search = _Decider._stuck_in_layers

    def recorded(decider: _Decider) -> bool:
        searched.append(search(decider))
        return searched[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compositional, "FINISH_SECONDS", 0.0)
        patch.setattr(_Decider, "_stuck_in_layers", recorded)
        found = analyse_compositional(
            system, Encoding(system), budget=30, deadline=time.monotonic() + 600, probe_states=1
        )
    event(f"layers searched: {bool(searched)}, decided there: {any(searched)}")
    if found.decided is None:  # the probe met every state: the explicit engine's own
        assert found.complete
    if found.decided is None or "no-finish" in found.decided:
        assert found.no_finish == exact.no_finish
