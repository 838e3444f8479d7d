"""Conditions on concrete values: a residual condition tested on a call's arguments.

``holds`` tests a *residual* condition (its run values bound: ``bind.py``) on a call's
arguments. A value that does not
exist — the tool never succeeded, a key is missing, the value is of another type, an argument
is missing — is ``Undefined``, and a condition that reads an undefined value refuses the call (it
fails closed), with a reason naming the value. Arguments are read as Python reads them, left
to right: ``and`` and ``or`` stop at the first part that decides, so
``arg.cc is None or arg.cc.endswith("@ours.com")`` never reads a missing ``cc``. (Run values
are bound before, by ``bind``: an undefined one refuses whatever the condition says.)

Values are compared exactly: integers as integers, other numbers as fractions (a float from
JSON as the decimal it prints as), booleans only with booleans (``True`` is not ``1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ruleengine.conditions.regex import python_pattern
from ruleengine.conditions.terms import (
    Affix,
    All,
    AnyOf,
    Arg,
    Arith,
    Cmp,
    Const,
    Expect,
    IsNone,
    Item,
    Len,
    ListConst,
    Matches,
    Member,
    Negation,
    Quantified,
    Scale,
    Term,
    text,
)
from ruleengine.conditions.types import Literal_, Parameters, _literal_text, literal_kind

__all__ = ["Undefined", "fits", "holds", "kind_text", "literal_of", "value_kind"]


@dataclass(frozen=True, slots=True)
class Undefined:
    """A value a condition needs and the run or the call does not have."""

    value: str
    """The value, as the condition writes it (``last("lookup_order").output.price``)."""
    why: str
    """What is wrong with it (``was never called successfully``, ``is "12", not a number``)."""
    no_call: bool = False
    """Whether the run has no successful call of the tool at all (rather than a call without
    the value): what a history of tool names alone, as the static checker explores, can
    tell."""

    def __str__(self) -> str:
        return f"`{self.value}` {self.why}"


def value_kind(value: object) -> str | None:
    """The kind of a concrete value (``None``: none a condition can use): a literal's, or
    ``strings`` for a list of strings."""
    kind = literal_kind(value)
    if kind is not None:
        return kind
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return "strings"
    return None


def literal_of(value: object) -> Literal_ | tuple[str, ...] | None:
    """A concrete value as a condition's literal (floats exact, as they print), or None."""
    if isinstance(value, bool | int | str | Fraction):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return Fraction(repr(value))
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def fits(value: object, kind: str) -> bool:
    got = value_kind(value)
    if got is None or (isinstance(value, float) and literal_of(value) is None):
        return False
    return got == kind or (kind == "number" and got == "integer")


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def kind_text(kind: str) -> str:
    return {"strings": "list of strings", "integer": "integer"}.get(kind, kind)


class _Missing(Exception):
    def __init__(self, undefined: Undefined) -> None:
        self.undefined = undefined


def holds(term: Term, arguments: Mapping[str, Any], parameters: Parameters) -> bool | Undefined:
    """Whether the residual ``term`` (no run values left: see ``bind``) holds for a call with
    ``arguments``; ``Undefined`` when it needs an argument the call lacks, or one whose value
    is not of its parameter's type."""
    try:
        value = _Evaluator(arguments, parameters).value(term)
    except _Missing as exc:
        return exc.undefined
    assert isinstance(value, bool)
    return value


class _Evaluator:
    def __init__(self, arguments: Mapping[str, Any], parameters: Parameters) -> None:
        self.arguments = arguments
        self.parameters = parameters
        self.items: dict[str, str] = {}

    def value(self, t: Term) -> Any:
        if isinstance(t, Const):
            return t.value
        if isinstance(t, ListConst):
            return t.items
        if isinstance(t, Arg):
            return self.argument(t)
        if isinstance(t, Expect):
            return self.value(t.of)
        if isinstance(t, Len):
            return len(self.value(t.of))
        if isinstance(t, Arith):
            left, right = self.value(t.left), self.value(t.right)
            return left + right if t.op == "+" else left - right
        if isinstance(t, Scale):
            out = t.factor * self.value(t.of)
            return out.numerator if out.denominator == 1 and isinstance(out, Fraction) else out
        if isinstance(t, Cmp):
            return _compare(t.op, self.value(t.left), self.value(t.right))
        if isinstance(t, Member):
            item, container = self.value(t.item), self.value(t.container)
            if isinstance(container, str):
                found = item in container
            else:
                found = any(_equal(item, c) for c in container)
            return found != t.negated
        if isinstance(t, Affix):
            of, affix = self.value(t.of), self.value(t.affix)
            return of.startswith(affix) if t.kind == "startswith" else of.endswith(affix)
        if isinstance(t, Matches):
            return python_pattern(t.pattern).fullmatch(self.value(t.of)) is not None
        if isinstance(t, IsNone):
            return (self.arguments.get(t.of.name) is None) != t.negated
        if isinstance(t, Item):
            return self.items[t.name]
        if isinstance(t, Quantified):
            return self.quantified(t)
        # Left to right, as Python reads them: the first part that decides ends the test, so
        # an argument the rest would read is not read (and a missing one does not refuse).
        if isinstance(t, All):
            return all(self.value(i) for i in t.items)
        if isinstance(t, AnyOf):
            return any(self.value(i) for i in t.items)
        if isinstance(t, Negation):
            return not self.value(t.of)
        raise AssertionError(f"a run value left in a residual: {text(t)}")

    def quantified(self, t: Quantified) -> bool:
        """``all``/``any`` of the body over the list's items, stopping where it is decided."""
        for item in self.argument(t.of):
            self.items[t.name] = item
            if bool(self.value(t.body)) != t.every:
                return not t.every
        return t.every

    def argument(self, t: Arg) -> Any:
        if t.name not in self.arguments or self.arguments[t.name] is None:
            raise _Missing(Undefined(text(t), "is missing from the call"))
        value = self.arguments[t.name]
        param = self.parameters.get(t.name)
        kind = param.kind if param is not None else value_kind(value)
        if kind is None or not fits(value, kind):
            shown = kind_text(kind) if kind else "value a condition can use"
            raise _Missing(Undefined(text(t), f"is `{_shown(value)}`, not a {shown}"))
        literal = literal_of(value)
        choices = param.choices if param is not None else None
        if choices is not None and not any(_equal(literal, c) for c in choices):
            listed = ", ".join(_literal_text(c) for c in choices)
            raise _Missing(Undefined(text(t), f"is `{_shown(value)}`, not one of {listed}"))
        return literal


def _equal(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)
