"""The policy files' models: which keys a TOML, YAML or JSON policy may hold .

These models check a file's *structure*: unknown keys (``extra="forbid"``), a missing
``type`` or ``target``, lists where lists belong. Values that the Python constructors check
(counts, flags, tool names, priorities) are typed loosely here (``Any``, with the precise type
given to the JSON Schema only) and left to those constructors, so a mistake gets the same
message in a file as in code. ``policy_json_schema()`` is what ``ruleengine schema`` prints.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, WithJsonSchema

__all__ = [
    "ArgumentsEntry",
    "AskPermissionEntry",
    "ConditionalEntry",
    "CycleGuardEntry",
    "PolicyFile",
    "REQUIREMENT_MODELS",
    "ToolEntry",
    "policy_json_schema",
    "requirement_keys",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_NAME = {"type": "string", "minLength": 1}
_TOOLS = {"anyOf": [_NAME, {"type": "array", "items": _NAME}, {"type": "null"}]}


# `Any` for validation (the constructors check these values, in their words), the precise
# type for the JSON Schema only.
ToolName = Annotated[Any, WithJsonSchema(_NAME)]
OptionalName = Annotated[Any, WithJsonSchema({"type": ["string", "null"], "minLength": 1})]
Tools = Annotated[Any, WithJsonSchema(_TOOLS)]
Flag = Annotated[Any, WithJsonSchema({"type": "boolean"})]
Count = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 0})]
OptionalCount = Annotated[Any, WithJsonSchema({"type": ["integer", "null"], "minimum": 0})]
Positive = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 1})]
OptionalPositive = Annotated[Any, WithJsonSchema({"type": ["integer", "null"], "minimum": 1})]
OptionalText = Annotated[Any, WithJsonSchema({"type": ["string", "null"]})]
Seconds = Annotated[Any, WithJsonSchema({"type": ["number", "null"], "exclusiveMinimum": 0})]
ModeName = Annotated[Any, WithJsonSchema({"enum": ["strict", "priority"]})]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolEntry(_Entry):
    """A tool with a description, parameters or tags: `{name = "search", description = "..."}`."""

    model_config = ConfigDict(title="Tool")

    name: ToolName = Field(description="The tool's name, as requirements cite it.")
    description: OptionalText = Field(
        None, description="What the tool does, in words for the model."
    )
    parameters: Annotated[Any, WithJsonSchema({"type": "object"})] = Field(
        None,
        description='The tool\'s parameters, for conditions on its arguments: names to "string", '
        '"integer", "number", "boolean", a list of literals (an enum) or ["string"].',
    )
    input_schema: Annotated[Any, WithJsonSchema({"type": "object"})] = Field(
        None,
        description="The tool's parameters as a JSON Schema of an object (instead of "
        "`parameters`).",
    )
    tags: Annotated[Any, WithJsonSchema({"anyOf": [_NAME, {"type": "array", "items": _NAME}]})] = (
        Field(
            None,
            description="The tool's tags: requirements name every tool carrying a tag as "
            '"tag:NAME" in a tool list (`only_after`, `include`, ...).',
        )
    )


def _tool_kind(value: object) -> str:
    return "entry" if isinstance(value, dict) else "name"


ToolItem = Annotated[
    Annotated[ToolName, Tag("name")] | Annotated[ToolEntry, Tag("entry")],
    Discriminator(_tool_kind),
]
"""A tool: a name (checked by ``Policy``), or a mapping with a name and a description."""


class _Requirement(_Entry):
    name: OptionalName = Field(
        None,
        description="How cores and explanations cite the requirement; unique in the policy. "
        "Defaults depend on the type.",
    )
    priority: Positive = Field(
        10, description="Higher wins: forced-tool ties, reasons, and everything in priority mode."
    )
    enabled: Flag = Field(True, description="A disabled requirement is not run (nor checked).")


class ConditionalEntry(_Requirement):
    """When a tool may run, when it must, how often (`ConditionalRequirement`)."""

    model_config = ConfigDict(title="conditional")

    type: Literal["conditional"] = Field(description="`conditional`.")
    target: ToolName = Field(description="The tool this requirement allows, forces or limits.")
    force_at_step: OptionalPositive = Field(
        None,
        description="Hard-force the target when the requirement's step number (its counted "
        "steps + 1) equals this; a conflict if the target is not allowed then.",
    )
    only_before: Tools = Field(
        None, description="The target is denied once any of these tools has been called."
    )
    only_after: Tools = Field(
        None, description="The target is denied until every one of these tools has been called."
    )
    force_after: Tools = Field(
        None, description="Right after one of these tools, the target is forced (soft)."
    )
    force_prevent_stop: Flag = Field(
        True, description="While the target is forced, the agent may not stop."
    )
    min_invocations: Count = Field(
        0, description="While the target has fewer counted calls, the agent may not stop."
    )
    max_invocations: OptionalCount = Field(
        None, description="Once the target has this many counted calls, it is denied."
    )
    only_success_invocations: Flag = Field(
        True, description="Count only `ok` steps; when false, `error` and `denied` steps too."
    )
    consecutive_allowed: Flag = Field(
        True, description="When false, the target is denied right after itself."
    )
    reason: OptionalText = Field(
        None, description="Text for the model, given while the requirement denies the target."
    )


class AskPermissionEntry(_Requirement):
    """A human approves calls before they run (`AskPermissionRequirement`)."""

    model_config = ConfigDict(title="ask_permission")

    type: Literal["ask_permission"] = Field(description="`ask_permission`.")
    include: Tools = Field(
        None, description="The tools to ask about; empty or absent: every tool but final_answer."
    )
    exclude: Tools = Field(None, description="Tools never asked about.")
    remember_choices: Flag = Field(
        False, description="The first answer for a tool holds for the rest of the run."
    )
    hide_disallowed: Flag = Field(
        False, description="Hide refused tools from the model (with remember_choices)."
    )
    always_allow: Flag = Field(
        False, description="Approve every call without asking (the requirement stays in place)."
    )
    timeout: Seconds = Field(
        None, description="Seconds the handler has to answer; no answer is a refusal."
    )


Conditions = Annotated[
    Any,
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]


class ArgumentsEntry(_Requirement):
    """Conditions on a tool's arguments and the run's values (`ArgumentsRequirement`)."""

    model_config = ConfigDict(title="arguments")

    type: Literal["arguments"] = Field(description="`arguments`.")
    target: ToolName = Field(description="The tool whose calls the conditions judge.")
    allow_if: Conditions = Field(
        None, description="A call must meet this condition (or each of these) to run."
    )
    deny_if: Conditions = Field(None, description="A call meeting this condition is refused.")
    ask_if: Conditions = Field(
        None, description="A call meeting this condition needs permission first."
    )
    reason: OptionalText = Field(None, description="Text for the model when a call is refused.")
    timeout: Seconds = Field(
        None, description="Seconds the handler has to answer an `ask_if`; no answer refuses."
    )


class CycleGuardEntry(_Requirement):
    """Denies a tool whose identical calls start to cycle (`CycleGuard`)."""

    model_config = ConfigDict(title="cycle_guard")

    type: Literal["cycle_guard"] = Field(description="`cycle_guard`.")
    priority: Positive = Field(1, description="Higher wins; the guard defaults to the lowest, 1.")
    max_strike_length: Positive = Field(
        1, description="More identical calls in a row than this is a cycle."
    )
    max_total_occurrences: Positive = Field(
        5, description="More identical calls than this within the window is a cycle."
    )
    window_size: Positive = Field(
        10, description="How many recent calls the occurrence count looks at."
    )


RequirementEntry = Annotated[
    ConditionalEntry | AskPermissionEntry | CycleGuardEntry | ArgumentsEntry,
    Field(discriminator="type"),
]

REQUIREMENT_MODELS: dict[str, type[_Requirement]] = {
    "conditional": ConditionalEntry,
    "ask_permission": AskPermissionEntry,
    "cycle_guard": CycleGuardEntry,
    "arguments": ArgumentsEntry,
}
"""The model of each requirement ``type``."""


class PolicyFile(_Entry):
    """A ruleengine policy: the tools an agent has and the requirements it runs under."""

    model_config = ConfigDict(title="ruleengine policy")

    schema_: str | None = Field(
        None,
        alias="$schema",
        title="$schema",
        description="The JSON Schema this file follows (for editors); ignored by ruleengine.",
    )
    tools: list[ToolItem] = Field(
        description="The tools, in declared order: names, or tables with a name and a "
        "description; at least one besides `final_answer`, which is always there, last, "
        "whether listed or not.",
        # For editors only: `Policy` refuses an empty list, in its own words.
        json_schema_extra={"minItems": 1},
    )
    max_iterations: Positive = Field(20, description="How many LLM rounds a run may take.")
    mode: ModeName = Field(
        "strict",
        description="`strict`: a deny always wins; `priority`: every rule is soft at its priority.",
    )
    requirements: list[RequirementEntry] = Field(
        default_factory=list,
        description="The requirements, each a table with a `type`: `conditional`, "
        "`ask_permission`, `cycle_guard` or `arguments`.",
    )


_COMMON = ("name", "priority", "enabled")


def requirement_keys(kind: str) -> list[str]:
    """The keys of a requirement of type ``kind``: ``type``, its own, then the common ones."""
    own = [k for k in REQUIREMENT_MODELS[kind].model_fields if k not in ("type", *_COMMON)]
    return ["type", *own, *_COMMON]


def policy_json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of policy files, with a description for every key."""
    schema = PolicyFile.model_json_schema(by_alias=True)
    definitions = schema["$defs"]
    for kind, model in REQUIREMENT_MODELS.items():
        # Editors complete keys in this order: `type` first, the common keys last.
        properties = definitions[model.__name__]["properties"]
        definitions[model.__name__]["properties"] = {
            key: properties[key] for key in requirement_keys(kind)
        }
    return {"$schema": SCHEMA_DIALECT, **schema}
