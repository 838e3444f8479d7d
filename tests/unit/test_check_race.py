"""``auto`` with a time limit races its engine (in a forked child, ``lanes.Aside``) against
the compositional analysis (``check/compositional.py``, in a second child): the engine's
report is taken whenever it comes, the other's when it is complete first; a child that
outlasts the limit inside one step is stopped there, and the report gives what was decided
one verdict at a time; a child that fails changes nothing.

The tests make the engine's step outlast the limit with a sleep no deadline check
interrupts, and assert what the reports say, never how long they took."""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

import pytest

from ruleengine import ConditionalRequirement, Policy
from ruleengine.check import check_policy, lanes
from ruleengine.check import run as run_module
from ruleengine.check.analysis import Analysis
from ruleengine.check.lanes import Aside, forking_allowed
from ruleengine.check.run import _SymbolicEngine, _whole_if_small
from ruleengine.check.system import System

needs_fork = pytest.mark.skipif(not forking_allowed(), reason="the engine's child is forked")
needs_pidfd = pytest.mark.skipif(
    not hasattr(os, "pidfd_open"), reason="waits on a forked child's exit"
)

TOOLS = [f"t{i}" for i in range(9)]


def wide() -> Policy:
    """About 1,500 states, many per step: neither small nor narrow, so ``auto`` races. A
    tie after `t0`, `t1` needed before stopping but capped, `t5` and `t8` dead behind a
    cycle of "only after"s."""
    return Policy(
        TOOLS,
        [
            *(ConditionalRequirement(t, max_invocations=2, name=f"cap-{t}") for t in TOOLS[1:8]),
            ConditionalRequirement("t1", min_invocations=1, name="needs-t1"),
            ConditionalRequirement("t2", force_after=["t0"], name="force-t2"),
            ConditionalRequirement("t3", force_after=["t0"], name="force-t3"),
            ConditionalRequirement("t5", only_after=["t8"], name="t5-after-t8"),
            ConditionalRequirement("t8", only_after=["t5"], name="t8-after-t5"),
        ],
        max_iterations=10,
    )


def _deaf_in_children(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``run_module``'s function ``name`` never ends in a forked child (a sleep no deadline
    check sees); this process's own calls go through."""
    parent, real = os.getpid(), getattr(run_module, name)

    def deaf(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            time.sleep(600)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, name, deaf)


def _stuck_in_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's whole path never ends in its forked child; the other child's core
    questions, and this process's own calls, go through."""
    _deaf_in_children(monkeypatch, "_engine_path")


def _failing_in_the_child(parent: int) -> Any:
    real = _SymbolicEngine.__call__

    def call(self: _SymbolicEngine, sub: Any, focus: str | None = None) -> Any:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return real(self, sub, focus)

    return call


@pytest.fixture(autouse=True)
def _forking_now() -> None:
    # Checked when each test runs, not only when the module is collected: a thread another
    # test left running would silently turn the race off. Idle workers earlier tests left
    # (anyio's end after 10 s idle) are joined: the test waits on their ending, and the
    # bound is for a thread that never ends, not a timing assertion.
    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and thread.name not in lanes._QUIET_THREADS:
            thread.join(timeout=120)
    assert forking_allowed(), "a thread other than the quiet ones is running"


@pytest.fixture(autouse=True)
def _side_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second child starts with the engine's, whatever ``ASIDE_GRACE`` says: the tests
    below wait on no part of the limit."""
    monkeypatch.setattr(run_module, "ASIDE_GRACE", 0.0)


def _shape(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = report.model_dump(mode="json", exclude={"stats"})
    return out


def _alone(policy: Policy) -> Any:
    """``policy``'s report from its engine alone, in this process: no child can be forked,
    so nothing races."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lanes, "forking_allowed", lambda: False)
        return check_policy(policy)


def _raced_as_alone(policy: Policy, alone: Any) -> None:
    """Raced under a far limit, ``policy``'s report is complete and ``alone``'s (the
    engine's alone, ``_alone``), ``stats`` aside."""
    raced = check_policy(policy, timeout=600)
    assert raced.complete and _shape(raced) == _shape(alone)


@needs_fork
def test_the_engines_report_is_taken_when_it_comes_in_time() -> None:
    policy = wide()
    system = System(policy.tools, policy.requirements)
    assert _whole_if_small(system, max_states=None, deadline=None)[0] is None  # it races
    alone = _alone(policy)
    _raced_as_alone(policy, alone)


