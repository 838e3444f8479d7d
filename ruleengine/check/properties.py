"""SPEC §8/§11: from an engine's verdicts to findings, each with its core and shortest trace.

Conflict cores (deadlock, forced-conflict) come from the runtime's reasoner at the witness's
last state; a forced-tie's core is the tied forcing rules. The other findings get a
*requirement-level* core: requirements for which the finding holds when the policy keeps
only them, and disappears when any one of them is dropped (``requirement_core``), each
checked by running the same engine on the smaller system.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial, reduce
from itertools import islice
from operator import or_
from typing import Any, Protocol

from ruleengine._search import quickxplain
from ruleengine.check.analysis import Analysis, Witness
from ruleengine.check.bounds import distances
from ruleengine.check.explicit import (
    allows,
    analyse,
    asking_of,
    decide,
    live_at,
    reaches,
    walk,
)
from ruleengine.check.lanes import run_jobs
from ruleengine.check.progress import note as note_progress
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.report import FINDING_IDS, SEVERITY, Finding, FindingId, TraceStep
from ruleengine.check.system import Component, Event, State, System
from ruleengine.errors import ConflictError
from ruleengine.ir import FINAL_ANSWER, Forced
from ruleengine.passes import CoreEntry
from ruleengine.reasoner import Reasoner
from ruleengine.requirements.base import Requirement
from ruleengine.rules import Emitted

__all__ = ["Engine", "findings", "requirement_core", "requirement_entry"]


class Checked(Protocol):
    """What findings read of a system (``System``, or ``ConcreteSystem`` for bounded search)."""

    reasoner: Reasoner
    tools: tuple[str, ...]
    requirements: tuple[Requirement, ...]

    @property
    def components(self) -> Sequence[Component]: ...

    def subsystem(self, keep: Sequence[str]) -> Any: ...


LATE = "the time limit ran out"
"""What a core question asked past the deadline records in ``cut``."""


class CoreCache(dict[tuple[frozenset[str], str | None, bool], Analysis]):
    """Analyses of subsystems, by the requirements kept, the focus, and whether quick; the
    deadline of the explicit searches the core searches run besides the engine; and where
    questions the deadline cut short are recorded (``cut``, shared with the engine's)."""

    def __init__(self, deadline: float | None = None, cut: list[str] | None = None) -> None:
        super().__init__()
        self.deadline = deadline
        self.cut = cut

    def expired(self) -> bool:
        """Whether the deadline has passed: every question not answered yet is then
        answered "the finding does not hold", which keeps its requirements in the core (the
        core stays right, perhaps not minimal) and asks nothing more (``--timeout`` is kept
        however many questions remain), and the cut is recorded."""
        if self.deadline is None or time.monotonic() <= self.deadline:
            return False
        if self.cut is not None and LATE not in self.cut[-1:]:
            self.cut.append(LATE)
        return True


class Hints:
    """The cores of the findings reported so far, as guesses for the next cores: findings
    often share a cause (a conflict early in every run leaves most tools and requirements
    dead, and makes the runs too long or endless)."""

    RECENT = 6
    """Cores of the latest findings tried as guesses (besides the conflicts')."""

    def __init__(self) -> None:
        self.roots: list[frozenset[str]] = []
        """The conflicts' cores: always tried."""
        self.recent: list[frozenset[str]] = []
        """The other findings' cores, newest first."""

    def add(self, core: Iterable[str], *, root: bool = False) -> None:
        (self.roots if root else self.recent).insert(0, frozenset(core))

    def copy(self) -> Hints:
        twin = Hints()
        twin.roots, twin.recent = list(self.roots), list(self.recent)
        return twin

    def with_roots(self, guess: Iterable[str]) -> frozenset[str]:
        """``guess`` with every conflict's core: a conflict that every run meets early
        leaves what comes after it unreachable, and the subject's own requirements say
        why the subject is not reached before."""
        return frozenset(guess).union(*self.roots)

    def guesses(self) -> list[frozenset[str]]:
        """The latest cores, the conflicts' cores, and all of them together."""
        every = frozenset().union(*self.roots, *self.recent)
        return [*self.recent[: self.RECENT], *self.roots, every]


Engine = Callable[[Any, str | None], Analysis]
"""Analyses a (sub)system; used again for requirement-level cores. The second argument
says which verdict the caller needs (``"finish"``, ``"no-finish"``, ``"tool:T"``,
``"live:R"``; None: all), so an engine may skip the rest."""


def findings(
    system: Checked,
    analysis: Analysis,
    *,
    max_iterations: int,
    engine: Engine,
    deadline: float | None = None,
    cut: list[str] | None = None,
) -> list[Finding]:
    """Every finding of ``analysis``, in SPEC order, once per subject. ``deadline`` (a
    ``time.monotonic()`` value) bounds the searches the core searches run besides
    ``engine``'s (which has its own limits). ``cut``: where ``engine`` records answers the
    limits cut short (a lane run in a child sends its own back, see ``_in_lanes``)."""
    out: list[Finding] = []
    cache = CoreCache(deadline=deadline, cut=cut)
    hints = Hints()
    if analysis.deadlock is not None:
        out.append(_deadlock(system, analysis.deadlock))
    for tool in system.tools:
        witness = analysis.forced_conflicts.get(tool)
        if witness is not None:
            out.append(_forced_conflict(system, tool, witness))
    # A conflict early in every run often explains the findings below too (nothing after it
    # is reachable): its requirements are the first guess for their cores.
    for conflict in out:
        hints.add((c.requirement for c in conflict.core), root=True)
    # The requirement-level cores: first no-finish, budget and the dead tools, then the dead
    # requirements (whose guesses read the dead tools' cores), each phase in lanes.
    first: list[_Job] = []
    no_finish = analysis.no_finish
    if analysis.complete and no_finish is not None:
        first.append(lambda h: _no_finish(system, no_finish, engine, cache, h))
    if analysis.depth_done >= max_iterations - 1 or analysis.complete:
        first.append(lambda h: _budget(system, analysis, max_iterations, engine, cache, h))
    relaxed = Relaxed(system.components, system.tools) if analysis.complete else None
    if relaxed is not None:
        # The relaxed product's closing sets, found in tool order, each search inside the
        # earlier ones (cheap: no engine, no decision), are the dead tools' first guesses.
        earlier: list[list[int]] = []
        for tool in system.tools:
            if tool != FINAL_ANSWER and tool not in analysis.allowed_tools:
                closing = relaxed.closing(tool, earlier, deadline=deadline)
                first.append(partial(_dead_tool, system, tool, engine, cache, closing=closing))
    found = _in_lanes(first, hints, cut)
    note_progress(findings=len(out) + sum(f is not None for f in found))
    closed = {
        f.tool: frozenset(c.requirement for c in f.core)
        for f in found
        if f is not None and f.id == "dead-tool" and f.tool
    }
    if relaxed is not None:
        context = _DeadRequirements(system, relaxed, closed)
        dead = [r.name for r in system.requirements if r.name not in analysis.live]
        second = [partial(_dead_requirement, context, name, engine, cache) for name in dead]
        found += _in_lanes(second, hints, cut, context.lanes(dead))
    out.extend(f for f in found if f is not None)
    note_progress(findings=len(out))
    if analysis.tie is not None:
        out.append(_tie(system, analysis.tie))
    rank = {finding_id: i for i, finding_id in enumerate(FINDING_IDS)}
    return sorted(out, key=lambda f: rank[f.id])  # stable: subjects keep declared order


_Job = Callable[["Hints"], "tuple[Finding, frozenset[str]] | None"]
"""A core search: from the guesses of the lane's earlier findings, a finding and what its
core adds to those guesses (None: no finding)."""


def _in_lanes(
    jobs: Sequence[_Job],
    hints: Hints,
    cut: list[str] | None,
    lanes: Sequence[Sequence[int]] | None = None,
) -> list[Finding | None]:
    """Each job's finding, in order. The jobs are dealt to lanes (``lanes``: the indices of
    each lane's jobs, in order; by default two, dealt in turn), run as independent jobs
    (``lanes.run_jobs``: two processes claim lanes from either end when the machine
    allows). A lane starts from its own copy of ``hints`` and adds each of its findings'
    cores to it: a job's guesses depend on its lane alone, so every finding is the same
    whichever process ran a lane and when. Afterwards ``hints`` gets every core in job order
    (the next phase's start)."""

    def lane(mine: Sequence[_Job]) -> list[_Done]:
        own = hints.copy()
        out: list[_Done] = []
        for job in mine:
            start = len(cut) if cut is not None else 0
            got = job(own)
            if got is not None:
                own.add(got[1])
            out.append((got, cut[start:] if cut is not None else []))
        return out

    if lanes is None:
        # Two lanes, or one for a single job (no process started for an empty lane).
        lanes = [range(k, len(jobs), 2) for k in range(min(2, len(jobs)))]
    done, here = run_jobs([partial(lane, [jobs[i] for i in mine]) for mine in lanes])
    if cut is not None:
        # What a lane run in the child cut short (a lane run here wrote to `cut` itself).
        for results, ran_here in zip(done, here, strict=True):
            if not ran_here:
                cut.extend(entry for _, cut_there in results for entry in cut_there)
    by_job: dict[int, _Done] = {}
    for mine, results in zip(lanes, done, strict=True):
        by_job.update(zip(mine, results, strict=True))
    ordered = [by_job[i][0] for i in range(len(jobs))]
    for got in ordered:
        if got is not None:
            hints.add(got[1])
    return [None if got is None else got[0] for got in ordered]


_Done = tuple["tuple[Finding, frozenset[str]] | None", list[str]]
"""A job's result, and the answers cut short while it ran."""


def _finding(
    finding_id: FindingId,
    message: str,
    *,
    witness: Witness | None = None,
    core: Sequence[CoreEntry] = (),
    tool: str | None = None,
    requirement: str | None = None,
    min_steps: int | None = None,
) -> Finding:
    # Opaque checks branch both ways, so the explored states include every history any check
    # functions allow: "never" verdicts (dead-tool, dead-requirement, budget, and no-finish's
    # "cannot finish from here") hold whatever the checks answer. Only reaching a state, or a
    # state's verdict, can need particular check values: that is the witness's to say.
    trace = tuple(TraceStep(tool=t, status=s) for t, s in witness.trace) if witness else ()
    return Finding(
        id=finding_id,
        severity=SEVERITY[finding_id],
        tool=tool,
        requirement=requirement,
        message=message,
        trace=trace,
        core=tuple(core),
        depends_on_custom_checks=witness is not None and witness.depends_on_checks,
        min_steps=min_steps,
    )


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def _after(witness: Witness) -> str:
    n = len(witness.trace)
    return "at the first step" if n == 0 else f"after {_steps(n)}"


def _deadlock(system: Checked, witness: Witness) -> Finding:
    exc = _conflict_of(system, witness.records)
    core = exc.core
    names = sorted({f"`{c.requirement}`" for c in core})
    who = ", ".join(names) + (" leave" if len(names) > 1 else " leaves")
    return _finding(
        "deadlock",
        f"{_after(witness)} no tool is allowed: {who} nothing to call",
        witness=witness,
        core=core,
    )


def _forced_conflict(system: Checked, tool: str, witness: Witness) -> Finding:
    core = forced_core(system, witness.records, tool)
    return _finding(
        "forced-conflict",
        f"{_after(witness)} the hard force on `{tool}` cannot be honoured",
        witness=witness,
        core=core,
        tool=tool,
    )


def _tie(system: Checked, witness: Witness) -> Finding:
    outcome = system.reasoner.resolve(witness.records)
    tie = outcome.forced_tie
    # INVARIANT: the engine reported a tie at this state.
    assert tie is not None
    tools = " and ".join(f"`{t}`" for t in tie.tools)
    return _finding(
        "forced-tie",
        f"{_after(witness)} {tools} are forced at the same priority {tie.priority}: "
        f"`{tie.tools[0]}` wins by declared order",
        witness=witness,
        core=tie.rules,
    )


def _no_finish(
    system: Checked, witness: Witness, engine: Engine, cache: CoreCache, hints: Hints
) -> tuple[Finding, frozenset[str]]:
    core = requirement_core(
        system,
        lambda a: a.no_finish is not None,
        engine,
        "no-finish",
        cache=cache,
        hints=[cone_of(system, {FINAL_ANSWER}, forcing=True), *hints.guesses()],
    )
    finding = _finding(
        "no-finish",
        f"{_after(witness)} the run reaches a state from which `final_answer` can never be reached",
        witness=witness,
        core=core_entries(system, core),
    )
    return finding, frozenset(r.name for r in core)


def _budget(
    system: Checked,
    analysis: Analysis,
    max_iterations: int,
    engine: Engine,
    cache: CoreCache,
    hints: Hints,
) -> tuple[Finding, frozenset[str]] | None:
    least = analysis.finish_depth
    if least is not None and least <= max_iterations - 1:
        return None
    within = analysis.finishes_within
    if within is not None and within <= max_iterations - 1:
        return None

    def fails(a: Analysis) -> bool:
        if a.finishes_within is not None and a.finishes_within <= max_iterations - 1:
            return False
        return a.finish_depth is None or a.finish_depth > max_iterations - 1

    cone = cone_of(system, {FINAL_ANSWER}, forcing=True)
    core = requirement_core(
        system,
        fails,
        engine,
        f"finish:{max_iterations - 1}",
        cache=cache,
        hints=[*_lengthening(system), cone, *hints.guesses()],
    )
    if least is None and not analysis.complete:
        # The search stopped after deciding every state up to depth_done: `final_answer` was
        # not allowed that far, which is all it showed (min_steps stays unknown, null).
        why = (
            f"`final_answer` needs more than {_steps(analysis.depth_done)} first (the search "
            f"stopped there, without showing whether it is ever allowed)"
        )
    elif least is None:
        why = "`final_answer` is never allowed"
    else:
        why = f"`final_answer` needs at least {_steps(least)} first"
    finding = _finding(
        "budget",
        f"{why}: more than max_iterations={max_iterations} allows (at most "
        f"{_steps(max_iterations - 1)} before the final answer)",
        core=core_entries(system, core),
        min_steps=least,
    )
    return finding, frozenset(r.name for r in core)


def _dead_tool(
    system: Checked,
    tool: str,
    engine: Engine,
    cache: CoreCache,
    hints: Hints,
    *,
    closing: list[int] | None,
) -> tuple[Finding, frozenset[str]]:
    cones = _cones(system, {tool}, forcing=True)
    core = requirement_core(
        system,
        _never_allowed(tool),
        engine,
        f"tool:{tool}",
        cache=cache,
        hints=[
            *([] if closing is None else [_names(system, closing)]),
            *cones,
            hints.with_roots(_mentioning(system, {tool})),
            *hints.guesses(),
        ],
        grow_from=hints.with_roots(()),
    )
    finding = _finding(
        "dead-tool",
        f"`{tool}` is allowed in no reachable state",
        core=core_entries(system, core),
        tool=tool,
    )
    return finding, frozenset(r.name for r in core)


class _DeadRequirements:
    """What the core searches of dead requirements share: the dead tools' cores by tool
    (``closed``: a requirement whose rules mention a dead tool is often dead for that
    reason, a force after it never firing, with what else mentions its tools), and the
    policy's dependencies and watched tools."""

    def __init__(
        self, system: Checked, relaxed: Relaxed, closed: dict[str, frozenset[str]]
    ) -> None:
        self.system = system
        self.relaxed = relaxed
        self.closed = closed
        self.dependencies = _dependencies(system)
        self.watched = _watched(system)
        self.linked = _watched(system, linking=True)
        self.singled = _singled_out(system)

    def lanes(self, names: Sequence[str]) -> list[list[int]]:
        """Lanes for the core searches of the requirements ``names`` (by index): one per
        group of requirements linked through the tools they mention, watch or wait for
        (``_singled_out``), whose cores tend to share requirements and so help each other as
        guesses. Many lanes let two processes share the work evenly; a group holding more
        than half of the searches is dealt to two lanes in turn, as unrelated searches are.
        The lanes are ordered for ``run_jobs``' claims from both ends: the longest (most
        searches) at either end, the shortest in the middle."""
        parent = list(range(len(names)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner: dict[str, int] = {}
        for i, name in enumerate(names):
            tools = _mentions_of(self.system, name) | self.linked.get(name, set())
            for tool in sorted((tools | self.singled.get(name, set())) - {FINAL_ANSWER}):
                j = owner.setdefault(tool, i)
                parent[root(i)] = root(j)
        groups: dict[int, list[int]] = {}
        for i in range(len(names)):
            groups.setdefault(root(i), []).append(i)
        lanes: list[list[int]] = []
        for group in groups.values():  # in order of their first search
            if len(group) * 2 > len(names) and len(group) > 1:
                lanes.extend(group[k::2] for k in range(2))
            else:
                lanes.append(group)
        # The longest lanes at the two ends, shorter ones towards the middle: two processes
        # claiming from either end each start on a long one, and the short ones even out
        # the end (a long lane claimed last would leave the other process idle meanwhile).
        lanes.sort(key=lambda lane: (-len(lane), lane[0]))
        return [*lanes[0::2], *lanes[1::2][::-1]]


def _dead_requirement(
    context: _DeadRequirements, name: str, engine: Engine, cache: CoreCache, hints: Hints
) -> tuple[Finding, frozenset[str]]:
    system, relaxed = context.system, context.relaxed
    mentioned = _mentions_of(system, name) - {FINAL_ANSWER}
    moving = mentioned | context.watched.get(name, set())
    mentioning = _mentioning(system, mentioned)
    mine = [i for i, c in enumerate(system.components) if c.requirement.name == name]
    # Pairs of a tool it mentions and one it watches, but not through a global view (a step
    # counter watches every tool): that would be a relaxed fixpoint per tool.
    pairs = [(t, w) for t in sorted(mentioned) for w in sorted(context.linked.get(name, set()))]
    implied = []
    for tool, first in pairs[:IMPLIED_PAIRS]:
        # Closed until `first` succeeds implies closed until it is called at all: the second
        # is asked only when the first is not so.
        closing = relaxed.closed_until(tool, first, mine, succeeded=True)
        if closing is None:
            closing = relaxed.closed_until(tool, first, mine, succeeded=False)
        if closing is not None:
            implied.append(_names(system, closing) | {name})
    # A requirement that waits for a dead tool (a force after it, a count of its calls) is
    # often dead for that reason alone: the tool's core, with what else mentions its tools.
    waiting = [
        frozenset([name, *context.closed[t]])
        for t in sorted(context.singled.get(name, ()))
        if t in context.closed
    ]
    core = requirement_core(
        system,
        _never_live(name),
        engine,
        f"live:{name}",
        keep=(name,),
        grow_from=hints.with_roots(()),
        cache=cache,
        hints=[
            *waiting,
            *(w | mentioning for w in waiting),
            *implied,
            *_between(system, name, context.dependencies),
            *_cones(system, set(_mentions_of(system, name)), forcing=True),
            hints.with_roots(mentioning),
            mentioning.union(*(context.closed.get(t, ()) for t in moving)),
            *hints.guesses(),
        ],
    )
    finding = _finding(
        "dead-requirement",
        f"`{name}` changes the pass in no reachable state",
        core=core_entries(system, core),
        requirement=name,
    )
    return finding, frozenset(r.name for r in core if r.name != name)


def _names(system: Checked, indices: Iterable[int]) -> frozenset[str]:
    """The requirements of the components at ``indices``."""
    return frozenset(system.components[i].requirement.name for i in indices)


def _never_allowed(tool: str) -> Callable[[Analysis], bool]:
    return lambda a: tool not in a.allowed_tools


def _never_live(name: str) -> Callable[[Analysis], bool]:
    return lambda a: name not in a.live


# -- cores -------------------------------------------------------------------------------------


def _conflict_of(system: Checked, records: tuple[Emitted, ...]) -> ConflictError:
    try:
        system.reasoner.resolve(records)
    except ConflictError as exc:
        # Kept as a value: drop the traceback, whose frames would tie the caller's locals
        # (BDD nodes and their manager among them) into a reference cycle.
        return exc.with_traceback(None)
    raise AssertionError("the engine's witness state does not conflict")  # pragma: no cover


def forced_core(system: Checked, records: tuple[Emitted, ...], tool: str) -> tuple[CoreEntry, ...]:
    """A minimal core at a forced-conflict state that contains the violated force on ``tool``.

    Either ``tool`` cannot be honoured against the other rules (the core of the rules with
    no other hard force), or it clashes only with another hard force: then the two forces
    are a core on their own (two hard forces on different tools never hold together).
    """
    forces = [e for e in records if isinstance(e.item, Forced)]
    others = [e for e in forces if e.item.tool != tool]  # type: ignore[union-attr]
    alone = tuple(e for e in records if e not in others)
    try:
        system.reasoner.resolve(alone)
    except ConflictError as exc:
        return tuple(exc.core)
    own = next(e for e in forces if e.item.tool == tool)  # type: ignore[union-attr]
    # In priority mode a lower-priority force is overridden, not clashing: pair the force
    # with the first other force (highest priority, then tool order) it really clashes with.
    order = sorted(others, key=lambda e: (-e.priority, system.tools.index(e.item.tool)))  # type: ignore[union-attr]
    for other in order:
        try:
            system.reasoner.resolve((own, other))
        except ConflictError as exc:
            return tuple(exc.core)
    return tuple(_conflict_of(system, records).core)  # pragma: no cover - a pair always clashes


def requirement_core(
    system: Checked,
    holds: Callable[[Analysis], bool],
    engine: Engine,
    focus: str | None = None,
    *,
    keep: Sequence[str] = (),
    cache: CoreCache | None = None,
    hints: Sequence[frozenset[str]] = (),
    grow_from: Iterable[str] = (),
) -> list[Requirement]:
    """Requirements for which ``holds`` when the policy keeps only them (with ``keep``), and
    not when any one of them (other than ``keep``) is dropped.

    QuickXplain over the requirements in canonical order (priority, then name), with "the
    finding holds" as its "unsat"; then each member is tried once more, since findings like
    no-finish need not be monotone in the requirements. Each question analyses the smaller
    system with ``engine``; analyses are shared through ``cache`` by the findings of one
    report (keyed by the requirements kept and the focus).

    ``hints`` are guesses: the requirements around the finding's subject, and the cores of
    earlier findings (``Hints``). They are tried smallest first (skipping those hardly
    smaller than the whole policy); when the finding holds with a guess's requirements
    alone, the search stays among them, where every question is about a small system.
    """
    reqs = sorted(system.requirements, key=lambda r: (-r.priority, r.name))
    shared = cache if cache is not None else CoreCache()
    if shared.expired():
        return reqs  # past the deadline: every requirement stays (right, not minimal)
    bit = {r.name: 1 << i for i, r in enumerate(reqs)}
    keep_mask = reduce(or_, (bit[n] for n in keep), 0)
    candidates = [r.name for r in reqs if r.name not in keep]
    full = reduce(or_, (bit[n] for n in candidates), 0)
    memo: dict[int, bool] = {full | keep_mask: True}  # the finding was found on the policy

    examples: list[tuple[Event, ...]] = []  # histories that refuted the finding, newest first
    guided = _guided(system, focus)

    def holds_for(mask: int) -> bool:
        mask |= keep_mask
        found = memo.get(mask)
        if found is None and shared.expired():
            return False  # past the deadline: keep what this question would have dropped
        if found is None:
            names = frozenset(r.name for r in reqs if bit[r.name] & mask)
            sub = system.subsystem(sorted(names))
            # A history that refuted the finding on another subsystem often refutes it here
            # too (dropping requirements mostly keeps a step allowed): replaying it costs a
            # few decisions, an analysis far more.
            if (
                focus is not None
                and isinstance(sub, System)
                and any(_shows(sub, trace, focus) for trace in examples[:EXAMPLES])
            ):
                memo[mask] = False
                return False
            found, example = _holds(sub, names, holds, engine, focus, shared)
            memo[mask] = found
            if example is not None and example not in examples:
                examples.insert(0, example)
        return found

    def mask_of(names: Iterable[str]) -> int:
        return reduce(or_, (bit[n] for n in names if n in bit), 0)

    def grown() -> list[str] | None:
        """A pool for which the finding holds, grown from ``grow_from`` by counterexamples:
        while the pool's subsystem shows a history refuting the finding (the first one a
        breadth-first explicit search finds), add the requirement that, with the pool and
        the ones scanned before it, stops that history on the whole policy (``_blocker``).
        Each step asks about a system about as small as the core. When the short search
        (``QUICK_STATES``) finds no such history, the engine decides, and if it finds the
        finding refuted, a search of up to ``REFUTE_STATES`` looks for the first history.
        None when a step finds no history (within that search or the deadline) or no
        blocker."""
        # INVARIANT: only called when `guided`, i.e. `system` is a `System` and `focus` set.
        assert isinstance(system, System) and focus is not None
        start = set(grow_from)
        pool = [n for n in candidates if n in start]
        # Blockers are looked for among the requirements of the smallest guesses first.
        unranked = len(candidates) + 1
        size = {n: min((len(h) for h in hints if n in h), default=unranked) for n in candidates}
        ranked = sorted(candidates, key=lambda n: size[n])
        while memo.get(mask := mask_of(pool) | keep_mask) is not True:
            if shared.expired():
                return None  # past the deadline: no growth (the question asks nothing)
            names = frozenset([*pool, *keep])
            sub = system.subsystem(sorted(names))
            trace = _example_of(_quick(sub, names, focus, shared), focus)
            if trace is None:
                # No history refutes it within the short search: the engine decides. When
                # it finds the finding refuted, a longer search looks for the first history
                # that shows it (the engine's own history would make the growth, and so
                # the core, depend on which engine answered). Asking the engine first costs
                # a question where the longer search finds a history at once; searching
                # first cost far more where it finds none (on `mixed-20-40-4`, 80 ms of
                # search against the engine's 14 ms to find the finding holds).
                if holds_for(mask):
                    break
                trace = _example_of(_search(sub, focus, REFUTE_STATES, shared.deadline), focus)
                if trace is None:
                    return None
            memo[mask] = False  # the history refutes it
            rest = [n for n in ranked if n not in pool]
            added = _blocker(system, names, rest, trace, focus)
            if added is None:
                return None
            pool.append(added)
        return [n for n in candidates if n in pool]

    if holds_for(0):
        core_names: list[str] = []
    else:
        tries: list[frozenset[str]] = []
        for hint in hints:
            if hint in tries or len(hint) * 4 > len(candidates) * 3:
                continue  # tried, or hardly smaller than everything: no help
            tries.append(hint)
        # Smallest first: a question about a small system is cheap, and the search then
        # stays in a small pool. Small guesses first, then the pool grown from
        # counterexamples, then the larger guesses.
        tries.sort(key=len)
        small = [h for h in tries if len(h) <= SMALL_GUESS]
        large = [h for h in tries if len(h) > SMALL_GUESS]
        found = next((h for h in small if holds_for(mask_of(h))), None)
        pool = None if found is None else [n for n in candidates if n in found]
        if pool is None and guided:
            pool = grown()
        if pool is None:
            found = next((h for h in large if holds_for(mask_of(h))), None)
            pool = candidates if found is None else [n for n in candidates if n in found]
        core_names = quickxplain(pool, bit, lambda m: not holds_for(m))
        if not holds_for(mask_of(core_names)):
            core_names = list(pool)  # not monotone: start from everything
    changed = True
    while changed and not shared.expired():
        changed = False
        for name in list(core_names):
            rest = reduce(or_, (bit[n] for n in core_names if n != name), 0)
            if holds_for(rest):
                core_names.remove(name)
                changed = True
    chosen = set(core_names) | set(keep)
    return [r for r in reqs if r.name in chosen]


SMALL_GUESS = 8
"""Guesses up to this size are tried before a core search grows its own pool."""

IMPLIED_PAIRS = 8
"""Pairs (a tool a dead requirement mentions, one it watches) tried for a guess that other
requirements already keep the first closed until the second runs (``Relaxed.closed_until``)."""

QUICK_STATES = 64
"""States a core question first explores explicitly: enough to settle small subsystems
exactly, or to refute the finding with a witness, before any full analysis."""


EXAMPLES = 16
"""Histories that refuted a finding on earlier subsystems, replayed on the next one."""


def _shows(sub: System, trace: tuple[Event, ...], focus: str) -> bool:
    """Whether ``trace``, replayed on ``sub`` (every step allowed when taken, under some
    check values), ends where the focused "never" finding fails: ``final_answer`` allowed
    within the budget (``finish:N``), the tool allowed (``tool:T``), the requirement live
    (``live:R``)."""
    kind, _, subject = focus.partition(":")
    if kind == "finish":
        return len(trace) <= int(subject) and reaches(sub, trace, FINAL_ANSWER)
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


def _example_of(analysis: Analysis, focus: str) -> tuple[Event, ...] | None:
    """The explicit search's first history refuting the "never" finding ``focus``."""
    key = _first_key(focus)
    trace = None if key is None else analysis.firsts.get(key)
    if trace is not None and key == "finish" and len(trace) > int(focus[7:]):
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


REFUTE_STATES = 4096
"""States a core search's growth explores for the first history refuting the finding on a
pool, once the engine has found the finding refuted there (rather than giving up and turning
to the larger guesses, whose systems at 50 tools may cost more than the whole policy)."""


def _search(sub: System, focus: str | None, max_states: int, deadline: float | None) -> Analysis:
    """A breadth-first explicit search of ``sub`` for the question ``focus`` (liveness only
    of its requirement, if any), stopping at the first history refuting a "never" finding
    (``_first_key``), after ``max_states`` states, or at ``deadline``."""
    live = focus[5:] if focus is not None and focus.startswith("live:") else False
    until = _first_key(focus)
    return analyse(sub, max_states=max_states, deadline=deadline, live=live, until=until)


def _quick(sub: System, names: frozenset[str], focus: str | None, cache: CoreCache) -> Analysis:
    """The short explicit search of ``sub`` (``QUICK_STATES``), shared through ``cache``
    by the questions it answers alike (every question but a "never" one, and a liveness
    question, looks at the same search)."""
    live = focus if focus is not None and focus.startswith("live:") else None
    key = (names, focus if _first_key(focus) is not None else live, True)
    quick = cache.get(key)
    if quick is None:
        quick = cache[key] = _search(sub, focus, QUICK_STATES, cache.deadline)
    return quick


def _holds(
    sub: Any,
    names: frozenset[str],
    holds: Callable[[Analysis], bool],
    engine: Engine,
    focus: str | None,
    cache: CoreCache,
) -> tuple[bool, tuple[Event, ...] | None]:
    """Whether the finding holds on ``sub``, the subsystem keeping ``names``, and a history
    refuting it when the engine gave one: a short explicit search settles it when it covers
    the whole subsystem, or refutes it when it already shows a counterexample (an allowed
    tool, a live requirement, a finish in time); otherwise the engine decides."""
    if isinstance(sub, System):
        quick = _quick(sub, names, focus, cache)
        if quick.complete:
            return holds(quick), None
        if focus is not None and focus != "no-finish" and not holds(quick):
            # These findings claim "never": what the short search saw is a counterexample.
            return False, None
    full_key = (names, focus, False)
    analysis = cache.get(full_key)
    if analysis is None and focus is not None and focus.startswith("tool:"):
        # One whole analysis of a subsystem answers the question for every tool.
        analysis = cache.get((names, "tools", False))
    if analysis is None:
        analysis = cache[full_key] = engine(sub, focus)
        if focus is not None and focus.startswith("tool:") and not analysis.partial:
            cache[(names, "tools", False)] = analysis
    if analysis.complete:
        return holds(analysis), analysis.example
    if focus is not None and focus.startswith("finish:"):
        # A budget question is about histories of at most N steps: a search that decided
        # every state that deep answers it exactly, however it was stopped after that.
        return analysis.depth_done >= int(focus[7:]) and holds(analysis), analysis.example
    # An analysis cut short answers "no": nothing is dropped on partial evidence.
    return False, None


def _cones(system: Checked, tools: set[str], *, forcing: bool) -> list[frozenset[str]]:
    """Guesses from small to large for findings whose cause is usually local (a dead tool or
    requirement): the requirements around ``tools`` one, two and three rounds out, then the
    whole cone of influence."""
    local = tools - {FINAL_ANSWER}
    near = [_around(system, local, rounds) for rounds in (1, 2, 3)] if local else []
    return [*near, cone_of(system, tools, forcing=forcing)]


def _around(system: Checked, tools: set[str], rounds: int) -> frozenset[str]:
    """The requirements within ``rounds`` of ``tools``, where a requirement touches the tools
    its rules mention and the tools whose calls change its view, and ``final_answer`` links
    nothing (every requirement that prevents a stop mentions it)."""
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    touches, links = _watched(system), _watched(system, linking=True)
    for name, mentioned in mentions.items():
        touches.setdefault(name, set()).update(mentioned)
        links.setdefault(name, set()).update(mentioned)
    chosen: set[str] = set()
    reach = set(tools)
    for _ in range(rounds):
        added = {n for n, ts in touches.items() if n not in chosen and ts & reach}
        if not added:
            break
        chosen |= added
        for name in added:
            reach |= links[name] - {FINAL_ANSWER}
    return frozenset(chosen)


Dependency = tuple[str, str, str]
"""A requirement, a tool its rules mention, and a tool whose calls change its view."""


def _dependencies(system: Checked) -> list[Dependency]:
    """Per component (a requirement tabulated as factors has one per factor), each tool its
    rules mention paired with each tool that moves its view; global views (see
    ``_watched``) give none."""
    out: list[Dependency] = []
    for comp in system.components:
        if comp.is_global(_callable_count(system)):
            continue
        mentioned = sorted(comp.mentions - {FINAL_ANSWER})
        name = comp.requirement.name
        out.extend((name, m, w) for m in mentioned for w in comp.watched if m != w)
    return out


def _callable_count(system: Checked) -> int:
    return sum(t != FINAL_ANSWER for t in system.tools)


def _between(system: Checked, name: str, dependencies: list[Dependency]) -> list[frozenset[str]]:
    """Guesses for why requirement ``name`` is never live: the requirements on chains of
    dependencies from the tools it mentions and from the tools it watches to a common tool.

    A component that watches `w` and mentions `m` makes `m` depend on `w` ("`a` only after
    `b`": `a` on `b`; "`c` only before `a`": `c` on `a`). "`c` only before `a`" is never
    live when `a` needs `b` first and `c` is given up once `b` ran: `a` and `c` both depend
    on `b`. The guesses: the requirements on the shortest such pairs of chains, then on
    pairs one link longer."""
    edges = [(other, m, w) for other, m, w in dependencies if other != name]
    mine = [(m, w) for other, m, w in dependencies if other == name]
    ends = ({m for m, _ in mine}, {w for _, w in mine})
    if not mine:
        return []

    def forward(start: set[str]) -> dict[str, int]:
        dist = dict.fromkeys(start, 0)
        frontier, d = set(start), 0
        while frontier:
            d += 1
            frontier = {w for _, m, w in edges if m in frontier} - dist.keys()
            dist.update(dict.fromkeys(frontier, d))
        return dist

    def backward(goal: str) -> dict[str, int]:
        dist = {goal: 0}
        frontier, d = {goal}, 0
        while frontier:
            d += 1
            frontier = {m for _, m, w in edges if w in frontier} - dist.keys()
            dist.update(dict.fromkeys(frontier, d))
        return dist

    near = (forward(ends[0]), forward(ends[1]))
    common = near[0].keys() & near[1].keys()
    if not common:
        return []
    out: list[frozenset[str]] = []
    least = min(near[0][t] + near[1][t] for t in common)
    for slack in (0, 1):
        on: set[str] = set()
        for goal in common:
            if near[0][goal] + near[1][goal] > least + slack:
                continue
            back = backward(goal)
            for dist in near:
                # An edge on a shortest chain from this end to ``goal``.
                on |= {
                    other
                    for other, m, w in edges
                    if m in dist and w in back and dist[m] + 1 + back[w] == dist[goal]
                }
        if on and frozenset(on) not in out:
            out.append(frozenset(on))
    return out


def _lengthening(system: Checked) -> list[frozenset[str]]:
    """Guesses for a budget's core: the requirements that make a run long.

    The requirements that keep a run from stopping at first (a minimum of calls) and those
    that hard-force a tool; then, until nothing changes, those that deny at first a tool the
    chosen ones need called or force (an "only after"), whose prerequisites — the tools
    they watch — are then needed too. The first guess stops before that closure; the second
    is the closure. (On the benchmark's `mixed-20-40-8`, the budget holds with the first
    guess's 13 requirements, and its core has 4; searched among all 40, it had 12.)"""
    comps = [c for c in system.components if not c.requirement.yielding]
    chosen: set[str] = set()
    needed: set[str] = set()
    for comp in comps:
        bound = distances(comp, system.tools)
        forced = comp.hard_forces
        if bound.steps[0] > 0 or forced:
            chosen.add(comp.requirement.name)
            needed |= forced | {t for t, calls in bound.calls.items() if calls[0] > 0}
    if not chosen:
        return []
    out = [frozenset(chosen)]
    changed = True
    while changed:
        changed = False
        for comp in comps:
            if comp.requirement.name not in chosen and comp.denied(0) & needed:
                chosen.add(comp.requirement.name)
                needed |= set(comp.watched) - {FINAL_ANSWER}
                changed = True
    out.append(frozenset(chosen))
    return out


def _mentioning(system: Checked, tools: Iterable[str]) -> frozenset[str]:
    """The requirements whose rules mention one of ``tools``."""
    wanted = set(tools)
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    return frozenset(name for name, mentioned in mentions.items() if mentioned & wanted)


def _mentions_of(system: Checked, name: str) -> frozenset[str]:
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    return mentions.get(name, frozenset())


def _watched(system: Checked, *, linking: bool = False) -> dict[str, set[str]]:
    """Per requirement, the tools whose calls change its view. With ``linking``, not those
    of a global view (one that most tools move: a step counter, the last tool called): it
    would link every tool to every other, and a guess grown along links would be the whole
    policy. (A fresh copy: callers add to it. A system without components has none.)"""
    known: dict[bool, dict[str, frozenset[str]]] = getattr(system, "watching", {linking: {}})
    return {name: set(tools) for name, tools in known[linking].items()}


def _singled_out(system: Checked) -> dict[str, set[str]]:
    """Per requirement, the tools whose calls move one of its views otherwise than most
    tools do: all the tools a local view watches; for a global view (a step counter, the
    last tool called), those outside the class that most of its tools share (the trigger of
    a force after a tool, the target a count watches), which the view waits for. A view
    that tells most tools apart (the cycle guard's history) singles out none."""
    out: dict[str, set[str]] = {}
    comps: Sequence[Component] = getattr(system, "components", ())
    callable_count = _callable_count(system)
    for comp in comps:
        mine = out.setdefault(comp.requirement.name, set())
        watched = comp.watched
        if not comp.is_global(callable_count):
            mine.update(watched)
            continue
        common, size = Counter(comp.classes[t] for t in watched).most_common(1)[0]
        if size * 2 > len(watched):
            mine.update(t for t in watched if comp.classes[t] != common)
    return out


def cone_of(system: Checked, tools: set[str], *, forcing: bool) -> frozenset[str]:
    """The requirements that can influence ``tools``: those whose rules mention them, then,
    transitively, those whose rules mention a tool the former watch (a call that changes
    their view); with ``forcing``, every requirement that forces a tool (a forced tool
    excludes all others). A cone-of-influence guess for a requirement-level core: checked,
    never trusted."""
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    watched = _watched(system, linking=True)
    forcers: frozenset[str] = getattr(system, "forcing", frozenset())
    chosen: set[str] = set(forcers) if forcing else set()
    reach = set(tools)
    changed = True
    while changed:
        changed = False
        for name, mentioned in mentions.items():
            if name not in chosen and mentioned & reach:
                chosen.add(name)
                changed = True
        for name in list(chosen):
            new = watched.get(name, set()) - reach
            if new:
                reach |= new
                changed = True
    return frozenset(chosen)


def requirement_entry(req: Requirement) -> CoreEntry:
    """How a requirement-level core cites a requirement: ``requirement NAME (TYPE)``."""
    return CoreEntry(
        requirement=req.name,
        priority=req.priority,
        rule=f"requirement {req.name} ({requirement_type(req)})",
    )


def core_entries(system: Checked, reqs: Sequence[Requirement]) -> tuple[CoreEntry, ...]:
    return tuple(requirement_entry(r) for r in reqs)


def requirement_type(req: Requirement) -> str:
    """The policy-file type of a built-in, else the class name."""
    from ruleengine.requirements import (
        AskPermissionRequirement,
        ConditionalRequirement,
        CycleGuard,
    )

    if isinstance(req, ConditionalRequirement):
        return "conditional"
    if isinstance(req, AskPermissionRequirement):
        return "ask_permission"
    if isinstance(req, CycleGuard):
        return "cycle_guard"
    return type(req).__name__
