"""``check/seek.py``: a greedy best-first search for one history after which a tool is allowed
(or the run may stop), guided along chains of prerequisites by ``Estimates.guide`` and pruned
by ``Estimates.bound``; and how the symbolic engine answers ``tool:T`` and ``finish:N`` with it
when its first breadth-first layers do not.

The laws (whatever it returns replays to its goal; with room for every state it finds what the
explicit engine reaches) are in tests/property/test_check_seek_laws.py.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from functools import cache
from typing import Any

import pytest
from monitored import Monitored

import ruleengine.check.seek as seek_module
from ruleengine import FINAL_ANSWER, Monitor, Requirement, allowed
from ruleengine.check import check, symbolic, symbolic_layers
from ruleengine.check import run as run_module
from ruleengine.check.bounds import UNREACHABLE, Distances, distances
from ruleengine.check.explicit import Outcome, analyse, callable_at, decide, reaches, walk
from ruleengine.check.seek import Estimates, seek
from ruleengine.check.symbolic import analyse_symbolic
from ruleengine.check.symbolic_layers import EARLY_LAYERS
from ruleengine.check.system import Component, Event, State, System
from ruleengine.check.unrolled import GaveUp
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES, Status

CHAIN = ["a", "b", "c", "d", "e", "f"]
LONG = [f"t{i}" for i in range(12)]
"""Longer than the symbolic engine's early layers reach."""

Decided = list[tuple[Emitted, ...]]
"""The records ``seek`` decided, one entry per decision."""


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check here runs its lanes in this process: the spies below count calls made
    here, and a lane that ran in a forked child would be missed (when it does depends on
    the machine's load)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")


def _chain(tools: Sequence[str], **extra: Any) -> list[Requirement]:
    """Each tool only after the one before it (``extra``: more parameters for each)."""
    return [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}", **extra)
        for earlier, later in itertools.pairwise(tools)
    ]


def _bounds(system: System) -> Callable[[Component, str], Distances]:
    """``bounds.distances`` over the system's tools, memoised as the engine memoises them."""
    memo: dict[tuple[int, str], Distances] = {}

    def bounds(comp: Component, goal: str) -> Distances:
        key = (id(comp), goal)
        if key not in memo:
            memo[key] = distances(comp, system.tools, goal)
        return memo[key]

    return bounds


def _seek(system: System, goal: str, **kwargs: Any) -> tuple[Event, ...] | None:
    return seek(system, goal, _bounds(system), **{"limit": 1000, **kwargs})


def _estimates(system: System, goal: str) -> Estimates:
    return Estimates(system, goal, _bounds(system))


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> Decided:
    """The records ``seek`` decides: one entry per state and value of its opaque checks."""
    decided: Decided = []
    real = decide  # what seek_module calls

    def counting(system: System, records: tuple[Emitted, ...]) -> Outcome:
        decided.append(records)
        return real(system, records)

    monkeypatch.setattr(seek_module, "decide", counting)
    return decided


def _reachable(system: System) -> list[State]:
    """Every reachable state, breadth-first (small systems only)."""
    seen = {system.initial: None}
    queue = deque([system.initial])
    while queue:
        state = queue.popleft()
        for tool in sorted(callable_at(system, state), key=system.tools.index):
            for status in STATUSES:
                after = system.successor(state, (tool, status))
                if after not in seen:
                    seen[after] = None
                    queue.append(after)
    return list(seen)


class _Denial(Monitor):
    """Denies ``tool`` from the first successful call of ``trigger`` on (``until``: before
    it, and no more after)."""

    def __init__(self, tool: str, trigger: str, *, until: bool = False) -> None:
        self.tool, self.trigger, self.until = tool, trigger, until

    def initial(self) -> Hashable:
        return False

    def advance(self, view: Hashable, tool: str, status: Status) -> Hashable:
        return bool(view) or (tool == self.trigger and status == "ok")

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Any]:
        return [~allowed(self.tool)] if bool(view) != self.until else []

    def tools(self) -> frozenset[str]:
        return frozenset({self.trigger})


# -- seek on hand-built policies ---------------------------------------------------------------


