"""YAML text → plain data and places, read safely (``_formats.parse_yaml`` imports it on
demand): PyYAML's ``SafeLoader`` without anchors or aliases (no alias bombs), and no tag but
the plain data types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from ruleengine.policy._places import FormatError, Places, Text, child

__all__ = ["parse"]

_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
)


class _PolicyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, without anchors or aliases: a file is plain data, written out."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise FormatError(
                "YAML anchors and aliases are not allowed in policy files",
                event.start_mark.line + 1,
                hint="write the value out in full",
            )
        return super().compose_node(parent, index)  # type: ignore[arg-type]


def parse(text: str) -> tuple[object, Places]:
    """``text`` as one YAML document of plain data, with the place of every key and item."""
    try:
        loader = _PolicyLoader(text)
    except yaml.reader.ReaderError as exc:
        line = Text(text).place(exc.position)[0]
        raise FormatError(
            f"invalid YAML: {exc.reason} (character {exc.character!r})", line
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {"": (1, 1)}
        places: Places = {"": _mark(node)}
        return _YamlWalk(loader, places).value(node, ""), places
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = exc.problem or "not YAML"
        if exc.context and exc.problem and not exc.context.startswith("while "):
            problem = f"{exc.context}, {exc.problem}"
        raise FormatError(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error above has a mark
        raise FormatError(f"invalid YAML: {exc}", 1) from None
    finally:
        loader.dispose()


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!")


class _YamlWalk:
    """Nodes → plain data, recording where each key and item starts."""

    def __init__(self, loader: _PolicyLoader, places: Places) -> None:
        self.loader = loader
        self.places = places

    def value(self, node: yaml.Node, path: str) -> Any:
        if node.tag not in _PLAIN_TAGS:
            raise FormatError(
                f"the tag `{_tag(node.tag)}` is not allowed in policy files",
                _mark(node)[0],
                path=path,
                hint="policy files hold plain data: text, numbers, booleans, lists, mappings",
            )
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.places.setdefault(child(path, index), _mark(item))
                items.append(self.value(item, child(path, index)))
            return items
        construct: Callable[[yaml.Node], Any] = self.loader.construct_object
        return construct(node)

    def mapping(self, node: yaml.MappingNode, path: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = _mark(key_node)[0]
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise FormatError(
                    "YAML merge keys (`<<`) are not allowed in policy files",
                    line,
                    path=path,
                    hint="write the keys out in full",
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise FormatError("a key must be text, not a list or a mapping", line, path=path)
            if key_node.tag != "tag:yaml.org,2002:str":
                raise FormatError(
                    f"key `{key_node.value}` is not text", line, path=path, hint="quote the key"
                )
            key = key_node.value
            key_path = child(path, key)
            if key in result:
                raise FormatError(
                    f"duplicate key `{key}`",
                    line,
                    path=key_path,
                    hint="each key may appear once in a mapping",
                )
            self.places.setdefault(key_path, _mark(key_node))
            result[key] = self.value(value_node, key_path)
        return result
