"""Which engine ``auto`` takes (ruleengine.check.run), and the symbolic engine's backward
chaining (``_can_finish``): the same answers as the explicit engine, with a cost that follows
a chain link by link."""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from typing import Any, Literal

import pytest
from monitored import Monitored

import ruleengine.check.properties as properties
import ruleengine.check.run as check_run
import ruleengine.check.symbolic as symbolic
from ruleengine import (
    ConditionalRequirement,
    CycleGuard,
    Monitor,
    Policy,
    PolicyError,
    Requirement,
    Rule,
)
from ruleengine.check import check_policy
from ruleengine.check.analysis import Analysis
from ruleengine.check.compositional import analyse_compositional
from ruleengine.check.explicit import analyse, reaches
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import System
from ruleengine.state import Status

C = ConditionalRequirement


def chain(n: int, *, budget: int = 20) -> Policy:
    tools = [f"t{i:03}" for i in range(n)]
    reqs = [C(tools[i], only_after=[tools[i - 1]], name=f"c{i:03}") for i in range(1, n)]
    reqs.append(C(tools[-1], min_invocations=1, name="last"))
    return Policy(tools, reqs, max_iterations=budget)


def wide(n: int) -> Policy:
    """Independent caps: many states in few layers."""
    tools = [f"w{i}" for i in range(n)]
    return Policy(tools, [C(t, max_invocations=2, name=f"cap-{t}") for t in tools])


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The engines the analyses of a check went to (in one process: lanes off)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    used: list[str] = []
    real = check_run._engine

    def engine(system: Any, name: str, **options: Any) -> Any:
        run = real(system, name, **options)
        kind = "symbolic" if isinstance(run, check_run._SymbolicEngine) else "explicit"

        def spy(sub: Any, focus: str | None = None) -> Any:
            used.append(kind)
            return run(sub, focus)

        return spy

    monkeypatch.setattr(check_run, "_engine", engine)
    return used


