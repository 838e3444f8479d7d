"""Liveness at a state (``explicit.live_at``, used by both engines): a requirement is live
where dropping its records changes the decision (SPEC §8). The law against separate
reasoners per requirement is in tests/property/test_check_laws.py (bounded enumeration)."""

from __future__ import annotations

import pytest

from ruleengine.aggregate import Clash
from ruleengine.check import explicit
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement as C


def test_at_a_conflict_only_requirements_in_its_core_are_decided_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `F` forces `a`, `D` denies it: a conflict whose core is theirs. `E` and `G` emit rules
    # too but are not in the core, so dropping either leaves the conflict: not live there.
    reqs = [
        C("a", force_at_step=1, only_success_invocations=False, name="F"),
        C("a", max_invocations=0, name="D"),
        C("b", max_invocations=1, name="E"),
        C("c", only_after=["b"], name="G"),
    ]
    system = System(["a", "b", "c"], reqs)
    ((records, _),) = system.variants(system.initial)
    outcome = explicit.decide(system, records)
    assert isinstance(outcome, Clash)
    assert {e.requirement for e in outcome.core} == {"F", "D"}
    decided: list[frozenset[str]] = []
    real = explicit.decide

    def spy(sys_: System, rs: tuple[object, ...]) -> object:
        decided.append(frozenset(e.requirement for e in rs))  # type: ignore[attr-defined]
        return real(sys_, rs)  # type: ignore[arg-type]

    monkeypatch.setattr(explicit, "decide", spy)
    every = {"F", "D", "E", "G"}
    live = explicit.live_at(system, records, outcome, every, {})
    assert live == {"F", "D"}
    assert sorted(map(sorted, decided)) == [["D", "E", "G"], ["E", "F", "G"]]
    # The runtime agrees: without `E` or `G` the state still conflicts.
    for name in ("E", "G"):
        rest = tuple(e for e in records if e.requirement != name)
        assert isinstance(real(system, rest), Clash)
