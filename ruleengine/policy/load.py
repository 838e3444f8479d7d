"""Policy files and Python policies → ``Policy``; every mistake a located ``PolicyError``.

A file is read as bytes (at most 10 MB), decoded as strict UTF-8 and parsed by its extension
(``_formats``), which also gives the line of every key. Its structure is checked by the
pydantic models of ``schema.py``; then the requirements are built by their own constructors
and the whole by ``Policy``, so a mistake gets the same message as in Python code. Each error
reads ``FILE:LINE: KEY.PATH: what is wrong``; ``location`` is ``FILE:LINE``.

A policy can also come as text in a named format (``load_bytes``: the command line's stdin),
and a directory lists the policy files in it (``policy_files``: ``ruleengine check DIR``).

``module:attr`` (or ``path/to/file.py:attr``) names a ``Policy`` written in Python, or a
function of no arguments that returns one. Import failures are ``PolicyError``s naming the
module, never tracebacks.

The loader is handed the class it builds (``policy_class``: ``Policy``, as ``Policy.load``
and the command line pass it) rather than importing it: ``model.py`` imports this module for
``Policy.load``, so this one does not import ``model.py``. ``Buildable`` is what it needs of
that class.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

from pydantic import ValidationError

from ruleengine import _validate
from ruleengine._tags import tag_names as _validate_tags
from ruleengine._validate import _shown
from ruleengine.conditions.types import (
    ToolSpec,
    parameters_from_schema,
    parameters_from_spec,
)
from ruleengine.errors import PolicyError
from ruleengine.policy._formats import parse_json, parse_toml, parse_yaml
from ruleengine.policy._places import FormatError, Location, Places, child
from ruleengine.policy.schema import REQUIREMENT_MODELS, PolicyFile, ToolEntry, requirement_keys
from ruleengine.requirements import (
    ArgumentsRequirement,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Requirement,
)

__all__ = [
    "Buildable",
    "FORMATS",
    "MAX_BYTES",
    "load_bytes",
    "load_file",
    "load_policy",
    "policy_files",
]


class Buildable(Protocol):
    """What the loader needs of the class it builds (``Policy``): its constructor, with the
    file's values, where it came from and where each key is written, and a copy said to come
    from another source (a Python policy named by ``module:attr``)."""

    def __init__(
        self,
        tools: Iterable[object],
        requirements: Iterable[Requirement],
        *,
        source: str | None = None,
        locations: Mapping[str, Location] | None = None,
        **options: Any,
    ) -> None: ...

    def _with_source(self, source: str) -> Self: ...


PolicyT = TypeVar("PolicyT", bound=Buildable)

MAX_BYTES = 10 * 1024 * 1024
"""Policy files larger than this are refused (10 MB)."""

PARSERS: dict[str, Callable[[str], tuple[object, Places]]] = {
    ".toml": parse_toml,
    ".json": parse_json,
    ".yaml": parse_yaml,
    ".yml": parse_yaml,
}

FORMATS: dict[str, Callable[[str], tuple[object, Places]]] = {
    "toml": parse_toml,
    "yaml": parse_yaml,
    "json": parse_json,
}
"""The formats a policy's text may be in, by name (``load_bytes``, ``--stdin-format``)."""

SKIPPED_SUFFIX = ".schema.json"
"""Files a directory holds beside its policies that are not policies: the JSON Schema that
editors read (``ruleengine schema > policy.schema.json``)."""

BUILDERS: dict[str, Callable[..., Requirement]] = {
    "conditional": ConditionalRequirement,
    "ask_permission": AskPermissionRequirement,
    "cycle_guard": CycleGuard,
    "arguments": ArgumentsRequirement,
}

PYTHON_ONLY = {
    "custom_checks": (
        "custom checks cannot be written in a policy file",
        "custom checks are Python functions: write the policy in Python and load it as "
        "`module:attr`",
    ),
    "handler": (
        "a permission handler cannot be written in a policy file",
        "handlers are Python functions: write the policy in Python and load it as `module:attr`",
    ),
}
"""Keys that hold Python functions: refused in files with a pointer to Python policies."""

_SOURCE_HINT = (
    "give a .toml, .yaml, .yml or .json file, or `module:attr` naming a `Policy` in Python"
)
_LAST_PART = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")
_ENTRIES = ("tools", "requirements")


