"""``_validate``: one message style for every parameter check; bools are never numbers."""

from __future__ import annotations

import pytest

from ruleengine import PolicyError
from ruleengine import _validate as v

OWNER = "requirement `r`"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: v.integer(True, name="k", owner=OWNER),
            "requirement `r`: k=`True` must be an integer",
        ),
        (lambda: v.integer(1.0, name="k"), "k=`1.0` must be an integer"),
        (lambda: v.integer(-1, name="k"), "k=`-1` must not be negative"),
        (lambda: v.integer(0, name="k", least=1), "k=`0` must be at least 1"),
        (lambda: v.integer(9, name="k", most=8), "k=`9` must be at most 8"),
        (lambda: v.optional_integer("3", name="k"), "k=`'3'` must be an integer"),
        (lambda: v.number(False, name="t"), "t=`False` must be a number"),
        (lambda: v.number(0, name="t"), "t=`0` must be positive"),
        (lambda: v.number(float("inf"), name="t"), "t=`inf` must be finite"),
        (lambda: v.flag(1, name="f"), "f=`1` must be true or false"),
        (lambda: v.flag(None, name="f"), "f=`None` must be true or false"),
        (lambda: v.text(3, name="s"), "s=`3` must be text"),
        (lambda: v.text("", name="s"), "s must not be empty"),
        (lambda: v.one_of("x", ("a", "b"), name="m"), "m=`x` must be `a` or `b`"),
        (lambda: v.one_of([1], ("a",), name="m"), "m=`[1]` must be `a`"),
        (lambda: v.sequence("ab", name="l"), "l=`'ab'` must be a list"),
        (lambda: v.sequence({"a": 1}, name="l"), "l=`{'a': 1}` must be a list"),
        (lambda: v.sequence(5, name="l"), "l=`5` must be a list"),
        (lambda: v.callables([len, 2], name="c"), "c holds `2`, which is not callable"),
        (lambda: v.priority(0, owner=OWNER), "requirement `r`: priority=`0` must be at least 1"),
        (
            lambda: v.priority(2.5, owner=OWNER),
            "requirement `r`: priority=`2.5` must be an integer",
        ),
    ],
)
def test_each_check_names_the_parameter_and_its_value(call: object, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        call()  # type: ignore[operator]
    assert info.value.message == message


def test_good_values_come_back_as_they_are() -> None:
    assert v.integer(3, name="k") == 3
    assert v.optional_integer(None, name="k") is None
    assert v.number(2, name="t") == 2.0
    assert v.flag(False, name="f") is False
    assert v.text("", name="s", empty=True) == ""
    assert v.optional_text(None, name="s") is None
    assert v.one_of("a", ("a", "b"), name="m") == "a"
    assert v.sequence((x for x in "ab"), name="l") == ("a", "b")
    assert v.sequence({"b", "a"}, name="l") in {("a", "b"), ("b", "a")}
    assert v.callables(len, name="c") == (len,)
    assert v.callables([len, abs], name="c") == (len, abs)


def test_a_long_value_is_shortened_in_the_message() -> None:
    with pytest.raises(PolicyError) as info:
        v.integer("x" * 500, name="k")
    assert len(info.value.message) < 100
    assert info.value.message.endswith("...` must be an integer")


def test_priority_gives_its_hint() -> None:
    with pytest.raises(PolicyError) as info:
        v.priority(0, owner=None)
    assert info.value.hint == v.PRIORITY_HINT
