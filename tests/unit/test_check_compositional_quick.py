"""The one-by-one analysis's quick steps (``check/compositional.py``), which decide verdicts
by directed searches and replays before any question to Z3: a tool allowed along another's
history, a requirement live where a tool it mentions is first allowed; and the budget
questions of a core search (``properties._budget_shown``) that counts of calls settle."""

from __future__ import annotations

import pytest
from deciders import first_state_only

from benchmarks._policies import conditionals
from ruleengine import AskPermissionRequirement, ConditionalRequirement, Requirement
from ruleengine.check import compositional, properties
from ruleengine.check.analysis import Analysis
from ruleengine.check.explicit import (
    analyse,
    asking_of,
    callable_at,
    decide,
    live_at,
    walk,
)
from ruleengine.check.histories import FORCED_STEPS, along
from ruleengine.check.landmarks import least_steps
from ruleengine.check.orders import never_finishes, waits_in_vain
from ruleengine.check.projections import PAIR_STATES
from ruleengine.check.properties import CoreCache
from ruleengine.check.seek import Estimates, seek_within
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import System
from ruleengine.ir import FINAL_ANSWER


def _chain(length: int) -> list[Requirement]:
    """`t{i+1}` only after a call of `t{i}`, for ``length`` tools."""
    return [
        ConditionalRequirement(f"t{i + 1}", only_after=[f"t{i}"], name=f"chain-{i + 1}")
        for i in range(length - 1)
    ]


def test_a_history_to_one_tool_decides_every_tool_allowed_along_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A chain of 8, its deepest tool declared first: the history to `t7` passes where each
    # of the others is allowed; one directed search decides them all, each with a history
    # that replays to where it is.
    system = System([f"t{i}" for i in reversed(range(8))], _chain(8))
    decider = first_state_only(system)
    sought: list[str] = []
    seek = compositional.seek

    def counted(*args: object, **kwargs: object) -> object:
        sought.append(str(args[1]))
        return seek(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compositional, "seek", counted)
    decider._tools()
    result = decider.result
    assert result.allowed_tools >= {f"t{i}" for i in range(8)}
    assert sought == ["t7"]  # one search, where the probe had seen `t0` alone allowed
    for i in range(8):
        state = walk(system, result.firsts[f"tool:t{i}"])
        assert state is not None and f"t{i}" in callable_at(system, state)
    assert result.decided is not None
    assert {f"tool:t{i}" for i in range(8)} <= result.decided


def test_a_tool_a_short_search_reaches_is_not_asked_to_the_projections_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every tool here is reachable: the projections' quick proof that a tool is never
    # allowed would fail at its whole time, so a short directed search goes first.
    system = System([f"t{i}" for i in range(6)], _chain(6))
    decider = first_state_only(system)
    asked: list[object] = []
    never = decider.projections.never

    def recorded(where: object, deadline: float | None) -> bool:
        asked.append(where)
        return never(where, deadline)  # type: ignore[arg-type]

    monkeypatch.setattr(decider.projections, "never", recorded)
    decider._tools()
    assert decider.result.allowed_tools >= {f"t{i}" for i in range(6)}
    assert asked == []


def test_a_dead_tool_is_still_proved_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each only after the other: the orders of a history that would call either clash,
    # which needs no proof by the projections.
    system = System(
        ["a", "b"],
        [
            ConditionalRequirement("b", only_after=["a"], name="b after a"),
            ConditionalRequirement("a", only_after=["b"], name="a after b"),
        ],
    )
    decider = first_state_only(system)

    def never(*args: object) -> bool:
        raise AssertionError("not asked of the projections")

    monkeypatch.setattr(decider.projections, "never", never)
    decider._tools()
    result = decider.result
    assert result.decided is not None
    assert {"tool:a", "tool:b"} <= result.decided
    assert not {"a", "b"} & result.allowed_tools
    assert not {"a", "b"} & analyse(system).allowed_tools  # the explicit engine agrees