def load_policy(source: object, policy_class: type[PolicyT]) -> PolicyT:
    """The policy ``source`` names: a file path, ``module:attr``, or a function returning one
    (a ``policy_class``, which ``source`` may also be)."""
    if isinstance(source, policy_class):
        return source
    if not isinstance(source, str | os.PathLike):
        if callable(source):
            label = f"{getattr(source, '__module__', '?')}:{getattr(source, '__qualname__', '?')}"
            return _policy_from(source, label, label, policy_class)
        raise PolicyError(f"`{_shown(source)}` is not a policy source", hint=_SOURCE_HINT)
    text = os.fspath(source)
    if not isinstance(text, str):
        raise PolicyError(f"`{_shown(text)}` is not a policy source", hint=_SOURCE_HINT)
    parser = PARSERS.get(Path(text).suffix.lower())
    if parser is not None:
        return load_file(text, parser, policy_class)
    if ":" in text:
        return _load_python(text, policy_class)
    if os.path.isdir(text):
        raise PolicyError(
            f"{text}: is a directory, not a policy file",
            hint="name one policy file in it (`ruleengine check DIR` checks every one)",
            location=text,
        )
    if not Path(text).suffix and not os.path.lexists(text):
        raise PolicyError(f"{text}: no such file or directory", hint=_SOURCE_HINT, location=text)
    raise PolicyError(
        f"{text}: unknown policy file extension `{Path(text).suffix or '(none)'}`",
        hint=_SOURCE_HINT,
        location=text,
    )


# -- files ---------------------------------------------------------------------------------


def load_file(
    file: str, parser: Callable[[str], tuple[object, Places]], policy_class: type[PolicyT]
) -> PolicyT:
    """The policy in ``file``, parsed with ``parser``."""
    return _parsed(file, _decoded(file, _read(file)), parser, policy_class)


def _parsed(
    file: str,
    text: str,
    parser: Callable[[str], tuple[object, Places]],
    policy_class: type[PolicyT],
    *,
    noun: str = "file",
) -> PolicyT:
    """The policy in ``text``, read from ``file`` (errors cite it) with ``parser``."""
    if not text.strip():
        raise _at(file, 1, "", f"the {noun} is empty", "a policy lists at least its `tools`")
    try:
        data, places = parser(text)
    except FormatError as exc:
        raise _at(file, exc.line, exc.path, exc.message, exc.hint) from None
    except RecursionError:
        raise _at(file, 1, "", f"the {noun} nests too deeply") from None
    if data is None:
        raise _at(file, 1, "", f"the {noun} is empty", "a policy lists at least its `tools`")
    if not isinstance(data, dict):
        raise _at(
            file,
            places[""][0],
            "",
            f"the top level is `{_shown(data)}`, not a mapping of keys",
            "a policy is a mapping with `tools`, and usually `requirements`",
        )
    return _Builder(file, places).policy(data, policy_class)


def load_bytes(data: bytes, *, format: str, source: str, policy_class: type[PolicyT]) -> PolicyT:
    """The policy that ``data`` holds in ``format`` (``toml``, ``yaml`` or ``json``); errors
    cite ``source`` as the file (``<stdin>:5: requirements[0].taget: …``)."""
    parser = FORMATS.get(format)
    if parser is None:
        raise PolicyError(
            f"{source}: unknown policy format "
            f"`{format if isinstance(format, str) else _shown(format)}`",
            hint=f"the formats are {_listed(FORMATS)}",
            location=source,
        )
    if len(data) > MAX_BYTES:
        raise PolicyError(
            f"{source}: the policy is larger than {MAX_BYTES // (1024 * 1024)} MB",
            location=source,
        )
    return _parsed(source, _decoded(source, data, noun="input"), parser, policy_class, noun="input")


