"""Conditions built in Python: handles with the language's operators.

``arg.amount <= last("lookup_order").output.price`` builds the same term as the text
``"arg.amount <= last('lookup_order').output.price"``. Python's ``and``, ``or``, ``not`` and
``in`` cannot be overloaded, so conditions combine with ``&``, ``|`` and ``~`` and test
membership with ``.is_in([...])``; using a handle as a truth value is an error that says so.
"""

from __future__ import annotations

from fractions import Fraction

from ruleengine._base_errors import PolicyError
from ruleengine.conditions.regex import parse_pattern
from ruleengine.conditions.terms import (
    Affix,
    All,
    AnyOf,
    Arg,
    Arith,
    Cmp,
    Const,
    Input,
    IsNone,
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
    literal,
    scaled,
    text,
)
from ruleengine.conditions.types import shown

__all__ = ["Handle", "arg", "input_text", "last", "length", "matches", "outputs", "term_of"]


class Handle:
    """A term under construction in Python, with the language's operators. Combine
    conditions with ``&``, ``|`` and ``~`` (Python's ``and``/``or``/``not`` cannot be
    overloaded: using a handle as a truth value is an error)."""

    __slots__ = ("term",)

    def __init__(self, term: Term) -> None:
        self.term = term

    def __repr__(self) -> str:
        return f"Condition({text(self.term)!r})"

    def __bool__(self) -> bool:
        raise PolicyError(
            f"`{text(self.term)}` is a condition, not a truth value",
            hint="combine conditions with `&`, `|` and `~` (not `and`, `or`, `not`), "
            "and use `.is_in([...])` for membership",
        )

    def __getattr__(self, name: str) -> Handle:
        # ``last("T").output.KEY``: a path into an output. (One class for every handle:
        # a subclass would have its reflected comparisons tried first, so
        # ``arg.a <= last("T").output.b`` would build ``… >= arg.a``.)
        if name.startswith("_") or not isinstance(self.term, LastOut):
            raise AttributeError(name)
        return Handle(LastOut(self.term.tool, (*self.term.keys, name)))

    def __getitem__(self, key: object) -> Handle:
        if not isinstance(self.term, LastOut):
            raise PolicyError(
                f"`{text(self.term)}[{shown(key)}]`: only an output has keys",
                hint='e.g. last("lookup_order").output["price"]',
            )
        if not isinstance(key, str | int) or isinstance(key, bool):
            raise PolicyError(f"`{shown(key)}` is not an output key (a string or an integer)")
        return Handle(LastOut(self.term.tool, (*self.term.keys, key)))

    def _cmp(self, op: str, other: object) -> Handle:
        return Handle(Cmp(op, self.term, term_of(other)))

    def __eq__(self, other: object) -> Handle:  # type: ignore[override]
        return self._cmp("==", other)

    def __ne__(self, other: object) -> Handle:  # type: ignore[override]
        return self._cmp("!=", other)

    def __lt__(self, other: object) -> Handle:
        return self._cmp("<", other)

    def __le__(self, other: object) -> Handle:
        return self._cmp("<=", other)

    def __gt__(self, other: object) -> Handle:
        return self._cmp(">", other)

    def __ge__(self, other: object) -> Handle:
        return self._cmp(">=", other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: object) -> Handle:
        return Handle(Arith("+", self.term, term_of(other)))

    def __radd__(self, other: object) -> Handle:
        return Handle(Arith("+", term_of(other), self.term))

    def __sub__(self, other: object) -> Handle:
        return Handle(Arith("-", self.term, term_of(other)))

    def __rsub__(self, other: object) -> Handle:
        return Handle(Arith("-", term_of(other), self.term))

    def __mul__(self, other: object) -> Handle:
        return Handle(scaled(term_of(other), self.term, "*"))

    __rmul__ = __mul__

    def __neg__(self) -> Handle:
        return Handle(Scale(Fraction(-1), self.term))

    def __and__(self, other: object) -> Handle:
        return Handle(All((self.term, term_of(other))))

    def __rand__(self, other: object) -> Handle:
        return Handle(All((term_of(other), self.term)))

    def __or__(self, other: object) -> Handle:
        return Handle(AnyOf((self.term, term_of(other))))

    def __ror__(self, other: object) -> Handle:
        return Handle(AnyOf((term_of(other), self.term)))

    def __invert__(self) -> Handle:
        return Handle(Negation(self.term))

    def is_in(self, container: object) -> Handle:
        """``self in container`` (a list of literals, ``outputs(...)``, or a string to find
        ``self`` in)."""
        return Handle(Member(self.term, term_of(container)))

    def not_in(self, container: object) -> Handle:
        """``self not in container``."""
        return Handle(Member(self.term, term_of(container), negated=True))

    def contains(self, item: object) -> Handle:
        """``item in self``."""
        return Handle(Member(term_of(item), self.term))

    def startswith(self, prefix: object) -> Handle:
        return Handle(Affix("startswith", self.term, term_of(prefix)))

    def endswith(self, suffix: object) -> Handle:
        return Handle(Affix("endswith", self.term, term_of(suffix)))

    def is_none(self) -> Handle:
        """``arg.NAME is None``: the call leaves the argument out (or gives ``None``)."""
        return Handle(IsNone(self._argument("is_none")))

    def is_not_none(self) -> Handle:
        """``arg.NAME is not None``: the call gives the argument."""
        return Handle(IsNone(self._argument("is_not_none"), negated=True))

    def _argument(self, method: str) -> Arg:
        if not isinstance(self.term, Arg):
            raise PolicyError(
                f"`{text(self.term)}.{method}()`: only an argument can be left out",
                hint="test an argument: `arg.NAME.is_none()`",
            )
        return self.term


