"""What the model is offered: tool definitions, the ``tool_choice`` forms, structured output.

A ``ToolDefinition`` carries a pydantic input model and the JSON schema derived from it.
``ToolChoice`` is a closed union: ``auto``, ``none``, ``required``, one named ``tool``, or an
``allowed`` subset of the offered tools (chat completions' ``allowed_tools``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel

from backends._check import as_tuple, dataclass_repr, fail, json_value, set_field, text, tool_name
from backends._strict import strict_json_schema

__all__ = [
    "ResponseFormat",
    "TOOL_CHOICE_KINDS",
    "ToolChoice",
    "ToolChoiceAllowed",
    "ToolChoiceAuto",
    "ToolChoiceKind",
    "ToolChoiceNone",
    "ToolChoiceRequired",
    "ToolChoiceTool",
    "ToolDefinition",
    "input_schema",
    "to_tool_choice",
]

ToolChoiceKind: TypeAlias = Literal["auto", "none", "required", "tool", "allowed"]
"""The forms of ``tool_choice``: ``tool`` is one named tool, ``allowed`` a subset."""
TOOL_CHOICE_KINDS: frozenset[ToolChoiceKind] = frozenset(get_args(ToolChoiceKind))


@dataclass(frozen=True, slots=True, repr=False)
class ToolDefinition:
    """A tool as the model sees it: name, description, and the JSON schema of its input."""

    name: str
    """The tool's name (1 to 64 letters, digits, ``_`` or ``-``)."""
    description: str = ""
    """What the tool does, for the model."""
    input_model: type[BaseModel] | None = None
    """The pydantic model of the arguments; ``None`` for a tool without arguments."""
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    """A JSON schema to offer instead of the input model's (a schema narrowed by the
    conditions on the arguments at this step); the model still validates the arguments."""
    parameters: Mapping[str, Any] = field(init=False, compare=False, repr=False)
    """The JSON schema of the arguments: ``schema``, or derived from ``input_model``."""

    def __post_init__(self) -> None:
        tool_name(self.name, "tool")
        text(self.description, f"tool `{self.name}`: `description`")
        if self.schema is not None:
            if not isinstance(self.schema, Mapping) or self.schema.get("type") != "object":
                raise fail(
                    f"tool `{self.name}`: `schema` must be a JSON schema of an object: got "
                    f"`{self.schema!r:.80}`"
                )
            set_field(self, "parameters", dict(self.schema))
            return
        set_field(self, "parameters", input_schema(self.input_model, f"tool `{self.name}`"))

    __repr__ = dataclass_repr


def input_schema(model: object, what: str) -> dict[str, Any]:
    if model is None:
        return {"type": "object", "properties": {}}
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise fail(f"{what}: the model must be a pydantic model class: got `{model!r:.80}`")
    try:
        schema = model.model_json_schema()
    except Exception as error:  # pydantic raises several kinds here
        raise fail(
            f"{what}: no JSON schema for `{model.__name__}`: {error}",
            "give every field a JSON-serialisable type",
        ) from error
    if schema.get("type") != "object":
        raise fail(f"{what}: the schema of `{model.__name__}` is not an object")
    return schema


