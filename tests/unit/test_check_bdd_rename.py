"""``_bdd.renamed``: the renaming of the symbolic engine's images and preimages, by CUDD's
exchange of variables where ``dd`` has it, else by ``BDD.let``; both give the function
``let`` gives, for a function that depends on none of the new names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ruleengine.check import _bdd
from ruleengine.check._bdd import renamed

CURRENT = [f"x{i}" for i in range(4)]
NEXT = [f"y{i}" for i in range(4)]
OTHER = ["z0", "z1"]


def _manager() -> Any:
    bdd = _bdd.dd.BDD()
    # Interleaved, as the encoding declares them: renaming moves functions across levels.
    for x, y in zip(CURRENT, NEXT, strict=True):
        bdd.declare(x, y)
    bdd.declare(*OTHER)
    return bdd


def _function(bdd: Any, names: list[str], rows: list[int]) -> Any:
    """The disjunction of the minterms ``rows`` over ``names`` (one bit of a row each)."""
    out = bdd.false
    for row in rows:
        term = bdd.true
        for i, name in enumerate(names):
            term &= bdd.var(name) if row >> i & 1 else ~bdd.var(name)
        out |= term
    return out


rows = st.lists(st.integers(0, 63), max_size=20)


@given(rows=rows, moved=st.integers(1, 4))
def test_next_bits_renamed_to_current_ones_as_let_renames_them(rows: list[int], moved: int) -> None:
    # An image's shape: over the next bits of the moved components and the current bits of
    # the others (and other variables), never over the current bits it is renamed to.
    bdd = _manager()
    names = NEXT[:moved] + CURRENT[moved:] + OTHER
    u = _function(bdd, names, rows)
    back = dict(zip(NEXT[:moved], CURRENT[:moved], strict=True))
    assert renamed(bdd, u, back) == bdd.let(back, u)


@given(rows=rows, moved=st.integers(1, 4))
def test_current_bits_renamed_to_next_ones_as_let_renames_them(rows: list[int], moved: int) -> None:
    # A preimage's shape: a set of states, over current bits only.
    bdd = _manager()
    u = _function(bdd, CURRENT + OTHER, rows)
    forward = dict(zip(CURRENT[:moved], NEXT[:moved], strict=True))
    assert renamed(bdd, u, forward) == bdd.let(forward, u)


def test_a_renaming_moves_the_function_to_the_new_variables() -> None:
    bdd = _manager()
    u = bdd.var("y0") & ~bdd.var("y1") | bdd.var("z0")
    assert renamed(bdd, u, {"y0": "x0", "y1": "x1"}) == (
        bdd.var("x0") & ~bdd.var("x1") | bdd.var("z0")
    )


def test_nothing_to_rename_is_the_function_itself() -> None:
    bdd = _manager()
    u = bdd.var("x0") | bdd.var("z1")
    assert renamed(bdd, u, {}) == u


class _WithoutSwap:
    """A manager without ``_swap`` (as ``dd``'s pure-Python backend): everything else is the
    real manager's."""

    def __init__(self, bdd: Any) -> None:
        self._bdd = bdd
        self.lets = 0

    def let(self, names: dict[str, str], u: Any) -> Any:
        self.lets += 1
        return self._bdd.let(names, u)


def test_without_the_exchange_it_is_let() -> None:
    bdd = _manager()
    u = bdd.var("y2") & bdd.var("x0")
    plain = _WithoutSwap(bdd)
    assert renamed(plain, u, {"y2": "x2"}) == bdd.var("x2") & bdd.var("x0")
    assert plain.lets == 1


def test_the_exchange_is_used_where_the_backend_has_it() -> None:
    bdd = _manager()
    if not hasattr(bdd, "_swap"):
        pytest.skip("this platform's dd has no CUDD backend")
    calls: list[dict[str, str]] = []

    class Spy:
        def _swap(self, u: Any, names: dict[str, str]) -> Any:
            calls.append(names)
            return bdd._swap(u, names)

    assert renamed(Spy(), bdd.var("y3"), {"y3": "x3"}) == bdd.var("x3")
    assert calls == [{"y3": "x3"}]