def test_asking_permission_for_a_tool_deep_in_a_chain_is_live_before_any_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "Ask before `t9`": live where `t9` is first allowed, ten steps in. The quick pass
    # follows the history found to `t9`; no directed search toward the projections' states
    # and no question to Z3 is needed.
    system = System(
        [f"t{i}" for i in range(10)],
        [*_chain(10), AskPermissionRequirement(include=["t9"], name="ask")],
    )
    decider = first_state_only(system)
    for step in (decider._tools, decider._finish, decider._no_finish, decider._live):
        step()
    key = "live:ask"
    assert key in decider.open

    def directed(*args: object, **kwargs: object) -> None:
        raise AssertionError("no directed search here")

    monkeypatch.setattr(compositional, "toward", directed)
    decider._live_searched(directed=False)
    assert key not in decider.open
    result = decider.result
    assert result.decided is not None and key in result.decided and "ask" in result.live
    state = walk(system, result.firsts[key])
    assert state is not None
    ((records, _),) = system.variants(state)
    outcome = decide(system, records)
    assert live_at(system, records, outcome, {"ask"}, asking_of(system)) == {"ask"}


def _engine_not_asked(system: System, focus: str | None) -> Analysis:
    raise AssertionError("the engine is not asked here")


@pytest.mark.parametrize("steps", [3, 4, 5])
def test_a_budget_question_counts_the_calls_each_tool_needs(steps: int) -> None:
    # `t` at least 3 times and `u` at least twice: no history stops within 4 steps, though
    # every finish calls only two tools (the landmarks' count). The counts settle the
    # question without the engine; at 5 steps a history shows the opposite.
    system = System(
        ["t", "u", "v"],
        [
            ConditionalRequirement("t", min_invocations=3, name="t thrice"),
            ConditionalRequirement("u", min_invocations=2, name="u twice"),
        ],
    )
    names = frozenset(r.name for r in system.requirements)
    cache = CoreCache()
    shown = properties._holds(
        system,
        names,
        lambda a: a.finish_depth is None or a.finish_depth > steps,
        _engine_not_asked,
        f"finish:{steps}",
        cache,
    )
    explicit = analyse(system)
    assert explicit.finish_depth == 5
    assert shown[0] == (steps < 5)


def test_a_count_of_calls_is_a_lower_bound_on_random_counters() -> None:
    # Whatever the minimums and caps, the count never exceeds the explicit engine's least
    # steps before the finish (a bound, never a claim past the truth).
    for seed in range(40):
        mins = [(seed * 7 + i * 3) % 4 for i in range(3)]
        caps = [m + (seed + i) % 3 for i, m in enumerate(mins)]
        reqs: list[Requirement] = []
        for i, (low, high) in enumerate(zip(mins, caps, strict=True)):
            reqs.append(
                ConditionalRequirement(
                    f"t{i}",
                    min_invocations=low,
                    max_invocations=max(high, 1),
                    only_after=[f"t{(i + 1) % 3}"] if seed % 5 == i else None,
                    name=f"r{i}",
                )
            )
        system = System(["t0", "t1", "t2"], reqs)
        explicit = analyse(system)
        estimates = Estimates(system, FINAL_ANSWER, CoreCache().distances(system.tools))
        least = least_steps(system, forced=False)
        count = estimates.least_calls(system.initial, least[1])
        if explicit.finish_depth is None:
            continue  # never stops: any bound holds
        assert count is not None and count <= explicit.finish_depth, seed


def _ordered_cycle() -> list[Requirement]:
    """`send` only before `load`, `test` only after `load` and only before `send`, `send`
    and `test` each needed: `send` succeeds before `load`, which comes before `test`, which
    comes before `send` succeeds."""
    return [
        ConditionalRequirement("send", only_before=["load"], name="send before load"),
        ConditionalRequirement("send", min_invocations=1, name="send needed"),
        ConditionalRequirement("test", only_after=["load"], name="test after load"),
        ConditionalRequirement("test", only_before=["send"], name="test before send"),
        ConditionalRequirement("test", min_invocations=1, name="test needed"),
    ]


def test_orders_that_clash_show_that_no_history_finishes() -> None:
    tools = ["load", "send", "test", "other"]
    system = System(tools, _ordered_cycle())
    assert never_finishes(system)
    assert analyse(system).finish_depth is None  # the explicit engine agrees
    assert not never_finishes(System(tools, _ordered_cycle(), mode="priority"))
    # Without any one of them, some history finishes, and the orders say nothing.
    for left_out in range(5):
        rest = [r for i, r in enumerate(_ordered_cycle()) if i != left_out]
        smaller = System(tools, rest)
        assert analyse(smaller).finish_depth is not None
        assert not never_finishes(smaller)


