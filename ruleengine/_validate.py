"""Parameter checks: one function per kind of value, one message style for all of them.

Constructors (rules, requirements, the reasoner) and the policy-file schema call these, so
the same mistake gets the same message wherever it is made::

    requirement `think-first`: force_at_step=`0` must be at least 1

``owner`` names what the parameter belongs to (``requirement `x``` or ``rule on `t```);
``None`` for the reasoner's own arguments. A ``bool`` is never accepted as a number (``True``
is an ``int`` in Python, and ``max_invocations=True`` is always a mistake), nor a float as
an integer.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from ruleengine.errors import PolicyError

__all__ = [
    "callables",
    "flag",
    "integer",
    "number",
    "one_of",
    "optional_integer",
    "optional_text",
    "owner_of",
    "priority",
    "sequence",
    "text",
]

T = TypeVar("T")

PRIORITY_HINT = "priorities are integers ≥ 1; higher wins, the default is 10"


def owner_of(requirement: str) -> str:
    """How messages name a requirement: ``requirement `name```."""
    return f"requirement `{requirement}`"


def _fail(
    owner: str | None, message: str, hint: str | None = None, *, name: str | None = None
) -> PolicyError:
    return PolicyError(f"{owner}: {message}" if owner else message, hint=hint, parameter=name)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(
    value: object,
    *,
    name: str,
    owner: str | None = None,
    least: int = 0,
    most: int | None = None,
    hint: str | None = None,
) -> int:
    """``value`` as an int in ``[least, most]``, or a ``PolicyError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(owner, f"{name}=`{_shown(value)}` must be an integer", hint, name=name)
    if value < least:
        bound = "must not be negative" if least == 0 else f"must be at least {least}"
        raise _fail(owner, f"{name}=`{value}` {bound}", hint, name=name)
    if most is not None and value > most:
        raise _fail(owner, f"{name}=`{value}` must be at most {most}", hint, name=name)
    return value


def optional_integer(
    value: object, *, name: str, owner: str | None = None, least: int = 0, most: int | None = None
) -> int | None:
    """``None``, or ``value`` as ``integer`` checks it."""
    if value is None:
        return None
    return integer(value, name=name, owner=owner, least=least, most=most)


def number(value: object, *, name: str, owner: str | None = None, positive: bool = True) -> float:
    """``value`` as a finite real number (int or float, not bool), positive by default."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(owner, f"{name}=`{_shown(value)}` must be a number", name=name)
    if value != value or value in (float("inf"), float("-inf")):
        raise _fail(owner, f"{name}=`{value}` must be finite", name=name)
    if positive and value <= 0:
        raise _fail(owner, f"{name}=`{value}` must be positive", name=name)
    return float(value)


def priority(value: object, *, owner: str | None) -> int:
    """A requirement's priority: an int ≥ 1."""
    return integer(value, name="priority", owner=owner, least=1, hint=PRIORITY_HINT)


def flag(value: object, *, name: str, owner: str | None = None) -> bool:
    """``value`` as a bool (only ``True`` or ``False``, not truthy values)."""
    if value is not True and value is not False:
        raise _fail(owner, f"{name}=`{_shown(value)}` must be true or false", name=name)
    return value


def text(value: object, *, name: str, owner: str | None = None, empty: bool = False) -> str:
    """``value`` as a string (non-empty unless ``empty``)."""
    if not isinstance(value, str):
        raise _fail(owner, f"{name}=`{_shown(value)}` must be text", name=name)
    if not value and not empty:
        raise _fail(owner, f"{name} must not be empty", name=name)
    return value


def optional_text(value: object, *, name: str, owner: str | None = None) -> str | None:
    """``None``, or ``value`` as (possibly empty) text."""
    return None if value is None else text(value, name=name, owner=owner, empty=True)


def one_of(value: object, choices: Collection[T], *, name: str, owner: str | None = None) -> T:
    """``value`` if it is one of ``choices``."""
    if isinstance(value, str | int | float | bool | type(None)) and value in choices:
        return value  # type: ignore[return-value]
    listed = " or ".join(f"`{c}`" for c in choices)
    shown = value if isinstance(value, str) else _shown(value)
    raise _fail(owner, f"{name}=`{shown}` must be {listed}", name=name)


def sequence(value: object, *, name: str, owner: str | None = None) -> tuple[Any, ...]:
    """``value`` as a tuple: a list, tuple, set or other iterable, but not text or a mapping."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise _fail(owner, f"{name}=`{_shown(value)}` must be a list", name=name)
    return tuple(value)


def callables(
    value: object, *, name: str, owner: str | None = None
) -> tuple[Callable[..., Any], ...]:
    """One callable, or a list of callables, as a tuple."""
    if callable(value) and not isinstance(value, type):
        return (value,)
    items = sequence(value, name=name, owner=owner)
    for item in items:
        if not callable(item):
            raise _fail(owner, f"{name} holds `{_shown(item)}`, which is not callable", name=name)
    return items
