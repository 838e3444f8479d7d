"""The regular expressions conditions accept: a subset both Python and Z3 read the same way.

``matches(x, PATTERN)`` is a full match. The subset: literal characters, ``.`` (any character,
newlines included), classes (``[a-z0-9_]``, ``[^,]``), the escapes ``\\d`` ``\\w`` ``\\s``
(ASCII: ``[0-9]``, ``[A-Za-z0-9_]``, space, tab, newline, carriage return, form feed,
vertical tab) and their negations, escaped metacharacters (``\\.``, ``\\\\``, …), ``\\n``
``\\t`` ``\\r``, groups ``( )`` and ``(?: )``, alternation ``|``, and the quantifiers ``*``
``+`` ``?`` ``{m}`` ``{m,}`` ``{m,n}`` (a trailing ``?`` — lazy — is accepted: for a full
match it changes nothing). Anything else — anchors, back-references, look-arounds, flags,
named groups — is an error naming its column.

A pattern is parsed once into a tree (``Pattern``); ``python_pattern`` renders it for
``re.fullmatch`` with every class as explicit code-point ranges, and the Z3 encoding
(``_z3.py``) builds its regular expression from the same tree, so the two agree by
construction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

from ruleengine._base_errors import PolicyError

__all__ = [
    "MAX_PATTERN",
    "MAX_REPEAT",
    "Alt",
    "AnyChar",
    "Chars",
    "Node",
    "Pattern",
    "Repeat",
    "Seq",
    "parse_pattern",
    "python_pattern",
]

MAX_PATTERN = 1000
"""Longest pattern accepted (characters)."""
MAX_REPEAT = 1000
"""Largest bound of a ``{m,n}`` quantifier."""

Range: TypeAlias = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Chars:
    """One character from ``ranges`` (code points, inclusive), or outside them if
    ``negated``."""

    ranges: tuple[Range, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class AnyChar:
    """Any one character."""


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    item: Node
    least: int
    most: int | None


Node: TypeAlias = "Chars | AnyChar | Seq | Alt | Repeat"

_DIGIT: tuple[Range, ...] = ((0x30, 0x39),)
_WORD: tuple[Range, ...] = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: tuple[Range, ...] = ((0x09, 0x0D), (0x20, 0x20))
_CLASSES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_META = set("\\.^$*+?{}[]()|-/")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A parsed pattern: its source text and its tree."""

    source: str
    tree: Node


