"""The compositional analysis's no-finish and budget on random conditionals over 50 tools
(too large for either engine): the states that can finish, stepped back from those that
may stop through the states the projections leave, decide a no-finish that neither a search
from each probe state nor the projections at it could; and the least number of steps
before ``final_answer`` comes from "within" questions to the unrolled steps. A requirement
that waits for a tool is shown live along a finishing history before any such question."""

from __future__ import annotations

import time

import pytest

from benchmarks._policies import conditionals
from ruleengine import ConditionalRequirement, CycleGuard, Policy, Requirement
from ruleengine.check import compositional, landmarks
from ruleengine.check.analysis import Analysis
from ruleengine.check.compositional import (
    PROBE_STATES,
    PROVE_FIRST,
    _Decider,
    analyse_compositional,
)
from ruleengine.check.explicit import _Explorer, analyse, asking_of, decide, live_at, reaches, walk
from ruleengine.check.gates import capped, gated
from ruleengine.check.histories import Late
from ruleengine.check.projections import Projections, without_dead
from ruleengine.check.properties import findings
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.report import Finding
from ruleengine.check.symbolic import Encoding
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System
from ruleengine.check.unrolled import Unrolled
from ruleengine.ir import FINAL_ANSWER


@pytest.fixture(autouse=True)
def _no_wall_clock_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first try at the states that can finish gives up after a few seconds of the wall
    # clock; a loaded machine must not change what these tests decide.
    monkeypatch.setattr(compositional, "FINISH_SECONDS", 1e6)
    # Nor the time the calls soft forces cost are sought for (the budget's bound).
    monkeypatch.setattr(compositional, "FORCED_SECONDS", 1e6)


def _decider(seed: int) -> _Decider:
    policy = conditionals(50, 100, seed)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    explorer = _Explorer(system, PROBE_STATES, None, True)
    probe = explorer.run()
    assert not probe.complete  # the probe alone decides nothing here
    deadline = time.monotonic() + 600  # far off: what is asked ends on its own
    return _Decider(system, Encoding(system), explorer, probe, 19, deadline)


def test_a_state_that_cannot_finish_is_found_where_no_search_shows_it() -> None:
    decider = _decider(1)
    assert not decider._first_stuck()  # the probe's own tests leave it open
    decider._no_finish()
    result = decider.result
    assert result.decided is not None and "no-finish" in result.decided
    witness = result.no_finish
    assert witness is not None and len(witness.trace) == 1  # the shortest: one step
    # Why it cannot finish, shown without the engine: every finish calls some tool that
    # the witness's step has closed for good (a requirement allows it only before).
    system = decider.system
    needed = Relaxed(system.components, system.tools).needed()
    after = witness.trace
    closed = [
        t
        for t in sorted(needed)
        if not any(reaches(system, (*after, *more), t) for more in ((), *_one_step(system)))
    ]
    assert closed


def _one_step(system: System) -> list[tuple[tuple[str, str], ...]]:
    return [((t, "ok"),) for t in system.callable]


def test_the_least_steps_before_the_finish_are_exact_when_decided() -> None:
    decider = _decider(12)
    decider._finish()
    assert "budget" not in (decider.result.decided or set())
    decider._no_finish()  # in the analysis's order
    decider._finish_unrolled()
    result = decider.result
    assert result.decided is not None and "budget" in result.decided
    n = result.finish_depth
    assert n is not None and n > 19  # past the budget, so no search found it
    assert n > result.depth_done and n > len(decider.needed)  # neither bound gave it
    finish = result.firsts["finish"]
    assert len(finish) == n and reaches(decider.system, finish, FINAL_ANSWER)
    unrolled, v = decider.unrolled, decider.verdicts
    stop = v.some(v.pass_.can_stop)
    assert unrolled.reaches(stop, n - 1, within=True, calls=decider.needed) is None
    # An exact question, depth by depth, agrees at the last depths before it.
    assert unrolled.reaches(stop, n - 1, calls=decider.needed) is None
    assert unrolled.reaches(stop, n, calls=decider.needed) is not None


