"""Lanes of core searches: the second runs in a forked child when it may, and the results
are those of running both here, whatever happens to the child."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine import CycleGuard, Policy
from ruleengine.check import lanes, properties
from ruleengine.check.lanes import forking_allowed, run_lanes
from ruleengine.check.properties import Hints, _in_lanes


@pytest.fixture(autouse=True)
def _lanes_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("RULEENGINE_LANES", raising=False)
    yield


@pytest.fixture
def fork_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking as on a quiet process: earlier tests of the suite leave idle worker threads
    (anyio's), which rightly keep the lanes in one process (tested below)."""
    monkeypatch.setattr(lanes, "_threads_quiet", lambda: True)
    if not forking_allowed():
        pytest.skip("no fork for lanes on this machine")


needs_fork = pytest.mark.usefixtures("fork_ok")


def _jobs(values: list[int], *, scale: int = 1) -> list[Callable[[], tuple[int, int]]]:
    return [lambda v=v: (v * scale, os.getpid()) for v in values]


@needs_fork
def test_the_second_lane_runs_in_a_child_and_its_results_come_back_in_order() -> None:
    here, there, forked = run_lanes(_jobs([1, 2, 3]), _jobs([4, 5], scale=10))
    assert forked
    assert [v for v, _ in here] == [1, 2, 3]
    assert [v for v, _ in there] == [40, 50]
    assert {pid for _, pid in here} == {os.getpid()}
    assert os.getpid() not in {pid for _, pid in there}


def test_without_forking_both_lanes_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert not forking_allowed()
    here, there, forked = run_lanes(_jobs([1]), _jobs([2, 3]))
    assert not forked
    assert [v for v, _ in here + there] == [1, 2, 3]
    assert {pid for _, pid in here + there} == {os.getpid()}


def test_an_empty_second_lane_forks_nothing() -> None:
    here, there, forked = run_lanes(_jobs([1, 2]), [])
    assert (not forked, there, [v for v, _ in here]) == (True, [], [1, 2])


@needs_fork
def test_a_child_that_fails_has_its_lane_run_here() -> None:
    parent = os.getpid()

    def fails_in_a_child() -> int:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return 7

    here, there, forked = run_lanes([lambda: 1], [fails_in_a_child, lambda: 8])
    assert (here, there, forked) == ([1], [7, 8], False)


@needs_fork
def test_a_result_that_does_not_pickle_has_its_lane_run_here() -> None:
    here, there, forked = run_lanes([lambda: 1], [lambda: threading.Lock()])
    assert not forked
    assert here == [1]
    assert type(there[0]) is type(threading.Lock())


@needs_fork
def test_a_child_killed_midway_has_its_lane_run_here() -> None:
    parent = os.getpid()

    def dies_in_a_child() -> int:
        if os.getpid() != parent:
            os._exit(3)
        return 5

    assert run_lanes([lambda: 1], [dies_in_a_child]) == ([1], [5], False)


@needs_fork
def test_an_error_in_the_first_lane_stops_the_child_and_propagates() -> None:
    started = threading.Event()

    def boom() -> int:
        raise ValueError("first lane")

    def slow() -> int:
        started.wait(30)  # never set in the child: it would run for 30 s
        return 1

    children_before = _children()
    with pytest.raises(ValueError, match="first lane"):
        run_lanes([lambda: 0, boom], [slow])
    assert _children() == children_before  # killed and reaped: no zombie left


def test_other_threads_keep_the_lanes_in_this_process() -> None:
    assert lanes._threads_quiet() == (threading.active_count() == 1)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="someone-else")
    worker.start()
    try:
        assert not forking_allowed()
        assert run_lanes(_jobs([1]), _jobs([2]))[2] is False
    finally:
        stop.set()
        worker.join()


