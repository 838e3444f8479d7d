"""Run values bound from the state: a condition's residual at one step.

``bind`` replaces every run value of a condition (``input``, ``last("T")…``,
``outputs("T")``) with the literal the run holds, leaving a *residual* condition over the
call's arguments alone, or the first value the run does not have (``Undefined``: the tool
never succeeded, a key is missing, the value is of another kind), which refuses every call.
A tool's output that is a pydantic model is read as its fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ruleengine.conditions.evaluate import Undefined, fits, kind_text, literal_of
from ruleengine.conditions.terms import (
    Affix,
    All,
    AnyOf,
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
    Quantified,
    Scale,
    Term,
    text,
)
from ruleengine.conditions.types import Literal_, shown
from ruleengine.state import RunState, Step

__all__ = ["bind"]


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
            return Undefined(text(t), "does not exist: the tool never succeeded", no_call=True)
        if t.name not in step.arguments:
            return Undefined(text(t), "is missing from that call")
        found: object = step.arguments[t.name]
        return found
    assert isinstance(t, LastOut)
    step = _latest(state.steps, t.tool)
    if step is None:
        return Undefined(text(t), "does not exist: the tool never succeeded", no_call=True)
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
    """Every literal among the tool's successful outputs (a list output counts its items, a
    mapping its keys, as Python's ``in`` reads them)."""
    items: list[Literal_] = []
    for step in state.steps:
        if step.tool != t.tool or step.status != "ok":
            continue
        output = step.output
        if isinstance(output, Mapping):
            values: Sequence[object] = list(output)
        elif isinstance(output, list | tuple):
            values = output
        else:
            values = [output]
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
                if not fits(value, t.kind):
                    stack.append(
                        Undefined(text(inner), f"is `{shown(value)}`, not a {kind_text(t.kind)}")
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
                stack.append(Undefined(text(t), f"is `{shown(value)}`, not a plain value"))
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
        if isinstance(t, Quantified):
            return Quantified(t.every, t.name, t.of, go(t.body))
        return t

    bound = go(term)
    return stack[0] if stack else bound
