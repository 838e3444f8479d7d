"""``diff``: a shortest history after which two policies give different passes, or a proof
that no history of any length does (SPEC §10).

The same history is applied to both policies: their product is explored breadth-first, and
while the two passes agree they allow the same tools, so a step is any tool both allow, with
any status. Passes are compared on ``allowed`` and ``hidden`` (as sets over both policies'
tools), ``forced``, ``can_stop``, and conflict-or-not; reasons and cores do not count.

**Opaque parts.** Custom checks and the cycle guard's "is the history cycling" are unknown
booleans to the monitors. A proof must cover every value they may take: at every reachable
pair of states, the passes must agree under every assignment of the unknowns. Checks the two
policies share (the same custom check function, two cycle guards alike: equal
``Monitor.check_keys``) are one unknown, not two. A pair of states where some assignment
separates the passes is only a *candidate*: the history that reached it is replayed through
both policies' own requirements (``Reasoner.decide``, the checks run for real), and reported
only if the passes then differ. When no candidate replays, a bounded search of concrete
histories (each decided by both policies' own requirements) looks for a real difference; if
it finds none the report says ``complete: false`` and why. Policies with a requirement the
engines cannot tabulate (no monitor they trust) get that concrete search alone. So every
reported difference is real: its trace replays to it.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Hashable, Iterator, Sequence
from itertools import product

from ruleengine import _validate
from ruleengine.aggregate import Clash
from ruleengine.check.diff_calls import MAX_DEPTH, Found, call_witness, differing, unproved
from ruleengine.check.explicit import Outcome, decide
from ruleengine.check.report import Budgets, DiffReport, PassView, Stats, TraceStep
from ruleengine.check.run import CheckTarget, target
from ruleengine.check.system import Component, Event, State, System, Unexplorable, Variant
from ruleengine.errors import ConflictError, PolicyError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Mode, Pass
from ruleengine.reasoner import Reasoner
from ruleengine.requirements.arguments import ArgumentsRequirement
from ruleengine.requirements.base import Requirement
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES, RunState

__all__ = ["CONCRETE_HISTORIES", "diff", "diff_policies", "view_of"]

View = tuple[bool, frozenset[str], frozenset[str], str | None, bool]
Side = tuple[Sequence[object], Sequence[Requirement], Mode]

CONCRETE_HISTORIES = 20_000
"""How many concrete histories the bounded search decides at most (unless ``max_states``
says otherwise)."""

MAX_UNKNOWNS = 16
"""Unknowns paired at one pair of states at most (2**16 assignments); past it, the pair counts
as a candidate (it is not compared under every assignment)."""


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


def _key(outcome: Outcome | PassView) -> View:
    if isinstance(outcome, Clash) or (isinstance(outcome, PassView) and outcome.conflict):
        return (True, frozenset(), frozenset(), None, False)
    return (
        False,
        frozenset(outcome.allowed or ()),
        frozenset(outcome.hidden or ()),
        outcome.forced,
        bool(outcome.can_stop),
    )


def diff(
    old: Side,
    new: Side,
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
    search = _Search(old_name, new_name, time.monotonic(), timeout, max_states)
    try:
        left = System(old[0], old[1], mode=old[2])
        right = System(new[0], new[1], mode=new[2])
    except Unexplorable as exc:
        reasoners = (Reasoner(old[0], old[1], mode=old[2]), Reasoner(new[0], new[1], mode=new[2]))
        return search.concrete(*reasoners, why=f"{exc}", visited=0)
    report = search.abstract(left, right)
    if not report.equivalent or _conditions(left) == _conditions(right):
        return report
    return _on_conditions(search, left, right, report)


def _on_conditions(search: _Search, left: System, right: System, report: DiffReport) -> DiffReport:
    """Equal passes, but conditions on arguments that differ (``diff_calls``). When every
    tool's conditions admit the same calls in every state, the passes are compared again
    with the old policy's arguments requirements in the new one (same conditions, same
    unknowns), whose proof is then a proof for the two. Otherwise a history and a call one
    policy admits and the other refuses, or both admit and only one asks about; else no
    proof, and why."""
    why = unproved(left.reasoner, right.reasoner)
    if why is None:
        kept = [r for r in right.requirements if not isinstance(r, ArgumentsRequirement)]
        moved = [r for r in left.requirements if isinstance(r, ArgumentsRequirement)]
        try:
            swapped = System(right.tools, [*kept, *moved], mode=right.mode)
        except (Unexplorable, PolicyError) as exc:
            why = f"the passes could not be compared again ({exc})"
        else:
            again = search.abstract(left, swapped)
            if again.equivalent and again.complete:
                return again
            why = again.reason or "the passes differ for some values of the run"
    tools = differing(left.reasoner, right.reasoner)
    found = call_witness(left.reasoner, right.reasoner, tools)
    if found is not None:
        return search.found(report.stats.states, found)
    return report.model_copy(
        update={
            "complete": False,
            "reason": "the policies' conditions on arguments differ and no call found in"
            f" histories of up to {MAX_DEPTH} steps tells them apart, but {why}",
        }
    )


def _conditions(system: System) -> Counter[tuple[str | None, str, str]]:
    """The conditions on arguments of ``system``'s requirements, as text by tool and kind."""
    out: Counter[tuple[str | None, str, str]] = Counter()
    for comp in system.components:
        req = comp.requirement
        if isinstance(req, ArgumentsRequirement) and req.enabled:
            out.update((req.target, kind, text) for kind, text in req.conditions)
    return out


