"""``_search``: QuickXplain and the greedy lexicographic preference, against brute force."""

from __future__ import annotations

from itertools import product

from hypothesis import given
from hypothesis import strategies as st

from ruleengine._search import prefer, quickxplain

# A toy oracle: a set of literals (bit 2i: x_i true, bit 2i+1: x_i false) is satisfiable
# when it assigns no variable both ways and satisfies every clause of a small CNF.
N = 4


def literal(var: int, value: bool) -> int:
    return 1 << (2 * var + (0 if value else 1))


clauses = st.lists(
    st.lists(st.tuples(st.integers(0, N - 1), st.booleans()), min_size=1, max_size=3),
    max_size=5,
)


def oracle(cnf: list[list[tuple[int, bool]]]):
    def satisfiable(mask: int) -> bool:
        for values in product((True, False), repeat=N):
            if any(mask & literal(v, not values[v]) for v in range(N)):
                continue
            if all(any(values[v] == b for v, b in clause) for clause in cnf):
                return True
        return False

    return satisfiable


@given(cnf=clauses, order=st.permutations([(v, b) for v in range(N) for b in (True, False)]))
def test_prefer_is_the_lexicographically_best_sequence(cnf, order) -> None:
    satisfiable = oracle(cnf)
    if not satisfiable(0):
        return
    choices = [(literal(v, b), literal(v, not b)) for v, b in order[:N]]
    fixed, refused = prefer(satisfiable, 0, choices)
    # Brute force: the first choice vector (True = preferred) in lexicographic order, best
    # first, whose masks are satisfiable together.
    for picks in product((True, False), repeat=len(choices)):
        mask = 0
        for (preferred, fallback), pick in zip(choices, picks, strict=True):
            mask |= preferred if pick else fallback
        if satisfiable(mask):
            break
    expected_refused = sum(1 << i for i, pick in enumerate(picks) if not pick)
    assert refused == expected_refused
    assert satisfiable(fixed)


@given(cnf=clauses, size=st.integers(1, 6), data=st.data())
def test_quickxplain_finds_a_minimal_unsat_subset(cnf, size, data) -> None:
    satisfiable = oracle(cnf)
    pool = [(v, b) for v in range(N) for b in (True, False)]
    candidates = data.draw(
        st.lists(st.sampled_from(pool), min_size=size, max_size=size, unique=True)
    )
    mask_of = {c: literal(*c) for c in candidates}
    everything = 0
    for m in mask_of.values():
        everything |= m
    if satisfiable(everything) or not satisfiable(0):
        return  # QuickXplain needs an unsat set over a satisfiable background
    core = quickxplain(candidates, mask_of, satisfiable)
    union = 0
    for c in core:
        union |= mask_of[c]
    assert not satisfiable(union)
    for c in core:
        rest = 0
        for d in core:
            if d != c:
                rest |= mask_of[d]
        assert satisfiable(rest), f"{c} is not needed in {core}"
    # Deterministic: the same candidates in the same order give the same core.
    assert quickxplain(candidates, mask_of, satisfiable) == core


def test_quickxplain_prefers_the_earliest_members() -> None:
    # Two disjoint cores: {a, b} and {c, d}; the earlier one is found.
    masks = {"a": 1, "b": 2, "c": 4, "d": 8}

    def satisfiable(mask: int) -> bool:
        return mask & 3 != 3 and mask & 12 != 12

    assert quickxplain(["a", "b", "c", "d"], masks, satisfiable) == ["a", "b"]
    assert quickxplain(["c", "d", "a", "b"], masks, satisfiable) == ["c", "d"]
