"""``diff``: a shortest history after which two policies give different passes, or a proof
that no history of any length does (SPEC §10).

The same history is applied to both policies: their product is explored breadth-first, and
while the two passes agree they allow the same tools, so a step is any tool both allow, with
any status. Passes are compared on ``allowed`` and ``hidden`` (as sets over both policies'
tools), ``forced``, ``can_stop``, and conflict-or-not; reasons and cores do not count. With
opaque custom checks a state has several possible passes: the two states agree when their
sets of possible passes are equal.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from ruleengine import _validate
from ruleengine.aggregate import Clash
from ruleengine.check.explicit import Outcome, decide
from ruleengine.check.report import DiffReport, PassView, Stats, TraceStep
from ruleengine.check.run import CheckTarget, target
from ruleengine.check.system import Event, State, System, Unexplorable
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Mode, Pass
from ruleengine.requirements.base import Requirement
from ruleengine.state import STATUSES

__all__ = ["diff", "diff_policies", "view_of"]

View = tuple[bool, frozenset[str], frozenset[str], str | None, bool]


def view_of(outcome: Outcome) -> PassView:
    """What ``diff`` reports of a decision."""
    if isinstance(outcome, Clash):
        return PassView(conflict=True)
    return PassView(
        conflict=False,
        allowed=outcome.allowed,
        hidden=outcome.hidden,
        forced=outcome.forced,
        can_stop=outcome.can_stop,
    )


def _key(outcome: Outcome) -> View:
    if isinstance(outcome, Clash):
        return (True, frozenset(), frozenset(), None, False)
    return (
        False,
        frozenset(outcome.allowed),
        frozenset(outcome.hidden),
        outcome.forced,
        outcome.can_stop,
    )


def diff(
    old: tuple[Sequence[object], Sequence[Requirement], Mode],
    new: tuple[Sequence[object], Sequence[Requirement], Mode],
    *,
    old_name: str = "old",
    new_name: str = "new",
    timeout: float | None = None,
    max_states: int | None = None,
) -> DiffReport:
    """Compare two policies given as ``(tools, requirements, mode)``."""
    old = _side(old, "old")
    new = _side(new, "new")
    _validate.text(old_name, name="old_name")
    _validate.text(new_name, name="new_name")
    if timeout is not None:
        _validate.number(timeout, name="timeout")
    if max_states is not None:
        _validate.integer(max_states, name="max_states", least=1)
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    try:
        left = System(old[0], old[1], mode=old[2])
        right = System(new[0], new[1], mode=new[2])
    except Unexplorable as exc:
        raise PolicyError(
            f"diff cannot compare these policies: {exc}",
            hint="diff explores the requirements' monitors; give every requirement one",
        ) from None
    start = (left.initial, right.initial)
    parent: dict[tuple[State, State], tuple[tuple[State, State], Event] | None] = {start: None}
    queue = deque([start])
    reason: str | None = None
    seen = 0
    while queue:
        pair = queue.popleft()
        seen += 1
        if deadline is not None and seen % 64 == 0 and time.monotonic() > deadline:
            reason = f"the time limit ran out after {len(parent)} states"
            break
        a = [decide(left, records) for records, _ in left.variants(pair[0])]
        b = [decide(right, records) for records, _ in right.variants(pair[1])]
        if {_key(o) for o in a} != {_key(o) for o in b}:
            first_a, first_b = _first_difference(a, b)
            return DiffReport(
                old=old_name,
                new=new_name,
                equivalent=False,
                complete=True,
                trace=_trace(parent, pair),
                difference={"old": view_of(first_a), "new": view_of(first_b)},
                stats=Stats(states=len(parent), seconds=round(time.monotonic() - started, 3)),
            )
        tools = {t for o in a if isinstance(o, Pass) for t in o.allowed}
        for tool in left.tools:
            if tool == FINAL_ANSWER or tool not in tools:
                continue
            for status in STATUSES:
                event = (tool, status)
                after = (left.successor(pair[0], event), right.successor(pair[1], event))
                if after not in parent:
                    if max_states is not None and len(parent) >= max_states:
                        reason = f"the state limit ({max_states}) was reached"
                        break
                    parent[after] = (pair, event)
                    queue.append(after)
            if reason is not None:
                break
        if reason is not None:
            break
    # No difference found: a proof when the search was complete, else only "none so far".
    return DiffReport(
        old=old_name,
        new=new_name,
        equivalent=True,
        complete=reason is None,
        stats=Stats(states=len(parent), seconds=round(time.monotonic() - started, 3)),
        reason=reason,
    )


def _side(value: object, label: str) -> tuple[Sequence[object], Sequence[Requirement], Mode]:
    """``value`` if it is a ``(tools, requirements, mode)`` triple (its parts are checked where
    the policy is built), else a ``PolicyError`` naming the argument."""
    if not isinstance(value, tuple | list) or len(value) != 3:
        raise PolicyError(
            f"diff: `{label}` must be a `(tools, requirements, mode)` triple, got "
            f"`{type(value).__name__}`",
            hint="or compare two `Policy` objects with `diff_policies(old, new)`",
        )
    return (value[0], value[1], value[2])


def diff_policies(
    old: CheckTarget,
    new: CheckTarget,
    *,
    timeout: float | None = None,
    max_states: int | None = None,
) -> DiffReport:
    """``diff`` on two policies (their tools, requirements and modes)."""
    old = target(old, "diff_policies (old)")
    new = target(new, "diff_policies (new)")
    return diff(
        (old.tools, old.requirements, old.mode),
        (new.tools, new.requirements, new.mode),
        old_name=old.source,
        new_name=new.source,
        timeout=timeout,
        max_states=max_states,
    )


def _first_difference(a: list[Outcome], b: list[Outcome]) -> tuple[Outcome, Outcome]:
    """A pair of outcomes that differ (the first in check-value order)."""
    keys_b = {_key(o) for o in b}
    for outcome in a:
        if _key(outcome) not in keys_b:
            return outcome, b[0]
    keys_a = {_key(o) for o in a}
    for outcome in b:
        if _key(outcome) not in keys_a:
            return a[0], outcome
    raise AssertionError("the outcome sets differ")  # pragma: no cover


def _trace(
    parent: dict[tuple[State, State], tuple[tuple[State, State], Event] | None],
    pair: tuple[State, State],
) -> tuple[TraceStep, ...]:
    steps: list[TraceStep] = []
    link = parent[pair]
    while link is not None:
        previous, (tool, status) = link
        steps.append(TraceStep(tool=tool, status=status))
        link = parent[previous]
    return tuple(reversed(steps))