def test_a_start_that_cannot_finish_decides_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seed 18 never lets the run stop. The orders its needed calls keep clash, which decides
    # the budget at once; without them, the start shown stuck decides it.
    decider = _decider(18)
    decider._finish()
    result = decider.result
    assert result.decided is not None and "budget" in result.decided
    assert result.finish_depth is None and result.finishes_within is None  # never
    monkeypatch.setattr(compositional, "never_finishes", lambda system: False)
    decider = _decider(18)
    decider._finish()
    result = decider.result
    assert result.decided is not None and "budget" not in result.decided
    decider._no_finish()
    assert "no-finish" in result.decided
    assert result.no_finish is not None and result.no_finish.trace == ()  # the start
    decider._finish_unrolled()
    assert "budget" in result.decided
    assert result.finish_depth is None and result.finishes_within is None  # never


def test_the_states_that_can_finish_give_up_out_of_time_or_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decider = _decider(2)  # its chaining takes seconds
    assert decider._can_finish(-1.0) is None  # its time already past
    monkeypatch.setattr(compositional, "MANAGER_NODES", 0)
    assert decider._can_finish(None) is None  # the manager past its bound
    assert decider.can_finish is None
    decider.deadline = time.monotonic() - 1
    monkeypatch.setattr(compositional, "MANAGER_NODES", 10**9)
    with pytest.raises(Late):
        decider._can_finish(None)  # past the analysis's deadline: it stops


def _cut_short(
    monkeypatch: pytest.MonkeyPatch, *extra: Requirement
) -> tuple[System, Analysis, Finding]:
    """`b` needs `a` first, and `x` is forced after `a` (the least finish is `a, x, b`),
    with ``extra``: analysed with every "within" question cut short by the deadline; the
    system, the analysis and its budget finding."""
    policy = Policy(
        ["a", "b", "x"],
        [
            ConditionalRequirement("b", min_invocations=1, name="needs-b"),
            ConditionalRequirement("b", only_after=["a"], name="b-after-a"),
            ConditionalRequirement("x", force_after=["a"], name="x-after-a"),
            *extra,
        ],
        max_iterations=2,
    )
    system = System(policy.tools, policy.requirements, mode=policy.mode)

    def cut(self: _Decider, target: object, steps: int) -> None:
        raise Late

    monkeypatch.setattr(_Decider, "_finish_within", cut)
    result = analyse_compositional(system, Encoding(system), budget=1, probe_states=1)
    (budget,) = [
        f
        for f in findings(system, result, max_iterations=2, engine=lambda sub, _: analyse(sub))
        if f.id == "budget"
    ]
    return system, result, budget


def test_a_budget_cut_short_says_how_short_a_history_it_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The tools every finish calls (`a`, `b`) bound it only from 2 when `x` may be denied
    # by a rule that does not know `b` comes after `a` (so the force need not follow `a`),
    # and the calls soft forces cost are not counted. The search finds the 3 steps; cut
    # short before showing that 2 do not do, the budget stays undecided, and its message
    # gives both ends.
    def needed_only(
        system: System, until: float | None, *, beyond: int | None = None
    ) -> tuple[int, frozenset[str]]:
        return landmarks.least_steps(system, until, forced=False)

    monkeypatch.setattr(compositional, "least_steps", needed_only)
    early = ConditionalRequirement("x", only_before=["b"], name="x-before-b")
    _, result, budget = _cut_short(monkeypatch, early)
    assert "budget" in result.undecided
    assert (result.finish_after, result.finish_shown, result.finish_depth) == (1, 3, None)
    assert budget.min_steps is None
    assert budget.message.startswith(
        "`final_answer` needs more than 1 step first, and a history of 3 steps lets the run stop"
    )


@pytest.mark.parametrize("guarded", [False, True])
def test_the_calls_a_force_costs_decide_the_budget_without_a_question(
    monkeypatch: pytest.MonkeyPatch, guarded: bool
) -> None:
    # Nothing can drop the force on `x` after `a`, so every finish costs 3 steps by the
    # bound alone, and the history found decides the budget. So it is with a cycle guard,
    # which cannot deny `x` before it is called: `x` follows `a` in every finish.
    guard = CycleGuard(max_strike_length=3, max_total_occurrences=5, name="guard")
    _, result, budget = _cut_short(monkeypatch, *([guard] if guarded else []))
    assert "budget" not in result.undecided
    assert (result.finish_after, result.finish_depth) == (2, 3)
    assert budget.min_steps == 3


