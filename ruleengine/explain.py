"""Explanations: which emitted items decided each tool of a pass, computed on demand.

``Pass.explanation`` calls an ``Explainer`` built here; most passes are never explained, so
the work of rendering items and grouping them per tool happens only when someone reads it.
It costs one lowering and one rendering per emitted record, then one pass over the records'
mentioned tools: linear in the size of the step, not in tools × records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ruleengine.ir import TRUE

if TYPE_CHECKING:
    from ruleengine._resolve import Tie
from ruleengine.passes import CoreEntry, Explanation, ForcedTie, Mode, ToolDecision
from ruleengine.rules import Emitted, Lowered, lower

__all__ = ["Explainer", "canonical", "core_entry", "explained", "tie_model"]

Status = Literal["forced", "allowed", "excluded", "denied", "hidden"]


def core_entry(e: Emitted, part: str = "") -> CoreEntry:
    """How cores and explanations cite a record (``part``: which part of it, if not all)."""
    rule = repr(e.item) if not part else f"{e.item!r} ({part} part)"
    return CoreEntry.model_construct(
        requirement=e.requirement, priority=e.priority, rule=rule, item=e.item
    )


def canonical(e: Emitted) -> tuple[int, str, str]:
    """The canonical order of records: highest priority first, then requirement, rendering."""
    return (-e.priority, e.requirement, repr(e.item))


@dataclass(frozen=True, slots=True)
class Explainer:
    """Everything an explanation needs, kept until (and unless) the explanation is read."""

    mode: Mode
    tools: tuple[str, ...]
    emitted: tuple[Emitted, ...]
    overridden: tuple[tuple[Emitted, str], ...]
    """Each overridden unit's record with its part ("restricting", "permitting", or "")."""
    pre_allowed: tuple[str, ...]
    """``allowed`` before the forced projection."""
    allowed: tuple[str, ...]
    hidden: tuple[str, ...]
    forced: str | None
    notes: Callable[[], Sequence[str]]
    """The notes about soft forces (dropped ones, a tie), computed when read."""
    tie: Callable[[], Tie | None]
    """The soft-force tie (priority, tools, forcing records), computed when read."""
    yielded: tuple[Emitted, ...] = ()
    """Items of yielding requirements dropped to avoid a clash."""

    def __call__(self) -> Explanation:
        over_parts: dict[Emitted, list[str]] = {}
        for e, part in sorted(self.overridden, key=lambda ep: (canonical(ep[0]), ep[1])):
            over_parts.setdefault(e, []).append(part)
        ordered = sorted(dict.fromkeys(self.emitted), key=canonical)
        lowered = {e: lower(e.item) for e in ordered}
        decided_by: dict[str, list[CoreEntry]] = {t: [] for t in self.tools}
        over_by: dict[str, list[CoreEntry]] = {t: [] for t in self.tools}
        every_over: list[CoreEntry] = []
        for e in ordered:
            mentions = lowered[e].mentions
            parts = over_parts.get(e)
            if parts is None or len(parts) < _parts(lowered[e]):
                entry = core_entry(e)
                for t in mentions:
                    decided_by[t].append(entry)
            for part in parts or ():
                entry = core_entry(e, part)
                every_over.append(entry)
                for t in mentions:
                    over_by[t].append(entry)
        decisions = {
            t: ToolDecision(
                status=self._status(t),
                decided_by=tuple(decided_by[t]),
                overridden=tuple(over_by[t]),
            )
            for t in self.tools
        }
        notes = list(self.notes())
        yielded: tuple[CoreEntry, ...] = ()
        if self.yielded:
            names = sorted({e.requirement for e in self.yielded})
            notes.append(
                f"{', '.join(f'`{n}`' for n in names)} yielded: its rules would have left "
                "the step without a pass"
            )
            yielded = tuple(core_entry(e) for e in sorted(self.yielded, key=canonical))
        return Explanation(
            mode=self.mode,
            tools=MappingProxyType(decisions),
            overridden=tuple(every_over),
            notes=tuple(notes),
            yielded=yielded,
            forced_tie=self._tie(),
        )

    def _status(self, t: str) -> Status:
        if t == self.forced:
            return "forced"
        if t in self.allowed:
            return "allowed"
        if t in self.pre_allowed:
            return "excluded"
        if t in self.hidden:
            return "hidden"
        return "denied"

    def _tie(self) -> ForcedTie | None:
        return tie_model(self.tie())


def explained(args: tuple[Any, ...]) -> Explanation:
    """``Explainer(*args)()``: a pass keeps ``partial(explained, args)`` and calls it when its
    explanation is first read (building the ``Explainer`` costs more than that partial)."""
    return Explainer(*args)()


def tie_model(found: Tie | None) -> ForcedTie | None:
    """The public ``ForcedTie`` of a tie found by the aggregator."""
    if found is None:
        return None
    priority, tools, rules = found
    return ForcedTie(
        priority=priority,
        tools=tools,
        rules=tuple(core_entry(e) for e in sorted(set(rules), key=canonical)),
    )


def _parts(lowered: Lowered) -> int:
    """How many units an item has (its restricting part and its permitting part)."""
    restricts = lowered.restrict != TRUE or lowered.hard_force is not None
    return int(restricts) + int(lowered.permit is not None)


def no_notes() -> list[str]:
    return []


def no_tie() -> None:
    return None
