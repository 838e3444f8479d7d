"""The type check: a term against a tool's parameters, before any call.

``check`` types a condition of one tool (``Scope``: its parameters, and the other tools'
for ``last("T").arguments``). Run values have no static type; each is wrapped in an
``Expect`` of the kind its use demands (the other side of a comparison, the operand of a
string method), and a run value of another kind is undefined when the call comes. Errors
name the condition and what is wrong: an unknown parameter or tool, a type mismatch, an
order on strings, two run values compared with nothing to type them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ruleengine._base_errors import PolicyError
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
)
from ruleengine.conditions.types import Parameters

__all__ = ["MAX_DEPTH", "Scope", "check", "depth"]

_NUMERIC = ("integer", "number")


@dataclass(frozen=True, slots=True)
class Scope:
    """What a condition on one tool may name: its parameters, and those of the other tools
    (for ``last("T").arguments.NAME``; a tool missing here has unknown parameters)."""

    tool: str
    parameters: Parameters
    tools: Mapping[str, Parameters | None]


class _Checker:
    def __init__(self, scope: Scope, where: str, source: str) -> None:
        self.scope = scope
        self.where = where
        self.source = source

    def fail(self, problem: str, hint: str | None = None) -> PolicyError:
        return PolicyError(f"{self.where}: condition `{self.source}`: {problem}", hint=hint)

    def kind(self, t: Term) -> str:
        """The static kind of a value term: a parameter kind, ``list``, or ``any`` (a run
        value, typed where it is used)."""
        if isinstance(t, Const):
            if isinstance(t.value, bool):
                return "boolean"
            if isinstance(t.value, int):
                return "integer"
            if isinstance(t.value, Fraction):
                return "number"
            return "string"
        if isinstance(t, ListConst):
            return "list"
        if isinstance(t, Arg):
            param = self.scope.parameters.get(t.name)
            if param is None:
                known = ", ".join(sorted(self.scope.parameters)) or "none"
                raise self.fail(
                    f"`{self.scope.tool}` has no parameter `{t.name}`",
                    f"its parameters: {known}",
                )
            if param.kind == "opaque":
                raise self.fail(
                    f"parameter `{t.name}` of `{self.scope.tool}` has a type conditions "
                    "cannot reason about",
                    "conditions reason about strings, integers, numbers, booleans, enums "
                    "and lists of strings",
                )
            return param.kind
        if isinstance(t, Input | Item):
            return "string"
        if isinstance(t, LastArg):
            self.known_tool(t.tool)
            params = self.scope.tools.get(t.tool)
            if params is None:
                return "any"
            param = params.get(t.name)
            if param is None:
                raise self.fail(f"`{t.tool}` has no parameter `{t.name}`")
            return "any" if param.kind == "opaque" else param.kind
        if isinstance(t, LastOut):
            self.known_tool(t.tool)
            return "any"
        if isinstance(t, Outputs):
            self.known_tool(t.tool)
            return "list"
        if isinstance(t, Expect):
            return t.kind
        if isinstance(t, Len):
            inner = self.kind(t.of)
            if inner not in ("string", "strings", "list", "any"):
                raise self.fail(
                    f"`len` of `{text(t.of)}`, {_a(inner)}", "`len` counts a string or a list"
                )
            return "integer"
        if isinstance(t, Arith):
            for side in (t.left, t.right):
                k = self.kind(side)
                if k not in (*_NUMERIC, "any"):
                    raise self.fail(f"`{text(side)}` is {_a(k)}: `{t.op}` works on numbers")
            kinds = {self.kind(t.left), self.kind(t.right)}
            return "integer" if kinds <= {"integer"} else "number"
        if isinstance(t, Scale):
            k = self.kind(t.of)
            if k not in (*_NUMERIC, "any"):
                raise self.fail(f"`{text(t.of)}` is {_a(k)}: `*` works on numbers")
            return "integer" if k == "integer" and t.factor.denominator == 1 else "number"
        return "boolean"

    def known_tool(self, tool: str) -> None:
        if tool not in self.scope.tools:
            known = ", ".join(sorted(self.scope.tools)) or "none"
            raise self.fail(f"unknown tool `{tool}`", f"declared tools: {known}")

    def typed(self, t: Term, want: str) -> Term:
        """``t`` checked as a value of kind ``want`` (``number`` admits integers), with run
        values wrapped in ``Expect``."""
        t = self.value(t)
        got = self.kind(t)
        if got == "any":
            return Expect(t, want)
        if got == want or (want == "number" and got == "integer"):
            return t
        raise self.fail(f"`{text(t)}` is {_a(got)}, not {_a(want)}")

    def value(self, t: Term) -> Term:
        """A value term with its insides checked."""
        if isinstance(t, Len):
            inner = self.value(t.of)
            if self.kind(inner) == "any":
                inner = Expect(inner, "string")
            return Len(inner)
        if isinstance(t, Arith):
            return Arith(t.op, self.numeric(t.left), self.numeric(t.right))
        if isinstance(t, Scale):
            return Scale(t.factor, self.numeric(t.of))
        if isinstance(t, Cmp | Member | Affix | Matches | IsNone | Quantified | All | AnyOf):
            raise self.fail(f"`{text(t)}` is a condition, not a value")
        if isinstance(t, Negation):
            raise self.fail(f"`{text(t)}` is a condition, not a value")
        self.kind(t)
        return t

    def numeric(self, t: Term) -> Term:
        t = self.value(t)
        k = self.kind(t)
        return Expect(t, "number") if k == "any" else t

    def condition(self, t: Term) -> Term:
        if isinstance(t, All):
            return All(tuple(self.condition(i) for i in t.items))
        if isinstance(t, AnyOf):
            return AnyOf(tuple(self.condition(i) for i in t.items))
        if isinstance(t, Negation):
            return Negation(self.condition(t.of))
        if isinstance(t, Cmp):
            return self.comparison(t)
        if isinstance(t, Member):
            return self.membership(t)
        if isinstance(t, Affix):
            return Affix(t.kind, self.typed(t.of, "string"), self.typed(t.affix, "string"))
        if isinstance(t, Matches):
            return Matches(self.typed(t.of, "string"), t.pattern)
        if isinstance(t, IsNone):
            self.kind(t.of)  # the parameter exists, of a type conditions reason about
            return t
        if isinstance(t, Quantified):
            kind = self.kind(t.of)
            if kind != "strings":
                function = "all" if t.every else "any"
                raise self.fail(
                    f"`{function}` goes over a list of strings, and `{text(t.of)}` is {_a(kind)}"
                )
            return Quantified(t.every, t.name, t.of, self.condition(t.body))
        return self.typed(t, "boolean")

    def comparison(self, t: Cmp) -> Term:
        left, right = self.value(t.left), self.value(t.right)
        lk, rk = self.kind(left), self.kind(right)
        if lk == "any" and rk == "any":
            raise self.fail(
                f"`{text(t)}` compares two run values: neither says their type",
                "compare a run value with an argument or a literal",
            )
        want = rk if lk == "any" else lk
        if want in ("strings", "list"):
            raise self.fail(f"`{text(t)}` compares lists", "test membership with `in`")
        if want == "integer" and (rk == "number" or lk == "number"):
            want = "number"
        if t.op not in ("==", "!=") and want not in _NUMERIC:
            raise self.fail(f"`{t.op}` orders numbers, and `{text(t)}` compares {want}s")
        return Cmp(t.op, self.typed(left, want), self.typed(right, want))

    def membership(self, t: Member) -> Term:
        container = self.value(t.container)
        kind = self.kind(container)
        item = self.value(t.item)
        if kind == "list":
            if isinstance(container, ListConst):
                if not container.items:
                    return Member(item, container, t.negated)
                kinds = {self.kind(Const(i)) for i in container.items}
                if len(kinds - {"integer"}) > 1 or (len(kinds) > 1 and not kinds <= set(_NUMERIC)):
                    raise self.fail(f"the list `{text(container)}` mixes types")
                want = "number" if len(kinds) > 1 else next(iter(kinds))
                if want == "integer" and self.kind(item) == "number":
                    want = "number"
                return Member(self.typed(item, want), container, t.negated)
            # outputs(...): each output is compared with the item as it comes
            if self.kind(item) == "any":
                raise self.fail(
                    f"`{text(t)}`: the item's type is unknown", "test an argument or a literal"
                )
            return Member(item, container, t.negated)
        if kind == "strings":
            return Member(self.typed(item, "string"), container, t.negated)
        if kind in ("string", "any"):
            return Member(self.typed(item, "string"), self.typed(container, "string"), t.negated)
        raise self.fail(f"`in` needs a list or a string, and `{text(container)}` is {_a(kind)}")


def _a(kind: str) -> str:
    """A kind with its article: ``an integer``, ``a list of strings``."""
    shown = {"strings": "list of strings", "any": "run value"}.get(kind, kind)
    return f"an {shown}" if shown[0] in "aeiou" else f"a {shown}"


MAX_DEPTH = 100
"""How deeply a condition may nest (deeper is an error, checked without recursion: every
later walk of a checked condition is then safe)."""


def depth(term: Term) -> int:
    """How deeply ``term`` nests (iteratively)."""
    deepest = 0
    stack = [(term, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in children(node))
    return deepest


def check(term: Term, scope: Scope, *, where: str) -> Term:
    """``term`` typed as a condition of ``scope.tool`` (see ``_Checker``); errors name
    ``where`` and the condition."""
    if depth(term) > MAX_DEPTH:
        raise PolicyError(
            f"{where}: a condition nested more than {MAX_DEPTH} deep",
            hint="split it into several conditions",
        )
    return _Checker(scope, where, text(term)).condition(term)
