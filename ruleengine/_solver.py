"""The one place solvers are made and asked: fixed seeds, bounded budgets, fail closed.

``make_solver`` builds the incremental SAT-backed solver every reasoner uses; ``Session`` wraps
one such solver (and its private ``z3.Context``) with assumption checks through the low-level C
API, which skips the Python-side costs that dominate tiny queries. A session makes its context
and solver at its first check, and Z3 is imported then: steps the reasoner's fast path
decides never need it.

Every check is bounded twice: by ``rlimit`` (Z3's deterministic resource units: the same
query gives the same answer on any machine) and, per decision, by ``timeout_ms`` of wall
clock (``Session.begin`` starts a decision; a check under way is stopped by Z3 when the
decision's time is up). Either way the step fails closed with ``SolverError``.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
import time
import warnings
import weakref
from array import array
from collections.abc import Callable, Hashable
from itertools import compress
from typing import Any

from ruleengine.errors import SolverError

__all__ = ["DEFAULT_RLIMIT", "DEFAULT_TIMEOUT_MS", "Make", "Session", "make_solver", "z3_module"]

DEFAULT_RLIMIT = 10_000_000
"""Z3 resource units per check (deterministic). Our per-step queries use a few thousand units;
a check that exhausts this budget stops after about 2–4 s on a 2-core VM (docs/design.md)."""

DEFAULT_TIMEOUT_MS = 10_000
"""Wall-clock bound of one decision, all its checks together, in milliseconds."""

MAX_LIMIT = 2**32 - 1
"""The largest ``rlimit`` or ``timeout_ms`` Z3 takes (an unsigned 32-bit parameter)."""

_POINTER = "Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I"
"""The ``array`` type code of a C pointer on this platform."""

_BITS = bytes.maketrans(b"01", b"\x00\x01")
"""Translates a binary numeral's digits to 0/1 bytes (selectors for ``itertools.compress``)."""

RawCheck = Callable[[int, int, int, int], int]
"""``Z3_solver_check_assumptions(context, solver, n, address of n AST pointers)``."""

Make = Callable[[Any], Any]
"""Builds a z3 term (an assumption literal or an axiom) in the ``z3.Context`` it is given."""


def z3_module() -> Any:
    """The ``z3`` module, imported on first use (a session's first check): what builds z3
    terms calls this instead of importing ``z3`` with its module."""
    import z3

    return z3


def _z3core() -> Any:
    from z3 import z3core

    return z3core


# -- the C entry point -------------------------------------------------------------------------


def _from_wrapper() -> int | None:
    """The function's address inside z3core's generated wrapper (its bound C function)."""
    defaults = _z3core().Z3_solver_check_assumptions.__defaults__
    return ctypes.cast(defaults[0].f, ctypes.c_void_p).value


def _from_library() -> int | None:
    """The function's address in the libz3 shipped inside the z3 package (already loaded)."""
    here = os.path.join(os.path.dirname(z3_module().__file__), "lib")
    for path in sorted(glob.glob(os.path.join(here, "*z3*"))):
        try:
            function = ctypes.CDLL(path).Z3_solver_check_assumptions
        except (OSError, AttributeError):
            continue
        return ctypes.cast(function, ctypes.c_void_p).value
    return None


_LOOKUPS: tuple[Callable[[], int | None], ...] = (_from_wrapper, _from_library)
"""Where to find ``Z3_solver_check_assumptions``, in order; each is verified before use."""

_entry_lock = threading.Lock()
_entry: list[RawCheck | None] = []
"""The verified raw entry point, once looked up (``None``: use the public call)."""


def raw_entry() -> RawCheck | None:
    """The raw ``Z3_solver_check_assumptions`` taking plain addresses, or ``None``.

    z3core's checked wrapper adds an error-code call per check and needs a ctypes array
    (a new class per length), which together cost more than a small query's search. The
    raw function is found through ``_LOOKUPS`` (private to z3's wrapper, so it may move in a
    z3 release) and verified on a tiny sat and unsat query; when no lookup works, checks go
    through the public wrapper (slower, same answers) and a ``RuntimeWarning`` says so once.
    """
    with _entry_lock:
        if not _entry:
            _entry.append(_find_entry())
        return _entry[0]


