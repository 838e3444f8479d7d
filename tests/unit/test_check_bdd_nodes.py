"""``_bdd.nodes_held``: the manager's size as the steps back bound it, read from CUDD's
counters rather than by visiting every node (``len(bdd)``)."""

from __future__ import annotations

import gc
import warnings

import pytest

from ruleengine.check import _bdd


def _equalities(bdd: object, n: int) -> object:
    """``x_i ⇔ y_i`` for every i, with every x above every y: 3·2^n - 3 nodes."""
    u = bdd.true  # type: ignore[attr-defined]
    for i in range(n):
        u &= bdd.apply("<=>", bdd.var(f"x{i}"), bdd.var(f"y{i}"))  # type: ignore[attr-defined]
    return u


def test_the_count_follows_the_nodes_the_manager_holds() -> None:
    bdd = _bdd.dd.BDD()
    if not hasattr(bdd, "statistics"):
        pytest.skip("a BDD package without statistics: nodes_held is len(bdd)")
    n = 10
    bdd.declare(*[f"x{i}" for i in range(n)], *[f"y{i}" for i in range(n)])
    bdd.configure(reordering=False)
    empty = _bdd.nodes_held(bdd)
    u = _equalities(bdd, n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # dd's warning on statistics() is not passed on
        held = _bdd.nodes_held(bdd)
    # CUDD's count also holds the variables' own nodes and the constants.
    assert abs(held - len(bdd)) <= 2 * n + 2
    assert held >= u.dag_size >= 3 * 2**n - 3  # type: ignore[attr-defined]
    del u  # its nodes are dead now, and CUDD's count leaves them out
    gc.collect()
    assert _bdd.nodes_held(bdd) <= empty + 2 * n + 2


class _Counted:
    def __init__(self, size: int, answer: object = None) -> None:
        self.size, self.answer = size, answer

    def __len__(self) -> int:
        return self.size

    def statistics(self, exact_node_count: bool = True) -> object:
        assert exact_node_count is False  # the exact count is what costs
        return self.answer


def test_a_backend_that_says_is_read() -> None:
    assert _bdd.nodes_held(_Counted(5, {"n_nodes": 42})) == 42


@pytest.mark.parametrize(
    "answer",
    [None, {}, {"n_nodes": "many"}, [1, 2]],
    ids=["None", "no entry", "not a number", "not a dict"],
)
def test_a_backend_that_does_not_say_is_counted(answer: object) -> None:
    assert _bdd.nodes_held(_Counted(7, answer)) == 7


def test_a_backend_without_statistics_is_counted() -> None:
    class Plain:
        def __len__(self) -> int:
            return 3

    assert _bdd.nodes_held(Plain()) == 3
