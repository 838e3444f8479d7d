"""``Templates``: the system prompt and the step note, in your own words.

``RequirementAgent(..., templates=Templates(system=..., step=...))`` replaces the text the
agent sends; each template is a ``str.format`` text whose placeholders are the parts the agent
computes (``SYSTEM_PLACEHOLDERS``, ``STEP_PLACEHOLDERS``; ``{{`` and ``}}`` are literal
braces). A template left out keeps the built-in text, byte for byte. Placeholders are checked
when the templates are made: an unknown one is a ``PolicyError`` naming it.

The system prompt is still rendered once per set of visible tools (it stays the cached
prefix), and the step note stays the one message at the end of each request.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent.prompt import composed, step_note, step_values, system_sections
from agent.tools import Tool
from ruleengine import Pass, PolicyError

__all__ = ["STEP_PLACEHOLDERS", "SYSTEM_PLACEHOLDERS", "Templates"]

SYSTEM_PLACEHOLDERS: Mapping[str, str] = {
    "default": "the built-in system prompt, whole",
    "name": "the agent's name",
    "role": "the role (the built-in one when the agent has none)",
    "instructions": "the instructions, one `- ` line each",
    "tools": "the visible tools, one `- `name`: description` line each",
    "steps": "how each step works (the built-in lines, `finish` last)",
    "finish": "how the model finishes (`final_answer`, or plain text)",
    "expected_output": "the expected output, when it is given as text",
    "answer_schema": "the typed answer's JSON Schema, when the model answers in text",
}
"""The system template's placeholders (each ``""`` when there is nothing to say)."""

STEP_PLACEHOLDERS: Mapping[str, str] = {
    "note": "the built-in step note, whole",
    "allowed": "the tools the model may call now, as `a`, `b`",
    "forced": "the tool it must call now, as `a`",
    "blocked": "the visible tools it may not call now, with why",
    "conditions": "what the arguments of the allowed tools must meet",
    "can_finish": "`yes` or `no`",
    "why_not_finish": "why it may not finish yet",
}
"""The step template's placeholders (each ``""`` when there is nothing to say)."""


@dataclass(frozen=True, slots=True)
class Templates:
    """The text of the system prompt (``system``) and of the note before each model round
    (``step``), as ``str.format`` templates; ``None`` keeps the built-in text."""

    system: str | None = None
    """The system prompt; placeholders: ``SYSTEM_PLACEHOLDERS``."""
    step: str | None = None
    """The step note; placeholders: ``STEP_PLACEHOLDERS``."""

    def __post_init__(self) -> None:
        _check("system", self.system, SYSTEM_PLACEHOLDERS)
        _check("step", self.step, STEP_PLACEHOLDERS)

    def render_system(
        self,
        *,
        name: str,
        role: str | None,
        instructions: Sequence[str],
        tools: Sequence[Tool],
        final_answer_as_tool: bool,
        answer_schema: str | None = None,
        expected_output: str | None = None,
    ) -> str:
        """The system prompt for these visible ``tools``."""
        values = system_sections(
            role=role,
            instructions=instructions,
            tools=tools,
            final_answer_as_tool=final_answer_as_tool,
            answer_schema=answer_schema,
            expected_output=expected_output,
        )
        default = composed(values)
        if self.system is None:
            return default
        return self.system.format_map({**values, "default": default, "name": name})

    def render_step(
        self, pass_: Pass, offered: Sequence[str], *, final_answer_as_tool: bool
    ) -> str:
        """The step note for ``pass_``, with these tools offered."""
        if self.step is None:
            return step_note(pass_, offered, final_answer_as_tool=final_answer_as_tool)
        values = step_values(pass_, offered, final_answer_as_tool=final_answer_as_tool)
        return self.step.format_map(values)


def _check(which: str, template: object, placeholders: Mapping[str, str]) -> None:
    if template is None:
        return
    listed = ", ".join(f"`{{{p}}}`" for p in placeholders)
    if not isinstance(template, str) or not template.strip():
        raise PolicyError(
            f"templates: {which}=`{template!r:.60}` must be a non-empty text",
            hint=f"a `str.format` text; placeholders: {listed}",
            parameter=which,
        )
    try:
        parsed = list(string.Formatter().parse(template))
        fields = [f for _, f, _, _ in parsed if f is not None]
        if any(spec and "{" in spec for _, _, spec, _ in parsed):
            raise ValueError("a placeholder inside a format spec")
    except ValueError as exc:
        raise PolicyError(
            f"templates: {which} is not a valid template: {exc}",
            hint="write `{{` and `}}` for literal braces",
            parameter=which,
        ) from None
    for field in fields:
        if field not in placeholders:
            shown = f"{{{field}}}" if field else "{}"
            raise PolicyError(
                f"templates: {which} names unknown placeholder `{shown}`",
                hint=f"placeholders: {listed}; write `{{{{` and `}}}}` for literal braces",
                parameter=which,
            )
