"""``check/followed.py``: tools every finishing history calls because a soft force follows
a call it must make, and requirements never live because they wait for such a tool. Each
condition of the construction is shown to matter: a rule that may deny the forced tool, a
force that may win over it, a stop left open, a count of failed calls."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from benchmarks._policies import conditionals
from ruleengine import FINAL_ANSWER
from ruleengine.check.explicit import analyse, reaches
from ruleengine.check.followed import followed, never_live, waits_for
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.requirements import Requirement


def _added(tools: Sequence[str], requirements: Sequence[Requirement]) -> tuple[set[str], set[str]]:
    """The tools ``followed`` adds to the needed ones, and to those needed to succeed."""
    system = System(list(tools), list(requirements))
    relaxed = Relaxed(system.components, system.tools)
    needed, needed_ok = relaxed.needed(), relaxed.needed_ok()
    more, more_ok = followed(system, needed, needed_ok)
    return set(more - needed), set(more_ok - needed_ok)


NEEDS_A = C("a", min_invocations=1, name="needs-a")
"""`a` is called in every finishing history."""


@pytest.mark.parametrize("successes", [False, True])
def test_a_tool_forced_after_a_needed_call_is_called_in_every_finish(successes: bool) -> None:
    # Right after `a`, `t` alone is allowed and the run may not stop. A force that counts
    # only successes holds through failed calls of `t` too: then a success is needed.
    forcing = C("t", force_after=["a"], only_success_invocations=successes, name="t-after-a")
    added = _added(["a", "t", "u"], [NEEDS_A, forcing])
    assert added == ({"t"}, {"t"} if successes else set())
    system = System(["a", "t", "u"], [NEEDS_A, forcing])
    assert analyse(system).finish_depth == 2


def test_a_rule_that_may_deny_the_forced_tool_keeps_it_out() -> None:
    # `t` only before `b`: with `b` called first, the force after `a` is dropped (the stop
    # stays closed until another call), and the run may stop without calling `t`.
    deny = C("t", only_before=["b"], name="t-before-b")
    forcing = C("t", force_after=["a"], name="t-after-a")
    assert _added(["a", "b", "t"], [NEEDS_A, forcing, deny]) == (set(), set())
    system = System(["a", "b", "t"], [NEEDS_A, forcing, deny])
    assert reaches(system, (("b", "ok"), ("a", "ok"), ("b", "ok")), FINAL_ANSWER)


@pytest.mark.parametrize(
    ("tools", "priority", "kept"),
    [
        (["a", "t", "y"], 20, False),  # a higher priority wins
        (["a", "t", "y"], 1, True),  # a lower one does not
        (["a", "y", "t"], 10, False),  # as high and declared first wins
        (["a", "t", "y"], 10, True),  # as high and declared after does not
    ],
)
def test_a_force_that_may_win_over_it_keeps_it_out(
    tools: list[str], priority: int, kept: bool
) -> None:
    forcing = C("t", force_after=["a"], priority=10, name="t-after-a")
    other = C("y", force_after=["a"], priority=priority, name="y-after-a")
    added, _ = _added(tools, [NEEDS_A, forcing, other])
    assert added == ({"t"} if kept else {"y"})  # whichever wins is called next
    # Where the other force wins, `a, y` lets the run stop: `t` is not needed at all.
    finish = analyse(System(tools, [NEEDS_A, forcing, other])).firsts["finish"]
    assert ("t" in dict(finish)) == kept


def test_a_force_that_leaves_the_stop_open_adds_nothing() -> None:
    forcing = C("t", force_after=["a"], force_prevent_stop=False, name="t-after-a")
    assert _added(["a", "t"], [NEEDS_A, forcing]) == (set(), set())
    assert analyse(System(["a", "t"], [NEEDS_A, forcing])).finish_depth == 1


def test_what_it_adds_sets_off_the_next_force() -> None:
    chain = [
        C("t", force_after=["a"], name="t-after-a"),
        C("u", force_after=["t"], name="u-after-t"),
    ]
    added, _ = _added(["a", "t", "u", "v"], [NEEDS_A, *chain])
    assert added == {"t", "u"}


WAITS = C("t", min_invocations=1, name="waits-for-t")
"""`final_answer` only after a call of `t`."""


def test_a_requirement_that_waits_for_a_forced_tool_is_never_live() -> None:
    forcing = C("t", force_after=["a"], name="t-after-a")
    system = System(["a", "t", "u"], [NEEDS_A, forcing, WAITS])
    assert never_live(system, "waits-for-t")
    assert "waits-for-t" not in analyse(system).live
    # Without the force, it is live (after `a` alone), and not shown otherwise.
    free = System(["a", "t", "u"], [NEEDS_A, WAITS])
    assert not never_live(free, "waits-for-t")
    assert "waits-for-t" in analyse(free).live


def test_only_a_requirement_that_only_keeps_the_run_from_stopping_waits() -> None:
    system = System(["a", "t"], [WAITS, C("t", only_after=["a"], name="t-after-a")])
    (waits,) = [c for c in system.components if c.requirement.name == "waits-for-t"]
    (ordered,) = [c for c in system.components if c.requirement.name == "t-after-a"]
    # It counts successes (the default): a failed call of `t` leaves the stop closed.
    assert waits_for(waits, "t", ok_only=True) and not waits_for(waits, "t", ok_only=False)
    assert not waits_for(waits, "a", ok_only=True)
    assert not waits_for(ordered, "a", ok_only=False)  # it denies `t`, not the stop
    assert not never_live(system, "t-after-a")
    assert not never_live(system, "no-such-requirement")


def test_priority_mode_is_left_alone() -> None:
    forcing = C("t", force_after=["a"], name="t-after-a")
    system = System(["a", "t"], [NEEDS_A, forcing, WAITS], mode="priority")
    needed = frozenset({"a", FINAL_ANSWER})
    assert followed(system, needed, needed) == (needed, needed)
    assert not never_live(system, "waits-for-t")


def test_the_benchmark_requirements_left_undecided_are_dead() -> None:
    # Random conditionals at 50 tools, seed 3: "`final_answer` only after a call of `t33`"
    # and "only after a successful call of `t17`", each forced after a tool every finish
    # calls; no history up to 64 steps in Z3 nor a proof of the projections decided them
    # within the minute.
    policy = conditionals(50, 100, 3)
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    assert never_live(system, "r56-t33") and never_live(system, "r62-t17")
