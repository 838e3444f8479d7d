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

Atoms and axioms are *declared* here and *built* by the session when it first checks
(``Session.start``): a reasoner whose steps the fast path decides, as every literal step is,
never makes a Z3 context nor imports Z3. Each atom is a constant named after its key
(``allowed[t]``, ``hidden[t]``, ``forced[t]``, ``item[n]``); Z3 shares a constant's term by
name and sort, so an atom built twice is one term.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import partial
from typing import Any

from ruleengine._solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, Session, z3_module
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
    walk,
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
        """Drop every lazily made atom and guard: a fresh session and axioms."""
        rlimit, timeout_ms = self._limits
        self.session = Session(rlimit=rlimit, timeout_ms=timeout_ms)
        self._forced: list[str] = []
        """The tools with a force atom, in the order they got it."""
        tools = self.tools
        for t in tools:
            self.session.name(("allowed", t, True), partial(_atom, "allowed", t))
            self.session.name(("allowed", t, False), partial(_negated, "allowed", t))
        self.session.add(partial(_some_allowed, tools))

    # A declaration counts as made once its literals are named, the last thing it does: one
    # whose build failed (after the session's start) is made again in full next time.

    def _declare_hidden(self, tool: str) -> None:
        if self.session.knows(("hidden", tool, False)):
            return
        self.session.add(partial(_hidden_axiom, tool))
        self.session.name(("hidden", tool, True), partial(_atom, "hidden", tool))
        self.session.name(("hidden", tool, False), partial(_negated, "hidden", tool))

    def ensure(self, key: Hashable) -> None:
        """Make sure the assumption ``key`` has a literal (declaring atoms and guards lazily)."""
        if self.session.knows(key):
            return
        match key:
            case ("hidden", str(tool), bool()):
                self._declare_hidden(tool)
            case ("force", str(tool)):
                self._declare_force(tool)
            case ("item", Expr() as formula):
                for t in _hidden_in(formula):
                    self._declare_hidden(t)
                guard = str(self.session.size)
                self.session.add(partial(self._guarded, guard, formula))
                self.session.name(key, partial(_atom, "item", guard))
            case _:
                raise AssertionError(f"unknown assumption key {key!r}")

    def _declare_force(self, tool: str) -> None:
        for other in self._forced:
            self.session.add(partial(_one_force, tool, other))
        self.session.add(partial(_force_axiom, tool))
        self.session.name(("force", tool), partial(_atom, "forced", tool))
        self._forced.append(tool)

    def _guarded(self, guard: str, formula: Expr, ctx: Any) -> Any:
        """The axiom ``item[guard] ⇒ formula``."""
        return z3_module().Implies(_atom("item", guard, ctx), self.encode(formula, ctx), ctx)

    def encode(self, expr: Expr, ctx: Any) -> Any:
        """The z3 formula of ``expr`` in the started session's context ``ctx`` (its hidden
        atoms declared: ``ensure`` does it; ``forced`` never occurs nested: rejected at
        lowering)."""
        z3 = z3_module()
        match expr:
            case Const(value=v):
                return z3.BoolVal(v, ctx)
            case Allowed(tool=t):
                return _atom("allowed", t, ctx)
            case CanStop():
                return _atom("allowed", FINAL_ANSWER, ctx)
            case Hidden(tool=t):
                return _atom("hidden", t, ctx)
            case Not(arg=a):
                return z3.Not(self.encode(a, ctx), ctx)
            case And(args=xs):
                return z3.And(*[self.encode(x, ctx) for x in xs])
            case Or(args=xs):
                return z3.Or(*[self.encode(x, ctx) for x in xs])
            case Implies(lhs=a, rhs=b):
                return z3.Implies(self.encode(a, ctx), self.encode(b, ctx), ctx)
            case AtMost(k=k, args=xs):
                return z3.PbLe([(self.encode(x, ctx), 1) for x in xs], k)
            case AtLeast(k=k, args=xs):
                return z3.PbGe([(self.encode(x, ctx), 1) for x in xs], k)
            case Exactly(k=k, args=xs):
                return z3.PbEq([(self.encode(x, ctx), 1) for x in xs], k)
            case Forced():
                raise AssertionError("forced() must not be nested; lower() rejects it")
            case _:
                raise AssertionError(f"unknown node {expr!r}")


def _atom(kind: str, tool: str, ctx: Any) -> Any:
    """The atom ``kind[tool]`` (``allowed``, ``hidden``, ``forced``; ``item[n]``: a guard)."""
    return z3_module().Bool(f"{kind}[{tool}]", ctx)


def _negated(kind: str, tool: str, ctx: Any) -> Any:
    return z3_module().Not(_atom(kind, tool, ctx), ctx)


def _some_allowed(tools: tuple[str, ...], ctx: Any) -> Any:
    return z3_module().Or(*[_atom("allowed", t, ctx) for t in tools])


def _hidden_axiom(tool: str, ctx: Any) -> Any:
    return z3_module().Implies(_atom("hidden", tool, ctx), _negated("allowed", tool, ctx), ctx)


def _force_axiom(tool: str, ctx: Any) -> Any:
    return z3_module().Implies(_atom("forced", tool, ctx), _atom("allowed", tool, ctx), ctx)


def _one_force(tool: str, other: str, ctx: Any) -> Any:
    return z3_module().Or(_negated("forced", tool, ctx), _negated("forced", other, ctx), ctx)


def _hidden_in(expr: Expr) -> list[str]:
    """The tools whose ``hidden`` atom ``expr`` mentions, in first-mention order."""
    return list(dict.fromkeys(node.tool for node in walk(expr) if isinstance(node, Hidden)))