def test_calls_of_each_tool_add_up_to_the_budget_without_a_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `c` after `b` after `a`, and `a` twice before the run may stop: every finish calls
    # the three tools (3 steps), and `a` twice (2 of them), but the two bounds alone say 3.
    # Calls of different tools are different steps: `a` twice, `b` and `c` once, 4 in all,
    # as long as the history found, so the budget is decided with no "within" question.
    def cut(self: _Decider, target: object, steps: int) -> None:
        raise Late

    monkeypatch.setattr(_Decider, "_finish_within", cut)
    policy = Policy(
        ["a", "b", "c"],
        [
            ConditionalRequirement("a", min_invocations=2, name="a-twice"),
            ConditionalRequirement("b", only_after=["a"], name="b-after-a"),
            ConditionalRequirement("c", only_after=["b"], name="c-after-b"),
            ConditionalRequirement("c", min_invocations=1, name="needs-c"),
        ],
        max_iterations=3,
    )
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    result = analyse_compositional(system, Encoding(system), budget=2, probe_states=1)
    assert "budget" not in result.undecided
    assert (result.finish_after, result.finish_depth) == (3, 4)
    assert reaches(system, result.firsts["finish"], FINAL_ANSWER)
    assert analyse(system).finish_depth == 4  # the explicit engine agrees


def test_balanced_proofs_take_no_more_than_the_histories_took() -> None:
    # Between deeper questions to the unrolled steps, an open verdict's proof gets the
    # time its questions took beyond its proofs so far (at least `PROVE_FIRST`), and none
    # where its proofs took as long already; a finding still unproven is not held back.
    policy = Policy(["a", "b"], [ConditionalRequirement("b", only_after=["a"], name="b-after-a")])
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    explorer = _Explorer(system, 1, None, True)
    decider = _Decider(system, Encoding(system), explorer, explorer.run(), 9, None)
    nowhere = decider.enc.bdd.false
    asked: list[float] = []

    class Steps:
        def never(self, where: object, seconds: float, deadline: float | None) -> bool:
            asked.append(seconds)
            return False

    decider._unrolled = Steps()  # type: ignore[assignment]
    decider.unproven = {"deadlock": nowhere}
    decider.open = {"live:x": nowhere, "live:y": nowhere, "live:z": nowhere}
    decider.spent = {"live:x": [3.0, 1.0], "live:y": [1.0, 1.0], "live:z": [0.1, 0.0]}
    decider._prove(10.0, balanced=True)
    # The unproven finding first (its whole budget), then x (3 - 1 s) and z (the least).
    assert asked == [10.0, 2.0, PROVE_FIRST]
    assert decider.spent["live:y"] == [1.0, 1.0]  # not asked: its proofs took as long
    assert decider.spent["live:x"][1] > 1.0  # the proof's time is counted


def test_requirements_live_along_a_finishing_history_are_shown_before_any_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decider = _decider(0)
    for step in (decider._tools, decider._finish, decider._no_finish, decider._live):
        step()
    opened = {k for k in decider.open if k.startswith("live:")}

    def directed(*args: object, **kwargs: object) -> None:
        raise AssertionError("no directed search here")

    monkeypatch.setattr(compositional, "toward", directed)
    decider._live_searched(directed=False)
    shown = opened - set(decider.open)
    # Most of what the unrolled steps would be asked about, depth by depth.
    assert len(shown) * 2 > len(opened)
    system, result = decider.system, decider.result
    for key in sorted(shown):
        name = key[5:]
        assert result.decided is not None and key in result.decided and name in result.live
        state = walk(system, result.firsts[key])
        assert state is not None
        ((records, _),) = system.variants(state)
        outcome = decide(system, records)
        assert live_at(system, records, outcome, {name}, asking_of(system)) == {name}


