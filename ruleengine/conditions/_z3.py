"""Conditions in Z3: whether some arguments satisfy a tool's conditions, and which clash.

The residual conditions of one tool at one step (``evaluate.bind``: no run values left)
become one Z3 formula over one variable per parameter — ``Int`` for integers, ``Real`` for
numbers (exact rationals), ``String`` for strings, ``Bool`` — with an enum's choices as a
constraint. A list of strings is what the language can say of it: its length (an ``Int``) and,
for each literal tested against it, whether it holds that literal (a ``Bool``), the length at
least the number of literals it holds (Z3's sequences of strings answer *unknown* too often).
``satisfiable`` asks whether some arguments satisfy every ``allow_if`` and no ``deny_if`` (and
returns such arguments); ``clash`` names a minimal set of them that no arguments can satisfy
together (QuickXplain over *sat or unsat?*, so the same conditions give the same set).

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
    Input,
    IsNone,
    Item,
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
    children,
    text,
    walk,
)
from ruleengine.conditions.types import Literal_, Parameters

__all__ = [
    "RLIMIT",
    "TIMEOUT_MS",
    "clash",
    "encodable",
    "equivalent",
    "satisfiable",
    "satisfiable_with_run",
    "separating_run",
]

RLIMIT = 5_000_000
"""Z3's deterministic resource units for one question (the same answer on every machine,
however loaded: an unknown answer is ``None``, never a guess)."""

TIMEOUT_MS = 10_000
"""A wall-clock backstop for one question, far above what ``RLIMIT`` allows."""

_TOP = 0x2FFFF
_RE = z3.ReSort(z3.StringSort())


class _Encoder:
    def __init__(
        self,
        parameters: Parameters,
        ctx: z3.Context,
        tools: Mapping[str, Parameters | None] | None = None,
    ) -> None:
        self.parameters = parameters
        self.ctx = ctx
        self.vars: dict[str, z3.ExprRef] = {}
        self.lists: dict[str, tuple[z3.ArithRef, dict[str, z3.BoolRef]]] = {}
        self.tools = tools
        """The declared tools' parameters, when run values are unknowns (else ``None``: a
        residual has none left)."""
        self.run: dict[tuple[Term, str], z3.ExprRef] = {}
        """One variable per run value and the kind it is read as."""
        self.stray: dict[str, z3.BoolRef] = {}
        """For a list some ``all``/``any`` goes over: whether it holds an item that is none
        of the literals tracked for it."""
        self.outside: dict[tuple[str, frozenset[str]], z3.BoolRef] = {}
        """Whether a list holds an item outside a set of literals."""
        self.given: dict[str, z3.BoolRef] = {}
        """For each argument some condition tests with ``is None``: whether the call gives
        it. The other arguments are given: a call that leaves one out and passes passes as
        well with it given (a part that is never read decides nothing)."""

    def presence(self, terms: Sequence[Term]) -> None:
        """A ``given`` variable for each argument ``terms`` track (``tracked``)."""
        for term in terms:
            for t in walk(term):
                name = self.tracked(t)
                if name is not None and name not in self.given:
                    self.add_given(name)

    def tracked(self, t: Term) -> str | None:
        """The argument whose presence ``t`` asks for: one tested with ``is None``."""
        return t.of.name if isinstance(t, IsNone) else None

    def add_given(self, name: str) -> None:
        self.given[name] = z3.Bool(f"given(arg.{name})", self.ctx)
        # Its value too: an example that gives it must say what it gives.
        if self.parameters[name].kind == "strings":
            self.list_of(name)
        else:
            self.var(name)

    def defined(self, t: Term) -> z3.BoolRef | None:
        """When ``t`` can be read: each argument it reads is given, read left to right as
        the evaluator reads it (``and``/``or`` stop at the first part that decides).
        ``None``: always."""
        if not self.given:
            return None
        if isinstance(t, Arg):
            return self.given.get(t.name)
        if isinstance(t, IsNone | Const | ListConst):
            return None
        if isinstance(t, All | AnyOf):
            # D(a, rest) = D(a) and (a decides, or D(rest))
            out: z3.BoolRef | None = None
            for item in reversed(t.items):
                if out is not None:
                    value = self.condition(item)
                    out = z3.Or(z3.Not(value) if isinstance(t, All) else value, out)
                here = self.defined(item)
                out = here if out is None else (out if here is None else z3.And(here, out))
            return out
        parts = [d for d in (self.defined(c) for c in children(t)) if d is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else z3.And(parts)

    def run_var(self, t: Term, kind: str) -> z3.ExprRef:
        """The unknown a run value stands for, read as ``kind``."""
        if self.tools is None or kind not in _SORTS:
            raise _NotEncodable(t)
        found = self.run.get((t, kind))
        if found is None:
            label = f"{text(t)} as {kind}"
            found = self.run[(t, kind)] = _SORTS[kind](label, self.ctx)
        return found

    def among_outputs(self, t: Outputs, item: z3.ExprRef) -> z3.BoolRef:
        """``item in outputs(T)``: one output of the tool, equal to the item (an example
        needs no more)."""
        out = item == self.run_var(t, _kind_of(item))
        assert isinstance(out, z3.BoolRef)
        return out

    def run_value(self, t: Term) -> z3.ExprRef:
        """A run value ``check`` left unwrapped: the input, or an argument of a tool whose
        parameters say its kind."""
        if isinstance(t, LastArg) and self.tools is not None:
            param = (self.tools.get(t.tool) or {}).get(t.name)
            return self.run_var(t, param.kind if param is not None else "opaque")
        return self.run_var(t, "string" if isinstance(t, Input) else "opaque")

    def list_of(self, name: str) -> tuple[z3.ArithRef, dict[str, z3.BoolRef]]:
        """A list-of-strings parameter: its length and its literals held."""
        found = self.lists.get(name)
        if found is None:
            found = self.lists[name] = (z3.Int(f"len(arg.{name})", self.ctx), {})
        return found

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
            raise _NotEncodable(Arg(name))  # a list: only through `len` and `in`
        self.vars[name] = v
        return v

    def domain(self) -> list[z3.BoolRef]:
        """The enums' choices, for the variables the conditions use."""
        out = []
        for name, v in self.vars.items():
            choices = self.parameters[name].choices
            if choices is not None:
                out.append(z3.Or([v == self.literal(c) for c in choices]))
        for name, (length, held) in self.lists.items():
            ones = [z3.If(h, z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx)) for h in held.values()]
            stray = self.stray.get(name)
            if stray is not None:
                # Every item is a tracked literal or another one; a non-empty list holds one.
                ones.append(z3.If(stray, z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx)))
                out.append(z3.Implies(length >= 1, z3.Or(stray, *held.values())))
            out.append(length >= (z3.Sum(ones) if ones else z3.IntVal(0, self.ctx)))
        for (name, literals), outside in self.outside.items():
            _, held = self.lists[name]
            others = [h for v, h in held.items() if v not in literals]
            out.append(outside == z3.Or(self.stray[name], *others))
        return out

    def literal(self, value: Literal_) -> z3.ExprRef:
        ctx = self.ctx
        if isinstance(value, bool):
            return z3.BoolVal(value, ctx)
        if isinstance(value, int):
            return z3.IntVal(value, ctx)
        if isinstance(value, Fraction):
            return z3.RealVal(f"{value.numerator}/{value.denominator}", ctx)
        if any(ord(c) > _TOP for c in value):
            raise _NotEncodable(Const(value))  # past Z3's alphabet: not said exactly
        # Z3 reads `\u{…}` in a literal as an escape: a backslash is written as one.
        return z3.StringVal(value.replace("\\", "\\u{5c}"), ctx)

    def value(self, t: Term) -> z3.ExprRef:
        if isinstance(t, Const):
            return self.literal(t.value)
        if isinstance(t, Arg):
            return self.var(t.name)
        if isinstance(t, Expect):
            if isinstance(t.of, Input | LastArg | LastOut):
                return self.run_var(t.of, t.kind)
            return self.value(t.of)
        if isinstance(t, Input | LastArg | LastOut | Outputs):
            return self.run_value(t)
        if isinstance(t, ListConst):
            raise _NotEncodable(t)
        if isinstance(t, Len):
            inner = t.of.of if isinstance(t.of, Expect) else t.of
            if isinstance(inner, ListConst):
                return z3.IntVal(len(inner.items), self.ctx)
            if self.is_list(inner):
                assert isinstance(inner, Arg)
                return self.list_of(inner.name)[0]
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

    def quantified(self, t: Quantified) -> z3.BoolRef:
        """``all``/``any`` of ``item in [literals]`` (or ``not in``) over a list argument:
        some item is in the set, or every item is; another body has no Z3 form."""
        body = t.body
        if not (
            isinstance(body, Member)
            and body.item == Item(t.name)
            and isinstance(body.container, ListConst)
            and all(isinstance(v, str) for v in body.container.items)
        ):
            raise _NotEncodable(t)
        literals = frozenset(str(v) for v in body.container.items)
        _, held = self.list_of(t.of.name)
        for literal in sorted(literals):
            if literal not in held:
                held[literal] = z3.Bool(f"{literal!r} in arg.{t.of.name}", self.ctx)
        some_in = z3.Or([held[v] for v in sorted(literals)] or [z3.BoolVal(False, self.ctx)])
        key = (t.of.name, literals)
        if key not in self.outside:
            self.outside[key] = z3.Bool(f"arg.{t.of.name} outside {sorted(literals)}", self.ctx)
        if t.of.name not in self.stray:
            self.stray[t.of.name] = z3.Bool(f"arg.{t.of.name} holds another item", self.ctx)
        every_in = z3.Not(self.outside[key])
        if body.negated:  # all(r not in S) = not any(r in S); any(r not in S) = not all(...)
            return z3.Not(some_in) if t.every else z3.Not(every_in)
        return every_in if t.every else some_in

    def condition(self, t: Term) -> z3.BoolRef:
        ctx = self.ctx
        if isinstance(t, Quantified):
            return self.quantified(t)
        if isinstance(t, Item):
            raise _NotEncodable(t)
        if isinstance(t, IsNone):
            given = self.given.get(t.of.name)
            if given is None:  # no ``presence`` asked for: the argument is given
                return z3.BoolVal(t.negated, ctx)
            return given if t.negated else z3.Not(given)
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
        if self.is_list(container):
            return self.list_membership(t, container)
        item = self.value(t.item)
        if isinstance(container, Outputs):
            return self.among_outputs(container, item)
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
        return z3.Contains(self.value(t.container), item)

    def is_list(self, t: Term) -> bool:
        return isinstance(t, Arg) and self.parameters[t.name].kind == "strings"

    def list_membership(self, t: Member, container: Term) -> z3.BoolRef:
        assert isinstance(container, Arg)
        literal = t.item.of if isinstance(t.item, Expect) else t.item
        if not (isinstance(literal, Const) and isinstance(literal.value, str)):
            raise _NotEncodable(t)
        _, held = self.list_of(container.name)
        found = held.get(literal.value)
        if found is None:
            found = held[literal.value] = z3.Bool(
                f"{literal.value!r} in arg.{container.name}", self.ctx
            )
        return found

    def regex(self, node: Node) -> z3.ReRef:
        ctx = self.ctx
        sort = z3.ReSort(z3.StringSort(ctx))
        if isinstance(node, Chars):
            if any(high > _TOP for _, high in node.ranges):
                raise _NotEncodable(Const(f"a class past U+{_TOP:X}"))
            parts = [z3.Range(chr(low), chr(high), ctx=ctx) for low, high in node.ranges]
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


