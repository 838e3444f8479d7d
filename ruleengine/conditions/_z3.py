"""Conditions in Z3: whether some arguments satisfy a tool's conditions, and which clash.

The residual conditions of one tool at one step (``evaluate.bind``: no run values left)
become one Z3 formula over one variable per parameter — ``Int`` for integers, ``Real`` for
numbers (exact rationals), ``String`` for strings, ``Bool``, a sequence of strings for a list
of strings — with an enum's choices as a constraint. ``satisfiable`` asks whether some
arguments satisfy every ``allow_if`` and no ``deny_if`` (and returns such arguments);
``clash`` names a minimal set of them that no arguments can satisfy together (QuickXplain over
*sat or unsat?*, so the same conditions give the same set).

This is the one module of ``ruleengine.conditions`` that imports z3. Z3's strings hold
characters up to U+2FFFF: a class or a literal past it is cut there (the concrete evaluation
in ``evaluate.py``, which the gate uses for every call, has no such limit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import z3

from ruleengine._search import quickxplain
from ruleengine.conditions.regex import AnyChar, Chars, Node, Repeat, Seq
from ruleengine.conditions.terms import (
    Affix,
    All,
    AnyOf,
    Arg,
    Arith,
    Cmp,
    Const,
    Expect,
    Len,
    ListConst,
    Matches,
    Member,
    Negation,
    Scale,
    Term,
    text,
)
from ruleengine.conditions.types import Literal_, Parameters

__all__ = ["TIMEOUT_MS", "clash", "satisfiable"]

TIMEOUT_MS = 2000
"""How long one question may take (an unknown answer is ``None``, never a guess)."""

_TOP = 0x2FFFF
_STRINGS = z3.SeqSort(z3.StringSort())
_RE = z3.ReSort(z3.StringSort())


class _Encoder:
    def __init__(self, parameters: Parameters, ctx: z3.Context) -> None:
        self.parameters = parameters
        self.ctx = ctx
        self.vars: dict[str, z3.ExprRef] = {}

    def var(self, name: str) -> z3.ExprRef:
        found = self.vars.get(name)
        if found is not None:
            return found
        kind = self.parameters[name].kind
        label = f"arg.{name}"
        if kind == "string":
            v: z3.ExprRef = z3.String(label, self.ctx)
        elif kind == "integer":
            v = z3.Int(label, self.ctx)
        elif kind == "number":
            v = z3.Real(label, self.ctx)
        elif kind == "boolean":
            v = z3.Bool(label, self.ctx)
        else:
            v = z3.Const(label, z3.SeqSort(z3.StringSort(self.ctx)))
        self.vars[name] = v
        return v

    def domain(self) -> list[z3.BoolRef]:
        """The enums' choices, for the variables the conditions use."""
        out = []
        for name, v in self.vars.items():
            choices = self.parameters[name].choices
            if choices is not None:
                out.append(z3.Or([v == self.literal(c) for c in choices]))
        return out

    def literal(self, value: Literal_ | tuple[str, ...]) -> z3.ExprRef:
        ctx = self.ctx
        if isinstance(value, bool):
            return z3.BoolVal(value, ctx)
        if isinstance(value, int):
            return z3.IntVal(value, ctx)
        if isinstance(value, Fraction):
            return z3.RealVal(f"{value.numerator}/{value.denominator}", ctx)
        if isinstance(value, tuple):
            units = [z3.Unit(z3.StringVal(v, ctx)) for v in value]
            if not units:
                return z3.Empty(z3.SeqSort(z3.StringSort(ctx)))
            return units[0] if len(units) == 1 else z3.Concat(*units)
        return z3.StringVal(value, ctx)

    def value(self, t: Term) -> z3.ExprRef:
        if isinstance(t, Const):
            return self.literal(t.value)
        if isinstance(t, Arg):
            return self.var(t.name)
        if isinstance(t, Expect):
            return self.value(t.of)
        if isinstance(t, ListConst):
            if all(isinstance(i, str) for i in t.items):
                return self.literal(tuple(str(i) for i in t.items))
            raise _NotEncodable(t)
        if isinstance(t, Len):
            inner = t.of.of if isinstance(t.of, Expect) else t.of
            if isinstance(inner, ListConst):
                return z3.IntVal(len(inner.items), self.ctx)
            return z3.Length(self.value(t.of))
        if isinstance(t, Arith):
            left, right = _numeric(self.value(t.left), self.value(t.right))
            return left + right if t.op == "+" else left - right
        if isinstance(t, Scale):
            of = self.value(t.of)
            if t.factor.denominator == 1 and of.sort() == z3.IntSort(self.ctx):
                return z3.IntVal(t.factor.numerator, self.ctx) * of
            factor = self.literal(t.factor)
            return factor * (z3.ToReal(of) if of.sort() == z3.IntSort(self.ctx) else of)
        return self.condition(t)

    def condition(self, t: Term) -> z3.BoolRef:
        ctx = self.ctx
        if isinstance(t, All):
            return z3.And([self.condition(i) for i in t.items] or [z3.BoolVal(True, ctx)])
        if isinstance(t, AnyOf):
            return z3.Or([self.condition(i) for i in t.items] or [z3.BoolVal(False, ctx)])
        if isinstance(t, Negation):
            return z3.Not(self.condition(t.of))
        if isinstance(t, Cmp):
            return self.comparison(t)
        if isinstance(t, Member):
            found = self.membership(t)
            return z3.Not(found) if t.negated else found
        if isinstance(t, Affix):
            of, affix = self.value(t.of), self.value(t.affix)
            return z3.PrefixOf(affix, of) if t.kind == "startswith" else z3.SuffixOf(affix, of)
        if isinstance(t, Matches):
            return z3.InRe(self.value(t.of), self.regex(t.pattern.tree))
        out = self.value(t)
        assert z3.is_bool(out)
        return out

    def comparison(self, t: Cmp) -> z3.BoolRef:
        left, right = self.value(t.left), self.value(t.right)
        if left.sort() != right.sort():
            if _is_bool(left) or _is_bool(right):
                # A boolean is never equal to a value of another type.
                return z3.BoolVal(t.op == "!=", self.ctx)
            left, right = _numeric(left, right)
        ops = {
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        out = ops[t.op](left, right)
        assert isinstance(out, z3.BoolRef)
        return out

    def membership(self, t: Member) -> z3.BoolRef:
        ctx = self.ctx
        container = t.container.of if isinstance(t.container, Expect) else t.container
        item = self.value(t.item)
        if isinstance(container, ListConst):
            options = []
            for c in container.items:
                literal = self.literal(c)
                if literal.sort() == item.sort():
                    options.append(item == literal)
                elif not (_is_bool(literal) or _is_bool(item)) and _is_arith(literal, item):
                    a, b = _numeric(item, literal)
                    options.append(a == b)
            return z3.Or(options) if options else z3.BoolVal(False, ctx)
        whole = self.value(t.container)
        if whole.sort() == z3.StringSort(ctx):
            return z3.Contains(whole, item)
        return z3.Contains(whole, z3.Unit(item))

    def regex(self, node: Node) -> z3.ReRef:
        ctx = self.ctx
        sort = z3.ReSort(z3.StringSort(ctx))
        if isinstance(node, Chars):
            parts = [
                z3.Range(chr(low), chr(min(high, _TOP)), ctx=ctx)
                for low, high in node.ranges
                if low <= _TOP
            ]
            union = z3.Union(*parts) if len(parts) > 1 else (parts[0] if parts else z3.Empty(sort))
            if node.negated:
                return z3.Intersect(z3.AllChar(sort), z3.Complement(union))
            return union
        if isinstance(node, AnyChar):
            return z3.AllChar(sort)
        if isinstance(node, Seq):
            items = [self.regex(i) for i in node.items]
            if not items:
                return z3.Re(z3.StringVal("", ctx))
            return items[0] if len(items) == 1 else z3.Concat(*items)
        if isinstance(node, Repeat):
            item = self.regex(node.item)
            if node.most == 0:
                return z3.Re(z3.StringVal("", ctx))
            if node.most is not None:
                return z3.Loop(item, node.least, node.most)
            if node.least == 0:
                return z3.Star(item)
            return z3.Concat(z3.Loop(item, node.least, node.least), z3.Star(item))
        options = [self.regex(o) for o in node.options]
        return z3.Union(*options) if len(options) > 1 else options[0]


class _NotEncodable(Exception):
    def __init__(self, term: Term) -> None:
        super().__init__(text(term))


def _is_bool(e: z3.ExprRef) -> bool:
    return bool(z3.is_bool(e))


def _is_arith(*es: z3.ExprRef) -> bool:
    return all(z3.is_arith(e) for e in es)


def _numeric(a: z3.ExprRef, b: z3.ExprRef) -> tuple[z3.ArithRef, z3.ArithRef]:
    if z3.is_int(a) and z3.is_real(b):
        return z3.ToReal(a), b
    if z3.is_real(a) and z3.is_int(b):
        return a, z3.ToReal(b)
    return a, b


def _string(value: z3.ExprRef) -> str:
    """A string value of a model, character by character (``as_string`` escapes some
    characters, and not the same way for every value)."""
    length = z3.simplify(z3.Length(value)).as_long()
    codes = [z3.simplify(z3.StrToCode(z3.SubString(value, i, 1))).as_long() for i in range(length)]
    return "".join(chr(c) for c in codes)


def _argument(value: z3.ExprRef, kind: str) -> Any:
    """A model's value as a call's argument."""
    if kind == "boolean":
        return z3.is_true(value)
    if kind == "integer":
        return value.as_long()
    if kind == "number":
        fraction = value.as_fraction()
        return int(fraction) if fraction.denominator == 1 else Fraction(fraction)
    if kind == "string":
        return _string(value)
    items = []
    while z3.is_app(value) and value.num_args() == 2 and value.decl().kind() == z3.Z3_OP_SEQ_CONCAT:
        items.append(value.arg(0))
        value = value.arg(1)
    items.append(value)
    out = []
    for item in items:
        if z3.is_app(item) and item.decl().kind() == z3.Z3_OP_SEQ_UNIT:
            out.append(_string(item.arg(0)))
    return out


def _formula(
    enc: _Encoder, required: Sequence[Term], forbidden: Sequence[Term]
) -> list[z3.BoolRef]:
    return [enc.condition(t) for t in required] + [z3.Not(enc.condition(t)) for t in forbidden]


def satisfiable(
    required: Sequence[Term], forbidden: Sequence[Term], parameters: Parameters
) -> dict[str, Any] | bool | None:
    """Some arguments that satisfy every ``required`` residual and no ``forbidden`` one (only
    the parameters the conditions name), ``False`` if none do, ``None`` if Z3 could not tell
    within ``TIMEOUT_MS``."""
    ctx = z3.Context()
    enc = _Encoder(parameters, ctx)
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", TIMEOUT_MS)
    try:
        solver.add(*_formula(enc, required, forbidden))
    except _NotEncodable:
        return None
    solver.add(*enc.domain())
    answer = solver.check()
    if answer == z3.unsat:
        return False
    if answer != z3.sat:
        return None
    model = solver.model()
    return {
        name: _argument(model.eval(v, model_completion=True), parameters[name].kind)
        for name, v in sorted(enc.vars.items())
    }


def clash(
    required: Sequence[Term], forbidden: Sequence[Term], parameters: Parameters
) -> tuple[list[int], list[int]] | None:
    """A minimal set of the conditions no arguments satisfy together (indices into
    ``required`` and ``forbidden``), for conditions that are unsatisfiable; None if they are
    not, or Z3 could not tell."""
    ctx = z3.Context()
    enc = _Encoder(parameters, ctx)
    try:
        parts = _formula(enc, required, forbidden)
    except _NotEncodable:
        return None
    background = enc.domain()

    def sat(mask: int) -> bool:
        solver = z3.Solver(ctx=ctx)
        solver.set("timeout", TIMEOUT_MS)
        solver.add(*background)
        solver.add(*[p for i, p in enumerate(parts) if mask >> i & 1])
        return bool(solver.check() != z3.unsat)

    everything = (1 << len(parts)) - 1
    if sat(everything):
        return None
    core = quickxplain(range(len(parts)), {i: 1 << i for i in range(len(parts))}, sat)
    n = len(required)
    return [i for i in core if i < n], [i - n for i in core if i >= n]


def encodable(term: Term, parameters: Mapping[str, Any]) -> bool:
    """Whether ``term`` has a Z3 form (a list of numbers bound from outputs used as a value
    does not)."""
    try:
        _Encoder(parameters, z3.Context()).condition(term)
    except _NotEncodable:
        return False
    return True