def _opened(seed: int, key: str) -> _Decider:
    """Seed ``seed``'s analysis with its requirements asked about (``_live``), ``key``
    among those left open."""
    decider = _decider(seed)
    decider._live()
    assert key in decider.open
    return decider


def _without_projections_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """No directed search toward the states the projections leave: what decides is the
    step under test."""

    def directed(*args: object, **kwargs: object) -> None:
        raise AssertionError("no directed search toward the projections' states here")

    monkeypatch.setattr(compositional, "toward", directed)


def _shown_live(decider: _Decider, key: str) -> tuple[tuple[str, str], ...]:
    """The example that decided ``key`` live, replayed to a state where it is."""
    system, result, name = decider.system, decider.result, key[5:]
    assert key not in decider.open
    assert result.decided is not None and key in result.decided and name in result.live
    witness = result.firsts[key]
    state = walk(system, witness)
    assert state is not None
    ((records, _),) = system.variants(state)
    outcome = decide(system, records)
    assert live_at(system, records, outcome, {name}, asking_of(system)) == {name}
    return witness


def test_a_requirement_that_keeps_the_stop_closed_is_shown_live_by_a_history_without_its_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seed 9: "`final_answer` only after a call of `t7`" is live where every other
    # requirement lets the run stop and `t7` was never called, deep in the run: no history up
    # to 64 steps in Z3 showed it within the minute, nor did the searches toward the states
    # the projections leave. A search without it that avoids `t7` does, at once.
    key = "live:r32-t7"
    decider = _opened(9, key)
    _without_projections_search(monkeypatch)
    decider._live_without()
    assert all(tool != "t7" for tool, _ in _shown_live(decider, key))


def test_what_only_dead_tools_open_is_dead_too() -> None:
    # Seed 2: `t47` is allowed only after a success of `t17` and only before one; `t26` only
    # after a call of `t47`, `t8` only after a success of `t26`, `t42` only after a call of
    # `t8`, `t45` only after a success of `t42`. The pairs of requirements show `t47` and
    # `t26` never allowed; the others, each one link further, were left open in the minute.
    decider = _decider(2)
    plain = Projections(decider.system, decider.enc)
    decider._tools()
    result = decider.result
    assert result.decided is not None
    chain = ["t47", "t26", "t8", "t42", "t45"]
    for tool in chain:
        assert f"tool:{tool}" in result.decided and tool not in result.allowed_tools
    assert {"t47", "t26"} <= decider.projections.dead and not {
        "t47",
        "t26",
    } & decider.projections.callable
    # The projections without their steps rule out what those without them could not.
    p, some = decider.verdicts.pass_, decider.verdicts.some
    for tool in chain[2:]:
        assert not plain.never(some(p.allowed[tool]))
        assert decider.projections.never(some(p.allowed[tool]))


def test_the_relaxed_product_leaves_out_what_only_dead_tools_open() -> None:
    tools = ["a", "b", "c", "d"]
    reqs = [
        ConditionalRequirement("b", only_after=["a"], name="b after a"),
        ConditionalRequirement("c", only_after=["b"], name="c after b"),
    ]
    system = System(tools, reqs)
    relaxed = Relaxed(system.components, system.tools)
    assert relaxed.callable() == {"a", "b", "c", "d"}
    assert relaxed.callable(never={"a"}) == {"d"}
    assert relaxed.callable(never={"b", "unknown"}) == {"a", "d"}


