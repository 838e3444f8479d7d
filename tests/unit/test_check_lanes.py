"""Lanes of core searches: the second runs in a forked child when it may, and the results
are those of running both here, whatever happens to the child."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine import CycleGuard, Policy
from ruleengine.check import lanes, properties
from ruleengine.check.lanes import forking_allowed, run_beside, run_jobs
from ruleengine.check.properties import Hints, _in_lanes
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System

T = TypeVar("T")


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


def _jobs(values: list[int]) -> list[Callable[[], tuple[int, int]]]:
    return [lambda v=v: (v, os.getpid()) for v in values]


HANG = 60.0
"""Seconds a wait for another process gives up after: only a bound on a hang (a wait that
runs out fails the test); no assertion depends on how long anything took."""


class _Flag:
    """A flag two processes share across a fork: a pipe, set by a byte written to it, set for
    good once readable (nothing reads it)."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def set(self) -> None:
        if not self.wait(0):
            os.write(self._write, b"x")

    def wait(self, timeout: float = HANG) -> bool:
        """Whether the flag is set, waiting for it up to ``timeout`` seconds."""
        readable, _, _ = select.select([self._read], [], [], timeout)
        return bool(readable)

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


class _Meeting:
    """Makes this process and a forked child each take a job before either goes on: each job
    calls ``arrive`` first, and the first job in each process waits there for the other's.
    Whichever process the machine runs first, neither can take every job (nor run one to its
    end) before the other has taken one; what happens after that is the machine's."""

    def __init__(self) -> None:
        self.parent = os.getpid()
        self.here = _Flag()
        """Set once this process has started a job."""
        self.child = _Flag()
        """Set once the child has started a job."""

    def arrive(self) -> None:
        mine, theirs = (self.here, self.child) if self._here() else (self.child, self.here)
        mine.set()
        if not theirs.wait():
            raise AssertionError("the other process never took a job")

    def _here(self) -> bool:
        return os.getpid() == self.parent

    def first(self, job: Callable[[], T]) -> Callable[[], T]:
        """``job``, run once this process and the child have each started one."""

        def run() -> T:
            self.arrive()
            return job()

        return run

    def close(self) -> None:
        self.here.close()
        self.child.close()


@pytest.fixture
def meeting() -> Iterator[_Meeting]:
    meeting = _Meeting()
    try:
        yield meeting
    finally:
        meeting.close()


@needs_fork
def test_a_child_takes_jobs_from_the_back_and_every_result_comes_back_in_order(
    meeting: _Meeting,
) -> None:
    parent = os.getpid()
    found, here = run_jobs([meeting.first(job) for job in _jobs(list(range(12)))])
    assert [v for v, _ in found] == list(range(12))
    assert here == [pid == parent for _, pid in found]
    assert here[0] and not here[-1]  # the front here, the back in the child
    assert here == sorted(here, reverse=True)  # one cut between the two


def test_without_forking_every_job_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert not forking_allowed()
    found, here = run_jobs(_jobs([1, 2, 3]))
    assert [v for v, _ in found] == [1, 2, 3]
    assert here == [True] * 3
    assert {pid for _, pid in found} == {os.getpid()}


@needs_fork
def test_one_job_or_none_forks_nothing() -> None:
    assert run_jobs([]) == ([], [])
    found, here = run_jobs(_jobs([5]))
    assert ([v for v, _ in found], here) == ([5], [True])


@needs_fork
def test_a_child_that_fails_has_its_jobs_run_here(meeting: _Meeting) -> None:
    parent = os.getpid()

    def fails_in_a_child(v: int) -> Callable[[], int]:
        def run() -> int:
            if os.getpid() != parent:
                raise RuntimeError("only in the child")
            return v

        return meeting.first(run)

    found, here = run_jobs([fails_in_a_child(v) for v in range(6)])
    assert (found, here) == (list(range(6)), [True] * 6)
    assert meeting.child.wait(0)  # the child did take a job (and failed it)


@needs_fork
def test_a_result_that_does_not_pickle_has_its_job_run_here(meeting: _Meeting) -> None:
    found, here = run_jobs([meeting.first(lambda: 1), meeting.first(threading.Lock)])
    assert found[0] == 1 and type(found[1]) is type(threading.Lock())
    assert all(here)
    assert meeting.child.wait(0)  # the lock was made in the child first