def test_a_chain_of_prerequisites_is_walked_in_order(decisions: Decided) -> None:
    system = System(CHAIN, _chain(CHAIN))
    history = _seek(system, "f")
    assert history == (("a", "ok"), ("b", "ok"), ("c", "ok"), ("d", "ok"), ("e", "ok"))
    # One decision per state on the way, and the goal's: the guide never strays.
    assert len(decisions) <= 3 * len(history)
    assert len(decisions) == len(history) + 1
    assert reaches(system, history, "f")


def test_only_successful_calls_open_the_next_link() -> None:
    # `only_success_invocations` is on by default: a failed or denied `a` does not count, so
    # the history must be all `ok` (seek tries `ok` first, and it is the only way).
    system = System(CHAIN, _chain(CHAIN))
    history = _seek(system, "f")
    assert history is not None
    failing: tuple[Status, ...] = ("error", "denied")
    for i, status in itertools.product(range(len(history)), failing):
        changed = list(history)
        changed[i] = (history[i][0], status)
        assert not reaches(system, changed, "f"), changed
    # Counting every call, a failed one opens the next link as well.
    loose = System(CHAIN, _chain(CHAIN, only_success_invocations=False))
    failed: list[Event] = [(tool, "error") for tool, _ in history]
    assert reaches(loose, failed, "f")
    assert _seek(loose, "f") == history  # `ok` still comes first


def test_the_helpful_tools_keep_the_search_off_the_others(
    monkeypatch: pytest.MonkeyPatch, decisions: Decided
) -> None:
    # Two free tools with a cap: each call of them is a new state, and none helps.
    fillers = ["x", "y"]
    reqs = [*_chain(CHAIN), *(C(t, max_invocations=2, name=f"cap-{t}") for t in fillers)]
    system = System([*CHAIN, *fillers], reqs)
    stepped: list[str] = []
    successor = system.successor

    def recording(state: State, event: Event) -> State:
        stepped.append(event[0])
        return successor(state, event)

    monkeypatch.setattr(system, "successor", recording)
    history = _seek(system, "f")
    assert history == tuple((t, "ok") for t in CHAIN[:-1])
    assert len(decisions) == len(history) + 1
    assert not set(stepped) & set(fillers)


def test_a_forced_step_in_the_way_is_taken(decisions: Decided) -> None:
    # `z` is hard-forced at the second (counted) step, which closes `f` (and `b`) there:
    # the guide sees it, and `z` is the helpful step.
    tools = [*CHAIN, "z"]
    system = System(tools, [*_chain(CHAIN), C("z", force_at_step=2, name="z-at-2")])
    history = _seek(system, "f")
    assert history is not None
    assert history == (("a", "ok"), ("z", "ok"), ("b", "ok"), ("c", "ok"), ("d", "ok"), ("e", "ok"))
    assert walk(system, history) is not None
    assert reaches(system, history, "f")
    assert len(decisions) == len(history) + 1
    after_a = system.successor(system.initial, ("a", "ok"))
    assert _estimates(system, "f").guide(after_a)[1] == {"z"}


def test_where_no_helpful_tool_is_callable_every_callable_one_is_taken(
    decisions: Decided,
) -> None:
    # The estimates skip yielding requirements: after `a`, `b` looks open and nothing helps,
    # but `no-b-before-w` (yielding, nothing clashes with it) still denies `b` until `w`.
    tools = ["a", "b", "w"]
    reqs = [
        C("b", only_after=["a"], name="b-after-a"),
        Monitored(_Denial("b", "w", until=True), name="no-b-before-w", yielding=True),
    ]
    system = System(tools, reqs)
    after_a = system.successor(system.initial, ("a", "ok"))
    assert _estimates(system, "b").guide(after_a) == (0, frozenset())
    assert "b" not in callable_at(system, after_a)
    history = _seek(system, "b")
    assert history == (("a", "ok"), ("w", "ok"))
    assert reaches(system, history, "b")
    # The first search stepped on through `w`: it did not run dry and start over.
    assert len(decisions) == len(history) + 1


