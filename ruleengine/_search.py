"""Pure searches over a *sat or unsat?* oracle: minimal cores and lexicographic preferences.

Both functions see sets as ints (bit masks, combined with ``|``) and ask their oracle about
one int at a time, so the same search runs over the solver's literal masks or over the
aggregator's packed tool masks (``_layout``). Neither keeps state or touches z3.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import reduce
from operator import or_
from typing import TypeVar

__all__ = ["prefer", "quickxplain"]

K = TypeVar("K", bound=Hashable)


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

    # A module-level recursion, not a nested function: a nested one would refer to itself
    # through its closure, a reference cycle keeping the oracle (and whatever it holds, such
    # as a checker's BDD manager) alive until the cyclic garbage collector runs.
    return _explain(0, False, list(candidates), mask_of, satisfiable)


def _explain(
    background: int,
    added: bool,
    pool: list[K],
    mask_of: Mapping[K, int],
    satisfiable: Callable[[int], bool],
) -> list[K]:
    if added and not satisfiable(background):
        return []
    if len(pool) == 1:
        return list(pool)
    half = len(pool) // 2
    first, second = pool[:half], pool[half:]
    right = _explain(background | _union(first, mask_of), True, second, mask_of, satisfiable)
    left = _explain(background | _union(right, mask_of), bool(right), first, mask_of, satisfiable)
    return left + right


def _union(items: list[K], mask_of: Mapping[K, int]) -> int:
    return reduce(or_, map(mask_of.__getitem__, items), 0)


def prefer(
    satisfiable: Callable[[int], bool],
    fixed: int,
    choices: Sequence[tuple[int, int]],
    *,
    known_unsat: bool = False,
) -> tuple[int, int]:
    """Greedy lexicographic preference: take each choice's preferred mask when still possible.

    ``choices`` are ``(preferred, fallback)`` masks in order of importance; ``fixed`` (which
    must be satisfiable) is what holds already. Choice ``i`` adds ``preferred`` when
    ``fixed`` with it, and with everything taken before, is satisfiable, else ``fallback``.
    Answers the final mask and the refused choices as a bit mask over their indices. The
    result is the lexicographically best sequence of choices, whatever the oracle's
    internals.

    Before trying a choice alone it asks whether all the remaining preferred masks hold at
    once, and stops there when they do: a step whose preferences mostly hold costs a few
    checks instead of one per choice. It skips that question for the last choice (it is the
    same question) and for the first when ``known_unsat`` says the caller just asked it.
    At most ``2·len(choices)`` checks.
    """
    refused = 0
    last = len(choices) - 1
    for i, (preferred, fallback) in enumerate(choices):
        if i < last and not (known_unsat and i == 0):
            rest = reduce(or_, (p for p, _ in choices[i:]), 0)
            if satisfiable(fixed | rest):
                return fixed | rest, refused
        if satisfiable(fixed | preferred):
            fixed |= preferred
        else:
            fixed |= fallback
            refused |= 1 << i
    return fixed, refused