@needs_fork
def test_a_child_killed_midway_has_its_jobs_run_here(meeting: _Meeting) -> None:
    parent = os.getpid()

    def dies_in_a_child() -> int:
        if os.getpid() != parent:
            os._exit(3)
        return 5

    jobs = [meeting.first(lambda: 1), meeting.first(dies_in_a_child)]
    assert run_jobs(jobs) == ([1, 5], [True, True])
    assert meeting.child.wait(0)  # the child did take the job it died in


@needs_fork
def test_the_jobs_run_with_the_objects_of_the_fork_frozen_and_thaw_after(
    meeting: _Meeting,
) -> None:
    # Frozen objects are left out of the garbage collector's passes, which would otherwise
    # write to every object's header and so copy the pages both processes share.
    assert gc.get_freeze_count() == 0
    found, here = run_jobs([meeting.first(gc.get_freeze_count)] * 2)
    assert here == [True, False]
    assert all(count > 0 for count in found)  # here and in the child
    assert gc.get_freeze_count() == 0
    with pytest.raises(ValueError, match="here"):
        run_jobs([_raise_here, gc.get_freeze_count])
    assert gc.get_freeze_count() == 0  # thawed on the way out too
    found, here = run_jobs([gc.get_freeze_count])  # one job: no child, nothing frozen
    assert found == [0] and here == [True]


@needs_fork
def test_a_freeze_the_program_made_is_left_as_it_is(meeting: _Meeting) -> None:
    # The command line freezes what its imports built; a thaw here would undo that (and a
    # program's own freeze before it forks workers).
    # Frozen objects that die leave the count, so it may only fall by what died since; a
    # freeze on top (or a thaw and a new freeze) would take in the containers made after
    # the program's, and a thaw alone would leave nothing frozen.
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        assert before > 0
        made_after = [[i] for i in range(10_000)]
        found, here = run_jobs([meeting.first(gc.get_freeze_count)] * 2)
        assert here == [True, False]
        assert 0 < found[0] <= before  # nothing frozen on top of it here
        assert found[1] > 0  # the child inherits it (less what it freed since the fork)
        assert 0 < gc.get_freeze_count() <= before  # not thawed, nothing added
        with pytest.raises(ValueError, match="here"):
            run_jobs([_raise_here, gc.get_freeze_count])
        assert 0 < gc.get_freeze_count() <= before
        assert len(made_after) == 10_000
    finally:
        gc.unfreeze()


def _raise_here() -> int:
    raise ValueError("here")


def test_an_error_here_stops_the_child_and_propagates() -> None:
    never = threading.Event()

    def boom() -> int:
        raise ValueError("here")

    def slow() -> int:
        never.wait(30)  # never set: in the child it would run for 30 s
        return 1

    children_before = _children()
    with pytest.raises(ValueError, match="here"):
        run_jobs([boom, slow, slow])
    assert _children() == children_before  # killed and reaped: no zombie left


@needs_fork
def test_beside_runs_the_main_job_here_and_shares_the_side_jobs_with_a_child(
    meeting: _Meeting,
) -> None:
    parent = os.getpid()
    effects: list[int] = []

    def main() -> None:
        # Until the child has taken a side job: it starts beside `main`, not after it.
        assert meeting.child.wait(), "the child never took a side job"
        effects.append(os.getpid())

    found = run_beside(main, [meeting.first(job) for job in _jobs(list(range(12)))])
    assert effects == [parent]  # the main job's effects are this process's
    assert [i for i, _ in found] == list(range(12))  # every result, in order
    ran_here = [i for i, pid in found if pid == parent]
    ran_there = [i for i, pid in found if pid != parent]
    # The child took jobs from the back; this process, after `main`, from the front.
    assert ran_there and ran_there == list(range(12 - len(ran_there), 12))
    assert ran_here and ran_here == list(range(len(ran_here)))

    tried = _Flag()  # set by the side job, wherever it runs

    def fails_in_a_child() -> int:
        tried.set()
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return 9

    def until_the_child_tried() -> None:
        # Only the child can set it meanwhile: this process runs side jobs after `main`.
        assert tried.wait(), "the child never took the side job"

    try:
        assert run_beside(until_the_child_tried, [fails_in_a_child]) == [9]
    finally:
        tried.close()
    assert run_beside(lambda: effects.append(0), []) == [] and effects[-1] == 0
    children_before = _children()
    with pytest.raises(ValueError, match="main"):
        run_beside(lambda: (_ for _ in ()).throw(ValueError("main")), [lambda: time.sleep(30)])
    assert _children() == children_before