def policy_files(directory: str) -> list[str]:
    """The policy files directly in ``directory`` (``.toml``, ``.yaml``, ``.yml``,
    ``.json``), sorted by name, each as ``directory`` joined with its name. Subdirectories,
    hidden files (``.name``), other extensions and JSON Schemas (``*.schema.json``) are
    left out; a directory with no policy file at all is a ``PolicyError``."""
    try:
        with os.scandir(directory) as entries:
            names = sorted(
                entry.name
                for entry in entries
                if not entry.name.startswith(".")
                and Path(entry.name).suffix.lower() in PARSERS
                and not entry.name.lower().endswith(SKIPPED_SUFFIX)
                and not entry.is_dir()
            )
    except FileNotFoundError:
        raise PolicyError(f"{directory}: no such directory", location=directory) from None
    except PermissionError:
        raise PolicyError(
            f"{directory}: permission denied: cannot list the directory", location=directory
        ) from None
    except OSError as exc:
        raise PolicyError(
            f"{directory}: cannot list the directory: {exc.strerror or exc}", location=directory
        ) from None
    if not names:
        raise PolicyError(
            f"{directory}: no policy file in the directory",
            hint="policy files end in .toml, .yaml, .yml or .json; subdirectories are not "
            "searched: name them too",
            location=directory,
        )
    return [os.path.join(directory, name) for name in names]


def _read(file: str) -> bytes:
    def fail(problem: str) -> PolicyError:
        return PolicyError(f"{file}: {problem}", location=file)

    return read_bounded(file, MAX_BYTES, fail, what="a policy file")


