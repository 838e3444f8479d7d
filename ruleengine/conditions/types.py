"""The types of a tool's parameters, as conditions see them.

A parameter is a ``string``, an ``integer``, a ``number`` (exact: integers and rationals), a
``boolean``, an *enum* (a list of literals of one of those types), or a list of strings.
Parameters come from a policy file's short form (``parameters = {amount = "number"}``), from a
JSON Schema (``input_schema``, or a tool's pydantic input model), and anything a schema says
that none of these can (objects, lists of numbers, unions) is *opaque*: the tool keeps the
parameter, but a condition that names it is an error at load time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, TypeAlias

from ruleengine._base_errors import PolicyError

__all__ = [
    "Kind",
    "Literal_",
    "ParamType",
    "Parameters",
    "ToolSpec",
    "literal_kind",
    "parameters_from_model",
    "parameters_from_schema",
    "parameters_from_spec",
    "shown",
]

Kind: TypeAlias = Literal["string", "integer", "number", "boolean", "strings", "opaque"]
"""What a value is: ``strings`` is a list of strings; ``opaque`` cannot be reasoned about."""

Literal_: TypeAlias = "str | int | Fraction | bool"
"""A literal value of a condition (numbers that are not integers are exact fractions)."""

_SCALARS = ("string", "integer", "number", "boolean")


def shown(value: object) -> str:
    """A value for a message: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, slots=True)
class ParamType:
    """One parameter's type: its kind, the literals it is limited to (an enum), and whether a
    call must give it."""

    kind: Kind
    choices: tuple[Literal_, ...] | None = None
    """The only values it may take, when it is an enum."""
    required: bool = True
    """Whether every call gives it (a missing optional argument is an undefined value)."""

    def __str__(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(_literal_text(c) for c in self.choices)
        return {"strings": "list of strings"}.get(self.kind, self.kind)


Parameters: TypeAlias = Mapping[str, ParamType]
"""A tool's parameters by name."""


def _literal_text(value: Literal_) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, Fraction):
        return _fraction_text(value)
    return repr(value)


def _fraction_text(value: Fraction) -> str:
    """A fraction as a decimal where it has a short one, else ``n/d``."""
    if value.denominator == 1:
        return str(value.numerator)
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d == 1 and max(twos, fives) <= 30:
        places = max(twos, fives)
        scaled = value * 10**places
        sign = "-" if scaled < 0 else ""
        digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
        return f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return f"{value.numerator}/{value.denominator}"


