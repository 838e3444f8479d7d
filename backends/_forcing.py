"""Forcing a tool on any server: plan a request the server can honour, then read its reply.

A request whose ``tool_choice`` makes a call mandatory (a named tool, ``required``, or an
allowed subset in ``required`` mode) goes down this ladder until a rung fits the server's
capabilities:

1. ``native``: the request as asked. An allowed subset the server cannot take becomes the
   subset alone as the offered tools; a named tool without ``tool`` support becomes that tool
   alone with ``required``; ``required`` over one tool becomes that tool by name.
2. ``structured``: no tools; ``response_format`` whose schema is the tool's input, or a union
   of ``{"name", "arguments"}`` objects; the JSON reply becomes the tool call.
3. ``prompt``: the same, asked for in words with the schemas spelled out; the reply's JSON
   object (found and repaired by ``_json``) is checked against the allowed tool names.

A rung whose feature the server rejects (a 400 naming the parameter) is retried without that
feature: the next plan is made without it. What the *model* chose is never held against the
server: a reply that calls another tool, or answers in text, is passed on as it is, and the
caller (the agent's gate) refuses it and tells the model. ``plan`` builds one rung for given
capabilities; ``interpret`` reads a reply as the rung expects it. The loop that walks the
ladder lives in ``model.py``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backends._json import parse_json_object
from backends.base import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    Feature,
    Route,
)
from backends.errors import ArgumentsError
from backends.messages import (
    Message,
    ToolCall,
    UserMessage,
)
from backends.tools import (
    ResponseFormat,
    ToolChoice,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
)

__all__ = ["Attempt", "interpret", "must_call", "plan", "union_schema"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One rung of the ladder: what to send, and what the reply must contain."""

    route: Route
    """How the reply will be read."""
    wire: ChatRequest
    """The request the backend sends."""
    features: tuple[Feature, ...]
    """What it uses that a server may reject (blamed on a 400 that names its parameter)."""
    must_call: tuple[str, ...] | None
    """The tools the caller asked a call of; ``None`` when a call is optional. On the
    ``structured`` and ``prompt`` rungs, the reply's JSON is read as a call of one of them."""


def must_call(request: ChatRequest) -> tuple[str, ...] | None:
    """The tools a reply to ``request`` must call one of, or ``None`` when a call is optional."""
    choice = request.tool_choice
    if isinstance(choice, ToolChoiceTool):
        return (choice.name,)
    if isinstance(choice, ToolChoiceRequired):
        return tuple(tool.name for tool in request.tools)
    if isinstance(choice, ToolChoiceAllowed) and choice.mode == "required":
        return choice.tools
    return None


def plan(request: ChatRequest, capabilities: Capabilities) -> Attempt:
    """The highest rung of the ladder that ``capabilities`` allow for ``request``."""
    tools, choice = _narrow(request, capabilities)
    names = must_call(request)
    if isinstance(choice, ToolChoiceAuto) or capabilities.supports(choice.kind):
        return _native(request, capabilities, tools, choice, names)
    # INVARIANT: _narrow leaves an unsupported choice only when it forces a call
    assert names is not None
    chosen = [request.tool(name) for name in names]
    if capabilities.response_format:
        schema = chosen[0].parameters if len(chosen) == 1 else union_schema(chosen)
        label = "arguments" if len(chosen) == 1 else "tool_call"
        wire = request.replace(
            messages=_instructed(request.messages, _forcing_text(chosen, spell_schema=False)),
            tools=(),
            tool_choice="auto",
            response_format=ResponseFormat(name=label, schema=schema),
            parallel_tool_calls=None,
        )
        return Attempt("structured", wire, ("response_format",), names)
    wire = request.replace(
        messages=_instructed(request.messages, _forcing_text(chosen, spell_schema=True)),
        tools=(),
        tool_choice="auto",
        response_format=None,
        parallel_tool_calls=None,
    )
    return Attempt("prompt", wire, (), names)


def _narrow(
    request: ChatRequest, capabilities: Capabilities
) -> tuple[tuple[ToolDefinition, ...], ToolChoice]:
    """Rewrite ``tool_choice`` into the nearest form the server honours, keeping its meaning."""
    tools, choice = request.tools, request.tool_choice
    if isinstance(choice, ToolChoiceAllowed) and not capabilities.supports("allowed"):
        tools = tuple(tool for tool in tools if tool.name in choice.tools)
        if choice.mode == "auto":
            choice = ToolChoiceAuto()
        elif len(tools) == 1:
            choice = ToolChoiceTool(tools[0].name)
        else:
            choice = ToolChoiceRequired()
    if isinstance(choice, ToolChoiceNone) and not capabilities.supports("none"):
        return (), ToolChoiceAuto()
    tool_ok, required_ok = capabilities.supports("tool"), capabilities.supports("required")
    if isinstance(choice, ToolChoiceTool) and not tool_ok and required_ok:
        return (request.tool(choice.name),), ToolChoiceRequired()
    if isinstance(choice, ToolChoiceRequired) and not required_ok and tool_ok and len(tools) == 1:
        return tools, ToolChoiceTool(tools[0].name)
    return tools, choice