def read_bounded(
    file: str, limit: int, fail: Callable[[str], Exception], *, what: str = "a file"
) -> bytes:
    """The bytes of ``file``, a regular file of at most ``limit`` bytes; otherwise the
    exception ``fail(problem)`` makes, ``problem`` in a few words (``no such file``,
    ``is a directory, not <what>``, ``the file is larger than 1 MB``, …)."""
    size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"
    try:
        info = os.stat(file)
        if stat.S_ISDIR(info.st_mode):
            raise fail(f"is a directory, not {what}")
        if not stat.S_ISREG(info.st_mode):
            raise fail("is not a regular file")
        if info.st_size > limit:
            raise fail(f"the file is larger than {size}")
        with open(file, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise fail("no such file") from None
    except PermissionError:
        raise fail("permission denied: cannot read the file") from None
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise fail(f"the file is larger than {size}")
    return data


def _decoded(file: str, data: bytes, *, noun: str = "file") -> str:
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark is still UTF-8
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _at(
            file,
            line,
            "",
            f"the {noun} is not UTF-8: byte `0x{data[exc.start]:02x}` at offset {exc.start}",
            f"save the {noun} as UTF-8" if noun == "file" else "give the policy as UTF-8 text",
        ) from None


def _at(file: str, line: int, path: str, message: str, hint: str | None = None) -> PolicyError:
    """An error at ``file:line``, under ``path`` (``""``: the file as a whole)."""
    where = f"{file}:{line}"
    text = f"{where}: {path}: {message}" if path else f"{where}: {message}"
    return PolicyError(text, hint=hint, parameter=path or None, location=where)


class _Builder:
    """Turns one file's data into a policy, locating every error in the file."""

    def __init__(self, file: str, places: Places) -> None:
        self.file = file
        self.places = places

    def nearest(self, path: str) -> str:
        """``path`` if the file writes it, else the nearest enclosing path it writes."""
        while path and path not in self.places:
            shorter = _LAST_PART.sub("", path)
            path = "" if shorter == path else shorter
        return path

    def error(self, path: str, message: str, hint: str | None = None) -> PolicyError:
        path = self.nearest(path)
        return _at(self.file, self.line(path), path, message, hint)

    def located(self, exc: PolicyError, path: str) -> PolicyError:
        located = self.error(path, exc.message, exc.hint)
        located.__cause__ = exc
        return located

    def policy(self, data: dict[str, Any], policy_class: type[PolicyT]) -> PolicyT:
        try:
            spec = PolicyFile.model_validate(data)
        except ValidationError as exc:
            raise self._structure_error(exc) from None
        tools = [self._tool(i, item) for i, item in enumerate(spec.tools)]
        requirements = [self._requirement(i, entry) for i, entry in enumerate(spec.requirements)]
        options = {k: getattr(spec, k) for k in ("max_iterations", "mode") if k in data}
        locations = {
            path: Location(self.file, line, column) for path, (line, column) in self.places.items()
        }
        try:
            return policy_class(
                tools,
                requirements,
                source=self.file,
                locations=locations,
                **options,
            )
        except PolicyError as exc:
            raise self.located(exc, exc.parameter or "") from None

    def _tool(self, index: int, item: object) -> object:
        try:
            return _tool(item)
        except PolicyError as exc:
            at = child("tools", index)
            raise self.located(exc, child(at, exc.parameter) if exc.parameter else at) from None

    def _requirement(self, index: int, entry: Any) -> Requirement:
        at = child("requirements", index)
        arguments = {key: getattr(entry, key) for key in entry.model_fields_set if key != "type"}
        try:
            return BUILDERS[entry.type](**arguments)
        except PolicyError as exc:
            parameter = exc.parameter if exc.parameter in arguments else None
            raise self.located(exc, child(at, parameter) if parameter else at) from None

    def _structure_error(self, exc: ValidationError) -> PolicyError:
        """One of pydantic's findings, in our words: the first entry at fault in file order,
        and in it an unknown key before a missing one (a misspelt key is both)."""
        ranked = []
        for error in exc.errors():
            path, message, hint = self._issue(error)
            loc = error["loc"]
            entry = _joined(loc[:2]) if len(loc) >= 2 and loc[0] in _ENTRIES else ""
            rank = {"extra_forbidden": 0, "missing": 2}.get(error["type"], 1)
            ranked.append((self.line(entry), rank, self.line(path), path, message, hint))
        *_, path, message, hint = min(ranked, key=lambda r: r[:3])
        return self.error(path, message, hint)

    def line(self, path: str) -> int:
        return self.places[self.nearest(path)][0]

    def _issue(self, error: Any) -> tuple[str, str, str | None]:
        loc = list(error["loc"])
        tag = None
        if len(loc) >= 3 and loc[0] in _ENTRIES:
            tag = loc.pop(2)  # the union member: a requirement type, or a tool entry
        path = _joined(loc)
        kind, value = error["type"], error.get("input")
        if kind == "extra_forbidden":
            key = str(loc[-1])
            if key in PYTHON_ONLY:
                return path, *PYTHON_ONLY[key]
            what, keys = _model_keys(loc, tag)
            return path, f"unknown key `{key}`", _suggest(key, keys, f"{what} has {_listed(keys)}")
        if kind == "missing":
            return _joined(loc[:-1]), f"missing key `{loc[-1]}`", None
        if kind == "union_tag_not_found":
            return path, "missing key `type`", f"`type` is one of {_listed(REQUIREMENT_MODELS)}"
        if kind == "union_tag_invalid":
            given = value.get("type") if isinstance(value, dict) else value
            shown = given if isinstance(given, str) else _shown(given)
            return (
                child(path, "type"),
                f"unknown requirement type `{shown}`",
                _suggest(str(given), REQUIREMENT_MODELS, f"types: {_listed(REQUIREMENT_MODELS)}"),
            )
        if kind == "model_attributes_type":
            return (
                path,
                f"`{_shown(value)}` is not a requirement",
                "a requirement is a mapping with a `type` and its parameters",
            )
        return path, _validate_message(str(loc[-1]), kind, value, error["msg"]), None


def _validate_message(name: str, kind: str, value: object, fallback: str) -> str:
    """What ``_validate`` says of ``value`` (the message a constructor gives), else pydantic's."""
    checks: dict[str, Callable[..., object]] = {
        "list_type": _validate.sequence,
        "string_type": _validate.text,
    }
    check = checks.get(kind)
    if check is not None:
        try:
            check(value, name=name)
        except PolicyError as exc:
            return exc.message
    return fallback[:1].lower() + fallback[1:]  # pragma: no cover - the models raise no other


def _tool(item: object) -> object:
    """A tool as ``Policy`` takes it: a name, a ``(name, description)`` pair, or a
    ``ToolSpec`` when it declares parameters or tags."""
    if isinstance(item, ToolEntry):
        name = item.name if isinstance(item.name, str) else "?"
        owner = f"tool `{name}`"
        tags = _validate_tags(item.tags, owner=owner)
        if item.parameters is None and item.input_schema is None:
            if tags:
                return ToolSpec(item.name, item.description, None, tags)
            return (item.name, item.description)
        if item.parameters is not None and item.input_schema is not None:
            raise PolicyError(
                f"{owner}: give `parameters` or `input_schema`, not both",
                parameter="parameters",
            )
        if item.parameters is not None:
            params = parameters_from_spec(item.parameters, owner=owner)
        else:
            params = parameters_from_schema(item.input_schema, owner=owner)
        return ToolSpec(item.name, item.description, params, tags)
    return item


def _joined(loc: Iterable[object]) -> str:
    path = ""
    for part in loc:
        path = child(path, part if isinstance(part, int) else str(part))
    return path


def _model_keys(loc: list[object], tag: object) -> tuple[str, list[str]]:
    """What holds the unknown key (in words), and the keys it may hold."""
    if len(loc) == 1:
        return "a policy", [f.alias or name for name, f in PolicyFile.model_fields.items()]
    if loc[0] == "tools":
        return "a tool", list(ToolEntry.model_fields)
    return f"a `{tag}` requirement", requirement_keys(str(tag))


def _suggest(given: str, choices: Iterable[str], rest: str) -> str:
    close = difflib.get_close_matches(given, list(choices), n=1)
    return f"did you mean `{close[0]}`? {rest}" if close else rest


def _listed(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


# -- Python policies -----------------------------------------------------------------------


def _load_python(source: str, policy_class: type[PolicyT]) -> PolicyT:
    module_name, _, attr = source.rpartition(":")
    if not module_name or not attr:
        raise PolicyError(
            f"{source}: name a Python policy as `module:attr`", hint=_SOURCE_HINT, location=source
        )
    module = _import(module_name, source)
    value: object = module
    for part in attr.split("."):
        if not hasattr(value, part):
            names = [n for n in dir(value) if not n.startswith("_")]
            raise PolicyError(
                f"{source}: `{module_name}` has no attribute `{attr}`",
                hint=_suggest(
                    part, names, "name the `Policy` object (or a function returning one)"
                ),
                location=source,
            )
        value = getattr(value, part)
    return _policy_from(value, source, attr, policy_class)


def _import(module_name: str, source: str) -> Any:
    """The module ``module_name`` (a dotted name or a ``.py`` path), or a ``PolicyError``."""
    try:
        if module_name.endswith(".py"):
            return _import_file(module_name, source)
        return importlib.import_module(module_name)
    except PolicyError as exc:
        if exc.location == source:
            raise
        raise PolicyError(
            f"{source}: {exc.message}", hint=exc.hint, parameter=exc.parameter, location=source
        ) from exc
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise PolicyError(
                f"{source}: no module named `{exc.name}`",
                hint="check that the module is importable from here (`sys.path`), "
                "or name its file: `path/to/policy.py:attr`",
                location=source,
            ) from exc
        raise _import_failed(source, module_name, exc) from exc
    except Exception as exc:
        raise _import_failed(source, module_name, exc) from exc


def _import_file(path: str, source: str) -> Any:
    if not os.path.isfile(path):
        raise PolicyError(f"{source}: no such file `{path}`", location=source)
    name = "_ruleengine_policy_" + re.sub(r"\W", "_", os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise PolicyError(f"{source}: cannot import `{path}`", location=source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_failed(source: str, module_name: str, exc: BaseException) -> PolicyError:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return PolicyError(
        f"{source}: importing `{module_name}` raised `{type(exc).__name__}`"
        + (f": {first}" if first else ""),
        hint="the error is in the module's own code: import it in Python to see the traceback",
        location=source,
    )


def _policy_from(value: object, source: str, name: str, policy_class: type[PolicyT]) -> PolicyT:
    """``value`` if it is a ``Policy``, or what it returns if it is a function returning one."""
    if isinstance(value, policy_class):
        return value._with_source(source)
    if callable(value) and not isinstance(value, type):
        try:
            made = value()
        except PolicyError as exc:
            raise PolicyError(
                f"{source}: {exc.message}", hint=exc.hint, parameter=exc.parameter, location=source
            ) from exc
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise PolicyError(
                f"{source}: calling `{name}()` raised `{type(exc).__name__}`"
                + (f": {first}" if first else ""),
                hint="a policy function takes no arguments and returns a `Policy`",
                location=source,
            ) from exc
        if isinstance(made, policy_class):
            return made._with_source(source)
        raise PolicyError(
            f"{source}: `{name}()` returned `{_shown(made)}`, not a `Policy`",
            hint="a policy function takes no arguments and returns a `Policy`",
            location=source,
        )
    raise PolicyError(
        f"{source}: `{name}` is `{_shown(value)}`, not a `Policy`",
        hint="name a `ruleengine.Policy`, or a function of no arguments that returns one",
        location=source,
    )