def test_a_cap_of_one_call_is_no_order_against_itself() -> None:
    system = System(
        ["a", "b"],
        [
            ConditionalRequirement("a", max_invocations=1, name="a once"),
            ConditionalRequirement("a", min_invocations=1, name="a needed"),
            ConditionalRequirement("b", only_after=["a"], min_invocations=1, name="b after a"),
        ],
    )
    assert analyse(system).finish_depth == 2
    assert not never_finishes(system)


def test_a_budget_question_on_orders_that_clash_needs_no_engine() -> None:
    system = System(["load", "send", "test", "other"], _ordered_cycle())
    names = frozenset(r.name for r in system.requirements)
    shown = properties._holds(
        system, names, lambda a: a.finish_depth is None, _engine_not_asked, "finish:30", CoreCache()
    )
    assert shown == (True, None)


def test_a_budget_question_about_a_small_system_goes_to_the_engine_before_the_long_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "`t` at least three times" and "at most twice": the run never stops, which the counts
    # and the orders do not show; the search within the budget would meet every state to
    # show it, where the engine answers a system this small at once.
    system = System(
        ["t", "u"],
        [
            ConditionalRequirement("t", min_invocations=3, name="need"),
            ConditionalRequirement("t", max_invocations=2, name="cap"),
        ],
    )
    searched: list[object] = []
    monkeypatch.setattr(properties, "seek_within", lambda *a, **k: searched.append(a))
    assert properties._budget_shown(system, 32, CoreCache()) is None
    assert searched == []
    assert analyse(system).finish_depth is None  # what the engine then finds


def test_a_search_within_a_budget_that_meets_every_state_proves_none_finishes() -> None:
    # "`t` at least 3 times": no history of 2 steps stops, and the search sees every state.
    system = System(["t", "u"], [ConditionalRequirement("t", min_invocations=3, name="t x3")])
    distances = CoreCache().distances(system.tools)
    assert seek_within(system, FINAL_ANSWER, distances, limit=1000, within=2) == (None, True)
    found, none = seek_within(system, FINAL_ANSWER, distances, limit=1000, within=3)
    assert found is not None and len(found) == 3 and not none
    # A limit too small to see every state proves nothing.
    gated = System(
        ["t", "u", "v"],
        [
            ConditionalRequirement("t", min_invocations=3, name="t x3"),
            ConditionalRequirement("v", min_invocations=2, name="v x2"),
        ],
    )
    bounds = CoreCache().distances(gated.tools)
    assert seek_within(gated, FINAL_ANSWER, bounds, limit=2, within=5) == (None, False)
    assert seek_within(gated, FINAL_ANSWER, bounds, limit=2, within=4) == (None, True)  # 5 calls
    # Priority mode: the lower bounds that prune the search are not proofs there.
    loose = System(["t", "u"], system.requirements, mode="priority")
    assert seek_within(loose, FINAL_ANSWER, distances, limit=1000, within=2) == (None, False)


def test_a_replayed_history_makes_the_forced_calls_first() -> None:
    # `think` is forced after every other call (a ReAct loop); "`x` once" acts only once
    # `think` was called after `x`. A history of two calls of `x` replays as `x`, `think`:
    # the forced call first, where the second `x` is not allowed.
    system = System(
        ["x", "y", "think"],
        [
            ConditionalRequirement("think", force_after=["x", "y"], name="think after"),
            ConditionalRequirement("x", max_invocations=1, name="x once"),
        ],
    )
    names = {"x once"}

    def goal(state: tuple[int, ...]) -> bool:
        ((records, _),) = system.variants(state)
        outcome = decide(system, records)
        return live_at(system, records, outcome, names, asking_of(system)) == names

    found = along(system, [(("x", "ok"), ("x", "ok"))], set(), goal)
    assert found == (("x", "ok"), ("think", "ok"))
    # Two tools forced after each other: no more forced calls in a row than
    # ``FORCED_STEPS``.
    looping = System(
        ["y", "a", "b"],
        [
            ConditionalRequirement("a", force_after=["y", "b"], name="a after"),
            ConditionalRequirement("b", force_after=["a"], name="b after"),
        ],
    )
    seen: list[tuple[int, ...]] = []
    assert along(looping, [(("y", "ok"),)], set(), lambda state: seen.append(state)) is None
    assert len(seen) == 2 + FORCED_STEPS  # the start, after `y`, after each forced call


