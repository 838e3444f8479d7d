"""The engine on the benchmark's own workloads: strict mode agrees with table 1's yardstick,
and the fast path with the solver path, set by set and state by state.

The benchmark (``python -m benchmarks.aggregation``) only times; these are the checks it used
to make after timing. The sets are the ones it times (the same seeds; a smaller draw is a
prefix of a larger one), and a few other draws. The laws of ``tests/property/test_laws.py``
check the same properties on small random instances against a brute-force reference; these
check them at the benchmark's sizes (up to 100 tools and 200 rules), against the lean deny-wins
yardstick that table 1 compares speeds with, and on ``Reasoner.decide`` with the
``ConditionalRequirement`` mixes of table 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

import pytest

from benchmarks._config import SEED
from benchmarks._mixes import E2E_SIZES, STEP_COUNTS, draw_traces, make_mix, mix_reasoner, to_steps
from benchmarks._reference import (
    ReferenceConflict,
    ReferencePass,
    reference_aggregate,
)
from benchmarks._workloads import (
    conflict_sets,
    denied_tools,
    draw_sets,
    force_conflict_sets,
    freshen,
    make_workload,
)
from ruleengine import (
    FINAL_ANSWER,
    ConflictError,
    Emitted,
    Pass,
    Reasoner,
    Rule,
    RunState,
    Step,
)

T = TypeVar("T")
Outcome = tuple[Any, ...]


@dataclass
class Tally:
    """What a comparison saw, so that a test can tell it was not vacuous."""

    compared: int = 0
    conflicts: int = 0
    """Inputs both sides answer with a conflict."""
    forced: int = 0
    """Passes with a forced tool (for the yardstick: with no tie at the top priority)."""
    ties: int = 0
    """Passes with a forced tie (the yardstick: each side picks one of the tied tools)."""
    hidden: int = 0
    no_stop: int = 0
    mismatches: list[str] = field(default_factory=list)

    def count(self, p: Pass | ReferencePass) -> None:
        self.hidden += bool(p.hidden)
        self.no_stop += not p.can_stop


# -- strict mode against the yardstick ----------------------------------------------------------


def compare_with_reference(tools: Sequence[str], sets: Iterable[list[Emitted]]) -> Tally:
    """Compare ``allowed``, ``hidden``, ``can_stop``, ``forced`` and conflicts set by set.

    Reasons are not compared: by design we keep the highest-priority reason, the yardstick the
    last one of its loop. A forced tie is broken by declared order on our side; there only
    membership in the tie is checked.
    """
    tally = Tally()
    reasoner = Reasoner(tools, [], cache_size=0)
    for s in sets:
        tally.compared += 1
        ours = _pass_or_none(partial(reasoner.resolve, s))
        try:
            ref: ReferencePass | None = reference_aggregate(s, tools)
        except ReferenceConflict:
            ref = None
        if ours is None or ref is None:
            if (ours is None) != (ref is None):
                tally.mismatches.append(f"a conflict on one side only: {s!r}")
            tally.conflicts += 1
        elif not _same_as_reference(tally, s, ours, ref):
            tally.mismatches.append(f"ours {ours!r} != reference {ref!r} for {s!r}")
    return tally


def _pass_or_none(call: Callable[[], Pass]) -> Pass | None:
    try:
        return call()
    except ConflictError:
        return None


def _same_as_reference(tally: Tally, s: list[Emitted], ours: Pass, ref: ReferencePass) -> bool:
    tally.count(ref)
    same = ours.hidden == ref.hidden and ours.can_stop == ref.can_stop
    tied = _top_forced(s)
    if len(tied) <= 1:
        tally.forced += ours.forced is not None
        return same and ours.allowed == ref.allowed and ours.forced == ref.forced
    tally.ties += 1
    stop = (FINAL_ANSWER,) if ours.can_stop else ()
    same = same and ours.forced in tied and ref.forced in tied
    return same and ours.allowed == (ours.forced, *stop)


def _top_forced(s: list[Emitted]) -> set[str]:
    """The tools whose forcing rules tie at the top priority among tools left allowed."""
    denied = denied_tools(s)
    bids: dict[str, int] = {}
    for rule, _requirement, priority in s:
        if isinstance(rule, Rule) and rule.forced and rule.target not in denied:
            bids[rule.target] = max(priority, bids.get(rule.target, 0))
    top = max(bids.values(), default=0)
    return {t for t, p in bids.items() if p == top}


def test_reference_aggregator_follows_deny_wins() -> None:
    tools = ("search", "think", "send", FINAL_ANSWER)
    emitted = [
        Emitted(Rule("search", allowed=False, reason="high"), "a", 20),
        Emitted(Rule("search", reason="low"), "b", 5),
        Emitted(Rule("think", forced=True), "c", 10),
        Emitted(Rule("send", forced=True), "d", 30),
        Emitted(Rule("send", hidden=True), "e", 1),
        Emitted(Rule("think", prevent_stop=True), "f", 10),
    ]
    p = reference_aggregate(emitted, tools)
    # `send` has the higher force but is hidden, so `think` is forced; stopping is prevented.
    assert (p.allowed, p.forced, p.can_stop, p.tool_choice) == (("think",), "think", False, "think")
    assert p.hidden == ("send",)
    assert p.reasons == {"search": "low"}  # the last reason of the loop: the lowest priority
    with pytest.raises(ReferenceConflict):
        reference_aggregate([Emitted(Rule(t, allowed=False), "x", 10) for t in tools], tools)


@pytest.mark.parametrize(
    ("tools", "rules", "count"),
    [(10, 20, 400), (50, 100, 100), (100, 200, 40), (5, 20, 400)],
)
def test_strict_mode_agrees_with_the_reference(tools: int, rules: int, count: int) -> None:
    workload = make_workload(tools, rules)
    sets = draw_sets(workload, count)  # the benchmark's warm-up sets, then its timed ones
    clashes = conflict_sets(workload, 2)
    tally = compare_with_reference(workload.tools, [*sets, *clashes])
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.conflicts >= 2  # the conflict sets conflict on both sides
    # Not a vacuous check: the sets exercise forcing, hiding and prevent_stop.
    assert tally.forced > 0 and tally.hidden > 0 and tally.no_stop > 0


def test_unfiltered_dense_sets_agree_including_conflicts_and_ties() -> None:
    # Few tools, many rules: sets are drawn without filtering, so conflicts and forced ties
    # come from the draw itself and both sides must detect them.
    workload = make_workload(4, 12)
    sets = draw_sets(workload, 400, seed=3, keep=lambda s: True)
    tally = compare_with_reference(workload.tools, sets)
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.conflicts > 0 and tally.ties > 0 and tally.forced > 0


# -- fast path against solver path --------------------------------------------------------------


def outcome(call: Callable[[], Pass]) -> Outcome:
    """What a decision answers, comparably: the pass's fields, or the conflict's core."""
    try:
        p = call()
    except ConflictError as exc:
        return ("conflict", tuple((c.requirement, c.priority, c.rule) for c in exc.core))
    reasons = tuple(sorted(p.reasons.items()))
    return ("pass", p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, reasons)


def compare_paths(
    fast: Reasoner,
    solver: Reasoner,
    decide: Callable[[Reasoner, T], Pass],
    inputs: Iterable[T],
) -> Tally:
    """``decide`` on both reasoners, input by input: the whole pass, or the conflict's core."""
    tally = Tally()
    for x in inputs:
        ours, theirs = outcome(partial(decide, fast, x)), outcome(partial(decide, solver, x))
        tally.compared += 1
        if ours != theirs:
            tally.mismatches.append(f"fast path {ours!r} != solver path {theirs!r} for {x!r}")
        elif ours[0] == "conflict":
            tally.conflicts += 1
        else:
            tally.forced += ours[3] is not None
            tally.hidden += bool(ours[2])
            tally.no_stop += not ours[4]
    return tally