class _Args:
    """``arg.NAME``: an argument of the proposed call."""

    def __getattr__(self, name: str) -> Handle:
        if name.startswith("__"):
            raise AttributeError(name)
        return Handle(Arg(name))

    def __repr__(self) -> str:
        return "arg"


class _Call:
    """``last("T")``: the latest successful call of tool T."""

    def __init__(self, tool: str) -> None:
        self.tool = tool

    @property
    def arguments(self) -> _Fields:
        return _Fields(lambda name: LastArg(self.tool, name))

    @property
    def output(self) -> Handle:
        return Handle(LastOut(self.tool, ()))


class _Fields:
    def __init__(self, make: object) -> None:
        self._make = make

    def __getattr__(self, name: str) -> Handle:
        if name.startswith("__"):
            raise AttributeError(name)
        return Handle(self._make(name))  # type: ignore[operator]


arg = _Args()
"""The proposed call's arguments: ``arg.amount``."""

input_text = Handle(Input())
"""The run's input (the user's prompt), a string (``input`` in condition text)."""


def last(tool: object) -> _Call:
    """The latest successful call of ``tool``: ``.arguments.NAME``, ``.output.KEY…``."""
    return _Call(_tool_literal(tool, "last"))


def outputs(tool: object) -> Handle:
    """Every output of ``tool``'s successful calls, for ``in``."""
    return Handle(Outputs(_tool_literal(tool, "outputs")))


def length(value: object) -> Handle:
    """``len(value)``: a string's characters or a list's items."""
    return Handle(Len(term_of(value)))


def matches(value: object, pattern: object) -> Handle:
    """Whether all of ``value`` matches ``pattern`` (the supported subset: see
    ``ruleengine.conditions.regex``)."""
    return Handle(Matches(term_of(value), parse_pattern(pattern, where="matches")))


def term_of(value: object) -> Term:
    """The term a handle holds, or a literal (a list of literals) as a term."""
    if isinstance(value, Handle):
        return value.term
    if isinstance(value, list | tuple):
        return ListConst(tuple(literal(v) for v in value))
    return Const(literal(value))


def _tool_literal(tool: object, function: str) -> str:
    name = getattr(tool, "name", tool)
    if not isinstance(name, str) or not name:
        raise PolicyError(f'{function}(`{shown(tool)}`): name a tool, e.g. {function}("search")')
    return name
