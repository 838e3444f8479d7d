"""What requirements read: the steps of a run so far (``Step``) and the ``RunState``.

Requirements never mutate a state; the agent loop builds a new one after every step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError

from ruleengine.errors import PolicyError

__all__ = ["RunState", "Status", "Step", "Summary", "TraceEntry"]

Status: TypeAlias = Literal["ok", "error", "denied"]
STATUSES: tuple[Status, ...] = ("ok", "error", "denied")

TraceEntry: TypeAlias = "str | tuple[str, str] | Step"


class Step(BaseModel):
    """One tool call attempt, as recorded in the run state."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    """The name of the tool the model called."""
    arguments: Mapping[str, Any] = {}
    """The arguments of the call (already validated against the tool's schema when ``ok``)."""
    output: Any = None
    """What the tool returned (``None`` unless ``ok``)."""
    status: Status = "ok"
    """``ok``: the tool ran; ``error``: it raised; ``denied``: the gate or a human refused it."""
    error: str | None = None
    """Why the call failed or was denied."""


@dataclass(frozen=True, slots=True)
class RunState:
    """A run as requirements see it: the steps so far, the iteration counter, the input."""

    steps: tuple[Step, ...] = ()
    """Every tool call attempt so far, oldest first."""
    iteration: int = 0
    """How many model rounds have happened."""
    input: str | None = None
    """The user's prompt."""
    memory: tuple[Any, ...] = field(default=(), compare=False)
    """The conversation so far, as the agent keeps it (opaque to the engine)."""
    _summaries: dict[bool, Summary] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def summary(self, *, only_success: bool = True) -> Summary:
        """Counts, last tool and first statuses of the counted steps (computed once per state).

        Built-in requirements read their view of the history from here, so a step's
        requirements share one pass over the steps instead of one pass each.
        """
        found = self._summaries.get(only_success)
        if found is None:
            found = Summary.of(self.steps, only_success=only_success)
            self._summaries[only_success] = found
        return found

    @classmethod
    def from_trace(cls, trace: Iterable[TraceEntry], /, **kwargs: Any) -> RunState:
        """Build a state from tool names (status ``ok``) or ``(name, status)`` pairs."""
        steps: list[Step] = []
        for position, entry in enumerate(trace, start=1):
            steps.append(_step_from_entry(entry, position))
        return cls(steps=tuple(steps), **kwargs)

    @property
    def step_number(self) -> int:
        """The number of the step about to be decided (1 for an empty run)."""
        return len(self.steps) + 1

    def counted(self, *, only_success: bool = True) -> tuple[Step, ...]:
        """The steps that count: only ``ok`` ones when ``only_success``, else all."""
        if not only_success:
            return self.steps
        return tuple(s for s in self.steps if s.status == "ok")

    def count(self, tool: str, *, only_success: bool = True) -> int:
        """How many counted steps called ``tool``."""
        return sum(1 for s in self.counted(only_success=only_success) if s.tool == tool)

    def called(self, tool: str, *, only_success: bool = True) -> bool:
        """Whether some counted step called ``tool`` (by default: ran it successfully)."""
        return any(s.tool == tool for s in self.counted(only_success=only_success))

    def last_tool(self, *, only_success: bool = True) -> str | None:
        """The tool of the last counted step, or ``None``."""
        counted = self.counted(only_success=only_success)
        return counted[-1].tool if counted else None

    def with_step(self, step: Step) -> RunState:
        """A new state with ``step`` appended (the state itself is never mutated)."""
        return RunState(
            steps=(*self.steps, step),
            iteration=self.iteration,
            input=self.input,
            memory=self.memory,
        )


@dataclass(frozen=True, slots=True)
class Summary:
    """What counting requirements read of a history, in one counting mode."""

    counts: Mapping[str, int]
    """Per tool, how many counted steps called it."""
    last: str | None
    """The tool of the last counted step."""
    length: int
    """How many steps count."""
    first_status: Mapping[str, Status]
    """Per tool, the status of its first step (over all steps, whatever the mode)."""

    @classmethod
    def of(cls, steps: tuple[Step, ...], *, only_success: bool) -> Summary:
        counted = (
            [s.tool for s in steps if s.status == "ok"] if only_success else [s.tool for s in steps]
        )
        first: dict[str, Status] = {}
        for s in steps:
            first.setdefault(s.tool, s.status)
        return cls(
            counts=Counter(counted),
            last=counted[-1] if counted else None,
            length=len(counted),
            first_status=first,
        )


def _step_from_entry(entry: object, position: int) -> Step:
    if isinstance(entry, Step):
        return entry
    if isinstance(entry, str):
        return Step(tool=entry)
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
        name, status = entry
        if status not in STATUSES:
            raise PolicyError(
                f"trace entry {position}: status `{status}` of `{name}` is not one of "
                "`ok`, `error`, `denied`"
            )
        return Step(tool=name, status=status)
    if isinstance(entry, Mapping):
        try:
            return Step.model_validate(entry)
        except ValidationError as exc:
            raise PolicyError(
                f"trace entry {position}: not a step: {exc.errors()[0]['msg']}"
            ) from None
    raise PolicyError(
        f"trace entry {position}: `{entry!r}` is neither a tool name nor a `(name, status)` pair"
    )