_SORTS: dict[str, Any] = {
    "string": z3.String,
    "integer": z3.Int,
    "number": z3.Real,
    "boolean": z3.Bool,
}


def _kind_of(e: z3.ExprRef) -> str:
    if z3.is_bool(e):
        return "boolean"
    if z3.is_int(e):
        return "integer"
    if z3.is_real(e):
        return "number"
    return "string" if z3.is_string(e) else "opaque"


class _Proof(_Encoder):
    """The encoder for proofs over every call and every run: each argument may be left out
    (``given``) or given with a value of another type (``readable`` implies ``given``), and
    a tool's outputs are any set of values (an uninterpreted predicate per kind)."""

    def __init__(
        self, parameters: Parameters, ctx: z3.Context, tools: Mapping[str, Parameters | None]
    ) -> None:
        super().__init__(parameters, ctx, tools)
        self.readable: dict[str, z3.BoolRef] = {}
        self.sets: dict[tuple[Term, str], z3.FuncDeclRef] = {}

    def tracked(self, t: Term) -> str | None:
        """Every argument: any may be left out or mistyped."""
        return t.name if isinstance(t, Arg) else super().tracked(t)

    def add_given(self, name: str) -> None:
        super().add_given(name)
        self.readable[name] = z3.Bool(f"readable(arg.{name})", self.ctx)

    def defined(self, t: Term) -> z3.BoolRef | None:
        if isinstance(t, Arg):
            return self.readable.get(t.name)
        return super().defined(t)

    def domain(self) -> list[z3.BoolRef]:
        links = [z3.Implies(self.readable[n], g) for n, g in self.given.items()]
        return [*super().domain(), *links]

    def among_outputs(self, t: Outputs, item: z3.ExprRef) -> z3.BoolRef:
        kind = _kind_of(item)
        found = self.sets.get((t, kind))
        if found is None:
            label = f"{text(t)} holds ({kind})"
            found = self.sets[(t, kind)] = z3.Function(label, item.sort(), z3.BoolSort(self.ctx))
        out = found(item)
        assert isinstance(out, z3.BoolRef)
        return out


