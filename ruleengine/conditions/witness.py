"""Admissible arguments found by trying the conditions' own literals, before asking Z3.

Whether *some* arguments pass a tool's residual conditions is Z3's question, but most
conditions are passed by a value they name themselves: ``arg.recipient in ['A', 'B']`` by
``'A'``, ``arg.amount <= 80`` by ``80``, ``arg.id in input`` by the input's text. Z3's string
theory can take a tenth of a second on a substring of a long prompt, so the engine tries
such values first, evaluated concretely (exactly as the gate evaluates a call): a found
call is a proof of admissibility, and only when none passes does Z3 decide.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

from ruleengine.conditions.evaluate import holds
from ruleengine.conditions.terms import Arg, Const, IsNone, ListConst, Term, walk
from ruleengine.conditions.types import Parameters

__all__ = ["MAX_TRIES", "guess"]

MAX_TRIES = 256
"""Most calls tried (a bound on the cost: about a microsecond per condition per call)."""

_PER_PARAMETER = 12
"""Most values tried for one parameter."""


def guess(
    required: Sequence[Term], forbidden: Sequence[Term], parameters: Parameters
) -> dict[str, Any] | None:
    """A call that passes every ``required`` residual and no ``forbidden`` one, made of the
    values the conditions name (and a few around them), or ``None`` when none of the
    ``MAX_TRIES`` first such calls passes — which proves nothing: ask Z3 then.

    Deterministic (the values are tried in the order the conditions name them), and exact:
    a returned call passes the concrete evaluation the gate runs. Cost: at most
    ``MAX_TRIES`` evaluations of the conditions."""
    conditions = [*required, *forbidden]
    names: list[str] = []
    optional: set[str] = set()
    strings: list[str] = []
    numbers: list[int | Fraction] = []
    for term in conditions:
        for t in walk(term):
            if isinstance(t, Arg) and t.name not in names:
                names.append(t.name)
            elif isinstance(t, IsNone):
                optional.add(t.of.name)
                if t.of.name not in names:
                    names.append(t.of.name)
            elif isinstance(t, Const):
                _note(t.value, strings, numbers)
            elif isinstance(t, ListConst):
                for item in t.items:
                    _note(item, strings, numbers)
    if any(n not in parameters for n in names):
        return None
    choices = [
        list(_values(parameters[n].kind, parameters[n].choices, strings, numbers, n in optional))
        for n in names
    ]
    for tries, values in enumerate(itertools.product(*choices)):
        if tries >= MAX_TRIES:
            return None
        call = {n: v for n, v in zip(names, values, strict=True) if v is not None}
        if all(holds(t, call, parameters) is True for t in required) and all(
            holds(t, call, parameters) is False for t in forbidden
        ):
            return call
    return None


def _note(value: object, strings: list[str], numbers: list[int | Fraction]) -> None:
    if isinstance(value, str):
        if value not in strings:
            strings.append(value)
    elif isinstance(value, int | Fraction) and not isinstance(value, bool) and value not in numbers:
        numbers.append(value)


def _values(
    kind: str,
    choices: tuple[Any, ...] | None,
    strings: list[str],
    numbers: list[int | Fraction],
    optional: bool,
) -> Iterator[Any]:
    """The values tried for one parameter, most likely first, at most ``_PER_PARAMETER``."""
    out: list[Any] = []
    if optional:
        out.append(None)  # left out
    room = _PER_PARAMETER - 2 - len(out)  # the neutral values keep their places
    if choices is not None:
        out.extend(choices)
    elif kind == "string":
        out.extend([*strings[:room], "", "x"])
    elif kind == "boolean":
        out.extend([True, False])
    elif kind == "strings":
        out.extend([[], *([s] for s in strings)])
    elif kind in ("integer", "number"):
        near: list[int | Fraction] = []
        for n in numbers:
            if kind == "integer" and isinstance(n, Fraction) and n.denominator != 1:
                near.extend([int(n // 1), int(n // 1) + 1])
            else:
                near.extend([n, n + 1, n - 1])
        near = [*near[:room], 0, 1]
        for n in near:
            value = int(n) if kind == "integer" or Fraction(n).denominator == 1 else n
            if value not in out:
                out.append(value)
    seen: list[Any] = []
    for v in out:
        if not any(type(v) is type(s) and v == s for s in seen):
            seen.append(v)
    return iter(seen[:_PER_PARAMETER])
