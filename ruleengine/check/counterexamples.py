"""Histories that refute a "never" finding on a subsystem, for the core searches.

A dead tool, a dead requirement and a budget claim "never" (the tool is never allowed, the
requirement never live, ``final_answer`` never allowed in time): one history shows the claim
false. Here such a history is replayed on another subsystem (``_shows``), the first one is
found by a breadth-first explicit search (``_search``, ``_example_of``), and, for a core
search that grows its pool from them (``_guided``), the requirement that stops one where the
whole policy stops it is found (``_blocker``, at ``_stop_point``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice

from ruleengine.check.analysis import Analysis
from ruleengine.check.explicit import allows, analyse, asking_of, decide, live_at, reaches, walk
from ruleengine.check.system import Checked, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.rules import Emitted

__all__ = ["Stops"]


def _shows(sub: System, trace: tuple[Event, ...], focus: str) -> bool:
    """Whether ``trace``, replayed on ``sub`` (every step allowed when taken, under some
    check values), ends where the focused "never" finding fails: ``final_answer`` allowed
    within the budget (``finish:N``), the tool allowed (``tool:T``), the requirement live
    (``live:R``)."""
    kind, _, subject = focus.partition(":")
    if kind == "finish":
        return sub.calls(trace) <= int(subject) and reaches(sub, trace, FINAL_ANSWER)
    if kind == "tool":
        return reaches(sub, trace, subject)
    if kind != "live":
        return False
    state = walk(sub, trace)
    if state is None:
        return False
    asking = asking_of(sub)
    return any(
        live_at(sub, records, decide(sub, records), {subject}, asking)
        for records, _ in sub.variants(state)
    )


def _guided(system: Checked, focus: str | None) -> bool:
    """Whether a core search for ``focus`` may grow its pool from counterexamples: a
    "never" finding (a dead tool or requirement, no finish in time) on a ``System``."""
    return isinstance(system, System) and _first_key(focus) is not None


def _first_key(focus: str | None) -> str | None:
    """The key of ``Analysis.firsts`` that refutes the "never" finding ``focus`` (None:
    ``focus`` is none: the whole analysis, or no-finish)."""
    if focus is None or not focus.startswith(("tool:", "live:", "finish:")):
        return None
    return "finish" if focus.startswith("finish:") else focus


def _example_of(sub: System, analysis: Analysis, focus: str) -> tuple[Event, ...] | None:
    """The explicit search's first history (of ``sub``) refuting the "never" finding
    ``focus``."""
    key = _first_key(focus)
    trace = None if key is None else analysis.firsts.get(key)
    if trace is not None and key == "finish" and sub.calls(trace) > int(focus[7:]):
        return None  # the first stop comes after the budget: none within it
    return trace


def _blocker(
    system: System,
    kept: frozenset[str],
    rest: Sequence[str],
    trace: tuple[Event, ...],
    focus: str,
) -> str | None:
    """The first of ``rest`` that, with ``kept`` and the ones before it, stops ``trace``
    from refuting ``focus`` where the whole policy stops it (``_stop_point``). None if
    ``kept`` stops it there already, or ``rest`` does not. Cost: one decision per step of
    ``trace`` and check valuation, and per valuation and requirement of ``rest`` with
    records there."""
    point = _stop_point(system, trace, focus)
    if point is None:
        return None
    variants, stops = point

    def stopped(chosen: set[str]) -> bool:
        # Stopped when no values of the opaque checks let the history through.
        return all(
            stops(tuple(e for e in records if e.requirement in chosen)) for records in variants
        )

    chosen = set(kept)
    if stopped(chosen):
        return None  # the pool stops it already: the history was not the pool's
    emitting = {e.requirement for records in variants for e in records}
    for name in rest:
        if name not in emitting:
            continue  # emits nothing there: changes nothing
        chosen.add(name)
        if stopped(chosen):
            return name
    return None


Stops = Callable[[tuple[Emitted, ...]], bool]
"""Whether records decided at a state stop a history there."""


def _stop_point(
    system: System, trace: tuple[Event, ...], focus: str
) -> tuple[list[tuple[Emitted, ...]], Stops] | None:
    """Where the whole policy stops ``trace`` from refuting ``focus``, as the records of
    that state under each value of the opaque checks, and what stops it: at the first step
    it allows under no values, "the step is not allowed"; else at the end, "the tool is
    not allowed", "the requirement is not live" or "no stop". None when a state on the way
    has more than ``GROW_VARIANTS`` sets of records (many opaque checks: the scan would
    cost a decision per set and requirement)."""
    state = system.initial
    for tool, status in trace:
        variants = _variants(system, state)
        if variants is None:
            return None
        stops = _not_allowing(system, tool)
        if all(stops(records) for records in variants):
            return variants, stops
        state = system.successor(state, (tool, status))
    kind, _, subject = focus.partition(":")
    variants = _variants(system, state)
    if variants is None:
        return None
    if kind == "live":
        return variants, _not_live(system, subject)
    return variants, _not_allowing(system, FINAL_ANSWER if kind == "finish" else subject)


GROW_VARIANTS = 16
"""Sets of records (values of the opaque checks) a state may have for a core search's
growth to walk through it."""


def _variants(system: System, state: State) -> list[tuple[Emitted, ...]] | None:
    """The sets of records ``state`` emits, or None past ``GROW_VARIANTS``."""
    found = [records for records, _ in islice(system.variants(state), GROW_VARIANTS + 1)]
    return found if len(found) <= GROW_VARIANTS else None


def _not_allowing(system: System, tool: str) -> Stops:
    return lambda records: not allows(decide(system, records), tool)


def _not_live(system: System, name: str) -> Stops:
    asking = asking_of(system)
    return lambda records: not live_at(system, records, decide(system, records), {name}, asking)


def _search(sub: System, focus: str | None, max_states: int, deadline: float | None) -> Analysis:
    """A breadth-first explicit search of ``sub`` for the question ``focus`` (liveness only
    of its requirement, if any), stopping at the first history refuting a "never" finding
    (``_first_key``), after ``max_states`` states, or at ``deadline``."""
    live = focus[5:] if focus is not None and focus.startswith("live:") else False
    until = _first_key(focus)
    return analyse(sub, max_states=max_states, deadline=deadline, live=live, until=until)
