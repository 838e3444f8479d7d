"""Histories that refute a "never" finding on a subsystem, for the core searches.

A dead tool, a dead requirement and a budget claim "never" (the tool is never allowed, the
requirement never live, ``final_answer`` never allowed in time): one history shows the claim
false. Here such a history is replayed on another subsystem (``_shows``), the first one is
found by a breadth-first explicit search (``_search``, ``_example_of``) or by searches
directed at the goal (``directed``), and, for a core
search that grows its pool from them (``_guided``), the requirement that stops one where the
whole policy stops it is found (``_blocker``, at ``_stop_point``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice

from ruleengine.check.analysis import Analysis
from ruleengine.check.bounds import Distances, apart
from ruleengine.check.explicit import (
    allows,
    analyse,
    asking_of,
    callable_at,
    decide,
    live_at,
    reaches,
    walk,
)
from ruleengine.check.gates import counted, short_of
from ruleengine.check.seek import seek
from ruleengine.check.system import Checked, Component, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.rules import Emitted

__all__ = ["Stops", "directed"]


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


def directed(
    sub: System,
    focus: str,
    bounds: Callable[[Component, str], Distances],
    *,
    limit: int,
    deadline: float | None,
) -> tuple[Event, ...] | None:
    """A history of ``sub`` refuting the "never" finding ``focus`` (``tool:T`` or
    ``live:R``; None for any other) found by searches directed at its goal (``seek``,
    ``limit`` decided states each), or None when they find none (which proves nothing).

    ``tool:T``: a history after which ``T`` is allowed. ``live:R``: the shortest prefix,
    replayed on ``sub``, after which ``R`` is live, of a history of ``sub`` without ``R`` to
    each tool ``R``'s rules mention (in declared order): where the others allow that tool,
    ``R`` is live if it denies it, or where a step of the history is one ``R`` denies, the
    history followed by as many calls of that tool as ``R`` has views (``REPEATS`` at the
    least), all succeeding or all failing, while ``sub`` allows them. For a stop ``R``
    prevents, the history avoids every tool ``R`` watches: the others let the run stop
    before any of them is called, where ``R`` still keeps it from stopping; or, for a
    minimum of two calls or more, it calls ``R``'s tool one time fewer
    (``gates.short_of``).
    Deterministic; depends on no engine. Cost: at most one search per tool ``R``
    mentions, and one decision per step of each history found."""
    kind, _, subject = focus.partition(":")
    if kind == "tool":
        found = seek(sub, subject, bounds, limit=limit, deadline=deadline)
        return found if found is not None and _shows(sub, found, focus) else None
    if kind != "live":
        return None
    own = [c for c in sub.components if c.requirement.name == subject]
    if not own:
        return None
    others = sub.subsystem([r.name for r in sub.requirements if r.name != subject])
    mentioned = frozenset().union(*(c.mentions for c in own))
    watched = frozenset(t for c in own for t in c.watched)
    repeats = max(REPEATS, *(len(c.views) for c in own))
    for goal in [t for t in dict.fromkeys((*sub.tools, FINAL_ANSWER)) if t in mentioned]:
        avoid = watched if goal == FINAL_ANSWER else frozenset()
        found = seek(others, goal, bounds, limit=limit, deadline=deadline, avoid=avoid)
        fewer = short_of(sub, subject) if found is None and goal == FINAL_ANSWER else None
        if fewer is not None:
            # A minimum the others need in part: its tool capped one call short.
            found = seek(
                fewer,
                goal,
                apart(bounds, sub.components, sub.tools),
                limit=limit,
                deadline=deadline,
            )
        if found is None:
            continue
        tried = [found]
        if goal != FINAL_ANSWER:  # a cap shows only after some calls, of any status it counts
            tried = counted(found, goal, repeats)
        for history in tried:
            if (shown := _first_live(sub, history, subject)) is not None:
                return shown
    return None


REPEATS = 4
"""Calls of the tool a directed search for a live requirement reached, appended to its
history (``directed``), at the least: as many as the requirement has views, succeeding
and then failing, so a cap of that many calls, or one that counts every status, is live
at the next."""


def _first_live(sub: System, trace: tuple[Event, ...], name: str) -> tuple[Event, ...] | None:
    """The shortest prefix of ``trace`` (each step allowed on ``sub`` when taken) after
    which requirement ``name`` is live on ``sub``, or None. Cost: one decision per state
    and check valuation."""
    asking = asking_of(sub)
    state = sub.initial
    for i in range(len(trace) + 1):
        if any(
            live_at(sub, records, decide(sub, records), {name}, asking)
            for records, _ in sub.variants(state)
        ):
            return trace[:i]
        if i == len(trace) or trace[i][0] not in callable_at(sub, state):
            return None
        state = sub.successor(state, trace[i])
    return None


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