def _resolve(reasoner: Reasoner, s: list[Emitted]) -> Pass:
    return reasoner.resolve(s)


def _decide(reasoner: Reasoner, steps: tuple[Step, ...]) -> Pass:
    return reasoner.decide(RunState(steps=steps))


def both_paths(
    tools: Sequence[str], *, mode: Literal["strict", "priority"] = "strict"
) -> tuple[Reasoner, Reasoner]:
    """A default reasoner and a ``fast_path=False`` one, both without a cache."""
    fast = Reasoner(tools, [], mode=mode, cache_size=0)
    solver = Reasoner(tools, [], mode=mode, cache_size=0, fast_path=False)
    return fast, solver


def path_sets(tools: int, rules: int, count: int) -> list[list[Emitted]]:
    """The sets of table 1's rows: plain, cold (fresh objects), no tool left, force vs deny."""
    workload = make_workload(tools, rules)
    plain = draw_sets(workload, count)
    clashes = conflict_sets(workload, 3)
    forces = force_conflict_sets(workload, plain[:5])
    return [*plain, *freshen(plain[:20]), *clashes, *forces]


@pytest.mark.parametrize(
    ("tools", "rules", "count"),
    [(10, 20, 300), (50, 100, 60), (100, 200, 20), (4, 12, 300)],
)
def test_fast_path_and_solver_path_agree(tools: int, rules: int, count: int) -> None:
    # Same sets, two reasoners: allowed, hidden, forced, can_stop, tool_choice and reasons
    # must be equal, and conflicts must have the same core.
    sets = path_sets(tools, rules, count)
    fast, solver = both_paths(make_workload(tools, rules).tools)
    tally = compare_paths(fast, solver, _resolve, sets)
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.compared == len(sets)
    # Not vacuous: forcing, hiding, prevent_stop, conflicts (incl. hard force vs deny) occur,
    # and the fast path really skipped the solver where the solver path used it.
    assert tally.forced > 0 and tally.hidden > 0 and tally.no_stop > 0
    assert tally.conflicts >= 3
    assert fast.solver_checks < solver.solver_checks


