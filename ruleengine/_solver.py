"""The one place solvers are made and asked: fixed seeds, a resource budget, fail closed.

``make_solver`` builds the incremental SAT-backed solver every reasoner uses; ``Session`` wraps
one such solver (and its private ``z3.Context``) with assumption checks through the low-level C
API, which skips the Python-side costs that dominate tiny queries. ``quickxplain`` finds a
minimal unsat core from sat/unsat answers alone (Z3's own cores are often far from minimal,
and which one it returns depends on its variable numbering).
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import reduce
from itertools import compress
from operator import or_
from typing import Any, TypeVar

import z3
from z3 import z3core

from ruleengine.errors import SolverError

__all__ = ["DEFAULT_RLIMIT", "Session", "make_solver", "quickxplain"]

DEFAULT_RLIMIT = 50_000_000
"""Z3 resource units per check. A deterministic budget (unlike a wall-clock timeout): the same
query gives the same answer on any machine. Our per-step queries use a few thousand units."""

K = TypeVar("K", bound=Hashable)

_POINTER = "Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I"
"""The ``array`` type code of a C pointer on this platform."""


def _raw_check_assumptions() -> Callable[[int, int, int, int], int]:
    """``Z3_solver_check_assumptions`` taking plain addresses, without z3core's wrapper.

    The wrapper adds an error-code call per check, which costs more than a small query's
    search; errors surface here as result 0 (*unknown*), and ``_check_pointers`` asks why.
    Same C function, called with the GIL released, as z3core calls it.
    """
    entry = z3core.Z3_solver_check_assumptions.__defaults__[0].f
    address = ctypes.cast(entry, ctypes.c_void_p).value
    assert address, "libz3 has no Z3_solver_check_assumptions"
    prototype = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p
    )
    check: Callable[[int, int, int, int], int] = prototype(address)
    return check


_check_assumptions = _raw_check_assumptions()

_BITS = bytes.maketrans(b"01", b"\x00\x01")
"""Translates a binary numeral's digits to 0/1 bytes (selectors for ``itertools.compress``)."""


def make_solver(ctx: z3.Context, *, rlimit: int = DEFAULT_RLIMIT, timeout_ms: int = 0) -> Any:
    """An incremental propositional solver with fixed seeds and a resource budget.

    ``QF_BV`` gives Z3's incremental SAT solver with a thin front (``QF_FD`` wraps the same
    solver in a preprocessing layer that costs twice the search on every check; see
    docs/design.md). Models are switched off: a decision only needs *sat*/*unsat* answers
    under assumptions, and building a model object on every *sat* answer costs more than the
    search itself.
    """
    solver = z3.SolverFor("QF_BV", ctx=ctx)
    solver.set("random_seed", 0)
    solver.set("model", False)
    solver.set("rlimit", rlimit)
    if timeout_ms:
        solver.set("timeout", timeout_ms)
    return solver


class Session:
    """A solver with named assumption literals, checked through the C API.

    Every z3 object handed to the C API stays referenced from ``self._keep``: a dropped wrapper
    would leave a dangling pointer inside Z3.
    """

    def __init__(self, *, rlimit: int = DEFAULT_RLIMIT, timeout_ms: int = 0) -> None:
        self.ctx = z3.Context()
        self.solver = make_solver(self.ctx, rlimit=rlimit, timeout_ms=timeout_ms)
        self._ctx_ref = self.ctx.ref()
        self._solver_ref = self.solver.solver
        self._ctx_pointer = self._ctx_ref.value
        self._solver_pointer = self._solver_ref.value
        self._keep: list[Any] = []
        self._slot: dict[Hashable, int] = {}
        self._by_slot: list[Any] = []
        self.checks = 0
        """How many solver calls this session made (for benchmarks and tests)."""

    def add(self, formula: Any) -> None:
        """Assert ``formula`` for good (an axiom of the vocabulary)."""
        self._keep.append(formula)
        self.solver.add(formula)

    def name(self, key: Hashable, literal: Any) -> None:
        """Register ``literal`` (a z3 Bool literal) as the assumption called ``key``."""
        self._keep.append(literal)
        ast = literal.as_ast()
        self._slot[key] = len(self._by_slot)
        self._by_slot.append(ast.value)

    def slot(self, key: Hashable) -> int:
        """The bit of assumption ``key`` in a *literal mask* (a set of assumptions as an int)."""
        return 1 << self._slot[key]

    def check_mask(self, mask: int) -> bool:
        """Whether the axioms and the assumptions in ``mask`` are satisfiable together."""
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

    @property
    def size(self) -> int:
        """How many assumption literals this session has named."""
        return len(self._by_slot)

    def knows(self, key: Hashable) -> bool:
        """Whether ``key`` names an assumption literal."""
        return key in self._slot

    def _check_pointers(self, pointers: array[int]) -> bool:
        # The AST pointers go to Z3 as the address of the array's buffer (which `pointers`
        # keeps alive during the call): no per-element conversion, and no ctypes array type
        # (`Ast * n` makes a new class for each length, which costs more than the search).
        # The ASTs themselves stay alive in `self._keep`; the context and solver in `self`.
        self.checks += 1
        address, n = pointers.buffer_info()
        result = _check_assumptions(self._ctx_pointer, self._solver_pointer, n, address)
        if result == 1:
            return True
        if result == -1:
            return False
        # `unknown`, or an error the raw call did not check: ask the checked wrappers why.
        try:
            z3core.Z3_get_error_code(self._ctx_ref)
            reason = z3core.Z3_solver_get_reason_unknown(self._ctx_ref, self._solver_ref)
        except z3.Z3Exception as exc:
            reason = f"z3 error: {exc}"
        raise SolverError(
            f"the solver could not decide this step: {reason}",
            hint="raise the reasoner's `rlimit`, or simplify the constraints; we fail closed",
        )


def quickxplain(
    candidates: Sequence[K], mask_of: Mapping[K, int], satisfiable: Callable[[int], bool]
) -> list[K]:
    """A minimal unsatisfiable subset of ``candidates`` (which must be unsat), deterministic.

    Junker's QuickXplain: it asks only *sat or unsat?* of subsets, never for solver cores, so
    the answer depends on nothing but the order of ``candidates`` and the semantics — the same
    conflict gets the same core however the solver numbered its variables. It prefers the
    core whose members come earliest, and needs about ``k·log(n/k)`` checks for a core of
    ``k`` among ``n``. Every member is necessary: dropping any one leaves a satisfiable set.

    A subset is asked about as the union (``|``) of its members' masks, so ``satisfiable``
    sees one int and the background of each question is carried along as one.
    """

    def union(items: list[K]) -> int:
        return reduce(or_, map(mask_of.__getitem__, items), 0)

    def explain(background: int, added: bool, pool: list[K]) -> list[K]:
        if added and not satisfiable(background):
            return []
        if len(pool) == 1:
            return list(pool)
        half = len(pool) // 2
        first, second = pool[:half], pool[half:]
        right = explain(background | union(first), True, second)
        left = explain(background | union(right), bool(right), first)
        return left + right

    return explain(0, False, list(candidates))
