"""The random walks of ``check/walks.py``: where they end (every requirement found, a round
that shows none, told to stop) and what they refuse; the laws on random policies are in
tests/property/test_check_walks_laws.py."""

from __future__ import annotations

import pytest
from deciders import first_state_only

from ruleengine import ConditionalRequirement, Requirement, RunState
from ruleengine.check import compositional, walks
from ruleengine.check.explicit import analyse, callable_at, walk
from ruleengine.check.system import System
from ruleengine.check.walks import ROUND_STATES, WALK_STEPS, live_on_walks


def _chain(length: int) -> list[Requirement]:
    """`t{i+1}` only after a call of `t{i}`, for ``length`` tools."""
    return [
        ConditionalRequirement(f"t{i + 1}", only_after=[f"t{i}"], name=f"chain-{i + 1}")
        for i in range(length - 1)
    ]


def _never() -> bool:
    return False


def test_a_deep_requirement_is_shown_live_with_a_history_to_where_it_is() -> None:
    # `never-t5` denies `t5` for good: it changes the pass only once `t4` was called,
    # four calls deep along the chain.
    reqs = [*_chain(6), ConditionalRequirement("t5", max_invocations=0, name="never-t5")]
    system = System([f"t{i}" for i in range(6)], reqs)
    found = live_on_walks(system, {"never-t5"}, _never)
    history = found.live["never-t5"]
    assert "t4" in {tool for tool, _ in history}  # only a call of `t4` lets it deny
    state = walk(system, history)
    assert state is not None and "t5" not in callable_at(system, state)
    assert set(found.allowed) == {f"t{i}" for i in range(5)}  # `t5` never is
    for tool, before in found.allowed.items():
        state = walk(system, before)
        assert state is not None and tool in callable_at(system, state)


def _always(state: RunState) -> bool:
    return True


def test_a_state_with_opaque_checks_is_decided_under_one_valuation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two requirements with a custom check each: every state may emit 2**2 sets of
    # records. A walk decides one of them per state, drawn like its steps (four cycle
    # guards at 20 tools: 1,620 states in 5.9 s deciding every set, 0.6 s one), and still
    # shows live the requirement that denies `b` only where its check holds.
    reqs = [
        ConditionalRequirement("a", max_invocations=3, custom_checks=[_always], name="a-3"),
        ConditionalRequirement("b", max_invocations=0, custom_checks=[_always], name="no-b"),
        ConditionalRequirement("c", max_invocations=5, name="c-5"),
    ]
    system = System(["a", "b", "c"], reqs)
    assert len(list(system.variants(system.initial))) == 4
    decided: list[object] = []
    decide = walks.decide

    def counted(system: System, records: object) -> object:
        decided.append(records)
        return decide(system, records)  # type: ignore[arg-type]

    monkeypatch.setattr(walks, "decide", counted)
    # "`c` at most 5 times" is never live in walks of three calls: a whole round is walked.
    found = live_on_walks(system, {"no-b", "c-5"}, _never, steps=4, round_states=8)
    assert found.states >= 8 and len(decided) == found.states
    assert set(found.live) == {"no-b"}
    for tool, before in found.allowed.items():
        state = walk(system, before)
        assert state is not None and tool in callable_at(system, state)


def test_walks_end_after_a_round_that_shows_nothing() -> None:
    # "`a` at most 5 times" changes a pass only after five calls of `a`: walks of two
    # steps never get there, and the first round of 50 states that shows nothing ends them.
    reqs = [ConditionalRequirement("a", max_invocations=5, name="five")]
    system = System(["a", "b"], reqs)
    found = live_on_walks(system, {"five"}, _never, steps=2, round_states=50)
    assert found.live == {}
    assert 50 <= found.states < 52


def test_walks_stop_when_told() -> None:
    reqs = [ConditionalRequirement("a", max_invocations=5, name="five")]
    system = System(["a", "b"], reqs)
    asked = [0]

    def stop() -> bool:
        asked[0] += 1
        return asked[0] > 7

    found = live_on_walks(system, {"five"}, stop, steps=3)
    assert found.states == 7
    assert live_on_walks(system, {"five"}, lambda: True).states == 0