def test_without_dead_follows_a_chain_the_pairs_cannot() -> None:
    # `a` needs a success of `x` before it and none: dead, which a pair shows. `b` only after
    # `a`, `c` only after `b`: dead too, which no pair shows (each needs the other two).
    tools = ["x", "a", "b", "c", "d"]
    reqs = [
        ConditionalRequirement("a", only_after=["x"], name="a after x"),
        ConditionalRequirement("a", only_before=["x"], name="a before x"),
        ConditionalRequirement("b", only_after=["a"], name="b after a"),
        ConditionalRequirement("c", only_after=["b"], name="c after b"),
    ]
    system = System(tools, reqs)
    enc = Encoding(system)
    verdicts = Verdicts(system, enc, None, None, None, 19, witness_states=16)
    verdicts.begin()

    def allowed(tool: str) -> object:
        return verdicts.some(verdicts.pass_.allowed[tool])

    plain = Projections(system, enc)
    assert plain.never(allowed("a")) and not plain.never(allowed("b"))
    rebuilt, dead = without_dead(plain, allowed, system.callable)
    assert dead == {"a", "b", "c"} == rebuilt.dead
    assert rebuilt.callable == {"x", "d"} and all(rebuilt.never(allowed(t)) for t in dead)
    # What the explicit engine finds: every other tool allowed somewhere.
    assert analyse(system).allowed_tools - {FINAL_ANSWER} == {"x", "d"}
    # Only the tools asked about are shown dead, from those known dead already.
    assert without_dead(plain, allowed, ["b"])[1] == frozenset()
    assert without_dead(plain, allowed, ["c"], frozenset({"a"}))[1] == {"a", "c"}
    # Nothing dead: the projections as they were.
    alive = System(tools, reqs[2:])
    alive_enc = Encoding(alive)
    alive_verdicts = Verdicts(alive, alive_enc, None, None, None, 19, witness_states=16)
    alive_verdicts.begin()
    same = Projections(alive, alive_enc)
    assert without_dead(
        same, lambda t: alive_verdicts.some(alive_verdicts.pass_.allowed[t]), alive.callable
    ) == (same, frozenset())


def test_a_force_after_a_late_tool_is_shown_live_right_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seed 9: "`t43` after `t21`" is live only right after `t21` where the others let the
    # run stop (`t43` is allowed only before `t3`, which `t21` needs, so the force only
    # keeps the stop closed). No finishing history calls `t21`, and the searches toward it
    # arrive where the others keep the stop closed anyway; left undecided in the minute
    # before. The others, kept from stopping until `t21` is called, finish right there.
    key = "live:r91-t43"
    decider = _opened(9, key)
    decider._live_without()
    assert key in decider.open  # not a requirement that waits for a tool
    _without_projections_search(monkeypatch)
    shared = decider.enc.distances
    asked: list[int] = []

    def distances(comp: object, goal: str = FINAL_ANSWER) -> object:
        asked.append(id(comp))
        return shared(comp, goal)  # type: ignore[arg-type]

    monkeypatch.setattr(decider.enc, "distances", distances)
    decider._live_triggered()
    assert _shown_live(decider, key)[-1][0] == "t21"  # right after the trigger
    system = decider.system
    # The encoding's distances, remembered per component's identity, are asked about the
    # system's own components only: a search's new requirement is gone after it, and a
    # later component could take its identity.
    assert set(asked) <= {id(c) for c in system.components}


def test_a_gated_system_finishes_only_after_its_tool() -> None:
    tools = ["a", "b", "w", "t"]
    reqs: list[Requirement] = [
        ConditionalRequirement("w", only_after=["a"], name="late"),
        ConditionalRequirement("t", force_after=["w"], name="force"),
        ConditionalRequirement("b", max_invocations=1, name="force waits for w"),
    ]
    system = System(tools, reqs)
    gate = gated(system, "force", "w")
    names = [c.requirement.name for c in gate.components]
    assert "force" not in names and len(names) == len(set(names)) == 3
    assert "force waits for w'" in names  # a name none of the system's has
    assert gate.reasoner is system.reasoner
    kept = {id(c) for c in system.components if c.requirement.name != "force"}
    assert kept <= {id(c) for c in gate.components}
    # Its finishing histories, and only those, call `w` (with any status).
    result = analyse(gate)
    assert FINAL_ANSWER in result.allowed_tools
    for status in ("ok", "error", "denied"):
        assert FINAL_ANSWER not in _allowed_after(gate, [("a", "ok")])
        assert FINAL_ANSWER in _allowed_after(gate, [("a", "ok"), ("w", status)])


def _allowed_after(system: System, trace: list[tuple[str, str]]) -> set[str]:
    state = walk(system, trace)
    assert state is not None
    ((records, _),) = system.variants(state)
    outcome = decide(system, records)
    return set(getattr(outcome, "allowed", ()))