def literal_kind(value: object) -> Kind | None:
    """The kind of a literal (``None``: not a literal of any kind)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, Fraction | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _enum(choices: list[object], where: str) -> ParamType:
    if not choices:
        raise PolicyError(f"{where}: an enum needs at least one value")
    kinds = {literal_kind(c) for c in choices}
    if None in kinds or any(isinstance(c, float) for c in choices):
        bad = next(c for c in choices if literal_kind(c) is None or isinstance(c, float))
        raise PolicyError(
            f"{where}: enum value `{shown(bad)}` is not a string, integer or boolean",
            hint="an enum lists strings, integers or booleans",
        )
    if len(kinds) > 1:
        raise PolicyError(
            f"{where}: enum values mix {' and '.join(sorted(str(k) for k in kinds))}",
            hint="an enum's values are all of one type",
        )
    (kind,) = kinds
    assert kind is not None
    unique: list[Literal_] = []
    for c in choices:
        if c not in unique or any(type(c) is not type(u) for u in unique if u == c):
            unique.append(c)  # type: ignore[arg-type]
    return ParamType(kind, tuple(unique))


def parameters_from_spec(spec: object, *, owner: str) -> dict[str, ParamType]:
    """Parameters from the short form: a mapping of names to ``"string"``, ``"integer"``,
    ``"number"``, ``"boolean"``, a list of literals (an enum) or ``["string"]`` (a list of
    strings). Every parameter given this way is required."""
    if not isinstance(spec, Mapping):
        raise PolicyError(
            f"{owner}: parameters=`{shown(spec)}` is not a mapping of names to types",
            hint='e.g. parameters = { order_id = "string", amount = "number" }',
            parameter="parameters",
        )
    out: dict[str, ParamType] = {}
    for name, value in spec.items():
        where = f"{owner}: parameter `{name}`"
        if not isinstance(name, str) or not name.isidentifier():
            raise PolicyError(
                f"{owner}: parameter name `{shown(name)}` is not an identifier",
                hint="conditions name parameters as `arg.NAME`",
                parameter="parameters",
            )
        if isinstance(value, str):
            if value not in _SCALARS:
                raise PolicyError(
                    f"{where}: type `{value}` is not one of string, integer, number, boolean",
                    hint='a list of literals is an enum; ["string"] is a list of strings',
                    parameter="parameters",
                )
            out[name] = ParamType(value)  # type: ignore[arg-type]
        elif value == ["string"]:
            out[name] = ParamType("strings")
        elif isinstance(value, list | tuple):
            out[name] = _enum(list(value), where)
        else:
            raise PolicyError(
                f"{where}: `{shown(value)}` is not a type",
                hint='a type is "string", "integer", "number", "boolean", a list of '
                'literals, or ["string"]',
                parameter="parameters",
            )
    return out


def parameters_from_schema(schema: object, *, owner: str) -> dict[str, ParamType]:
    """Parameters from a JSON Schema of an object (``properties``, ``required``). A property
    whose schema none of the kinds can say is opaque."""
    if not isinstance(schema, Mapping):
        raise PolicyError(
            f"{owner}: input_schema=`{shown(schema)}` is not a JSON Schema object",
            parameter="input_schema",
        )
    if schema.get("type", "object") != "object":
        raise PolicyError(
            f"{owner}: input_schema has type `{shown(schema.get('type'))}`, not `object`",
            hint="a tool's arguments are an object of named parameters",
            parameter="input_schema",
        )
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        raise PolicyError(
            f"{owner}: input_schema's `properties` must be a mapping and `required` a list",
            parameter="input_schema",
        )
    definitions = schema.get("$defs", schema.get("definitions", {}))
    out: dict[str, ParamType] = {}
    for name, prop in properties.items():
        if not isinstance(name, str):
            continue
        kind = _schema_type(prop, definitions if isinstance(definitions, Mapping) else {}, 0)
        out[name] = ParamType(kind.kind, kind.choices, required=name in required)
    return out


def _schema_type(prop: object, definitions: Mapping[str, Any], depth: int) -> ParamType:
    """The type a property's schema says, or opaque."""
    opaque = ParamType("opaque")
    if not isinstance(prop, Mapping) or depth > 20:
        return opaque
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = definitions.get(ref.rsplit("/", 1)[-1])
        return _schema_type(target, definitions, depth + 1)
    options = prop.get("anyOf", prop.get("oneOf"))
    if isinstance(options, list):
        # An optional value (``T | None``) is its ``T``: a missing or null argument is
        # undefined anyway.
        kept = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
        if len(kept) == 1:
            return _schema_type(kept[0], definitions, depth + 1)
        return opaque
    if "enum" in prop or "const" in prop:
        choices = prop.get("enum", [prop.get("const")])
        if not isinstance(choices, list):
            return opaque
        try:
            return _enum(list(choices), "enum")
        except PolicyError:
            return opaque
    kind = prop.get("type")
    if kind in _SCALARS:
        return ParamType(kind)
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, Mapping) and items.get("type") == "string" and "enum" not in items:
            return ParamType("strings")
    return opaque


def parameters_from_model(model: object, *, owner: str) -> dict[str, ParamType]:
    """Parameters from a pydantic model class (its JSON Schema)."""
    schema = getattr(model, "model_json_schema", None)
    if not callable(schema):
        raise PolicyError(f"{owner}: `{shown(model)}` is not a pydantic model class")
    return parameters_from_schema(schema(), owner=owner)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool declared with its parameters or tags (a policy file's ``[[tools]]`` table), as
    requirements see it when they bind: conditions on its arguments are typed against
    ``parameters``; ``tags`` name it in tool lists (``"tag:read"``)."""

    name: str
    description: str | None = None
    parameters: Mapping[str, ParamType] | None = None
    tags: tuple[str, ...] = ()
