"""Two lanes of independent work, the second in a forked process when it pays.

The checker's core searches split into a fixed number of *lanes* (``LANES``): lists of jobs
that share nothing but inputs fixed before they start, so each lane's results are the same
whether it runs in this process or in a child. ``run_lanes`` runs the first lane here and,
once that has taken ``FORK_AFTER`` seconds with the second still to do, forks a child that
runs the second while this process goes on; without a fork (one CPU, no ``fork``, other
threads, ``RULEENGINE_LANES=1``, or a child that failed) the second lane runs here
afterwards. Reports therefore never depend on the machine: only their time does.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["FORK_AFTER", "LANES", "forking_allowed", "run_lanes"]

T = TypeVar("T")

LANES = 2
"""Lanes per phase of core searches (this machine kind has two cores)."""

FORK_AFTER = 0.0
"""Seconds the first lane runs alone before the second is forked off: a fork and the
copying of the pages a child writes cost a few milliseconds, more than lanes of quick jobs
take (most policies' core searches)."""

_QUIET_THREADS = frozenset({"ruleengine-progress"})
"""Threads that never hold a lock the child needs (they only write to a terminal)."""


def forking_allowed() -> bool:
    """Whether a lane may run in a forked child here: Linux with ``fork``, more than one
    CPU for this process, no threads besides the progress line's (a fork copies only the
    calling thread, and a lock another one holds would stay held in the child), and
    ``RULEENGINE_LANES`` not set to ``1``."""
    if os.environ.get("RULEENGINE_LANES", "").strip() == "1":
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


def run_lanes(
    first: Sequence[Callable[[], T]], second: Sequence[Callable[[], T]]
) -> tuple[list[T], list[T], bool]:
    """Each lane's jobs' results, in order, and whether the second lane ran in a child.

    Jobs run in their lane's order. The first lane runs here; the second, in a forked child
    once the first has run ``FORK_AFTER`` seconds (checked between jobs) and
    ``forking_allowed()``, else here after the first. A child's results come back pickled; a
    child that fails for any reason (an exception, a result that does not pickle, a crash)
    has its lane run again here, so the results are always those of running both here.
    Cost: the jobs' own, plus a fork (a few milliseconds) when the lanes are slow.
    """
    started = time.monotonic()
    child: _Child[T] | None = None
    tried = False
    done: list[T] = []
    try:
        for job in first:
            if not tried and second and time.monotonic() - started >= FORK_AFTER:
                tried = True
                child = _Child.start(second) if forking_allowed() else None
            done.append(job())
    except BaseException:
        if child is not None:
            child.stop()
        raise
    if child is not None:
        found = child.result()
        if found is not None:
            return done, found, True
    return done, [job() for job in second], False


class _Child(Generic[T]):
    """A forked process running a lane, and the pipe its pickled results come back by."""

    def __init__(self, pid: int, reader: int) -> None:
        self.pid = pid
        self.reader = reader

    @staticmethod
    def start(jobs: Sequence[Callable[[], T]]) -> _Child[T] | None:
        """The child running ``jobs`` (None: the fork failed)."""
        reader, writer = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return None
        if pid == 0:  # pragma: no cover - the child's side (coverage does not follow forks)
            code = 1
            try:
                os.close(reader)
                payload = pickle.dumps([job() for job in jobs], protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(writer, "wb") as out:
                    out.write(payload)
                code = 0
            finally:
                # Straight out: no atexit handlers, no flushing of the parent's buffers,
                # no destructors (a BDD manager's shutdown report among them).
                os._exit(code)
        os.close(writer)
        return _Child(pid, reader)

    def stop(self) -> None:
        """End the child and its pipe (this process is leaving the lanes early)."""
        os.close(self.reader)
        with contextlib.suppress(ProcessLookupError):  # it may have ended
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)

    def result(self) -> list[T] | None:
        """The lane's results, or None when the child failed."""
        chunks: list[bytes] = []
        try:
            with os.fdopen(self.reader, "rb") as pipe:
                while chunk := pipe.read(1 << 16):
                    chunks.append(chunk)
        finally:
            _, status = os.waitpid(self.pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        try:
            found = pickle.loads(b"".join(chunks))
        except Exception:  # any undecodable answer: the lane runs here
            return None
        return found if isinstance(found, list) else None