def test_a_requirement_that_waits_for_a_tool_every_finish_calls_is_decided_dead_at_once() -> None:
    # Seed 3: "`final_answer` only after a call of `t33`", with `t33` forced after a tool
    # every finish calls; left undecided in the minute before (``followed.never_live``).
    decider = _decider(3)
    decider._live()
    keys = {"live:r56-t33", "live:r62-t17"}
    assert keys <= set(decider.open)
    decider._live_waiting()
    result = decider.result
    assert result.decided is not None and keys <= result.decided
    assert not keys & set(decider.open) and not {"r56-t33", "r62-t17"} & result.live


def test_the_searches_without_a_requirement_keep_to_their_share_of_the_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decider = _decider(9)
    decider._live()
    opened = set(decider.open)
    monkeypatch.setattr(compositional, "WITHOUT_SHARE", 0.0)
    decider._live_waiting()
    decider._live_without()
    decider._live_triggered()
    assert set(decider.open) == opened


def test_the_quick_pass_keeps_to_its_share_of_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # At 200 tools a pass along the known histories costs more than the questions to Z3 it
    # saves: it stops at its share of the time left (here none), and leaves the rest open.
    decider = _decider(0)
    for step in (decider._tools, decider._finish, decider._no_finish, decider._live):
        step()
    opened = set(decider.open)
    monkeypatch.setattr(compositional, "ALONG_SHARE", 0.0)
    decider._live_searched(directed=False)
    assert set(decider.open) == opened


def test_past_its_share_the_quick_pass_goes_on_only_while_it_shows_enough_live() -> None:
    # Within its share, always; past the most, never; in between, while more than one in
    # ALONG_YIELD of the requirements tried were shown live.
    going = compositional.worth_going_on
    y = compositional.ALONG_YIELD
    assert going(now=1.0, until=2.0, most=3.0, tried=50, shown=0)
    assert not going(now=3.0, until=2.0, most=3.0, tried=50, shown=50)
    assert going(now=2.5, until=2.0, most=3.0, tried=y * 10, shown=11)
    assert not going(now=2.5, until=2.0, most=3.0, tried=y * 10, shown=10)
    assert not going(now=2.0, until=2.0, most=3.0, tried=0, shown=0)  # nothing tried: no yield


