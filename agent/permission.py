"""Asking for permission: ``AskPermissionRequirement`` at the gate (SPEC §5).

The requirement (in ruleengine) says which tools are covered, holds the handler and its
options, and turns the answers a run remembers into rules. The asking happens here, in a
blocking listener on the tool's ``tool.start`` event: the call has passed the gate, and the
listener asks the handler before the tool runs. A refusal, a handler that raises, one that
answers something other than ``True``/``False``, and one that does not answer within the
requirement's ``timeout`` are all denials (fail closed): the call becomes a ``denied`` step.
``final_answer`` is never asked about. Cancelling the run cancels the question (anyio).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread

from agent.events import Deny, ToolStartEvent
from ruleengine import ArgumentsRequirement, AskPermissionRequirement, PolicyError, RunState
from ruleengine.requirements.permission import PermissionHandler

__all__ = ["PermissionListener", "ask", "check_permission", "terminal_handler"]


def terminal_handler(tool: str, arguments: Mapping[str, Any]) -> bool:
    """The default handler: ask on the terminal; anything but `y`/`yes` is a refusal."""
    try:
        answer = input(f"Allow `{tool}` with {dict(arguments)!r}? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def check_permission(
    requirement: AskPermissionRequirement,
    tool: str,
    arguments: Mapping[str, Any],
    state: RunState,
) -> Deny | None:
    """``None`` when the call may run (not covered, always allowed, remembered or approved),
    else ``Deny`` with the reason the model is told."""
    if not requirement.enabled or not requirement.covers(tool) or requirement.always_allow:
        return None
    remembered = requirement.remembered(tool, state)
    if remembered is not None:
        return None if remembered else Deny(f"the user refused `{tool}`")
    return await _asked(
        requirement.handler or terminal_handler, requirement.timeout, tool, arguments
    )


async def check_arguments_permission(
    requirement: ArgumentsRequirement, event: ToolStartEvent
) -> Deny | None:
    """``None`` when the call may run without asking (no ``ask_if`` of ``requirement`` holds
    for its arguments) or the handler approved it, else ``Deny``."""
    if not requirement.enabled:
        return None
    if requirement.name not in event.pass_.admits(event.tool, event.arguments).ask:
        return None
    handler = requirement.handler or terminal_handler
    return await _asked(handler, requirement.timeout, event.tool, event.arguments)


async def _asked(
    handler: PermissionHandler, timeout: float | None, tool: str, arguments: Mapping[str, Any]
) -> Deny | None:
    """The handler's answer about one call: ``None`` to run it, else ``Deny`` (fail closed:
    a refusal, a handler that raises, times out, or answers something other than a bool)."""
    answer: object = None
    try:
        # `move_on_after`, not `fail_after`: a `TimeoutError` the handler raises itself is a
        # failure of the handler, not our deadline (which may be `None`: no deadline).
        with anyio.move_on_after(timeout) as scope:
            answer = await _call_handler(handler, tool, arguments)
    except Exception as exc:
        text = " ".join(str(exc).split())
        failed = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        return Deny(f"asking about `{tool}` failed ({failed}), so it was refused")
    if scope.cancelled_caught:
        # INVARIANT: only a deadline cancels this scope, so there is one
        assert timeout is not None
        return Deny(f"no answer about `{tool}` within {timeout:g} s, so it was refused")
    if answer is True:
        return None
    if answer is False:
        return Deny(f"the user refused `{tool}`")
    return Deny(
        f"the permission handler answered `{answer!r:.40}` about `{tool}`, so it was refused"
    )


async def ask(
    requirement: AskPermissionRequirement,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    state: RunState | None = None,
) -> bool:
    """Whether this call may run: remembered, always allowed, or the handler's answer.

    Fails closed: a handler that raises, times out, or answers something other than a bool
    is a refusal.
    """
    if not isinstance(requirement, AskPermissionRequirement):
        raise PolicyError(f"ask: `{requirement!r}` is not an `AskPermissionRequirement`")
    if not isinstance(tool, str) or not tool:
        raise PolicyError(f"ask: tool=`{tool!r}` must be a tool name")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise PolicyError(f"ask: arguments=`{arguments!r}` must be a mapping")
    if state is not None and not isinstance(state, RunState):
        raise PolicyError(f"ask: state=`{state!r}` is not a `RunState`")
    denied = await check_permission(requirement, tool, arguments or {}, state or RunState())
    return denied is None


async def _call_handler(
    handler: PermissionHandler, tool: str, arguments: Mapping[str, Any]
) -> object:
    if inspect.iscoroutinefunction(handler):
        return await handler(tool, arguments)
    # Sync handlers (a terminal prompt, a blocking call) run in a worker thread, so the event
    # loop keeps going and `timeout` can abandon them.
    answer = await anyio.to_thread.run_sync(handler, tool, arguments, abandon_on_cancel=True)
    if inspect.isawaitable(answer):
        return await answer
    return answer


class PermissionListener:
    """The blocking ``tool.start`` listener of one ``AskPermissionRequirement``, or of one
    ``ArgumentsRequirement`` with ``ask_if`` conditions (it asks when one holds for the call's
    arguments).

    Holds only the requirement: what a run remembers is read from the event's state.
    """

    def __init__(self, requirement: AskPermissionRequirement | ArgumentsRequirement) -> None:
        if not isinstance(requirement, AskPermissionRequirement | ArgumentsRequirement):
            raise PolicyError(
                f"`{requirement!r}` is not an `AskPermissionRequirement` nor an "
                "`ArgumentsRequirement`"
            )
        self.requirement = requirement
        """The requirement whose covered tools this listener asks about."""

    async def __call__(self, event: ToolStartEvent) -> Deny | None:
        if isinstance(self.requirement, ArgumentsRequirement):
            return await check_arguments_permission(self.requirement, event)
        return await check_permission(self.requirement, event.tool, event.arguments, event.state)

    def __repr__(self) -> str:
        return f"PermissionListener({self.requirement.name!r})"