Conditions = tuple[Sequence[Term], Sequence[Term], Sequence[Term]]
"""A tool's ``allow_if``, ``deny_if`` and ``ask_if`` conditions."""


def equivalent(
    old: Conditions,
    new: Conditions,
    parameters: Parameters,
    tools: Mapping[str, Parameters | None],
) -> bool | None:
    """Whether two sets of conditions on one tool admit the same calls and ask about the same
    admitted calls, for every call (arguments left out, or of another type, included) and
    every value of the run values they read, as unknowns (``True``: proved); ``False`` when
    Z3 finds a call and values on which they differ; ``None`` when it cannot tell, or a
    condition has no Z3 form. The two must read the same run values (a value the run lacks
    refuses every call, which the unknowns do not say): the caller checks that."""
    found = _difference(old, new, parameters, tools)
    if found is None:
        return None
    answer, _, _ = found
    if answer == z3.unsat:
        return True
    return False if answer == z3.sat else None


def separating_run(
    old: Conditions,
    new: Conditions,
    parameters: Parameters,
    tools: Mapping[str, Parameters | None],
) -> dict[Term, Any] | None:
    """Values of the run values the conditions read (``input``, ``last(…)``, by term) under
    which some call is decided differently by the two sets of conditions, as
    ``equivalent`` finds them; None when it finds none (or cannot tell). A run value read
    only through ``outputs(…)`` gets none."""
    found = _difference(old, new, parameters, tools)
    if found is None or found[0] != z3.sat:
        return None
    _, enc, solver = found
    return _run_values(enc, solver.model())