def test_within_keeps_only_histories_that_fit(decisions: Decided) -> None:
    system = System(["t", "a"], [C("t", min_invocations=3, name="thrice")])
    assert _estimates(system, FINAL_ANSWER).bound(system.initial) == 3
    assert _seek(system, FINAL_ANSWER, within=2) is None
    assert decisions == []  # the bound at the start (3) leaves no room in 2 steps
    thrice = (("t", "ok"),) * 3
    assert _seek(system, FINAL_ANSWER, within=3) == thrice
    assert len(decisions) == 4
    assert _seek(system, FINAL_ANSWER) == thrice
    assert _seek(system, FINAL_ANSWER, within=10) == thrice


def test_a_search_that_avoids_tools_never_calls_them(decisions: Decided) -> None:
    # The stop waits for `c`, which comes only after `a`; `b` is free. Avoiding `b` changes
    # nothing, avoiding `a` leaves no history, and avoiding `c` is seen to leave none
    # before any decision: the stop needs a call of it.
    system = System(
        ["b", "a", "c"],
        [C("c", min_invocations=1, name="needs-c"), C("c", only_after=["a"], name="c-late")],
    )
    history = (("a", "ok"), ("c", "ok"))
    assert _seek(system, FINAL_ANSWER) == history
    assert _seek(system, FINAL_ANSWER, avoid=frozenset({"b"})) == history
    assert _seek(system, FINAL_ANSWER, avoid=frozenset({"a"})) is None
    del decisions[:]
    assert _seek(system, FINAL_ANSWER, avoid=frozenset({"c"})) is None
    assert decisions == []
    avoiding = Estimates(system, FINAL_ANSWER, _bounds(system), frozenset({"c"}))
    assert avoiding.bound(system.initial) is None
    assert _estimates(system, FINAL_ANSWER).bound(system.initial) == 1
    # A helpful tool that is avoided is no way forward: the search steps through the others.
    assert avoiding.guide(system.initial)[0] >= UNREACHABLE


def _alternating(tools: list[str]) -> System:
    """The stop needs `t` three times, and `a` twice, each `a` right after a `t` (a soft
    force): `t a t a t a`, six steps, whichever tool is declared first."""
    reqs = [
        C("t", min_invocations=3, name="t-thrice"),
        C("a", force_after=["t"], min_invocations=2, name="a-after-t"),
    ]
    return System(tools, reqs)


def test_within_finds_a_history_that_fits_whenever_one_exists() -> None:
    # Declared first, `a` leads the search to states of the 6-step history one step too
    # deep: with a budget, a shorter history to a known state is taken up again.
    system = _alternating(["a", "t"])
    assert analyse(system).finish_depth == 6
    history = _seek(system, FINAL_ANSWER, within=6, limit=100_000)
    assert history is not None and len(history) <= 6


def test_a_history_that_fits_is_found_by_the_engine_either_way() -> None:
    for tools in (["a", "t"], ["t", "a"]):
        system = _alternating(tools)
        assert len(_seek(system, FINAL_ANSWER) or ()) >= 6
        found = analyse_symbolic(system, focus="finish:6")
        example = found.example
        assert example is not None and len(example) <= 6, tools
        assert reaches(system, example, FINAL_ANSWER)
        assert (found.finish_depth or found.finishes_within) == 6
    assert _seek(_alternating(["t", "a"]), FINAL_ANSWER, within=6) is not None


def test_a_goal_open_at_the_start_takes_no_step(decisions: Decided) -> None:
    system = System(["t", "a"], [C("t", only_after=["a"], name="t-after-a")])
    assert _seek(system, FINAL_ANSWER, within=0) == ()
    assert _seek(system, "a", within=0) == ()
    assert len(decisions) == 2
    assert _seek(system, "t", within=0) is None
    assert _seek(system, "t", within=1) == (("a", "ok"),)


def test_ties_go_to_the_declared_order() -> None:
    reqs = [C("t", min_invocations=1, name="t-once"), C("u", min_invocations=1, name="u-once")]
    assert _seek(System(["u", "t"], reqs), FINAL_ANSWER) == (("u", "ok"), ("t", "ok"))
    assert _seek(System(["t", "u"], reqs), FINAL_ANSWER) == (("t", "ok"), ("u", "ok"))


