"""Conditions on concrete values: run values bound from the state, a call's arguments tested.

``bind`` replaces every run value of a condition (``input``, ``last("T")…``,
``outputs("T")``) with the literal the run holds, leaving a *residual* condition over the
call's arguments alone; ``holds`` tests a residual on a call's arguments. A value that does not
exist — the tool never succeeded, a key is missing, the value is of another type, an argument
is missing — is ``Undefined``, and a condition with an undefined value refuses the call (it
fails closed, whatever the condition says), with a reason naming the value.

Values are compared exactly: integers as integers, other numbers as fractions (a float from
JSON as the decimal it prints as), booleans only with booleans (``True`` is not ``1``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    Input,
    LastArg,
    LastOut,
    Len,
    ListConst,
    Matches,
    Member,
    Negation,
    Outputs,
    Scale,
    Term,
    text,
)
from ruleengine.conditions.types import Literal_, Parameters, _literal_text
from ruleengine.state import RunState, Step

__all__ = ["Undefined", "bind", "holds", "literal_of", "value_kind"]


@dataclass(frozen=True, slots=True)
class Undefined:
    """A value a condition needs and the run or the call does not have."""

    value: str
    """The value, as the condition writes it (``last("lookup_order").output.price``)."""
    why: str
    """What is wrong with it (``was never called successfully``, ``is "12", not a number``)."""

    def __str__(self) -> str:
        return f"`{self.value}` {self.why}"


def value_kind(value: object) -> str | None:
    """The kind of a concrete value (``None``: none a condition can use)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float | Fraction):
        return "number"
    if isinstance(value, str):
        return "string"
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


def _fits(value: object, kind: str) -> bool:
    got = value_kind(value)
    if got is None or (isinstance(value, float) and literal_of(value) is None):
        return False
    return got == kind or (kind == "number" and got == "integer")


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _kind_text(kind: str) -> str:
    return {"strings": "list of strings", "integer": "integer"}.get(kind, kind)


def _latest(steps: Sequence[Step], tool: str) -> Step | None:
    for step in reversed(steps):
        if step.tool == tool and step.status == "ok":
            return step
    return None


def _run_value(t: Term, state: RunState) -> object | Undefined:
    """The concrete value of one run value (not yet checked against a kind)."""
    if isinstance(t, Input):
        if state.input is None:
            return Undefined("input", "is not known (the run was given no input)")
        return state.input
    if isinstance(t, LastArg):
        step = _latest(state.steps, t.tool)
        if step is None:
            return Undefined(text(t), "does not exist: the tool never succeeded")
        if t.name not in step.arguments:
            return Undefined(text(t), "is missing from that call")
        found: object = step.arguments[t.name]
        return found
    assert isinstance(t, LastOut)
    step = _latest(state.steps, t.tool)
    if step is None:
        return Undefined(text(t), "does not exist: the tool never succeeded")
    value: object = _plain(step.output)
    for key in t.keys:
        value = _step_into(value, key)
        if value is _ABSENT:
            return Undefined(text(t), f"does not exist: the output has no `{key}`")
    found = value
    return found


_ABSENT = object()


def _step_into(value: object, key: str | int) -> object:
    """``value[key]`` for a mapping's key or a list's index, else ``_ABSENT``."""
    if isinstance(key, str):
        if isinstance(value, Mapping) and key in value:
            return _plain(value[key])
        return _ABSENT
    if isinstance(value, list | tuple) and -len(value) <= key < len(value):
        return _plain(value[key])
    return _ABSENT


def _plain(value: object) -> object:
    """A tool's output as plain data (a pydantic model as its fields)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="python")
    return value


def _outputs(t: Outputs, state: RunState) -> ListConst:
    """Every literal among the tool's successful outputs (a list output counts its items)."""
    items: list[Literal_] = []
    for step in state.steps:
        if step.tool != t.tool or step.status != "ok":
            continue
        values = step.output if isinstance(step.output, list | tuple) else [step.output]
        for value in values:
            literal = literal_of(value)
            if literal is not None and not isinstance(literal, tuple):
                items.append(literal)
    return ListConst(tuple(items))


def bind(term: Term, state: RunState) -> Term | Undefined:
    """``term`` with each run value replaced by what ``state`` holds, or the first value it
    needs that is undefined."""
    stack: list[Undefined] = []

    def go(t: Term) -> Term:
        if stack:
            return t
        if isinstance(t, Expect):
            inner = t.of
            if isinstance(inner, Input | LastArg | LastOut):
                value = _run_value(inner, state)
                if isinstance(value, Undefined):
                    stack.append(value)
                    return t
                if not _fits(value, t.kind):
                    stack.append(
                        Undefined(text(inner), f"is `{_shown(value)}`, not a {_kind_text(t.kind)}")
                    )
                    return t
                literal = literal_of(value)
                assert literal is not None
                if isinstance(literal, tuple):
                    return ListConst(literal)
                return Const(literal)
            return Expect(go(inner), t.kind)
        if isinstance(t, Input | LastArg | LastOut):
            # Only where ``check`` left it unwrapped: a typed tool's argument of known kind.
            value = _run_value(t, state)
            if isinstance(value, Undefined):
                stack.append(value)
                return t
            literal = literal_of(value)
            if literal is None:
                stack.append(Undefined(text(t), f"is `{_shown(value)}`, not a plain value"))
                return t
            return ListConst(literal) if isinstance(literal, tuple) else Const(literal)
        if isinstance(t, Outputs):
            return _outputs(t, state)
        if isinstance(t, Len):
            return Len(go(t.of))
        if isinstance(t, Arith):
            return Arith(t.op, go(t.left), go(t.right))
        if isinstance(t, Scale):
            return Scale(t.factor, go(t.of))
        if isinstance(t, Cmp):
            return Cmp(t.op, go(t.left), go(t.right))
        if isinstance(t, Member):
            return Member(go(t.item), go(t.container), t.negated)
        if isinstance(t, Affix):
            return Affix(t.kind, go(t.of), go(t.affix))
        if isinstance(t, Matches):
            return Matches(go(t.of), t.pattern)
        if isinstance(t, All):
            return All(tuple(go(i) for i in t.items))
        if isinstance(t, AnyOf):
            return AnyOf(tuple(go(i) for i in t.items))
        if isinstance(t, Negation):
            return Negation(go(t.of))
        return t

    bound = go(term)
    return stack[0] if stack else bound


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
        if isinstance(t, All):
            values = [self.value(i) for i in t.items]  # every part: an undefined one refuses
            return all(values)
        if isinstance(t, AnyOf):
            values = [self.value(i) for i in t.items]
            return any(values)
        if isinstance(t, Negation):
            return not self.value(t.of)
        raise AssertionError(f"a run value left in a residual: {text(t)}")

    def argument(self, t: Arg) -> Any:
        if t.name not in self.arguments or self.arguments[t.name] is None:
            raise _Missing(Undefined(text(t), "is missing from the call"))
        value = self.arguments[t.name]
        param = self.parameters.get(t.name)
        kind = param.kind if param is not None else value_kind(value)
        if kind is None or not _fits(value, kind):
            shown = _kind_text(kind) if kind else "value a condition can use"
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
