"""ruleengine.check.supervise: a check in a worker process, stopped at its time and memory
limits with an honest report; its progress, its result and its errors come back here."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from typing import Any

import pytest

from ruleengine import ConditionalRequirement, Policy, PolicyError, RequirementError, requirement
from ruleengine.check import check_policy, supervise
from ruleengine.check.progress import Status, note
from ruleengine.check.report import DiffReport, Report, Stats
from ruleengine.check.supervise import (
    WorkerError,
    stopped_check,
    stopped_diff,
    supervised,
)

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker is forked")

POLICY = Policy(["search", "write"], [ConditionalRequirement("write", only_after=["search"])])


def run(work: Any, **limits: Any) -> Report:
    return supervised(
        work,
        model=Report,
        stopped=stopped_check("p.toml"),
        timeout=limits.get("timeout"),
        max_memory=limits.get("max_memory"),
        on_status=limits.get("on_status"),
    )


@needs_fork
def test_the_workers_report_comes_back_as_it_is() -> None:
    alone = check_policy(POLICY)
    statuses: list[Status] = []
    got = run(lambda: check_policy(POLICY), timeout=60, on_status=statuses.append)
    assert got.model_dump(exclude={"stats"}) == alone.model_dump(exclude={"stats"})
    assert statuses and statuses[0].phase == "exploring states"


@needs_fork
def test_a_worker_past_its_time_limit_is_stopped_and_the_report_says_where() -> None:
    # A step that outlasts the limit (here: a sleep no deadline check interrupts). The test
    # asserts what the report says, not how long it took: a machine under load is slow.
    def work() -> Report:
        note(phase="exploring states", states=1234, layers=5, engine="explicit")
        time.sleep(600)
        raise AssertionError("not stopped")

    got = run(work, timeout=0.2)
    assert not got.complete and got.findings == () and got.stats.states == 1234
    assert got.reason == (
        "the time limit (0.2 s) ran out in a single step while exploring states (1,234 states,"
        " 5 layers of the explicit search): it was stopped there, and claims nothing"
    )


def test_a_report_announced_in_time_is_read_to_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit has passed before the first look; a worker that announced its report still
    # sends all of it (megabytes, in many chunks), and the supervisor reads it to its end.
    monkeypatch.setattr(supervise, "SENDING_GRACE", 600.0)  # no race with the writer
    report = Report(
        policy="p" * 3_000_000, complete=True, findings=(), stats=Stats(states=1, seconds=0.0)
    )
    long_ago = time.monotonic() - 100

    def watched(announced: bool) -> Any:
        read, write = os.pipe()
        if announced:  # in the pipe before the first look, whichever thread runs first
            supervise._send(write, {"sending": True})
        writer = threading.Thread(target=_write, args=(write, report))
        writer.start()
        try:
            return supervise._watch(os.getpid(), read, 1.0, None, None, long_ago)
        finally:
            os.close(read)
            writer.join()

    got = watched(announced=True)
    assert isinstance(got, dict) and Report.model_validate(got) == report
    # Unannounced, the same report is cut off: the limit passed long ago.
    stopped = watched(announced=False)
    assert isinstance(stopped, tuple) and "ran out in a single step" in stopped[0]


def _write(fd: int, report: Report) -> None:
    with contextlib.suppress(OSError):  # the reader may stop reading and close its end
        supervise._send(fd, {"result": report.model_dump(mode="json")})
    os.close(fd)


@needs_fork
def test_a_worker_past_its_memory_limit_is_stopped() -> None:
    def work() -> Report:
        note(phase="finding cores")
        hoard = [bytearray(1 << 20) for _ in range(400)]  # 400 MiB, touched
        time.sleep(600)
        raise AssertionError(f"not stopped: {len(hoard)}")

    got = run(work, max_memory=200 * 2**20)
    assert not got.complete
    assert (got.reason or "").startswith(
        "the memory limit (200 MiB) was reached while finding cores"
    )


@needs_fork
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_a_worker_knows_how_much_of_its_memory_limit_it_holds() -> None:
    # Outside a worker there is no limit to hold a share of; inside, the share grows with
    # what the work holds (the reason carries it back, as text).
    assert supervise.memory_share() is None

    def work() -> Report:
        before = supervise.memory_share()
        hoard = bytearray(64 << 20)  # 64 MiB, touched
        hoard[::4096] = b"x" * len(hoard[::4096])
        after = supervise.memory_share()
        return Report(
            policy="p",
            complete=False,
            reason=f"{before} {after}",
            stats=Stats(states=0, seconds=0.0),
        )

    got = run(work, max_memory=512 * 2**20)
    before, after = (float(x) for x in (got.reason or "").split())
    assert 0 < before < after < 1
    assert after - before >= 0.1  # 64 of 512 MiB is an eighth


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_memory_is_weighed_by_share_only_past_the_resident_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # This process's group: its resident size is well under a terabyte, so its share (which
    # makes the kernel walk its page tables) is never read; past a byte it is, and decides.
    group = os.getpgid(0)
    shares: list[str] = []
    real = supervise._proportional

    def share(entry: str) -> int:
        shares.append(entry)
        return real(entry)

    monkeypatch.setattr(supervise, "_proportional", share)
    assert str(os.getpid()) in supervise._group(group)
    assert not supervise._over(group, 2**40)
    assert shares == []
    assert supervise._over(group, 1)
    assert str(os.getpid()) in shares
    monkeypatch.setattr(supervise, "_proportional", lambda entry: 0)  # a share of nothing
    assert not supervise._over(group, 1)


@needs_fork
def test_errors_raised_on_purpose_come_back_as_they_are() -> None:
    @requirement(name="broken")
    def broken(state: Any) -> list[Any]:
        raise KeyError("oops")

    policy = Policy(["a"], [broken])
    with pytest.raises(RequirementError) as caught:
        run(lambda: check_policy(policy))
    assert "`broken`" in caught.value.message and caught.value.requirement == "broken"

    def usage() -> Report:
        raise PolicyError("bad `x`", hint="fix it", parameter="x")

    with pytest.raises(PolicyError) as bad:
        run(usage)
    assert (bad.value.message, bad.value.hint, bad.value.parameter) == ("bad `x`", "fix it", "x")


@needs_fork
def test_a_bug_in_the_worker_is_a_worker_error_naming_it() -> None:
    def buggy() -> Report:
        raise ZeroDivisionError("division by zero")

    with pytest.raises(WorkerError, match="ZeroDivisionError: division by zero"):
        run(buggy)

    def vanishing() -> Report:
        os._exit(7)

    with pytest.raises(WorkerError, match="ended without a result"):
        run(vanishing)


@needs_fork
def test_a_comparison_stopped_claims_no_difference_and_no_proof() -> None:
    def work() -> DiffReport:
        time.sleep(600)
        raise AssertionError("not stopped")

    got = supervised(
        work,
        model=DiffReport,
        stopped=stopped_diff("old.toml", "new.toml"),
        timeout=0.1,
        max_memory=None,
    )
    assert got.equivalent and not got.complete and got.difference is None
    assert (got.reason or "").startswith(
        "the time limit (0.1 s) ran out in a single step while starting"
    )


@needs_fork
def test_the_workers_group_is_gone_once_it_is_stopped() -> None:
    pids: list[int] = []

    def work() -> Report:
        child = os.fork()
        if child == 0:  # a grandchild, like the lanes' child: in the worker's group
            time.sleep(600)
            os._exit(0)
        os.write(write, f"{child}\n".encode())
        time.sleep(600)
        raise AssertionError("not stopped")

    read, write = os.pipe()
    try:
        run(work, timeout=0.3)
        pids.append(int(os.read(read, 64).split()[0]))
    finally:
        os.close(read)
        os.close(write)
    (grandchild,) = pids
    # Killed with its group: its process goes. A pidfd becomes readable once it has ended
    # (the wait is bounded only against a hang).
    try:
        handle = os.pidfd_open(grandchild)
    except ProcessLookupError:
        return  # gone already
    try:
        ended, _, _ = select.select([handle], [], [], 60)
    finally:
        os.close(handle)
    assert ended, f"the grandchild {grandchild} outlived its group"


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"work": "x"}, "work="),
        ({"stopped": None}, "stopped="),
        ({"model": dict}, "model="),
        ({"timeout": -1}, "timeout="),
        ({"timeout": "5"}, "timeout="),
        ({"max_memory": 0}, "max_memory="),
        ({"max_memory": "a"}, "max_memory="),
        ({"on_status": 3}, "on_status="),
    ],
)
def test_bad_arguments_are_policy_errors(options: dict[str, Any], needle: str) -> None:
    arguments: dict[str, Any] = {
        "work": lambda: check_policy(POLICY),
        "model": Report,
        "stopped": stopped_check("p.toml"),
        "timeout": 5,
        "max_memory": None,
        **options,
    }
    work = arguments.pop("work")
    with pytest.raises(PolicyError, match=needle):
        supervised(work, **arguments)


@needs_fork
def test_work_that_returns_something_else_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="work returned `None`, not a `Report`"):
        run(lambda: None)