def _find_entry() -> RawCheck | None:
    prototype = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p
    )
    for lookup in _LOOKUPS:
        try:
            address = lookup()
        except Exception:
            continue
        if not address:
            continue
        check: RawCheck = prototype(address)
        if _answers_right(check):
            return check
    warnings.warn(
        f"ruleengine: z3 {z3_module().get_version_string()} does not expose the C entry point "
        "`Z3_solver_check_assumptions` where ruleengine looks for it; solver checks go "
        "through z3's public wrapper instead (same answers, slower)",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _answers_right(check: RawCheck) -> bool:
    """Whether ``check`` answers a tiny sat query and a tiny unsat query correctly."""
    try:
        z3 = z3_module()
        ctx = z3.Context()
        solver = make_solver(ctx, rlimit=DEFAULT_RLIMIT)
        x = z3.Bool("x", ctx)
        solver.add(x)
        keep = [x, z3.Not(x, ctx)]
        answers = []
        for literal in keep:
            pointers = array(_POINTER, [literal.as_ast().value])
            address, n = pointers.buffer_info()
            answers.append(check(ctx.ref().value, solver.solver.value, n, address))
        return answers == [1, -1]
    except Exception:
        return False


# -- solvers -------------------------------------------------------------------------------------


def make_solver(ctx: Any, *, rlimit: int = DEFAULT_RLIMIT) -> Any:
    """An incremental propositional solver with fixed seeds and a resource budget.

    ``QF_BV`` gives Z3's incremental SAT solver with a thin front (``QF_FD`` wraps the same
    solver in a preprocessing layer that costs twice the search on every check; see
    docs/design.md). Models are switched off: a decision only needs *sat*/*unsat* answers
    under assumptions, and building a model object on every *sat* answer costs more than the
    search itself. Cardinality constraints are compiled to clauses rather than handed to the
    SAT solver's cardinality extension: that extension spends seconds per check on small
    pigeonhole-like steps (at most 11 and at least 12 of 24 tools), and its resource count
    grows far slower than its time, so ``rlimit`` would not bound it (docs/design.md). No
    Z3 ``timeout`` is set: Z3 arms a timer thread for every check that has one, which costs
    more than a small check; the ``_Watchdog`` interrupts long checks instead.
    """
    solver = z3_module().SolverFor("QF_BV", ctx=ctx)
    solver.set("random_seed", 0)
    solver.set("model", False)
    solver.set("sat.cardinality.solver", False)
    solver.set("rlimit", rlimit)
    return solver


class _Watchdog:
    """One daemon thread that interrupts solver checks running past their decision's deadline.

    A session joins once (a weak reference: a dropped reasoner is not kept alive); then each
    decision only writes its deadline into the session, and wakes the thread (under the
    lock) when that deadline is earlier than the one the thread sleeps until, which happens
    about once per timeout period: deadlines mostly move later. The thread reads the
    sessions' current deadlines when it wakes, and reads them again after publishing when it
    will wake next, so a deadline written meanwhile is never missed. Interrupting a solver
    that is not inside a check does nothing (Z3 only cancels a running check); a check
    stopped this way answers *unknown*, which the session reports as out of time.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._sessions: dict[int, weakref.ref[Session]] = {}
        self._stopped: dict[int, float] = {}
        self.wake_at = float("inf")
        """When the thread wakes next (written under ``lock``, read without)."""
        self._thread: threading.Thread | None = None

    def join(self, session: Session) -> None:
        """Watch ``session`` from now on (once per session)."""
        with self.lock:
            self._sessions[id(session)] = session.ref
            if self._thread is None:
                self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="ruleengine-solver-watchdog", daemon=True
        )
        self._thread.start()

    def fork_safe(self) -> None:
        """Make a ``fork`` of this process safe while the thread runs (the checker's lanes
        fork): the lock is taken around the fork, so the child never inherits it held;
        the child gets a fresh lock and a thread of its own watching the same sessions."""
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(
                before=self._before_fork,
                after_in_parent=self._after_fork_in_parent,
                after_in_child=self._after_fork_in_child,
            )

    def _before_fork(self) -> None:
        self.lock.acquire()

    def _after_fork_in_parent(self) -> None:
        self.lock.release()

    def _after_fork_in_child(self) -> None:  # pragma: no cover - runs in a forked child
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self.wake_at = float("inf")
        self._thread = None
        if self._sessions:
            self._start()

    def deadline_set(self, deadline: float) -> None:
        """A session's new deadline: wake the thread if it would sleep past it."""
        if deadline < self.wake_at:
            with self.lock:
                self._wake.notify()

    def _upcoming(self, now: float) -> float:
        """Interrupt the sessions past their deadline; the earliest deadline still ahead."""
        upcoming = float("inf")
        for key, ref in list(self._sessions.items()):
            session = ref()
            if session is None:
                del self._sessions[key]
                self._stopped.pop(key, None)
                continue
            deadline = session.deadline
            if not deadline or deadline == self._stopped.get(key):
                continue
            if deadline <= now:
                self._stopped[key] = deadline
                session.interrupt()
            else:
                upcoming = min(upcoming, deadline)
        return upcoming

    def _run(self) -> None:
        with self.lock:
            while True:
                now = time.monotonic()
                upcoming = self._upcoming(now)
                self.wake_at = upcoming
                # A deadline written before `wake_at` was published may be earlier: look again.
                again = self._upcoming(now)
                if again < upcoming:
                    self.wake_at = upcoming = again
                self._wake.wait(None if upcoming == float("inf") else upcoming - now)


_WATCHDOG = _Watchdog()
_WATCHDOG.fork_safe()


class Session:
    """A solver with named assumption literals, checked through the C API.

    Assumptions and axioms are given as functions that build them (``Make``): until the
    first check they are only recorded (an assumption gets its slot at once), and
    ``start`` makes the context and solver and builds them in the order they came; after
    that, each is built when given. Every z3 object handed to the C API stays referenced
    from ``self._keep``: a dropped wrapper would leave a dangling pointer inside Z3.
    """

    def __init__(self, *, rlimit: int = DEFAULT_RLIMIT, timeout_ms: int = DEFAULT_TIMEOUT_MS):
        self.ctx: Any = None
        """The ``z3.Context`` once started (``start``), else None."""
        self.solver: Any = None
        self.rlimit = rlimit
        self.timeout_ms = timeout_ms
        self._ctx_ref: Any = None
        self._solver_ref: Any = None
        self._ctx_pointer = 0
        self._solver_pointer = 0
        self._raw: RawCheck | None = None
        self._pending: list[tuple[int, Make]] = []
        """What to build at the start: (slot, its literal) or (-1, an axiom), in order."""
        self._keep: list[Any] = []
        self._slot: dict[Hashable, int] = {}
        self._by_slot: list[int] = []
        self._seconds = timeout_ms / 1000
        self.deadline = 0.0
        """When the current decision runs out of time (``time.monotonic``; 0: not started)."""
        self.ref = weakref.ref(self)
        self._watched = False
        self.checks = 0
        """How many solver calls this session made (for benchmarks and tests)."""

    def start(self) -> Any:
        """Make the context and the solver (the first time) and build what was given so far;
        return the context."""
        if self.ctx is None:
            ctx = z3_module().Context()
            solver = make_solver(ctx, rlimit=self.rlimit)
            built: list[Any] = []
            try:
                for slot, make in self._pending:
                    term = make(ctx)
                    built.append(term)
                    if slot < 0:
                        solver.add(term)
                    else:
                        self._by_slot[slot] = term.as_ast().value
            except BaseException:
                # Nothing half-built is kept: a solver missing an axiom would answer wrongly.
                # The next check starts over (and fails the same way: the step fails).
                self._by_slot = [0] * len(self._by_slot)
                raise
            self._raw = raw_entry()
            self._ctx_ref, self._solver_ref = ctx.ref(), solver.solver
            self._ctx_pointer, self._solver_pointer = self._ctx_ref.value, self._solver_ref.value
            self._keep, self._pending = built, []
            self.ctx, self.solver = ctx, solver
        return self.ctx

    def add(self, axiom: Make) -> None:
        """Assert the formula ``axiom`` builds, for good (an axiom of the vocabulary)."""
        if self.ctx is None:
            self._pending.append((-1, axiom))
            return
        term = axiom(self.ctx)
        self._keep.append(term)
        self.solver.add(term)

    def name(self, key: Hashable, literal: Make) -> None:
        """Register the z3 Bool literal that ``literal`` builds as the assumption ``key``
        (after the start, built first: a literal that fails to build gets no slot)."""
        pointer = 0
        if self.ctx is not None:
            term = literal(self.ctx)
            pointer = term.as_ast().value
            self._keep.append(term)
        slot = len(self._by_slot)
        self._slot[key] = slot
        self._by_slot.append(pointer)
        if self.ctx is None:
            self._pending.append((slot, literal))

    def slot(self, key: Hashable) -> int:
        """The bit of assumption ``key`` in a *literal mask* (a set of assumptions as an int)."""
        return 1 << self._slot[key]

    @property
    def size(self) -> int:
        """How many assumption literals this session has named."""
        return len(self._by_slot)

    def knows(self, key: Hashable) -> bool:
        """Whether ``key`` names an assumption literal."""
        return key in self._slot

    def begin(self) -> None:
        """Start a decision: its checks together get ``timeout_ms`` of wall clock, counted
        from its first check (a session used without ``begin`` is one long decision)."""
        self.deadline = 0.0

    def interrupt(self) -> None:
        """Stop the check under way, if any (from another thread; it answers *unknown*)."""
        # The wrapper then reads the context's error code, which may be one left by the
        # thread that owns the context: not ours to report. (Before the start there is no
        # check to stop.)
        if self._ctx_ref is None:
            return
        with contextlib.suppress(Exception):
            _z3core().Z3_solver_interrupt(self._ctx_ref, self._solver_ref)

    def check_mask(self, mask: int) -> bool:
        """Whether the axioms and the assumptions in ``mask`` are satisfiable together."""
        if self.ctx is None:
            self.start()
        by_slot = self._by_slot
        if mask.bit_length() <= 16 * mask.bit_count():
            # Dense enough: select the pointers in C, from the mask's bits as 0/1 bytes
            # (lowest bit first).
            selectors = bin(mask)[:1:-1].encode().translate(_BITS)
            return self._check_pointers(array(_POINTER, compress(by_slot, selectors)))
        pointers = array(_POINTER)
        while mask:
            low = mask & -mask
            pointers.append(by_slot[low.bit_length() - 1])
            mask ^= low
        return self._check_pointers(pointers)

    def _check_pointers(self, pointers: array[int]) -> bool:
        # The AST pointers go to Z3 as the address of the array's buffer (which `pointers`
        # keeps alive during the call): no per-element conversion, and no ctypes array type.
        # The ASTs themselves stay alive in `self._keep`; the context and solver in `self`.
        if self.timeout_ms:
            self._watch_clock()
        self.checks += 1
        address, n = pointers.buffer_info()
        raw = self._raw
        if raw is not None:
            result = raw(self._ctx_pointer, self._solver_pointer, n, address)
        else:
            result = self._public_check(pointers)
        if result == 1:
            return True
        if result == -1:
            return False
        raise self._unknown()

    def _watch_clock(self) -> None:
        """Start the decision's clock at its first check; fail once it is out of time."""
        now = time.monotonic()
        if not self.deadline:
            if not self._watched:
                _WATCHDOG.join(self)
                self._watched = True
            self.deadline = deadline = now + self._seconds
            _WATCHDOG.deadline_set(deadline)
        elif now >= self.deadline:
            raise self._out_of_time()

    def _public_check(self, pointers: array[int]) -> int:
        """The same check through z3core's checked wrapper (the fallback entry point)."""
        z3core = _z3core()
        asts = (z3core.Ast * len(pointers))(*pointers)
        try:
            return int(
                z3core.Z3_solver_check_assumptions(
                    self._ctx_ref, self._solver_ref, len(pointers), asts
                )
            )
        except z3_module().Z3Exception:
            return 0

    def _unknown(self) -> SolverError:
        """The error for an *unknown* answer: which budget ran out, or what Z3 said."""
        if self.timeout_ms and self.deadline and time.monotonic() >= self.deadline:
            return self._out_of_time()
        z3core = _z3core()
        try:
            z3core.Z3_get_error_code(self._ctx_ref)
            reason = z3core.Z3_solver_get_reason_unknown(self._ctx_ref, self._solver_ref)
        except z3_module().Z3Exception as exc:
            reason = f"z3 error: {exc}"
        return SolverError(
            f"the solver could not decide this step within rlimit=`{self.rlimit}`: {reason}",
            hint="simplify the step's constraints, or raise the reasoner's `rlimit`; "
            "the step fails closed",
        )

    def _out_of_time(self) -> SolverError:
        return SolverError(
            f"the solver could not decide this step within timeout_ms=`{self.timeout_ms}`",
            hint="simplify the step's constraints, or raise the reasoner's `timeout_ms`; "
            "the step fails closed",
        )
