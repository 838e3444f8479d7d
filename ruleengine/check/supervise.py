"""A check that always ends: run in a worker process, stopped at its time and memory limits.

The engines keep their own deadline (they look at the clock between steps, and stop with an
honest, incomplete report), but a single step can outlast it: one operation on a large
binary decision diagram, one solver call. And a search can outgrow the machine's memory.
``supervised`` runs the check in a forked worker, in a process group of its own (with the
lanes' child, if it forks one), and watches it from here:

- the worker sends its progress (``progress.Status``) and, at the end, its report, over a
  pipe, as lines of JSON;
- past the time limit plus ``GRACE`` seconds, or when the group's resident memory passes the
  memory limit, the group is killed, and the report says where the check was (its phase, the
  states it had explored) and that it claims nothing; a worker that has ended its work and
  announced its report is given ``SENDING_GRACE`` seconds from then to send it (hundreds of
  findings with their cores are megabytes of JSON);
- an error the check raises on purpose (a ``RuleEngineError``: a requirement failing, say)
  is raised here again, with its message and hint.

Where ``fork`` is not available (not Linux), the check runs here, with its own deadline only.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel

from ruleengine import _validate, errors
from ruleengine.check.progress import Status, watching
from ruleengine.check.report import DiffReport, Report, Stats
from ruleengine.errors import PolicyError, RuleEngineError

__all__ = [
    "GRACE",
    "SENDING_GRACE",
    "WorkerError",
    "memory_share",
    "stopped_check",
    "stopped_diff",
    "supervised",
]

GRACE = 0.5
"""Seconds past the time limit the worker is given to send its own (incomplete) report
before it is stopped."""

SENDING_GRACE = 1.0
"""Seconds a worker that has announced its report is given, from then, to send it (a
report of hundreds of findings with their cores is megabytes of JSON)."""

_POLL = 0.1  # seconds between two looks at the worker
_MEMORY_EVERY = 0.5  # seconds between two looks at its memory
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class WorkerError(RuntimeError):
    """The worker failed in a way the check never raises on purpose (a bug, or the process
    killed from outside): the message carries what it said."""


Result = TypeVar("Result", bound=BaseModel)


def supervised(
    work: Callable[[], Result],
    *,
    model: type[Result],
    stopped: Callable[[str, Status, float], Result],
    timeout: float | None,
    max_memory: int | None,
    on_status: Callable[[Status], None] | None = None,
    started: float | None = None,
) -> Result:
    """``work()``'s result (an instance of ``model``, sent over as JSON), from a worker
    stopped past ``timeout`` seconds (plus ``GRACE``) or ``max_memory`` bytes of resident
    memory; ``None`` limits nothing.

    ``work`` should keep the same time limit itself (``check_policy(timeout=...)``): its own
    report says more than a stopped worker can. A stopped worker's result is
    ``stopped(why, status, seconds)``: which limit, where the work was, how long it ran.
    ``on_status`` gets the worker's progress (called here, from this thread). ``started``
    (a ``time.monotonic()`` value, default now) is when the limit's clock started.
    """
    _check_arguments(work, model, stopped, timeout, max_memory, on_status)
    began = time.monotonic() if started is None else started
    if not _can_fork():
        with watching(on_status):
            return work()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        os.close(read)
        _work(work, model, write, max_memory)
    os.close(write)
    with contextlib.suppress(OSError):  # the worker does it too: whichever comes first
        os.setpgid(pid, pid)
    try:
        message = _watch(pid, read, timeout, max_memory, on_status, began)
    finally:
        os.close(read)
        _stop(pid)
    if isinstance(message, tuple):
        why, status = message
        return stopped(why, status, round(time.monotonic() - began, 3))
    return model.model_validate(message)


def stopped_check(policy: str) -> Callable[[str, Status, float], Report]:
    """The report of a check stopped at a limit: where it was; nothing claimed."""

    def report(why: str, status: Status, seconds: float) -> Report:
        return Report(
            policy=policy,
            complete=False,
            findings=(),
            stats=Stats(states=status.states, seconds=seconds),
            reason=_stopped_reason(why, status),
        )

    return report


def stopped_diff(old: str, new: str) -> Callable[[str, Status, float], DiffReport]:
    """The report of a comparison stopped at a limit: no difference claimed, no proof."""

    def report(why: str, status: Status, seconds: float) -> DiffReport:
        return DiffReport(
            old=old,
            new=new,
            equivalent=True,
            complete=False,
            stats=Stats(states=status.states, seconds=seconds),
            reason=_stopped_reason(why, status),
        )

    return report


def _stopped_reason(why: str, status: Status) -> str:
    done = status.counts()
    detail = f" ({', '.join(done)})" if done else ""
    return f"{why} while {status.phase}{detail}: it was stopped there, and claims nothing"


def _check_arguments(
    work: object,
    model: object,
    stopped: object,
    timeout: object,
    max_memory: object,
    on_status: object,
) -> None:
    """A ``PolicyError`` naming the first argument of ``supervised`` that is wrong."""
    for name, value in (("work", work), ("stopped", stopped)):
        if not callable(value):
            raise PolicyError(f"supervised: {name}=`{value!r:.60}` is not callable")
    if on_status is not None and not callable(on_status):
        raise PolicyError(f"supervised: on_status=`{on_status!r:.60}` is not callable")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PolicyError(f"supervised: model=`{model!r:.60}` is not a pydantic model class")
    if timeout is not None:
        _validate.number(timeout, name="timeout", owner="supervised")
    _validate.optional_integer(max_memory, name="max_memory", owner="supervised", least=1)


def _can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


# -- the worker ----------------------------------------------------------------------------------


_limit_here: int | None = None
"""In a worker, the memory limit its supervisor keeps (``memory_share``)."""


def memory_share() -> float | None:
    """In a worker that ``supervised`` runs with a memory limit, the share of that limit
    its process group (this process and its children) holds now, as the supervisor counts
    it (``_over``: the resident sizes, or the proportional shares where the resident sizes
    pass half the limit); None elsewhere. For the work itself to give up memory before the
    supervisor stops it all. Cost: a look at each process in ``/proc`` (about a
    millisecond)."""
    limit = _limit_here
    if limit is None:
        return None
    return _held(os.getpgid(0), limit // 2) / limit


def _work(
    work: Callable[[], BaseModel], model: type[BaseModel], fd: int, max_memory: int | None
) -> NoReturn:
    """Run ``work`` and send what happens on ``fd``; never returns."""
    global _limit_here
    code = 0
    _limit_here = max_memory
    try:
        with contextlib.suppress(OSError):  # a group of its own: stopping it stops the lanes'
            os.setpgid(0, 0)  # child too (the supervisor may have set it already)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides
        with watching(lambda status: _send(fd, {"status": _status_json(status)})):
            result = work()
        if not isinstance(result, model):
            raise PolicyError(
                f"supervised: work returned `{result!r:.60}`, not a `{model.__name__}`"
            )
        _send(fd, {"sending": True})  # what follows may take a moment to write and read
        _send(fd, {"result": result.model_dump(mode="json")})
    except RuleEngineError as exc:
        _send(fd, {"error": _error_json(exc)})
    except BaseException as exc:  # a bug: told to the supervisor, as text
        text = "".join(traceback.format_exception(exc))
        with contextlib.suppress(BaseException):
            _send(fd, {"crash": f"{type(exc).__name__}: {exc}", "traceback": text})
        code = 1
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        os._exit(code)


def _send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _status_json(status: Status) -> dict[str, Any]:
    return {
        "phase": status.phase,
        "states": status.states,
        "layers": status.layers,
        "findings": status.findings,
        "engine": status.engine,
    }


def _error_json(exc: RuleEngineError) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": exc.message,
        "hint": exc.hint,
        "requirement": getattr(exc, "requirement", None),
        "parameter": getattr(exc, "parameter", None),
        "location": getattr(exc, "location", None),
    }


# -- the supervisor ------------------------------------------------------------------------------


def _watch(
    pid: int,
    fd: int,
    timeout: float | None,
    max_memory: int | None,
    on_status: Callable[[Status], None] | None,
    began: float,
) -> dict[str, Any] | tuple[str, Status]:
    """The worker's result as JSON, or why it was stopped and where it was."""
    status = Status()
    pending: list[bytes] = []  # the chunks of a line not ended yet
    stop_at = None if timeout is None else began + timeout + GRACE
    look_at = 0.0  # when to look at the memory next
    ended = False
    while True:
        wait = _POLL if stop_at is None else max(0.0, min(_POLL, stop_at - time.monotonic()))
        readable, _, _ = select.select([fd], [], [], wait)
        if readable:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                ended = True
            lines = []
            if b"\n" in chunk:  # a report of megabytes comes in many chunks: join once
                *ends, rest = chunk.split(b"\n")
                lines = [b"".join([*pending, ends[0]]), *ends[1:]]
                pending = [rest]
            else:
                pending.append(chunk)
            for line in lines:
                message = json.loads(line)
                if "sending" in message:
                    # The work has ended and is writing its report: a bounded wait more.
                    if stop_at is not None:
                        stop_at = max(stop_at, time.monotonic() + SENDING_GRACE)
                elif "status" in message:
                    status = Status(**message["status"])
                    if on_status is not None:
                        on_status(status)
                elif "result" in message:
                    result: dict[str, Any] = message["result"]
                    return result
                elif "error" in message:
                    _raise(message["error"])
                elif "crash" in message:
                    raise WorkerError(f"the check failed: {message['crash']}")
        if ended:
            raise WorkerError(f"the check's worker process ended without a result ({_how(pid)})")
        if stop_at is not None and time.monotonic() >= stop_at:
            # The work keeps the time limit itself, between steps: one step outlasted it.
            return f"the time limit ({timeout:g} s) ran out in a single step", status
        if max_memory is not None and time.monotonic() >= look_at:
            look_at = time.monotonic() + _MEMORY_EVERY
            if _over(pid, max_memory):
                return f"the memory limit ({max_memory / 2**20:,.0f} MiB) was reached", status