def test_auto_takes_the_explicit_engine_for_a_narrow_deep_space(
    engines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 271 states in 270 layers: past the small probe, within the narrow one; the core
    # questions (about subsystems, narrow too) go to the explicit engine as well. (The
    # budget's, which the tools every finish calls answer here without an engine, are left
    # to the engines.)
    monkeypatch.setattr(properties, "_budget_shown", lambda *args: None)
    size = check_run.SMALL_STATES + 14
    report = check_policy(chain(size))
    assert report.complete and report.stats.states == size + 1
    assert engines and set(engines) == {"explicit"}
    assert report.model_dump(exclude={"stats"}) == check_policy(
        chain(size), engine="explicit"
    ).model_dump(exclude={"stats"})


def test_auto_takes_the_symbolic_engine_for_a_wide_space(engines: list[str]) -> None:
    report = check_policy(wide(8))  # 3**8 states in 17 layers
    assert report.complete and report.stats.states == 3**8
    assert engines and set(engines) == {"symbolic"}


def test_backward_chaining_follows_a_chain_link_by_link(monkeypatch: pytest.MonkeyPatch) -> None:
    # A long chain that cannot finish within its budget: no-finish and budget questions walk
    # backward through it. The fixpoint is the explicit engine's; the preimages taken grow
    # with the links (each cluster steps back only from states its range meets), where
    # stepping every cluster back from everything each round took links × tools of them.
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    calls = 0
    real = symbolic._Symbolic._preimage

    def counted(self: Any, states: Any, g: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, states, g)

    monkeypatch.setattr(symbolic._Symbolic, "_preimage", counted)
    policy = chain(40, budget=20)
    by_symbolic = check_policy(policy, engine="symbolic")
    by_explicit = check_policy(policy, engine="explicit")
    assert by_symbolic.model_dump(exclude={"stats"}) == by_explicit.model_dump(exclude={"stats"})
    assert 0 < calls < 40 * 40


class _AfterA(Monitor):
    """Denies ``tool`` right after a call of `a` (the view: whether the last call was `a`)."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def initial(self) -> Hashable:
        return False

    def advance(self, view: Hashable, tool: str, status: Status) -> Hashable:
        return tool == "a"

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Any]:
        return [Rule(self.tool, allowed=False)] if view else []


def _after_a(name: str, tool: str) -> Requirement:
    """A yielding requirement of its own (its rules are not a cycle guard's)."""
    return Monitored(_AfterA(tool), name=name, yielding=True)


def guarded(*extra: Requirement) -> Policy:
    tools = ["a", "b", "c"]
    reqs: list[Requirement] = [
        C("c", only_after=["a"], name="c-after-a"),
        C("final_answer", only_after=["c"], name="stop-after-c"),
        C("a", max_invocations=2, name="a-twice"),
        *extra,
    ]
    return Policy(tools, reqs, max_iterations=8)


def test_several_cycle_guards_are_checked_by_the_symbolic_engine() -> None:
    # Cycle guards deny the last tool called, each where its own thresholds say it cycles:
    # all of them give way together, so a step's pass is that of every requirement where
    # it is consistent, else that of the others (as with one guard), and the symbolic
    # engine takes the policy. Its report is the explicit engine's.
    policy = guarded(
        CycleGuard(max_strike_length=1, name="g1"),
        CycleGuard(max_strike_length=2, max_total_occurrences=3, name="g2"),
        CycleGuard(max_strike_length=1, window_size=4, name="g3"),
    )
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    assert symbolic.supports(system) is None
    by_symbolic = check_policy(policy, engine="symbolic")
    by_explicit = check_policy(policy, engine="explicit")
    assert by_symbolic.complete
    assert by_symbolic.model_dump(exclude={"stats"}) == by_explicit.model_dump(exclude={"stats"})


def test_yielding_requirements_that_need_not_give_way_together_are_not_taken() -> None:
    # Two yielding requirements denying different tools: which one gives way follows the
    # order of the runtime's core search, which the symbolic engine does not model.
    policy = guarded(CycleGuard(name="g1"), _after_a("no-b-after-a", "b"))
    system = System(policy.tools, policy.requirements, mode=policy.mode)
    problem = symbolic.supports(system)
    assert problem is not None and "give way together" in problem
    with pytest.raises(PolicyError, match="give way together"):
        check_policy(policy, engine="symbolic")
    # Two of its own alike do give way together.
    alike = guarded(_after_a("one", "b"), _after_a("two", "b"))
    assert symbolic.supports(System(alike.tools, alike.requirements)) is None
    assert check_policy(alike, engine="symbolic").model_dump(exclude={"stats"}) == check_policy(
        alike, engine="explicit"
    ).model_dump(exclude={"stats"})


def test_priority_mode_is_checked_by_the_symbolic_engine() -> None:
    # A denial at priority 5 overridden by a permission at 20 wherever `b` has run: strict
    # mode would keep `a` out for good (deny wins); priority mode lets it in after `b`. The
    # first step's `b` is forced at 30, and a lower force on `c` (dropped with its record
    # where `c` is denied above) never wins. Checked by the diagrams, the explicit report.
    policy = Policy(
        ["a", "b", "c"],
        [
            C("a", max_invocations=0, priority=5, name="never-a"),
            C("a", only_after=["b"], priority=20, name="a-after-b"),
            C("b", force_at_step=1, priority=30, name="b-first"),
            C("c", force_after=["b"], priority=3, name="c-after-b"),
            C("c", max_invocations=0, priority=25, name="never-c"),
            C("a", min_invocations=1, priority=10, name="needs-a"),
        ],
        mode="priority",
        max_iterations=6,
    )
    assert symbolic.supports(System(policy.tools, policy.requirements, mode="priority")) is None
    by_symbolic = check_policy(policy, engine="symbolic")
    by_explicit = check_policy(policy, engine="explicit")
    assert by_symbolic.complete
    assert by_symbolic.model_dump(exclude={"stats"}) == by_explicit.model_dump(exclude={"stats"})
    strict = check_policy(Policy(policy.tools, policy.requirements, max_iterations=6))
    assert {f.id for f in strict.findings} != {f.id for f in by_symbolic.findings}


def _ambiguous(guard_priority: int) -> Policy:
    """Priority mode, with a guard denying `a` after `a, a`: a permission of `a` at 5
    (overridden by the guard there), and at 3 `a` and `b` denied and the stop prevented.
    After `a, a` the tier at 3 denies everything: its units clash without the guard's too,
    and without the guard the permission at 5 overrides the denial of `a` and the rest
    holds together, so whether the guard gives way hangs on the core the runtime finds."""
    return Policy(
        ["a", "b"],
        [
            CycleGuard(max_strike_length=1, priority=guard_priority, name="guard"),
            C("a", only_after=[], priority=5, name="allow-a"),
            C("a", max_invocations=1, priority=3, name="a-once"),
            C("b", max_invocations=0, priority=3, name="never-b"),
            C("b", min_invocations=1, priority=3, name="needs-b"),
        ],
        mode="priority",
        max_iterations=5,
    )


def test_a_step_the_runtime_core_decides_is_refused_by_the_symbolic_engine() -> None:
    policy = _ambiguous(10)
    with pytest.raises(PolicyError, match="gives way depends on the core"):
        check_policy(policy, engine="symbolic")
    # `auto` takes the explicit engine there, and says what it says.
    auto = check_policy(policy)
    assert auto.model_dump(exclude={"stats"}) == check_policy(policy, engine="explicit").model_dump(
        exclude={"stats"}
    )
    # The symbolic engine `auto` would take hands such a (sub)system to the explicit one.
    system = System(policy.tools, policy.requirements, mode="priority")
    clock = check_run._Clock(None)
    run = check_run._engine(system, "auto", max_states=None, clock=clock, budget=4)
    assert isinstance(run, check_run._SymbolicEngine)
    by_fallback = run(system, None)
    by_explicit = check_run._engine(system, "explicit", max_states=None, clock=clock, budget=4)(
        system, None
    )
    assert by_fallback.complete and by_fallback.states == by_explicit.states
    assert by_fallback.live == by_explicit.live and "guard" not in by_fallback.live
    # With the guard below every other rule, no tier under it can clash: taken, and exact.
    low = _ambiguous(1)
    assert check_policy(low, engine="symbolic").model_dump(exclude={"stats"}) == check_policy(
        low, engine="explicit"
    ).model_dump(exclude={"stats"})


def test_in_priority_mode_a_rule_overridden_in_part_drops_its_soft_force() -> None:
    # After `a`, `b-after-a` forces `b` and prevents the stop; `stop-ok` at 20 asserts
    # `final_answer` allowed, which overrides that restricting part, and the rule goes
    # whole: `c` alone is forced, no tie. (Bidding the dropped force ties `b` and `c`.)
    tools = ["a", "b", "c"]
    reqs = [
        C("final_answer", max_invocations=5, priority=20, name="stop-ok"),
        C("c", force_after=["a"], force_prevent_stop=False, priority=5, name="c-after-a"),
        C("b", force_after=["a"], force_prevent_stop=True, priority=5, name="b-after-a"),
    ]
    policy = Policy(tools, reqs, mode="priority", max_iterations=4)
    by_symbolic = check_policy(policy, engine="symbolic")
    assert "forced-tie" not in {f.id for f in by_symbolic.findings}
    assert by_symbolic.model_dump(exclude={"stats"}) == check_policy(
        policy, engine="explicit"
    ).model_dump(exclude={"stats"})


@pytest.mark.parametrize("mode", ["strict", "priority"])
def test_a_core_question_the_symbolic_engine_leaves_open_goes_to_the_verdicts_one_by_one(
    mode: Literal["strict", "priority"], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `a` at most once makes "at most twice" never change the pass; `b` and `c` each wait
    # for the other. Each question's first try at the symbolic engine runs out of its time
    # (as `SYMBOLIC_FIRST` cuts it on a large subsystem): the verdicts one by one answer,
    # and the symbolic engine is not asked again.
    tools = ["a", "b", "c"]
    reqs = [
        C("a", max_invocations=1, name="cap"),
        C("a", max_invocations=2, name="looser"),
        C("b", only_after=["c"], name="b-after-c"),
        C("c", only_after=["b"], name="c-after-b"),
    ]
    system = System(tools, reqs, mode=mode)
    run = check_run._engine(system, "auto", max_states=None, clock=check_run._Clock(None), budget=5)
    assert isinstance(run, check_run._SymbolicEngine)
    tries: list[str | None] = []

    def late(sub: Any, **kwargs: Any) -> Analysis:
        tries.append(kwargs.get("focus"))
        return Analysis(complete=False, reason="the time limit ran out")

    monkeypatch.setattr(symbolic, "analyse_symbolic", late)
    answers = {
        focus: run(system, focus) for focus in ["live:looser", "live:cap", "tool:b", "tool:a"]
    }
    assert tries == list(answers)  # one try each
    assert all(a.complete and a.partial for a in answers.values())
    assert answers["live:looser"].live == set() and answers["live:cap"].live == {"cap"}
    assert answers["tool:b"].allowed_tools == set()
    assert answers["tool:a"].allowed_tools == {"a"}
    example = answers["tool:a"].example
    assert example is not None and reaches(system, example, "a")
    # So does the budget's question "may the run stop within 3 steps?" (at once, here).
    within = run(system, "finish:3")
    assert within.complete and within.partial and within.finishes_within == 0
    assert tries[-1] == "finish:3"
    # A whole analysis (no focus) is the symbolic engine's alone.
    assert not run(system, None).complete


def test_a_question_the_symbolic_engine_left_open_has_a_shorter_first_try_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A core search asks one question of subsystems of every size in turn: once the
    # symbolic engine left it open on one, it has `SYMBOLIC_AGAIN` on the next (of that
    # question; another one still has `SYMBOLIC_FIRST`).
    monkeypatch.setattr(check_run, "SYMBOLIC_FIRST", 1000.0)
    monkeypatch.setattr(check_run, "SYMBOLIC_AGAIN", 1.0)
    system = System(["a", "b"], [C("b", only_after=["a"], name="b-after-a")])
    run = check_run._engine(system, "auto", max_states=None, clock=check_run._Clock(None), budget=5)
    given: list[tuple[str | None, float]] = []

    def late(sub: Any, **kwargs: Any) -> Analysis:
        deadline = kwargs["deadline"]
        given.append((kwargs.get("focus"), deadline - time.monotonic()))
        return Analysis(complete=False, reason="the time limit ran out")

    monkeypatch.setattr(symbolic, "analyse_symbolic", late)
    for focus in ["tool:b", "tool:b", "live:b-after-a", "tool:b"]:
        assert run(system, focus).complete
    assert [focus for focus, _ in given] == ["tool:b", "tool:b", "live:b-after-a", "tool:b"]
    first, again, other, third = (left for _, left in given)
    assert first > 500 and other > 500
    assert again <= 1.0 and third <= 1.0


def test_a_guard_that_changes_which_force_clashes_is_not_taken_for_one_that_gives_way() -> None:
    # After `a`, `a`: the guard (priority 10), when its check says the run cycles, denies
    # `a` and so overrides the force on `a` at step 3 (priority 2); the clash left is
    # `final_answer`'s, forced at step 3 but only after `b` (priority 1), whose core holds
    # no unit of the guard: it does not give way. Without the guard the clash is the force
    # on `a` against its cap. A forced conflict either way, but on other tools: the report
    # names both, as the explicit engine does, and the verdicts one by one claim neither
    # wrongly (the diagrams once took the pass without the guard for both).
    policy = Policy(
        ["a", "b", "c"],
        [
            C(
                "a",
                force_at_step=3,
                only_before=["b", "c"],
                max_invocations=2,
                force_prevent_stop=False,
                only_success_invocations=False,
                priority=2,
                name="r0",
            ),
            C(
                "final_answer",
                force_at_step=3,
                only_after=["a", "b"],
                force_prevent_stop=False,
                only_success_invocations=False,
                consecutive_allowed=False,
                priority=1,
                name="r1",
            ),
            CycleGuard(
                max_strike_length=1, max_total_occurrences=1, window_size=1, priority=10, name="g0"
            ),
        ],
        mode="priority",
        max_iterations=1,
    )
    system = System(policy.tools, policy.requirements, mode="priority")
    exact = analyse(system)
    assert set(exact.forced_conflicts) == {"a", "final_answer"}
    for probe in (1, 4):
        found = analyse_compositional(system, Encoding(system), budget=0, probe_states=probe)
        assert found.decided is not None
        for tool in ("a", "final_answer"):
            if f"forced-conflict:{tool}" in found.decided:
                assert found.forced_conflicts[tool].trace == exact.forced_conflicts[tool].trace
    by_auto = check_policy(policy)
    by_explicit = check_policy(policy, engine="explicit")
    assert by_auto.model_dump(exclude={"stats"}) == by_explicit.model_dump(exclude={"stats"})
