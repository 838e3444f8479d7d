"""Independent jobs on two processes: this one takes them from the front of a list, a forked
child from the back.

A job here is *independent*: its result depends on inputs fixed before any job starts, so
whichever process runs it, and when, the result is the same. The checker's two lanes of core
searches are two such jobs (``properties._in_lanes``), and so is the liveness of a very large
whole analysis beside the rest of it (``run_beside``). ``run_jobs`` runs a list of them with
this process claiming jobs from the front and, when ``forking_allowed()``, a forked child
claiming from the back, until the two meet: the work balances itself whatever the jobs
cost. Without a child (one CPU, no ``fork``, other threads, ``RULEENGINE_LANES=1``, or a
child that failed) this process runs every job. Reports therefore never depend on the
machine: only their time does.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import pickle
import select
import signal
import struct
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast

__all__ = ["Aside", "forking_allowed", "run_beside", "run_jobs"]

T = TypeVar("T")

_in_child = False
"""Whether this process is a child running jobs (which forks no grandchild)."""

_QUIET_THREADS = frozenset({"ruleengine-progress", "ruleengine-solver-watchdog"})
"""Threads that never hold a lock the child needs: the progress line's (it only writes to
a terminal), and the solver's watchdog (its lock is taken around every fork and the child
gets its own, ``_solver._Watchdog.fork_safe``)."""


def forking_allowed() -> bool:
    """Whether jobs may run in a forked child here: Linux with ``fork``, more than one CPU
    for this process, no threads besides the progress line's (a fork copies only the calling
    thread, and a lock another one holds would stay held in the child), and
    ``RULEENGINE_LANES`` not set to ``1``; never in a child running jobs."""
    if _in_child or os.environ.get("RULEENGINE_LANES", "").strip() == "1":
        return False
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        cpus = os.cpu_count() or 1
    if cpus < 2:
        return False
    return _threads_quiet()


def _threads_quiet() -> bool:
    """Whether this is the main thread and every other is a progress line's."""
    main = threading.main_thread()
    others = [t for t in threading.enumerate() if t is not main]
    return threading.current_thread() is main and all(t.name in _QUIET_THREADS for t in others)


def run_jobs(jobs: Sequence[Callable[[], T]]) -> tuple[list[T], list[bool]]:
    """Every job's result, in order, and for each whether it ran in this process.

    With at least two jobs and ``forking_allowed()``, a forked child claims jobs from the
    back while this process claims them from the front (two counters in shared memory, each
    written by one process). A job both claim at the moment they meet runs twice, with the
    same result (this process's is kept); none is left out. The child's results come back
    pickled through a pipe; if the child fails for any reason (an exception, a result that
    does not pickle, a crash), this process runs the jobs it had claimed. An exception here
    kills the child before it propagates. Cost: the jobs' own, plus a fork (a few
    milliseconds).
    """
    return _shared(jobs, first=None, fork_from=2)