def test_a_requirement_that_only_keeps_the_stop_closed_is_dead_where_the_others_never_stop() -> (
    None
):
    tools = ["load", "send", "test", "other"]
    waiting = ConditionalRequirement("other", min_invocations=2, name="other twice")
    system = System(tools, [*_ordered_cycle(), waiting])
    assert waits_in_vain(system, "other twice")
    assert "other twice" not in analyse(system).live  # the explicit engine agrees
    # Where the others can stop, it is live, and this says nothing.
    rest = [r for r in _ordered_cycle() if r.name != "test before send"]
    finishing = System(tools, [*rest, waiting])
    assert "other twice" in analyse(finishing).live
    assert not waits_in_vain(finishing, "other twice")
    # One that denies a tool besides the stop may change a pass: not shown so.
    gate = ConditionalRequirement("other", only_after=["load"], name="other after load")
    assert not waits_in_vain(System(tools, [*_ordered_cycle(), gate]), "other after load")


def test_a_stop_only_requirement_is_dead_where_no_state_lets_the_others_stop() -> None:
    # "x at least 3 times" and "x at most twice": the others never let the run stop, by
    # counts the orders of their histories do not weigh. "y at least twice" then changes no
    # pass; the states from which the others' stop is reachable leave out the start.
    tools = ["x", "y", "z"]
    waiting = ConditionalRequirement("y", min_invocations=2, name="y twice")
    needs = ConditionalRequirement("x", min_invocations=3, name="x thrice")
    cap = ConditionalRequirement("x", max_invocations=2, name="x at most twice")
    for others, live in (([needs, cap], False), ([needs], True)):
        system = System(tools, [*others, waiting])
        assert not waits_in_vain(system, "y twice")
        assert ("y twice" in analyse(system).live) is live  # the explicit engine
        decider = first_state_only(system)
        decider.open["live:y twice"] = decider.verdicts._live_at("y twice")
        decider._live_stuck()
        decided = decider.result.decided
        assert decided is not None
        # Decided never live exactly where the engine finds it dead; else left open.
        assert ("live:y twice" in decided) is not live
        assert ("live:y twice" in decider.open) is live
        # Nor does the system finish then, from its start: the engine's no-finish.
        exact = analyse(system)
        assert ("no-finish" in decided) is not live
        if not live:
            assert decider.result.no_finish == exact.no_finish
            assert exact.no_finish is not None and exact.no_finish.trace == ()
            assert "budget" in decided and decider.result.finish_depth is None
            assert exact.finish_depth is None
    # One that denies a tool besides the stop is not asked about.
    gate = ConditionalRequirement("y", only_after=["z"], name="y after z")
    decider = first_state_only(System(tools, [needs, cap, gate]))
    decider.open["live:y after z"] = decider.verdicts._live_at("y after z")
    decider._live_stuck()
    assert "live:y after z" in decider.open


def test_a_requirement_that_denies_a_tool_after_another_is_live_where_the_others_allow_it() -> None:
    # The run never stops ("z" needed, never allowed), so no finishing history shows
    # anything. "t only before x" is live once `x` was called and `u` let `t` in; "t at
    # most twice" after two calls of `t`. One history through the watched tool's calls,
    # then a search of the others for where they allow `t`.
    tools = ["t", "u", "x", "z"]
    blocked = [
        ConditionalRequirement("z", min_invocations=1, name="needs z"),
        ConditionalRequirement("z", max_invocations=0, name="never z"),
        ConditionalRequirement("t", only_after=["u"], name="t after u"),
    ]
    for watching in (
        ConditionalRequirement("t", only_before=["x"], name="watching"),
        ConditionalRequirement("t", max_invocations=2, name="watching"),
        ConditionalRequirement("t", only_after=["x"], name="watching"),
    ):
        system = System(tools, [*blocked, watching])
        exact = analyse(system)
        assert "watching" in exact.live and exact.no_finish is not None
        decider = first_state_only(system)
        decider._tools()
        decider.open["live:watching"] = decider.verdicts._live_at("watching")
        decider._live_after()
        assert decider.result.decided is not None
        assert "live:watching" in decider.result.decided
        assert "watching" in decider.result.live
        # Its example replays to a state where the engine finds it live.
        example = decider.result.firsts["live:watching"]
        state = walk(system, example)
        assert state is not None
        assert any(
            "watching" in live_at(system, records, decide(system, records), {"watching"}, {})
            for records, _ in system.variants(state)
        )