def test_lanes_deal_jobs_in_turn_and_each_lane_learns_only_from_its_own() -> None:
    seen: list[tuple[int, list[frozenset[str]]]] = []

    def job(i: int) -> Callable[[Hints], tuple[object, frozenset[str]]]:
        def run(hints: Hints) -> tuple[object, frozenset[str]]:
            seen.append((i, list(hints.recent)))
            return f"finding {i}", frozenset({f"core{i}"})

        return run

    hints = Hints()
    hints.add(["root"], root=True)
    before = lanes.forking_allowed
    try:
        lanes.forking_allowed = lambda: False  # type: ignore[assignment]
        found = _in_lanes([job(i) for i in range(5)], hints, None)  # type: ignore[arg-type]
    finally:
        lanes.forking_allowed = before  # type: ignore[assignment]
    assert found == [f"finding {i}" for i in range(5)]
    learned = dict(seen)
    assert learned[0] == [] and learned[1] == []
    assert learned[2] == [frozenset({"core0"})]
    assert learned[3] == [frozenset({"core1"})]
    assert learned[4] == [frozenset({"core2"}), frozenset({"core0"})]
    # Afterwards the phase's cores, in job order (newest first), are everyone's hints.
    assert hints.recent == [frozenset({f"core{i}"}) for i in reversed(range(5))]
    assert hints.roots == [frozenset({"root"})]


@needs_fork
def test_answers_cut_short_in_a_child_are_reported_here() -> None:
    parent = os.getpid()
    cut: list[str] = []

    def job(i: int) -> Callable[[Hints], tuple[object, frozenset[str]]]:
        def run(hints: Hints) -> tuple[object, frozenset[str]]:
            where = "child" if os.getpid() != parent else "here"
            cut.append(f"job {i} cut {where}")
            return i, frozenset()

        return run

    _in_lanes([job(i) for i in range(4)], Hints(), cut)  # type: ignore[arg-type]
    assert sorted(cut) == ["job 0 cut here", "job 1 cut child", "job 2 cut here", "job 3 cut child"]


def _mixed(seed: int) -> Policy:
    import random

    rng = random.Random(seed)
    tools = [f"t{i}" for i in range(8)]
    reqs: list[object] = [CycleGuard()] if seed % 2 else []
    while len(reqs) < 12:
        target = rng.choice(tools)
        others = [t for t in tools if t != target]
        kind = rng.random()
        params: dict[str, object] = {"priority": rng.randint(1, 9)}
        if kind < 0.3:
            params["only_after"] = rng.sample(others, 1)
        elif kind < 0.5:
            params["force_after"] = rng.sample(others, 1)
        elif kind < 0.6:
            params["force_at_step"] = rng.randint(1, 3)
        if rng.random() < 0.5:
            params["max_invocations"] = rng.randint(0, 2)
        reqs.append(C(target, name=f"r{len(reqs)}-{target}", **params))  # type: ignore[arg-type]
    return Policy(tools, reqs, max_iterations=8)  # type: ignore[arg-type]


@needs_fork
@pytest.mark.parametrize("seed", range(6))
def test_reports_are_the_same_with_and_without_a_child(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _mixed(seed)
    forks: list[bool] = []

    def recording(*lanes_: object) -> object:
        found = run_lanes(*lanes_)  # type: ignore[arg-type]
        forks.append(found[2])
        return found

    monkeypatch.setattr(properties, "run_lanes", recording)

    def report() -> dict[str, object]:
        data = json.loads(policy.check().model_dump_json())
        data["stats"].pop("seconds")
        return data  # type: ignore[no-any-return]

    with_child = report()
    assert any(forks)  # some second lanes did run in children
    forks.clear()
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert report() == with_child
    assert not any(forks)


def _children() -> set[int]:
    """This process's child processes (zombies included)."""
    me = str(os.getpid())
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                out.add(int(pid))
    return out


@needs_fork
@pytest.mark.parametrize("seed", range(4))
def test_liveness_in_a_second_lane_gives_the_same_report(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ruleengine.check import symbolic

    policy = _mixed(seed)

    def report() -> dict[str, object]:
        data = json.loads(policy.check(engine="symbolic").model_dump_json())
        data["stats"].pop("seconds")
        return data  # type: ignore[no-any-return]

    alone = report()  # few states: liveness in the same lane
    monkeypatch.setattr(symbolic, "LIVENESS_LANE_STATES", 0)
    forks: list[bool] = []

    def recording(*lanes_: object) -> object:
        found = run_lanes(*lanes_)  # type: ignore[arg-type]
        forks.append(found[2])
        return found

    monkeypatch.setattr(symbolic, "run_lanes", recording)
    assert report() == alone
    assert forks and all(forks)  # the whole analysis forked its liveness lane
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert report() == alone