def test_other_threads_keep_the_jobs_in_this_process() -> None:
    # Idle threads earlier tests left (anyio's workers) may end at any moment, even between
    # two looks at them: the answer is compared with counts taken on either side of it.
    def only_quiet() -> bool:
        main = threading.main_thread()
        others = [t for t in threading.enumerate() if t is not main]
        return all(t.name in lanes._QUIET_THREADS for t in others)

    alone_before = only_quiet()
    quiet = lanes._threads_quiet()
    if alone_before == only_quiet():
        assert quiet == alone_before
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="someone-else")
    worker.start()
    try:
        assert not forking_allowed()
        assert run_jobs(_jobs([1, 2]))[1] == [True, True]
    finally:
        stop.set()
        worker.join()


def _recording_jobs(
    n: int,
) -> tuple[list[Callable[[Hints], tuple[object, frozenset[str]]]], dict[int, list[frozenset[str]]]]:
    """``n`` core-search jobs that record the recent guesses each was given (by job index)
    and find ``finding i`` with the core ``{core i}``."""
    seen: dict[int, list[frozenset[str]]] = {}

    def job(i: int) -> Callable[[Hints], tuple[object, frozenset[str]]]:
        def run(hints: Hints) -> tuple[object, frozenset[str]]:
            seen[i] = list(hints.recent)
            return f"finding {i}", frozenset({f"core{i}"})

        return run

    return [job(i) for i in range(n)], seen


def test_lanes_deal_jobs_in_turn_and_each_lane_learns_only_from_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RULEENGINE_LANES", "1")  # to see what each job saw
    jobs, seen = _recording_jobs(5)
    hints = Hints()
    hints.add(["root"], root=True)
    hints.add(["earlier"])
    found = _in_lanes(jobs, hints, None)  # type: ignore[arg-type]
    assert found == [f"finding {i}" for i in range(5)]
    earlier = frozenset({"earlier"})
    assert seen[0] == seen[1] == [earlier]
    assert seen[2] == [frozenset({"core0"}), earlier]
    assert seen[3] == [frozenset({"core1"}), earlier]
    assert seen[4] == [frozenset({"core2"}), frozenset({"core0"}), earlier]
    # Afterwards the phase's cores, in job order (newest first), are everyone's guesses.
    assert hints.recent == [frozenset({f"core{i}"}) for i in reversed(range(5))] + [earlier]
    assert hints.roots == [frozenset({"root"})]


def test_lanes_given_by_index_learn_along_their_own_jobs_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    jobs, seen = _recording_jobs(6)
    hints = Hints()
    lanes = [[0, 3, 4], [1], [2, 5]]
    found = _in_lanes(jobs, hints, None, lanes)  # type: ignore[arg-type]
    assert found == [f"finding {i}" for i in range(6)]
    assert seen[0] == seen[1] == seen[2] == []
    assert seen[3] == [frozenset({"core0"})]
    assert seen[4] == [frozenset({"core3"}), frozenset({"core0"})]
    assert seen[5] == [frozenset({"core2"})]
    assert hints.recent == [frozenset({f"core{i}"}) for i in reversed(range(6))]


