"""Liveness by BDDs agrees with deciding every reachable state.

The symbolic engine decides liveness state by state on small systems (``FEW_STATES``), after
random walks and probes on larger ones; what those leave is answered by BDDs: first
``_unmasked`` (where a requirement's rules change a fact of the pass at all: outside, it is
not live), then ``_live_at`` (where the pass without it differs). Random policies are small,
so here the state-by-state paths are switched off and every requirement goes through the
BDDs; the explicit engine, which decides every state with and without each requirement's
records, is the reference."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import assume, given, note
from policy_strategies import PolicyCase, policies

from ruleengine.check import symbolic
from ruleengine.check.explicit import analyse
from ruleengine.check.symbolic import Encoding, analyse_symbolic, supports
from ruleengine.check.system import System

MAX_STATES = 3000


def _by_bdds(few_live: int) -> tuple[object, ...]:
    return (
        patch.object(symbolic, "FEW_STATES", 0),
        patch.object(symbolic, "SAMPLED", 0),
        patch.object(symbolic, "PROBES", 0),
        patch.object(symbolic, "FEW_LIVE_STATES", few_live),
    )


@given(case=policies())
def test_liveness_by_bdds_agrees_with_deciding_every_state(case: PolicyCase) -> None:
    _agrees(case, few_live=0)


@given(case=policies())
def test_liveness_decided_where_it_may_change_a_fact_agrees_too(case: PolicyCase) -> None:
    # A requirement whose rules change a fact of the pass at a few reachable states only
    # (``_unmasked``) is decided at those: the same answer as its "changes the pass" set.
    _agrees(case, few_live=MAX_STATES)


def _agrees(case: PolicyCase, *, few_live: int) -> None:
    note(case.source())
    system = System(list(case.tools), case.requirements(), mode=case.mode)  # type: ignore[arg-type]
    assume(supports(system) is None)
    reference = analyse(system, max_states=MAX_STATES, live=True)
    assume(reference.complete)
    few, sampled, probes, few_live = _by_bdds(few_live)
    with few, sampled, probes, few_live:  # type: ignore[attr-defined]
        whole = analyse_symbolic(system, encoding=Encoding(system))
        assert whole.live == reference.live
        for req in system.requirements:
            one = analyse_symbolic(system, encoding=Encoding(system), focus=f"live:{req.name}")
            assert (req.name in one.live) == (req.name in reference.live), req.name