def _one_by_one_only(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``wide()``'s report raced with an engine that never ends and a probe far smaller
    than the reachable set: the verdicts are decided one by one."""
    from ruleengine.check import compositional

    _stuck_in_the_child(monkeypatch)
    monkeypatch.setattr(compositional, "PROBE_STATES", 64)
    return check_policy(wide(), timeout=20)


def _not_deciding_deep(monkeypatch: pytest.MonkeyPatch, *, backward: bool = False) -> None:
    """The one-by-one analysis without bounded model checking and (unless ``backward``)
    without the layers backward: what `wide()`'s first layers miss (its no-finish), it can
    then only prove never."""
    from ruleengine.check import compositional

    monkeypatch.setattr(compositional, "UNROLL_DEPTHS", ())
    if not backward:
        monkeypatch.setattr(compositional._Decider, "_back", lambda self, most: None)


@needs_fork
def test_an_engine_stuck_past_the_limit_is_stopped_and_verdicts_decided_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = _alone(wide())
    raced = _one_by_one_only(monkeypatch)
    assert raced.stats.states == 64
    # What it reports is the engine's, findings, traces and cores alike: the no-finish,
    # which the first layers do not meet, by bounded model checking, its witness walked
    # to the engine's own.
    assert raced.complete and not raced.undecided
    assert _shape(raced) == _shape(alone)
    assert {f.id for f in raced.findings} >= {"no-finish", "forced-tie", "dead-tool"}


@needs_fork
def test_what_it_does_not_decide_one_by_one_it_names_undecided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    alone = _alone(wide())
    # Without bounded model checking and the layers backward, the no-finish is left open.
    _not_deciding_deep(monkeypatch)
    raced = _one_by_one_only(monkeypatch)
    # What it reports is the engine's (findings, traces and cores alike); what it does not
    # report of the engine's findings, it names undecided.
    assert not raced.complete and raced.undecided == ("no-finish",)
    engine = {(f.id, f.tool, f.requirement): f for f in alone.findings}
    for f in raced.findings:
        assert engine[(f.id, f.tool, f.requirement)] == f
    missing = {key[0] for key in engine} - {f.id for f in raced.findings}
    assert missing == {"no-finish"}
    assert {f.id for f in raced.findings} >= {"forced-tie", "dead-tool", "dead-requirement"}


@needs_fork
def test_in_strict_mode_the_layers_backward_decide_what_the_first_proofs_leave_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ruleengine.check import compositional

    alone = _alone(wide())
    # Without bounded model checking, and with every proof by property-directed
    # reachability failing, the layers backward from the states that cannot finish still
    # decide the no-finish, with the engine's witness (before, it was left undecided).
    _not_deciding_deep(monkeypatch, backward=True)
    monkeypatch.setattr(compositional.Unrolled, "never", lambda self, *a, **k: False)
    raced = _one_by_one_only(monkeypatch)
    assert raced.complete and _shape(raced) == _shape(alone)


@needs_fork
def test_what_is_left_undecided_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from ruleengine.check import compositional

    policy = wide()
    _stuck_in_the_child(monkeypatch)
    # Without its directed searches it cannot show the requirements live that the probe
    # did not meet, nor the tools it did not see allowed.
    monkeypatch.setattr(compositional, "PROBE_STATES", 8)
    monkeypatch.setattr(compositional, "toward", lambda *a, **k: None)
    monkeypatch.setattr(compositional, "along", lambda *a, **k: None)
    monkeypatch.setattr(compositional, "seek", lambda *a, **k: None)
    _not_deciding_deep(monkeypatch)  # nor by bounded model checking or backward
    raced = check_policy(policy, timeout=20)
    assert not raced.complete and raced.undecided
    assert raced.reason is not None
    assert raced.reason.startswith("the engine did not finish within the time limit;")
    assert f"{len(raced.undecided)} left undecided" in raced.reason
    assert all(
        u.split(":")[0] in {"dead-tool", "dead-requirement", "budget", "no-finish"}
        for u in raced.undecided
    )
    # Only what was proved is reported: no dead-tool finding for an undecided tool.
    dead = {f.tool for f in raced.findings if f.id == "dead-tool"}
    assert not dead & {u.split(":")[1] for u in raced.undecided if u.startswith("dead-tool:")}
    assert "undecided" in raced.model_dump(mode="json")


@needs_fork
def test_a_child_that_fails_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = wide()
    alone = _alone(policy)
    monkeypatch.setattr(_SymbolicEngine, "__call__", _failing_in_the_child(os.getpid()))
    raced = check_policy(policy, timeout=600)
    assert _shape(raced) == _shape(alone)


@needs_fork
def test_an_aside_job_comes_back_or_is_stopped() -> None:
    done = Aside.start(lambda: {"answer": 42})
    assert done is not None
    assert done.result() == (True, {"answer": 42})
    assert done.ready()

    sleeping = Aside.start(lambda: time.sleep(600))
    assert sleeping is not None
    assert not sleeping.wait(time.monotonic() + 0.05)
    sleeping.stop()
    assert sleeping.result() == (False, None)

    def fails() -> None:
        raise ValueError("no")

    failing = Aside.start(fails)
    assert failing is not None
    assert failing.result() == (False, None)
    # Why it failed is told, for diagnosis: the job's traceback, or how the child ended.
    assert failing.failure is not None and "ValueError: no" in failing.failure
    assert done.failure is None and sleeping.failure is None  # answered; stopped

    unpicklable = Aside.start(lambda: lambda: None)
    assert unpicklable is not None
    assert unpicklable.result() == (False, None)
    assert unpicklable.failure is not None and "pickle" in unpicklable.failure.lower()

    leaving = Aside.start(lambda: os._exit(3))
    assert leaving is not None
    assert leaving.result() == (False, None)
    assert leaving.failure == "the child exited with status 3, telling nothing"


@needs_fork
def test_an_aside_job_sends_what_it_has_as_it_goes() -> None:
    # The latest interim result is kept, also once the child is stopped; the final result
    # comes after interim ones all the same. The child says on a pipe of its own when it
    # has sent everything (its messages are in this process's pipe by then).
    said, say = os.pipe()

    def sent_then_deaf(send: Any) -> str:  # runs in the child
        send(1)
        send(lambda: None)  # does not pickle: not sent, and the job goes on
        send({"decided": 2})
        os.write(say, b"sent")
        time.sleep(600)
        return "never"

    deaf = Aside.reporting(sent_then_deaf)
    os.close(say)  # the child's copy only: it dying before it writes ends the read
    assert deaf is not None
    try:
        with os.fdopen(said, "rb") as told:
            assert told.read(4) == b"sent"
        assert not deaf.ready()  # reads what came
        assert deaf.latest() == {"decided": 2}
    finally:
        deaf.stop()
    assert deaf.result() == (False, None)
    assert deaf.latest() == {"decided": 2}

    def sent_then_done(send: Any) -> str:
        send("halfway")
        return "done"

    done = Aside.reporting(sent_then_done)
    assert done is not None
    assert done.result() == (True, "done")
    assert done.latest() == "halfway"
    quiet = Aside.start(lambda: "done")
    assert quiet is not None
    assert quiet.result() == (True, "done") and quiet.latest() is None


def test_a_childs_messages_are_read_whole_whatever_the_chunks() -> None:
    whole = lanes._Frames.frame(lanes._INTERIM, [1, 2]) + lanes._Frames.frame(lanes._FINAL, "end")
    frames = lanes._Frames()
    for i in range(len(whole)):  # a byte at a time
        assert frames.result() == (False, None)
        frames.add(whole[i : i + 1])
    assert frames.latest() == (True, [1, 2]) and frames.result() == (True, "end")

    after = lanes._Frames()  # anything after the final message: nothing is trusted
    after.add(whole + lanes._Frames.frame(lanes._INTERIM, 3))
    assert after.result() == (False, None) and after.latest() == (False, None)

    unknown = lanes._Frames()  # a kind that is neither
    unknown.add(lanes._Frames._HEADER.pack(7, 0) + whole)
    assert unknown.result() == (False, None)

    cut = lanes._Frames()  # a final message cut short
    cut.add(whole[:-1])
    assert cut.result() == (False, None) and cut.latest() == (True, [1, 2])

    garbled = lanes._Frames()  # whole frames that do not unpickle
    garbled.add(lanes._Frames._HEADER.pack(lanes._FINAL, 3) + b"abc")
    assert garbled.result() == (False, None)


@needs_fork
def test_a_fault_beside_the_engine_does_not_cost_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ruleengine.check import compositional

    policy = wide()
    alone = _alone(policy)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a fault beside the engine")

    monkeypatch.setattr(compositional, "analyse_compositional", broken)
    raced = check_policy(policy, timeout=600)
    assert _shape(raced) == _shape(alone)


@needs_fork
def test_a_huge_time_limit_is_waited_on_in_pieces() -> None:
    # select() refuses a wait past the platform's time_t: the race waits a day at a time.
    policy = wide()
    assert _shape(check_policy(policy, timeout=1e308)) == _shape(_alone(policy))


@needs_fork
def test_either_ends_when_one_of_two_children_answers() -> None:
    sleeping = Aside.start(lambda: time.sleep(600))
    done = Aside.start(lambda: "answer")
    assert sleeping is not None and done is not None
    try:
        assert Aside.either((sleeping, done), None)
        assert done.result() == (True, "answer")
        assert not sleeping.ready()
        assert not Aside.either((sleeping,), time.monotonic() + 0.05)
    finally:
        sleeping.stop()
    assert Aside.either((sleeping, done), None)  # both known now
    with pytest.raises(ValueError, match="at least one child"):
        Aside.either((), None)


@needs_fork
def test_without_a_limit_the_engine_races_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # No limit: the engine never ends in its child, and must not run in this process at
    # all; the verdicts one by one give the complete report, which is the engine's.
    policy = wide()
    alone = _alone(policy)
    parent, real = os.getpid(), run_module._engine_path

    def elsewhere(*args: Any, **kwargs: Any) -> Any:
        assert os.getpid() != parent, "the engine ran in this process: no race"
        time.sleep(600)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "_engine_path", elsewhere)
    started: list[str] = []
    children: list[Aside[Any]] = []
    start = Aside.start

    def noted(job: Any) -> Any:
        # Why the engine's child did not start, or failed, should it: the assertion above
        # then names the threads that were running, and what the child told.
        child = start(job)
        threads = sorted(t.name for t in threading.enumerate())
        started.append(f"child {'started' if child else 'not started'}; threads {threads}")
        if child is not None:
            children.append(child)
        return child

    monkeypatch.setattr(Aside, "start", staticmethod(noted))
    try:
        raced = check_policy(policy)
    except AssertionError as exc:
        told = [c.failure for c in children if c.failure is not None]
        raise AssertionError(
            f"{exc} ({'; '.join(started) or 'no child asked for'}; failures: {told})"
        ) from exc
    assert raced.complete and _shape(raced) == _shape(alone)


@needs_fork
def test_an_answer_read_at_the_top_of_the_wait_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wait reads the children's pipes in two places: while it waits (``Aside.either``)
    # and when it asks whether each is ready. Here every wait times out without reading,
    # so the other child's answer is only ever read by asking, once the engine's child,
    # which never ends, has given way to it: that answer is the report, and this process
    # neither decides the verdicts itself nor runs the engine.
    policy = wide()
    alone = _alone(policy)
    _deaf_in_children(monkeypatch, "_engine_path")
    parent, real_either = os.getpid(), Aside.either

    def deaf_wait(asides: Any, until: float | None) -> bool:
        now = time.monotonic()
        pipes = [a._reader for a in asides if a._reader is not None]
        if until is None or until <= now or not pipes:
            # ``ready`` (reads what has come), or a wait for the answer itself.
            return real_either(asides, until)
        # Waits until a child has written (or the wait's time is up), and leaves what it
        # wrote for ``ready`` to read.
        select.select(pipes, [], [], until - now)
        return False

    monkeypatch.setattr(Aside, "either", staticmethod(deaf_wait))

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decided here, though the other child's answer had come")

    monkeypatch.setattr(run_module, "_decided_here", never)
    engine_path = run_module._engine_path

    def not_here(*args: Any, **kwargs: Any) -> Any:
        assert os.getpid() != parent, "the engine ran in this process"
        return engine_path(*args, **kwargs)

    monkeypatch.setattr(run_module, "_engine_path", not_here)
    raced = check_policy(policy)  # no limit: the wait ends only with an answer
    assert raced.complete and _shape(raced) == _shape(alone)


@needs_fork
def test_the_verdicts_one_by_one_answer_while_the_engine_is_stuck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends and the limit is far: the other child's complete report (its
    # probe reaches every state) is the answer, the engine's child is not waited on.
    policy = wide()
    alone = _alone(policy)
    _stuck_in_the_child(monkeypatch)
    _raced_as_alone(policy, alone)


@needs_fork
def test_the_engines_answer_is_taken_while_the_verdicts_one_by_one_are_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The one-by-one analysis sleeps where no step asks after the engine's child: this
    # process still takes the engine's report as it comes (it waits on both children; were
    # the analysis run here, the sleep would hold the report back).
    from ruleengine.check import compositional

    policy = wide()
    alone = _alone(policy)

    def busy(*args: Any, **kwargs: Any) -> Any:
        time.sleep(600)

    monkeypatch.setattr(compositional, "analyse_compositional", busy)
    raced = check_policy(policy, timeout=600)
    assert _shape(raced) == _shape(alone)


@needs_fork
def test_one_by_one_still_deciding_at_the_limit_gives_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends and the one-by-one analysis hands its answer over only once its
    # deadline has passed: it is still at work when the engine's child is stopped, and its
    # report (what it decided, the rest named) is the answer, not an empty one. (It decides
    # first, whole, so that what it hands over does not depend on the machine's speed, with
    # Spacer's proofs cut to half a second, which leave the no-finish open all the same;
    # the reserve after its deadline is left for the cores.)
    from ruleengine.check import compositional

    real = compositional.analyse_compositional

    def late(*args: Any, deadline: float, **kwargs: Any) -> Any:
        found = real(*args, deadline=None, **kwargs)
        # Past its own deadline by the clock, which no other process moves: one wait to it.
        while (left := deadline - time.monotonic()) >= 0:
            threading.Event().wait(left + 0.001)
        return found

    monkeypatch.setattr(compositional, "analyse_compositional", late)
    monkeypatch.setattr(compositional, "PROBE_STATES", 64)
    monkeypatch.setattr(compositional, "PROVE_SECONDS", 0.5)
    _not_deciding_deep(monkeypatch)  # else bounded model checking or the layers decide it
    _stuck_in_the_child(monkeypatch)
    raced = check_policy(wide(), timeout=10)
    assert raced.stats.states == 64
    assert not raced.complete and raced.undecided == ("no-finish",)
    assert raced.reason is not None
    assert raced.reason.startswith("the engine did not finish within the time limit;")


@needs_fork
def test_an_incomplete_engine_report_waits_for_a_complete_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine's child answers at once but incomplete: the other's complete report, which
    # comes later, is the answer (the first complete one, whichever child gives it).
    policy = wide()
    alone = _alone(policy)
    parent, real = os.getpid(), run_module._engine_path

    def cut_short(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() == parent:
            return real(*args, **kwargs)
        # Cut short from the start: what the child sends before its cores (``analysed``)
        # says so too. Were that one complete, the other child would give way as soon as
        # the parent read it, which it does only now and then (``LOOK_SECONDS``): whether
        # it did before the engine's answer came would depend on the machine's load.
        *given, analysed = args
        assert callable(analysed)

        def sent(analysis: Any) -> None:
            analysis.complete, analysis.reason = False, "cut short in the engine's child"
            analysed(analysis)

        analysis, found, cut = real(*given, sent, **kwargs)
        analysis.complete, analysis.reason = False, "cut short in the engine's child"
        return analysis, found, cut

    monkeypatch.setattr(run_module, "_engine_path", cut_short)
    _raced_as_alone(policy, alone)


@needs_fork
def test_a_state_limit_is_kept_with_a_time_limit() -> None:
    # The one-by-one analysis does not keep a state limit: no race then, and the report is
    # the engine's, cut at that many states.
    raced = check_policy(wide(), timeout=600, max_states=2)
    assert not raced.complete and raced.stats.states <= 2
    assert raced.reason is not None and "state limit (2)" in raced.reason


@needs_fork
def test_both_children_past_the_limit_keep_what_the_probe_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends, and the verdicts one by one are deep in a step that does not
    # stop when told before they send anything (as when their niceness starves them on a
    # loaded machine): both are killed at the limit. The report claims only what this
    # process's own breadth-first probe saw (the tie after `t0`, with the trace and at
    # least the core of the report without a limit) and names the rest undecided. (Waited
    # on to its end, the other child would answer 30 s later with a report it made up.)
    policy = wide()
    alone = _alone(policy)
    parent, real = os.getpid(), run_module._one_by_one
    made_up = Analysis(states=1, complete=True)

    def deaf(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            time.sleep(30)
            return made_up, [], []
        return real(*args, **kwargs)

    _stuck_in_the_child(monkeypatch)
    monkeypatch.setattr(run_module, "_one_by_one", deaf)
    raced = check_policy(policy, timeout=3)
    assert not raced.complete and raced.stats.states == run_module.SMALL_STATES
    assert raced.reason is not None
    assert "only what the first 256 states showed is decided" in raced.reason
    assert "no-finish" in raced.undecided and "budget" not in raced.undecided
    ours, theirs = _found_by_subject(raced), _found_by_subject(alone)
    assert ("forced-tie", None, None) in ours and ours.keys() <= theirs.keys()
    for subject, finding in ours.items():
        assert finding.trace == theirs[subject].trace
        assert {c.rule for c in theirs[subject].core} <= {c.rule for c in finding.core}
    decided = {f.id for f in raced.findings}
    assert not decided & set(raced.undecided)


@needs_fork
def test_both_children_past_the_limit_without_a_probe_decide_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As above, where this process has no probe of its own: the report claims nothing.
    parent, real = os.getpid(), run_module._one_by_one

    def deaf(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            time.sleep(30)
        return real(*args, **kwargs)

    real_race = run_module._raced

    def raced_without_probe(system: Any, run: Any, options: Any, probe: Any) -> Any:
        return real_race(system, run, options, None)

    _stuck_in_the_child(monkeypatch)
    monkeypatch.setattr(run_module, "_one_by_one", deaf)
    monkeypatch.setattr(run_module, "_raced", raced_without_probe)
    raced = check_policy(wide(), timeout=3)
    assert not raced.complete and raced.findings == ()
    assert raced.reason is not None and "nothing is decided" in raced.reason


def _found_by_subject(report: Any) -> dict[tuple[str, str | None, str | None], Any]:
    return {(f.id, f.tool, f.requirement): f for f in report.findings}


@needs_fork
def test_one_by_one_deaf_in_its_cores_gives_the_analysis_it_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends; the verdicts one by one decide everything, send their analysis,
    # and are then deaf in their cores past the limit. The report is that analysis, each
    # finding with its trace, and cores the limit cut short: each holds the minimal one.
    policy = wide()
    alone = _alone(policy)
    _stuck_in_the_child(monkeypatch)
    _deaf_in_children(monkeypatch, "_found")  # the engine's child is stuck before it
    raced = check_policy(policy, timeout=10)
    assert not raced.complete and raced.undecided == ()
    assert raced.reason is not None and "the cores may not be minimal" in raced.reason
    ours, theirs = _found_by_subject(raced), _found_by_subject(alone)
    assert ours.keys() == theirs.keys() and ours
    for subject, finding in ours.items():
        assert finding.trace == theirs[subject].trace
        assert {c.rule for c in theirs[subject].core} <= {c.rule for c in finding.core}


@needs_fork
def test_one_by_one_deaf_in_its_analysis_gives_what_it_last_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends; the verdicts one by one send what they decide as they go, then
    # are deaf past the limit before their analysis ends. The report is the last analysis
    # they sent: what it decided (the findings of the report without a limit, or fewer),
    # the rest named undecided, not "nothing is decided".
    from ruleengine.check import compositional

    policy = wide()
    alone = _alone(policy)
    parent, real = os.getpid(), compositional.analyse_compositional

    def deaf(*args: Any, deadline: float, **kwargs: Any) -> Any:
        found = real(*args, deadline=None, **kwargs)
        if os.getpid() != parent:
            time.sleep(600)
        return found

    monkeypatch.setattr(compositional, "analyse_compositional", deaf)
    monkeypatch.setattr(compositional, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(compositional, "PROBE_STATES", 64)
    monkeypatch.setattr(compositional, "PROVE_SECONDS", 0.5)
    _stuck_in_the_child(monkeypatch)
    raced = check_policy(policy, timeout=10)
    assert not raced.complete and raced.undecided
    assert raced.reason is not None
    assert raced.reason.startswith(
        "the engine did not finish within the time limit; verdicts decided one by one"
    )
    ours, theirs = _found_by_subject(raced), _found_by_subject(alone)
    assert ours.keys() <= theirs.keys() and ours
    for subject, finding in ours.items():
        assert finding.trace == theirs[subject].trace


@needs_fork
def test_one_by_one_deaf_before_its_diagrams_gives_what_the_probe_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The engine never ends, and the verdicts one by one never get past building their
    # diagrams (as at 400 tools, where the pass's diagram outgrows any limit): the report
    # is what their breadth-first probe decided, sent before that. Nothing here is
    # hard-forced, so no forced conflict is left open.
    from ruleengine.check import compositional

    policy = wide()
    alone = _alone(policy)
    parent = os.getpid()

    def deaf(self: Any, *args: Any, **kwargs: Any) -> None:
        assert os.getpid() != parent
        time.sleep(600)

    monkeypatch.setattr(compositional._Decider, "__init__", deaf)
    monkeypatch.setattr(compositional, "PROBE_STATES", 64)
    _stuck_in_the_child(monkeypatch)
    raced = check_policy(policy, timeout=5)
    assert not raced.complete and raced.stats.states == 64
    assert raced.undecided and not any(k.startswith("forced-conflict") for k in raced.undecided)
    assert "dead-tool:t5" in raced.undecided  # only a proof decides that one
    assert _found_by_subject(raced).keys() <= _found_by_subject(alone).keys()


def _seen_gone(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, waiting: str) -> bool:
    """``_gone_before`` with the engine's child never ending: the report must be the
    engine's alone (the other child's); whether the other child saw it end."""
    alone = _alone(wide())
    gone, raced = _gone_before(monkeypatch, tmp_path, "_engine_path", waiting)
    assert raced.complete and _shape(raced) == _shape(alone)
    return gone


def _gone_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, hanging: str, waiting: str
) -> tuple[bool, Any]:
    """Race ``wide()`` under a far limit, ``hanging`` (a function of ``run_module``)
    sending its child's pid down a pipe and never ending, the other child's ``waiting``
    (another) waiting for that process to end first (on its pidfd, which turns readable
    when the process ends). Whether it saw it end, and the report."""
    parent, seen = os.getpid(), tmp_path / "seen"
    reader, writer = os.pipe()

    def hangs(*args: Any, **kwargs: Any) -> Any:
        os.write(writer, f"{os.getpid()}\n".encode())
        time.sleep(600)

    real = getattr(run_module, waiting)

    def waited(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent and _ended(reader):
            seen.write_text("gone")
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, hanging, hangs)
    monkeypatch.setattr(run_module, waiting, waited)
    try:
        raced = check_policy(wide(), timeout=600)
    finally:
        os.close(reader)
        os.close(writer)
    return seen.exists(), raced


@needs_fork
@needs_pidfd
def test_the_engines_child_is_stopped_once_every_verdict_is_decided_one_by_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # The other child, its verdicts all decided, waits for the engine's child to end before
    # it seeks the cores: it does, because this process stops the engine's child as soon
    # as the analysis comes in complete (the cores then get the CPU). Without that, the
    # wait runs out with the process alive.
    gone = _seen_gone(monkeypatch, tmp_path, "_found")
    assert gone, "the engine's child was still running during the cores"


@needs_fork
@needs_pidfd
def test_near_the_memory_limit_the_engines_child_gives_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # The processes hold 70% of the supervisor's memory limit. The verdicts one by one
    # wait for the engine's child to end before they start: it does, because this process
    # stops it (its analysis not complete, it has nothing to report yet, whichever child
    # holds more), and their report is the answer. Without that, the wait runs out with
    # the process alive.
    monkeypatch.setattr(run_module, "memory_share", lambda: 0.7)
    gone = _seen_gone(monkeypatch, tmp_path, "_decided")
    assert gone, "the engine's child was still running near the memory limit"


@needs_fork
@needs_pidfd
def test_once_the_engines_analysis_is_complete_the_other_child_gives_way(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # The engine's cores wait for the other child to end before they start: it does,
    # because this process stops it as soon as the engine's analysis comes in complete
    # (its cores then get the CPU and the memory). Without that, the wait runs out with
    # the process alive (`indep-mixes-20-40-3`: the engine's cores crowded the memory
    # limit, and the engine was stopped with its analysis complete).
    alone = _alone(wide())
    gone, raced = _gone_before(monkeypatch, tmp_path, "_one_by_one", "_found")
    assert gone, "the other child was still running during the engine's cores"
    assert raced.complete and _shape(raced) == _shape(alone)


@needs_fork
def test_the_engine_alone_nearer_the_memory_limit_is_stopped_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # The engine's analysis came in complete, and its cores never end; the verdicts one by
    # one gave way to them. Then the engine's child, alone, holds 90% of the memory limit:
    # it is stopped too, and the report is what was decided so far, saying why, long
    # before the time limit (past the limit the supervisor would stop the check with a
    # report that claims nothing). The memory looked at is nothing until the cores begin.
    policy = wide()
    parent, cores = os.getpid(), tmp_path / "cores"
    real = run_module._found

    def found(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            cores.write_text("begun")
            time.sleep(600)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "_found", found)
    _deaf_in_children(monkeypatch, "_one_by_one")
    monkeypatch.setattr(run_module, "memory_share", lambda: 0.9 if cores.exists() else 0.0)
    raced = check_policy(policy, timeout=120)
    assert cores.exists()
    assert not raced.complete and raced.undecided
    assert (raced.reason or "").startswith(
        "the check's processes came to 90% of the memory limit; the verdicts decided one by "
        "one were stopped there, and the engine's process after them"
    )


@needs_fork
def test_nearer_the_memory_limit_what_is_decided_so_far_is_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Both children never end, at 90% of the memory limit: the engine's child is stopped
    # first, then the other, and the report is what this process's probe decided, saying
    # why, long before the time limit.
    policy = wide()
    _stuck_in_the_child(monkeypatch)
    _deaf_in_children(monkeypatch, "_decided")
    monkeypatch.setattr(run_module, "memory_share", lambda: 0.9)
    raced = check_policy(policy, timeout=120)
    assert not raced.complete and raced.undecided
    assert (raced.reason or "").startswith(
        "the check's processes came to 90% of the memory limit (the engine's process "
        "stopped first); the verdicts decided one by one were stopped there: only what the "
        "first "
    )


def _ended(reader: int) -> bool:
    """Whether the process whose pid comes down ``reader`` ends: waits on its pidfd (the
    bounds are for the failing case, not timing assertions)."""
    if not select.select([reader], [], [], 60)[0]:
        return False
    pid = int(os.read(reader, 64).split()[0])
    try:
        ended = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # gone, and reaped, already
    try:
        return bool(select.select([ended], [], [], 60)[0])
    finally:
        os.close(ended)


class _LateSide:
    """A second child still at work at the limit, which sent its analysis and the cores of
    its first phase."""

    def __init__(self, sent: object) -> None:
        self.sent = sent
        self.stopped = False

    def ready(self) -> bool:
        return False

    def latest(self) -> object:
        return self.sent

    def stop(self) -> None:
        self.stopped = True


def test_a_late_second_child_keeps_the_cores_it_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    # At the limit, the cores it did not send keep every requirement; those it sent stay
    # minimal.
    from ruleengine.check.explicit import analyse
    from ruleengine.check.properties import findings

    monkeypatch.setenv("RULEENGINE_LANES", "1")
    requirements = [
        ConditionalRequirement("b", only_after=["c"], name="b-after-c"),
        ConditionalRequirement("c", only_after=["b"], name="c-after-b"),
        ConditionalRequirement("d", max_invocations=1, name="cap-d"),
        ConditionalRequirement("a", max_invocations=2, name="cap-a"),
        ConditionalRequirement("b", max_invocations=1, name="cap-b"),  # dead: `b` never is
    ]
    system = System(["a", "b", "c", "d"], requirements)
    analysis = analyse(system)

    def run(sub: Any, focus: str | None = None) -> Analysis:
        return analyse(sub)

    sent: list[list[Any]] = []
    findings(system, analysis, max_iterations=20, engine=run, reported=sent.append)
    sent_tools = [f for f in sent[-1] if f.id == "dead-tool"]  # what it sent in time
    assert len(sent_tools) == 2
    side = _LateSide(run_module._Cored(analysis, sent_tools))
    past = time.monotonic() - 1
    options = run_module._Options("auto", 1.0, past, run_module._Clock(past), None, 20)
    kept, found, cut = run_module._kept(system, run, options, side, None)  # type: ignore[arg-type]
    assert side.stopped and kept is analysis and cut
    cores = {(f.id, f.tool): {c.requirement for c in f.core} for f in found}
    assert cores[("dead-tool", "b")] == cores[("dead-tool", "c")] == {"b-after-c", "c-after-b"}
    dead = {f.requirement: {c.requirement for c in f.core} for f in found if f.requirement}
    assert dead == {"cap-b": {r.name for r in requirements}}  # not sent: cut by the limit


def test_an_engine_stopped_for_memory_is_named_so_in_an_incomplete_report() -> None:
    crowd = run_module._Crowd()
    cut = Analysis(states=9, complete=False, reason=f"{run_module.UNFINISHED}; 2 left undecided")
    done = Analysis(states=9, complete=True)
    assert crowd.noted((cut, [], [])) == (cut, [], [])  # not stopped for memory: as it is
    crowd.dropped, crowd.held = True, 0.7
    noted, found, short = crowd.noted((cut, [], ["x"]))
    assert noted.reason == "the engine was stopped at 70% of the memory limit; 2 left undecided"
    assert (found, short) == ([], ["x"])
    assert crowd.noted((done, [], [])) == (done, [], [])  # complete: no reason to give


def _in_priority_mode(policy: Policy) -> Policy:
    return Policy(policy.tools, policy.requirements, mode="priority", max_iterations=10)


@needs_fork
def test_in_priority_mode_an_engine_stuck_past_the_limit_gives_the_verdicts_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = _in_priority_mode(wide())
    system = System(policy.tools, policy.requirements, mode="priority")
    assert _whole_if_small(system, max_states=None, deadline=None)[0] is None  # it races
    alone = _alone(policy)
    _stuck_in_the_child(monkeypatch)
    raced = check_policy(policy, timeout=20)
    # The second child decided the verdicts one by one, by their exact steps alone (no
    # component bounds the runs in priority mode): the engine's own report.
    assert raced.complete
    assert raced.findings == alone.findings
    assert "forced-tie" in {f.id for f in raced.findings}


@needs_fork
def test_in_priority_mode_an_incomplete_engine_report_waits_for_the_verdicts_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = _in_priority_mode(wide())
    alone = _alone(policy)
    parent, real = os.getpid(), _SymbolicEngine.__call__

    def cut_short(self: _SymbolicEngine, sub: Any, focus: str | None = None) -> Any:
        if focus is None and os.getpid() != parent:
            return Analysis(complete=False, reason="the time limit ran out")
        return real(self, sub, focus)

    monkeypatch.setattr(_SymbolicEngine, "__call__", cut_short)
    # No reserve: the engine's child searches nothing of its own once its engine stops.
    monkeypatch.setattr(run_module, "_reserve", lambda timeout: 0.0)
    raced = check_policy(policy, timeout=600)
    # The engine's report came first, incomplete: the other child's, complete, is taken.
    assert raced.complete
    assert raced.findings == alone.findings
    assert "forced-tie" in {f.id for f in raced.findings}


class _Answered:
    """A second child whose answer is in."""

    def __init__(self, ok: bool, answer: Any) -> None:
        self.answer = (ok, answer)

    def ready(self) -> bool:
        return True

    def result(self) -> tuple[bool, Any]:
        return self.answer


def test_of_two_incomplete_answers_the_one_that_decides_more_is_taken() -> None:
    from types import SimpleNamespace

    def found(*subjects: tuple[str, str | None]) -> list[Any]:
        return [SimpleNamespace(id=i, tool=t, requirement=None) for i, t in subjects]

    cut = Analysis(complete=False, reason="the time limit ran out")
    engine = (cut, found(("forced-conflict", "a")), [])
    more = (cut, found(("forced-conflict", "a"), ("dead-tool", "b")), [])
    # Theirs holds every finding the engine's does, and names what it left undecided.
    assert run_module._fuller(engine, _Answered(True, more)) is more  # type: ignore[arg-type]
    # Theirs lacks one of the engine's findings: the engine's.
    other = (cut, found(("dead-tool", "b")), [])
    assert run_module._fuller(engine, _Answered(True, other)) is engine  # type: ignore[arg-type]
    # Theirs failed, or is not in: the engine's.
    assert run_module._fuller(engine, _Answered(False, None)) is engine  # type: ignore[arg-type]
    assert run_module._fuller(engine, _LateSide(None)) is engine  # type: ignore[arg-type]
