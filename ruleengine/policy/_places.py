"""Where things are in a policy file: key paths, their places, and errors that carry a line.

A key path names a value from the top of the file (``""`` for the top, ``tools[2]``,
``requirements[1].only_after``); ``Places`` maps key paths to ``(line, column)``, both from
1; ``Location`` is one place with its file, as policies and reports cite it. The parsers
(``_formats.py``, ``_yaml.py``) and the loader (``load.py``) share these, and ``model.py``
holds ``Location``s, so they sit below all four.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["FormatError", "Location", "Places", "Text", "child"]

Places = dict[str, tuple[int, int]]
"""Key path → (line, column), from 1."""


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a policy file: ``file:line`` or ``file:line:column``, lines from 1."""

    file: str
    """The file as it was named when loaded."""
    line: int
    """The line, from 1."""
    column: int | None = None
    """The column, from 1, when known."""

    def __str__(self) -> str:
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


class FormatError(Exception):
    """The text is not valid in its format (or uses what policy files refuse)."""

    def __init__(self, message: str, line: int, *, path: str = "", hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.path = path
        self.hint = hint


def child(path: str, key: str | int) -> str:
    """The path of ``key`` inside ``path``: ``tools[1]``, ``requirements[0].target``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class Text:
    """Positions in a text: offsets → (line, column)."""

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def place(self, offset: int) -> tuple[int, int]:
        """The (line, column) of ``offset``, both from 1."""
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1