def run_beside(main: Callable[[], None], side: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``main`` here (for its effects on this process) and return each ``side`` job's
    result, in order. When ``forking_allowed()``, a forked child claims side jobs from the
    back from the start, and this process, once ``main`` is done, claims them from the front
    until the two meet (``run_jobs``' claims: whichever side finishes its own work first
    takes more of the shared part). Otherwise, or for what a failed child claimed, they run
    here after ``main``. The side jobs must not need anything ``main`` does."""
    return _shared(side, first=main, fork_from=1)[0]


def _shared(
    jobs: Sequence[Callable[[], T]], *, first: Callable[[], None] | None, fork_from: int
) -> tuple[list[T], list[bool]]:
    """``run_jobs`` and ``run_beside``: ``first`` (if any) runs here before this process
    claims any job; a child is forked when there are at least ``fork_from`` jobs."""
    if len(jobs) < fork_from or not forking_allowed():
        return _here(jobs, first)
    ends = _Ends(len(jobs))
    with _frozen():
        child = _Child.start(jobs, ends)
        if child is None:  # the fork failed (out of processes)
            return _here(jobs, first)
        mine: dict[int, T] = {}
        try:
            if first is not None:
                first()
            while (i := ends.claim_front()) is not None:
                mine[i] = jobs[i]()
        except BaseException:
            child.stop()
            raise
        theirs = child.result() or {}
    # Whatever the child did not deliver (all it claimed, if it failed) runs here.
    for i in range(len(jobs)):
        if i not in mine and i not in theirs:
            mine[i] = jobs[i]()
    return [mine[i] if i in mine else theirs[i] for i in range(len(jobs))], [
        i in mine for i in range(len(jobs))
    ]


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """The objects that exist on entry left out of the cyclic garbage collector's passes
    until exit (``gc.freeze``; Python's documented advice around a ``fork``). Pages the
    parent and a forked child share are copied for whichever first writes them; a full
    collection would write to the header of every object, and so copy nearly every page of
    the heap in both (on `mixed-20-40-4`, where one runs during the dead requirements'
    lanes, a third of their page faults). Where the process has frozen objects already (an
    outer use of this; the command line's freeze of what its imports built; a program's
    before it forks workers), the freeze is theirs and is left as it is: ``gc.unfreeze``
    would thaw every frozen object."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _here(
    jobs: Sequence[Callable[[], T]], first: Callable[[], None] | None
) -> tuple[list[T], list[bool]]:
    """``_shared`` without a child: ``first``, then every job, here."""
    if first is not None:
        first()
    return [job() for job in jobs], [True] * len(jobs)


def _become_child(parent: int) -> None:  # pragma: no cover - runs in the child
    """Set up a lane's child: it forks no grandchild, and it ends with its parent
    (``_die_with``), rather than run on, orphaned, to the end of its jobs."""
    global _in_child
    _in_child = True
    _die_with(parent)


_LONGEST_WAIT = 86_400.0
"""Seconds of one ``select`` in ``Aside.wait``."""


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the child
    """This (forked) process ends with ``parent`` (Linux's ``PR_SET_PDEATHSIG``; a parent
    gone before that is noticed at once)."""
    import ctypes  # here: a check that never forks does not pay for it

    with contextlib.suppress(Exception):  # without it the child only outlives a killed parent
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _fork(
    produce: Callable[[Callable[[object], None]], object], setup: Callable[[int], None]
) -> tuple[int, int] | None:
    """A forked child that runs ``setup(parent's pid)``, then ``produce(send)``, and writes
    its result pickled to a pipe, framed (``_Frames``) after whatever it sent before by
    ``send`` (an interim result; one that does not pickle is not sent); the child's pid
    and the pipe's reading end, or None when the fork fails. ``send`` blocks while the
    pipe is full: the parent reads as it waits.
    The child leaves straight out (``os._exit``): no atexit handlers, no flushing of the
    parent's buffers, no destructors (a BDD manager's shutdown report among them); 0 once
    its result is written, 1 on any failure."""
    reader, writer = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:  # pragma: no cover - out of processes
        os.close(reader)
        os.close(writer)
        return None
    if pid == 0:  # pragma: no cover - the child's side (coverage does not follow forks)
        code = 1
        try:
            setup(parent)
            os.close(reader)
            with os.fdopen(writer, "wb") as out:

                def send(value: object) -> None:
                    try:
                        message = _Frames.frame(_INTERIM, value)
                    except Exception:  # one that does not pickle is not sent
                        return
                    out.write(message)
                    out.flush()

                try:
                    final = _Frames.frame(_FINAL, produce(send))
                except BaseException as exc:  # the job, or its answer's pickling
                    with contextlib.suppress(Exception):  # told, for the parent's `failure`
                        text = "".join(traceback.format_exception(exc))
                        out.write(_Frames.frame(_FAILED, text))
                        out.flush()
                    raise
                out.write(final)
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    return pid, reader


_INTERIM, _FINAL, _FAILED = 0, 1, 2
"""The kinds of a child's messages: a result sent while it works, its last, and, instead of
a last, what made its job fail (the traceback, as text)."""


class _Frames:
    """The messages of a forked child's pipe (``_fork``), read as they come: each a header
    (kind, length) and a pickle. Keeps the latest interim message and the final one, as
    bytes, unpickled only when asked for."""

    _HEADER = struct.Struct("=BQ")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.interim: bytes | None = None
        self.final: bytes | None = None
        self.failed: bytes | None = None
        """What made the child's job fail, as it told (``_FAILED``)."""
        self.broken = False
        """Whether a message came that is not a frame (a kind unknown, or one past the
        final): nothing the child sent is then trusted."""

    @classmethod
    def frame(cls, kind: int, value: object) -> bytes:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return cls._HEADER.pack(kind, len(payload)) + payload

    def add(self, chunk: bytes) -> None:
        """Take a chunk of the pipe, keeping each message it completes."""
        self._buffer += chunk
        size = self._HEADER.size
        while len(self._buffer) >= size:
            kind, length = self._HEADER.unpack_from(self._buffer)
            if len(self._buffer) < size + length:
                return
            payload = bytes(self._buffer[size : size + length])
            del self._buffer[: size + length]
            if kind not in (_INTERIM, _FINAL, _FAILED) or self.final is not None:
                self.broken = True
            elif kind == _FAILED:
                self.failed = payload
            elif kind == _INTERIM:
                self.interim = payload
            else:
                self.final = payload

    def result(self) -> tuple[bool, object]:
        """Whether a whole final message came (and nothing after it), and its value."""
        if self.broken or self._buffer or self.final is None:
            return False, None
        return _unpickled(self.final)

    def latest(self) -> tuple[bool, object]:
        """Whether an interim message came, and the latest one's value."""
        if self.broken or self.interim is None:
            return False, None
        return _unpickled(self.interim)


def _unpickled(payload: bytes) -> tuple[bool, object]:
    try:
        return True, pickle.loads(payload)
    except Exception:  # any undecodable message counts as none
        return False, None


def _failure(frames: _Frames, status: int) -> str:
    """Why a child failed: the traceback its job told, else how its process ended."""
    if frames.failed is not None:
        ok, text = _unpickled(frames.failed)
        if ok and isinstance(text, str):
            return text
    if os.WIFSIGNALED(status):
        return f"the child was ended by signal {os.WTERMSIG(status)}"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        return f"the child exited with status {os.WEXITSTATUS(status)}, telling nothing"
    return "the child's answer did not come whole"


_PR_SET_PDEATHSIG = 1


class _Ends:
    """The two ends of a job list in memory shared with a forked child: ``front``, the next
    job this process takes (only it writes it), and ``back``, one past the next job the
    child takes (only the child writes it)."""

    _FORMAT = struct.Struct("=II")

    def __init__(self, count: int) -> None:
        self.memory = mmap.mmap(-1, self._FORMAT.size)  # anonymous and shared across fork
        self._FORMAT.pack_into(self.memory, 0, 0, count)

    def _read(self) -> tuple[int, int]:
        front, back = self._FORMAT.unpack_from(self.memory, 0)
        return int(front), int(back)

    def claim_front(self) -> int | None:
        """The next job from the front, or None when the ends have met."""
        front, back = self._read()
        if front >= back:
            return None
        struct.pack_into("=I", self.memory, 0, front + 1)
        return front

    def claim_back(self) -> int | None:
        """The next job from the back (the child's side), or None when the ends have met."""
        front, back = self._read()
        if back - 1 < front:
            return None
        struct.pack_into("=I", self.memory, 4, back - 1)
        return back - 1


class _Child(Generic[T]):
    """A forked process claiming jobs from the back, and the pipe its pickled results come
    back by."""

    def __init__(self, pid: int, reader: int) -> None:
        self.pid = pid
        self.reader = reader

    @staticmethod
    def start(jobs: Sequence[Callable[[], T]], ends: _Ends) -> _Child[T] | None:
        """The child running jobs from the back of ``jobs`` (None: the fork failed)."""

        def back(_: Callable[[object], None]) -> dict[int, T]:  # pragma: no cover - child
            done: dict[int, T] = {}
            while (i := ends.claim_back()) is not None:
                done[i] = jobs[i]()
            return done

        forked = _fork(back, _become_child)
        return None if forked is None else _Child(*forked)

    def stop(self) -> None:
        """End the child and its pipe (this process is leaving the jobs early)."""
        os.close(self.reader)
        with contextlib.suppress(ProcessLookupError):  # it may have ended
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)

    def result(self) -> dict[int, T] | None:
        """The child's results by job index, or None when it failed."""
        frames = _Frames()
        try:
            with os.fdopen(self.reader, "rb") as pipe:
                while chunk := pipe.read(1 << 16):
                    frames.add(chunk)
        finally:
            _, status = os.waitpid(self.pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        ok, found = frames.result()  # undecodable: the jobs run here
        return found if ok and isinstance(found, dict) else None


class Aside(Generic[T]):
    """One job in a forked child while this process does something else, to be taken when
    it is ready or stopped when no longer wanted (``run.check``'s race of its engine against
    the compositional analysis). Unlike a lane, the child may fork lanes of its own; it ends
    with this process, or when ``stop`` kills it. A job started by ``reporting`` may send
    interim results as it works: the latest is kept (``latest``), for when its final result
    does not come in time."""

    def __init__(self, pid: int, reader: int) -> None:
        self._pid = pid
        self._reader: int | None = reader
        self._frames = _Frames()
        self._outcome: tuple[bool, T | None] | None = None
        self.failure: str | None = None
        """Why the child failed, once it did: the traceback its job told, or how the
        process ended (for diagnosis: a failed child changes no answer, see ``result``)."""

    @property
    def pid(self) -> int:
        """The child's process id (it may have ended)."""
        return self._pid

    @staticmethod
    def start(job: Callable[[], T]) -> Aside[T] | None:
        """``job`` running in a forked child, or None where ``forking_allowed()`` is false or
        the fork fails. The gc is frozen around the fork (see ``_frozen``)."""
        return Aside.reporting(lambda _: job())

    @staticmethod
    def reporting(job: Callable[[Callable[[object], None]], T]) -> Aside[T] | None:
        """``start`` for a job given ``send``, which sends an interim result of any
        picklable value to this process (``latest``); it blocks while the pipe is full and
        this process is not waiting on the child."""
        if not forking_allowed():
            return None
        with _frozen():
            forked = _fork(job, _die_with)
        return None if forked is None else Aside(*forked)

    def wait(self, until: float | None) -> bool:
        """Whether the child's answer is in by ``until`` (a ``time.monotonic()`` value; None:
        however long it takes), reading it as it comes."""
        return Aside.either((self,), until)

    @staticmethod
    def either(asides: Sequence[Aside[Any]], until: float | None) -> bool:
        """Whether the answer of one of ``asides`` is in by ``until`` (as ``wait``), reading
        each as it comes: the first to answer ends the wait, whichever it is. ``ValueError``
        for none to wait on."""
        import time

        if not asides:
            raise ValueError("Aside.either needs at least one child to wait on")
        while all(a._outcome is None for a in asides):
            readers: dict[int, Aside[Any]] = {}
            for a in asides:
                assert a._reader is not None  # open until its outcome is known
                readers[a._reader] = a
            left = None if until is None else max(0.0, until - time.monotonic())
            # A wait is at most a day at a time: ``select`` refuses what the platform's
            # time_t cannot hold (a time limit of 1e308 s).
            ready, _, _ = select.select(
                list(readers), [], [], None if left is None else min(left, _LONGEST_WAIT)
            )
            if not ready:
                if left is not None and left > _LONGEST_WAIT:
                    continue
                return False
            for reader in ready:
                readers[reader]._read()
        return True

    def _read(self) -> None:
        """Take what the child has sent (its pipe is readable): a chunk, or at its end the
        outcome."""
        assert self._reader is not None
        chunk = os.read(self._reader, 1 << 16)
        if chunk:
            self._frames.add(chunk)
        else:
            self._finish()

    def ready(self) -> bool:
        """Whether the child's answer is in now (reading what has come)."""
        import time

        return self.wait(time.monotonic())

    def _finish(self) -> None:
        assert self._reader is not None
        os.close(self._reader)
        self._reader = None
        _, status = os.waitpid(self._pid, 0)
        failed = not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0
        ok, value = (False, None) if failed else self._frames.result()
        # An undecodable answer counts as a failure.
        self._outcome = (True, cast(T, value)) if ok else (False, None)
        if not ok:
            self.failure = _failure(self._frames, status)

    def result(self) -> tuple[bool, T | None]:
        """Whether the child succeeded, and its job's result; waits for it."""
        self.wait(None)
        assert self._outcome is not None
        return self._outcome

    def latest(self) -> object | None:
        """The latest interim result the child sent (None: none, or undecodable), as far
        as this process has read its pipe; it stays after the child is stopped."""
        ok, value = self._frames.latest()
        return value if ok else None

    def stop(self) -> None:
        """Kill the child unless its answer is in (it is no longer wanted)."""
        if self._outcome is not None or self._reader is None:
            return
        os.close(self._reader)
        self._reader = None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        os.waitpid(self._pid, 0)
        self._outcome = (False, None)
