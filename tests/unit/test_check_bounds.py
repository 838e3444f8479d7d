"""``check/bounds.py``: per component, the fewest steps (and calls of each tool) of a relaxed
path to a view that lets the run stop; and how the symbolic engine prunes ``finish:N`` with
them (``_Symbolic._fits``) without changing its answer.

The laws (every bound is a lower bound on the strict system; pruning changes no answer on
random policies) are in tests/property/test_check_bounds_laws.py.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pytest
from monitored import Monitored

from ruleengine import (
    FINAL_ANSWER,
    Monitor,
    Requirement,
    Rule,
    allowed,
    can_stop,
    forced,
)
from ruleengine.check import check, symbolic
from ruleengine.check.bounds import UNREACHABLE, Distances, distances
from ruleengine.check.explicit import analyse
from ruleengine.check.symbolic import Encoding, _Symbolic, analyse_symbolic
from ruleengine.check.system import Component, System
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.requirements import CycleGuard
from ruleengine.state import STATUSES, Status


def _only(tools: list[str], req: Requirement) -> tuple[Component, Distances]:
    """The one component of a system of ``req`` alone, and its distances."""
    system = System(tools, [req])
    (comp,) = system.components
    return comp, distances(comp, system.tools)


def _after(comp: Component, steps: Sequence[tuple[str, Status]]) -> int:
    view = 0
    for tool, status in steps:
        view = comp.move(view, tool, status)
    return view


class _Counting(Monitor):
    """Calls of ``tool`` ending with one of ``statuses``, saturated at ``limit``; below it,
    emits ``items`` (with ``otherwise``: ``items`` when its one opaque check passes, else
    ``otherwise``)."""

    def __init__(
        self,
        tool: str,
        limit: int,
        items: Sequence[Any],
        *,
        statuses: Sequence[Status] = STATUSES,
        otherwise: Sequence[Any] | None = None,
    ) -> None:
        self.tool, self.limit, self.items = tool, limit, list(items)
        self.statuses = tuple(statuses)
        self.otherwise = None if otherwise is None else list(otherwise)
        self.checks = 0 if otherwise is None else 1

    def initial(self) -> Hashable:
        return 0

    def advance(self, view: Hashable, tool: str, status: Status) -> Hashable:
        assert isinstance(view, int)
        counted = tool == self.tool and status in self.statuses
        return min(view + 1, self.limit) if counted else view

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Any]:
        assert isinstance(view, int)
        if view >= self.limit:
            return []
        if self.otherwise is not None and not (checks or (True,))[0]:
            return self.otherwise
        return self.items

    def tools(self) -> frozenset[str]:
        return frozenset({self.tool})


def _no_stop_before(tool: str, calls: int, *, yielding: bool = False) -> Monitored:
    return Monitored(
        _Counting(tool, calls, [~can_stop]), name=f"{tool}-{calls}-first", yielding=yielding
    )


# -- distances on hand-built requirements -----------------------------------------------------


def test_min_invocations_need_that_many_calls_of_the_target() -> None:
    comp, dist = _only(["t", "a"], C("t", min_invocations=2, name="twice"))
    assert dist.steps[0] == 2
    assert set(dist.calls) == {"t"} and dist.calls["t"][0] == 2
    once = _after(comp, [("t", "ok")])
    assert (dist.steps[once], dist.calls["t"][once]) == (1, 1)
    twice = _after(comp, [("t", "ok"), ("t", "ok")])
    assert (dist.steps[twice], dist.calls["t"][twice]) == (0, 0)
    # Another tool moves nothing: the bound stays where it was.
    assert dist.steps[_after(comp, [("a", "ok")])] == 2


def test_only_successful_calls_count_towards_min_invocations() -> None:
    comp, dist = _only(
        ["t", "a"], C("t", min_invocations=2, only_success_invocations=True, name="twice")
    )
    for status in ("error", "denied"):
        view = _after(comp, [("t", status)])
        assert (dist.steps[view], dist.calls["t"][view]) == (2, 2), status
    assert dist.steps[_after(comp, [("t", "error"), ("t", "ok")])] == 1
    # Counting every call, the failed one counts.
    comp, dist = _only(
        ["t", "a"], C("t", min_invocations=2, only_success_invocations=False, name="twice")
    )
    assert dist.steps[_after(comp, [("t", "error")])] == 1


def test_only_after_adds_the_prerequisite_to_the_path() -> None:
    comp, dist = _only(["t", "a"], C("t", min_invocations=1, only_after=["a"], name="t-after-a"))
    assert dist.steps[0] == 2
    assert set(dist.calls) == {"a", "t"}
    assert (dist.calls["a"][0], dist.calls["t"][0]) == (1, 1)
    after_a = _after(comp, [("a", "ok")])
    assert dist.steps[after_a] == 1
    assert (dist.calls["a"][after_a], dist.calls["t"][after_a]) == (0, 1)


def test_only_before_can_make_the_stop_unreachable() -> None:
    comp, dist = _only(["t", "b"], C("t", min_invocations=1, only_before=["b"], name="t-before-b"))
    assert dist.steps[0] == 1 and dist.calls["t"][0] == 1
    # `b` first: `t` is never allowed again, so its minimum is never met.
    gone = _after(comp, [("b", "ok")])
    assert dist.steps[gone] == UNREACHABLE
    assert dist.calls["t"][gone] == UNREACHABLE
    assert dist.steps[_after(comp, [("t", "ok"), ("b", "ok")])] == 0


@pytest.mark.parametrize(
    "req",
    [
        C("t", max_invocations=1, name="cap"),
        C("t", only_after=["a"], name="t-after-a"),
        C("t", only_before=["a"], name="t-before-a"),
        C("t", consecutive_allowed=False, name="apart"),
        C("t", force_at_step=2, force_prevent_stop=False, name="t-at-2"),
    ],
    ids=["max", "only-after", "only-before", "apart", "force-at-step"],
)
def test_a_requirement_that_never_prevents_a_stop_bounds_nothing(req: C) -> None:
    comp, dist = _only(["t", "a"], req)
    assert len(comp.views) > 1  # it does move: the zeros are not for want of views
    assert dist.steps == (0,) * len(comp.views)
    assert dist.calls == {}


def test_no_consecutive_calls_need_another_tool_in_between() -> None:
    comp, dist = _only(
        ["t", "b"], C("t", min_invocations=2, consecutive_allowed=False, name="twice-apart")
    )
    assert dist.steps[0] == 3
    assert (dist.calls["t"][0], dist.calls["b"][0]) == (2, 1)
    assert dist.steps[_after(comp, [("t", "ok")])] == 2
    # With two other tools, neither one is needed: only `t`'s calls are bounded.
    comp, dist = _only(
        ["t", "b", "c"],
        C("t", min_invocations=2, consecutive_allowed=False, name="twice-apart"),
    )
    assert dist.steps[0] == 3
    assert set(dist.calls) == {"t"} and dist.calls["t"][0] == 2


def test_distances_are_deterministic_and_memoised_by_the_encoding() -> None:
    system = System(["t", "a"], [C("t", min_invocations=2, only_after=["a"], name="x")])
    (comp,) = system.components
    assert distances(comp, system.tools) == distances(comp, system.tools)
    enc = Encoding(system)
    assert enc.distances(comp) is enc.distances(comp)
    assert enc.distances(comp) == distances(comp, system.tools)


def test_at_least_holds_the_views_whose_bound_is_that_high() -> None:
    system = System(["t", "a"], [C("t", min_invocations=2, name="twice")])
    (comp,) = system.components
    enc = Encoding(system)
    bits = enc.bits[id(comp)]
    once = comp.move(0, "t", "ok")

    def holds(u: Any, view: int) -> bool:
        return bool(enc.bdd.let(enc.state_bits([comp], (view,)), u) == enc.bdd.true)

    assert holds(enc.at_least(comp, None, 2), 0)
    assert not holds(enc.at_least(comp, None, 2), once)
    assert holds(enc.at_least(comp, "t", 1), once)
    assert enc.at_least(comp, None, 3) == enc.bdd.false
    assert enc.at_least(comp, None, 0) == _cubes(enc, bits, len(comp.views))


def _cubes(enc: Encoding, bits: tuple[str, ...], views: int) -> Any:
    out = enc.bdd.false
    for view in range(views):
        out |= enc.cube(bits, view)
    return out


def test_every_status_is_a_step() -> None:
    # The stop waits for a failed call of `t`: a successful one does not count.
    failed = Monitored(_Counting("t", 1, [~can_stop], statuses=["error"]), name="t-must-fail-once")
    comp, dist = _only(["t", "a"], failed)
    assert (dist.steps[0], dist.calls["t"][0]) == (1, 1)
    assert dist.steps[_after(comp, [("t", "ok")])] == 1
    assert dist.steps[_after(comp, [("t", "error")])] == 0


def test_a_rule_under_some_check_values_only_bounds_nothing() -> None:
    # Until `a` runs, the stop is denied; `a` is denied (or `b` hard-forced) only when
    # the opaque check passes. Under the other value `a` may run: one step suffices.
    for name, items in (
        ("no-a-if", [~allowed("a"), ~can_stop]),
        ("b-if", [forced("b"), ~can_stop]),
    ):
        req = Monitored(_Counting("a", 1, items, otherwise=[~can_stop]), name=name)
        comp, dist = _only(["a", "b"], req)
        assert comp.opaque
        assert (dist.steps[0], dist.calls["a"][0]) == (1, 1), name
        assert analyse(System(["a", "b"], [req])).finish_depth == 1, name


def test_a_hard_force_leaves_only_its_tool_open() -> None:
    # Until `a` runs, `b` is hard-forced and the stop denied: in strict mode only `b` may
    # be called, so `a` never runs and the run never stops.
    forcing = Monitored(_Counting("a", 1, [forced("b"), ~can_stop]), name="b-until-a")
    _, dist = _only(["a", "b"], forcing)
    assert dist.steps[0] == UNREACHABLE
    assert analyse(System(["a", "b"], [forcing])).finish_depth is None
    # A soft force is not read: another requirement denying `b` would lift it. Alone it
    # holds, so the bound (1) is below the truth (never), as a lower bound may be.
    soft = Monitored(_Counting("a", 1, [Rule("b", forced=True), ~can_stop]), name="b-soft")
    _, dist = _only(["a", "b"], soft)
    assert dist.steps[0] == 1 and dist.calls["a"][0] == 1
    assert analyse(System(["a", "b"], [soft])).finish_depth is None
    lifted = Monitored(_Counting("a", 1, [~allowed("b")]), name="no-b-before-a")
    assert analyse(System(["a", "b"], [soft, lifted])).finish_depth == 1


# -- _fits: the pruning of finish:N ---------------------------------------------------------


def _fits_at_start(system: System, steps: int, enc: Encoding | None = None) -> list[bool]:
    """Per k = 0..steps, whether ``_fits(steps)[k]`` holds the initial state."""
    enc = enc if enc is not None else Encoding(system)
    sym = _Symbolic(system, enc, None, None, f"finish:{steps}")
    start = enc.cube([b for c in system.components for b in enc.bits[id(c)]], 0)
    return [start & u != enc.bdd.false for u in sym._fits(steps)]


def _unpruned(self: _Symbolic, steps: int) -> list[Any]:
    return [self.enc.bdd.true] * (steps + 1)


def _finish(system: System, steps: int, *, pruned: bool) -> tuple[Any, ...]:
    # The breadth-first layers alone: the directed search (`seek`) and the bounded model
    # check that come first would answer most of these questions before any layer.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
        patch.setattr(symbolic, "UNROLLED_SECONDS", 0)
        if not pruned:
            patch.setattr(_Symbolic, "_fits", _unpruned)
        found = analyse_symbolic(system, focus=f"finish:{steps}")
    return found.finish_depth, found.example, found.complete


def test_fits_takes_the_largest_component_bound() -> None:
    system = System(["t", "a"], [C("t", min_invocations=2, only_after=["a"], name="x")])
    # Three steps at least: `a`, then `t` twice.
    assert _fits_at_start(system, 5) == [False, False, False, True, True, True]
    assert _fits_at_start(system, 2) == [False, False, False]


def test_fits_skips_yielding_components() -> None:
    system = System(["a", "b"], [C("a", min_invocations=1, name="once-a"), CycleGuard()])
    enc = Encoding(system)
    asked: list[str] = []
    distances_of = enc.distances

    def recorded(comp: Component) -> Distances:
        asked.append(comp.requirement.name)
        return distances_of(comp)

    enc.distances = recorded  # type: ignore[method-assign]
    assert _fits_at_start(system, 3, enc) == [False, True, True, True]
    assert asked and "cycle-guard" not in asked
    alone = System(["a", "b"], [C("a", min_invocations=1, name="once-a")])
    assert _fits_at_start(alone, 3) == [False, True, True, True]


def test_a_yielding_requirements_denial_of_the_stop_bounds_nothing() -> None:
    # Its own distance is 2, but it gives way to `stop-allowed` (until `a` runs): the run
    # may stop after no step. Pruning by its distance would lose that stop.
    tools = ["t", "a"]
    stop_ok = Monitored(_Counting("a", 1, [allowed(FINAL_ANSWER)]), name="stop-allowed")
    system = System(tools, [_no_stop_before("t", 2, yielding=True), stop_ok])
    yielding = next(c for c in system.components if c.requirement.yielding)
    assert distances(yielding, system.tools).steps[0] == 2
    assert _fits_at_start(system, 1) == [True, True]
    for steps in (0, 1, 3):
        assert _finish(system, steps, pruned=True) == (0, (), True)
        assert _finish(system, steps, pruned=False) == (0, (), True)
    # Without the clash it holds: two calls of `t`, and the bound is exact there.
    alone = System(tools, [_no_stop_before("t", 2, yielding=True)])
    assert _finish(alone, 1, pruned=True) == (None, None, True)
    assert _finish(alone, 2, pruned=True) == (2, (("t", "ok"), ("t", "ok")), True)


# -- the bound alone proves a budget ------------------------------------------------------------


def test_the_sum_of_needed_calls_proves_the_budget() -> None:
    tools = ["a", "b", "c"]
    reqs = [C(t, min_invocations=3, name=f"{t}-thrice") for t in tools]
    report = check(tools, reqs, max_iterations=5)
    budget = [f for f in report.findings if f.id == "budget"]
    assert len(budget) == 1 and budget[0].min_steps == 9
    system = System(tools, reqs)
    # Each component needs 3 steps only; their calls of different tools add up to 9.
    assert all(distances(c, system.tools).steps[0] == 3 for c in system.components)
    assert _fits_at_start(system, 4) == [False] * 5
    assert _fits_at_start(system, 9) == [False] * 9 + [True]
    enc = Encoding(system)
    sym = _Symbolic(system, enc, None, None, "finish:4")
    found = sym.run()
    assert sym.start & sym._fits(4)[4] == enc.bdd.false
    assert (found.finish_depth, found.example, found.complete) == (None, None, True)
    assert len(sym.layers) == 1  # pruned at the start: no image was computed
    assert _finish(system, 9, pruned=True) == _finish(system, 9, pruned=False)
    assert _finish(system, 9, pruned=True)[0] == 9


def test_a_small_systems_within_question_waits_less_for_bounded_model_checking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "`t` twice, only after `a`": no history of at most 2 steps stops. The directed search
    # finds none, so Z3 is asked; on a system this small it gets its least time.
    system = System(["t", "a"], [C("t", min_invocations=2, only_after=["a"], name="x")])
    waited: list[float] = []
    reaches = symbolic.Unrolled.reaches

    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        waited.append(kwargs["seconds"])
        return reaches(self, *args, **kwargs)

    monkeypatch.setattr(symbolic.Unrolled, "reaches", recorded)
    monkeypatch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
    found = analyse_symbolic(system, focus="finish:2")
    assert found.complete and found.finish_depth is None and found.depth_done == 2
    assert waited == [symbolic.UNROLLED_LEAST]
    # In proportion to the components up to UNROLLED_COMPONENTS, then all of it.
    monkeypatch.setattr(symbolic, "UNROLLED_COMPONENTS", 1)
    assert analyse_symbolic(system, focus="finish:2").depth_done == 2
    assert waited[-1] == symbolic.UNROLLED_SECONDS
    monkeypatch.setattr(symbolic, "UNROLLED_COMPONENTS", 4)
    monkeypatch.setattr(symbolic, "UNROLLED_LEAST", 0.5)
    analyse_symbolic(system, focus="finish:2")
    assert waited[-1] == pytest.approx(symbolic.UNROLLED_SECONDS / 4)


def test_a_within_question_where_no_state_lets_the_run_stop_needs_no_model_checking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "`t` at least three times" and "at most twice": no reachable state lets the run stop,
    # which the projections show (the two requirements' pair) before Z3 is asked.
    system = System(
        ["t", "a"], [C("t", min_invocations=3, name="need"), C("t", max_invocations=2, name="cap")]
    )
    asked: list[object] = []
    monkeypatch.setattr(symbolic.Unrolled, "reaches", lambda *a, **k: asked.append(a))
    found = analyse_symbolic(system, focus="finish:32")
    assert found.complete and found.finish_depth is None and found.depth_done == 32
    assert asked == []
    assert analyse(system).finish_depth is None  # the explicit engine: never