def _native(
    request: ChatRequest,
    capabilities: Capabilities,
    tools: tuple[ToolDefinition, ...],
    choice: ToolChoice,
    names: tuple[str, ...] | None,
) -> Attempt:
    features: list[Feature] = []
    if tools and choice.kind in ("none", "required", "tool", "allowed"):
        features.append(choice.kind)
    messages = request.messages
    response_format = request.response_format
    route: Route = "native"
    if response_format is not None and not capabilities.response_format:
        if names is None:  # a text reply is wanted: ask for the format in words
            messages = _instructed(messages, _format_text(response_format))
            route = "prompt"
        response_format = None
    elif response_format is not None:
        features.append("response_format")
    parallel = request.parallel_tool_calls if capabilities.parallel_tool_calls else None
    if tools and parallel is not None:
        features.append("parallel_tool_calls")
    wire = request.replace(
        messages=messages,
        tools=tools,
        tool_choice=choice if tools else ToolChoiceAuto(),
        response_format=response_format,
        parallel_tool_calls=parallel if tools else None,
    )
    return Attempt(route, wire, tuple(features), names)


def interpret(attempt: Attempt, response: ChatResponse) -> ChatResponse:
    """The reply as the caller gets it.

    On the ``native`` rung, the reply as it came: whatever the model chose (another tool than
    the forced one, plain text, a refusal) is the caller's to judge. On the ``structured`` and
    ``prompt`` rungs, a JSON reply becomes the tool call it spells (a tool outside
    ``must_call`` included: the gate refuses it, and says why); a reply that spells no call is
    passed on as text.
    """
    names = attempt.must_call
    if attempt.route == "native" or names is None or response.tool_calls:
        return response
    if response.refusal and not response.text:
        return response
    call = _call_from_text(response.text or "", names)
    if call is None:
        return response
    return ChatResponse(
        tool_calls=(call,),
        finish_reason="tool_calls",
        usage=response.usage,
        model=response.model,
        route=attempt.route,
    )


def _call_from_text(text: str, names: tuple[str, ...]) -> ToolCall | None:
    if not text.strip():
        return None
    try:
        value, repaired = parse_json_object(text)
    except ArgumentsError:
        return None
    wrapped = (
        set(value) == {"name", "arguments"}
        and isinstance(value["name"], str)
        and bool(value["name"])
        and isinstance(value["arguments"], dict)
    )
    if wrapped:
        # A tool outside `names` is still the call the model made: the gate refuses it.
        name, arguments = value["name"], value["arguments"]
    elif len(names) == 1:
        name, arguments = names[0], value
    else:
        return None
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    return ToolCall(call_id, name, arguments, raw_arguments=text, repaired=repaired)


# ---------------------------------------------------------------------------------------------
# Instructions and schemas


def _instructed(messages: Sequence[Message], instruction: str) -> tuple[Message, ...]:
    """The conversation with ``instruction`` added to its last user turn (or as a new one).

    Merging keeps user and assistant turns alternating, which some chat templates require.
    """
    *head, last = messages
    if isinstance(last, UserMessage):
        return (*head, UserMessage(f"{last.content}\n\n{instruction}"))
    return (*messages, UserMessage(instruction))


def _forcing_text(tools: Sequence[ToolDefinition], *, spell_schema: bool) -> str:
    if len(tools) == 1:
        tool = tools[0]
        about = f" ({tool.description})" if tool.description else ""
        schema = f" matching this JSON schema: {_dumps(tool.parameters)}" if spell_schema else ""
        return (
            f"You must now call the tool `{tool.name}`{about}. Reply with only its arguments,"
            f" as one JSON object{schema}, and nothing else."
        )
    listed = ", ".join(f"`{tool.name}`" for tool in tools)
    text = (
        f"You must now call one of these tools: {listed}. Reply with only one JSON object,"
        ' {"name": <the tool\'s name>, "arguments": {<its arguments>}}, and nothing else.'
    )
    if not spell_schema:
        return text
    lines = [text, "The tools, and the JSON schemas of their arguments:"]
    for tool in tools:
        about = f" ({tool.description})" if tool.description else ""
        lines.append(f"- `{tool.name}`{about}: {_dumps(tool.parameters)}")
    return "\n".join(lines)


def _format_text(response_format: ResponseFormat) -> str:
    return (
        "Reply with only one JSON value matching this JSON schema, and nothing else:"
        f" {_dumps(response_format.schema)}"
    )


def _dumps(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def union_schema(tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """A schema for ``{"name": t, "arguments": <t's input>}`` over ``tools``.

    Each input schema's ``$defs`` move to the root (a ``$ref`` is relative to the root);
    a name two tools use for different definitions is prefixed with the tool's name.
    """
    root_defs: dict[str, Any] = {}
    variants = []
    for tool in tools:
        schema = dict(tool.parameters)
        local = schema.pop("$defs", {})
        renames = {}
        for key, value in local.items():
            new = key if root_defs.get(key, value) == value else f"{tool.name}__{key}"
            renames[key] = new
        for key, value in local.items():
            root_defs[renames[key]] = _renamed(value, renames)
        variants.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "arguments": _renamed(schema, renames),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    union: dict[str, Any] = {"anyOf": variants}
    if root_defs:
        union["$defs"] = root_defs
    return union


def _renamed(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out = {key: _renamed(value, renames) for key, value in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            out["$ref"] = "#/$defs/" + renames.get(ref[len("#/$defs/") :], ref[len("#/$defs/") :])
        return out
    if isinstance(node, list):
        return [_renamed(item, renames) for item in node]
    return node
