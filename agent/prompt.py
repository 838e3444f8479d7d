"""The request layout: a prefix that stays put, and one short note per step at the end.

Providers cache prompts by prefix, so the request is laid out to keep its prefix the same
bytes from step to step:

* the **tool definitions** and the **system prompt** (role, instructions, tool descriptions,
  how steps work) depend only on the agent and on which tools are hidden, never on the rest
  of the pass; they are rendered once per hidden set (hidden tools are absent everywhere, so a
  step that hides a new tool changes them);
* the **history** only grows: user prompt, assistant replies, tool results;
* what changes per step travels at the end: the pass goes in ``tool_choice`` and in one short
  **step note** (a user message: what may be called now, what must be, may the model finish,
  and why not).

When the backend honours an allowed subset (``Capabilities.supports("allowed")``), every
visible tool stays offered and the pass is sent as ``ToolChoiceAllowed`` (or a named tool);
otherwise only the allowed tools are sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from agent.tools import Tool
from backends import (
    ToolChoice,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceNone,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
)
from ruleengine import FINAL_ANSWER, Pass
from ruleengine.conditions.narrow import narrowed

__all__ = [
    "DEFAULT_ROLE",
    "plan_tools",
    "step_note",
    "step_values",
    "system_prompt",
    "system_sections",
]

DEFAULT_ROLE = "You are a helpful assistant. You solve the user's task by calling tools."


def system_prompt(
    *,
    role: str | None,
    instructions: Sequence[str],
    tools: Sequence[Tool],
    final_answer_as_tool: bool,
    answer_schema: str | None = None,
    expected_output: str | None = None,
) -> str:
    """The system prompt: the same text for the same agent and visible tools.

    ``expected_output`` describes the answer in words (an instruction given as the expected
    output); ``answer_schema`` is the typed answer's JSON Schema, when the model answers in
    text rather than with the ``final_answer`` tool.
    """
    return composed(
        system_sections(
            role=role,
            instructions=instructions,
            tools=tools,
            final_answer_as_tool=final_answer_as_tool,
            answer_schema=answer_schema,
            expected_output=expected_output,
        )
    )


def composed(section: Mapping[str, str]) -> str:
    """The default system prompt from its parts (``system_sections``)."""
    parts = [section["role"]]
    if section["instructions"]:
        parts.append("# Instructions\n" + section["instructions"])
    if section["tools"]:
        parts.append("# Tools\n" + section["tools"])
    parts.append("# How each step works\n" + section["steps"])
    if section["expected_output"]:
        parts.append("# Expected output\n" + section["expected_output"])
    if section["answer_schema"]:
        parts.append(
            "# Final answer\nThe final answer is one JSON object matching: "
            + section["answer_schema"]
        )
    return "\n\n".join(parts)


def system_sections(
    *,
    role: str | None,
    instructions: Sequence[str],
    tools: Sequence[Tool],
    final_answer_as_tool: bool,
    answer_schema: str | None = None,
    expected_output: str | None = None,
) -> dict[str, str]:
    """The parts of the system prompt, each as text (``""`` when there is none): ``role``,
    ``instructions`` and ``tools`` (one ``- `` line each), ``finish`` (how to finish),
    ``steps`` (how each step works, ``finish`` last), ``expected_output``, ``answer_schema``."""
    listed = [t for t in tools if final_answer_as_tool or t.name != FINAL_ANSWER]
    finish = (
        "Finish by calling `final_answer`; it is the only way to finish."
        if final_answer_as_tool
        else "Finish by answering in plain text, when the note says you may."
    )
    steps = (
        "- Before each of your turns, a short note says which tools you may call now, which"
        " one you must call, and whether you may finish. Follow it: a call it does not allow"
        " is refused and does not run.\n"
        "- Every call is answered: with the tool's output, or with why it failed or was"
        " refused. Take it into account before going on.\n- " + finish
    )
    return {
        "role": role or DEFAULT_ROLE,
        "instructions": "\n".join(f"- {line}" for line in instructions),
        "tools": "\n".join(
            f"- `{t.name}`: {_one_line(t.description) or 'no description'}" for t in listed
        ),
        "finish": finish,
        "steps": steps,
        "expected_output": expected_output or "",
        "answer_schema": answer_schema or "",
    }


def step_note(pass_: Pass, offered: Sequence[str], *, final_answer_as_tool: bool) -> str:
    """The per-step message: what the pass allows now, in a line or two."""
    reasons = pass_.reasons
    forced = pass_.forced
    finish = "finish with `final_answer`" if final_answer_as_tool else "answer in plain text"
    if forced == FINAL_ANSWER:
        return "Now: give your final answer" + (
            " with `final_answer`." if final_answer_as_tool else "."
        )
    if forced is not None:
        why = reasons.get(forced)
        note = f"Now: call `{forced}`" + (f" ({why})." if why else ".")
    else:
        tools = [t for t in pass_.allowed if t != FINAL_ANSWER and t in offered]
        if tools and pass_.can_stop:
            note = f"Now: you may call {_listed(tools)}, or {finish}."
        elif tools:
            note = f"Now: you may call {_listed(tools)}."
        else:
            note = "Now: give your final answer" + (
                " with `final_answer`." if final_answer_as_tool else "."
            )
        blocked = _blocked(pass_, offered)
        if blocked:
            note += " Not now: " + ", ".join(blocked) + "."
    conditions = _conditions(pass_, offered)
    if conditions:
        note += f" Arguments must meet: {conditions}."
    if not pass_.can_stop:
        why = reasons.get(FINAL_ANSWER)
        note += " You cannot finish yet" + (f" ({why})." if why else ".")
    return note


def _blocked(pass_: Pass, offered: Sequence[str]) -> list[str]:
    """The offered tools the pass does not allow, each with its reason when it has one."""
    reasons = pass_.reasons
    return [
        f"`{t}` ({reasons[t]})" if t in reasons else f"`{t}`"
        for t in offered
        if t != FINAL_ANSWER and t not in pass_.allowed
    ]


def _conditions(pass_: Pass, offered: Sequence[str]) -> str:
    """The conditions on the arguments of the tools offered now, in words (``""``: none)."""
    return "; ".join(
        f"`{t}` only if {pass_.conditions[t]}"
        for t in pass_.allowed
        if t in pass_.conditions and (t in offered or t == FINAL_ANSWER)
    )


def step_values(
    pass_: Pass, offered: Sequence[str], *, final_answer_as_tool: bool
) -> dict[str, str]:
    """What a step note says, each part as text (``""`` when there is none): ``note`` (the
    whole note), ``allowed`` (the tools that may be called now), ``forced`` (the one that must
    be), ``blocked`` (the offered tools that may not, with why), ``conditions`` (what the
    arguments of the allowed tools must meet), ``can_finish`` (``yes`` or ``no``) and
    ``why_not_finish``."""
    reasons = pass_.reasons
    return {
        "note": step_note(pass_, offered, final_answer_as_tool=final_answer_as_tool),
        "allowed": _listed([t for t in pass_.allowed if t != FINAL_ANSWER and t in offered]),
        "forced": f"`{pass_.forced}`" if pass_.forced is not None else "",
        "blocked": ", ".join(_blocked(pass_, offered)),
        "conditions": _conditions(pass_, offered),
        "can_finish": "yes" if pass_.can_stop else "no",
        "why_not_finish": "" if pass_.can_stop else reasons.get(FINAL_ANSWER, ""),
    }


def plan_tools(
    pass_: Pass,
    visible: Sequence[Tool],
    *,
    supports_allowed: bool,
    final_answer_as_tool: bool,
) -> tuple[tuple[ToolDefinition, ...], ToolChoice]:
    """The tools to offer and the ``tool_choice`` for ``pass_``.

    ``visible`` are the tools not hidden at this step, in declared order (``final_answer``
    among them only when it is offered as a tool).
    """
    offered = [t for t in visible if final_answer_as_tool or t.name != FINAL_ANSWER]
    allowed = [t for t in offered if t.name in pass_.allowed]
    choice = pass_.tool_choice
    if choice not in ("auto", "required") and choice not in {t.name for t in offered}:
        # Only `final_answer` without the tool: the model must answer in text.
        choice = "none"
    if not allowed and choice != "none":
        choice = "none"
    tools = offered if supports_allowed else allowed
    if choice == "none":
        if supports_allowed and offered:
            return tuple(t.definition for t in offered), ToolChoiceNone()
        return (), ToolChoiceAuto()
    if choice not in ("auto", "required"):
        # The forced tool's schema says what its conditions allow where JSON Schema can, so
        # a server that decodes against it can produce only admissible arguments.
        return tuple(
            _narrowed(t.definition, pass_) if t.name == choice else t.definition for t in tools
        ), ToolChoiceTool(choice)
    mode: Literal["auto", "required"] = "required" if choice == "required" else "auto"
    definitions = tuple(t.definition for t in tools)
    if not supports_allowed or len(allowed) == len(offered):
        return definitions, ToolChoiceRequired() if mode == "required" else ToolChoiceAuto()
    return definitions, ToolChoiceAllowed(tuple(t.name for t in allowed), mode)


def _narrowed(definition: ToolDefinition, pass_: Pass) -> ToolDefinition:
    """``definition`` with its schema narrowed by the conditions on its arguments now."""
    checks = pass_.argument_checks(definition.name)
    if not checks:
        return definition
    schema = narrowed(definition.parameters, checks)
    if schema == definition.parameters:
        return definition
    return ToolDefinition(definition.name, definition.description, definition.input_model, schema)


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _one_line(text: str) -> str:
    return " ".join(text.split())
