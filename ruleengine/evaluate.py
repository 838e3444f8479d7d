"""The concrete interpreter of the IR: a formula's truth value under one assignment.

An assignment is the set of allowed tools and the set of hidden tools of one step. This module
never imports z3: it is the reference the Z3 encoding is tested against, and what explanations
and the static checker use to read a formula without a solver.
"""

from __future__ import annotations

from collections.abc import Collection

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

__all__ = ["evaluate"]


def evaluate(
    expr: Expr,
    allowed: Collection[str],
    hidden: Collection[str] = (),
    forced: str | None = None,
) -> bool:
    """The value of ``expr`` when exactly ``allowed`` are allowed and ``hidden`` hidden.

    ``forced(t)`` (only meaningful as a whole item) holds when ``t`` is allowed and is the
    hard-forced tool ``forced``.
    """

    def value(node: Expr) -> bool:
        match node:
            case Const(value=v):
                return v
            case Allowed(tool=t):
                return t in allowed
            case CanStop():
                return FINAL_ANSWER in allowed
            case Hidden(tool=t):
                return t in hidden
            case Forced(tool=t):
                return t in allowed and forced == t
            case Not(arg=a):
                return not value(a)
            case And(args=xs):
                return all(value(x) for x in xs)
            case Or(args=xs):
                return any(value(x) for x in xs)
            case Implies(lhs=a, rhs=b):
                return not value(a) or value(b)
            case AtMost(k=k, args=xs):
                return sum(value(x) for x in xs) <= k
            case AtLeast(k=k, args=xs):
                return sum(value(x) for x in xs) >= k
            case Exactly(k=k, args=xs):
                return sum(value(x) for x in xs) == k
            case _:
                raise AssertionError(f"unknown node {node!r}")

    return value(expr)
