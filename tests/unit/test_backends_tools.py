"""backends/tools.py: tool definitions, tool choices and response formats."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from backends import (
    ResponseFormat,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
    to_tool_choice,
)
from ruleengine import PolicyError


class Query(BaseModel):
    query: str
    limit: int = 3


class Unschemable(BaseModel):
    model_config = {"arbitrary_types_allowed": True}
    handle: object.__class__  # a type pydantic cannot describe in JSON schema


@pytest.mark.parametrize(
    ("build", "fragments"),
    [
        (lambda: ToolDefinition("bad name!"), ("`bad name!`", "not a valid tool name")),
        (lambda: ToolDefinition("x" * 65), ("not a valid tool name",)),
        (lambda: ToolDefinition(""), ("must not be empty",)),
        (lambda: ToolDefinition("t", input_model=dict), ("pydantic model class",)),  # type: ignore[arg-type]
        (lambda: ToolDefinition("t", input_model=Query(query="x")), ("pydantic model class",)),  # type: ignore[arg-type]
        (lambda: ToolDefinition("t", description=5), ("`description`",)),  # type: ignore[arg-type]
        (lambda: ResponseFormat("answer", {}), ("`schema`",)),
        (lambda: ResponseFormat("an swer", {"type": "object"}), ("not a valid tool name",)),
        (lambda: ResponseFormat("r", {"enum": {1, 2}}), ("`schema` are not JSON",)),
        (lambda: ResponseFormat("r", {"type": "object"}, strict="yes"), ("`strict`",)),  # type: ignore[arg-type]
        (lambda: ResponseFormat.from_model(dict), ("response format: the model must be",)),  # type: ignore[arg-type]
        (lambda: ToolChoiceTool("a b"), ("tool choice",)),
        (lambda: ToolChoiceAllowed(()), ("the list is empty",)),
        (lambda: ToolChoiceAllowed(("a", "a")), ("listed twice",)),
        (lambda: ToolChoiceAllowed("search"), ("must be a list",)),  # type: ignore[arg-type]
        (lambda: ToolChoiceAllowed(("a",), mode="sometimes"), ("`mode`",)),  # type: ignore[arg-type]
        (lambda: to_tool_choice(3), ("`tool_choice` must be",)),  # type: ignore[arg-type]
    ],
)
def test_bad_values_name_the_culprit(build: Any, fragments: tuple[str, ...]) -> None:
    with pytest.raises(PolicyError) as caught:
        build()
    error = caught.value
    for fragment in fragments:
        assert fragment in error.message
    assert "\n" not in error.message
    assert not error.message[0].isupper()


def test_a_model_without_a_json_schema_is_a_clear_error() -> None:
    with pytest.raises(PolicyError) as caught:
        ToolDefinition("t", input_model=Unschemable)
    assert caught.value.message.startswith("tool `t`: no JSON schema for `Unschemable`")
    assert caught.value.hint is not None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("auto", ToolChoiceAuto()),
        ("none", ToolChoiceNone()),
        ("required", ToolChoiceRequired()),
        ("search", ToolChoiceTool("search")),
        (ToolChoiceAllowed(("search",), "required"), ToolChoiceAllowed(("search",), "required")),
    ],
)
def test_tool_choice_reads_pass_values(value: Any, expected: Any) -> None:
    assert to_tool_choice(value) == expected


def test_allowed_tools_are_kept_as_a_tuple() -> None:
    choice = ToolChoiceAllowed(["search", "think"])  # type: ignore[arg-type]
    assert choice.tools == ("search", "think")
    assert choice.kind == "allowed"


def test_tool_definitions_carry_their_schema() -> None:
    search = ToolDefinition("search", "search the web", Query)
    assert search.parameters["properties"]["query"]["type"] == "string"
    assert search.parameters["required"] == ["query"]
    assert ToolDefinition("think").parameters == {"type": "object", "properties": {}}


def test_response_format_from_a_model() -> None:
    fmt = ResponseFormat.from_model(Query)
    assert (fmt.name, fmt.schema["type"], fmt.strict) == ("Query", "object", False)
    assert ResponseFormat.from_model(Query, name="q", strict=True).strict


def test_reprs_show_what_was_given() -> None:
    assert repr(ToolChoiceAuto()) == "ToolChoiceAuto()"
    assert repr(ToolChoiceTool("t")) == "ToolChoiceTool(name='t')"
    assert repr(ToolChoiceAllowed(("a",))) == "ToolChoiceAllowed(tools=('a',))"
    assert repr(ToolChoiceAllowed(("a",), "required")) == (
        "ToolChoiceAllowed(tools=('a',), mode='required')"
    )
    assert repr(ToolDefinition("think")) == "ToolDefinition(name='think')"
