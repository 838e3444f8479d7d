"""A tool's JSON Schema narrowed by its conditions, where JSON Schema can say them.

When a tool is forced and the server decodes against a schema (``response_format``, strict
tools), sending the schema narrowed by the tool's residual conditions lets constrained
decoding produce only admissible arguments. Only what JSON Schema says exactly is used — a
bound on a number (``minimum``, ``exclusiveMaximum``…), a fixed value or a list of them
(``const``, ``enum``), a bound on a string's length (``minLength``, ``maxLength``), a full
match (``pattern``, for patterns whose characters lie in the Basic Multilingual Plane) — from
the ``allow_if`` conditions that are a conjunction of such tests on one argument and a
literal. Everything else is left to the gate, which tests every call anyway: a narrowed schema
is a help to the model, never the check.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from ruleengine._base_errors import PolicyError
from ruleengine.conditions.admission import ArgCheck
from ruleengine.conditions.evaluate import Undefined
from ruleengine.conditions.regex import AnyChar, Chars, Node, Repeat, Seq
from ruleengine.conditions.terms import (
    All,
    Arg,
    Cmp,
    Const,
    Expect,
    Len,
    ListConst,
    Matches,
    Member,
    Term,
)

__all__ = ["narrowed"]

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def narrowed(schema: Mapping[str, Any], checks: Iterable[ArgCheck]) -> dict[str, Any]:
    """``schema`` (a tool's arguments: an object) with what the ``allow_if`` checks say of its
    properties added; a copy, ``schema`` itself is untouched."""
    if not isinstance(schema, Mapping):
        raise PolicyError(f"narrowed: schema=`{schema!r:.60}` is not a JSON schema (a mapping)")
    checks = list(checks)
    if not all(isinstance(c, ArgCheck) for c in checks):
        bad = next(c for c in checks if not isinstance(c, ArgCheck))
        raise PolicyError(f"narrowed: `{bad!r:.60}` is not an `ArgCheck`")
    out = copy.deepcopy(dict(schema))
    properties = out.get("properties")
    if not isinstance(properties, dict):
        return out
    for check in checks:
        if check.kind != "allow_if" or isinstance(check.residual, Undefined):
            continue
        for atom in _conjuncts(check.residual):
            _apply(atom, properties)
    return out


def _conjuncts(term: Term) -> list[Term]:
    if isinstance(term, All):
        return [a for item in term.items for a in _conjuncts(item)]
    return [term]


def _plain(t: Term) -> Term:
    return t.of if isinstance(t, Expect) else t


def _apply(atom: Term, properties: dict[str, Any]) -> None:
    if isinstance(atom, Cmp):
        left, right, op = _plain(atom.left), _plain(atom.right), atom.op
        if isinstance(left, Const) and not isinstance(right, Const):
            left, right, op = right, left, _FLIP[op]
        if not isinstance(right, Const):
            return
        if isinstance(left, Arg):
            _bound(properties.get(left.name), op, right.value)
        elif isinstance(left, Len) and isinstance(_plain(left.of), Arg):
            _length(properties.get(_plain(left.of).name), op, right.value)  # type: ignore[union-attr]
    elif isinstance(atom, Member) and not atom.negated:
        item, container = _plain(atom.item), _plain(atom.container)
        if isinstance(item, Arg) and isinstance(container, ListConst) and container.items:
            _enum(properties.get(item.name), list(container.items))
    elif isinstance(atom, Matches):
        of = _plain(atom.of)
        pattern = _ecma(atom.pattern.tree)
        target = properties.get(of.name) if isinstance(of, Arg) else None
        if pattern is not None and isinstance(target, dict) and "pattern" not in target:
            target["pattern"] = f"^(?:{pattern})$"


def _json(value: object) -> Any:
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else float(value)
    return value


def _bound(prop: object, op: str, value: object) -> None:
    if not isinstance(prop, dict):
        return
    if op == "==":
        _enum(prop, [value])
        return
    if isinstance(value, bool) or not isinstance(value, int | Fraction):
        return
    if isinstance(value, Fraction) and value.denominator != 1 and float(value) != value:
        return  # not exactly a JSON number: leave it to the gate
    key = {"<": "exclusiveMaximum", "<=": "maximum", ">": "exclusiveMinimum", ">=": "minimum"}
    if op not in key:
        return
    name = key[op]
    new = _json(value)
    old = prop.get(name)
    tighter = min if "aximum" in name else max
    prop[name] = new if old is None else tighter(old, new)


def _length(prop: object, op: str, value: object) -> None:
    if not isinstance(prop, dict) or isinstance(value, bool) or not isinstance(value, int):
        return
    bounds = {"<": ("maxLength", value - 1), "<=": ("maxLength", value)}
    bounds |= {">": ("minLength", value + 1), ">=": ("minLength", value)}
    if op == "==":
        _length(prop, "<=", value)
        _length(prop, ">=", value)
        return
    if op not in bounds:
        return
    name, limit = bounds[op]
    if limit < 0:
        return
    old = prop.get(name)
    prop[name] = limit if old is None else (min if name == "maxLength" else max)(old, limit)


def _enum(prop: object, values: list[object]) -> None:
    if not isinstance(prop, dict):
        return
    values = [_json(v) for v in values]
    old = prop.get("enum")
    if isinstance(old, list):
        values = [v for v in values if v in old]
    prop["enum"] = values


def _ecma(node: Node) -> str | None:
    """The pattern in ECMA-262 syntax (JSON Schema's), or None past the BMP."""
    if isinstance(node, Chars):
        if any(high > 0xFFFF for _, high in node.ranges):
            return None
        body = "".join(
            f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}"
            for low, high in node.ranges
        )
        if not body:
            return "[\\s\\S]" if node.negated else "[^\\s\\S]"
        return f"[{'^' if node.negated else ''}{body}]"
    if isinstance(node, AnyChar):
        return "[\\s\\S]"
    if isinstance(node, Seq):
        parts = [_ecma(i) for i in node.items]
        return None if None in parts else "(?:" + "".join(parts) + ")"  # type: ignore[arg-type]
    if isinstance(node, Repeat):
        inner = _ecma(node.item)
        if inner is None:
            return None
        most = "" if node.most is None else str(node.most)
        return f"(?:{inner}){{{node.least},{most}}}"
    options = [_ecma(o) for o in node.options]
    return None if None in options else "(?:" + "|".join(options) + ")"  # type: ignore[arg-type]
