"""Text rescue: a reply without tool calls, turned into a ``final_answer`` call or a retry.

Weak models often answer in plain text instead of calling ``final_answer``. When the pass
allows stopping, the text becomes the arguments of a ``final_answer`` call: ``{"response":
text}`` for a text answer (or the reply itself when it is exactly such a JSON object), the
reply's first ``{…}`` JSON object, validated, for a typed one. The call then goes through the
gate like any other. When the pass does not allow stopping, or the text cannot be the answer,
the model is told why and asked again; nothing is ever dropped to let a reply through (the
rescue never fails open).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.errors import ToolArgumentsError
from agent.tools import FinalAnswerTool
from backends import ArgumentsError, ChatResponse, parse_json_object
from ruleengine import FINAL_ANSWER, Pass

__all__ = ["Rescued", "Retry", "call_a_tool", "rescue"]


@dataclass(frozen=True, slots=True)
class Rescued:
    """The reply becomes a ``final_answer`` call with these arguments."""

    arguments: dict[str, Any]
    """The arguments of the ``final_answer`` call."""


@dataclass(frozen=True, slots=True)
class Retry:
    """The reply cannot be used: the model is asked again."""

    reason: str
    """Why, in one line (``retry`` events carry it)."""
    instruction: str
    """What the model is told."""


def rescue(
    response: ChatResponse, pass_: Pass, final: FinalAnswerTool, *, as_tool: bool = True
) -> Rescued | Retry:
    """What to do with a reply that called no tool.

    ``as_tool``: whether the model was offered ``final_answer`` as a tool (else a text reply
    is how it answers, and the instructions say so).
    """
    text = (response.text or response.refusal or "").strip()
    if response.finish_reason == "length" and not response.tool_calls:
        return Retry(
            "the reply was cut off",
            "Your reply was cut off before it ended. Reply again, more briefly.",
        )
    if not text:
        return Retry("the reply was empty", call_a_tool(pass_, "Your reply was empty."))
    if not pass_.can_stop:
        why = pass_.reasons.get(FINAL_ANSWER)
        cannot = "you cannot finish yet" + (f" ({why})" if why else "")
        return Retry(
            f"a text reply, but {cannot}",
            call_a_tool(pass_, f"Your reply was not used: {cannot}."),
        )
    if final.expected_output is None:
        return _as_text_answer(text, final)
    return _as_typed_answer(text, final, as_tool=as_tool)


def _as_text_answer(text: str, final: FinalAnswerTool) -> Rescued:
    if text.startswith("{") and text.endswith("}"):
        try:
            value, _ = parse_json_object(text)
            final.validate(value)
            return Rescued(value)
        except (ArgumentsError, ToolArgumentsError):
            pass
    return Rescued({"response": text})


def _as_typed_answer(text: str, final: FinalAnswerTool, *, as_tool: bool) -> Rescued | Retry:
    again = (
        "Call `final_answer` with the answer as its arguments."
        if as_tool
        else "Reply with the answer as one JSON object matching its schema, and nothing else."
    )
    try:
        value, _ = parse_json_object(text)
    except ArgumentsError as exc:
        return Retry(
            "the answer is not a JSON object",
            f"Your answer could not be read ({exc.message}). {again}",
        )
    try:
        final.validate(value)
    except ToolArgumentsError as exc:
        return Retry(
            "the answer does not match the expected output",
            f"Your answer could not be used ({exc.message}). {again}",
        )
    return Rescued(value)


def call_a_tool(pass_: Pass, opening: str) -> str:
    """``opening``, then what the model should call under ``pass_``."""
    if pass_.forced is not None:
        return f"{opening} Call `{pass_.forced}` now."
    tools = [t for t in pass_.allowed if t != FINAL_ANSWER]
    listed = ", ".join(f"`{t}`" for t in tools)
    if not tools:
        return f"{opening} Give your final answer."
    if len(tools) == 1:
        finish = ", or `final_answer` to finish" if pass_.can_stop else ""
        return f"{opening} Call {listed}{finish}."
    if pass_.can_stop:
        return f"{opening} Call one of the tools ({listed}), or `final_answer` to finish."
    return f"{opening} Call one of the tools: {listed}."
