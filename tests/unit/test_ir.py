"""The IR builders: constant folding, flattening, reprs, the nesting limit, and their errors
(ruleengine.ir)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ruleengine import (
    FINAL_ANSWER,
    Expr,
    PolicyError,
    all_of,
    allowed,
    any_of,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
)
from ruleengine.ir import (
    FALSE,
    MAX_DEPTH,
    TRUE,
    And,
    AtLeast,
    AtMost,
    Const,
    Exactly,
    Implies,
    Not,
    Or,
    mentioned_tools,
    tool_name,
)

a, b, c = allowed("a"), allowed("b"), allowed("c")


class Named:
    def __init__(self, name: object) -> None:
        self.name = name


# -- atoms ------------------------------------------------------------------------------------


def test_atoms_compare_and_hash_by_value() -> None:
    assert allowed("a") == allowed("a")
    assert hash(allowed("a")) == hash(allowed("a"))
    assert allowed("a") != hidden("a")
    assert allowed("a") != forced("a")
    assert allowed("a") != allowed("b")
    assert len({allowed("a"), allowed("a"), hidden("a")}) == 2


def test_atoms_accept_objects_with_a_name() -> None:
    assert allowed(Named("search")) == allowed("search")
    assert hidden(Named("x")) == hidden("x")
    assert forced(Named("x")) == forced("x")
    assert tool_name(Named("t")) == "t"


@pytest.mark.parametrize("bad", ["", 3, None, Named(""), Named(7)])
def test_a_tool_must_be_a_name_or_have_one(bad: object) -> None:
    with pytest.raises(PolicyError):
        allowed(bad)  # type: ignore[arg-type]


def test_can_stop_mentions_final_answer() -> None:
    assert mentioned_tools(can_stop) == {FINAL_ANSWER}
    assert repr(can_stop) == "can_stop"


def test_reprs_read_like_the_builders() -> None:
    assert repr(allowed("a")) == "allowed('a')"
    assert repr(hidden("a")) == "hidden('a')"
    assert repr(forced("a")) == "forced('a')"
    assert repr(~a) == "~allowed('a')"
    assert repr(a & b) == "allowed('a') & allowed('b')"
    assert repr(a | ~b) == "allowed('a') | ~allowed('b')"
    assert repr((a | b) & c) == "(allowed('a') | allowed('b')) & allowed('c')"
    assert repr((a & b) | c) == "(allowed('a') & allowed('b')) | allowed('c')"
    assert repr(~(a & b)) == "~(allowed('a') & allowed('b'))"
    assert repr(~(a | b)) == "~(allowed('a') | allowed('b'))"
    assert repr(implies(a, ~can_stop)) == "implies(allowed('a'), ~can_stop)"
    assert repr(at_most(1, a, b, c)) == "at_most(1, allowed('a'), allowed('b'), allowed('c'))"
    assert repr(at_least(2, a, b, c)) == "at_least(2, allowed('a'), allowed('b'), allowed('c'))"
    assert repr(exactly(1, a, b)) == "exactly(1, allowed('a'), allowed('b'))"
    assert repr(TRUE) == "True" and repr(FALSE) == "False"


def test_a_formula_is_not_a_python_truth_value() -> None:
    with pytest.raises(PolicyError) as info:
        bool(a & b)
    assert info.value.hint is not None and "`&`" in info.value.hint
    with pytest.raises(PolicyError):
        _ = a and b


# -- and / or / not ----------------------------------------------------------------------------


def test_and_folds_constants() -> None:
    assert (a & True) == a
    assert (True & a) == a
    assert (a & False) == FALSE
    assert (False & a) == FALSE
    assert all_of() == TRUE
    assert all_of(True, True) == TRUE
    assert all_of(a) == a


def test_or_folds_constants() -> None:
    assert (a | False) == a
    assert (False | a) == a
    assert (a | True) == TRUE
    assert (True | a) == TRUE
    assert any_of() == FALSE
    assert any_of(False) == FALSE
    assert any_of(a) == a


def test_and_or_flatten_and_drop_duplicates() -> None:
    assert (a & b) & c == And((a, b, c))
    assert a & (b & c) == And((a, b, c))
    assert (a | b) | (c | a) == Or((a, b, c))
    assert a & a == a
    assert all_of(a, b, a) == And((a, b))
    # A disjunction inside a conjunction stays one argument.
    assert (a | b) & c == And((Or((a, b)), c))


def test_not_folds_constants_and_double_negation() -> None:
    assert ~~a == a
    assert ~TRUE == FALSE
    assert ~FALSE == TRUE
    assert ~(a & b) == Not(And((a, b)))
    assert isinstance(~a, Not)


def test_non_formula_operands_are_rejected() -> None:
    for bad in (3, None, "a", 1.0):
        with pytest.raises(PolicyError) as info:
            all_of(a, bad)  # type: ignore[arg-type]
        assert repr(bad) in info.value.message
    with pytest.raises(PolicyError):
        a | 1  # type: ignore[operator]


# -- implies ----------------------------------------------------------------------------------


def test_implies_folds_constants() -> None:
    assert implies(True, a) == a
    assert implies(False, a) == TRUE
    assert implies(a, True) == TRUE
    assert implies(a, False) == ~a
    assert implies(a, b) == Implies(a, b)


# -- cardinality ------------------------------------------------------------------------------


def test_at_most_folds() -> None:
    assert at_most(0, a, b) == ~a & ~b
    assert at_most(2, a, b) == TRUE
    assert at_most(5, a) == TRUE
    assert at_most(1, a, b, c) == AtMost(1, (a, b, c))
    # A constant true operand uses up one of the k; a false one is dropped.
    assert at_most(1, True, a, b) == ~a & ~b
    assert at_most(1, False, a, b) == AtMost(1, (a, b))
    assert at_most(0, True, a) == FALSE
    assert at_most(0) == TRUE


def test_at_least_folds() -> None:
    assert at_least(0, a, b) == TRUE
    assert at_least(3, a, b) == FALSE
    assert at_least(2, a, b) == a & b
    assert at_least(1, a, b) == a | b
    assert at_least(2, a, b, c) == AtLeast(2, (a, b, c))
    assert at_least(2, True, a, b) == a | b
    assert at_least(1, True, a) == TRUE
    assert at_least(1, False, False) == FALSE


def test_exactly_folds() -> None:
    assert exactly(0, a, b) == ~a & ~b
    assert exactly(2, a, b) == a & b
    assert exactly(3, a, b) == FALSE
    assert exactly(1, a, b) == Exactly(1, (a, b))
    assert exactly(1, True, a) == ~a
    assert exactly(0, True, a) == FALSE
    assert exactly(2, True, a, b) == Exactly(1, (a, b))
    assert exactly(0) == TRUE


@pytest.mark.parametrize("builder", [at_most, at_least, exactly])
@pytest.mark.parametrize("k", [-1, True, 1.5, "1", None])
def test_cardinality_needs_a_non_negative_integer(builder: object, k: object) -> None:
    with pytest.raises(PolicyError) as info:
        builder(k, a, b)  # type: ignore[operator]
    assert builder.__name__ in info.value.message  # type: ignore[attr-defined]
    assert repr(k) in info.value.message or str(k) in info.value.message


def test_cardinality_keeps_repeated_operands() -> None:
    # Unlike and/or, a repeated operand counts twice: at_most(1, a, a) means "not a".
    node = at_most(1, a, a, b)
    assert node == AtMost(1, (a, a, b))


# -- mentions ---------------------------------------------------------------------------------


def test_mentioned_tools_walks_every_node() -> None:
    expr = implies(a | hidden("h"), at_most(1, ~can_stop, exactly(1, b, c), allowed("d")))
    assert mentioned_tools(expr) == {"a", "h", FINAL_ANSWER, "b", "c", "d"}
    assert mentioned_tools(TRUE) == frozenset()
    assert mentioned_tools(forced("f")) == {"f"}


def test_every_builder_returns_an_expr() -> None:
    built = [all_of(), any_of(), implies(a, b), at_most(1, a, b, c), ~a, a & b, a | b]
    assert all(isinstance(x, Expr) for x in built)
    assert isinstance(all_of(), Const)


# -- how deep a formula may nest ----------------------------------------------------------------

SHAPES = {
    "implies": lambda f, i: implies(allowed("b"), f),
    "not-or": lambda f, i: ~(f | allowed("b")) if i % 2 else ~(f & allowed("b")),
    "at-most": lambda f, i: at_most(1, f, allowed("b")),
    "mixed": lambda f, i: (
        (f | allowed("b")) & (allowed("a") | can_stop) if i % 2 else implies(f, allowed("b"))
    ),
}


def deepest(shape: str) -> Expr:
    """The deepest formula of ``shape`` the limit lets one build."""
    formula, step = allowed("a"), 0
    while True:
        try:
            deeper = SHAPES[shape](formula, step)
        except PolicyError:
            return formula
        formula, step = deeper, step + 1


def within(frames: int, work: Callable[[], object]) -> object:
    """Run ``work`` under ``frames`` more Python frames (a caller deep in its own stack)."""
    return work() if frames == 0 else within(frames - 1, work)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_deepest_formula_works_everywhere_even_deep_in_a_stack(shape: str) -> None:
    from ruleengine import ConflictError, Policy, Reasoner, Rule, requirement

    formula = deepest(shape)
    assert MAX_DEPTH - 1 <= formula._depth <= MAX_DEPTH  # type: ignore[attr-defined]
    deep = requirement(name="deep")(lambda state: [formula])
    stuck = requirement(name="stuck")(
        lambda state: [
            Rule("a", allowed=False),
            Rule("b", allowed=False),
            Rule("final_answer", prevent_stop=True),
        ]
    )

    def everything() -> object:
        passed = Reasoner(["a", "b"], [deep]).decide()
        str(passed.explanation)
        with pytest.raises(ConflictError) as conflict:
            Reasoner(["a", "b"], [deep, stuck]).decide()
        str(conflict.value)
        report = Policy(["a", "b"], [deep, stuck]).check()
        report.model_dump_json()
        assert formula == deepest(shape) and hash(formula) == hash(deepest(shape))
        return repr(formula)

    assert within(300, everything)


def test_a_deeper_formula_is_a_policy_error_naming_the_limit() -> None:
    from ruleengine import Reasoner, requirement

    formula = allowed("a")
    with pytest.raises(PolicyError) as caught:
        for _ in range(1000):
            formula = implies(allowed("b"), formula)
    assert caught.value.message == (
        f"a formula is nested {MAX_DEPTH + 1} levels deep (`Implies` over a formula"
        f" {MAX_DEPTH} deep): the limit is {MAX_DEPTH}"
    )
    assert caught.value.hint is not None and "flatter" in caught.value.hint
    # built inside a requirement, the error names it
    at_limit = deepest("implies")
    too_deep = requirement(name="too-deep")(lambda state: [~at_limit | allowed("b")])
    assert at_limit._depth == MAX_DEPTH  # type: ignore[attr-defined]
    with pytest.raises(PolicyError, match=r"^requirement `too-deep`: a formula is nested"):
        Reasoner(["a", "b"], [too_deep]).decide()


def test_flat_conjunctions_do_not_count_as_depth() -> None:
    wide = all_of(*(allowed(f"t{i}") | hidden(f"u{i}") for i in range(5000)))
    assert wide._depth == 3  # type: ignore[attr-defined]
