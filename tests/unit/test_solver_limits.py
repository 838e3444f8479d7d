"""Solver limits fail closed with ``SolverError``; the encoding never leaks z3 objects."""

from __future__ import annotations

import pytest

from ruleengine import Reasoner, RunState, SolverError, allowed, at_least, at_most, requirement


def test_tiny_resource_limit_fails_closed_with_solver_error() -> None:
    tools = [f"t{i}" for i in range(24)]

    @requirement
    def hard(state: RunState) -> list[object]:
        return [
            at_most(11, *(allowed(t) for t in tools)),
            at_least(12, *(allowed(t) for t in tools)),
        ]

    reasoner = Reasoner(tools, [hard], rlimit=1)
    with pytest.raises(SolverError) as info:
        reasoner.decide()
    assert "could not decide" in str(info.value)
    assert info.value.hint


def test_same_query_with_enough_budget_is_decided() -> None:
    tools = [f"t{i}" for i in range(24)]

    @requirement
    def fine(state: RunState) -> list[object]:
        return [at_most(11, *(allowed(t) for t in tools))]

    p = Reasoner(tools, [fine]).decide()
    assert p.allowed[:11] == tuple(tools[:11])
    assert "t11" not in p.allowed