def test_nothing_wanted_decides_no_state() -> None:
    system = System(["a"], [ConditionalRequirement("a", max_invocations=1, name="once")])
    assert live_on_walks(system, set(), _never).states == 0


@pytest.mark.parametrize(("steps", "round_states"), [(0, 10), (5, 0), (-1, -1)])
def test_walks_of_no_steps_are_refused(steps: int, round_states: int) -> None:
    system = System(["a"], [ConditionalRequirement("a", max_invocations=1, name="once")])
    with pytest.raises(ValueError, match="must be positive"):
        live_on_walks(system, {"once"}, _never, steps=steps, round_states=round_states)


def test_the_one_by_one_analysis_takes_what_the_walks_show(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The breadth-first probe sees the first state alone; the walks show the chain's
    # requirements live, so `_live` builds no diagram for them.
    reqs = [*_chain(6), ConditionalRequirement("t5", max_invocations=0, name="never-t5")]
    system = System([f"t{i}" for i in range(6)], reqs)
    decider = first_state_only(system)
    asked: list[str] = []
    live_at = decider.verdicts._live_at

    def recorded(name: str) -> object:
        asked.append(name)
        return live_at(name)

    monkeypatch.setattr(decider.verdicts, "_live_at", recorded)
    decider._live_walked()
    decider._live()
    result = decider.result
    assert result.decided is not None
    assert "never-t5" in result.live and "live:never-t5" in result.decided
    assert "never-t5" not in asked
    assert walk(system, result.firsts["live:never-t5"]) is not None


def test_the_one_by_one_analysis_walks_no_longer_than_its_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With no seconds to walk (``WALK_MOST``, which holds with a deadline ten minutes away
    # and without one), no state is walked: the walks decide nothing beyond the probe's.
    monkeypatch.setattr(compositional, "WALK_MOST", 0.0)
    reqs = [*_chain(6), ConditionalRequirement("t5", max_invocations=0, name="never-t5")]
    system = System([f"t{i}" for i in range(6)], reqs)
    for deadline in (True, False):
        decider = first_state_only(system)
        if not deadline:
            decider.deadline = None
        assert decider.result.decided is not None
        before = (set(decider.result.live), set(decider.result.decided))
        decider._live_walked()
        assert (decider.result.live, decider.result.decided) == before, deadline
        assert "never-t5" not in decider.result.live


def test_a_single_question_walks_one_short_round_where_it_shows_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A core search asks about one requirement, most often never live: the walks give up
    # after one round of ``WALK_ASKED_ROUND`` states, where a whole analysis walks rounds
    # of ``ROUND_STATES``; and they walk for that requirement alone. "`t3` only after
    # `t0`" is never live: the chain already holds `t3` back until `t2`, after `t1`, `t0`.
    reqs = [*_chain(4), ConditionalRequirement("t3", only_after=["t0"], name="redundant")]
    system = System([f"t{i}" for i in range(4)], reqs)
    reference = analyse(system)
    assert reference.complete and "redundant" not in reference.live
    seen: list[tuple[set[str], int]] = []

    def recorded(system: System, wanted: set[str], stop: object, **kwargs: int) -> object:
        found = live_on_walks(system, wanted, stop, **kwargs)  # type: ignore[arg-type]
        seen.append((set(wanted), found.states))
        return found

    monkeypatch.setattr(compositional, "live_on_walks", recorded)
    monkeypatch.setattr(compositional, "WALK_ASKED_ROUND", 30)
    asked = first_state_only(system)
    asked.asked = "live:redundant"
    asked._live_walked()
    whole = first_state_only(system)
    whole._live_walked()
    (asked_for, asked_states), (whole_for, whole_states) = seen
    assert asked_for == {"redundant"} and "redundant" in whole_for
    assert 30 <= asked_states < 30 + WALK_STEPS
    assert whole_states >= ROUND_STATES
