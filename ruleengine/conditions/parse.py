"""Condition text to terms: Python syntax read with ``ast``, never evaluated.

Only the nodes of the language are accepted; anything else — another operator, a name, a
call, a lambda, an attribute — is a ``PolicyError`` naming the condition and its column.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from ruleengine._base_errors import PolicyError
from ruleengine.conditions.regex import parse_pattern
from ruleengine.conditions.terms import (
    MAX_TERM_SIZE,
    Affix,
    All,
    AnyOf,
    Arg,
    Arith,
    Cmp,
    Const,
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
    scaled,
    text,
)
from ruleengine.conditions.types import Literal_, shown

__all__ = ["MAX_SOURCE", "parse"]

_CMP_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}


class _Reader:
    def __init__(self, source: str, where: str) -> None:
        self.source = source
        self.where = where
        self.size = 0
        self.bound: str | None = None
        """The item name of the ``all``/``any`` being read, if any."""

    def fail(self, node: ast.AST | None, problem: str, hint: str | None = None) -> PolicyError:
        column = getattr(node, "col_offset", 0) + 1
        return PolicyError(
            f"{self.where}: condition `{self.source}`: {problem} (column {column})",
            hint=hint,
        )

    def term(self, node: ast.expr) -> Term:
        self.size += 1
        if self.size > MAX_TERM_SIZE:
            raise self.fail(node, f"more than {MAX_TERM_SIZE} parts")
        if isinstance(node, ast.BoolOp):
            items = tuple(self.term(v) for v in node.values)
            return All(items) if isinstance(node.op, ast.And) else AnyOf(items)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return Negation(self.term(node.operand))
            if isinstance(node.op, ast.USub | ast.UAdd):
                inner = self.term(node.operand)
                if isinstance(node.op, ast.UAdd):
                    return inner
                if isinstance(inner, Const) and not isinstance(inner.value, bool | str):
                    return Const(-inner.value)
                return Scale(Fraction(-1), inner)
            raise self.fail(node, "`~` is not part of the language", "use `not`")
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BinOp):
            left, right = self.term(node.left), self.term(node.right)
            if isinstance(node.op, ast.Add):
                return Arith("+", left, right)
            if isinstance(node.op, ast.Sub):
                return Arith("-", left, right)
            if isinstance(node.op, ast.Mult):
                try:
                    return scaled(left, right, "*")
                except PolicyError as exc:
                    raise self.fail(node, exc.message.split(": ", 1)[-1], exc.hint) from None
            if isinstance(node.op, ast.Div) and _is_number(left) and _is_number(right):
                assert isinstance(left, Const) and isinstance(right, Const)
                if right.value == 0:
                    raise self.fail(node, "division by zero")
                return Const(Fraction(left.value) / Fraction(right.value))
            raise self.fail(
                node,
                f"the operator `{_op_text(node.op)}` is not part of the language",
                "conditions use `+`, `-`, and `*` by a constant",
            )
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.List | ast.Tuple):
            literals: list[Literal_] = []
            for element in node.elts:
                value = self.term(element)
                if not isinstance(value, Const):
                    raise self.fail(element, "a list holds literals only")
                literals.append(value.value)
            return ListConst(tuple(literals))
        if isinstance(node, ast.Name):
            if node.id == self.bound:
                return Item(node.id)
            if node.id == "input":
                return Input()
            if node.id == "arg":
                raise self.fail(node, "`arg` alone is not a value", "name a parameter: `arg.NAME`")
            raise self.fail(
                node,
                f"unknown name `{node.id}`",
                'values are `arg.NAME`, `input`, `last("TOOL")…` and `outputs("TOOL")`',
            )
        if isinstance(node, ast.Attribute | ast.Subscript):
            return self.path(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.fail(node, f"`{ast.unparse(node)}` is not part of the language")

    def constant(self, node: ast.Constant) -> Const:
        value = node.value
        if isinstance(value, bool | int | str):
            return Const(value)
        if isinstance(value, float):
            segment = ast.get_source_segment(self.source, node) or repr(value)
            try:
                return Const(Fraction(segment.replace("_", "")))
            except ValueError:
                raise self.fail(node, f"`{segment}` is not a finite number") from None
        raise self.fail(node, f"the literal `{ast.unparse(node)}` is not part of the language")

    def compare(self, node: ast.Compare) -> Term:
        if any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops):
            return self.is_none(node)
        for op in node.ops:
            if type(op) not in _CMP_OPS and not isinstance(op, ast.In | ast.NotIn):
                raise self.fail(node, "`is` is not part of the language", "use `==`")
        parts: list[Term] = []
        left = self.term(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.term(comparator)
            if isinstance(op, ast.In | ast.NotIn):
                parts.append(Member(left, right, negated=isinstance(op, ast.NotIn)))
            else:
                parts.append(Cmp(_CMP_OPS[type(op)], left, right))
            left = right
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def is_none(self, node: ast.Compare) -> Term:
        """``arg.NAME is None`` or ``arg.NAME is not None``: the one use of ``is``."""
        hint = "`is` only tests whether the call leaves an argument out: `arg.NAME is None`"
        comparator = node.comparators[0]
        if (
            len(node.ops) != 1
            or not isinstance(comparator, ast.Constant)
            or comparator.value is not None
        ):
            raise self.fail(node, "`is` is not part of the language here", hint)
        of = self.term(node.left)
        if not isinstance(of, Arg):
            raise self.fail(node, f"`{text(of)} is None`: only an argument can be left out", hint)
        return IsNone(of, negated=isinstance(node.ops[0], ast.IsNot))

    def path(self, node: ast.Attribute | ast.Subscript) -> Term:
        keys: list[str | int] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute | ast.Subscript):
            if isinstance(current, ast.Attribute):
                keys.append(current.attr)
            else:
                key = current.slice
                if not (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str | int)
                    and not isinstance(key.value, bool)
                ):
                    raise self.fail(current, "a `[key]` must be a string or integer literal")
                keys.append(key.value)
            current = current.value
        keys.reverse()
        if isinstance(current, ast.Name) and current.id == "arg":
            if len(keys) != 1 or not isinstance(keys[0], str):
                raise self.fail(node, "an argument is `arg.NAME`")
            return Arg(keys[0])
        if isinstance(current, ast.Call) and _called(current) == "last":
            tool = self.tool_argument(current, "last")
            if keys[:1] == ["arguments"] and len(keys) == 2 and isinstance(keys[1], str):
                return LastArg(tool, keys[1])
            if keys[:1] == ["output"]:
                return LastOut(tool, tuple(keys[1:]))
            raise self.fail(
                node,
                "after `last(...)` comes `.arguments.NAME` or `.output`",
                'e.g. last("lookup_order").output.price',
            )
        raise self.fail(node, f"`{ast.unparse(node)}` is not part of the language")

    def tool_argument(self, call: ast.Call, function: str) -> str:
        if (
            len(call.args) != 1
            or call.keywords
            or not isinstance(call.args[0], ast.Constant)
            or not isinstance(call.args[0].value, str)
            or not call.args[0].value
        ):
            raise self.fail(call, f"`{function}` takes one tool name in quotes")
        return call.args[0].value

    def call(self, node: ast.Call) -> Term:
        name = _called(node)
        if node.keywords:
            raise self.fail(node, "calls take no keyword arguments")
        if name == "outputs":
            return Outputs(self.tool_argument(node, "outputs"))
        if name == "len":
            if len(node.args) != 1:
                raise self.fail(node, "`len` takes one value")
            return Len(self.term(node.args[0]))
        if name == "matches":
            if len(node.args) != 2:
                raise self.fail(node, "`matches` takes a value and a pattern")
            pattern = node.args[1]
            if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
                raise self.fail(pattern, "a pattern must be a string literal")
            try:
                parsed = parse_pattern(pattern.value, where="matches")
            except PolicyError as exc:
                raise self.fail(pattern, exc.message.split(": ", 1)[-1], exc.hint) from None
            return Matches(self.term(node.args[0]), parsed)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith"):
            if len(node.args) != 1:
                raise self.fail(node, f"`{node.func.attr}` takes one string")
            return Affix(node.func.attr, self.term(node.func.value), self.term(node.args[0]))
        if name in ("all", "any"):
            return self.quantified(node, name)
        if name == "last":
            raise self.fail(node, "`last(...)` needs `.arguments.NAME` or `.output`")
        shown = ast.unparse(node.func)
        raise self.fail(
            node,
            f"`{shown}(...)` is not part of the language",
            "functions are `len`, `matches`, `last`, `outputs`, `all`/`any` over a list "
            "argument, and the methods `startswith`/`endswith`",
        )

    def quantified(self, node: ast.Call, function: str) -> Term:
        """``all(BODY for NAME in arg.LIST)`` or ``any(…)``."""
        form = (
            f"`{function}` takes one generator: "
            f"`{function}(x.endswith('@ours.com') for x in arg.to)`"
        )
        generator = node.args[0] if len(node.args) == 1 else None
        if not isinstance(generator, ast.GeneratorExp) or len(generator.generators) != 1:
            raise self.fail(node, f"`{ast.unparse(node)}` is not part of the language", form)
        loop = generator.generators[0]
        if not isinstance(loop.target, ast.Name) or loop.ifs or loop.is_async:
            raise self.fail(node, f"`{ast.unparse(node)}`: one name, no `if`", form)
        if self.bound is not None:
            raise self.fail(node, f"`{ast.unparse(node)}`: `all`/`any` inside another one")
        if loop.target.id in ("arg", "input"):
            raise self.fail(loop.target, f"`{loop.target.id}` is taken: name the item otherwise")
        of = self.term(loop.iter)
        if not isinstance(of, Arg):
            raise self.fail(loop.iter, f"`{function}` goes over a list argument: `arg.NAME`", form)
        self.bound = loop.target.id
        try:
            body = self.term(generator.elt)
        finally:
            self.bound = None
        return Quantified(function == "all", loop.target.id, of, body)


def _called(node: ast.Call) -> str | None:
    return node.func.id if isinstance(node.func, ast.Name) else None


def _is_number(t: Term) -> bool:
    return isinstance(t, Const) and not isinstance(t.value, bool | str)


def _op_text(op: ast.operator) -> str:
    return {
        ast.Div: "/",
        ast.FloorDiv: "//",
        ast.Mod: "%",
        ast.Pow: "**",
        ast.MatMult: "@",
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitAnd: "&",
        ast.BitXor: "^",
    }.get(type(op), type(op).__name__)


MAX_SOURCE = 10_000
"""Longest condition text accepted (characters)."""


def parse(source: object, *, where: str) -> Term:
    """The term ``source`` (condition text in Python syntax) says, never evaluated; a
    ``PolicyError`` naming ``where`` and the column for anything outside the language."""
    if not isinstance(source, str):
        raise PolicyError(f"{where}: a condition is text, not `{shown(source)}`")
    if not source.strip():
        raise PolicyError(f"{where}: a condition must not be empty")
    if len(source) > MAX_SOURCE:
        raise PolicyError(f"{where}: a condition is at most {MAX_SOURCE} characters")
    stripped = source.strip()
    try:
        tree = ast.parse(stripped, mode="eval")
    except SyntaxError as exc:
        column = exc.offset or 1
        raise PolicyError(
            f"{where}: condition `{stripped}`: not valid syntax (column {column})",
            hint="conditions are Python expressions, e.g. `arg.amount <= 100`",
        ) from None
    except (RecursionError, MemoryError, ValueError):
        raise PolicyError(f"{where}: condition `{stripped:.60}`: too deeply nested") from None
    try:
        return _Reader(stripped, where).term(tree.body)
    except RecursionError:
        raise PolicyError(f"{where}: condition `{stripped:.60}`: too deeply nested") from None