def _difference(
    old: Conditions,
    new: Conditions,
    parameters: Parameters,
    tools: Mapping[str, Parameters | None],
) -> tuple[z3.CheckSatResult, _Proof, z3.Solver] | None:
    """Z3's answer to "some call and run values on which the two decide differently", with
    the encoder and solver (its model, when sat); None when a condition has no Z3 form."""
    ctx = z3.Context()
    enc = _Proof(parameters, ctx, tools)
    enc.presence([t for side in (old, new) for group in side for t in group])
    true = z3.BoolVal(True, ctx)

    def side(conditions: Conditions) -> tuple[z3.BoolRef, z3.BoolRef]:
        allow, deny, ask = conditions
        # An ask_if that reads a missing argument refuses the call too.
        readable = [d for d in (enc.defined(t) for t in ask) if d is not None]
        admitted = z3.And(
            [_part(enc, t, False) for t in allow]
            + [_part(enc, t, True) for t in deny]
            + readable
            + [true]
        )
        asks = z3.Or([enc.condition(t) for t in ask] + [z3.BoolVal(False, ctx)])
        return admitted, asks

    try:
        a_old, k_old = side(old)
        a_new, k_new = side(new)
    except _NotEncodable:
        return None
    differ = z3.Or(a_old != a_new, z3.And(a_old, k_old != k_new))
    answer, solver = _answer(enc, [differ], ctx)
    return answer, enc, solver


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


