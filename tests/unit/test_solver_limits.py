"""Solver limits fail closed with ``SolverError``; the encoding never leaks z3 objects."""

from __future__ import annotations

import ctypes
import random

import pytest
import z3

from ruleengine import (
    ConflictError,
    PolicyError,
    Reasoner,
    RunState,
    SolverError,
    _solver,
    allowed,
    at_least,
    at_most,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine._solver import MAX_LIMIT
from ruleengine.rules import Emitted


def test_tiny_resource_limit_fails_closed_with_solver_error() -> None:
    tools = [f"t{i}" for i in range(24)]

    @requirement
    def hard(state: RunState) -> list[object]:
        return [
            at_most(11, *(allowed(t) for t in tools)),
            at_least(12, *(allowed(t) for t in tools)),
        ]

    reasoner = Reasoner(tools, [hard], rlimit=1)
    with pytest.raises(SolverError) as info:
        reasoner.decide()
    assert "could not decide" in str(info.value)
    assert info.value.hint


def test_same_query_with_enough_budget_is_decided() -> None:
    tools = [f"t{i}" for i in range(24)]

    @requirement
    def fine(state: RunState) -> list[object]:
        return [at_most(11, *(allowed(t) for t in tools))]

    p = Reasoner(tools, [fine]).decide()
    assert p.allowed[:11] == tuple(tools[:11])
    assert "t11" not in p.allowed


# -- bounded latency ------------------------------------------------------------------------------


def _independent_set(n: int, edges: int, k: int) -> tuple[list[str], list[object]]:
    """A hard step: tools in conflict pairs (`a` allowed ⇒ `b` not) and at least `k` allowed.

    Near the threshold this is an NP-hard independent-set instance the solver cannot settle
    within a small budget (seeded, so the same instance every run).
    """
    rng = random.Random(0)
    tools = [f"t{i}" for i in range(n)]
    items: list[object] = [
        implies(allowed(a), ~allowed(b)) for a, b in (rng.sample(tools, 2) for _ in range(edges))
    ]
    items.append(at_least(k, *map(allowed, tools)))
    return tools, items


def test_pigeonhole_steps_are_decided_not_searched() -> None:
    # At most 11 and at least 12 of 24 tools: cardinality constraints compiled to clauses
    # settle this at once (Z3's cardinality extension searched it for ~30 s).
    tools = [f"t{i}" for i in range(24)]

    @requirement(name="pigeonhole")
    def hard(state: RunState) -> list[object]:
        return [at_most(11, *map(allowed, tools)), at_least(12, *map(allowed, tools))]

    reasoner = Reasoner(tools, [hard], rlimit=2_000_000)
    with pytest.raises(ConflictError):
        reasoner.decide()
    assert reasoner.solver_checks < 10


def test_a_hard_step_fails_closed_on_its_resource_budget() -> None:
    tools, items = _independent_set(100, 200, 50)

    @requirement(name="hard")
    def hard(state: RunState) -> list[object]:
        return items

    with pytest.raises(SolverError) as info:
        Reasoner(tools, [hard], rlimit=200_000, timeout_ms=0).decide()
    assert "within rlimit=`200000`" in info.value.message
    assert "`rlimit`" in (info.value.hint or "")


def test_a_hard_step_fails_closed_on_its_wall_clock() -> None:
    # No resource budget to speak of: the watchdog stops the check when the decision's time
    # is up (how long that takes is measured in benchmarks/, not asserted here).
    tools, items = _independent_set(100, 200, 50)

    @requirement(name="hard")
    def hard(state: RunState) -> list[object]:
        return items

    reasoner = Reasoner(tools, [hard], rlimit=MAX_LIMIT, timeout_ms=50)
    with pytest.raises(SolverError) as info:
        reasoner.decide()
    assert "within timeout_ms=`50`" in info.value.message
    # The reasoner is still usable, with a fresh clock per decision.
    easy = Reasoner(tools[:3], [], timeout_ms=50)
    assert easy.decide().allowed == (*tools[:3], "final_answer")


def test_a_decision_out_of_time_between_checks_fails_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Many quick checks add up: the clock is read before each check, from the first one on.
    clock = [1000.0]
    monkeypatch.setattr(_solver.time, "monotonic", lambda: clock[0])
    session = _solver.Session(timeout_ms=100)
    session.name("x", lambda ctx: z3.Bool("x", ctx))
    session.begin()
    assert session.check_mask(session.slot("x"))
    clock[0] += 0.05
    assert session.check_mask(session.slot("x"))
    clock[0] += 0.06
    with pytest.raises(SolverError, match="timeout_ms=`100`"):
        session.check_mask(session.slot("x"))
    session.begin()  # a new decision, a new clock
    assert session.check_mask(session.slot("x"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rlimit": "5"}, "rlimit=`'5'` must be an integer"),
        ({"rlimit": 0}, "rlimit=`0` must be at least 1"),
        ({"rlimit": -1}, "rlimit=`-1` must be at least 1"),
        ({"rlimit": 2**40}, f"rlimit=`{2**40}` must be at most {MAX_LIMIT}"),
        ({"timeout_ms": 1.5}, "timeout_ms=`1.5` must be an integer"),
        ({"timeout_ms": -5}, "timeout_ms=`-5` must not be negative"),
        ({"timeout_ms": True}, "timeout_ms=`True` must be an integer"),
    ],
)
def test_limits_are_checked_before_they_reach_z3(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError) as info:
        Reasoner(["a"], **kwargs)  # type: ignore[arg-type]
    assert info.value.message == message


# -- the z3 entry point ---------------------------------------------------------------------------


def _answers(reasoner: Reasoner, sets: list[list[Emitted]]) -> list[object]:
    out: list[object] = []
    for records in sets:
        try:
            p = reasoner.resolve(records)
            out.append((p.allowed, p.hidden, p.forced, p.can_stop))
        except ConflictError as e:
            out.append([c.rule for c in e.core])
    return out


def test_without_the_raw_entry_point_checks_use_the_public_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sets = [
        [Emitted(allowed("a") | allowed("b"), "r", 10), Emitted(~allowed("a"), "s", 10)],
        [Emitted(at_most(1, allowed("a"), allowed("b")), "r", 10)],
        [Emitted(~allowed("a") & ~allowed("b") & ~allowed("final_answer"), "r", 10)],
        [Emitted(implies(allowed("a"), hidden("b")), "r", 10), Emitted(forced("b"), "f", 3)],
    ]
    expected = _answers(Reasoner(["a", "b"], fast_path=False), sets)

    def broken() -> int | None:
        raise AttributeError("z3 moved its wrapper")

    monkeypatch.setattr(_solver, "_LOOKUPS", (broken, lambda: None))
    monkeypatch.setattr(_solver, "_entry", [])
    fallback = Reasoner(["a", "b"], fast_path=False)
    again = Reasoner(["a", "b"], fast_path=False)
    # The entry point is looked up at the first solver check (a session starts there).
    with pytest.warns(RuntimeWarning, match="same answers, slower") as warned:
        assert _answers(fallback, sets) == expected
        assert _answers(again, sets) == expected  # said once, not per reasoner
    assert len(warned) == 1
    assert fallback._aggregator._session._raw is None
    assert fallback.solver_checks > 0


def test_an_entry_point_that_answers_wrong_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # A lookup that finds *some* function must still pass the sat/unsat probe.
    wrong = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p
    )(lambda ctx, solver, n, address: 1)
    address = ctypes.cast(wrong, ctypes.c_void_p).value
    monkeypatch.setattr(_solver, "_LOOKUPS", (lambda: address,))
    monkeypatch.setattr(_solver, "_entry", [])
    with pytest.warns(RuntimeWarning):
        assert _solver.raw_entry() is None


