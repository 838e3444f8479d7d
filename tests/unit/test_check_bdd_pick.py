"""``_bdd.pick``: one assignment of a set, with CUDD's dynamic reordering left as it was.
``dd``'s own ``pick`` takes the first assignment of ``pick_iter``, which turns reordering off
while it runs and on again only at its end: reordering stayed off for good, and every later
image or preimage of the checker paid for the order of that moment."""

from __future__ import annotations

import pytest

from benchmarks._policies import conditionals
from ruleengine.check import _bdd
from ruleengine.check.projections import Projections
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System

cudd = pytest.mark.skipif(
    not hasattr(_bdd.dd.BDD(), "reorder"), reason="a BDD package without reordering"
)


@cudd
@pytest.mark.parametrize("on", [True, False])
def test_a_pick_leaves_reordering_as_it_was(on: bool) -> None:
    bdd = _bdd.dd.BDD()
    bdd.declare("x", "y", "z")
    bdd.configure(reordering=on)
    u = bdd.add_expr(r"x /\ ~ y")
    found = _bdd.pick(bdd, u)
    assert found is not None and found["x"] and not found["y"]
    assert bdd.configure()["reordering"] is on
    assert _bdd.pick(bdd, bdd.false) is None
    assert bdd.configure()["reordering"] is on


@cudd
def test_the_projections_leave_reordering_on() -> None:
    policy = conditionals(50, 100, 1)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    enc = Encoding(system)
    assert enc.reordering_now()  # this policy's many global views turn it on
    v = Verdicts(system, enc, None, None, None, 19, witness_states=64)
    v.begin()
    projections = Projections(system, enc)
    for name in sorted({c.requirement.name for c in system.components})[:20]:
        projections.narrowed(v._live_at(name))  # picks states to exclude
    assert enc.reordering_now()


def test_narrowing_gives_up_past_its_size_or_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # Asked after each pair conjoined, not only at each round's start: within one round,
    # ten conjunctions once took a question's states to six million nodes and 50 s.
    from ruleengine.check import projections

    bdd = _bdd.dd.BDD()
    bdd.declare("x", "y", "z")
    u = bdd.add_expr(r"(x /\ y) \/ z")
    monkeypatch.setattr(projections, "GROWN_NODES", u.dag_size)
    assert not projections._given_up(u, None)
    assert projections._given_up(bdd.add_expr(r"(x /\ ~ y) \/ (~ x /\ y) \/ z"), None)
    assert not projections._given_up(u, float("inf"))
    assert projections._given_up(u, float("-inf"))
