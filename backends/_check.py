"""Checks shared by the backends' dataclasses: each bad value becomes a ``PolicyError``.

Messages name the field and quote the value, in the shape of every ruleengine error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, fields
from typing import Any

from ruleengine.errors import PolicyError

__all__ = [
    "TOOL_NAME",
    "as_tuple",
    "dataclass_repr",
    "fail",
    "json_value",
    "set_field",
    "text",
    "tool_name",
]

# OpenAI's rule for function names; most OpenAI-compatible servers follow it.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def fail(message: str, hint: str | None = None) -> PolicyError:
    return PolicyError(message, hint=hint)


def text(value: object, what: str, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise fail(f"{what} must be text: got `{value!r:.80}`")
    if not allow_empty and not value.strip():
        raise fail(f"{what} must not be empty")
    return value


def tool_name(value: object, what: str) -> str:
    name = text(value, what, allow_empty=False)
    if not TOOL_NAME.match(name):
        raise fail(
            f"{what} `{name:.80}` is not a valid tool name",
            "use 1 to 64 letters, digits, `_` or `-`, as chat completions require",
        )
    return name


def json_value(value: object, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise fail(f"{what} are not JSON: {error}") from error


def set_field(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)  # frozen dataclasses normalise in __post_init__


def dataclass_repr(obj: Any) -> str:
    """``Name(field=value, …)`` with only the fields that differ from their defaults."""
    parts = []
    for f in fields(obj):
        if not f.repr or f.name == "kind":
            continue
        value = getattr(obj, f.name)
        if f.default is not MISSING:
            default: object = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            parts.append(f"{f.name}={value!r}")
            continue
        if type(value) is not type(default) or value != default:
            parts.append(f"{f.name}={value!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def as_tuple(value: object, what: str) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise fail(f"{what} must be a list: got `{value!r:.80}`")
    return tuple(value)