def test_the_raw_entry_point_is_found_on_this_z3() -> None:
    assert _solver.raw_entry() is not None


def test_a_fork_after_the_watchdog_started_has_a_watchdog_of_its_own() -> None:
    # The checker forks (lanes, its engine's child) once the watchdog thread runs: the
    # thread's lock is taken around the fork, and the child starts a thread of its own,
    # which stops a hard check there too (without it the child would run to its rlimit).
    import threading
    import time

    from ruleengine.check.lanes import Aside, forking_allowed

    tools, items = _independent_set(100, 200, 50)

    @requirement(name="hard")
    def hard(state: RunState) -> list[object]:
        return items

    reasoner = Reasoner(tools, [hard], rlimit=MAX_LIMIT, timeout_ms=50)
    with pytest.raises(SolverError):
        reasoner.decide()
    assert "ruleengine-solver-watchdog" in {t.name for t in threading.enumerate()}
    if not forking_allowed():
        pytest.skip("no fork here (one CPU, or not Linux)")

    def in_the_child() -> str:
        try:
            reasoner.decide()
        except SolverError as error:
            return error.message
        return "decided"

    child = Aside.start(in_the_child)
    assert child is not None
    # A bound for a broken child only (it would otherwise run on): not a timing assertion.
    came = child.wait(time.monotonic() + 300)
    child.stop()
    assert came
    ok, message = child.result()
    assert ok and message is not None and "within timeout_ms=`50`" in message
