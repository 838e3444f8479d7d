"""Which engine ``auto`` takes (ruleengine.check.run), and the symbolic engine's backward
chaining (``_can_finish``): the same answers as the explicit engine, with a cost that follows
a chain link by link."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

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