def test_a_component_with_more_views_than_a_pair_may_reach_is_kept_whole() -> None:
    # A count to 6,000 has more views than the projections explore for one component
    # (`PAIR_STATES`): all of its views are kept (before, the analysis raised `_TooLarge`,
    # an internal error of the whole check on a large policy with such a cap).
    cap = ConditionalRequirement(
        "a", max_invocations=PAIR_STATES + 1000, only_success_invocations=False, name="cap"
    )
    system = System(
        ["a", "b"], [cap, ConditionalRequirement("b", min_invocations=1, name="need-b")]
    )
    found = compositional.analyse_compositional(system, Encoding(system), budget=9, probe_states=10)
    exact = analyse(system)
    assert found.complete
    assert (found.live, found.allowed_tools, found.finish_depth) == (
        exact.live,
        exact.allowed_tools,
        exact.finish_depth,
    )


def test_asked_one_question_it_stops_once_that_is_answered() -> None:
    # A chain a → b → c → d → e before the stop, and x, y each waiting for the other: asked
    # about one verdict (``until``), the analysis ends as soon as that one is answered,
    # with other verdicts left undecided, and answers as the whole analysis does.
    tools = ["a", "b", "c", "d", "e", "x", "y"]
    chain = [("b", "a"), ("c", "b"), ("d", "c"), ("e", "d"), (FINAL_ANSWER, "e")]
    reqs: list[Requirement] = [
        ConditionalRequirement(t, only_after=[before], name=f"{t}-after-{before}")
        for t, before in [*chain, ("x", "y"), ("y", "x")]
    ]
    system = System(tools, reqs)

    def asked(until: str | None) -> Analysis:
        return compositional.analyse_compositional(
            system, Encoding(system), budget=9, probe_states=1, until=until
        )

    whole = asked(None)
    assert whole.complete and whole.allowed_tools == {"a", "b", "c", "d", "e", FINAL_ANSWER}
    for key in ["tool:b", "tool:x", "live:x-after-y"]:
        found = asked(key)
        assert compositional.answered(found, key) and found.undecided, key
        assert found.allowed_tools <= whole.allowed_tools and found.live <= whole.live
        name = key.split(":")[1]
        assert (name in found.allowed_tools or name in found.live) == (
            name in whole.allowed_tools or name in whole.live
        )
    # A stop within 9 steps: the 5-step history, the rest undecided.
    found = asked("finish:9")
    assert compositional.answered(found, "finish:9") and found.undecided
    assert compositional.shortest_finish(found) == 5 and len(found.firsts["finish"]) == 5
    # None within 2 steps: answered only once a bound or the least steps show it.
    found = asked("finish:2")
    assert compositional.answered(found, "finish:2")
    assert compositional.shortest_finish(found) == 5 or found.finish_after >= 2


def test_a_stop_only_requirement_cut_short_at_first_is_decided_on_the_second_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As above, "y at least twice" is dead because the others never let the run stop. The
    # first ask's search backward is cut short (its share of the time spent): the
    # requirement stays open. The analysis asks again after the first proofs; that ask
    # goes on with the same search and decides it.
    tools = ["x", "y", "z"]
    waiting = ConditionalRequirement("y", min_invocations=2, name="y twice")
    needs = ConditionalRequirement("x", min_invocations=3, name="x thrice")
    cap = ConditionalRequirement("x", max_invocations=2, name="x at most twice")
    system = System(tools, [needs, cap, waiting])
    decider = first_state_only(system)
    decider.open["live:y twice"] = decider.verdicts._live_at("y twice")
    real = compositional._Decider._finishing
    asked: list[float | None] = []

    def cut_once(self: compositional._Decider, stop: object, until: float | None) -> object:
        asked.append(until)
        return None if len(asked) == 1 else real(self, stop, until)

    monkeypatch.setattr(compositional._Decider, "_finishing", cut_once)
    monkeypatch.setattr(compositional._Decider, "_never", lambda self, where: False)
    decider._live_stuck()
    assert len(asked) == 1 and "live:y twice" in decider.open
    decider._live_stuck()
    assert len(asked) == 2 and "live:y twice" not in decider.open
    decided = decider.result.decided
    assert decided is not None and "live:y twice" in decided
    assert "y twice" not in analyse(system).live


def _deadlocked_chain() -> System:
    """`t0` … `t3`, each at most once and each after the one before; the run may stop only
    after `t0` twice: once all four are called, nothing is allowed (a deadlock, 4 steps)."""
    capped = [
        ConditionalRequirement(f"t{i}", max_invocations=1, name=f"t{i} once") for i in range(4)
    ]
    twice = ConditionalRequirement("t0", min_invocations=2, name="t0 twice")
    return System([f"t{i}" for i in range(4)], [*_chain(4), *capped, twice])