def test_related_requirements_share_a_lane_and_a_crowd_is_split_in_two() -> None:
    # Searches about the same tools (mentioned, watched or waited for) share a lane, in
    # order; unrelated ones get their own lanes, for two processes to share out.
    system = System(
        ["a", "b", "c", "d", "e"],
        [
            C("a", only_after=["b"], name="a-after-b"),
            C("c", max_invocations=1, name="cap-c"),
            C("b", max_invocations=2, name="cap-b"),
            C("d", only_after=["e"], name="d-after-e"),
            C("c", only_after=["d"], name="c-after-d"),
        ],
    )
    context = properties._DeadRequirements(system, Relaxed(system.components, system.tools), {})
    related = context.lanes
    # Without `c-after-d`, `cap-c` and `d-after-e` have no tool in common. The longest lane
    # comes first, then the shortest, towards the end the longer again.
    four = ["a-after-b", "cap-c", "cap-b", "d-after-e"]
    assert related(four) == [[0, 2], [3], [1]]
    # With it, the three about `c`, `d` and `e` are one group: more than half of the five,
    # so it is dealt to two lanes in turn.
    five = [*four, "c-after-d"]
    assert related(five) == [[0, 2], [3], [1, 4]]
    # Every search in exactly one lane, each lane in order, the longest at either end.
    assert related(["cap-c"]) == [[0]]  # one search: one lane
    assert related(["cap-c", "c-after-d"]) == [[0], [1]]
    for names in (four, five, five[::-1], [], ["cap-b"]):
        lanes = related(names)
        assert sorted(i for lane in lanes for i in lane) == list(range(len(names)))
        assert all(lane == sorted(lane) for lane in lanes)
        if lanes:
            longest = max(map(len, lanes))
            assert len(lanes[0]) == longest
            assert all(len(lane) <= max(len(lanes[0]), len(lanes[-1])) for lane in lanes)


@needs_fork
def test_answers_cut_short_in_a_child_are_reported_here(meeting: _Meeting) -> None:
    parent = os.getpid()
    cut: list[str] = []

    def job(i: int) -> Callable[[Hints], tuple[object, frozenset[str]]]:
        def run(hints: Hints) -> tuple[object, frozenset[str]]:
            meeting.arrive()  # each lane in a process of its own
            where = "child" if os.getpid() != parent else "here"
            cut.append(f"job {i} cut {where}")
            return i, frozenset()

        return run

    _in_lanes([job(i) for i in range(6)], Hints(), cut)  # type: ignore[arg-type]
    assert sorted(entry.split()[1] for entry in cut) == [str(i) for i in range(6)]
    assert any(entry.endswith("child") for entry in cut)
    assert any(entry.endswith("here") for entry in cut)


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

    def recording(jobs: Any) -> Any:
        if len(jobs) < 2 or not forking_allowed():
            found = run_jobs(jobs)
        else:  # a child forked: it and this process each run a lane
            meeting = _Meeting()
            try:
                found = run_jobs([meeting.first(job) for job in jobs])
            finally:
                meeting.close()
        forks.append(not all(found[1]))
        return found

    monkeypatch.setattr(properties, "run_jobs", recording)
    with_child = _report(policy)
    assert any(forks)  # some jobs did run in children
    forks.clear()
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert _report(policy) == with_child
    assert not any(forks)


def _report(policy: Policy, **options: Any) -> dict[str, object]:
    """``policy``'s report as JSON data, its time left out."""
    data = json.loads(policy.check(**options).model_dump_json())
    data["stats"].pop("seconds")
    return data  # type: ignore[no-any-return]


def _children() -> set[int]:
    """This process's child processes (zombies included)."""
    me = str(os.getpid())
    return {
        int(pid)
        for pid in os.listdir("/proc")
        if pid.isdigit() and (fields := _stat(int(pid))) is not None and fields[1] == me
    }


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, parent, …), or None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


