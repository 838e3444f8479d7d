"""The one intermediate representation of constraints: ``Expr`` nodes and their builders.

Every rule and constraint a requirement emits becomes a formula over three kinds of per-step
atoms: ``allowed(t)``, ``hidden(t)`` and ``can_stop`` (which *is* ``allowed("final_answer")``).
``forced(t)`` is a *hard force* and may only stand as a whole constraint.

Build formulas with the lowercase builders (``allowed``, ``at_most``, …) and the operators
``&``, ``|``, ``~``: they fold constants and flatten nested ``and``/``or``. The CapWords node
classes are what the encoder and the evaluator match on; do not construct them directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from ruleengine import _validate
from ruleengine.errors import PolicyError

__all__ = [
    "FINAL_ANSWER",
    "MAX_DEPTH",
    "Allowed",
    "And",
    "AtLeast",
    "AtMost",
    "CanStop",
    "Const",
    "Exactly",
    "Expr",
    "Forced",
    "Hidden",
    "Implies",
    "Not",
    "Operand",
    "Or",
    "all_of",
    "allowed",
    "any_of",
    "at_least",
    "at_most",
    "can_stop",
    "children",
    "exactly",
    "forced",
    "hidden",
    "implies",
    "mentioned_tools",
    "tool_name",
    "walk",
]

FINAL_ANSWER = "final_answer"
"""The name of the tool whose call ends a run; it is always declared, always last."""


class _Named(Protocol):
    @property
    def name(self) -> str: ...


ToolRef: TypeAlias = "str | _Named"
Operand: TypeAlias = "Expr | bool"


def tool_name(tool: object) -> str:
    """The tool name behind ``tool``: a string, or any object with a string ``name``."""
    if isinstance(tool, str):
        if not tool:
            raise PolicyError("a tool name must not be empty")
        return tool
    name = getattr(tool, "name", None)
    if isinstance(name, str) and name:
        return name
    raise PolicyError(f"`{tool!r}` is not a tool: pass a tool name or an object with a `name`")


class Expr:
    """A boolean formula over the atoms of one step. Combine with ``&``, ``|``, ``~``."""

    __slots__ = ()

    def __and__(self, other: Operand) -> Expr:
        return all_of(self, other)

    def __rand__(self, other: Operand) -> Expr:
        return all_of(other, self)

    def __or__(self, other: Operand) -> Expr:
        return any_of(self, other)

    def __ror__(self, other: Operand) -> Expr:
        return any_of(other, self)

    def __invert__(self) -> Expr:
        return _negate(self)

    def __post_init__(self) -> None:
        fields = self.__dataclass_fields__  # type: ignore[attr-defined]
        values = tuple(getattr(self, f) for f in fields if f[0] != "_")
        object.__setattr__(self, "_hash", hash((type(self).__name__, values)))
        if "_depth" in fields:  # a node with sub-formulas
            depth = 1 + max(_depths(values), default=1)
            if depth > MAX_DEPTH:
                raise PolicyError(
                    f"a formula is nested {depth} levels deep (`{type(self).__name__}` over"
                    f" a formula {depth - 1} deep): the limit is {MAX_DEPTH}",
                    hint="build it flatter: `&`, `|`, `all_of` and `any_of` flatten nested"
                    " conjunctions and disjunctions, and separate items need no nesting",
                )
            object.__setattr__(self, "_depth", depth)

    def __bool__(self) -> bool:
        raise PolicyError(
            f"`{self!r}` is a formula, not a Python truth value",
            hint="combine formulas with `&`, `|`, `~` (not `and`, `or`, `not`)",
        )


MAX_DEPTH = 100
"""How deeply a formula may nest (an atom is 1 deep). Every walk over a formula (printing,
evaluating, encoding, comparing) then stays within Python's recursion limit; building a deeper
one raises ``PolicyError``."""


def _depths(values: tuple[object, ...]) -> Iterator[int]:
    for value in values:
        if isinstance(value, Expr):
            yield getattr(value, "_depth", 1)
        elif isinstance(value, tuple):
            for item in value:
                yield getattr(item, "_depth", 1)


def _hashed(cls: type) -> type:
    """Give a frozen slotted node a hash computed once (cores and caches hash nodes a lot)."""
    cls.__hash__ = _cached_hash  # type: ignore[assignment]
    return cls


def _cached_hash(self: Expr) -> int:
    return self._hash  # type: ignore[attr-defined, no-any-return]


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Const(Expr):
    value: bool
    _hash: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return repr(self.value)


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Allowed(Expr):
    tool: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"allowed({self.tool!r})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Hidden(Expr):
    tool: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"hidden({self.tool!r})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class CanStop(Expr):
    _hash: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return "can_stop"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Forced(Expr):
    tool: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"forced({self.tool!r})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Not(Expr):
    arg: Expr
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        inner = repr(self.arg)
        if isinstance(self.arg, And | Or):
            inner = f"({inner})"
        return f"~{inner}"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class And(Expr):
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return " & ".join(f"({a!r})" if isinstance(a, Or) else repr(a) for a in self.args)


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Or(Expr):
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return " | ".join(f"({a!r})" if isinstance(a, And) else repr(a) for a in self.args)


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Implies(Expr):
    lhs: Expr
    rhs: Expr
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"implies({self.lhs!r}, {self.rhs!r})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class AtMost(Expr):
    k: int
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"at_most({self.k}, {', '.join(map(repr, self.args))})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class AtLeast(Expr):
    k: int
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"at_least({self.k}, {', '.join(map(repr, self.args))})"


@_hashed
@dataclass(frozen=True, slots=True, repr=False)
class Exactly(Expr):
    k: int
    args: tuple[Expr, ...]
    _hash: int = field(init=False, repr=False, compare=False)
    _depth: int = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"exactly({self.k}, {', '.join(map(repr, self.args))})"


TRUE = Const(True)
FALSE = Const(False)

can_stop: Expr = CanStop()
"""The atom *the agent may stop at this step*; the same as ``allowed("final_answer")``."""


def allowed(tool: ToolRef) -> Expr:
    """The atom *``tool`` is allowed at this step*."""
    return Allowed(tool_name(tool))


def hidden(tool: ToolRef) -> Expr:
    """The atom *``tool`` is hidden at this step* (hidden implies not allowed)."""
    return Hidden(tool_name(tool))


def forced(tool: ToolRef) -> Expr:
    """A hard force: ``tool`` must be allowed and is the step's forced tool.

    Only valid as a whole constraint, never inside another formula.
    """
    return Forced(tool_name(tool))


def _operand(value: object) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return TRUE if value else FALSE
    raise PolicyError(
        f"`{value!r}` cannot be part of a formula",
        hint="use `allowed(...)`, `hidden(...)`, `can_stop`, their combinations, or a bool",
    )


def all_of(*operands: Operand) -> Expr:
    """The conjunction of ``operands`` (flattened; ``True`` when empty)."""
    args: list[Expr] = []
    for op in map(_operand, operands):
        if isinstance(op, Const):
            if not op.value:
                return FALSE
            continue
        args.extend(op.args if isinstance(op, And) else (op,))
    args = list(dict.fromkeys(args))
    if not args:
        return TRUE
    return args[0] if len(args) == 1 else And(tuple(args))


def any_of(*operands: Operand) -> Expr:
    """The disjunction of ``operands`` (flattened; ``False`` when empty)."""
    args: list[Expr] = []
    for op in map(_operand, operands):
        if isinstance(op, Const):
            if op.value:
                return TRUE
            continue
        args.extend(op.args if isinstance(op, Or) else (op,))
    args = list(dict.fromkeys(args))
    if not args:
        return FALSE
    return args[0] if len(args) == 1 else Or(tuple(args))


def _negate(value: Operand) -> Expr:
    op = _operand(value)
    if isinstance(op, Const):
        return FALSE if op.value else TRUE
    if isinstance(op, Not):
        return op.arg
    return Not(op)


def implies(lhs: Operand, rhs: Operand) -> Expr:
    """``lhs`` implies ``rhs``."""
    a, b = _operand(lhs), _operand(rhs)
    if isinstance(a, Const):
        return b if a.value else TRUE
    if isinstance(b, Const):
        return TRUE if b.value else _negate(a)
    return Implies(a, b)


def _cardinality(name: str, k: object, operands: Iterable[Operand]) -> tuple[int, list[Expr]]:
    k = _validate.integer(k, name="k", owner=name)
    args: list[Expr] = []
    for op in map(_operand, operands):
        if isinstance(op, Const):
            k -= int(op.value)  # a constant true operand uses up one of the k
            continue
        args.append(op)
    return k, args


def at_most(k: int, *operands: Operand) -> Expr:
    """At most ``k`` of ``operands`` hold."""
    k, args = _cardinality("at_most", k, operands)
    if k < 0:
        return FALSE
    if k >= len(args):
        return TRUE
    if k == 0:
        return all_of(*(_negate(a) for a in args))
    return AtMost(k, tuple(args))


def at_least(k: int, *operands: Operand) -> Expr:
    """At least ``k`` of ``operands`` hold."""
    k, args = _cardinality("at_least", k, operands)
    if k <= 0:
        return TRUE
    if k > len(args):
        return FALSE
    if k == len(args):
        return all_of(*args)
    if k == 1:
        return any_of(*args)
    return AtLeast(k, tuple(args))


def exactly(k: int, *operands: Operand) -> Expr:
    """Exactly ``k`` of ``operands`` hold."""
    k, args = _cardinality("exactly", k, operands)
    if k < 0 or k > len(args):
        return FALSE
    if k == 0:
        return all_of(*(_negate(a) for a in args))
    if k == len(args):
        return all_of(*args)
    return Exactly(k, tuple(args))


def children(node: Expr) -> tuple[Expr, ...]:
    """The direct sub-formulas of ``node`` (none for atoms and constants)."""
    match node:
        case Not(arg=a):
            return (a,)
        case And(args=xs) | Or(args=xs) | AtMost(args=xs) | AtLeast(args=xs) | Exactly(args=xs):
            return xs
        case Implies(lhs=a, rhs=b):
            return (a, b)
        case Allowed() | Hidden() | CanStop() | Forced() | Const():
            return ()
        case _:
            raise AssertionError(f"unknown node {node!r}")


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of ``expr``, ``expr`` first (pre-order)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def mentioned_tools(expr: Expr) -> frozenset[str]:
    """The tools whose atoms occur in ``expr`` (``can_stop`` mentions ``final_answer``)."""
    found: set[str] = set()
    for node in walk(expr):
        if isinstance(node, Allowed | Hidden | Forced):
            found.add(node.tool)
        elif isinstance(node, CanStop):
            found.add(FINAL_ANSWER)
    return frozenset(found)
