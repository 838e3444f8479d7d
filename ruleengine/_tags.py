"""Tool tags: groups of declared tools that a requirement names at once.

A tool declares its tags (``@tool(tags=["read"])``, a ``Tool``'s ``tags``, ``tags = ["read"]``
in a policy file's ``[[tools]]`` table). A requirement names every tool carrying a tag with
``tags("read")`` in Python, or ``"tag:read"`` (in a file, or in Python alike), wherever it
takes a list of tools: ``only_before``, ``only_after``, ``force_after`` (of
``ConditionalRequirement``), ``include`` and ``exclude`` (of ``AskPermissionRequirement``).

A tag is resolved when the requirement is bound to the declared tools, to the tools that carry
it, in declared order; the bound requirement, and so its monitor and the static checker, see
plain names. A tag that no declared tool carries is a ``PolicyError`` naming it and listing
the tags that are declared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ruleengine.errors import PolicyError

__all__ = ["TAG_PREFIX", "Tags", "declared_tags", "tag_names", "tag_ref", "tags"]

TAG_PREFIX = "tag:"
"""How a tool list names a tag as text: ``"tag:read"``."""

_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_TAG_HINT = "a tag is letters, digits, `_`, `-` and `.` (e.g. `read`, `side-effects`)"


class Tags:
    """The declared tools that carry any of ``names``: ``tags("read")``, resolved when the
    requirement that holds it is bound to the declared tools."""

    __slots__ = ("names",)

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        """The tag names (a tool carrying any of them is named)."""

    def __repr__(self) -> str:
        return f"tags({', '.join(repr(n) for n in self.names)})"

    def __str__(self) -> str:
        return ", ".join(f"{TAG_PREFIX}{n}" for n in self.names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tags) and other.names == self.names

    def __hash__(self) -> int:
        return hash(("tags", self.names))

    def described(self) -> str:
        """The tags in a message: ``tag `read``` or ``tags `read`, `net```."""
        listed = ", ".join(f"`{n}`" for n in self.names)
        return f"tag {listed}" if len(self.names) == 1 else f"tags {listed}"


def tags(*names: str) -> Tags:
    """Every declared tool that carries one of the tags ``names``, in declared order (a tool
    list's item, as ``only_after=tags("read")`` or ``include=[tags("write"), "pay"]``)."""
    if not names:
        raise PolicyError("tags() needs at least one tag name", hint='e.g. tags("read")')
    for n in names:
        if not isinstance(n, str) or not _TAG.fullmatch(n):
            raise PolicyError(f"tags(): `{_shown(n)}` is not a tag name", hint=_TAG_HINT)
    return Tags(tuple(dict.fromkeys(names)))


def tag_ref(text: str, *, owner: str, parameter: str) -> Tags | None:
    """The tag that ``text`` names (``"tag:read"``), or ``None`` when it names a tool."""
    if not text.startswith(TAG_PREFIX):
        return None
    return Tags((_tag(text[len(TAG_PREFIX) :], name=parameter, owner=owner, shown=text),))


def tag_names(value: object, *, name: str = "tags", owner: str | None = None) -> tuple[str, ...]:
    """A tool's declared tags: one tag, or a list of them (repeats dropped, order kept)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (_tag(value, name=name, owner=owner),)
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise _fail(owner, f"{name}=`{_shown(value)}` must be a list of tags", name)
    return tuple(dict.fromkeys(_tag(item, name=name, owner=owner) for item in value))


def declared_tags(tool: object) -> tuple[str, ...]:
    """The tags a declared tool carries: its ``tags`` attribute (names carry none)."""
    if isinstance(tool, str | tuple):
        return ()
    value = getattr(tool, "tags", None)
    if value is None:
        return ()
    name = getattr(tool, "name", None)
    return tag_names(value, owner=f"tool `{name}`" if isinstance(name, str) else None)


def _tag(value: object, *, name: str, owner: str | None = None, shown: str | None = None) -> str:
    if not isinstance(value, str) or not _TAG.fullmatch(value):
        what = shown if shown is not None else value if isinstance(value, str) else _shown(value)
        raise _fail(owner, f"{name} holds `{what}`, which is not a tag name", name, _TAG_HINT)
    return value


def _fail(owner: str | None, message: str, name: str, hint: str | None = None) -> PolicyError:
    return PolicyError(f"{owner}: {message}" if owner else message, hint=hint, parameter=name)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
