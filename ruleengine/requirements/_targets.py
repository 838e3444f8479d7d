"""Tool references in requirement parameters: names, tool objects, or tool classes.

Names and objects with a ``name`` resolve at construction; a class resolves when the
requirement is bound to the declared tools (the one declared tool that is an instance of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER

__all__ = ["ToolRef", "name_now", "names_now", "resolve"]

ToolRef = object
"""A tool name, an object with a string ``name``, or a tool class."""


def name_now(ref: object) -> str | None:
    """The name behind ``ref`` if it is known without the declared tools, else ``None``."""
    if isinstance(ref, str):
        return ref or None
    if isinstance(ref, type):
        return None
    name = getattr(ref, "name", None)
    return name if isinstance(name, str) and name else None


def names_now(refs: Iterable[object]) -> tuple[str, ...] | None:
    """The names behind ``refs`` when all are known now, else ``None``."""
    names = []
    for ref in refs:
        name = name_now(ref)
        if name is None:
            return None
        names.append(name)
    return tuple(names)


def as_refs(value: object, *, owner: str, parameter: str) -> tuple[object, ...]:
    """``value`` as a tuple of tool references (one reference or a list of them).

    ``owner`` prefixes messages (``requirement `x```). A mapping is refused, not read as
    its keys: ``only_after={"search": 1}`` is a mistake, not a list.
    """
    if value is None:
        return ()
    if isinstance(value, str | type) or (hasattr(value, "name") and not isinstance(value, Mapping)):
        refs: tuple[object, ...] = (value,)
    elif isinstance(value, Iterable) and not isinstance(value, Mapping | bytes):
        refs = tuple(value)
    else:
        raise PolicyError(
            f"{owner}: {parameter}=`{value!r}` is not a tool or a list of tools",
            hint="name tools by string, by tool object, or by tool class",
            parameter=parameter,
        )
    for ref in refs:
        if not (isinstance(ref, type) or name_now(ref)):
            raise PolicyError(
                f"{owner}: {parameter} holds `{ref!r}`, which is not a tool",
                hint="name tools by string, by tool object, or by tool class",
                parameter=parameter,
            )
    return refs


def resolve(ref: object, tools: Sequence[object], *, owner: str, parameter: str) -> str:
    """The declared tool name ``ref`` stands for, or a ``PolicyError``."""
    declared = [_declared_name(t) for t in tools]
    if FINAL_ANSWER not in declared:
        declared.append(FINAL_ANSWER)
    if isinstance(ref, type):
        matches = [
            _declared_name(t) for t in tools if not isinstance(t, str) and isinstance(t, ref)
        ]
        if not matches:
            raise PolicyError(
                f"{owner}: {parameter} names tool class `{ref.__name__}`, "
                "but no declared tool is one",
                hint=_declared_hint(declared),
                parameter=parameter,
            )
        if len(matches) > 1:
            listed = ", ".join(f"`{m}`" for m in matches)
            raise PolicyError(
                f"{owner}: {parameter} names tool class `{ref.__name__}`, "
                f"which is ambiguous: {listed}",
                hint="name the tool by its name instead of its class",
                parameter=parameter,
            )
        return matches[0]
    name = name_now(ref)
    if name is None or name not in declared:
        raise PolicyError(
            f"{owner}: {parameter} names unknown tool `{name or repr(ref)}`",
            hint=_declared_hint(declared),
            parameter=parameter,
        )
    return name


def _declared_name(tool: object) -> str:
    name = name_now(tool)
    if name is None:
        raise PolicyError(f"`{tool!r}` is not a tool: pass a tool name or an object with a `name`")
    return name


def _declared_hint(declared: list[str]) -> str:
    return f"declared tools: {', '.join(f'`{t}`' for t in declared)}"
