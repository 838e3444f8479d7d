"""TOML, JSON and YAML text → plain data, plus the line of every key and list item.

Each ``parse_*`` returns ``(data, places)``: ``places`` maps key paths (``""`` for the top,
``requirements[2].max_invocations``) to ``(line, column)``, both from 1, so errors and reports
can cite ``file:line``. YAML nodes carry their marks. ``tomllib`` and ``json`` give no
positions, so after they have accepted the text a small scanner of our own walks it again,
following only its structure (tables, keys, arrays, inline tables) and skipping values.

Every problem with the text is a ``FormatError`` with a line. YAML is read safely: a
``SafeLoader`` that refuses anchors and aliases (no alias bombs) and every tag but the plain
data types (``_yaml.py``, imported only for a YAML file), and duplicate keys in any format
are refused. Key paths, places and ``FormatError`` are in ``_places.py``, which ``_yaml.py``
shares.
"""

from __future__ import annotations

import contextlib
import json
import re
import tomllib

from ruleengine.policy._places import FormatError, Places, Text, child

__all__ = ["parse_json", "parse_toml", "parse_yaml"]


def _lowered(message: str) -> str:
    """A parser's message in our style: lowercase start (unless it starts with an acronym)."""
    return message[:1].lower() + message[1:] if message[1:2].islower() else message


# -- TOML ----------------------------------------------------------------------------------

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$|\s*\(at end of document\)$")


def parse_toml(text: str) -> tuple[object, Places]:
    """``text`` as TOML, with the place of every key, table and array item."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _TOML_AT.search(message)
        line = int(found.group(1)) if found and found.group(1) else text.count("\n") + 1
        problem = _lowered(_TOML_AT.sub("", message))
        raise FormatError(f"invalid TOML: {problem}", line) from None
    return data, _TomlScanner(text).places()


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_SCALAR = re.compile(r"[^,\]}\n#]*")


class _Scanner:
    """A cursor over text that tomllib or json has already accepted."""

    toml = False
    """Whether TOML's comments and its other string quotes apply (JSON has neither)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self._text = Text(text)
        self.found: Places = {"": (1, 1)}

    def record(self, path: str, offset: int) -> None:
        self.found.setdefault(path, self._text.place(offset))

    def at(self, token: str) -> bool:
        return self.s.startswith(token, self.i)

    def skip(self, newlines: bool) -> None:
        """Skip blanks and comments, and line ends too when ``newlines``."""
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#" and self.toml:
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            else:
                return

    def quoted(self) -> str:
        """The raw text of the string at the cursor, quotes included; moves past it."""
        s, start = self.s, self.i
        quotes = ('"""', "'''", '"', "'") if self.toml else ('"',)
        quote = next(q for q in quotes if s.startswith(q, start))
        escapes = quote[0] == '"'
        i = start + len(quote)
        while True:
            end = s.index(quote, i)
            if escapes and _escaped(s, end):
                i = end + 1
                continue
            if len(quote) == 3:
                # TOML: up to two more quotes right before the closing ones are content.
                extra = 0
                while extra < 2 and s.startswith(quote[0], end + 3 + extra):
                    extra += 1
                end += extra
            self.i = end + len(quote)
            return s[start : self.i]