def test_forward_layers_past_their_time_leave_a_finding_to_the_layers_backward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The deadlock lies 4 steps deep, past the probe of the first state. With the time for
    # the forward layers spent, ``_first`` computes none: the deadlock is left unproven, not
    # ruled out. The analysis still finds it, with the explicit engine's shortest witness.
    system = _deadlocked_chain()
    explicit = analyse(system)
    assert explicit.deadlock is not None and len(explicit.deadlock.trace) == 4

    decider = first_state_only(system)
    decider._findings()
    decided = decider.result.decided
    assert decided is not None and "deadlock" in decided
    assert decider.result.deadlock == explicit.deadlock

    monkeypatch.setattr(compositional, "LAYER_SECONDS", -1.0)
    decider = first_state_only(system)
    decider._findings()
    decided = decider.result.decided
    assert decided is not None and "deadlock" not in decided and "deadlock" in decider.unproven
    assert len(decider.verdicts.layers) == 1  # the start alone: no layer computed

    found = compositional.analyse_compositional(system, Encoding(system), budget=9, probe_states=1)
    assert found.complete
    assert found.deadlock is not None and found.deadlock.trace == explicit.deadlock.trace


def _capped_twice() -> tuple[System, list[str], list[str]]:
    """`a`, `b`, `c`, each at most once and (dead: the first cap comes first) at most three
    times: the system, the live caps and the dead ones."""
    tools = ["a", "b", "c"]
    live = [ConditionalRequirement(t, max_invocations=1, name=f"{t} once") for t in tools]
    dead = [ConditionalRequirement(t, max_invocations=3, name=f"{t} thrice") for t in tools]
    system = System(tools, [*live, *dead])
    return system, [r.name for r in live], [r.name for r in dead]


def test_one_proof_shows_every_open_requirement_never_live_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The three caps of three calls are never live: one proof over the union of the
    # states where each would be shows them all, where each on its own took one proof.
    system, _, dead = _capped_twice()
    assert not set(dead) & analyse(system).live
    decider = first_state_only(system)
    for name in dead:
        decider.open[f"live:{name}"] = decider.verdicts._live_at(name)
    asked: list[object] = []
    never = decider.unrolled.never

    def counted(target: object, seconds: float, deadline: float | None = None) -> bool:
        asked.append(target)
        return never(target, seconds, deadline)  # type: ignore[arg-type]

    monkeypatch.setattr(decider.unrolled, "never", counted)
    decider._prove(compositional.PROVE_SECONDS)
    decided = decider.result.decided
    assert decided is not None and {f"live:{name}" for name in dead} <= decided
    assert not decider.open and len(asked) == 1


def test_where_one_open_requirement_is_live_each_is_proved_on_its_own() -> None:
    # With a live cap among them, the union holds a reachable state: no proof of it, and
    # each is then asked on its own, which shows the dead ones never live and leaves the
    # live one open (a search shows it live).
    system, live, dead = _capped_twice()
    assert live[0] in analyse(system).live
    decider = first_state_only(system)
    for name in [live[0], *dead]:
        decider.open[f"live:{name}"] = decider.verdicts._live_at(name)
    decider._prove(compositional.PROVE_SECONDS)
    decided = decider.result.decided
    assert decided is not None and {f"live:{name}" for name in dead} <= decided
    assert list(decider.open) == [f"live:{live[0]}"] and f"live:{live[0]}" not in decided


@pytest.mark.parametrize("nodes", [0, 10**9])
def test_a_search_backward_on_a_large_manager_keeps_the_variable_order(
    monkeypatch: pytest.MonkeyPatch, nodes: int
) -> None:
    # A sifting of a large manager happens inside whichever operation crosses CUDD's
    # threshold, and can outlast any share of the time: past ``REORDER_NODES`` the searches
    # backward switch dynamic reordering off for good, and leave it on below.
    policy = conditionals(50, 100, 1)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    decider = first_state_only(system)
    if not decider.enc.reordering_now():
        pytest.skip("a BDD package without reordering")
    monkeypatch.setattr(compositional, "REORDER_NODES", nodes)
    monkeypatch.setattr(compositional, "MANAGER_EVERY", 1)
    give_up = decider._giving_up(None)
    assert not give_up()
    assert decider.enc.reordering_now() is (nodes > 0)
    assert decider.enc.reordering is (nodes > 0)
