"""The terms of the condition language, and how they print.

A condition is a boolean *term* over the proposed call's arguments (``Arg``: ``arg.NAME``),
the run's input text (``Input``), the latest successful call of a tool (``LastArg``:
``last("T").arguments.NAME``; ``LastOut``: ``last("T").output.KEY…``) and all of its outputs
(``Outputs``), with literals, comparisons, ``+ -``, ``*`` by a constant, ``and or not``,
``in``, ``len``, ``startswith``/``endswith``, ``matches`` and ``arg.NAME is None``
(``IsNone``). Terms are immutable and hashable; ``text`` prints one as the text that parses
back to it (``parse.py``), and ``walk`` visits one without recursion.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

from ruleengine._base_errors import PolicyError
from ruleengine.conditions.regex import Pattern
from ruleengine.conditions.types import Literal_, _literal_text, shown

__all__ = [
    "MAX_TERM_SIZE",
    "Affix",
    "All",
    "AnyOf",
    "Arg",
    "Arith",
    "Cmp",
    "Const",
    "Expect",
    "Input",
    "IsNone",
    "Item",
    "LastArg",
    "LastOut",
    "Len",
    "ListConst",
    "Matches",
    "Member",
    "Negation",
    "Outputs",
    "Quantified",
    "Scale",
    "Term",
    "children",
    "literal",
    "run_values",
    "scaled",
    "text",
    "walk",
]

MAX_TERM_SIZE = 2000
"""Most nodes a condition may have (a longer one is an error, not a slow gate)."""

# -- terms --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Const:
    value: Literal_


@dataclass(frozen=True, slots=True)
class ListConst:
    items: tuple[Literal_, ...]


@dataclass(frozen=True, slots=True)
class Arg:
    name: str


@dataclass(frozen=True, slots=True)
class Input:
    pass


@dataclass(frozen=True, slots=True)
class LastArg:
    tool: str
    name: str


@dataclass(frozen=True, slots=True)
class LastOut:
    tool: str
    keys: tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Outputs:
    tool: str


@dataclass(frozen=True, slots=True)
class Expect:
    """A run value (dynamic) that must be of ``kind`` where it is used; ``check`` wraps each
    one, and a value of another kind is undefined at run time."""

    of: Term
    kind: str


@dataclass(frozen=True, slots=True)
class Len:
    of: Term


@dataclass(frozen=True, slots=True)
class Arith:
    op: str  # "+" or "-"
    left: Term
    right: Term


@dataclass(frozen=True, slots=True)
class Scale:
    factor: Fraction
    of: Term


@dataclass(frozen=True, slots=True)
class Cmp:
    op: str  # == != < <= > >=
    left: Term
    right: Term


@dataclass(frozen=True, slots=True)
class Member:
    item: Term
    container: Term
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Affix:
    kind: str  # "startswith" or "endswith"
    of: Term
    affix: Term


@dataclass(frozen=True, slots=True)
class Matches:
    of: Term
    pattern: Pattern


@dataclass(frozen=True, slots=True)
class IsNone:
    """``arg.NAME is None`` (``is not None`` when ``negated``): whether the call leaves the
    argument out (or gives it as ``None``). It reads no value, so it is never undefined."""

    of: Arg
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Item:
    """The item a ``Quantified`` condition is testing (``r`` in ``all(… for r in …)``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Quantified:
    """``all(BODY for NAME in arg.LIST)`` (``any(…)`` when not ``every``): ``body`` holds
    for every (some) item of a list-of-strings argument."""

    every: bool
    name: str
    of: Arg
    body: Term


@dataclass(frozen=True, slots=True)
class All:
    items: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class Negation:
    of: Term


Term: TypeAlias = (
    "Const | ListConst | Arg | Input | LastArg | LastOut | Outputs | Expect | Len | Arith "
    "| Scale | Cmp | Member | Affix | Matches | IsNone | Item | Quantified | All | AnyOf "
    "| Negation"
)

_RUN_VALUES = (Input, LastArg, LastOut, Outputs)

# -- printing -----------------------------------------------------------------------------

_PRECEDENCE = {
    AnyOf: 1,
    All: 2,
    Negation: 3,
    Cmp: 4,
    Member: 4,
    IsNone: 4,
    Arith: 5,
    Scale: 6,
}


def text(term: Term) -> str:
    """``term`` in the language's syntax (it parses back to ``term``, ``Expect`` aside)."""
    return _text(term, 0)


def _wrap(inner: str, own: int, outer: int) -> str:
    return f"({inner})" if own <= outer else inner


def _text(t: Term, outer: int) -> str:
    own = _PRECEDENCE.get(type(t), 9)
    if isinstance(t, Const):
        if isinstance(t.value, Fraction) and t.value.denominator != 1:
            shown = _literal_text(t.value)
            return shown if "/" not in shown else f"({t.value.numerator} / {t.value.denominator})"
        return _literal_text(t.value)
    if isinstance(t, ListConst):
        return "[" + ", ".join(_text(Const(i), 0) for i in t.items) + "]"
    if isinstance(t, Arg):
        return f"arg.{t.name}"
    if isinstance(t, Input):
        return "input"
    if isinstance(t, LastArg):
        return f"last({t.tool!r}).arguments.{t.name}"
    if isinstance(t, LastOut):
        keys = "".join(
            f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{k!r}]" for k in t.keys
        )
        return f"last({t.tool!r}).output{keys}"
    if isinstance(t, Outputs):
        return f"outputs({t.tool!r})"
    if isinstance(t, Expect):
        return _text(t.of, outer)
    if isinstance(t, Len):
        return f"len({_text(t.of, 0)})"
    if isinstance(t, Arith):
        return _wrap(f"{_text(t.left, own - 1)} {t.op} {_text(t.right, own)}", own, outer)
    if isinstance(t, Scale):
        return _wrap(f"{_text(Const(t.factor), own)} * {_text(t.of, own)}", own, outer)
    if isinstance(t, Cmp):
        return _wrap(f"{_text(t.left, own)} {t.op} {_text(t.right, own)}", own, outer)
    if isinstance(t, Member):
        op = "not in" if t.negated else "in"
        return _wrap(f"{_text(t.item, own)} {op} {_text(t.container, own)}", own, outer)
    if isinstance(t, Affix):
        return f"{_text(t.of, 8)}.{t.kind}({_text(t.affix, 0)})"
    if isinstance(t, Matches):
        return f"matches({_text(t.of, 0)}, {t.pattern.source!r})"
    if isinstance(t, Item):
        return t.name
    if isinstance(t, Quantified):
        function = "all" if t.every else "any"
        return f"{function}({_text(t.body, 0)} for {t.name} in {_text(t.of, 0)})"
    if isinstance(t, IsNone):
        op = "is not None" if t.negated else "is None"
        return _wrap(f"{_text(t.of, own)} {op}", own, outer)
    if isinstance(t, All):
        return _wrap(" and ".join(_text(i, own) for i in t.items), own, outer)
    if isinstance(t, AnyOf):
        return _wrap(" or ".join(_text(i, own) for i in t.items), own, outer)
    return _wrap(f"not {_text(t.of, own)}", own, outer)


