"""``_bdd.restricted`` and ``Layers._within``: a witness's preimages take their argument
simplified on the states within one more step, which keeps each answer and shrinks the
diagrams (on `indep-mixes-20-40-3` from 86,000 nodes to 3)."""

from __future__ import annotations

import itertools

from benchmarks._policies import chain
from ruleengine.check import _bdd
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System


def test_a_restricted_set_agrees_on_the_care_set() -> None:
    bdd = _bdd.dd.BDD()
    bdd.declare("x", "y", "z", "w")
    u = bdd.add_expr(r"(x /\ ~ y) \/ (z /\ w) \/ (~ x /\ y /\ ~ w)")
    care = bdd.add_expr(r"x \/ z")
    r = _bdd.restricted(u, care)
    assert r & care == u & care
    assert r.dag_size <= u.dag_size
    # Everywhere cared for, nothing changes; nowhere, anything may.
    assert _bdd.restricted(u, bdd.true) == u
    for bits in itertools.product([False, True], repeat=4):
        point = dict(zip(["x", "y", "z", "w"], bits, strict=True))
        if bdd.let(point, care) == bdd.true:
            assert bdd.let(point, r) == bdd.let(point, u)


def test_the_layers_unions_follow_the_layers() -> None:
    policy = chain(20, 40, 0)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    v = Verdicts(system, Encoding(system), None, None, None, 19, witness_states=16)
    v.begin()
    v._layer(4)
    assert len(v.layers) == 5
    union = v.bdd.false
    for d, layer in enumerate(v.layers):
        union |= layer
        assert v._within(d) == union
    # The last layers dropped (as ``_layers_within`` does) and others computed in their
    # place: the unions are those of the layers as they are now.
    v.layers = v.layers[:2]
    v.layers.append(v.layers[1] & v.layers[0])  # a different third layer
    assert v._within(2) == v.layers[0] | v.layers[1] | v.layers[2]
    assert v._within(1) == v.layers[0] | v.layers[1]