@needs_fork
@pytest.mark.parametrize("seed", range(4))
def test_liveness_in_a_second_lane_gives_the_same_report(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ruleengine.check import symbolic

    policy = _mixed(seed)

    alone = _liveness_here(policy, monkeypatch)
    monkeypatch.setattr(symbolic, "LIVENESS_BESIDE_STATES", 0)
    pids = _beside_pids(monkeypatch)
    assert _report(policy, engine="symbolic") == alone
    assert pids  # liveness was shared out beside the rest (who took what: the machine's)
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    assert _report(policy, engine="symbolic") == alone


@needs_fork
def test_a_child_forks_no_grandchild(meeting: _Meeting) -> None:
    # Each process asks once both have taken a job: the first here, the second in the child.
    found, here = run_jobs([meeting.first(forking_allowed)] * 2)
    assert here == [True, False]
    assert found == [True, False]  # allowed here, never in the child


@needs_fork
def test_a_child_ends_with_its_parent() -> None:
    # A parent killed outright (no chance to stop its child) takes the child with it,
    # instead of leaving it to run its jobs to the end, orphaned. Each job says its process
    # id on stdout, a pipe, then waits until killed: only a signal ends either process.
    script = """
import os, signal
from ruleengine.check import lanes
lanes._threads_quiet = lambda: True

def job():
    os.write(1, f"{os.getpid()}\\n".encode())
    signal.pause()
    return 0

lanes.run_jobs([job, job])
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("RULEENGINE_LANES", None)
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    out = proc.stdout.fileno()
    started: list[int] = []
    try:
        said = b""
        while said.count(b"\n") < 2 and (chunk := _read(out)):
            said += chunk
        started = [int(pid) for pid in said.split()]
        assert proc.pid in started and len(set(started)) == 2
    finally:
        proc.kill()
        proc.wait()
    (child,) = [pid for pid in started if pid != proc.pid]
    ended = False
    try:
        # The child holds the pipe too: it reads as ended (EOF) once the child has ended
        # as well, which only the signal its parent's death sends can do.
        ended = _read(out) == b""
        assert ended
    finally:
        proc.stdout.close()
        if not ended:  # the child would wait forever
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def _read(fd: int) -> bytes:
    """What a pipe has to read (``b""``: every writer has closed it), waiting up to ``HANG``
    seconds for something."""
    if not select.select([fd], [], [], HANG)[0]:
        raise AssertionError(f"nothing came through the pipe in {HANG:g} s")
    return os.read(fd, 4096)


def test_no_process_is_started_for_an_empty_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []

    def recording(jobs: Any) -> Any:
        sizes.append(len(jobs))
        return run_jobs(jobs)

    monkeypatch.setattr(properties, "run_jobs", recording)

    def job(hints: Hints) -> tuple[object, frozenset[str]]:
        return "finding", frozenset({"core"})

    assert _in_lanes([], Hints(), None) == []
    assert _in_lanes([job], Hints(), None) == ["finding"]  # type: ignore[list-item]
    assert _in_lanes([job, job, job], Hints(), None) == ["finding"] * 3  # type: ignore[list-item]
    assert sizes == [0, 1, 2]  # lanes handed to run_jobs: only a second job forks


@needs_fork
@pytest.mark.parametrize(
    ("states", "seconds", "beside"), [(0, 1e9, True), (10**12, 0.0, True), (10**12, 1e9, False)]
)
def test_liveness_goes_beside_the_rest_past_either_threshold(
    states: int, seconds: float, beside: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past LIVENESS_BESIDE_STATES reachable states, or LIVENESS_BESIDE_SECONDS of search
    # for them, liveness runs in a child; below both, here.
    from ruleengine.check import symbolic

    policy = _mixed(1)
    alone = _liveness_here(policy, monkeypatch)
    monkeypatch.setattr(symbolic, "LIVENESS_BESIDE_STATES", states)
    monkeypatch.setattr(symbolic, "LIVENESS_BESIDE_SECONDS", seconds)
    pids = _beside_pids(monkeypatch)
    assert _report(policy, engine="symbolic") == alone
    assert bool(pids) == beside


def _liveness_here(policy: Policy, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """``policy``'s report by the symbolic engine with liveness found in this process, after
    the rest, however long its search takes (past ``LIVENESS_BESIDE_SECONDS``, a loaded
    machine would otherwise send it beside the rest)."""
    from ruleengine.check import symbolic

    with monkeypatch.context() as patched:
        patched.setattr(symbolic, "LIVENESS_BESIDE_STATES", float("inf"))
        patched.setattr(symbolic, "LIVENESS_BESIDE_SECONDS", float("inf"))
        pids = _beside_pids(patched)
        report = _report(policy, engine="symbolic")
    assert not pids
    return report


def _beside_pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process ids that computed each group of requirements whose liveness a
    ``run_beside`` of the symbolic engine shared out, from now on."""
    from ruleengine.check import symbolic

    pids: list[int] = []

    def recording(main: Any, side: Any) -> Any:
        def where(job: Any) -> Any:
            return lambda: (os.getpid(), job())

        found = run_beside(main, [where(job) for job in side])
        pids.extend(pid for pid, _ in found)
        return [live for _, live in found]

    monkeypatch.setattr(symbolic, "run_beside", recording)
    return pids