def test_an_unreachable_goal_is_given_up_without_using_the_limit(
    decisions: Decided,
) -> None:
    # `u` is hard-forced at the first step, and `t` only runs before `u`: never.
    tools = ["t", "u", "x"]
    reqs = [
        C("t", only_before=["u"], name="t-before-u"),
        C("u", force_at_step=1, name="u-first"),
        C("x", max_invocations=3, name="cap-x"),
    ]
    system = System(tools, reqs)
    assert "t" not in analyse(system).allowed_tools
    assert _seek(system, "t", limit=100_000) is None
    # The bound drops every state after `u` (`t` never opens again): only the start is left,
    # decided once by each of the two searches.
    assert len(decisions) <= 2


def test_a_tool_no_component_ever_opens_is_not_searched(
    decisions: Decided,
) -> None:
    system = System(["t", "a"], [C("t", max_invocations=0, name="never-t")])
    assert _estimates(system, "t").bound(system.initial) is None
    assert _seek(system, "t", limit=100_000) is None
    assert decisions == []


def test_a_search_cut_short_by_the_limit_finds_nothing(
    decisions: Decided,
) -> None:
    system = System(CHAIN, _chain(CHAIN))
    assert _seek(system, "f", limit=5) is None  # the goal is the sixth state decided
    assert len(decisions) == 5
    assert _seek(system, "f", limit=6) is not None


# -- the estimates ---------------------------------------------------------------------------


def test_distances_to_a_tool_end_where_a_component_leaves_it_open() -> None:
    system = System(["t", "a", "z"], [C("t", only_after=["a"], name="t-after-a")])
    (comp,) = system.components
    assert distances(comp, system.tools, "t").steps[0] == 1
    assert distances(comp, system.tools, "t").calls["a"][0] == 1
    assert distances(comp, system.tools, "a").steps[0] == 0
    assert distances(comp, system.tools).steps[0] == 0  # the stop is never denied
    # A hard force leaves only its own tool (and the stop) open.
    system = System(["t", "z"], [C("z", force_at_step=1, name="z-first")])
    (comp,) = system.components
    assert distances(comp, system.tools, "t").steps[0] == 1
    assert distances(comp, system.tools, "z").steps[0] == 0
    # The stop is open under the force itself, but `force_prevent_stop` denies it.
    assert distances(comp, system.tools, FINAL_ANSWER).steps[0] == 1


def test_the_bound_is_none_exactly_where_a_strict_component_never_opens_the_goal() -> None:
    tools = ["t", "u", "v"]
    reqs = [
        C("t", only_before=["u"], name="t-before-u"),
        Monitored(_Denial("t", "v"), name="no-t-after-v", yielding=True),
    ]
    system = System(tools, reqs)
    bounds = _bounds(system)
    estimates = Estimates(system, "t", bounds)
    seen = {"none": 0, "yielding": 0}
    for state in _reachable(system):
        closed = {
            c.requirement.name
            for i, c in enumerate(system.components)
            if bounds(c, "t").steps[state[i]] >= UNREACHABLE
        }
        assert (estimates.bound(state) is None) == ("t-before-u" in closed), closed
        seen["none"] += estimates.bound(state) is None
        # The yielding requirement gives way when it clashes: it bounds nothing.
        seen["yielding"] += closed == {"no-t-after-v"}
    assert seen["none"] and seen["yielding"]


def test_the_guide_follows_the_chain_one_step_at_a_time() -> None:
    system = System(CHAIN, _chain(CHAIN))
    estimates = _estimates(system, "f")
    state = system.initial
    for left, tool in zip(range(5, 0, -1), CHAIN, strict=False):
        assert estimates.guide(state) == (left, frozenset({tool}))
        assert estimates.bound(state) == 1  # the bound sees one link only
        state = system.successor(state, (tool, "ok"))
    # `f` is open in every component: nothing left, nothing to help.
    assert estimates.guide(state) == (0, frozenset())
    assert estimates.bound(state) == 0


def test_the_guide_is_zero_where_nothing_keeps_the_goal_closed() -> None:
    system = System(["t", "a"], [C("t", only_after=["a"], name="t-after-a")])
    for goal in ("a", FINAL_ANSWER):
        assert _estimates(system, goal).guide(system.initial) == (0, frozenset())
    assert _estimates(system, "t").guide(system.initial) == (1, frozenset({"a"}))


