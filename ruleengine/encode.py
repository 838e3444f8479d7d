"""The Z3 interpreter of the IR: one ``Vocabulary`` per reasoner, compiled once.

Atoms become Boolean constants in the reasoner's private ``z3.Context``:

* ``A[t]`` — ``allowed(t)``, one per declared tool; ``can_stop`` is ``A["final_answer"]``;
* ``Hd[t]`` — ``hidden(t)``, made when first mentioned, with the axiom ``Hd[t] ⇒ ¬A[t]``;
* ``F[t]`` — *t is the hard-forced tool*, made when first forced, with ``F[t] ⇒ A[t]`` and
  pairwise ``¬F[t] ∨ ¬F[u]`` (two hard forces on different tools conflict).

The axiom ``A[t1] ∨ … ∨ A[tn]`` says some tool is allowed. An emitted item that is a
conjunction of literals is assumed literal by literal; any other formula ``φ`` gets a guard
``p`` with the axiom ``p ⇒ φ`` and is assumed through ``p``. Assumption keys are plain tuples:
``("allowed", t, value)``, ``("hidden", t, value)``, ``("force", t)``, ``("item", φ)``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import z3

from ruleengine._solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, Session
from ruleengine.ir import (
    FINAL_ANSWER,
    Allowed,
    And,
    AtLeast,
    AtMost,
    CanStop,
    Const,
    Exactly,
    Expr,
    Forced,
    Hidden,
    Implies,
    Not,
    Or,
)

__all__ = ["Vocabulary"]


class Vocabulary:
    """The declared tools as Z3 atoms, their axioms, and a solver session over them."""

    def __init__(
        self,
        tools: tuple[str, ...],
        *,
        rlimit: int = DEFAULT_RLIMIT,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        self.tools = tools
        self._limits = (rlimit, timeout_ms)
        self.reset()

    def reset(self) -> None:
        """Drop every lazily made atom and guard: a fresh context, session and axioms."""
        rlimit, timeout_ms = self._limits
        self.session = Session(rlimit=rlimit, timeout_ms=timeout_ms)
        tools = self.tools
        ctx = self.session.ctx
        self._ctx = ctx
        self._allowed = {t: z3.Bool(f"allowed[{t}]", ctx) for t in tools}
        self._hidden: dict[str, Any] = {}
        self._forced: dict[str, Any] = {}
        for t, atom in self._allowed.items():
            self.session.name(("allowed", t, True), atom)
            self.session.name(("allowed", t, False), z3.Not(atom, ctx))
        self.session.add(z3.Or(*self._allowed.values()))

    def hidden_atom(self, tool: str) -> Any:
        atom = self._hidden.get(tool)
        if atom is None:
            atom = z3.Bool(f"hidden[{tool}]", self._ctx)
            self._hidden[tool] = atom
            self.session.add(z3.Implies(atom, z3.Not(self._allowed[tool], self._ctx), self._ctx))
            self.session.name(("hidden", tool, True), atom)
            self.session.name(("hidden", tool, False), z3.Not(atom, self._ctx))
        return atom

    def ensure(self, key: Hashable) -> None:
        """Make sure the assumption ``key`` has a literal (creating atoms and guards lazily)."""
        if self.session.knows(key):
            return
        match key:
            case ("hidden", str(tool), bool()):
                self.hidden_atom(tool)
            case ("force", str(tool)):
                self._force_atom(tool)
            case ("item", Expr() as formula):
                guard = z3.Bool(f"item[{self.session.size}]", self._ctx)
                self.session.add(z3.Implies(guard, self.encode(formula), self._ctx))
                self.session.name(key, guard)
            case _:
                raise AssertionError(f"unknown assumption key {key!r}")

    def _force_atom(self, tool: str) -> None:
        atom = z3.Bool(f"forced[{tool}]", self._ctx)
        for other in self._forced.values():
            self.session.add(z3.Or(z3.Not(atom, self._ctx), z3.Not(other, self._ctx), self._ctx))
        self._forced[tool] = atom
        self.session.add(z3.Implies(atom, self._allowed[tool], self._ctx))
        self.session.name(("force", tool), atom)

    def encode(self, expr: Expr) -> Any:
        """The z3 formula of ``expr`` (``forced`` never occurs nested: rejected at lowering)."""
        ctx = self._ctx
        match expr:
            case Const(value=v):
                return z3.BoolVal(v, ctx)
            case Allowed(tool=t):
                return self._allowed[t]
            case CanStop():
                return self._allowed[FINAL_ANSWER]
            case Hidden(tool=t):
                return self.hidden_atom(t)
            case Not(arg=a):
                return z3.Not(self.encode(a), ctx)
            case And(args=xs):
                return z3.And(*[self.encode(x) for x in xs])
            case Or(args=xs):
                return z3.Or(*[self.encode(x) for x in xs])
            case Implies(lhs=a, rhs=b):
                return z3.Implies(self.encode(a), self.encode(b), ctx)
            case AtMost(k=k, args=xs):
                return z3.PbLe([(self.encode(x), 1) for x in xs], k)
            case AtLeast(k=k, args=xs):
                return z3.PbGe([(self.encode(x), 1) for x in xs], k)
            case Exactly(k=k, args=xs):
                return z3.PbEq([(self.encode(x), 1) for x in xs], k)
            case Forced():
                raise AssertionError("forced() must not be nested; lower() rejects it")
            case _:
                raise AssertionError(f"unknown node {expr!r}")
