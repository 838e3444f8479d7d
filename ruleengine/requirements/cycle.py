"""``CycleGuard``: stops an agent from repeating the same call (SPEC §5).

Two calls are the same when they name the same tool with the same canonical arguments (JSON
with sorted keys). A *cycle* is a run of identical calls longer than ``max_strike_length``, or
more than ``max_total_occurrences`` identical calls among the last ``window_size`` steps. Once
the history ends in a cycle, the guard denies that tool for the next attempt, so the model
re-plans. The guard *yields*: if denying the tool would leave the step without a pass, the
reasoner drops its rule and notes it in the explanation instead of failing. Its default
priority is 1, the lowest.

``would_cycle(steps, tool, arguments)`` answers the same question for a call before it runs,
which is what the agent's gate asks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ruleengine import _validate
from ruleengine.errors import PolicyError
from ruleengine.requirements.base import Requirement
from ruleengine.requirements.monitor import Monitor
from ruleengine.rules import Item, Rule
from ruleengine.state import RunState, Status, Step

__all__ = ["CycleGuard", "CycleMonitor", "canonical_arguments"]


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """A canonical text of call arguments: equal arguments give equal texts."""
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return repr(sorted(arguments.items(), key=lambda kv: str(kv[0])))


class CycleMonitor(Monitor):
    """The guard's abstraction: the last tool, with *is it cycling* as an opaque check.

    Arguments are not part of the static abstraction, so whether the history ends in a cycle
    is an unknown boolean, like a custom check: the checker explores both answers.
    """

    checks = 1

    def __init__(self, key: Hashable | None = None) -> None:
        self._key = key

    def check_keys(self) -> tuple[Hashable, ...]:
        """The guard's class and thresholds: two guards alike detect cycles alike."""
        return (self._key,) if self._key is not None else super().check_keys()

    def initial(self) -> str | None:
        return None

    def advance(self, view: Hashable, tool: str, status: Status) -> str:
        return tool

    def view_of(self, state: RunState) -> str | None:
        """The last tool called (whatever its status), read without a replay."""
        return state.steps[-1].tool if state.steps else None

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> tuple[Item, ...]:
        if isinstance(view, str) and checks and checks[0]:
            return (_deny(view),)
        return ()


def _steps(steps: object, *, owner: str) -> tuple[Step, ...]:
    """``steps`` as a tuple of ``Step`` objects (a ``RunState``'s steps, or a list of them)."""
    found = _validate.sequence(steps, name="steps", owner=_validate.owner_of(owner))
    for step in found:
        if not isinstance(step, Step):
            raise PolicyError(f"{_validate.owner_of(owner)}: steps holds `{step!r}`, not a `Step`")
    return found


def _deny(tool: str) -> Rule:
    return Rule(
        tool,
        allowed=False,
        reason=f"`{tool}` was just called repeatedly with the same arguments: try something else",
    )


class CycleGuard(Requirement):
    """Deny a tool whose identical calls have started to cycle; yields instead of deadlocking."""

    yielding = True

    def __init__(
        self,
        *,
        max_strike_length: int = 1,
        max_total_occurrences: int = 5,
        window_size: int = 10,
        name: str | None = None,
        priority: int = 1,
        enabled: bool = True,
    ) -> None:
        super().__init__(
            name=name if name is not None else "cycle-guard", priority=priority, enabled=enabled
        )
        owner = _validate.owner_of(self.name)
        self.max_strike_length = _validate.integer(
            max_strike_length, name="max_strike_length", owner=owner, least=1
        )
        self.max_total_occurrences = _validate.integer(
            max_total_occurrences, name="max_total_occurrences", owner=owner, least=1
        )
        self.window_size = _validate.integer(window_size, name="window_size", owner=owner, least=1)
        self._monitor = CycleMonitor(
            key=(
                "cycle guard",
                type(self),
                self.max_strike_length,
                self.max_total_occurrences,
                self.window_size,
            )
        )
        self._declared: frozenset[str] | None = None

    def monitor(self) -> CycleMonitor:
        return self._monitor

    def bind(self, tools: Sequence[object]) -> CycleGuard:
        """A copy that knows the declared tools: a cycle of calls to a tool that is not
        declared (the gate refused them) is not the guard's to deny — there is no such tool
        to deny."""
        declared = frozenset(
            t if isinstance(t, str) else getattr(t, "name", "")
            for t in _validate.sequence(tools, name="tools", owner=_validate.owner_of(self.name))
        )
        if declared == self._declared:
            return self
        bound = copy.copy(self)  # subclasses and their settings kept; self is never changed
        bound._declared = declared
        return bound

    def detect(self, steps: Sequence[Step]) -> str | None:
        """The tool whose identical calls form a cycle at the end of ``steps``, if any."""
        steps = _steps(steps, owner=self.name)
        if not steps:
            return None
        last = steps[-1]
        key = (last.tool, canonical_arguments(last.arguments))
        strike = 0
        for step in reversed(steps):
            if (step.tool, canonical_arguments(step.arguments)) != key:
                break
            strike += 1
        if strike > self.max_strike_length:
            return last.tool
        window = steps[-self.window_size :]
        same = sum(1 for s in window if (s.tool, canonical_arguments(s.arguments)) == key)
        return last.tool if same > self.max_total_occurrences else None

    def would_cycle(self, steps: Sequence[Step], tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether calling ``tool`` with ``arguments`` next would make the history cycle."""
        owner = _validate.owner_of(self.name)
        _validate.text(tool, name="tool", owner=owner)
        if not isinstance(arguments, Mapping):
            raise PolicyError(f"{owner}: arguments=`{arguments!r}` must be a mapping")
        return self.detect((*steps, Step(tool=tool, arguments=dict(arguments)))) == tool

    def run(self, state: RunState) -> tuple[Item, ...]:
        view = self._monitor.view_of(state)
        if view is None or (self._declared is not None and view not in self._declared):
            return ()
        return self._monitor.emit(view, (self.detect(state.steps) is not None,))