@dataclass(frozen=True, slots=True, repr=False)
class ResponseFormat:
    """Structured output: the reply must be one JSON value matching ``schema``."""

    name: str
    """A name for the schema (letters, digits, ``_``, ``-``)."""
    schema: Mapping[str, Any]
    """The JSON schema of the reply."""
    strict: bool = False
    """Ask for strict schema adherence (OpenAI's strict mode has extra schema rules)."""
    description: str | None = None
    """What the reply is, for the model."""

    def __post_init__(self) -> None:
        tool_name(self.name, "response format: `name`")
        if not isinstance(self.schema, Mapping) or not self.schema:
            raise fail(
                f"response format `{self.name}`: `schema` must be a JSON schema object:"
                f" got `{self.schema!r:.80}`"
            )
        json_value(dict(self.schema), f"response format `{self.name}`: `schema`")
        if not isinstance(self.strict, bool):
            raise fail(f"response format `{self.name}`: `strict` must be true or false")
        if self.description is not None:
            text(self.description, f"response format `{self.name}`: `description`")

    @classmethod
    def from_model(
        cls, model: type[BaseModel], *, name: str | None = None, strict: bool = False
    ) -> ResponseFormat:
        """The format of a pydantic model's JSON schema (named after the model by default).

        With ``strict=True`` the schema is converted to the subset OpenAI's strict structured
        outputs accept: every object closed (``additionalProperties: false``) with every
        property required, ``T | None`` fields nullable, ``default`` and the keywords strict
        mode lacks dropped (the reply is still validated against ``model``), ``$ref`` kept
        alone. A field strict mode cannot express (``dict[str, T]``, a tuple, ``Any``) is a
        ``PolicyError``. See ``backends/_strict.py``.
        """
        label = name if name is not None else getattr(model, "__name__", "reply")
        schema = input_schema(model, "response format")
        if strict is True:
            schema = strict_json_schema(schema, f"response format `{label}`")
        return cls(name=label, schema=schema, strict=strict)

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolChoiceAuto:
    """The model may call any offered tool, several, or none."""

    kind: Literal["auto"] = "auto"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolChoiceNone:
    """The model must not call a tool."""

    kind: Literal["none"] = "none"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolChoiceRequired:
    """The model must call at least one offered tool."""

    kind: Literal["required"] = "required"

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolChoiceTool:
    """The model must call this tool (the pass's forced tool)."""

    name: str
    """The tool to call."""
    kind: Literal["tool"] = "tool"

    def __post_init__(self) -> None:
        tool_name(self.name, "tool choice")

    __repr__ = dataclass_repr


@dataclass(frozen=True, slots=True, repr=False)
class ToolChoiceAllowed:
    """Offer every tool (a stable prompt prefix) but let the model call only ``tools``.

    This is chat completions' ``allowed_tools``; ``mode`` says whether a call is required.
    """

    tools: tuple[str, ...]
    """The tools the model may call, a non-empty subset of the offered tools."""
    mode: Literal["auto", "required"] = "auto"
    """``auto``: call some of ``tools`` or none; ``required``: call at least one."""
    kind: Literal["allowed"] = "allowed"

    def __post_init__(self) -> None:
        names = as_tuple(self.tools, "allowed tools")
        if not names:
            raise fail("allowed tools: the list is empty", "use `ToolChoiceNone()` instead")
        for name in names:
            tool_name(name, "allowed tools: tool")
        if len(set(names)) != len(names):
            raise fail(f"allowed tools: a tool is listed twice: `{', '.join(names)}`")
        set_field(self, "tools", names)
        if self.mode not in ("auto", "required"):
            raise fail(f"allowed tools: `mode` must be `auto` or `required`: got `{self.mode}`")

    __repr__ = dataclass_repr


ToolChoice: TypeAlias = (
    ToolChoiceAuto | ToolChoiceNone | ToolChoiceRequired | ToolChoiceTool | ToolChoiceAllowed
)
CHOICE_TYPES = (
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolChoiceAllowed,
)


def to_tool_choice(value: ToolChoice | str) -> ToolChoice:
    """Read ``"auto"``, ``"none"``, ``"required"`` or a tool name (as ``Pass.tool_choice`` is).

    The three words are the modes; a tool with such a name is chosen by ``ToolChoiceTool``.
    """
    if isinstance(value, CHOICE_TYPES):
        return value
    if value == "auto":
        return ToolChoiceAuto()
    if value == "none":
        return ToolChoiceNone()
    if value == "required":
        return ToolChoiceRequired()
    if isinstance(value, str):
        return ToolChoiceTool(value)
    raise fail(
        f"`tool_choice` must be `auto`, `none`, `required`, a tool name or a ToolChoice:"
        f" got `{value!r:.80}`"
    )
