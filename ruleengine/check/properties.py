"""SPEC §8/§11: from an engine's verdicts to findings, each with its core and shortest trace.

Conflict cores (deadlock, forced-conflict) come from the runtime's reasoner at the witness's
last state; a forced-tie's core is the tied forcing rules. The other findings get a
*requirement-level* core: requirements for which the finding holds when the policy keeps
only them, and disappears when any one of them is dropped (``requirement_core``), each
checked by running the same engine on the smaller system.

This module orders the findings (``findings``), runs their core searches in lanes, and
owns the requirement-level core search and the questions it asks of subsystems. The
findings' wording and the conflict findings are ``conflicts``'; the guesses a core search
starts from are ``guesses``'; the histories that refute a finding on a subsystem, and grow
a core search's pool, are ``counterexamples``'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial, reduce
from operator import or_
from typing import Any

from ruleengine._search import quickxplain
from ruleengine.check.analysis import Analysis, Witness, settled
from ruleengine.check.bounds import Remembered
from ruleengine.check.conditions import condition_findings
from ruleengine.check.conflicts import _after, _deadlock, _finding, _forced_conflict, _steps, _tie
from ruleengine.check.counterexamples import (
    _blocker,
    _example_of,
    _first_key,
    _guided,
    _search,
    _shows,
    directed,
)
from ruleengine.check.counterexamples import _variants as _variants
from ruleengine.check.followed import never_live, only_stops
from ruleengine.check.guesses import (
    _between,
    _cones,
    _dependencies,
    _lengthening,
    _mentioning,
    _mentions_of,
    _singled_out,
    _stopping,
    _watched,
    cone_of,
)
from ruleengine.check.landmarks import least_steps
from ruleengine.check.lanes import run_jobs
from ruleengine.check.orders import Orders, never_finishes, waits_in_vain
from ruleengine.check.progress import note as note_progress
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.report import FINDING_IDS, Finding
from ruleengine.check.seek import SEEK_STATES, Estimates, searched, seek, seek_within
from ruleengine.check.system import Checked, Event, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import CoreEntry
from ruleengine.requirements.arguments import ArgumentsRequirement
from ruleengine.requirements.base import Requirement

__all__ = ["Engine", "findings", "requirement_core", "requirement_entry"]
# _variants is imported as itself (re-exported): it is still reached through this module,
# which defined it before the split.

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
        self._distances: Remembered | None = None
        self.budgets: dict[
            tuple[frozenset[str], int], tuple[bool, tuple[Event, ...] | None] | None
        ] = {}
        """``_budget_shown``'s answers, by the requirements kept and the budget: a core
        search's growth asks first, and the same question's ``_holds`` then again."""

    def distances(self, tools: Sequence[str]) -> Remembered:
        """The components' relaxed distances over ``tools`` (the report's: its subsystems
        share them), remembered for the questions of one report."""
        if self._distances is None or self._distances.tools != tools:
            self._distances = Remembered(tools)
        return self._distances

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
    known: Sequence[Finding] = (),
    reported: Callable[[list[Finding]], None] | None = None,
) -> list[Finding]:
    """Every finding of ``analysis``, in SPEC order, once per subject. ``deadline`` (a
    ``time.monotonic()`` value) bounds the searches the core searches run besides
    ``engine``'s (which has its own limits). ``cut``: where ``engine`` records answers the
    limits cut short (a lane run in a child sends its own back, see ``_in_lanes``).
    ``known``: findings with a requirement-level core found before for this analysis
    (``reported`` by another process that did not finish), taken as they are.
    ``reported`` is given those found so far (with ``known``) each time one more is found in
    this process, for a caller that may not see the end."""
    reuse = {_subject(f): f for f in known}
    sent: dict[tuple[str, str | None, str | None], Finding] = {}

    def found_one(finding: Finding) -> None:
        found_all([finding])

    def found_all(found: Iterable[Finding | None]) -> None:
        fresh = {
            _subject(f): f
            for f in found
            if f is not None and _subject(f) not in reuse and _subject(f) not in sent
        }
        if reported is not None and fresh:
            sent.update(fresh)
            reported([*known, *sent.values()])

    def reused(job: _Job, subject: tuple[str, str | None, str | None]) -> _Job:
        found = reuse.get(subject)
        if found is None:
            return job
        return lambda _: (found, frozenset(c.requirement for c in found.core))

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
    # requirements (whose guesses read the dead tools' cores and the budget's), each phase in
    # lanes.
    first: list[_Job] = []
    no_finish = analysis.no_finish
    # An incomplete analysis that decides verdicts one by one (``compositional``) reports
    # the ones it decided.
    if no_finish is not None and settled(analysis, "no-finish"):
        first.append(
            reused(
                lambda h: _no_finish(system, no_finish, engine, cache, h),
                ("no-finish", None, None),
            )
        )
    if max(analysis.depth_done, analysis.finish_after) >= max_iterations - 1 or settled(
        analysis, "budget"
    ):
        first.append(
            reused(
                lambda h: _budget(system, analysis, max_iterations, engine, cache, h),
                ("budget", None, None),
            )
        )
    dead_tools = [
        t
        for t in system.tools
        if t != FINAL_ANSWER and t not in analysis.allowed_tools and settled(analysis, f"tool:{t}")
    ]
    dead_requirements = [
        r.name
        for r in system.requirements
        if r.name not in analysis.live
        and not isinstance(r, ArgumentsRequirement)
        and settled(analysis, f"live:{r.name}")
    ]
    relaxed = None
    if dead_tools or dead_requirements:
        relaxed = Relaxed(system.components, system.tools)
    if relaxed is not None:
        # The relaxed product's closing sets, found in tool order, each search inside the
        # earlier ones (cheap: no engine, no decision), are the dead tools' first guesses.
        earlier: list[list[int]] = []
        for tool in dead_tools:
            closing = relaxed.closing(tool, earlier, deadline=deadline)
            first.append(
                reused(
                    partial(_dead_tool, system, tool, engine, cache, closing=closing),
                    ("dead-tool", tool, None),
                )
            )
    found = _in_lanes(first, hints, cut, each=found_one)
    found_all(found)  # with those a lane run in the other process found
    note_progress(findings=len(out) + sum(f is not None for f in found))
    closed = {
        f.tool: frozenset(c.requirement for c in f.core)
        for f in found
        if f is not None and f.id == "dead-tool" and f.tool
    }
    if relaxed is not None:
        context = _DeadRequirements(system, relaxed, closed)
        # A requirement with conditions on arguments acts when a call is admitted (which
        # arguments, whether to ask), which a pass shows only in part: it is never dead for
        # not changing one. (Whether its conditions ever decide is a question of implication
        # between conditions, not asked here.)
        dead = dead_requirements
        second = [
            reused(
                partial(_dead_requirement, context, name, engine, cache),
                ("dead-requirement", None, name),
            )
            for name in dead
        ]
        found += _in_lanes(second, hints, cut, context.lanes(dead), each=found_one)
    out.extend(f for f in found if f is not None)
    note_progress(findings=len(out))
    if analysis.tie is not None:
        out.append(_tie(system, analysis.tie))
    # A tool whose conditions no arguments satisfy is dead for that reason: the error says so,
    # and the dead-tool warning would say it again.
    on_arguments = condition_findings(system.requirements)
    never = {f.tool for f in on_arguments if f.id == "unsatisfiable-condition"}
    out = [f for f in out if not (f.id == "dead-tool" and f.tool in never)]
    out.extend(on_arguments)
    out = _outputs_named(system, out)
    rank = {finding_id: i for i, finding_id in enumerate(FINDING_IDS)}
    return sorted(out, key=lambda f: rank[f.id])  # stable: subjects keep declared order


def _subject(finding: Finding) -> tuple[str, str | None, str | None]:
    """What a finding is about: its id, tool and requirement (one finding each)."""
    return finding.id, finding.tool, finding.requirement


def _outputs_named(system: Checked, found: list[Finding]) -> list[Finding]:
    """The findings, those that need particular values of opaque checks saying whose: the
    run's values (conditions on arguments that read them) or custom checks. Where a policy
    has both, a finding that needs some is said to need both (which, the check cannot
    tell)."""
    components = system.components
    reads = any(isinstance(c.requirement, ArgumentsRequirement) and c.opaque for c in components)
    if not reads:
        return found
    custom = any(
        not isinstance(c.requirement, ArgumentsRequirement) and c.opaque for c in components
    )
    return [
        f.model_copy(update={"depends_on_tool_outputs": True, "depends_on_custom_checks": custom})
        if f.depends_on_custom_checks
        else f
        for f in found
    ]


_Job = Callable[["Hints"], "tuple[Finding, frozenset[str]] | None"]
"""A core search: from the guesses of the lane's earlier findings, a finding and what its
core adds to those guesses (None: no finding)."""


def _in_lanes(
    jobs: Sequence[_Job],
    hints: Hints,
    cut: list[str] | None,
    lanes: Sequence[Sequence[int]] | None = None,
    each: Callable[[Finding], None] | None = None,
) -> list[Finding | None]:
    """Each job's finding, in order. The jobs are dealt to lanes (``lanes``: the indices of
    each lane's jobs, in order; by default two, dealt in turn), run as independent jobs
    (``lanes.run_jobs``: two processes claim lanes from either end when the machine
    allows). A lane starts from its own copy of ``hints`` and adds each of its findings'
    cores to it: a job's guesses depend on its lane alone, so every finding is the same
    whichever process ran a lane and when. Afterwards ``hints`` gets every core in job order
    (the next phase's start). ``each`` is given every finding a lane run in this process
    finds, as it does (a lane the other process runs sends its findings at its end)."""
    home = os.getpid()

    def lane(mine: Sequence[_Job]) -> list[_Done]:
        own = hints.copy()
        out: list[_Done] = []
        for job in mine:
            start = len(cut) if cut is not None else 0
            got = job(own)
            if got is not None:
                own.add(got[1])
                if each is not None and os.getpid() == home:
                    each(got[0])
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


def _no_finish(
    system: Checked, witness: Witness, engine: Engine, cache: CoreCache, hints: Hints
) -> tuple[Finding, frozenset[str]]:
    core = requirement_core(
        system,
        lambda a: a.no_finish is not None,
        engine,
        "no-finish",
        cache=cache,
        hints=[cone_of(system, {FINAL_ANSWER}, forcing=True), *_stopping(system), *hints.guesses()],
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
    # Where no history lets the run stop at all, what keeps it from stopping forever (the
    # no-finish's guesses: a demand and what may deny it) keeps it so within the budget
    # too: small guesses, cheap to ask (`indep-conditionals-50-100-5`: "`check_45` at
    # least twice" and "at most once" hold it; searched from the lengthening guesses, the
    # core took 25 s of questions about subsystems of 21 to 37 requirements).
    never = least is None and settled(analysis, "budget")
    core = requirement_core(
        system,
        fails,
        engine,
        f"finish:{max_iterations - 1}",
        cache=cache,
        hints=[
            *_lengthening(system),
            cone,
            *(_stopping(system) if never else ()),
            *hints.guesses(),
        ],
    )
    shown = analysis.finish_shown
    if least is None and not settled(analysis, "budget") and shown is not None:
        # As below, and a history of `shown` steps lets the run stop: min_steps lies between
        # (still unknown, null).
        why = (
            f"`final_answer` needs more than "
            f"{_steps(max(analysis.depth_done, analysis.finish_after))} first, and a history "
            f"of {_steps(shown)} lets the run stop (the search stopped before showing whether "
            f"fewer do)"
        )
    elif least is None and not settled(analysis, "budget"):
        # The search stopped after deciding every state up to depth_done (or a lower bound
        # showed as much): `final_answer` is not allowed that far, which is all it showed
        # (min_steps stays unknown, null).
        why = (
            f"`final_answer` needs more than "
            f"{_steps(max(analysis.depth_done, analysis.finish_after))} first (the search "
            f"stopped there, without showing how many it needs, or whether it is ever allowed)"
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
        self.stopping = _stopping(system, STOPPING_ROUNDS)
        """Guesses for why the run never stops, for requirements that only keep it from
        stopping (``_stopping``)."""

    def only_stops(self, name: str) -> bool:
        """Whether requirement ``name`` only keeps the run from stopping (``followed.only_stops``;
        never for a system given as a reasoner)."""
        return isinstance(self.system, System) and only_stops(self.system, name)

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
        closing = relaxed.closed_until(tool, first, mine, succeeded=True, deadline=cache.deadline)
        if closing is None:
            closing = relaxed.closed_until(
                tool, first, mine, succeeded=False, deadline=cache.deadline
            )
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
        # One that only keeps the run from stopping is dead where the others never let it
        # stop: a demand of theirs, and what denies it forever.
        likely=[g | {name} for g in context.stopping] if context.only_stops(name) else (),
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
    likely: Sequence[frozenset[str]] = (),
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
    ``likely`` are guesses tried with the small ones whatever their size (up to
    ``LIKELY_GUESS``), before the search grows a pool of its own.
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
            trace = _example_of(sub, _quick(sub, names, focus, shared), focus)
            if trace is None:
                # A directed search finds a history where a breadth-first one cannot reach
                # that deep (at 50 tools); like the breadth-first one it depends on no
                # engine, so the growth does not either.
                shown = _shown_directed(sub, focus, shared)
                if shown is not None:
                    memo[mask], trace = shown
                    if memo[mask]:
                        break
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
                trace = _example_of(sub, _search(sub, focus, REFUTE_STATES, shared.deadline), focus)
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
        for hint in (*hints, *likely):
            if hint in tries or len(hint) * 4 > len(candidates) * 3:
                continue  # tried, or hardly smaller than everything: no help
            tries.append(hint)
        # Smallest first: a question about a small system is cheap, and the search then
        # stays in a small pool. Small guesses first, then the pool grown from
        # counterexamples, then the larger guesses.
        tries.sort(key=len)
        early = {h for h in likely if len(h) <= LIKELY_GUESS}
        small = [h for h in tries if len(h) <= SMALL_GUESS or h in early]
        large = [h for h in tries if h not in small]
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

LIKELY_GUESS = 16
"""The largest of a core search's likely guesses tried with the small ones."""

STOPPING_ROUNDS = 1
"""Rounds the guesses for a requirement dead because the others never let the run stop
are grown by (``_stopping``): `indep-conditionals-50-100-5`'s "`check_45` at least twice"
is dead through a chain of two forces and an "only before" that keeps "`plan_29` at least
twice" from ever being met, one round out (12 requirements; else the core search asks
about subsystems of 22 to 30)."""

IMPLIED_PAIRS = 8
"""Pairs (a tool a dead requirement mentions, one it watches) tried for a guess that other
requirements already keep the first closed until the second runs (``Relaxed.closed_until``)."""

QUICK_STATES = 64
"""States a core question first explores explicitly: enough to settle small subsystems
exactly, or to refute the finding with a witness, before any full analysis."""

EXAMPLES = 16
"""Histories that refuted a finding on earlier subsystems, replayed on the next one."""

REFUTE_STATES = 4096
"""States a core search's growth explores for the first history refuting the finding on a
pool, once the engine has found the finding refuted there (rather than giving up and turning
to the larger guesses, whose systems at 50 tools may cost more than the whole policy)."""


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
    tool, a live requirement, a finish in time); a requirement that waits for a tool every
    finish calls, or only keeps the stop closed where the others never let the run stop, is
    dead (``_waits``); a tool the orders of the histories that would call it rule out is
    (``Orders.never_called``); otherwise the engine decides."""
    if isinstance(sub, System):
        quick = _quick(sub, names, focus, cache)
        if quick.complete:
            return holds(quick), None
        if focus is not None and focus != "no-finish" and not holds(quick):
            # These findings claim "never": what the short search saw is a counterexample.
            return False, None
    if isinstance(sub, System) and focus is not None and focus.startswith("finish:"):
        shown = _budget_shown(sub, int(focus[7:]), cache)
        if shown is not None:
            return shown
    tool = focus[5:] if focus is not None and focus.startswith("tool:") else None
    if isinstance(sub, System) and tool is not None and Orders(sub).never_called(tool):
        return True, None  # the orders of the histories that would call it clash
    live = focus is not None and focus.startswith("live:")
    if live and isinstance(sub, System) and _waits(sub, str(focus)[5:]):
        return True, None  # it only waits: for a tool every finish calls, or in vain
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


def _waits(sub: System, name: str) -> bool:
    """Whether requirement ``name`` of ``sub`` only waits, and is dead so: for a tool every
    finish of the others calls (``never_live``), or where the others never let the run stop
    (``waits_in_vain``)."""
    return never_live(sub, name) or waits_in_vain(sub, name)


def _shown_directed(
    sub: System, focus: str, cache: CoreCache
) -> tuple[bool, tuple[Event, ...] | None] | None:
    """What a "never" question on ``sub`` gets from searches directed at its goal, which
    need no engine (deterministic, like every search here): a budget's answer
    (``_budget_shown``); "refuted" with a history to the tool of ``tool:T``, or to where
    the requirement of ``live:R`` is live (``counterexamples.directed``, ``SEEK_STATES``
    states a search). None where they show nothing."""
    if focus.startswith("finish:"):
        return _budget_shown(sub, int(focus[7:]), cache)
    found = directed(
        sub,
        focus,
        cache.distances(sub.tools),
        limit=searched(sub, SEEK_STATES),
        deadline=cache.deadline,
    )
    return None if found is None else (False, found)


ENGINE_FIRST = 4
"""Requirements up to which a budget question of a core search goes to the engine before
the longer searches: on `indep-mixes-20-40-2`, "`check_03` at least three times" and "at
most twice" never finish, which the longer search showed by meeting every state within
reach, 3 s; the engine, milliseconds."""

BOUND_SECONDS = 1.0
"""The longest one budget question of a core search seeks the calls soft forces cost
(``landmarks.least_steps``) before the engine is asked."""


def _budget_shown(
    sub: System, steps: int, cache: CoreCache
) -> tuple[bool, tuple[Event, ...] | None] | None:
    """Whether no history of ``sub`` of at most ``steps`` steps lets the run stop, where
    that shows without the engine: yes where the tools every finishing history calls
    number more (``least_steps`` without forces: deterministic, a few milliseconds), or the
    calls each tool needs (``Estimates.least_calls``), no
    with a history a directed search finds (``seek``, ``SEEK_STATES``), yes where those
    tools and the calls soft forces cost besides do (at most ``BOUND_SECONDS``), no with a
    history a longer search finds (``BUDGET_STATES``), yes where that search met every
    state within reach (``seek_within``: on `indep-approvals-50-100-0`, the budget core's
    questions about 13 to 19 requirements, each 0.3 to 1.2 s of the engine's, were
    settled so), and yes at once where the orders its needed calls keep clash
    (``orders.never_finishes``). None where none of these shows it:
    the engine decides. On random conditionals at 50 tools a budget core's question took
    the symbolic engine up to 300 s (its layers of a large subsystem), past the deadline.
    Remembered in ``cache`` (``CoreCache.budgets``)."""
    key = (frozenset(r.name for r in sub.requirements), steps)
    if key not in cache.budgets:
        cache.budgets[key] = _budget_answer(sub, steps, cache)
    return cache.budgets[key]


def _budget_answer(
    sub: System, steps: int, cache: CoreCache
) -> tuple[bool, tuple[Event, ...] | None] | None:
    """``_budget_shown``, computed."""
    least, needed = least_steps(sub, forced=False)
    if least > steps:
        return True, None
    if sub.mode == "strict" and not sub.skips:
        # Each tool as often as a component needs it called (a least count of calls).
        estimates = Estimates(sub, FINAL_ANSWER, cache.distances(sub.tools))
        each = estimates.least_calls(sub.initial, needed)
        if each is None or each > steps:
            return True, None
    refuted = _history_within(sub, steps, cache, searched(sub, SEEK_STATES))
    if refuted is not None:
        return refuted
    if never_finishes(sub):
        return True, None  # the orders its needed calls keep contradict each other
    if len(sub.requirements) <= ENGINE_FIRST:
        return None  # the engine decides a system this small in milliseconds
    until = time.monotonic() + BOUND_SECONDS
    if cache.deadline is not None:
        until = min(until, cache.deadline)
    if least_steps(sub, until, beyond=steps)[0] > steps:
        return True, None
    # The longer search, over every step once the helpful ones lead nowhere: where it
    # meets every state within reach and finds no history, none exists.
    found, none = seek_within(
        sub,
        FINAL_ANSWER,
        cache.distances(sub.tools),
        limit=searched(sub, BUDGET_STATES),
        within=steps,
        deadline=cache.deadline,
    )
    if found is not None and _shows(sub, found, f"finish:{steps}"):
        return False, found
    return (True, None) if none else None


def _history_within(
    sub: System, steps: int, cache: CoreCache, limit: int
) -> tuple[bool, tuple[Event, ...] | None] | None:
    """The answer "does not hold", with a history of at most ``steps`` steps that lets the run
    stop, where a directed search of ``limit`` states finds one; else None."""
    found = seek(
        sub,
        FINAL_ANSWER,
        cache.distances(sub.tools),
        limit=limit,
        within=steps,
        deadline=cache.deadline,
    )
    if found is not None and _shows(sub, found, f"finish:{steps}"):
        return False, found
    return None


BUDGET_STATES = 20_000
"""States the last directed search of a budget question decides before the engine is
asked (a second or two at 50 tools): on random conditionals at 50 tools, a budget core's
question about 87 requirements had a history of 19 steps that 2,000 states did not reach
and 20,000 did in 0.6 s, where the symbolic engine took 300 s."""


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
