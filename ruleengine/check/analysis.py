"""What an engine answers about a system: witnesses and verdicts, before they become findings.

Both engines (``explicit`` and ``symbolic``) fill an ``Analysis``; ``properties`` turns it into
``Finding`` objects, computing cores with the runtime's reasoner. A *witness* is a shortest
trace (the lexicographically smallest one, tools in declared order and statuses ``ok`` <
``error`` < ``denied``) and the records the last state emits under the first check values
that show the finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ruleengine.check.system import Event
from ruleengine.rules import Emitted

__all__ = ["Analysis", "Witness", "listed", "named", "settled"]


@dataclass(frozen=True, slots=True)
class Witness:
    """A shortest history reaching a finding, and what its last state emits."""

    trace: tuple[Event, ...]
    records: tuple[Emitted, ...] = ()
    depends_on_checks: bool = False
    """Whether the history, or the finding at its end, needs particular check values."""
    steps: int | None = None
    """How many calls the history stands for, where a step may stand for several (a band of
    a counter, ``check/skipping.py``); None: one call per step."""

    @property
    def calls(self) -> int:
        """How many calls the history stands for."""
        return len(self.trace) if self.steps is None else self.steps


@dataclass(slots=True)
class Analysis:
    """An engine's verdicts on one system."""

    states: int = 0
    """How many states the engine explored (explicit) or found reachable (symbolic)."""
    complete: bool = True
    reason: str | None = None
    """Why the analysis is incomplete."""
    depth_done: int = -1
    """Every state within this many steps was decided (``budget`` is exact up to it)."""
    deadlock: Witness | None = None
    forced_conflicts: dict[str, Witness] = field(default_factory=dict)
    """Per hard-forced tool that cannot be honoured somewhere, its first witness."""
    tie: Witness | None = None
    no_finish: Witness | None = None
    """A shortest trace to a state from which ``final_answer`` is never reached."""
    finish_depth: int | None = None
    """The fewest steps after which ``final_answer`` is allowed (None: never, or unknown)."""
    finish_after: int = -1
    """A number of steps within which ``final_answer`` is known never to be allowed (a
    lower bound, where the exact ``finish_depth`` is unknown; -1: none known)."""
    finishes_within: int | None = None
    """A number of steps within which ``final_answer`` is known to be allowed (an engine
    that found a short enough path need not compute ``finish_depth``)."""
    finish_shown: int | None = None
    """The steps of the shortest history to a state that may stop that an analysis which
    does not know ``finish_depth`` found (an upper bound on it, for the budget's message);
    None: none found, or not looked for."""
    allowed_tools: set[str] = field(default_factory=set)
    """Every tool some reachable pass allows."""
    live: set[str] = field(default_factory=set)
    """Every requirement that changes some reachable pass (or asks about an allowed tool)."""
    depends_on_checks: bool = False
    """Whether some component has opaque checks (requirement-level findings may need them)."""
    partial: bool = False
    """The analysis stopped once its focused question was answered (a requirement found
    live, a tool found allowed, or either shown never so): the other verdicts were not
    computed."""
    example: tuple[Event, ...] | None = None
    """For a focused question whose "never" it refuted (the tool allowed, the requirement
    live, ``final_answer`` allowed within the budget): a history showing it, when the engine
    had one at hand. Core searches replay it on other subsystems before analysing them."""
    decided: set[str] | None = None
    """For an analysis that decides its verdicts one by one (``compositional``), those it
    decided, even if it is incomplete: ``deadlock``, ``forced-conflict:T``, ``forced-tie``,
    ``budget``, ``no-finish``, ``tool:T``, ``live:R``. None (the engines): every verdict
    is decided when the analysis is complete, none otherwise."""
    undecided: tuple[str, ...] = ()
    """For such an analysis, incomplete, the verdicts it did not decide (the same keys)."""
    firsts: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    """The explicit engine's shortest histories to the first state found where each tool
    is allowed (``"tool:T"``), each requirement live (``"live:R"``, when liveness was
    computed), and the run may stop (``"finish"``): counterexamples for core searches."""


def settled(analysis: Analysis, key: str) -> bool:
    """Whether ``analysis`` decided the verdict ``key`` (see ``Analysis.decided``)."""
    return analysis.complete or (analysis.decided is not None and key in analysis.decided)


def named(key: str) -> str:
    """A verdict's key (``Analysis.decided``) as the finding it is about: ``dead-tool:T``,
    ``dead-requirement:R``, ``forced-conflict:T``, or the finding's id."""
    if key.startswith("tool:"):
        return f"dead-tool:{key[5:]}"
    if key.startswith("live:"):
        return f"dead-requirement:{key[5:]}"
    return key


def listed(keys: Sequence[str], most: int = 4) -> str:
    """The first ``most`` of ``keys`` as findings (``named``), and how many more."""
    shown = ", ".join(f"`{named(k)}`" for k in keys[:most])
    return shown if len(keys) <= most else f"{shown} and {len(keys) - most} more"
