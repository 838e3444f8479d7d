"""Bounded repair of the JSON that models write as tool arguments.

Models break JSON in a few common ways: a code fence or prose around the object, trailing
or missing commas, single quotes, Python's ``True``/``False``/``None``, unquoted keys, raw
newlines inside strings, and a reply cut off before its closing quote and brackets.
``repair_json`` fixes those in one linear pass and nothing else, so it always terminates and
its output is at most ``6 * len(text) + 8`` characters; valid JSON comes back unchanged.
What it cannot fix raises ``ArgumentsError`` with a message the agent can show the model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from backends.errors import ArgumentsError

__all__ = ["MAX_CHARS", "MAX_DEPTH", "parse_json_object", "repair_json"]

MAX_CHARS = 1_000_000
"""Longer broken text is not repaired (valid JSON of any size is still accepted)."""
MAX_DEPTH = 200
"""Deeper nesting is not repaired (the standard parser would recurse too deep)."""

_HINT = 'send the arguments as one JSON object, like `{"query": "…"}`'
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"'}


def repair_json(text: str) -> str:
    """``text`` if it is valid JSON; else the repaired JSON text of its first object.

    Raises ``ArgumentsError`` when no JSON value can be recovered.
    """
    if not isinstance(text, str):
        raise ArgumentsError(f"arguments must be JSON text: got `{text!r:.60}`", hint=_HINT)
    if _valid(text):
        return text
    if len(text) > MAX_CHARS:
        raise ArgumentsError(
            f"arguments are too long to repair: {len(text):,} characters, over {MAX_CHARS:,}",
            hint=_HINT,
        )
    body = _unfence(text.strip())
    if _valid(body):
        return body
    start = 0 if body[:1] in ("{", "[") else body.find("{")
    if start < 0:
        raise ArgumentsError(f"arguments hold no JSON object: `{_excerpt(text)}`", hint=_HINT)
    repaired = _Scanner(body, start).run()
    problem = _problem(repaired)
    if problem is not None:
        raise ArgumentsError(
            f"arguments are not valid JSON: {problem}: `{_excerpt(text)}`", hint=_HINT
        )
    return repaired


def parse_json_object(text: str) -> tuple[dict[str, Any], bool]:
    """The JSON object in ``text`` (repaired if needed), and whether it needed repair.

    Empty text reads as ``{}`` (servers send it for tools without arguments).
    """
    if isinstance(text, str) and not text.strip():
        return {}, False
    repaired = repair_json(text)
    value = json.loads(repaired)
    if not isinstance(value, dict):
        raise ArgumentsError(
            f"arguments must be a JSON object: got {_json_kind(value)} `{_excerpt(text)}`",
            hint=_HINT,
        )
    return value, repaired != text


def _valid(text: str) -> bool:
    return _problem(text) is None


def _problem(text: str) -> str | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return f"{error.msg[:1].lower()}{error.msg[1:]} at column {error.colno}"
    except RecursionError:
        return f"nested deeper than {MAX_DEPTH} levels"
    except ValueError as error:  # e.g. lone surrogates
        return str(error).lower()
    return None


def _unfence(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None or isinstance(value, bool):
        return "a literal"
    return "a number"


class _Scanner:
    """One left-to-right pass over ``text[start:]`` that emits repaired JSON tokens.

    ``stack`` holds, per open bracket, its closer and what comes next inside it: ``key``,
    ``colon``, ``value`` or ``after`` (a value was read: a comma or the closer is next).
    """

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.i = start
        self.out: list[str] = []
        self.stack: list[list[str]] = []

    def run(self) -> str:
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char in "\"'":
                self._string(char)
            elif char in "{[":
                self._open(char)
            elif char in "}]":
                if not self._close(char):
                    break
                if not self.stack:
                    break  # the first complete value: prose after it is dropped
            elif char == ",":
                self._comma()
            elif char == ":":
                self._emit(":", "value")
            elif _WORD.match(char):
                self._word()
                continue
            else:
                self.out.append(char)
                if not char.isspace():
                    self._mark("after")
            self.i += 1
        self._finish()
        return "".join(self.out)

    def _state(self) -> str | None:
        return self.stack[-1][1] if self.stack else None

    def _mark(self, state: str) -> None:
        if self.stack:
            self.stack[-1][1] = state

    def _emit(self, token: str, state: str) -> None:
        self.out.append(token)
        self._mark(state)

    def _open(self, char: str) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise ArgumentsError(f"arguments are nested deeper than {MAX_DEPTH} levels", hint=_HINT)
        self.out.append(char)
        self.stack.append(["}" if char == "{" else "]", "key" if char == "{" else "value"])

    def _close(self, char: str) -> bool:
        closers = [entry[0] for entry in self.stack]
        if char not in closers:
            return False  # a stray closer ends the value
        self._drop_dangling_comma()
        while self.stack[-1][0] != char:  # close what was left open inside, e.g. `[1, 2}`
            self.out.append(self.stack.pop()[0])
        self.out.append(self.stack.pop()[0])
        self._mark("after")
        return True

    def _comma(self) -> None:
        rest = self.text[self.i + 1 :].lstrip()
        if not rest or rest[0] in "}]":
            return  # a trailing comma
        closer = self.stack[-1][0] if self.stack else "]"
        self._emit(",", "key" if closer == "}" else "value")

    def _word(self) -> None:
        match = _WORD.match(self.text, self.i)
        # INVARIANT: run() calls _word only where _WORD matches
        assert match is not None
        word = match.group(0)
        self.i = match.end()
        if self._state() == "key":
            self._emit(json.dumps(word), "colon")
        else:
            self._emit(_PYTHON_LITERALS.get(word, word), "after")

    def _string(self, quote: str) -> None:
        if self._state() == "after":  # a missing comma, as in `{"a": 1 "b": 2}`
            self._emit(",", "key" if self.stack[-1][0] == "}" else "value")
        text, parts = self.text, ['"']
        j = self.i + 1
        while j < len(text):
            char = text[j]
            if char == "\\":
                if j + 1 >= len(text):
                    break  # a dangling escape at the cut
                following = text[j + 1]
                if following == "'":
                    parts.append("'")
                elif following in '"\\/bfnrtu':
                    parts.append("\\" + following)
                else:  # not a JSON escape: keep the backslash as a character
                    parts.append("\\\\")
                    j += 1
                    continue
                j += 2
                continue
            if char == quote:
                break
            parts.append(_ESCAPES.get(char) or (f"\\u{ord(char):04x}" if char < " " else char))
            j += 1
        parts.append('"')
        self.i = j  # run() steps past the closing quote
        self._emit("".join(parts), "colon" if self._state() == "key" else "after")

    def _drop_dangling_comma(self) -> None:
        while self.out and self.out[-1].isspace():
            self.out.pop()
        if self.out and self.out[-1] == ",":
            self.out.pop()

    def _finish(self) -> None:
        """Close what a cut-off reply left open: a key without value, then every bracket."""
        self._drop_dangling_comma()
        state = self._state()
        if state == "colon":
            self.out.append(":null")
        elif state == "value" and self.out and self.out[-1] == ":":
            self.out.append("null")
        while self.stack:
            self.out.append(self.stack.pop()[0])
