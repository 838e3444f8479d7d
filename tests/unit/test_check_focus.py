"""Focused questions of the symbolic engine: ``tool:T`` and ``live:R`` stop as soon as a
shallow breadth-first search answers them, and what they answer agrees with a whole
analysis.

Core searches ask these questions about many subsystems; an early "the tool is allowed
after all" must never be mistaken for a whole analysis (whose ``allowed_tools`` would then
look like every other tool is dead).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine.check import check, properties, symbolic, symbolic_layers
from ruleengine.check.explicit import callable_at, decide, live_at, walk
from ruleengine.check.symbolic import analyse_symbolic
from ruleengine.check.symbolic_layers import EARLY_LAYERS
from ruleengine.check.system import System
from ruleengine.check.unrolled import GaveUp

CHAIN = ["a", "b", "c", "d", "e"]
FILLERS = [f"f{i}" for i in range(4)]
TOOLS = [*CHAIN, *FILLERS, "x"]


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check here runs its lanes in this process: the spies below count calls made
    here, and a lane that ran in a forked child would be missed (when it does depends on
    the machine's load)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")


def _chain(blocked: bool) -> list[Any]:
    """``x`` only after a chain a → b → … → e, every tool capped at three calls (the
    fillers too: they make the state space too wide for a short explicit search to see a
    few steps deep); with ``blocked``, ``a`` may never run, so b…e and x are dead."""
    reqs: list[Any] = [C(t, max_invocations=3, name=f"cap-{t}") for t in [*CHAIN, *FILLERS]]
    reqs += [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(CHAIN)
    ]
    reqs.append(C("x", only_after=["e"], name="x-after-e"))
    if blocked:
        reqs.append(C("a", max_invocations=0, name="block-a"))
    return reqs


def _system(blocked: bool) -> System:
    return System(TOOLS, _chain(blocked))


def test_a_tool_allowed_early_stops_the_analysis_there() -> None:
    whole = analyse_symbolic(_system(False))
    focused = analyse_symbolic(_system(False), focus="tool:b")
    assert focused.partial and focused.complete
    assert focused.allowed_tools == {"b"}
    assert focused.depth_done <= EARLY_LAYERS
    assert "b" in whole.allowed_tools and not whole.partial


def test_a_dead_tool_the_projections_show_never_allowed_stops_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `a` is blocked, so nothing of the chain runs: the projections show `x` never allowed,
    # and the question is answered without the reachable set (a partial analysis: the
    # other tools are not decided, so a core search does not reuse it for them).
    whole = analyse_symbolic(_system(True))
    assert "x" not in whole.allowed_tools

    def no_reach(self: Any) -> Any:
        raise AssertionError("the reachable set was computed")

    with monkeypatch.context() as patch:
        patch.setattr(symbolic._Symbolic, "_reach", no_reach)
        focused = analyse_symbolic(_system(True), focus="tool:x")
    assert focused.partial and focused.complete
    assert "x" not in focused.allowed_tools


def test_a_dead_tool_the_projections_leave_open_gets_a_whole_analysis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(symbolic._Symbolic, "_projected_never", lambda self, where: False)
    whole = analyse_symbolic(_system(True))
    focused = analyse_symbolic(_system(True), focus="tool:x")
    assert not focused.partial and focused.complete
    assert "x" not in focused.allowed_tools
    assert focused.allowed_tools == whole.allowed_tools


def test_a_live_requirement_found_early_stops_the_analysis_there() -> None:
    focused = analyse_symbolic(_system(False), focus="live:b-after-a")
    assert focused.partial and focused.live == {"b-after-a"}
    # `b` never runs once `a` is blocked, so its cap never restricts anything.
    # The projections show it: the question is answered there.
    dead = analyse_symbolic(_system(True), focus="live:cap-b")
    whole = analyse_symbolic(_system(True))
    assert dead.partial and dead.complete
    assert "cap-b" not in dead.live and "cap-b" not in whole.live


def test_a_tool_allowed_only_deeper_than_the_early_layers_is_still_found() -> None:
    tools = [f"t{i}" for i in range(EARLY_LAYERS + 3)]
    reqs = [C(later, only_after=[earlier]) for earlier, later in itertools.pairwise(tools)]
    system = System(tools, reqs)
    # The directed search walks the chain to it: the question is answered with a history.
    focused = analyse_symbolic(system, focus=f"tool:{tools[-1]}")
    assert focused.partial and tools[-1] in focused.allowed_tools
    assert focused.example == tuple((t, "ok") for t in tools[:-1])
    # Without it, the whole reachable set answers (no history, nothing left out).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
        whole = analyse_symbolic(system, focus=f"tool:{tools[-1]}")
    assert not whole.partial
    assert tools[-1] in whole.allowed_tools


def _deep(depth: int) -> tuple[System, str]:
    """A chain of ``depth`` tools, each only after the one before, the last one (returned)
    first allowed after ``depth - 1`` steps; every tool capped at two calls."""
    tools = [f"t{i}" for i in range(depth)]
    reqs: list[Any] = [C(t, max_invocations=2, name=f"cap-{t}") for t in tools]
    reqs += [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(tools)
    ]
    return System(tools, reqs), tools[-1]


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("not asked")


@pytest.mark.parametrize("focus", ["tool", "live"])
def test_a_deep_answer_past_early_layers_that_grew_comes_from_z3(
    focus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    system, last = _deep(14)
    # `cap-t13` changes a pass only once `t13` ran twice: 15 steps in.
    question = f"tool:{last}" if focus == "tool" else f"live:cap-{last}"
    # The early layers stop at once, as if grown too large, and the directed search finds
    # nothing: bounded model checking gives a history, the reachable set is never computed.
    monkeypatch.setattr(symbolic_layers, "EARLY_NODES", 0)
    monkeypatch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
    monkeypatch.setattr(symbolic._Symbolic, "_reach", _never)
    found = analyse_symbolic(system, focus=question)
    assert found.partial and found.complete and found.example is not None
    assert 13 <= len(found.example) <= 16  # within the second depth asked, 16
    end = walk(system, found.example)
    assert end is not None
    if focus == "tool":
        assert found.allowed_tools == {last}
        assert last in callable_at(system, end)
    else:
        assert found.live == {question[5:]} and len(found.example) >= 15
        ((records, _),) = system.variants(end)
        assert live_at(system, records, decide(system, records), found.live, {}) == found.live


def test_early_layers_that_stayed_small_leave_the_answer_to_the_reachable_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system, last = _deep(14)
    monkeypatch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
    monkeypatch.setattr(symbolic.Unrolled, "reaches", _never)
    found = analyse_symbolic(system, focus=f"tool:{last}")
    assert not found.partial and found.complete and last in found.allowed_tools


@pytest.mark.parametrize("focus", ["tool", "live"])
def test_a_small_system_past_early_layers_that_grew_leaves_the_answer_to_the_reachable_set(
    focus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fewer components than INTO_COMPONENTS: however its early layers grew, the whole
    # reachable set is cheap, and Z3 is not asked (at 6 to 9 components it spent 1-3 s a
    # question for no history, where the reachable set took 0.2 s at most).
    system, last = _deep(6)
    assert len(system.components) < symbolic.INTO_COMPONENTS
    question = f"tool:{last}" if focus == "tool" else f"live:cap-{last}"
    monkeypatch.setattr(symbolic_layers, "EARLY_NODES", 0)
    monkeypatch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
    monkeypatch.setattr(symbolic.Unrolled, "reaches", _never)
    found = analyse_symbolic(system, focus=question)
    assert not found.partial and found.complete
    assert last in found.allowed_tools if focus == "tool" else found.live == {question[5:]}


def test_z3_stopped_at_its_limit_leaves_the_answer_to_the_reachable_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system, last = _deep(14)
    asked: list[int] = []

    def gave_up(self: Any, target: Any, steps: int, *args: Any, **kwargs: Any) -> Any:
        asked.append(steps)
        raise GaveUp

    monkeypatch.setattr(symbolic_layers, "EARLY_NODES", 0)
    monkeypatch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
    monkeypatch.setattr(symbolic.Unrolled, "reaches", gave_up)
    found = analyse_symbolic(system, focus=f"tool:{last}")
    assert asked == [8]  # a deeper question would take longer still: not asked
    assert not found.partial and found.complete and last in found.allowed_tools
    # At the deadline, the analysis is cut there.
    monkeypatch.setattr(symbolic._Symbolic, "_reach", _never)
    found = analyse_symbolic(system, focus=f"tool:{last}", deadline=time.monotonic() - 1)
    assert not found.complete and found.reason == "the time limit ran out"


@pytest.mark.parametrize("blocked", [True, False])
def test_dead_tool_cores_agree_between_engines(
    blocked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the short explicit search cut to one state, every core question goes to the
    # engine: the symbolic one answers those that drop a link of the chain early (`x` is
    # allowed a few steps in), and must still give the explicit engine's report.
    monkeypatch.setattr(properties, "QUICK_STATES", 1)
    partial = []
    run = symbolic._Symbolic.run

    def counted(self: Any) -> Any:
        out = run(self)
        partial.append(out.partial)
        return out

    monkeypatch.setattr(symbolic._Symbolic, "run", counted)
    explicit = check(TOOLS, _chain(blocked), engine="explicit")
    found = check(TOOLS, _chain(blocked), engine="symbolic")
    left, right = explicit.model_dump(mode="json"), found.model_dump(mode="json")
    left.pop("stats"), right.pop("stats")
    assert left == right
    dead = {f.tool for f in found.findings if f.id == "dead-tool"}
    if blocked:
        assert any(partial)
        assert dead == {"a", "b", "c", "d", "e", "x"}
        x = next(f for f in found.findings if f.id == "dead-tool" and f.tool == "x")
        names = {entry.requirement for entry in x.core}
        assert names == {"block-a", "b-after-a", "c-after-b", "d-after-c", "e-after-d", "x-after-e"}
    else:
        assert dead == set()