def children(t: Term) -> tuple[Term, ...]:
    """The terms directly inside ``t``."""
    if isinstance(t, Expect | Len | Scale | Negation):
        return (t.of,)
    if isinstance(t, Arith | Cmp):
        return (t.left, t.right)
    if isinstance(t, Member):
        return (t.item, t.container)
    if isinstance(t, Affix):
        return (t.of, t.affix)
    if isinstance(t, Matches | IsNone):
        return (t.of,)
    if isinstance(t, All | AnyOf):
        return t.items
    if isinstance(t, Quantified):
        return (t.of, t.body)
    return ()


def walk(t: Term) -> Iterable[Term]:
    """Every term inside ``t``, ``t`` first (iteratively: no recursion limit)."""
    stack = [t]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def literal(value: object) -> Literal_:
    if isinstance(value, bool | int | str | Fraction):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PolicyError(f"`{value}` is not a number a condition can compare")
        return Fraction(repr(value))
    raise PolicyError(
        f"`{shown(value)}` is not a literal a condition can hold",
        hint="literals are strings, integers, numbers and booleans, or lists of them",
    )


def scaled(factor: Term, of: Term, op: str) -> Term:
    if isinstance(factor, Const) and not isinstance(factor.value, bool | str):
        return Scale(Fraction(factor.value), of)
    if isinstance(of, Const) and not isinstance(of.value, bool | str):
        return Scale(Fraction(of.value), factor)
    raise PolicyError(
        f"`{text(factor)} {op} {text(of)}`: `*` needs a number literal on one side",
        hint="conditions stay linear: multiply by constants only",
    )


def run_values(term: Term) -> list[Term]:
    """The run values ``term`` reads (``input``, ``last``, ``outputs``), in order."""
    return [t for t in walk(term) if isinstance(t, _RUN_VALUES)]