def _no_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any question to the unrolled steps from now on fails the test."""

    def asked(*args: object, **kwargs: object) -> None:
        raise AssertionError("no question to the unrolled steps")

    monkeypatch.setattr(Unrolled, "reaches", asked)


def test_a_finishing_history_as_short_as_the_bound_needs_no_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seed 0's directed search first finds a history of 26 steps; searched again within
    # fewer steps, and its detours taken out, one of 23, the lower bound: exact, with no
    # question to Z3.
    decider = _decider(0)
    decider._finish()
    result = decider.result
    assert decider.finished is not None and result.finish_shown == len(decider.finished)
    assert reaches(decider.system, decider.finished, FINAL_ANSWER)
    decider._no_finish()
    _no_question(monkeypatch)
    decider._finish_unrolled()
    assert result.decided is not None and "budget" in result.decided
    assert result.finish_depth == result.finish_after + 1 == len(decider.finished) == 23


def test_a_history_as_short_as_the_bound_decides_the_budget_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seed 9: one rule forces `t35` after `t22`, `t31` or `t23`, another after `t2`, `t47` or
    # `t24`; four of those triggers are needed, and no two can share a call of `t35`. Only
    # a group that holds both rules counts its three calls beyond the needed one: the bound
    # is then 44 steps, as long as the directed search's history, so the budget is exact as
    # soon as the finish is looked at, with no question to Z3.
    decider = _decider(9)
    _no_question(monkeypatch)
    decider._finish()
    result = decider.result
    assert result.decided is not None and "budget" in result.decided
    assert decider.finished is not None and reaches(decider.system, decider.finished, FINAL_ANSWER)
    assert result.finish_depth == result.finish_after + 1 == len(decider.finished) == 44
    assert result.firsts["finish"] == decider.finished


def test_a_probe_past_its_time_leaves_the_verdicts_to_be_decided_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The probe stops at its own share of the time whatever states it has left (a state
    # can take a second where opaque checks multiply its passes); the verdicts are then
    # decided one by one, as after a probe cut short by its states, and are the explicit
    # engine's. Here it stops before its first state.
    monkeypatch.setattr(compositional, "PROBE_SECONDS", -1.0)
    policy = Policy(
        ["a", "b", "c"],
        [
            ConditionalRequirement("b", only_after=["a"], name="b-after-a"),
            ConditionalRequirement("c", min_invocations=1, only_after=["b"], name="c-needed"),
            ConditionalRequirement("a", max_invocations=1, name="a-once"),
            CycleGuard(name="guard"),
        ],
        max_iterations=3,
    )
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    result = analyse_compositional(system, Encoding(system), budget=2)
    whole = analyse(system)
    assert result.complete and whole.complete
    assert result.decided is not None  # one by one, not the probe's own analysis
    assert result.allowed_tools == whole.allowed_tools
    assert result.live == whole.live

    def found(analysis: Analysis) -> list[dict[str, object]]:
        engine = lambda sub, _: analyse(sub)  # noqa: E731
        return [f.model_dump() for f in findings(system, analysis, max_iterations=3, engine=engine)]

    assert found(result) == found(whole)
    assert [f["id"] for f in found(whole)] == ["budget"]  # 3 steps before the stop
    assert result.reason is None


def _first_state_only(system: System) -> _Decider:
    """The analysis of ``system`` with a probe of its first state, its requirements asked
    about (``_live``)."""
    explorer = _Explorer(system, 1, None, True)
    probe = explorer.run()
    decider = _Decider(system, Encoding(system), explorer, probe, 9, time.monotonic() + 600)
    decider._live()
    return decider


def test_a_minimum_the_others_need_in_part_is_shown_live_with_the_tool_capped_short() -> None:
    # "`t` at least 3 times" keeps the stop closed where the others let the run stop
    # after one call of `t`: live there. A search that never calls `t` finds no finish
    # (the others need it once); one with `t` capped at 2 calls does.
    system = System(
        ["a", "t"],
        [
            ConditionalRequirement("t", min_invocations=3, name="t-thrice"),
            ConditionalRequirement("t", min_invocations=1, name="t-once"),
            ConditionalRequirement("a", max_invocations=1, name="a-once"),
        ],
    )
    key = "live:t-thrice"
    decider = _first_state_only(system)
    assert key in decider.open
    decider._live_without()
    witness = _shown_live(decider, key)
    assert 1 <= sum(tool == "t" for tool, _ in witness) <= 2


def test_a_capped_system_keeps_the_cap() -> None:
    system = System(["t"], [ConditionalRequirement("t", min_invocations=3, name="least")])
    fewer = capped(system, "least", "t", 2, only_success=True)
    assert [c.requirement.name for c in fewer.components] == ["least capped at 2 calls of t"]
    assert fewer.reasoner is system.reasoner
    assert "t" in _allowed_after(fewer, [("t", "ok"), ("t", "error")])
    assert "t" not in _allowed_after(fewer, [("t", "ok"), ("t", "ok")])
    every = capped(system, "least", "t", 1, only_success=False)
    assert "t" not in _allowed_after(every, [("t", "error")])


def test_a_cap_is_shown_live_by_calling_its_tool_up_to_it() -> None:
    # "`t` at most 3 times (any status)" acts after the third call, where the others
    # still allow `t` when its successes count only ("`t` at most 4 successes"). The
    # quick pass, before any question to Z3, follows the history to `t` with `t` called
    # as often as the cap has views, succeeding and failing.
    system = System(
        ["a", "t"],
        [
            ConditionalRequirement(
                "t", max_invocations=3, only_success_invocations=False, name="cap"
            ),
            ConditionalRequirement("t", max_invocations=2, name="successes"),
            ConditionalRequirement("a", max_invocations=1, name="a-once"),
        ],
    )
    key = "live:cap"
    decider = _first_state_only(system)
    assert key in decider.open
    decider._live_searched(directed=False)
    witness = _shown_live(decider, key)
    assert witness == (("t", "error"),) * 3
