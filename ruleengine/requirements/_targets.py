"""Tool references in requirement parameters: names, tool objects, tool classes, or tags.

Names and objects with a ``name`` resolve at construction; a class resolves when the
requirement is bound to the declared tools (the one declared tool that is an instance of it),
and so does a tag (``tags("read")`` or ``"tag:read"``, where a parameter takes them: the
declared tools carrying it, in declared order; ``_tags.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from ruleengine._tags import Tags, declared_tags, tag_ref
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER

__all__ = ["ToolRef", "as_refs", "name_now", "names_now", "resolve", "resolve_all", "tagged"]

ToolRef = object
"""A tool name, an object with a string ``name``, a tool class, or ``Tags``."""

_REF_HINT = "name tools by string, by tool object, or by tool class"
_TAGGED_HINT = (
    'name tools by string, by tool object, by tool class, or by tag (`tags("read")`, `"tag:read"`)'
)


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


def as_refs(value: object, *, owner: str, parameter: str, tags: bool = False) -> tuple[object, ...]:
    """``value`` as a tuple of tool references (one reference or a list of them).

    ``owner`` prefixes messages (``requirement `x```). A mapping is refused, not read as
    its keys: ``only_after={"search": 1}`` is a mistake, not a list. With ``tags``, a
    reference may also be a tag: ``tags("read")``, or the text ``"tag:read"`` (made a
    ``Tags``); without, a ``Tags`` is not a tool.
    """
    hint = _TAGGED_HINT if tags else _REF_HINT
    if value is None:
        return ()
    if isinstance(value, str | type | Tags) or (
        hasattr(value, "name") and not isinstance(value, Mapping)
    ):
        refs: tuple[object, ...] = (value,)
    elif isinstance(value, Iterable) and not isinstance(value, Mapping | bytes):
        refs = tuple(value)
    else:
        raise PolicyError(
            f"{owner}: {parameter}=`{value!r}` is not a tool or a list of tools",
            hint=hint,
            parameter=parameter,
        )
    if tags:
        refs = tuple(
            (tag_ref(r, owner=owner, parameter=parameter) or r) if isinstance(r, str) else r
            for r in refs
        )
    for ref in refs:
        if not (isinstance(ref, type) or name_now(ref) or (tags and isinstance(ref, Tags))):
            raise PolicyError(
                f"{owner}: {parameter} holds `{ref!r}`, which is not a tool",
                hint=hint,
                parameter=parameter,
            )
    return refs


def resolve(ref: object, tools: Sequence[object], *, owner: str, parameter: str) -> str:
    """The declared tool name ``ref`` stands for, or a ``PolicyError``."""
    declared = [_declared_name(t) for t in tools]
    if FINAL_ANSWER not in declared:
        declared.append(FINAL_ANSWER)
    if isinstance(ref, Tags):
        carrying = tagged(ref, tools, owner=owner, parameter=parameter)
        if len(carrying) > 1:
            listed = ", ".join(f"`{m}`" for m in carrying)
            raise PolicyError(
                f"{owner}: {parameter} names {ref.described()}, which {len(carrying)} tools"
                f" carry: {listed}",
                hint=f"{parameter} is one tool: name it by its name",
                parameter=parameter,
            )
        return carrying[0]
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


def resolve_all(
    ref: object,
    tools: Sequence[object],
    *,
    owner: str,
    parameter: str,
    target: str | None = None,
) -> tuple[str, ...]:
    """The declared tool names ``ref`` stands for in a tool list: one, or every tool carrying
    a tag (in declared order; ``target`` left out, when the list is about it)."""
    if not isinstance(ref, Tags):
        return (resolve(ref, tools, owner=owner, parameter=parameter),)
    matches = tuple(m for m in tagged(ref, tools, owner=owner, parameter=parameter) if m != target)
    if not matches:
        raise PolicyError(
            f"{owner}: {parameter} names {ref.described()}, which no declared tool carries"
            f" but the target `{target}` itself",
            hint="a tool cannot be ordered relative to itself: tag other tools too, or drop"
            " the tag from this list",
            parameter=parameter,
        )
    return matches


def tagged(ref: Tags, tools: Sequence[object], *, owner: str, parameter: str) -> tuple[str, ...]:
    """The declared tools carrying any of ``ref``'s tags, in declared order; a tag that no
    declared tool carries is a ``PolicyError`` naming it and listing the known tags."""
    carried = [(_declared_name(t), declared_tags(t)) for t in tools]
    known = list(dict.fromkeys(tag for _, found in carried for tag in found))
    for name in ref.names:
        if name not in known:
            if known:
                listed = ", ".join(f"`{t}`" for t in known)
                close = difflib.get_close_matches(name, known, n=1)
                hint = (f"did you mean `{close[0]}`? " if close else "") + f"known tags: {listed}"
            else:
                hint = (
                    "no declared tool carries a tag: declare them on the tools"
                    " (`@tool(tags=[...])`, or `tags = [...]` in a policy file's `[[tools]]`)"
                )
            raise PolicyError(
                f"{owner}: {parameter} names tag `{name}`, which no declared tool carries",
                hint=hint,
                parameter=parameter,
            )
    wanted = set(ref.names)
    return tuple(name for name, found in carried if wanted.intersection(found))


def _declared_name(tool: object) -> str:
    name = name_now(tool)
    if name is None:
        raise PolicyError(f"`{tool!r}` is not a tool: pass a tool name or an object with a `name`")
    return name


def _declared_hint(declared: list[str]) -> str:
    return f"declared tools: {', '.join(f'`{t}`' for t in declared)}"
