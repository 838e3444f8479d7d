"""The backward chaining toward the states that may stop (``Chase``): cut short any number
of times and run again, it ends with the set one uninterrupted run gives, stepping back
from no state twice; the compositional analysis goes on with the chaining it cut short
rather than starting again."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from benchmarks._policies import conditionals
from ruleengine.check import compositional
from ruleengine.check.compositional import PROBE_STATES, _Decider
from ruleengine.check.explicit import _Explorer
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_layers import _OutOfTime
from ruleengine.check.symbolic_verdicts import Chase, Verdicts
from ruleengine.check.system import System


def _verdicts(seed: int) -> tuple[System, Encoding, Verdicts]:
    policy = conditionals(20, 40, seed)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    enc = Encoding(system)
    verdicts = Verdicts(system, enc, None, None, None, 19, witness_states=16)
    verdicts.begin()
    return system, enc, verdicts


def _counting(monkeypatch: pytest.MonkeyPatch, verdicts: Verdicts) -> list[int]:
    """A list whose length is the preimages ``verdicts`` has taken since."""
    taken: list[int] = []
    preimage = verdicts._preimage

    def counted(*args: Any) -> Any:
        taken.append(1)
        return preimage(*args)

    monkeypatch.setattr(verdicts, "_preimage", counted)
    return taken


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("every", [1, 2, 5])
def test_a_chase_cut_short_ends_where_one_run_does(
    monkeypatch: pytest.MonkeyPatch, seed: int, every: int
) -> None:
    _, enc, verdicts = _verdicts(seed)
    stop = verdicts.some(verdicts.pass_.can_stop)
    taken = _counting(monkeypatch, verdicts)
    whole = Chase(verdicts, stop, enc.bdd.true).run()
    steps = len(taken)
    assert steps > 2  # a chain of steps back, not an answer at once
    taken.clear()
    chase = Chase(verdicts, stop, enc.bdd.true)
    asked = itertools.count(1)
    cuts = 0
    while True:
        try:
            found = chase.run(lambda: next(asked) % (every + 1) == 0)
            break
        except _OutOfTime:
            cuts += 1
    assert found == whole
    assert cuts >= steps // every - 1
    assert len(taken) == steps  # nothing stepped back from twice
    assert chase.run(lambda: True) == whole  # once done, the answer without a step


def test_the_compositional_analysis_goes_on_with_the_chase_it_cut_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system, enc, _ = _verdicts(1)
    explorer = _Explorer(system, PROBE_STATES, None, True)
    probe = explorer.run()
    decider = _Decider(system, enc, explorer, probe, 19, time.monotonic() + 600)
    v = decider.verdicts
    stop = v.some(v.pass_.can_stop)
    whole = Chase(v, stop, decider.projections.reached).run()
    taken = _counting(monkeypatch, v)
    # The first try, cut short after two preimages.
    monkeypatch.setattr(compositional, "MANAGER_EVERY", 1)
    monkeypatch.setattr(compositional, "MANAGER_NODES", 10**9)
    real = Chase.run

    def cut(self: Chase, give_up: Any = None) -> Any:
        return real(self, lambda: len(taken) >= 2)

    monkeypatch.setattr(Chase, "run", cut)
    assert decider._can_finish(None) is None
    assert len(taken) == 2 and decider.can_finish is None
    monkeypatch.setattr(Chase, "run", real)
    assert decider._can_finish(None) == whole
    first = len(taken)
    # The same chaining from the start takes as many preimages as the two tries together.
    taken.clear()
    assert Chase(v, stop, decider.projections.reached).run() == whole
    assert len(taken) == first