class _Search:
    """One comparison: its names, clock and limits, and the two searches it may run."""

    def __init__(
        self,
        old: str,
        new: str,
        started: float,
        timeout: float | None,
        max_states: int | None,
    ) -> None:
        self.old, self.new = old, new
        self.started = started
        self.deadline = started + timeout if timeout is not None else None
        self.max_states = max_states

    def report(
        self,
        states: int,
        *,
        trace: tuple[TraceStep, ...] = (),
        difference: tuple[PassView, PassView] | None = None,
        reason: str | None = None,
    ) -> DiffReport:
        seconds = round(time.monotonic() - self.started, 3)
        return DiffReport(
            old=self.old,
            new=self.new,
            equivalent=difference is None,
            complete=difference is not None or reason is None,
            trace=trace,
            difference=None if difference is None else {"old": difference[0], "new": difference[1]},
            stats=Stats(states=states, seconds=seconds),
            reason=reason if difference is None else None,
        )

    def found(self, states: int, found: Found) -> DiffReport:
        """A difference ``diff_calls`` found: the passes after its trace, and its call."""
        old, new = (
            PassView(conflict=True) if isinstance(o, ConflictError) else view_of(o)
            for o in (found.old, found.new)
        )
        report = self.report(states, trace=found.trace, difference=(old, new))
        return report.model_copy(update={"call": found.call, "input": found.input})

    def late(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    # -- the product of the two systems ------------------------------------------------------

    def abstract(self, left: System, right: System) -> DiffReport:
        """Breadth-first over pairs of states; a difference under every assignment of the
        unknowns, or one the replay confirms, is reported; a proof when no pair separates."""
        start = (left.initial, right.initial)
        parent: dict[tuple[State, State], tuple[tuple[State, State], Event] | None] = {start: None}
        queue = deque([start])
        # With unknowns anywhere, a path may have taken a step only some values allow: every
        # witness is then replayed, step by step, before it is reported.
        opaque = any(c.opaque for c in (*left.components, *right.components))
        candidate: tuple[TraceStep, ...] | None = None
        reason: str | None = None
        seen = 0
        while queue:
            pair = queue.popleft()
            seen += 1
            if seen % 64 == 0 and self.late():
                reason = f"the time limit ran out after {len(parent)} states"
                break
            outcomes = list(_paired(left, right, pair))
            if any(_key(a) != _key(b) for a, b in outcomes):
                trace = _trace(parent, pair)
                if not opaque:  # nothing opaque anywhere: the runtime decides alike
                    return self.report(len(parent), trace=trace, difference=_views(*outcomes[0]))
                replayed = _replay(left.reasoner, right.reasoner, trace)
                if replayed is not None and _key(replayed[0]) != _key(replayed[1]):
                    return self.report(len(parent), trace=trace, difference=replayed)
                if candidate is None:
                    candidate = trace
            allowed = {
                t for pair_ in outcomes for o in pair_ if isinstance(o, Pass) for t in o.allowed
            }
            for tool in left.tools:
                if tool == FINAL_ANSWER or tool not in allowed:
                    continue
                for status in STATUSES:
                    event = (tool, status)
                    after = (left.successor(pair[0], event), right.successor(pair[1], event))
                    if after not in parent:
                        if self.max_states is not None and len(parent) >= self.max_states:
                            reason = f"the state limit ({self.max_states}) was reached"
                            break
                        parent[after] = (pair, event)
                        queue.append(after)
                if reason is not None:
                    break
            if reason is not None:
                break
        if candidate is None:
            # Every reachable pair agrees under every value of the unknowns: a proof when the
            # search was complete, else only "none so far".
            return self.report(len(parent), reason=reason)
        steps = ", ".join(
            f"`{s.tool}`" + ("" if s.status == "ok" else f" ({s.status})") for s in candidate
        )
        where = f"after {steps}" if steps else "at the first step"
        why = (
            f"the passes differ {where} for some values of the custom checks or the cycle"
            " guard, which these requirements' own checks do not take on that history"
        )
        if reason is not None:
            return self.report(len(parent), reason=f"{reason}; {why}")
        return self.concrete(left.reasoner, right.reasoner, why=why, visited=len(parent))

    # -- concrete histories ------------------------------------------------------------------

    def concrete(self, left: Reasoner, right: Reasoner, *, why: str, visited: int) -> DiffReport:
        """Breadth-first over concrete histories, each decided by both policies' own
        requirements, up to ``CONCRETE_HISTORIES`` (or ``max_states``) of them."""
        budget = self.max_states if self.max_states is not None else CONCRETE_HISTORIES
        queue: deque[tuple[TraceStep, ...]] = deque([()])
        explored = 0
        stop: str | None = None
        failed: str | None = None
        while queue:
            if explored >= budget:
                stop = f"the history limit ({budget}) was reached"
                break
            if explored % 64 == 63 and self.late():
                stop = "the time limit ran out"
                break
            trace = queue.popleft()
            explored += 1
            views = _decide_both(left, right, trace)
            if isinstance(views, str):
                failed = failed or views
                continue
            if _key(views[0]) != _key(views[1]):
                return self.report(visited + explored, trace=trace, difference=views)
            for tool in views[0].allowed or ():
                if tool == FINAL_ANSWER:
                    continue
                for status in STATUSES:
                    queue.append((*trace, TraceStep(tool=tool, status=status)))
        if stop is None:
            searched = "every history was decided: none separates them"
        else:
            # The queue holds histories of at most two lengths: every shorter one was decided.
            done = len(queue[0]) - 1 if queue else 0
            searched = f"{stop}; every history of at most {done} steps was decided"
        reason = f"{why}; a search of concrete histories found no difference ({searched})"
        if failed is not None:
            reason += f"; {failed}"
        return self.report(visited + explored, reason=reason)


def _paired(
    left: System, right: System, pair: tuple[State, State]
) -> Iterator[tuple[Outcome, Outcome]]:
    """The two decisions at ``pair`` under every assignment of the unknowns the components
    there depend on (shared ones assigned once); one pair when nothing is opaque."""
    sides: list[_Side] = [
        [(c, c.variants[v]) for c, v in zip(system.components, state, strict=True)]
        for system, state in ((left, pair[0]), (right, pair[1]))
    ]
    unknowns: dict[Hashable, int] = {}
    for side in sides:
        for comp, variants in side:
            if len(variants) > 1:
                for key in comp.keys:
                    unknowns.setdefault(key, len(unknowns))
    if not unknowns:
        yield (
            decide(left, _records(sides[0], {}, ())),
            decide(right, _records(sides[1], {}, ())),
        )
        return
    if len(unknowns) > MAX_UNKNOWNS:  # too many to pair: every combination, each side apart
        yield from product(_each(left, sides[0]), _each(right, sides[1]))
        return
    for values in product((True, False), repeat=len(unknowns)):
        yield (
            decide(left, _records(sides[0], unknowns, values)),
            decide(right, _records(sides[1], unknowns, values)),
        )


_Side = list[tuple[Component, tuple[Variant, ...]]]


def _records(
    side: _Side, unknowns: dict[Hashable, int], values: tuple[bool, ...]
) -> tuple[Emitted, ...]:
    """The records a side emits when the unknowns take ``values``."""
    records: tuple[Emitted, ...] = ()
    for comp, variants in side:
        if len(variants) == 1:
            records += variants[0].records
            continue
        valuation = tuple(values[unknowns[key]] for key in comp.keys)
        records += next(v for v in variants if valuation in v.checks).records
    return records


def _each(system: System, side: _Side) -> list[Outcome]:
    """Every decision a side may take, the components' variants combined freely."""
    combos = product(*(variants for _, variants in side))
    return [decide(system, tuple(r for v in combo for r in v.records)) for combo in combos]


def _views(a: Outcome, b: Outcome) -> tuple[PassView, PassView]:
    return view_of(a), view_of(b)


def _decide_both(
    left: Reasoner, right: Reasoner, trace: Sequence[TraceStep]
) -> tuple[PassView, PassView] | str:
    """Both policies' own passes after ``trace``, or why a requirement failed on it."""
    state = RunState.from_trace([(s.tool, s.status) for s in trace])
    views = []
    for reasoner in (left, right):
        try:
            p = reasoner.decide(state)
        except ConflictError:
            views.append(PassView(conflict=True))
            continue
        except RuleEngineError as exc:
            return f"a requirement failed on some histories ({exc.message})"
        views.append(
            PassView(
                conflict=False,
                allowed=p.allowed,
                hidden=p.hidden,
                forced=p.forced,
                can_stop=p.can_stop,
            )
        )
    return views[0], views[1]


def _replay(
    left: Reasoner, right: Reasoner, trace: Sequence[TraceStep]
) -> tuple[PassView, PassView] | None:
    """Both policies' own passes after ``trace``, when each of its steps was allowed by both
    where it was taken (a history both runtimes could reach); else None."""
    for n, step in enumerate(trace):
        views = _decide_both(left, right, trace[:n])
        if isinstance(views, str) or any(step.tool not in (v.allowed or ()) for v in views):
            return None
    views = _decide_both(left, right, trace)
    return None if isinstance(views, str) else views


def _side(value: object, label: str) -> Side:
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
    """``diff`` on two policies (their tools, requirements and modes), and their budgets:
    ``budget`` holds both ``max_iterations`` when they differ (a run of one is cut short
    where the other's goes on, whatever the passes)."""
    old = target(old, "diff_policies (old)")
    new = target(new, "diff_policies (new)")
    report = diff(
        (old.tools, old.requirements, old.mode),
        (new.tools, new.requirements, new.mode),
        old_name=old.source,
        new_name=new.source,
        timeout=timeout,
        max_states=max_states,
    )
    if old.max_iterations == new.max_iterations:
        return report
    budget = Budgets(old=old.max_iterations, new=new.max_iterations)
    return report.model_copy(update={"budget": budget})


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