def test_paths_agree_with_formulas() -> None:
    # Table 1's `general constraints` pool, drawn without the filter the benchmark applies
    # (it times satisfiable sets only): conflicts among formulas go to Z3 on both paths.
    general = make_workload(10, 20, general=True)
    sets = draw_sets(general, 200, keep=lambda s: True)
    tally = compare_paths(*both_paths(general.tools), _resolve, sets)
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.conflicts > 0 and tally.forced > 0


def test_paths_agree_in_priority_mode() -> None:
    # Priority mode decides literal-only tiers from masks too: fewer solver calls, same answers.
    fast, solver = both_paths(make_workload(10, 20).tools, mode="priority")
    tally = compare_paths(fast, solver, _resolve, path_sets(10, 20, 100))
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.conflicts > 0 and tally.forced > 0
    assert fast.solver_checks < solver.solver_checks


@pytest.mark.parametrize(("tools", "requirements"), E2E_SIZES)
def test_end_to_end_paths_agree_on_run_states(tools: int, requirements: int) -> None:
    mix = make_mix(tools, requirements, seed=SEED)
    timed = [t for n in STEP_COUNTS for t in draw_traces(mix, n, 30, seed=SEED)]  # table 2's
    short = [t for n in (1, 3) for t in draw_traces(mix, n, 40, seed=9)]
    fast = mix_reasoner(mix, cache_size=0)
    solver = mix_reasoner(mix, cache_size=0, fast_path=False)
    tally = compare_paths(fast, solver, _decide, [to_steps(t) for t in [*timed, *short]])
    assert not tally.mismatches, tally.mismatches[:3]
    assert tally.forced > 0 and tally.no_stop > 0
    assert fast.solver_checks == 0 and solver.solver_checks > 0