def _raise(error: dict[str, Any]) -> NoReturn:
    kind = getattr(errors, str(error.get("type")), None)
    message, hint = str(error.get("message")), error.get("hint")
    if kind is errors.PolicyError:
        raise errors.PolicyError(
            message, hint=hint, parameter=error.get("parameter"), location=error.get("location")
        )
    if kind is errors.RequirementError:
        raise errors.RequirementError(message, hint=hint, requirement=str(error.get("requirement")))
    if kind is errors.SolverError:
        raise errors.SolverError(message, hint=hint)
    raise RuleEngineError(message, hint=hint)


def _over(pid: int, limit: int) -> bool:
    """Whether the worker's process group holds more than ``limit`` bytes of resident
    memory, each process counted by its proportional share (``_proportional``). The
    resident sizes are added first: a share is never more, and reading them costs far
    less (the kernel walks a process's page tables for its share: at every look, the
    supervisor of a check at 50 tools took an eighth of a CPU from the check)."""
    return _held(pid, limit) > limit


def _held(group: int, past: int) -> int:
    """The bytes of resident memory process group ``group`` holds: the resident sizes
    added, or, where those pass ``past`` bytes, the proportional shares (``_over``)."""
    members = _group(group)
    held = sum(_sized(entry) for entry in members)
    if held <= past:
        return held
    total = 0
    for entry in members:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += _proportional(entry)
    return total


def _group(pid: int) -> list[str]:
    """The ``/proc`` entries of the processes in the worker's process group."""
    return _where(2, pid)


def _where(field: int, value: int) -> list[str]:
    """The ``/proc`` entries of the processes whose ``stat`` holds ``value`` at ``field``,
    counted from the one after the command's name (1: the parent, 2: the process group)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if int(fields[field]) == value:
                members.append(entry)
        except (OSError, ValueError, IndexError):
            continue
    return members


def _sized(entry: str) -> int:
    """One process's resident size, in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{entry}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _proportional(entry: str) -> int:
    """One process's share of resident memory, in bytes: its proportional set size (a page
    it shares with the N processes of a fork counts 1/N: the checker's forked children
    share most of their parent's pages), or its resident size where the kernel does not
    say (before Linux 4.14)."""
    try:
        with open(f"/proc/{entry}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    with open(f"/proc/{entry}/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE


def _how(pid: int) -> str:
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "already reaped"
    if done == 0:
        return "still running"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _stop(pid: int) -> None:
    """Kill the worker's group (it may be done already) and reap the worker."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
