"""The calls soft forces cost beyond the needed tools (``landmarks.extra_calls``): what they
add, and the ways a force may drop that the bound must not count on."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pytest

from ruleengine import FINAL_ANSWER, Monitor, RunState, allowed, at_most, requirement
from ruleengine.check.explicit import analyse
from ruleengine.check.landmarks import extra_calls
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.requirements import Requirement


class _CalledOnce(Monitor):
    """Whether `a` was called: then at most one of `a` and `b` is allowed (a formula)."""

    def initial(self) -> Hashable:
        return False

    def advance(self, view: Hashable, tool: str, status: str) -> Hashable:  # type: ignore[override]
        return bool(view) or tool == "a"

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Any]:
        return [at_most(1, allowed("a"), allowed("b"))] if view else []

    def tools(self) -> frozenset[str]:
        return frozenset({"a"})


@requirement(name="one-of", monitor=_CalledOnce())
def _one_of(state: RunState) -> list[object]:
    if any(s.tool == "a" for s in state.steps):
        return [at_most(1, allowed("a"), allowed("b"))]
    return []


def _always(state: RunState) -> bool:
    return True


def _bounds(tools: list[str], requirements: Sequence[Requirement]) -> tuple[int, int, int]:
    """The needed tools, the extra calls, and the exact fewest steps before a stop."""
    system = System(tools, requirements)
    relaxed = Relaxed(system.components, system.tools)
    needed = relaxed.needed() - {FINAL_ANSWER}
    exact = analyse(system, live=False).finish_depth
    assert exact is not None
    return len(needed), extra_calls(system, needed, relaxed.needed_ok()), exact


def test_a_needed_trigger_costs_the_call_it_forces() -> None:
    assert _bounds(["a", "b"], [C("a", min_invocations=1), C("b", force_after=["a"])]) == (
        1,
        1,
        2,
    )


def test_denying_the_forced_tool_first_costs_a_call_too() -> None:
    # `b` is forced after `a` unless `c` came first: either way one call more.
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("b", force_after=["a"], name="force-b"),
        C("b", only_before=["c"], name="b-before-c"),
    ]
    assert _bounds(["a", "b", "c"], requirements) == (1, 1, 2)


def test_forced_calls_of_different_tools_add_up() -> None:
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("b", min_invocations=1, name="need-b"),
        C("c", force_after=["a"], name="force-c"),
        C("d", force_after=["b"], name="force-d"),
    ]
    assert _bounds(["a", "b", "c", "d"], requirements) == (2, 2, 4)


_FIVE = ["a", "b", "c", "d", "e"]
"""Five tools: a force after `a` watches them all, so it stays outside the group of another."""


def test_the_calls_two_rules_force_of_one_tool_add_up() -> None:
    # `c` after `a`, and `c` after `b`, in two rules: each sees one forced call; the group
    # that holds both sees two. Five tools: the rule on `a` does not tell `b` apart from `d`
    # and `e`, nor the rule on `b` tell `a` apart.
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("b", min_invocations=1, name="need-b"),
        C("c", force_after=["a"], name="c-after-a"),
        C("c", force_after=["b"], name="c-after-b"),
    ]
    assert _bounds(_FIVE, requirements) == (2, 2, 4)


def test_a_repeated_call_of_a_needed_tool_counts() -> None:
    # Both `a` and `b` set off `c`, which is needed: its second call is the extra one.
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("b", min_invocations=1, name="need-b"),
        C("c", min_invocations=1, name="need-c"),
        C("c", force_after=["a", "b"], name="force-c"),
    ]
    needed, extra, exact = _bounds(["a", "b", "c"], requirements)
    assert (needed, exact) == (3, 4)
    assert needed + extra == exact


def test_a_needed_tool_the_group_does_not_track_costs_nothing_more() -> None:
    # `x` waits for nine tools, all needed with it and `a`: the group that follows the
    # force of `x` after `a` tracks eight needed tools, and its goal does not wait for the
    # others (`n8`, `n9`, `x`). Their calls are counted with the needed tools, never as
    # extra ones: `n1`, ..., `n9`, `a`, `x` is a history of eleven steps.
    waited = [f"n{i}" for i in range(1, 10)]
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("x", min_invocations=1, name="need-x"),
        C("x", only_after=waited, name="x-after-all"),
        C("x", force_after=["a"], name="force-x"),
    ]
    assert _bounds(["a", *waited, "x"], requirements) == (11, 0, 11)


@pytest.mark.parametrize(
    ("tools", "dropper"),
    [
        # After `a`, `c` (priority 20) wins over `b`: `a, c` stops, and `c` is needed anyway.
        (_FIVE, C("c", force_after=["a"], priority=20, name="force-c")),
        # The same behind a custom check: it may force `c` after `a` (the check says yes)
        # or not; the bound must count on the first.
        (_FIVE, C("c", force_after=["a"], priority=20, custom_checks=[_always], name="c-if")),
        # Once `a` was called, at most one of `a` and `b` is allowed, and the assignment
        # keeps `a`: the force on `b` drops, and `a, c` lets the run stop.
        (["a", "b", "c"], _one_of),
    ],
    ids=["a force outside wins", "a force outside may win", "a formula denies"],
)
def test_a_force_that_may_drop_costs_nothing(tools: list[str], dropper: Requirement) -> None:
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("c", min_invocations=1, name="need-c"),
        C("b", force_after=["a"], name="force-b"),
        dropper,
    ]
    needed, extra, exact = _bounds(tools, requirements)
    assert exact == 2
    assert needed + extra <= exact


@pytest.mark.parametrize(
    ("c_priority", "b_priority"),
    [(20, 1), (10, 10)],
    ids=["by priority", "by declared order"],
)
def test_a_force_the_surely_forced_tool_beats_does_not_take_its_place(
    c_priority: int, b_priority: int
) -> None:
    # After `a`, both `b` and `c` are forced, and the pass forces the one that wins: `c`
    # by its priority, or `b` at equal priorities, declared first. Either way the winner's
    # call is one step more than the needed `a`. Each force's group sees the other force
    # only from outside (five tools: neither tells the other's tool apart); were the loser
    # taken as a possible forced tool there, each group would find a path without its own
    # forced call, and the bound would fall to 1.
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("c", force_after=["a"], priority=c_priority, name="force-c"),
        C("b", force_after=["a"], priority=b_priority, name="force-b"),
    ]
    assert _bounds(_FIVE, requirements) == (1, 1, 2)


def test_a_step_shows_which_tool_forced_at_the_same_priority_was_not_allowed() -> None:
    # After `c`, both `a` and `g` are forced at priority 10, and the pass forces `a`, the
    # one declared first, whenever it is allowed; `a` waits for `d`. So a call of `g` right
    # after `c` shows that `a` was not allowed then, and stays so until `d` is called:
    # the shortest finish is `d, g, c, a`, and the bound sees all four steps. Read the other
    # way round (the one declared last wins), that call would show nothing, and the bound
    # would fall to 2.
    requirements = [
        C("c", min_invocations=1, name="need-c"),
        C("c", force_after=["g"], name="c-after-g"),
        C("c", force_after=["e"], name="c-after-e"),
        C("a", force_after=["c", "e"], name="a-after-c"),
        C("g", force_after=["c", "e"], name="g-after-c"),
        C("a", only_after=["d"], name="a-after-d"),
        C("g", force_after=["d"], name="g-after-d"),
    ]
    assert _bounds(["a", "b", "c", "d", "e", "f", "g"], requirements) == (1, 3, 4)


def test_a_tool_shown_not_allowed_is_allowed_again_once_its_denial_lifts() -> None:
    # `e` waits for both `b` and `f`, and is forced after each. A call right after `b` shows
    # that `e` was not allowed (`f` not yet called); `f` lifts that denial and sets off the
    # force again, so `e` comes next: `c, a, b, f, e` (`a` failing, which sets nothing off)
    # lets the run stop. Were `e` taken as still not allowed after `f`, the bound would need
    # a sixth step that no history makes.
    requirements = [
        C("c", min_invocations=1, name="need-c"),
        C("a", min_invocations=1, only_success_invocations=False, name="need-a"),
        C("e", min_invocations=1, only_success_invocations=False, name="need-e"),
        C("e", max_invocations=2, name="e-twice"),
        C("e", only_after=["b"], name="e-after-b"),
        C("e", only_after=["f"], name="e-after-f"),
        C("e", force_after=["b", "g"], name="e-forced-after-b"),
        C("e", force_after=["f", "b"], name="e-forced-after-f"),
        C("e", force_after=["a", "c"], name="e-forced-after-a"),
    ]
    needed, extra, exact = _bounds(["a", "b", "c", "e", "f", "g"], requirements)
    assert exact == 5
    assert needed + extra == exact


def test_nothing_in_priority_mode_or_without_forces() -> None:
    system = System(
        ["a", "b"], [C("a", min_invocations=1), C("b", force_after=["a"])], mode="priority"
    )
    assert extra_calls(system, frozenset({"a"})) == 0
    system = System(["a", "b"], [C("a", min_invocations=1), C("b", only_after=["a"])])
    assert extra_calls(system, frozenset({"a"})) == 0