def _escaped(s: str, index: int) -> bool:
    """Whether the quote at ``index`` is escaped (an odd number of backslashes before it)."""
    count = 0
    while index - count - 1 >= 0 and s[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


class _TomlScanner(_Scanner):
    """Walks TOML structure: headers, dotted keys, arrays and inline tables."""

    toml = True

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._arrays: dict[str, int] = {}

    def places(self) -> Places:
        # tomllib accepted the text, so the walk cannot fail; were it to, the places found
        # so far still stand and the rest fall back to their enclosing keys.
        with contextlib.suppress(ValueError, IndexError):
            self._document()
        return self.found

    def _document(self) -> None:
        table = ""
        while True:
            self.skip(newlines=True)
            if self.i >= len(self.s):
                return
            start = self.i
            if self.at("["):
                array = self.at("[[")
                self.i += 2 if array else 1
                table = self._table(self._keys(), array=array, offset=start)
                self.i = self.s.index("]", self.i) + (2 if array else 1)
            else:
                self._key_value(table)

    def _table(self, keys: list[str], *, array: bool, offset: int) -> str:
        path = ""
        for n, key in enumerate(keys):
            path = child(path, key)
            if array and n == len(keys) - 1:
                self.record(path, offset)
                count = self._arrays.get(path, 0)
                self._arrays[path] = count + 1
                path = child(path, count)
            elif path in self._arrays:
                path = child(path, self._arrays[path] - 1)
            self.record(path, offset)
        return path

    def _keys(self) -> list[str]:
        keys = []
        while True:
            self.skip(newlines=False)
            if self.at('"') or self.at("'"):
                keys.append(_key_text(self.quoted()))
            else:
                found = _BARE_KEY.match(self.s, self.i)
                if found is None:
                    raise ValueError(self.i)
                keys.append(found.group())
                self.i = found.end()
            self.skip(newlines=False)
            if not self.at("."):
                return keys
            self.i += 1

    def _key_value(self, table: str) -> None:
        start = self.i
        path = table
        for key in self._keys():
            path = child(path, key)
            self.record(path, start)
        self.skip(newlines=False)
        self.i += 1  # `=`
        self.skip(newlines=False)
        self._value(path)

    def _value(self, path: str) -> None:
        if self.at("["):
            self.i += 1
            index = 0
            while True:
                self.skip(newlines=True)
                if self.at("]"):
                    self.i += 1
                    return
                if self.at(","):
                    self.i += 1
                    continue
                self.record(child(path, index), self.i)
                self._value(child(path, index))
                index += 1
        elif self.at("{"):
            self.i += 1
            while True:
                self.skip(newlines=False)
                if self.at("}"):
                    self.i += 1
                    return
                if self.at(","):
                    self.i += 1
                    continue
                self._key_value(path)
        elif self.at('"') or self.at("'"):
            self.quoted()
        else:
            found = _TOML_SCALAR.match(self.s, self.i)
            assert found is not None  # INVARIANT: the pattern matches the empty string
            if found.end() == self.i:
                raise ValueError(self.i)
            self.i = found.end()


def _key_text(raw: str) -> str:
    """A quoted TOML key's text (basic strings decode their escapes; literal ones do not)."""
    if raw.startswith("'"):
        return raw[1:-1]
    try:
        value = json.loads(raw)
    except ValueError:
        return raw[1:-1]
    return value if isinstance(value, str) else raw[1:-1]


# -- JSON ----------------------------------------------------------------------------------

_JSON_SCALAR = re.compile(r"[^,\]}\s]+")
_NOT_JSON = frozenset({"NaN", "Infinity", "-Infinity"})


def parse_json(text: str) -> tuple[object, Places]:
    """``text`` as JSON (no duplicate keys, no ``NaN``), with the place of every key and item."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = _lowered(exc.msg)
        raise FormatError(f"invalid JSON: {problem} (column {exc.colno})", exc.lineno) from None
    scanner = _JsonScanner(text)
    scanner.skip(newlines=True)
    scanner.value("")
    return data, scanner.found


class _JsonScanner(_Scanner):
    """Walks JSON structure; refuses a key given twice in one object."""

    def value(self, path: str) -> None:
        if self.at("{"):
            self.i += 1
            seen: set[str] = set()
            while True:
                self.skip(newlines=True)
                if self.at("}"):
                    self.i += 1
                    return
                if self.at(","):
                    self.i += 1
                    continue
                start = self.i
                key = json.loads(self.quoted())
                key_path = child(path, key)
                if key in seen:
                    raise FormatError(
                        f"duplicate key `{key}`",
                        self._text.place(start)[0],
                        path=key_path,
                        hint="each key may appear once in an object",
                    )
                seen.add(key)
                self.record(key_path, start)
                self.skip(newlines=True)
                self.i += 1  # `:`
                self.skip(newlines=True)
                self.value(key_path)
        elif self.at("["):
            self.i += 1
            index = 0
            while True:
                self.skip(newlines=True)
                if self.at("]"):
                    self.i += 1
                    return
                if self.at(","):
                    self.i += 1
                    continue
                self.record(child(path, index), self.i)
                self.value(child(path, index))
                index += 1
        elif self.at('"'):
            self.quoted()
        else:
            found = _JSON_SCALAR.match(self.s, self.i)
            assert found is not None  # INVARIANT: json accepted a value here
            if found.group() in _NOT_JSON:
                # Python's json reads these; JSON has no such values.
                raise FormatError(
                    f"invalid JSON: `{found.group()}` is not a JSON value",
                    self._text.place(self.i)[0],
                    path=path,
                )
            self.i = found.end()


# -- YAML ----------------------------------------------------------------------------------


def parse_yaml(text: str) -> tuple[object, Places]:
    """``text`` as one YAML document of plain data, with the place of every key and item."""
    # PyYAML is imported here, not with this module: JSON and TOML files never need it.
    from ruleengine.policy._yaml import parse

    return parse(text)