def _solver(ctx: z3.Context) -> z3.Solver:
    solver = z3.Solver(ctx=ctx)
    solver.set("rlimit", RLIMIT)
    solver.set("timeout", TIMEOUT_MS)
    return solver


def _part(enc: _Encoder, t: Term, negate: bool) -> z3.BoolRef:
    """The condition ``t`` (negated for a ``deny_if``) where it reads no missing argument: one
    that reads a missing argument refuses, an ``allow_if`` and a ``deny_if`` alike."""
    formula = enc.condition(t)
    formula = z3.Not(formula) if negate else formula
    defined = enc.defined(t)
    return formula if defined is None else z3.And(defined, formula)


def _formula(
    enc: _Encoder, required: Sequence[Term], forbidden: Sequence[Term]
) -> tuple[list[z3.BoolRef | None], bool]:
    """Each condition's formula (``None`` for one without a Z3 form), and whether any is
    left out. Leaving one out asks about fewer conditions: an *unsatisfiable* answer still
    holds for all of them, a satisfiable one no longer does."""
    parts: list[z3.BoolRef | None] = []
    enc.presence([*required, *forbidden])
    for t, negate in [(t, False) for t in required] + [(t, True) for t in forbidden]:
        try:
            parts.append(_part(enc, t, negate))
        except _NotEncodable:
            parts.append(None)
    return parts, any(p is None for p in parts)


def _answer(enc: _Encoder, parts: Sequence[z3.BoolRef], ctx: z3.Context) -> tuple[Any, Any]:
    """Z3's answer on ``parts`` and the domain: one solver built the same way for every
    question, so the same set of conditions always gets the same answer."""
    solver = _solver(ctx)
    solver.add(*enc.domain())
    solver.add(*parts)
    return solver.check(), solver


def satisfiable(
    required: Sequence[Term],
    forbidden: Sequence[Term],
    parameters: Parameters,
    *,
    readable: Sequence[Term] = (),
) -> dict[str, Any] | bool | None:
    """Some arguments that satisfy every ``required`` residual and no ``forbidden`` one (only
    the parameters the conditions name), ``False`` if none do, ``None`` if Z3 could not tell
    within ``RLIMIT`` (or the conditions have no Z3 form). Each ``readable`` condition reads
    no missing argument either (an ``ask_if`` that does refuses the call), whether it holds
    or not."""
    ctx = z3.Context()
    enc = _Encoder(parameters, ctx)
    enc.presence(readable)
    parts, partial = _formula(enc, required, forbidden)
    for t in readable:
        try:
            parts.append(enc.defined(t))
        except _NotEncodable:
            partial = True
    solved = _solved(enc, parts, partial, ctx)
    if not isinstance(solved, z3.Solver):
        return solved
    return _arguments(enc, solved.model())