class _Parser:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.i = 0
        self.where = where

    def fail(self, problem: str, at: int | None = None) -> PolicyError:
        column = (self.i if at is None else at) + 1
        return PolicyError(
            f"{self.where}: pattern `{self.text}`: {problem} (character {column} of the pattern)",
            hint="patterns use literals, classes, `.`, `* + ? {m,n}`, `|` and groups; "
            "they always match the whole value",
        )

    def peek(self) -> str | None:
        return self.text[self.i] if self.i < len(self.text) else None

    def parse(self) -> Node:
        node = self.alternation()
        if self.i < len(self.text):
            raise self.fail("unbalanced `)`")
        return node

    def alternation(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Node:
        items: list[Node] = []
        while (c := self.peek()) is not None and c not in "|)":
            items.append(self.quantified(self.atom()))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantified(self, item: Node) -> Node:
        while (c := self.peek()) is not None and c in "*+?{":
            start = self.i
            if c == "{":
                least, most = self.bounds()
            else:
                self.i += 1
                least, most = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            if isinstance(item, Repeat) and start > 0 and self.text[start - 1] in "*+?}":
                if c == "?":  # lazy: the same language for a full match
                    continue
                raise self.fail("a quantifier follows a quantifier", start)
            item = Repeat(item, least, most)
        return item

    def bounds(self) -> tuple[int, int | None]:
        start = self.i
        end = self.text.find("}", start)
        body = self.text[start + 1 : end] if end > 0 else ""
        match = re.fullmatch(r"(\d+)(,(\d*))?", body)
        if match is None:
            raise self.fail("`{` must start a bound such as `{2}`, `{2,}` or `{2,5}`", start)
        least = int(match.group(1))
        most = (
            least if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
        )
        if least > MAX_REPEAT or (most is not None and most > MAX_REPEAT):
            raise self.fail(f"a bound above {MAX_REPEAT}", start)
        if most is not None and most < least:
            raise self.fail(f"the bound `{{{body}}}` has its maximum below its minimum", start)
        self.i = end + 1
        return least, most

    def atom(self) -> Node:
        c = self.peek()
        start = self.i
        assert c is not None
        if c == "(":
            self.i += 1
            if self.text.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise self.fail("only plain groups `( )` and `(?: )` are supported", start)
            node = self.alternation()
            if self.peek() != ")":
                raise self.fail("`(` is never closed", start)
            self.i += 1
            return node
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return AnyChar()
        if c == "\\":
            return self.escape(in_class=False)
        if c in "*+?{":
            raise self.fail(f"`{c}` has nothing to repeat")
        if c in "^$":
            raise self.fail("anchors are not supported: a pattern always matches the whole value")
        if c == "]" or c == "}":
            raise self.fail(f"unbalanced `{c}`")
        self.i += 1
        return Chars(((ord(c), ord(c)),))

    def escape(self, *, in_class: bool) -> Chars:
        start = self.i
        self.i += 1
        c = self.peek()
        if c is None:
            raise self.fail("the pattern ends with `\\`", start)
        self.i += 1
        if c.lower() in _CLASSES:
            return Chars(_CLASSES[c.lower()], negated=c.isupper())
        if c in _CONTROL:
            code = ord(_CONTROL[c])
            return Chars(((code, code),))
        if c in _META or (in_class and c == "^") or not c.isalnum():
            return Chars(((ord(c), ord(c)),))
        raise self.fail(f"the escape `\\{c}` is not supported", start)

    def char_class(self) -> Chars:
        start = self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: list[Range] = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                raise self.fail("`[` is never closed", start)
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                raise self.fail("`[` inside a class must be escaped as `\\[`")
            if c == "\\":
                item = self.escape(in_class=True)
                if item.negated or len(item.ranges) != 1 or item.ranges[0][0] != item.ranges[0][1]:
                    if item.negated:
                        raise self.fail("a negated escape (`\\D`, `\\W`, `\\S`) inside a class")
                    ranges.extend(item.ranges)
                    continue
                low = item.ranges[0][0]
            else:
                self.i += 1
                low = ord(c)
            if self.peek() == "-" and self.i + 1 < len(self.text) and self.text[self.i + 1] != "]":
                dash = self.i
                self.i += 1
                c2 = self.peek()
                assert c2 is not None
                if c2 == "\\":
                    item = self.escape(in_class=True)
                    if len(item.ranges) != 1 or item.ranges[0][0] != item.ranges[0][1]:
                        raise self.fail("a range must end at one character", dash)
                    high = item.ranges[0][0]
                else:
                    self.i += 1
                    high = ord(c2)
                if high < low:
                    raise self.fail("a range's end comes before its start", dash)
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        return Chars(_merged(ranges), negated)


def _merged(ranges: list[Range]) -> tuple[Range, ...]:
    out: list[Range] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def parse_pattern(text: object, *, where: str) -> Pattern:
    """``text`` parsed, or a ``PolicyError`` naming ``where`` and the column at fault."""
    if not isinstance(text, str):
        raise PolicyError(f"{where}: a pattern must be a string literal, not `{text!r:.60}`")
    if len(text) > MAX_PATTERN:
        raise PolicyError(f"{where}: a pattern is at most {MAX_PATTERN} characters")
    return Pattern(text, _Parser(text, where).parse())


def _class_text(node: Chars) -> str:
    body = "".join(
        f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}"
        for low, high in node.ranges
    )
    if not body:
        return "[^\\s\\S]" if not node.negated else "[\\s\\S]"
    return f"[{'^' if node.negated else ''}{body}]"


def _text(node: Node) -> str:
    if isinstance(node, Chars):
        return _class_text(node)
    if isinstance(node, AnyChar):
        return "[\\s\\S]"
    if isinstance(node, Seq):
        return "(?:" + "".join(_text(i) for i in node.items) + ")"
    if isinstance(node, Alt):
        return "(?:" + "|".join(_text(o) for o in node.options) + ")"
    most = "" if node.most is None else str(node.most)
    return f"(?:{_text(node.item)}){{{node.least},{most}}}"


def python_pattern(pattern: Pattern) -> re.Pattern[str]:
    """The pattern for ``re.fullmatch``, every class as explicit code points."""
    return _compiled(pattern.tree)


_cache: dict[Node, re.Pattern[str]] = {}


def _compiled(tree: Node) -> re.Pattern[str]:
    found = _cache.get(tree)
    if found is None:
        if len(_cache) > 4096:
            _cache.clear()
        found = _cache[tree] = re.compile(_text(tree))
    return found
