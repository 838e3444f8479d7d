"""What requirements read: the steps of a run so far (``Step``) and the ``RunState``.

Requirements never mutate a state; the agent loop builds a new one after every step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, ValidationError

from ruleengine import _validate
from ruleengine.errors import PolicyError

__all__ = ["RunState", "Status", "Step", "Summary", "TraceEntry"]

Status: TypeAlias = Literal["ok", "error", "denied"]
STATUSES: tuple[Status, ...] = ("ok", "error", "denied")

TraceEntry: TypeAlias = "str | tuple[str, str] | Step | Mapping[str, Any]"


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

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise PolicyError(f"not a valid step: {_first_problem(exc)}") from None
        if not self.tool:
            raise PolicyError("not a valid step: `tool` must not be empty")


def _first_problem(exc: ValidationError) -> str:
    """The first problem pydantic found, as ``key: message`` without pydantic's wording."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "step"
    return f"`{where}`: {error.get('msg', 'invalid').lower()}"


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

    def __post_init__(self) -> None:
        # States are built by callers (agents, tests, the checker): check what they pass, so
        # a malformed state is reported here and not blamed on the first requirement to read
        # it. Cheap: one C-level type test per step.
        steps = self.steps
        if type(steps) is not tuple:
            if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Iterable):
                raise PolicyError(
                    f"run state: steps=`{steps!r}` must be a list of `Step` objects",
                    hint="build states from traces with `RunState.from_trace([...])`",
                )
            steps = tuple(steps)
            object.__setattr__(self, "steps", steps)
        if not all(type(s) is Step for s in steps):
            position, bad = next((i, s) for i, s in enumerate(steps) if not isinstance(s, Step))
            raise PolicyError(
                f"run state: steps[{position}]=`{bad!r}` is not a `Step`",
                hint="build states from traces with `RunState.from_trace([...])`, or pass "
                "`Step(tool=..., status=...)` objects",
            )
        _validate.integer(self.iteration, name="iteration", owner="run state")
        if self.input is not None:
            _validate.text(self.input, name="input", owner="run state", empty=True)
        if type(self.memory) is not tuple:
            object.__setattr__(
                self, "memory", _validate.sequence(self.memory, name="memory", owner="run state")
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
        """Build a state from tool names (status ``ok``) or ``(name, status)`` pairs.

        ``kwargs`` go to the constructor (``iteration``, ``input``, ``memory``).
        """
        if isinstance(trace, str):
            raise PolicyError(
                f"trace=`{trace!r}` is one string, not a list of steps",
                hint=f"pass a list: `RunState.from_trace([{trace!r}])`",
            )
        entries = _validate.sequence(trace, name="trace")
        steps = tuple(
            _step_from_entry(entry, position) for position, entry in enumerate(entries, 1)
        )
        unknown = sorted(set(kwargs) - {"iteration", "input", "memory"})
        if unknown:
            raise PolicyError(
                f"RunState.from_trace: unknown argument `{unknown[0]}`",
                hint="it takes the trace, then `iteration`, `input` and `memory` by name",
            )
        return cls(steps=steps, **kwargs)

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
        return self.summary(only_success=only_success).counts.get(_tool_arg(tool), 0)

    def called(self, tool: str, *, only_success: bool = True) -> bool:
        """Whether some counted step called ``tool`` (by default: ran it successfully)."""
        return _tool_arg(tool) in self.summary(only_success=only_success).counts

    def last_tool(self, *, only_success: bool = True) -> str | None:
        """The tool of the last counted step, or ``None``."""
        return self.summary(only_success=only_success).last

    def with_step(self, step: Step) -> RunState:
        """A new state with ``step`` appended (the state itself is never mutated). The
        summaries this state has computed are carried one step on, not recomputed: a trace
        replayed step by step costs a summary per step, not one per step and prefix."""
        if type(step) is not Step:
            raise PolicyError(f"with_step: `{step!r}` is not a `Step`")
        after = RunState.__new__(RunState)
        # This state's fields are checked already, and so is `step`: no second check of
        # every step (which made replaying a long trace quadratic in Python code).
        object.__setattr__(after, "steps", (*self.steps, step))
        object.__setattr__(after, "iteration", self.iteration)
        object.__setattr__(after, "input", self.input)
        object.__setattr__(after, "memory", self.memory)
        object.__setattr__(
            after,
            "_summaries",
            {mode: found.then(step, only_success=mode) for mode, found in self._summaries.items()},
        )
        return after


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

    def then(self, step: Step, *, only_success: bool) -> Summary:
        """The summary of the same steps and ``step`` after them (``of`` of the longer
        history, in time proportional to the tools, not the steps)."""
        first = self.first_status
        if step.tool not in first:
            first = {**first, step.tool: step.status}
        if only_success and step.status != "ok":
            return Summary(self.counts, self.last, self.length, first)
        counts = Counter(self.counts)
        counts[step.tool] += 1
        return Summary(counts, step.tool, self.length + 1, first)

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


def _tool_arg(tool: object) -> str:
    if type(tool) is not str:
        raise PolicyError(
            f"`{tool!r}` is not a tool name", hint="ask about tools by name, e.g. `'search'`"
        )
    return tool


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
            return Step(**{str(k): v for k, v in entry.items()})
        except PolicyError as exc:
            raise PolicyError(f"trace entry {position}: {exc.message}") from None
    raise PolicyError(
        f"trace entry {position}: `{entry!r}` is neither a tool name nor a `(name, status)` pair"
    )