def test_the_guide_adds_what_may_be_shared_so_it_is_no_bound() -> None:
    # `d` needs `b` and `c`, each of which needs `a`: three steps, but the guide counts `a`
    # for both.
    tools = ["a", "b", "c", "d"]
    reqs = [
        C("b", only_after=["a"], name="b-after-a"),
        C("c", only_after=["a"], name="c-after-a"),
        C("d", only_after=["b", "c"], name="d-after-b-c"),
    ]
    system = System(tools, reqs)
    estimates = _estimates(system, "d")
    far, helpful = estimates.guide(system.initial)
    assert helpful == {"a"}
    history = _seek(system, "d")
    assert history == (("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert analyse(system).allowed_tools >= {"d"}
    bound = estimates.bound(system.initial)
    assert bound is not None and bound <= len(history) < far


# -- the symbolic engine asks seek ---------------------------------------------------------


@pytest.fixture
def sought(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Event, ...] | None]]:
    """The questions the symbolic engine asks ``seek``, with what it answered."""
    asked: list[tuple[str, tuple[Event, ...] | None]] = []

    def recording(system: System, goal: str, *args: Any, **kwargs: Any) -> Any:
        found = seek(system, goal, *args, **kwargs)
        asked.append((goal, found))
        return found

    monkeypatch.setattr(symbolic, "seek", recording)
    return asked


def test_a_tool_deeper_than_the_early_layers_is_found_by_seek(
    sought: list[tuple[str, tuple[Event, ...] | None]],
) -> None:
    assert len(LONG) - 1 > EARLY_LAYERS
    system = System(LONG, _chain(LONG))
    found = analyse_symbolic(system, focus="tool:t11")
    assert found.allowed_tools == {"t11"}
    assert found.partial and found.complete
    assert found.depth_done <= EARLY_LAYERS  # the layers did not get there
    assert found.example == tuple((t, "ok") for t in LONG[:-1])
    assert reaches(system, found.example, "t11")
    assert sought == [("t11", found.example)]


def test_a_tool_the_early_layers_reach_is_not_sought(
    sought: list[tuple[str, tuple[Event, ...] | None]],
) -> None:
    system = System(LONG, _chain(LONG))
    found = analyse_symbolic(system, focus="tool:t5")
    assert found.partial and found.example == tuple((t, "ok") for t in LONG[:5])
    assert sought == []


def test_a_long_chain_has_no_dead_tool_end_to_end() -> None:
    report = check(LONG, _chain(LONG), engine="symbolic")
    assert report.complete
    assert not [f for f in report.findings if f.id == "dead-tool"]


def test_a_core_search_settles_deep_subsystems_with_seek(
    sought: list[tuple[str, tuple[Event, ...] | None]],
) -> None:
    # `t11` only before `t0`, which the chain needs first: dead, and the whole chain is the
    # core. Each link counts up to two calls, so a short explicit search does not cover the
    # subsystems: the core search asks `tool:t11` of the symbolic engine, whose early layers
    # are too shallow for the chain without `t11-before-t0`.
    reqs = [*_chain(LONG, max_invocations=2), C("t11", only_before=["t0"], name="t11-before-t0")]
    report = check(LONG, reqs, engine="symbolic")
    assert report.complete
    (dead,) = [f for f in report.findings if f.id == "dead-tool"]
    assert dead.tool == "t11"
    assert {c.requirement for c in dead.core} == {r.name for r in reqs}
    assert sought and all(goal == "t11" for goal, _ in sought)
    assert any(history is not None for _, history in sought)


def _stop_after_t11() -> System:
    """The chain of ``LONG``, the stop waiting for ``t11``: 12 steps at the least."""
    return System(LONG, [*_chain(LONG), C("t11", min_invocations=1, name="t11-once")])


def test_finish_within_a_budget_is_answered_by_seek(
    sought: list[tuple[str, tuple[Event, ...] | None]],
) -> None:
    system = _stop_after_t11()
    found = analyse_symbolic(system, focus="finish:15")
    assert found.partial
    assert found.finishes_within is not None and found.finishes_within <= 15
    assert found.example is not None and len(found.example) == found.finishes_within
    assert reaches(system, found.example, FINAL_ANSWER)
    assert sought == [(FINAL_ANSWER, found.example)]


def _no_layers(self: Any, *args: Any) -> Any:
    raise AssertionError("no layer is computed")


