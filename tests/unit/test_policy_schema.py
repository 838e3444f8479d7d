"""The policy files' models and JSON Schema (ruleengine/policy/schema.py).

A small checker below implements the JSON Schema keywords the schema uses, so the tests can
say why a document fails; ``jsonschema``'s Draft 2020-12 validator must agree on every document.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pydantic
import pytest

from ruleengine import (
    ArgumentsRequirement,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Policy,
)
from ruleengine.policy.schema import (
    REQUIREMENT_MODELS,
    ConditionalEntry,
    PolicyFile,
    requirement_keys,
)

SCHEMA = Policy.json_schema()
CONSTRUCTORS: dict[str, Any] = {
    "conditional": ConditionalRequirement,
    "ask_permission": AskPermissionRequirement,
    "cycle_guard": CycleGuard,
    "arguments": ArgumentsRequirement,
}
PYTHON_ONLY = {"custom_checks", "handler"}


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        schema = SCHEMA["$defs"][name]
    return schema


_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is(value: object, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def problems(value: object, schema: dict[str, Any], path: str = "") -> Iterator[str]:
    """What ``value`` breaks of ``schema`` (the keywords our schema uses)."""
    schema = resolve(schema)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            yield f"{path}: not {kinds}"
            return
    if "const" in schema and value != schema["const"]:
        yield f"{path}: not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield f"{path}: not one of {schema['enum']}"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            matching = [s for s in schema[key] if not list(problems(value, s, path))]
            if not matching or (key == "oneOf" and len(matching) > 1):
                yield f"{path}: {len(matching)} of {key} match"
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        yield f"{path}: too short"
    if isinstance(value, list) and len(value) < schema.get("minItems", 0):
        yield f"{path}: too few items"
    if _is(value, "number"):
        assert isinstance(value, int | float)
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{path}: below minimum"
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            yield f"{path}: not above exclusiveMinimum"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from problems(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                yield f"{path}: missing {key}"
        for key, item in value.items():
            if key in properties:
                yield from problems(item, properties[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                yield f"{path}: unknown {key}"


VALID = [
    {"tools": ["a"]},
    {"$schema": "./policy.schema.json", "tools": ["a"], "max_iterations": 3, "mode": "priority"},
    {
        "tools": ["search", {"name": "think", "description": "Think."}],
        "requirements": [
            {
                "type": "conditional",
                "target": "think",
                "name": "think-first",
                "force_at_step": 1,
                "only_after": "search",
                "force_after": ["search"],
                "max_invocations": None,
                "min_invocations": 0,
                "consecutive_allowed": False,
                "reason": "think first",
                "priority": 20,
            },
            {"type": "ask_permission", "include": ["search"], "timeout": 2.5},
            {"type": "cycle_guard", "window_size": 5, "enabled": False},
        ],
    },
]

INVALID = [
    ({}, "missing tools"),
    ({"tools": "a"}, "not ['array']"),
    ({"tools": []}, "too few items"),
    ({"tools": [""]}, "of oneOf match"),
    ({"tools": [{"name": "a", "descripton": "x"}]}, "of oneOf match"),
    ({"tools": [], "tolls": []}, "unknown tolls"),
    ({"tools": [], "max_iterations": 0}, "below minimum"),
    ({"tools": [], "max_iterations": True}, "not ['integer']"),
    ({"tools": [], "mode": "fast"}, "not one of"),
    ({"tools": [], "requirements": [{"type": "conditional"}]}, "of oneOf match"),
    ({"tools": [], "requirements": [{"type": "conditional", "target": "a", "priority": 1.5}]},
     "of oneOf match"),
    ({"tools": [], "requirements": [{"type": "cycle_guard", "custom_checks": []}]},
     "of oneOf match"),
    ({"tools": [], "requirements": [{"type": "other"}]}, "of oneOf match"),
]  # fmt: skip


@pytest.mark.parametrize("document", VALID)
def test_the_schema_accepts_valid_policies(document: dict[str, Any]) -> None:
    assert list(problems(document, SCHEMA)) == []
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    PolicyFile.model_validate(document)


@pytest.mark.parametrize(("document", "problem"), INVALID)
def test_the_schema_refuses_invalid_policies(document: dict[str, Any], problem: str) -> None:
    found = list(problems(document, SCHEMA))
    assert any(problem in p for p in found), found
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(document)


def test_the_schema_names_its_dialect_and_title() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["title"] == "ruleengine policy"
    assert SCHEMA["required"] == ["tools"]
    assert SCHEMA["additionalProperties"] is False
    assert json.loads(json.dumps(SCHEMA)) == SCHEMA


def _models() -> Iterator[tuple[str, dict[str, Any]]]:
    yield "policy", SCHEMA
    yield from SCHEMA["$defs"].items()


def test_every_key_has_a_description() -> None:
    for name, model in _models():
        assert model.get("description"), name
        assert model["additionalProperties"] is False, name
        for key, field in model["properties"].items():
            assert field.get("description"), f"{name}.{key}"


def test_requirements_are_told_apart_by_type() -> None:
    items = SCHEMA["properties"]["requirements"]["items"]
    mapping = items["discriminator"]["mapping"]
    assert items["discriminator"]["propertyName"] == "type"
    assert set(mapping) == {"conditional", "ask_permission", "cycle_guard", "arguments"}
    for kind, ref in mapping.items():
        definition = resolve({"$ref": ref})
        assert definition["properties"]["type"]["const"] == kind
        assert list(definition["properties"]) == requirement_keys(kind)
        assert definition["properties"]["type"] == {
            "const": kind,
            "description": f"`{kind}`.",
            "title": "Type",
            "type": "string",
        }


@pytest.mark.parametrize("kind", sorted(REQUIREMENT_MODELS))
def test_a_requirement_has_every_constructor_parameter_but_functions(kind: str) -> None:
    parameters = inspect.signature(CONSTRUCTORS[kind]).parameters
    assert set(requirement_keys(kind)) - {"type"} == set(parameters) - PYTHON_ONLY


@pytest.mark.parametrize("kind", sorted(REQUIREMENT_MODELS))
def test_schema_defaults_are_the_constructors_defaults(kind: str) -> None:
    parameters = inspect.signature(CONSTRUCTORS[kind]).parameters
    properties = resolve({"$ref": f"#/$defs/{REQUIREMENT_MODELS[kind].__name__}"})["properties"]
    for key, field in properties.items():
        if key in ("type", "target", "name"):
            continue
        default = parameters[key].default
        assert field["default"] == (None if default is inspect.Parameter.empty else default), key


def test_policy_defaults_are_the_constructors_defaults() -> None:
    parameters = inspect.signature(Policy).parameters
    properties = SCHEMA["properties"]
    assert properties["max_iterations"]["default"] == parameters["max_iterations"].default
    assert properties["mode"]["default"] == parameters["mode"].default
    assert properties["mode"]["enum"] == ["strict", "priority"]


def test_values_checked_by_constructors_keep_their_precise_types() -> None:
    conditional = SCHEMA["$defs"]["ConditionalEntry"]["properties"]
    assert conditional["max_invocations"]["type"] == ["integer", "null"]
    assert conditional["priority"] == {
        "default": 10,
        "description": conditional["priority"]["description"],
        "minimum": 1,
        "title": "Priority",
        "type": "integer",
    }
    assert conditional["consecutive_allowed"]["type"] == "boolean"
    assert conditional["only_after"]["anyOf"][0] == {"type": "string", "minLength": 1}


def test_the_models_are_frozen_and_closed() -> None:
    spec = PolicyFile.model_validate({"tools": ["a"]})
    with pytest.raises(pydantic.ValidationError):
        spec.tools = []
    with pytest.raises(pydantic.ValidationError):
        PolicyFile.model_validate({"tools": [], "extra": 1})


def test_loose_values_are_left_to_the_constructors() -> None:
    spec = PolicyFile.model_validate(
        {"tools": [], "requirements": [{"type": "conditional", "target": 3, "priority": "x"}]}
    )
    entry = spec.requirements[0]
    assert isinstance(entry, ConditionalEntry)
    assert (entry.target, entry.priority) == (3, "x")
    assert entry.model_fields_set == {"type", "target", "priority"}
