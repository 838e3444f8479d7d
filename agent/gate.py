"""The execution gate: whether one call the model asked for may run, now.

The gate answers for one call against the pass of the run state *at that moment*: the runner
gives it the pass of the state the call would be recorded after, whether the call is the
first of a reply, a later one of a parallel batch, a text answer turned into a
``final_answer`` call, or a retry. In order, a call is refused when:

1. its arguments are not a JSON object (the backend could not read them);
2. its tool is unknown, or hidden at this step (both read "there is no tool": a hidden tool
   is absent everywhere, refusals included);
3. the pass does not allow it (``final_answer``: stopping is not allowed yet);
4. its arguments fail the tool's input model, or the conditions the pass puts on them
   (``Pass.admits``: an ``allow_if`` that fails, a ``deny_if`` that holds, a value the run
   does not have; an ``ask_if`` that holds is asked about after the gate, by the
   requirement's permission listener, as ask-permission requirements are);
5. the repeat check (the cycle guard's) says it would repeat the same call once too often —
   unless the pass allows nothing else, in which case the check *yields*, as the cycle guard
   does, and the admission says so.

A refused call never runs and is not a step: the run state is unchanged, the model reads the
reason as the call's result and is asked again. An admitted call still goes through the
``tool.start`` listeners (permission) before it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agent.errors import ToolArgumentsError
from agent.tools import Tool
from backends import AnyToolCall, InvalidToolCall
from ruleengine import FINAL_ANSWER, CycleGuard, Pass, PolicyError, Rule, RunState, Step

__all__ = ["Admitted", "Gate", "Refused"]


@dataclass(frozen=True, slots=True)
class Admitted:
    """The call may run (pending the ``tool.start`` listeners)."""

    tool: Tool
    """The tool to run."""
    input: BaseModel
    """The validated arguments."""
    notes: tuple[str, ...] = ()
    """What the gate let pass and why (the repeat check yielded)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The call must not run."""

    reason: str
    """Why, in one line the model reads."""


class Gate:
    """Checks calls against a pass, the tools' input models and the cycle guard.

    Holds only configuration (the tools and the guard), so one gate serves every run of an
    agent at once.
    """

    def __init__(self, tools: Mapping[str, Tool], cycle_guard: CycleGuard | None) -> None:
        if not isinstance(tools, Mapping) or not all(
            isinstance(t, Tool) and t.name == name for name, t in tools.items()
        ):
            raise PolicyError("Gate: tools must map each tool's name to the `Tool`")
        if cycle_guard is not None and not isinstance(cycle_guard, CycleGuard):
            raise PolicyError(f"Gate: cycle_guard=`{cycle_guard!r:.60}` is not a `CycleGuard`")
        self.tools = dict(tools)
        """Every tool by name, ``final_answer`` included."""
        self.cycle_guard = cycle_guard
        """The guard asked about repeated calls, or ``None``."""

    def admit(self, call: AnyToolCall, pass_: Pass, state: RunState) -> Admitted | Refused:
        """Whether ``call`` may run under ``pass_`` after the steps of ``state``."""
        name = call.name
        if isinstance(call, InvalidToolCall):
            return Refused(f"`{name}` did not run: {call.error}")
        tool = self.tools.get(name)
        if tool is None or name in pass_.hidden:
            return Refused(f"there is no tool `{name}`: {self._listing(pass_)}")
        if name not in pass_.allowed:
            return Refused(self._not_allowed(name, pass_))
        try:
            validated = tool.validate(call.arguments)
        except ToolArgumentsError as exc:
            return Refused(f"`{name}` did not run: {exc.message}")
        admission = pass_.admits(name, validated.model_dump(mode="python"))
        if not admission.ok:
            return Refused(f"`{name}` did not run: {admission.reason}")
        if self._would_cycle(state.steps, name, call.arguments):
            if any(other != name for other in pass_.allowed):
                return Refused(self._cycle_reason(state, name, call.arguments))
            # Refusing would leave the model nothing it may do: the check yields, as the
            # cycle guard yields rather than deadlock a step.
            yielded = (
                f"the repeat check yielded: `{name}` repeats the same call, but nothing else"
                " may be called now",
            )
            return Admitted(tool, validated, yielded)
        return Admitted(tool, validated)

    def _listing(self, pass_: Pass) -> str:
        visible = [t for t in self.tools if t not in pass_.hidden]
        return "the tools are " + ", ".join(f"`{t}`" for t in visible)

    def _not_allowed(self, name: str, pass_: Pass) -> str:
        reason = pass_.reasons.get(name)
        if name == FINAL_ANSWER:
            text = "`final_answer` did not run: you cannot finish yet"
        else:
            text = f"`{name}` did not run: it is not allowed at this step"
        if reason:
            text += f" ({reason})"
        if pass_.forced is not None and pass_.forced != name:
            return f"{text}; call `{pass_.forced}` now"
        allowed = [t for t in pass_.allowed if t != name]
        if allowed:
            text += "; allowed now: " + ", ".join(f"`{t}`" for t in allowed)
        return text

    def _would_cycle(self, steps: Sequence[Step], name: str, arguments: Mapping[str, Any]) -> bool:
        guard = self.cycle_guard
        if guard is None or not guard.enabled or name == FINAL_ANSWER:
            return False
        return guard.would_cycle(steps, name, arguments)

    def _cycle_reason(self, state: RunState, name: str, arguments: Mapping[str, Any]) -> str:
        guard = self.cycle_guard
        # INVARIANT: only called when the guard said the call would cycle
        assert guard is not None
        # The guard's own words: what it would emit once the call is in the history.
        after = state.with_step(Step(tool=name, arguments=dict(arguments), status="denied"))
        for item in guard.run(after):
            if isinstance(item, Rule) and item.reason:
                return f"`{name}` did not run: {item.reason}"
        return f"`{name}` did not run: it would repeat the same call once too often"
