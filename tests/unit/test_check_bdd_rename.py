"""``_bdd.Renaming``: the renaming of the symbolic engine's images and preimages, by one
conjunction-and-quantification with the pairs' equalities; it gives the function
``BDD.let`` gives, for a function that depends on none of the new names."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ruleengine.check import _bdd
from ruleengine.check._bdd import Renaming

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
    assert Renaming(bdd, back)(u) == bdd.let(back, u)


@given(rows=rows, moved=st.integers(1, 4))
def test_current_bits_renamed_to_next_ones_as_let_renames_them(rows: list[int], moved: int) -> None:
    # A preimage's shape: a set of states, over current bits only.
    bdd = _manager()
    u = _function(bdd, CURRENT + OTHER, rows)
    forward = dict(zip(CURRENT[:moved], NEXT[:moved], strict=True))
    assert Renaming(bdd, forward)(u) == bdd.let(forward, u)


@given(first=rows, second=rows, moved=st.integers(1, 4))
def test_one_renaming_serves_every_set_it_is_given(
    first: list[int], second: list[int], moved: int
) -> None:
    # Built once per shape and called for every image: the equalities it keeps must not
    # carry anything of one set into the next.
    bdd = _manager()
    names = NEXT[:moved] + CURRENT[moved:] + OTHER
    back = dict(zip(NEXT[:moved], CURRENT[:moved], strict=True))
    renaming = Renaming(bdd, back)
    for rows_ in (first, second, first):
        u = _function(bdd, names, rows_)
        assert renaming(u) == bdd.let(back, u)


def test_a_renaming_moves_the_function_to_the_new_variables() -> None:
    bdd = _manager()
    u = bdd.var("y0") & ~bdd.var("y1") | bdd.var("z0")
    assert Renaming(bdd, {"y0": "x0", "y1": "x1"})(u) == (
        bdd.var("x0") & ~bdd.var("x1") | bdd.var("z0")
    )


def test_the_constants_and_nothing_to_rename_stay_as_they_are() -> None:
    bdd = _manager()
    u = bdd.var("x0") | bdd.var("z1")
    assert Renaming(bdd, {})(u) == u
    renaming = Renaming(bdd, {"y0": "x0"})
    assert renaming(bdd.true) == bdd.true
    assert renaming(bdd.false) == bdd.false


def test_the_names_it_was_given_are_its_own_copy() -> None:
    bdd = _manager()
    names = {"y0": "x0"}
    renaming = Renaming(bdd, names)
    names["y1"] = "x1"
    assert renaming.names == {"y0": "x0"}
    assert renaming(bdd.var("y0") & bdd.var("y1")) == bdd.var("x0") & bdd.var("y1")
