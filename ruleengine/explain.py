"""Explanations: which emitted items decided each tool of a pass, computed on demand.

``Pass.explanation`` is a closure built here; most passes are never explained, so the work of
rendering items and grouping them per tool happens only when someone reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Literal

from ruleengine.ir import TRUE
from ruleengine.passes import CoreEntry, Explanation, Mode, Pass, ToolDecision
from ruleengine.rules import Emitted, lower

__all__ = ["canonical", "core_entry", "explainer", "with_yielded"]


def core_entry(e: Emitted) -> CoreEntry:
    return CoreEntry.model_construct(
        requirement=e.requirement, priority=e.priority, rule=repr(e.item), item=e.item
    )


def canonical(e: Emitted) -> tuple[int, str, str]:
    return (-e.priority, e.requirement, repr(e.item))


def explainer(
    mode: Mode,
    tools: tuple[str, ...],
    emitted: Sequence[Emitted],
    overridden: Sequence[tuple[Emitted, str]],
    pre_allowed: tuple[str, ...],
    result: Pass,
    notes: Callable[[], Sequence[str]],
) -> Callable[[], Explanation]:
    """The explanation, computed when first asked for (most passes are never explained).

    ``overridden`` pairs each overridden unit's record with the part it was ("restricting",
    "permitting", or "" for items with one part); ``pre_allowed`` is ``allowed`` before the
    forced projection; ``notes`` computes the notes about forces.
    """
    emitted = tuple(emitted)

    def explain() -> Explanation:
        over_parts: dict[Emitted, list[str]] = {}
        for e, part in sorted(overridden, key=lambda ep: (canonical(ep[0]), ep[1])):
            over_parts.setdefault(e, []).append(part)
        ordered = sorted(dict.fromkeys(emitted), key=canonical)
        kept = [e for e in ordered if e not in over_parts or _has_kept_part(e, over_parts[e])]
        over_entries = {
            e: tuple(_overridden_entry(e, part) for part in parts)
            for e, parts in over_parts.items()
        }
        decisions = {}
        for t in tools:
            status: Literal["forced", "allowed", "excluded", "denied", "hidden"]
            if t == result.forced:
                status = "forced"
            elif t in result.allowed:
                status = "allowed"
            elif t in pre_allowed:
                status = "excluded"
            elif t in result.hidden:
                status = "hidden"
            else:
                status = "denied"
            decided_by = tuple(core_entry(e) for e in kept if t in _mentions(e))
            over = tuple(x for e, xs in over_entries.items() if t in _mentions(e) for x in xs)
            decisions[t] = ToolDecision(status=status, decided_by=decided_by, overridden=over)
        return Explanation(
            mode=mode,
            tools=MappingProxyType(decisions),
            overridden=tuple(x for xs in over_entries.values() for x in xs),
            notes=tuple(notes()),
        )

    return explain


def _has_kept_part(e: Emitted, overridden_parts: list[str]) -> bool:
    lowered = lower(e.item)
    parts = int(lowered.restrict != TRUE or lowered.hard_force is not None)
    parts += int(lowered.permit is not None)
    return len(overridden_parts) < parts


def _overridden_entry(e: Emitted, part: str) -> CoreEntry:
    entry = core_entry(e)
    if not part:
        return entry
    return entry.model_copy(update={"rule": f"{entry.rule} ({part} part)"})


def with_yielded(
    explain: Callable[[], Explanation], yielded: Sequence[Emitted]
) -> Callable[[], Explanation]:
    names = sorted({e.requirement for e in yielded})

    def explain_with_yielded() -> Explanation:
        base = explain()
        note = (
            f"{', '.join(f'`{n}`' for n in names)} yielded: its rules would have left "
            "the step without a pass"
        )
        return base.model_copy(
            update={
                "yielded": tuple(core_entry(e) for e in sorted(yielded, key=canonical)),
                "notes": (*base.notes, note),
            }
        )

    return explain_with_yielded


def _mentions(e: Emitted) -> frozenset[str]:
    return lower(e.item).mentions
