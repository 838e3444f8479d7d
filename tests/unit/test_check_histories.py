"""Real histories to a goal (``check/histories.py``): a finishing history with its detours
taken out (``shortened``) still replays and still lets the run stop, and no single step of
what is left can be dropped; a requirement waiting for a tool is shown live along a
finishing history with that tool's calls left out, or failing (``along``); a history
followed from another state leaves out the steps not allowed there (``Finishing.skipping``),
and one step replayed backward through the diagrams gives the states it leads from
(``Layers.event_preimage``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ruleengine import ConditionalRequirement as C
from ruleengine.check.explicit import asking_of, decide, live_at, reaches, walk
from ruleengine.check.histories import Finishing, Outcomes, along, shortened, toward
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass


def _chain() -> System:
    """`c` only after `b`, `b` only after `a`, and `c` needed: a finish takes `a, b, c`."""
    return System(
        ["a", "b", "c", "x", "y"],
        [
            C("b", only_after=["a"], name="b-after-a"),
            C("c", only_after=["b"], name="c-after-b"),
            C("c", min_invocations=1, name="need-c"),
            C("y", force_after=["x"], name="y-after-x"),
        ],
    )


def test_detours_are_taken_out() -> None:
    system = _chain()
    detour: tuple[Event, ...] = (
        ("x", "ok"),
        ("y", "ok"),  # forced after `x`
        ("a", "error"),
        ("a", "ok"),
        ("b", "ok"),
        ("x", "ok"),
        ("y", "ok"),
        ("c", "ok"),
    )
    assert reaches(system, detour, FINAL_ANSWER)
    assert shortened(system, detour) == (("a", "ok"), ("b", "ok"), ("c", "ok"))


def test_a_forced_step_stays_when_its_trigger_stays() -> None:
    # `c` is needed and only after `x`, and `x` forces `y` next: dropping `y` would call
    # `c` where only `y` is allowed.
    system = System(
        ["x", "y", "c"],
        [
            C("y", force_after=["x"], name="y-after-x"),
            C("c", only_after=["x"], name="c-after-x"),
            C("c", min_invocations=1, name="need-c"),
        ],
    )
    history: tuple[Event, ...] = (("y", "ok"), ("x", "ok"), ("y", "ok"), ("c", "ok"))
    assert reaches(system, history, FINAL_ANSWER)
    assert shortened(system, history) == (("x", "ok"), ("y", "ok"), ("c", "ok"))


def test_a_shortest_history_is_kept_as_it_is() -> None:
    system = _chain()
    history: tuple[Event, ...] = (("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert shortened(system, history) == history
    assert shortened(system, ()) == ()  # stopping at once: nothing to take out


@given(st.lists(st.sampled_from(["a", "b", "c", "x", "y"]), max_size=12))
def test_what_is_left_replays_finishes_and_has_no_step_to_spare(tools: list[str]) -> None:
    system = _chain()
    # A finishing history made of the drawn calls, each taken when allowed, then `a, b, c`.
    taken: list[Event] = []
    for tool in [*tools, "a", "b", "c"]:
        if walk(system, (*taken, (tool, "ok"))) is not None:
            taken.append((tool, "ok"))
    if not reaches(system, tuple(taken), FINAL_ANSWER):
        return  # a force left pending at the end: not a finishing history
    short = shortened(system, taken)
    assert reaches(system, short, FINAL_ANSWER)
    assert _subsequence(short, taken)
    for i in range(len(short)):
        assert not reaches(system, short[:i] + short[i + 1 :], FINAL_ANSWER)


def _subsequence(short: tuple[Event, ...], long: list[Event]) -> bool:
    rest = iter(long)
    return all(any(e == f for f in rest) for e in short)


def _live(system: System, name: str) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        ((records, _),) = system.variants(state)
        outcome = decide(system, records)
        return bool(live_at(system, records, outcome, {name}, asking_of(system)))

    return goal


def test_a_demand_is_live_where_its_tool_failed_and_everything_else_is_done() -> None:
    # `u` needs `t` called (any status), and both are needed, `t` successfully: `need-t`
    # changes the pass only after `t` failed and `u` ran. Leaving `t` out blocks `u`.
    system = System(
        ["t", "u"],
        [
            C("t", min_invocations=1, name="need-t"),
            C("u", min_invocations=1, name="need-u"),
            C("u", only_after=["t"], only_success_invocations=False, name="u-after-t"),
        ],
    )
    finishing: tuple[Event, ...] = (("t", "ok"), ("u", "ok"))
    assert reaches(system, finishing, FINAL_ANSWER)
    goal = _live(system, "need-t")
    assert along(system, [finishing], {"t"}, goal) == (("t", "error"), ("u", "ok"))
    # Without its calls of `t` left out or failing, no prefix shows it.
    assert along(system, [finishing], set(), goal) is None


def test_a_demand_is_live_where_its_tool_is_left_out() -> None:
    system = System(
        ["t", "u"],
        [C("t", min_invocations=1, name="need-t"), C("u", min_invocations=1, name="need-u")],
    )
    finishing: tuple[Event, ...] = (("t", "ok"), ("u", "ok"))
    assert along(system, [finishing], {"t"}, _live(system, "need-t")) == (("u", "ok"),)


def test_outcomes_remembered_across_replays_are_the_ones_decided_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One `Outcomes` shared by the replays for several goals (as the quick pass shares it
    # for every open requirement), and one that holds two states at most: each replay
    # finds what a replay deciding every state afresh finds.
    system = _chain()
    paths: list[tuple[Event, ...]] = [
        (("x", "ok"), ("y", "ok"), ("a", "ok"), ("b", "ok"), ("c", "ok")),
        (("a", "error"), ("a", "ok"), ("x", "ok"), ("c", "ok"), ("b", "ok")),
    ]
    goals = {name: _live(system, name) for name in ("b-after-a", "c-after-b", "y-after-x")}
    goals["never"] = lambda state: False
    shared = Outcomes(system)
    monkeypatch.setattr(Outcomes, "MOST_VIEWS", 2 * len(system.components) + 1)
    small = Outcomes(system)
    assert small.most == 2
    found = 0
    for watched in (set(), {"a"}, {"b", "x"}):
        for goal in goals.values():
            fresh = along(system, paths, watched, goal)
            assert along(system, paths, watched, goal, shared) == fresh
            assert along(system, paths, watched, goal, small) == fresh
            found += fresh is not None
    assert found == 9  # each requirement's replays show it live; `never`'s nothing
    assert len(small._known) <= 2
    for state in list(shared._known):
        assert shared(state) == [decide(system, records) for records, _ in system.variants(state)]


def test_a_history_followed_from_another_state_leaves_out_the_steps_not_allowed() -> None:
    system = System(
        ["a", "b", "c"],
        [
            C("a", max_invocations=1, name="a-once"),
            C("c", only_after=["b"], name="c-after-b"),
            C("c", min_invocations=1, name="need-c"),
        ],
    )
    replays = Finishing(system, Encoding(system))
    path: tuple[Event, ...] = (("a", "ok"), ("b", "ok"), ("c", "ok"))
    after_a = walk(system, [("a", "ok")])
    assert after_a is not None
    # From where `a` was called already, its second call is left out; the rest finishes.
    assert replays.skipping(after_a, path) == (("b", "ok"), ("c", "ok"))
    assert reaches(system, (("a", "ok"), ("b", "ok"), ("c", "ok")), FINAL_ANSWER)
    # Where what is left does not let the run stop, nothing.
    assert replays.skipping(system.initial, (("a", "ok"), ("b", "ok"))) is None


@given(
    st.lists(st.sampled_from(["a", "b", "c", "x", "y"]), max_size=5),
    st.sampled_from(["a", "b", "c", "x", "y"]),
    st.sampled_from(["ok", "error"]),
)
def test_a_step_replayed_backward_gives_the_states_it_leads_from(
    tools: list[str], tool: str, status: str
) -> None:
    # ``Layers.event_preimage`` of one reachable state, against the steps themselves: the
    # reachable states from which the step is allowed and leads there.
    system = _chain()
    taken: list[Event] = []
    for t in tools:
        if walk(system, (*taken, (t, "ok"))) is not None:
            taken.append((t, "ok"))
    target = walk(system, taken)
    assert target is not None
    enc = Encoding(system)
    v = Verdicts(system, enc, None, None, None, 30, witness_states=1000)
    comps = system.components
    cube = enc.bdd.true
    for name, value in enc.state_bits(comps, target).items():
        cube &= enc.bdd.var(name) if value else ~enc.bdd.var(name)
    back = v.event_preimage(cube, (tool, status))
    states: set[State] = set()
    todo = [system.initial]
    while todo:  # every reachable state (the system is small)
        state = todo.pop()
        if state in states:
            continue
        states.add(state)
        todo += list(system.steps_from(state, set(system.callable)).keys())
    for state in states:
        outcomes = [decide(system, records) for records, _ in system.variants(state)]
        allowed = any(isinstance(o, Pass) and tool in o.allowed for o in outcomes)
        leads = allowed and system.successor(state, (tool, status)) == target
        assert enc.holds_at(back, comps, state) == leads


def test_a_search_toward_bits_that_spell_no_view_finds_nothing_and_the_others_still_lead() -> None:
    # A count to 2 has three views, spelled by two bits: the fourth value spells none. A
    # set the projections give back unnarrowed may hold it; the search skips it (it had
    # asked for the distances to view 3 of three, an `IndexError`).
    system = System(["a", "b"], [C("a", max_invocations=2, name="cap")])
    enc = Encoding(system)
    (comp,) = system.components
    bits = enc.bits[id(comp)]
    assert len(comp.views) == 3 and len(bits) == 2

    def capped(state: State) -> bool:
        return state == (2,)

    nowhere = enc.cube(bits, 3)
    assert toward(system, enc, nowhere, goal=capped) is None
    found = toward(system, enc, nowhere | enc.cube(bits, 2), goal=capped)
    assert found is not None and walk(system, found) == (2,)