def satisfiable_with_run(
    required: Sequence[Term],
    forbidden: Sequence[Term],
    mentioned: Sequence[Term],
    parameters: Parameters,
    tools: Mapping[str, Parameters | None],
) -> tuple[dict[str, Any], dict[Term, Any]] | bool | None:
    """As ``satisfiable``, on conditions that still read run values (``input``,
    ``last(…)``, ``outputs(…)``), each an unknown of the kind it is read as (``tools``: the
    declared tools' parameters, for an earlier call's arguments): some arguments and some
    run values (by run value term) that satisfy them, ``False`` if no values and arguments
    do, ``None`` if Z3 cannot tell or a condition has no Z3 form. ``mentioned`` conditions
    are not asserted, but the run values they read get values too (a value they lack would
    refuse the call)."""
    ctx = z3.Context()
    enc = _Encoder(parameters, ctx, tools)
    parts, partial = _formula(enc, required, forbidden)
    try:
        for t in mentioned:
            enc.condition(t)
    except _NotEncodable:
        partial = True
    solved = _solved(enc, parts, partial, ctx)
    if not isinstance(solved, z3.Solver):
        return solved
    model = solved.model()
    return _arguments(enc, model), _run_values(enc, model)


def _solved(
    enc: _Encoder, parts: Sequence[z3.BoolRef | None], partial: bool, ctx: z3.Context
) -> z3.Solver | bool | None:
    """The solver holding a model of ``parts``; ``False`` when they are unsatisfiable,
    ``None`` when Z3 cannot tell or a condition had no Z3 form (``partial``)."""
    answer, solver = _answer(enc, [p for p in parts if p is not None], ctx)
    if answer == z3.unsat:
        return False
    if answer != z3.sat or partial:
        return None
    found: z3.Solver = solver
    return found


def _run_values(enc: _Encoder, model: z3.ModelRef) -> dict[Term, Any]:
    """The run values a model gives, by term (a term read as two kinds: the first)."""
    values: dict[Term, Any] = {}
    for (term, kind), v in enc.run.items():
        values.setdefault(term, _argument(model.eval(v, model_completion=True), kind))
    return values


def _arguments(enc: _Encoder, model: z3.ModelRef) -> dict[str, Any]:
    """The arguments a model gives the parameters the conditions name."""
    parameters = enc.parameters
    left_out = {name for name, given in enc.given.items() if z3.is_false(model.eval(given, True))}
    out = {
        name: _argument(model.eval(v, model_completion=True), parameters[name].kind)
        for name, v in sorted(enc.vars.items())
        if name not in left_out
    }
    for name, (length, held) in sorted(enc.lists.items()):
        if name in left_out:
            continue
        items = [lit for lit, h in held.items() if z3.is_true(model.eval(h, model_completion=True))]
        size = model.eval(length, model_completion=True).as_long()
        stray = enc.stray.get(name)
        if stray is not None and z3.is_false(model.eval(stray, True)) and items:
            items += [items[0]] * (size - len(items))  # no other item: repeat a held one
        filler = (f"item{i}" for i in range(size + len(held) + 1))
        while len(items) < size:
            candidate = next(filler)
            if candidate not in held and candidate not in items:
                items.append(candidate)
        out[name] = items
    return out


def clash(
    required: Sequence[Term], forbidden: Sequence[Term], parameters: Parameters
) -> tuple[list[int], list[int]] | None:
    """A minimal set of the conditions no arguments satisfy together (indices into
    ``required`` and ``forbidden``), for conditions that are unsatisfiable; None if they are
    not, or Z3 could not tell. Each subset is asked as ``satisfiable`` asks, so its answers
    agree with ``satisfiable``'s."""
    ctx = z3.Context()
    enc = _Encoder(parameters, ctx)
    parts, _ = _formula(enc, required, forbidden)

    def sat(mask: int) -> bool:
        # A condition without a Z3 form counts as satisfiable alone: it is never blamed.
        chosen = [p for i, p in enumerate(parts) if mask >> i & 1 and p is not None]
        return bool(_answer(enc, chosen, ctx)[0] != z3.unsat)

    everything = (1 << len(parts)) - 1
    if sat(everything):
        return None
    core = quickxplain(range(len(parts)), {i: 1 << i for i in range(len(parts))}, sat)
    # QuickXplain's minimality needs a monotone oracle; an *unknown* answer (counted as
    # sat) can break it. One deletion pass makes every member necessary all the same.
    for i in list(core):
        rest = sum(1 << j for j in core if j != i)
        if not sat(rest):
            core.remove(i)
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
