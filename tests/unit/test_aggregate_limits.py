"""The solver session stays bounded: past its literal limit a fresh session takes over."""

from __future__ import annotations

import pytest

from ruleengine import Reasoner, allowed, at_most
from ruleengine import aggregate as aggregate_module
from ruleengine.rules import Emitted


def test_new_formulas_every_step_do_not_grow_the_session_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aggregate_module, "_LITERAL_LIMIT", 30)
    tools = ["a", "b", "c"]
    r = Reasoner(tools, cache_size=0)
    checks = []
    for n in range(120):
        # A formula never seen before (its repetition count differs), so a new guard literal.
        formula = at_most(n + 1, *([allowed("a")] * (n + 1)), allowed("b"))
        p = r.resolve([Emitted(formula, "growing", 10), Emitted(~allowed("c"), "fixed", 10)])
        fresh = Reasoner(tools).resolve([Emitted(formula, "growing", 10)])
        assert p.allowed == tuple(t for t in fresh.allowed if t != "c")
        checks.append(r.solver_checks)
        assert r._aggregator._session.size <= 30 + 4
    assert checks == sorted(checks)  # cumulative across resets
    assert checks[-1] >= 120