def test_a_budget_seek_cannot_meet_is_answered_by_bounded_model_checking(
    sought: list[tuple[str, tuple[Event, ...] | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    system = _stop_after_t11()
    assert analyse(system).finish_depth == 12
    monkeypatch.setattr(symbolic._Symbolic, "_layer", _no_layers)
    found = analyse_symbolic(system, focus="finish:11")
    # No history of 11 steps: shown by Z3, every state that deep covered.
    assert (found.finish_depth, found.finishes_within, found.example) == (None, None, None)
    assert found.complete and not found.partial and found.depth_done == 11
    assert sought == [(FINAL_ANSWER, None)]
    # A history the directed search would find too, but not in its first 0 states: some
    # history of at most 13 steps (not necessarily the shortest).
    monkeypatch.setattr(symbolic, "SEEK_STATES", 0)
    found = analyse_symbolic(system, focus="finish:13")
    assert found.partial and found.finishes_within in (12, 13)
    assert found.example is not None and len(found.example) == found.finishes_within
    assert reaches(system, found.example, FINAL_ANSWER)


def test_a_bounded_model_check_stopped_at_its_limit_leaves_the_layers_to_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system = _stop_after_t11()
    monkeypatch.setattr(symbolic, "SEEK_STATES", 0)
    # Stopped at its own limit (not the deadline, which this analysis has none of).
    monkeypatch.setattr(symbolic.Unrolled, "reaches", _gave_up)
    found = analyse_symbolic(system, focus="finish:13")
    assert (found.finish_depth, found.complete, found.partial) == (12, True, False)
    assert found.example is not None and reaches(system, found.example, FINAL_ANSWER)


def test_a_bounded_model_check_stopped_at_the_deadline_cuts_the_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system = _stop_after_t11()
    monkeypatch.setattr(symbolic, "SEEK_STATES", 0)
    monkeypatch.setattr(symbolic._Symbolic, "_layer", _no_layers)
    found = analyse_symbolic(system, focus="finish:13", deadline=time.monotonic() - 1)
    assert not found.complete and found.reason == "the time limit ran out"
    assert (found.finish_depth, found.finishes_within, found.example) == (None, None, None)


def _gave_up(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise GaveUp


def test_the_search_leaves_no_reference_cycle() -> None:
    # A cycle through the estimates would keep the caller's `bounds` (in the engine, the
    # BDD manager behind it) for the cyclic collector, which frees a manager and its nodes
    # in any order ("nodes referenced upon shutdown").
    system = System(CHAIN, _chain(CHAIN))
    bounds = _bounds(system)
    seek(system, "f", bounds, limit=64)  # warm the reasoner's caches
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert seek(system, "f", bounds, limit=64) is not None
        assert Estimates(system, "f", bounds).guide(system.initial)[0] == 5
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_the_search_over_every_step_gets_a_quarter_of_the_limit() -> None:
    # Found by the completeness law, whose room (twice the states) forgot this quarter: here
    # the helpful steps (`a`, which the stop waits for) lead nowhere at first, and the
    # search over every step needs all five states.
    reqs = [
        C(
            "b",
            force_at_step=2,
            only_before=["a"],
            force_prevent_stop=False,
            only_success_invocations=False,
            custom_checks=[lambda state: True],  # opaque to the checker
            priority=1,
            name="r0",
        ),
        C(
            "a",
            force_prevent_stop=False,
            min_invocations=1,
            only_success_invocations=False,
            consecutive_allowed=False,
            priority=1,
            name="r4",
        ),
    ]
    system = System(["a", "b"], reqs)

    @cache
    def bounds(comp: Component, goal: str) -> Distances:
        return distances(comp, system.tools, goal)

    assert seek(system, FINAL_ANSWER, bounds, limit=12) is None
    found = seek(system, FINAL_ANSWER, bounds, limit=24)
    assert found == (("b", "ok"), ("b", "ok"), ("a", "ok"))


def test_a_search_given_a_deadline_stops_there() -> None:
    # A chain of 100 "only after"s: the history is 100 steps deep, past the first look at
    # the clock. Without a deadline it is found; with one that has passed, nothing is.
    import time

    tools = [f"t{i:03}" for i in range(100)]
    reqs: list[Requirement] = [
        C(tools[i], only_after=[tools[i - 1]], name=f"c{i}") for i in range(1, 100)
    ]
    reqs.append(C(tools[-1], min_invocations=1, name="last"))
    system = System(tools, reqs)

    def bounds(comp: Component, goal: str) -> Distances:
        return distances(comp, system.tools, goal)

    found = seek(system, FINAL_ANSWER, bounds, limit=10_000)
    assert found is not None and len(found) == 100
    late = time.monotonic() - 1
    assert seek(system, FINAL_ANSWER, bounds, limit=10_000, deadline=late) is None


def test_a_stop_the_walk_passes_by_is_found_by_the_search_without_layers() -> None:
    # The walk through states that can still finish takes `a` first while it leads to a new
    # state: thirty calls of it, past the budget of ten, before `b` lets the run stop. The
    # directed search finds the one call of `b`: the budget holds without the layers to
    # the first stop (``finish_depth`` is never computed).
    system = System(
        ["a", "b"],
        [C("a", max_invocations=30, name="a-capped"), C("b", min_invocations=1, name="b-once")],
    )
    assert analyse(system).finish_depth == 1
    found = analyse_symbolic(system, budget=10)
    assert found.complete
    assert found.finish_depth is None
    assert found.finishes_within is not None and found.finishes_within <= 10


def test_the_engine_skips_bounded_model_checking_where_a_smaller_system_showed_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The early layers stop at once (no node to spare) and 11 components count as many,
    # so "is `t11` ever allowed?" goes to bounded model checking (here it gives up), then
    # to the whole reachable set.
    monkeypatch.setattr(symbolic_layers, "EARLY_NODES", 0)
    monkeypatch.setattr(symbolic, "INTO_COMPONENTS", 0)
    asked: list[int] = []

    def gave_up(self: Any, where: Any, steps: int, *args: Any, **kwargs: Any) -> Any:
        asked.append(len(self.system.components))
        raise GaveUp

    monkeypatch.setattr(symbolic.Unrolled, "reaches", gave_up)
    monkeypatch.setattr(symbolic, "SEEK_STATES", 0)  # no directed search either
    system = System(LONG, _chain(LONG))
    names = [r.name for r in system.requirements]
    engine = run_module._engine(
        system, "symbolic", max_states=None, clock=run_module._Clock(None), budget=20
    )
    first = engine(system.subsystem(names[1:]), "tool:t11")
    assert first.complete and not first.partial and "t11" in first.allowed_tools
    assert asked == [len(names) - 1]
    # Every requirement of that system, and one more: no history it lacked, so Z3 is not
    # asked again; the reachable set answers as before.
    whole = engine(system, "tool:t11")
    assert whole.complete and not whole.partial and "t11" in whole.allowed_tools
    assert asked == [len(names) - 1]
    # A system without one of the first one's requirements is asked as ever, and so is
    # another question.
    engine(system.subsystem(names[2:]), "tool:t11")
    engine(system, "tool:t10")
    assert asked == [len(names) - 1, len(names) - 2, len(names)]


def test_the_engine_skips_bounded_model_checking_for_a_budget_as_well(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []

    def gave_up(self: Any, where: Any, steps: int, *args: Any, **kwargs: Any) -> Any:
        asked.append(len(self.system.components))
        raise GaveUp

    monkeypatch.setattr(symbolic.Unrolled, "reaches", gave_up)
    monkeypatch.setattr(symbolic, "SEEK_STATES", 0)
    system = _stop_after_t11()
    names = [r.name for r in system.requirements]
    engine = run_module._engine(
        system, "symbolic", max_states=None, clock=run_module._Clock(None), budget=20
    )
    # Z3 gives up; the layers answer: a stop within 13 steps, none within 10.
    smaller = system.subsystem(names[1:])
    assert engine(smaller, "finish:13").finish_depth == 11
    assert asked == [len(names) - 1]
    whole = engine(system, "finish:10")
    assert whole.complete and (whole.finish_depth, whole.finishes_within) == (None, None)
    assert asked == [len(names) - 1, len(names)]  # another question: asked
    assert engine(system, "finish:13").finish_depth == 12
    assert asked == [len(names) - 1, len(names)]  # the same question, more requirements
