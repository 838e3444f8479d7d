"""How the enforcing proxy asks its client's user about a call: an MCP form elicitation with one
yes/no field, and what a refusal, a dismissal, a failure or no answer in time leaves."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from mcp import types

from ruleengine.conditions.admission import admit
from ruleengine.mcp.connection import describe_exception
from ruleengine.mcp.sessions import Context, Session
from ruleengine.passes import Pass
from ruleengine.requirements import ArgumentsRequirement
from ruleengine.state import Step

__all__ = ["asking_conditions", "can_elicit", "cannot_ask", "denied", "elicit"]

_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Let the tool run with these arguments",
            "default": True,
        }
    },
}
"""The form of a permission question: accepting it with ``approve`` true (or left out) allows
the call."""


def asking_conditions(
    pass_: Pass,
    name: str,
    arguments: Mapping[str, Any],
    asking: Sequence[str],
    requirements: Mapping[str, ArgumentsRequirement],
) -> str:
    """The ``ask_if`` conditions that hold for this call, each as written and with its
    requirement (``asking``, from ``Admission.ask``; ``requirements``: the arguments
    requirements by name), as ``Violation`` says a condition: ``ask_if `…` of `r` holds``. A
    requirement whose conditions are not known (a custom one emitting checks) is named
    alone."""
    checks = [c for c in pass_.argument_checks(name) if c.kind == "ask_if"]
    parts: list[str] = []
    for r in asking:
        requirement = requirements.get(r)
        written = (
            {c for kind, c in requirement.conditions if kind == "ask_if"}
            if requirement is not None
            else ()
        )
        # A check is the requirement's when it has its text; it holds when `admit` asks.
        found = dict.fromkeys(
            c.condition for c in checks if c.condition in written and admit([(r, c)], arguments)[1]
        )
        parts.extend(f"ask_if `{c}` of `{r}` holds" for c in found)
        if not found:
            parts.append(f"`{r}` asks")
    return "; ".join(parts)


def cannot_ask(name: str, when: str) -> str:
    """Why a call the policy asks about did not run, for a client that cannot be asked."""
    return (
        f"`{name}` did not run: the policy asks the user before `{name}` {when}, and this"
        " client cannot be asked (it did not declare the MCP elicitation capability)"
    )


def denied(session: Session, name: str, arguments: Mapping[str, Any], reason: str) -> str:
    """Record a call the user did not allow as a ``denied`` step, and say why it did not
    run."""
    text = f"`{name}` did not run: {reason}"
    session.record(Step(tool=name, arguments=dict(arguments), status="denied", error=text))
    return text


def can_elicit(ctx: Context) -> bool:
    """Whether the client declared form elicitation (an empty ``elicitation`` means form)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


async def elicit(
    question: str,
    name: str,
    arguments: Mapping[str, Any],
    timeout: float | None,
    ctx: Context,
) -> str | None:
    """Ask the client ``question`` about a call of ``name`` (its ``arguments`` shown below
    it), with ``timeout`` seconds to answer (``None``: no limit): ``None`` if approved, else
    why not (fails closed: an error, a dismissal or no answer in time is a refusal)."""
    shown = json.dumps(dict(arguments), ensure_ascii=False, default=str)
    message = f"{question}\nArguments: {shown}"
    answer: types.ElicitResult | None = None
    try:
        with anyio.move_on_after(timeout) as scope:
            answer = await ctx.session.elicit_form(
                message, _APPROVAL_SCHEMA, related_request_id=ctx.request_id
            )
    except Exception as error:
        return f"asking about `{name}` failed ({describe_exception(error)}), so it was refused"
    if scope.cancelled_caught or answer is None:
        # INVARIANT: only a deadline cancels this scope, so there is one
        assert timeout is not None
        return f"no answer about `{name}` within {timeout:g} s, so it was refused"
    if answer.action == "accept":
        approve = (answer.content or {}).get("approve", True)
        return None if approve is True else f"the user refused `{name}`"
    if answer.action == "cancel":
        return f"the user dismissed the question about `{name}`, so it was refused"
    return f"the user refused `{name}`"
