"""The yardstick of table 1: a plain-Python deny-wins aggregator, no solver.

It has the behaviour of the original design's per-step loop (group the rules by tool, fold
their flags, pick the forced tool), written lean: no per-rule objects, no logging. The
benchmark times it on the same emitted sets as the engine;
``tests/unit/test_benchmark_agreement.py`` checks that both compute the same pass on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ruleengine import FINAL_ANSWER, Rule

__all__ = ["ReferenceConflict", "ReferencePass", "reference_aggregate"]


class ReferenceConflict(Exception):
    """The reference aggregator's answer when no tool is left allowed."""


@dataclass(frozen=True, slots=True)
class ReferencePass:
    """What the reference aggregator decides for one step (the fields of ``Pass``)."""

    allowed: tuple[str, ...]
    hidden: tuple[str, ...]
    forced: str | None
    can_stop: bool
    tool_choice: str
    reasons: dict[str, str]


def reference_aggregate(
    emitted: Iterable[tuple[Any, str, int]],
    tools: Sequence[str],
    *,
    final_answer_as_tool: bool = True,
) -> ReferencePass:
    """Deny-wins aggregation of plain rules, one loop per tool, no solver.

    ``emitted`` holds ``(Rule, requirement name, priority)`` triples (``Emitted`` is one);
    ``tools`` is the declared order with ``final_answer`` last. Per tool, its rules are visited
    by priority, highest first: any deny denies; any hide hides and denies; a forcing rule makes
    the tool a force candidate at that rule's priority; any ``prevent_stop`` forbids stopping;
    the reason kept is the last one seen. The allowed candidate with the highest forcing
    priority is forced (ties: the first in declared order). Where the original kept
    ``can_stop`` true with ``final_answer`` denied, or forced a denied tool, this follows
    SPEC §4 so that both sides compute the same thing. Raises ``ReferenceConflict`` when no
    tool is allowed.
    """
    by_tool: dict[str, list[tuple[int, Rule]]] = {}
    for rule, _requirement, priority in emitted:
        by_tool.setdefault(rule.target, []).append((priority, rule))
    denied: set[str] = set()
    hidden: set[str] = set()
    candidates: dict[str, int] = {}
    reasons: dict[str, str] = {}
    prevent_stop = False
    for tool in tools:
        rules = by_tool.get(tool)
        if rules is None:
            continue
        rules.sort(key=_priority_of, reverse=True)
        for priority, rule in rules:
            if not rule.allowed:
                denied.add(tool)
            if rule.hidden:
                hidden.add(tool)
                denied.add(tool)
            if rule.forced and priority > candidates.get(tool, 0):
                candidates[tool] = priority
            if rule.prevent_stop:
                prevent_stop = True
            if rule.reason is not None:
                reasons[tool] = rule.reason
    if prevent_stop:
        denied.add(FINAL_ANSWER)
    return _reference_pass(tools, denied, hidden, candidates, reasons, final_answer_as_tool)


def _priority_of(pair: tuple[int, Rule]) -> int:
    return pair[0]


def _reference_pass(
    tools: Sequence[str],
    denied: set[str],
    hidden: set[str],
    candidates: dict[str, int],
    reasons: dict[str, str],
    final_answer_as_tool: bool,
) -> ReferencePass:
    allowed_tools = [t for t in tools if t not in denied]
    if not allowed_tools:
        raise ReferenceConflict("no tool is left allowed")
    can_stop_now = FINAL_ANSWER not in denied
    chosen: str | None = None
    best = 0
    for tool in allowed_tools:
        priority = candidates.get(tool, 0)
        if priority > best:
            chosen, best = tool, priority
    if chosen is not None:
        allowed_tools = [chosen]
        if can_stop_now and chosen != FINAL_ANSWER:
            allowed_tools.append(FINAL_ANSWER)
        tool_choice = chosen
    elif len(allowed_tools) == 1:
        tool_choice = allowed_tools[0]
    elif not can_stop_now or final_answer_as_tool:
        tool_choice = "required"
    else:
        tool_choice = "auto"
    return ReferencePass(
        allowed=tuple(allowed_tools),
        hidden=tuple(t for t in tools if t in hidden),
        forced=chosen,
        can_stop=can_stop_now,
        tool_choice=tool_choice,
        reasons=reasons,
    )
