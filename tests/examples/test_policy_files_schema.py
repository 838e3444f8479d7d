"""The example policy files against the JSON Schema that ``ruleengine schema`` prints.

Editors validate policy files with that schema (``"$schema": "./policy.schema.json"``), so
every example must pass it, read by ``jsonschema``'s Draft 2020-12 validator (the dialect the
schema names); and the mistakes people make must fail it, as they fail ``Policy.load``.
"""

from __future__ import annotations

import contextlib
import io
import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ruleengine import Policy, PolicyError
from ruleengine.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "policies"
DOCUMENTS = sorted(
    path.name for path in EXAMPLES.iterdir() if path.suffix in (".toml", ".yaml", ".yml", ".json")
)


@cache
def printed_schema() -> dict[str, Any]:
    """The schema as ``ruleengine schema`` prints it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["schema"]) == 0
    schema: dict[str, Any] = json.loads(out.getvalue())
    return schema


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(printed_schema())


def read(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(text)
    return json.loads(text)


def test_the_schema_is_a_draft_2020_12_schema() -> None:
    schema = printed_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert jsonschema.validators.validator_for(schema) is jsonschema.Draft202012Validator
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == Policy.json_schema()


def test_every_format_is_among_the_examples() -> None:
    assert {Path(name).suffix for name in DOCUMENTS} >= {".toml", ".yaml", ".json"}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_example_policy_validates(name: str) -> None:
    document = read(EXAMPLES / name)
    problems = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator().iter_errors(document)
    ]
    assert problems == []


RESEARCH = read(EXAMPLES / "research.yaml")


def requiring(**requirement: Any) -> dict[str, Any]:
    """A policy of one tool, ``a``, and one requirement."""
    return {"tools": ["a"], "requirements": [requirement]}


WRONG = [
    ({key: v for key, v in RESEARCH.items() if key != "tools"}, "required", "#"),
    ({**RESEARCH, "max_iteration": 20}, "additionalProperties", "#"),
    ({**RESEARCH, "max_iterations": 0}, "minimum", "#/max_iterations"),
    ({**RESEARCH, "mode": "fast"}, "enum", "#/mode"),
    ({**RESEARCH, "tools": []}, "minItems", "#/tools"),
    ({**RESEARCH, "tools": ["think", {"name": "search", "descripton": "x"}]}, "oneOf", "#/tools/1"),
    (requiring(type="conditonal", target="a"), "oneOf", "#/requirements/0"),
    (requiring(type="conditional"), "oneOf", "#/requirements/0"),
    (requiring(type="conditional", target="a", priority=0), "oneOf", "#/requirements/0"),
    (requiring(type="cycle_guard", custom_checks=[]), "oneOf", "#/requirements/0"),
    (requiring(type="ask_permission", timeout="soon"), "oneOf", "#/requirements/0"),
]
"""Wrong policies, the keyword each breaks and where (a requirement or a tool entry fails its
``oneOf`` as a whole)."""


@pytest.mark.parametrize(("document", "keyword", "where"), WRONG)
def test_wrong_policies_fail_the_schema_and_the_loader(
    document: dict[str, Any], keyword: str, where: str, tmp_path: Path
) -> None:
    found = [
        (e.validator, "/".join(["#", *map(str, e.absolute_path)]))
        for e in validator().iter_errors(document)
    ]
    assert (keyword, where) in found, found
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PolicyError):
        Policy.load(str(path))
