"""Verdicts without the reachable set: projections prove the "never"s, searches find the rest.

Where the reachable set is too large for either engine (random conditionals over 50 tools:
beyond 10¹⁰ states, whose diagrams grow past what CUDD handles within a minute), each
verdict can still be decided on its own:

* **A "never"** (no deadlock, no forced conflict or tie, a tool never allowed, a requirement
  never live) is a set of states that no reachable state is in. ``Projections`` gives an
  *over-approximation* of the reachable set: every component's views reachable in the
  relaxed product (``relaxed``: a tool is open unless the component itself denies it or
  hard-forces another; soft forces only narrow, so in strict mode every step of the system
  is a step of each component on its own), conjoined, and refined by the exact reachable
  pairs of two components under the same relaxation. Where the set does not meet the
  target, no reachable state does: a proof, for histories of any length.
* **A "sometimes"** (a tool allowed, a requirement live, ``final_answer`` within the
  budget) is shown by one real history: the breadth-first probe's states, then directed
  searches (``seek``, and ``toward`` for a set of states), every state decided by the
  runtime's reasoner.
* **A finding's shortest trace** comes only from the breadth-first probe, exact up to its
  ``depth_done``: a deadlock, conflict or tie first met there is the one both engines
  report. A ``no-finish`` is the first probe state (in breadth-first order) that some
  component alone shows cannot finish (``bounds``), when every state before it was shown
  to finish by a real history.

What stays undecided is named (``Analysis.undecided``) and makes the analysis incomplete;
a complete one gives the same verdicts as the engines (``states`` counts the states the
probe explored, not the reachable ones). It applies where the symbolic engine does (literal
rules): it reads the encoding's pass diagrams. In priority mode a higher tier may override
a component's denial, so neither the projections nor anything else that reasons from the
components alone holds there: ``_Exact`` decides by the exact parts only (real histories,
layers forward and backward, proofs over the whole system's steps).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from ruleengine.check._bdd import nodes_held, pick
from ruleengine.check.analysis import Analysis, Witness, listed
from ruleengine.check.bounds import UNREACHABLE, Distances, Horizon, apart, horizon
from ruleengine.check.explicit import Outcome, _Explorer, callable_at, walk
from ruleengine.check.followed import Followed, only_stops
from ruleengine.check.gates import counted, gated, short_of
from ruleengine.check.histories import (
    LIVE_STATES,
    Finishing,
    Outcomes,
    along,
    shortened,
    toward,
)
from ruleengine.check.histories import Late as _Late
from ruleengine.check.landmarks import least_steps, told_apart
from ruleengine.check.orders import Orders, never_finishes, waits_in_vain
from ruleengine.check.projections import Projections, without_dead
from ruleengine.check.seek import SEEK_STATES, Estimates, searched, seek
from ruleengine.check.symbolic_encoding import EncodingBase
from ruleengine.check.symbolic_layers import _OutOfTime
from ruleengine.check.symbolic_priority import Ambiguous
from ruleengine.check.symbolic_verdicts import (
    Chase,
    StepsBack,
    Verdicts,
    _conflict_kind,
    _forced_on,
    _has_pass,
    _has_tie,
)
from ruleengine.check.system import Event, State, System
from ruleengine.check.unrolled import GaveUp, Unrolled
from ruleengine.check.walks import ROUND_STATES, live_on_walks
from ruleengine.ir import FINAL_ANSWER
from ruleengine.requirements import AskPermissionRequirement
from ruleengine.rules import lower
from ruleengine.state import STATUSES

__all__ = [
    "analyse_compositional",
    "answered",
    "decided_by_probe",
    "shortest_finish",
    "worth_going_on",
]

Node = Any
"""A BDD node of the encoding's manager."""

PROBE_STATES = 4096
"""States the breadth-first probe explores (its depth is exact)..."""

PROBE_SECONDS = 5.0
"""... within at most this many seconds, and ``PROBE_SHARE`` of the time left: a state may
take a second to decide where opaque checks multiply the passes (four cycle guards at 50
tools: 143 states in 30 s, each requirement's liveness decided under 16 valuations)."""

PROBE_SHARE = 0.1


LAYERS = 8
"""Breadth-first layers (of the encoding) searched for a finding's shortest witness..."""

LAYER_NODES = 50_000
"""... while the states they reached take at most this many BDD nodes..."""

LAYER_SECONDS = 1.0
"""... and computing them took at most this many seconds so far: past that a finding is
left to the layers backward from its states (``_back``), which give the shortest witness
too. On `indep-mixes-20-40-7` (priority mode) layers 7 and 8 took 0.9 s and 1.7 s and met no
state unable to finish, which the layers backward then showed none in 0.4 s."""

MANAGER_NODES = 2_000_000
"""BDD nodes the manager may hold before the steps back stop (a few hundred MiB)..."""

MANAGER_EVERY = 64
"""... looked at every this many steps back (each look scans CUDD's tables' used slots)."""

REORDER_NODES = 250_000
"""... and past this many, CUDD's dynamic reordering is switched off for good (where it was
on): a sifting of the whole manager happens inside whichever operation crosses CUDD's
threshold, however long it takes, and at that size takes seconds to tens of seconds
(`indep-mixes-20-40-12`: one backward layer given 5 s took 25 s, of which 21.6 s was one
reordering of 600,000 nodes; the order it had by then serves as well)."""

FINISH_COMPONENTS = 200
"""Components up to which the steps back are tried: they build the encoding's transition
relations, which past that (400 requirements over 200 tools) take gigabytes."""

FINISH_SECONDS = 1.5
"""The longest the first try at the states that can finish (``_can_finish``) may take; one
cut short goes on after the other verdicts, with the time left, from where it stopped
(``Chase``)."""

BACK_SHARE = 0.25
"""The share of the time left that the layers backward from the states that may stop
take, in priority mode, before the unrolled steps (``_Exact._finish_back``)."""

BACK_FIRST = 3.0
"""The longest the first layers backward from each open set may take, in priority mode
(``_Exact._back``); those cut short go on later, from where they stopped."""

STUCK_LAYERS_SHARE = 0.25
"""The share of the time left that the search of the first layers for the no-finish witness
(``_stuck_in_layers``) may take."""

SKIPPED_PATHS = 64
"""The histories found last that ``_stuck_in_layers`` follows from a state, leaving out
the steps not allowed, before a directed search of its own."""

STUCK_LAYER_NODES = 4 * LAYER_NODES
"""BDD nodes of the layers past which that search gives up (it asks little of them: a
conjunction per history, where ``_first`` steps on toward the deeper findings)."""

SHORT_GAP = 4
"""A history this many steps longer than the budget's lower bound at most: the next question
is whether one as short as the bound exists, not one a step shorter. Since the questions
bound the spare steps (``Unrolled._spare_at_most``), a "no" near the bound is seconds, not
minutes, so the bound is worth asking first from further off: `conditionals-50-100-3`
(bound 33, a history of 37; 33 is the least) is complete in 24-26 s with 4, where with 3
the first question, "within 36", and then the bound's took the check past its 60 s."""

FORCED_SECONDS = 5.0
"""The longest the calls that soft forces cost (``landmarks.extra_calls``) are sought, for
the budget's lower bound: a few seconds at 50 tools, more at 200 (it keeps what it found)."""

QUICK_NEVER = 0.25
"""The seconds the projections are given to show a tool never allowed before a directed
search for a history that calls it (they are asked again, without that bound, where the
search finds none)."""

GLANCE_STATES = 200
"""States a first directed search for a tool decides, before the projections' quick proof
that it is never allowed: a history to a tool allowed was mostly found among the first few
dozen, and a quick proof that fails takes all its time (about 0.25 s a tool on
`indep-approvals-50-100-5`)."""

UNROLL_DEPTHS = (2, 4, 8, 12, 16, 24, 32, 48, 64)
"""The numbers of steps within which the open "sometimes" verdicts are asked of the
unrolled steps, in turn (the easy ones first, each question costs more the deeper it
goes) ..."""

UNROLL_FIRST = 5
"""... the first this many before the proofs that they never hold (``_prove``), the rest
between a first, short try at those proofs (``PROVE_FIRST``) and a longer one."""

UNROLL_BEFORE_BACK = 3
"""In priority mode (``_Exact``), the first this many of them go before the layers
backward: a short history is a cheap question to Z3, and each one it finds spares the
layers a search (`mixed-50-100-7`: complete in 28 s, not 33; `indep-mixes-50-100-1`: 26
verdicts left undecided at the limit, not 38); the deeper ones come after, as a question
that finds nothing can take a minute and 400 MB there (`mixed-50-100-3`)."""

UNROLL_SECONDS = 2.0
"""The budget of one of those questions (a harder one is left for the next depth), counted
in Z3's resource units (``unrolled.UNITS_PER_SECOND``), as are the proofs' below."""

PROVE_SECONDS = 10.0
"""The longest one proof that a set of states is never reached may take; with a deadline,
the time left is shared among those still open, at least ``PROVE_LEAST`` each."""

PROVE_LEAST = 2.0
"""The least time one proof is given, however much is open."""

PROVE_FIRST = 0.5
"""The longest one proof may take on the first try, before the deeper questions, and the
least a later try between them gets (``_prove``'s balance). A set that is never
reached is mostly proved so within a second or two (0.7 s a requirement on
`conditionals-50-100-8`), while one reached only by a long history holds Spacer to its
whole limit (10 s each of three on seed 7, which the deeper questions then show reached
in 10 s for all three; 2 s each of five on `indep-chains-50-100-5`, reached 24 and 32 steps
in, which took the unrolled steps 0.3 s each)."""

ALONG_SHARE = 0.03
"""The share of the time left that the quick pass along known histories may take, before
any question to Z3 (``_live_searched``); past it, the pass goes on while it shows more
than one in ``ALONG_YIELD`` of the requirements it tried live, within ``ALONG_MOST``
(``worth_going_on``)."""

ALONG_YIELD = 4
"""A replay costs far less than a question to Z3 (at 200 tools, 0.017 s a requirement
against about 0.25 s): the quick pass is worth its time while it shows more than one in
this many of the requirements it tries live (on `conditionals-200-400-0`, 176 of 259)."""

ALONG_MOST = 0.12
"""The most of the time left the quick pass may take, however well it does."""


def worth_going_on(now: float, until: float, most: float, tried: int, shown: int) -> bool:
    """Whether the quick pass along known histories tries one more requirement at ``now``:
    before ``until`` (its share of the time), yes; from ``most`` on, no; in between, while
    it has shown more than one in ``ALONG_YIELD`` of the ``tried`` requirements live
    (``shown``). Pure."""
    if now >= most:
        return False
    return now < until or shown * ALONG_YIELD > tried


STUCK_SHARE = 0.25
"""The share of the time left that the requirements shown dead by the others' never
stopping (``_live_stuck``: a backward search each, seconds at 50 tools) may take in all."""

WALK_SHARE = 0.1
"""The share of the time left that the random walks (``_live_walked``) may take at most;
they end sooner once a round of their states shows no requirement live ..."""

WALK_MOST = 10.0
"""... and after this many seconds in any case, with or without a deadline (a state with
many opaque checks to vary can take a fifth of a second: four cycle guards at 50 tools)."""

WALK_ASKED_ROUND = 100
"""The states of the walks' one round for a single question asked (a core search's "is
this requirement ever live here?", where the answer is most often no): a round of
``walks.ROUND_STATES`` that shows nothing took 0.06 s at 50 random conditionals, 0.26 s in
priority mode with a cycle guard (`mixed-50-100-3`)."""

WITHOUT_SHARE = 0.03
"""The share of the time left that each of two steps may take: the requirements shown
dead by what the others need (``_live_waiting``), and the searches for histories that
avoid a requirement's tools (``_live_without``). At 50 tools each decides what it can in
well under a second; at 200 each question takes half a second or more where it decides
nothing (`conditionals-200-400-0`: none of 285 open requirements in 10 s each)."""

AFTER_CALLS = 6
"""Calls of a tool a requirement watches that ``_live_after`` makes at most, one after
another, before the requirement denies a tool ("at most 5 times": six calls)."""

TRIGGERS = 4
"""Tools per requirement, the first in name order, that ``_live_triggered`` (tools it tells
apart from most) and ``_live_after`` (tools it watches) call."""

UNROLL_STEPS = 64
"""Steps up to which a history to ``final_answer`` is looked for in them."""

COUNTED_STEPS = UNROLL_STEPS
"""The most steps a step counter may bound a verdict's states to (``_Decider._horizon``)
for bounded model checking of that many steps to decide it (``_counted``)."""

PROGRESS_SECONDS = 1.0
"""The least time between two analyses given to ``progress``."""

WITNESS_STATES = 2048
"""As the symbolic engine's: layers this small are searched as concrete states."""


def analyse_compositional(
    system: System,
    enc: EncodingBase,
    *,
    budget: int,
    deadline: float | None = None,
    probe_states: int | None = None,
    interrupt: Callable[[], bool] | None = None,
    progress: Callable[[Analysis], None] | None = None,
    until: str | None = None,
) -> Analysis:
    """The verdicts of ``system`` decided one by one (see the module's docstring): those
    decided are named in ``Analysis.decided``, the analysis is complete when every one is.
    ``budget``: the steps before ``final_answer`` that ``max_iterations`` allows. A probe
    that explores every state gives the explicit engine's own analysis. Past ``deadline``
    it returns what it decided so far, and so it does once ``interrupt`` (asked between
    steps) says to stop, or once it ``answered`` ``until`` (a key of ``Analysis.decided``,
    or ``finish:N``), for one who asks about that alone. ``progress`` is given, between
    steps and at most every ``PROGRESS_SECONDS`` once a verdict more is decided, the
    analysis that would be returned were it cut short there (a copy, for one who cannot
    wait for the end: a step may outlast the deadline). Deterministic but for where those
    cut it short."""
    probe_limit = PROBE_STATES if probe_states is None else probe_states
    explorer = _Explorer(system, probe_limit, _probe_deadline(deadline), True)
    probe = explorer.run()
    if probe.complete or probe.reason is None or _past(deadline):
        return probe
    if progress is not None:  # what the probe decided, before the diagrams are built
        progress(decided_by_probe(system, probe))
    kind = _Decider if system.mode == "strict" else _Exact
    try:
        decider = kind(
            system, enc, explorer, probe, budget, deadline, interrupt, progress, until=until
        )
    except Ambiguous:  # a step whose pass the runtime's choice of core decides
        return decided_by_probe(system, probe, cut=False)
    try:
        decider.run()
    except _Late:
        cut = True
    except Ambiguous:
        cut = False  # what was decided before the step stands
    else:
        cut = False
    return _closed(decider.result, decider.undecided(), cut=cut)


def answered(analysis: Analysis, key: str) -> bool:
    """Whether ``analysis`` (of ``analyse_compositional``, perhaps cut short) answers
    ``key``: a verdict it decided, or ``finish:N``, whether some history of at most ``N``
    steps lets the run stop (``shortest_finish``: one shown, the least steps known, or none
    by a lower bound, ``finish_after``)."""
    if analysis.complete:
        return True
    decided = analysis.decided or set()
    if not key.startswith("finish:"):
        return key in decided
    steps = int(key[7:])
    known = shortest_finish(analysis)
    if known is not None and known <= steps:
        return True
    if analysis.finish_after >= steps or analysis.finish_depth is not None:
        return True
    return "budget" in decided and analysis.finishes_within is None


def shortest_finish(analysis: Analysis) -> int | None:
    """The steps of the shortest history to a state that may stop that ``analysis``
    knows of (``finish_depth``, ``finishes_within``, ``finish_shown``); None: none."""
    known = [
        n
        for n in (analysis.finish_depth, analysis.finishes_within, analysis.finish_shown)
        if n is not None
    ]
    return min(known, default=None)


def _probe_deadline(deadline: float | None) -> float:
    """When the probe stops, whatever states are left (``PROBE_SECONDS``, ``PROBE_SHARE``)."""
    now = time.monotonic()
    if deadline is None:
        return now + PROBE_SECONDS
    return now + max(0.0, min(PROBE_SECONDS, PROBE_SHARE * (deadline - now)))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def decided_by_probe(system: System, probe: Analysis, *, cut: bool = True) -> Analysis:
    """What a breadth-first search of the first states (``explicit.analyse`` cut short by a
    state or time limit, with or without liveness) decides, as an incomplete analysis that
    names the other verdicts undecided (``_from_probe``): all a time limit leaves where
    nothing else was decided in time (``cut``), or all that is in reach."""
    first = _from_probe(system, probe)
    assert first.decided is not None
    return _closed(first, [k for k in _keys(system) if k not in first.decided], cut=cut)


def _keys(system: System) -> list[str]:
    """Every verdict an analysis decides, as ``Analysis.decided`` names them."""
    return [
        "deadlock",
        *(f"forced-conflict:{t}" for t in system.tools),
        "forced-tie",
        "budget",
        "no-finish",
        *(f"tool:{t}" for t in system.callable),
        *(f"live:{name}" for name in sorted({c.requirement.name for c in system.components})),
    ]


def _hard_forced(system: System) -> frozenset[str]:
    """The tools some requirement hard-forces in some view (``force_at_step``): no other
    can be in a forced conflict."""
    return frozenset(
        t
        for c in system.components
        for variants in c.variants
        for variant in variants
        for e in variant.records
        if (t := lower(e.item).hard_force) is not None
    )


def _from_probe(system: System, probe: Analysis) -> Analysis:
    """What the breadth-first probe decided, as a compositional analysis starts from it:
    each finding it met (its witness the engines' own, since the probe is exact to its
    depth), ``final_answer`` first allowed at a depth it reached, and every tool it saw
    allowed and requirement live; and no forced conflict on a tool nothing hard-forces."""
    hard = _hard_forced(system)
    decided = {
        *(["deadlock"] if probe.deadlock is not None else []),
        *(f"forced-conflict:{t}" for t in probe.forced_conflicts),
        *(f"forced-conflict:{t}" for t in system.tools if t not in hard),
        *(["forced-tie"] if probe.tie is not None else []),
        *(["budget"] if probe.finish_depth is not None else []),
        *(f"tool:{t}" for t in probe.allowed_tools if t != FINAL_ANSWER),
        *(f"live:{name}" for name in probe.live),
    }
    return Analysis(
        states=probe.states,
        complete=False,
        reason="the time limit ran out",
        depth_done=probe.depth_done,
        depends_on_checks=probe.depends_on_checks,
        deadlock=probe.deadlock,
        forced_conflicts=dict(probe.forced_conflicts),
        tie=probe.tie,
        finish_depth=probe.finish_depth,
        allowed_tools=set(probe.allowed_tools),
        live=set(probe.live),
        firsts=dict(probe.firsts),
        decided=decided,
    )


def _closed(result: Analysis, left: list[str], *, cut: bool) -> Analysis:
    """``result`` as returned: complete unless verdicts are ``left``, which are named,
    with whether the time ran out (``cut``) or they are out of the analysis' reach."""
    result.complete = not left
    result.undecided = tuple(left)
    result.reason = None
    if left:
        why = "the time limit ran out" if cut else "the rest is out of its reach"
        result.reason = (
            f"verdicts decided one by one, {len(left)} left undecided ({why}): {listed(left)}"
        )
    return result


class _Decider:
    """One compositional analysis (``analyse_compositional``): ``result`` fills as each
    verdict is decided, and ``result.decided`` names each one."""

    exact = False
    """Whether only the exact steps decide (``_Exact``): no projections, no bounds from
    the components on their own."""

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        explorer: _Explorer,
        probe: Analysis,
        budget: int,
        deadline: float | None,
        interrupt: Callable[[], bool] | None = None,
        progress: Callable[[Analysis], None] | None = None,
        *,
        until: str | None = None,
    ) -> None:
        self.system, self.enc, self.explorer = system, enc, explorer
        self.budget, self.deadline, self.interrupt = budget, deadline, interrupt
        self.progress, self.asked = progress, until
        """The one question asked (``until``): the analysis ends once it is ``answered``, and
        its searches, bounded model checking and proofs take that verdict alone."""
        self._given = (0, time.monotonic())
        """How many verdicts were decided when ``progress`` was last given, and when."""
        self.verdicts = v = Verdicts(
            system, enc, None, deadline, None, budget, witness_states=WITNESS_STATES
        )
        v.begin()
        self.projections = Projections(system, enc, relaxed=not self.exact)
        self.paths: list[tuple[Event, ...]] = []
        """Histories found so far (to tools, to a finish), for the liveness searches."""
        self.outcomes = Outcomes(system)
        """The system's outcomes at the states those searches replay (``along``)."""
        self.result = _from_probe(system, probe)
        self.open: dict[str, Node] = {}
        """The "sometimes" verdicts the searches left open, by key: the states that show
        them, for the unrolled steps (``_unroll``)."""
        self.needed: frozenset[str] = frozenset()
        """Tools every finishing history calls (``Relaxed.needed``), once asked."""
        self.calls: dict[str, int] = {}
        """Per tool, the fewest calls of it every finishing history makes (``needed`` once
        each, more where a component needs more: ``Estimates.calls``), once asked."""
        self.narrowed: dict[str, Node] = {}
        """Per open requirement, the states where it is live that the projections left."""
        self.spent: dict[str, list[float]] = {}
        """Per open verdict, the seconds its questions to the unrolled steps took so far,
        and its proofs (``_prove``'s balance)."""
        self.unproven: dict[str, Node] = {}
        """Findings neither shown nor ruled out (``_first``): their states, for a proof
        that none is reachable (``_prove``)."""
        self._unrolled: Unrolled | None = None
        self.finished: tuple[Event, ...] | None = None
        """The shortest history to a state that may stop found so far."""
        self.can_finish: Node | None = None
        """The states (reachable or not) from which a path reaches one that may stop,
        exact on the reachable ones (``_can_finish``), once computed."""
        self._counters: list[tuple[Horizon, list[int], list[Node], Node]] | None = None
        """Per component with views a run holds only within a bounded number of steps
        (``bounds.horizon``): its horizon, those views, their cubes and their union."""
        self._chases: dict[tuple[Node, Node], Chase] = {}
        """``_finishing``'s backward chainings, by the states they lead to and those they
        run through, kept to go on with where one was cut short."""
        self._backs: dict[Node, StepsBack] = {}
        """``_stepped_back``'s layers, by the states they lead to."""
        self._layering = 0.0
        """The seconds ``_first`` spent computing the encoding's layers (``LAYER_SECONDS``)."""

    def _wanted(self, table: dict[str, Node]) -> list[tuple[str, Node]]:
        """``table``'s items to work on: all of them, or with a question asked (``asked``)
        its verdict alone, where it is there."""
        if self.asked is None:
            return list(table.items())
        return [(self.asked, table[self.asked])] if self.asked in table else []

    def undecided(self) -> list[str]:
        decided = self.result.decided
        assert decided is not None
        return [k for k in _keys(self.system) if k not in decided]

    def _never(self, where: Node) -> bool:
        """Whether no reachable state is in ``where``, by every pair of the projections at
        once in Z3 (``Unrolled.meets``), or where that gives up, by their diagrams
        (``Projections.never``): True is a proof. Where Z3 finds a state in every pair's
        views, the diagrams, built from some of those pairs, cannot rule it out, and are
        not asked (`indep-mixes-50-100-4`: one such question took them 4.4 s)."""
        self._on_time()
        try:
            met = self.unrolled.meets(where, UNROLL_SECONDS, self.deadline)
        except GaveUp:
            raise _Late from None  # the deadline, or told to stop
        if met is not None:
            return not met
        return self.projections.never(where, self.deadline)

    def _outside(self, where: Node) -> bool:
        """Whether no state in ``where`` is in every pair's reachable views at once
        (``Unrolled.outside``): True is a proof that no reachable state is."""
        try:
            return self.unrolled.outside(where, UNROLL_SECONDS, self.deadline)
        except GaveUp:
            raise _Late from None  # the deadline, or told to stop

    def _share(self, share: float) -> float | None:
        """The ``time.monotonic()`` value ``share`` of the time left from now (None without
        a deadline): how long a step may take."""
        if self.deadline is None:
            return None
        now = time.monotonic()
        return now + share * (self.deadline - now)

    def _soon(self, seconds: float) -> float:
        """The deadline ``seconds`` from now, or the analysis's own if sooner."""
        soon = time.monotonic() + seconds
        return soon if self.deadline is None else min(soon, self.deadline)

    def _on_time(self) -> None:
        """Raise ``_Late`` past the deadline or when told to stop; else give ``progress``
        what is decided, when it is due. (The result is whole wherever this is asked: the
        analysis may end here.)"""
        if self._late():
            raise _Late
        self.enc.mind_reordering()
        if self.progress is None:
            return
        decided = self.result.decided
        assert decided is not None
        count, when = self._given
        now = time.monotonic()
        if len(decided) > count and now - when >= PROGRESS_SECONDS:
            self._given = (len(decided), now)
            self.progress(self.snapshot())

    def snapshot(self) -> Analysis:
        """The analysis as returned were it cut short now: a copy, which the verdicts
        decided later leave as it is."""
        r = self.result
        assert r.decided is not None
        copy = dataclasses.replace(
            r,
            decided=set(r.decided),
            forced_conflicts=dict(r.forced_conflicts),
            allowed_tools=set(r.allowed_tools),
            live=set(r.live),
            firsts=dict(r.firsts),
        )
        return _closed(copy, self.undecided(), cut=True)

    def _late(self) -> bool:
        """Whether the deadline passed, ``interrupt`` says to stop, or the question asked
        (``asked``) is answered."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            return True
        if self.asked is not None and answered(self.result, self.asked):
            return True
        return self.interrupt is not None and self.interrupt()

    def run(self) -> None:
        self._findings()
        self._tools()
        self._finish()
        self._finish_back(self._left(BACK_SHARE))
        self._no_finish()
        self._live_walked()
        self._live()
        # Along the histories found so far first (a requirement waiting for a tool is live
        # where a finishing history without that tool's calls ends): a few replays each,
        # where the unrolled steps would ask Z3 about every depth up to that history's.
        self._live_searched(directed=False)
        self._live_after()
        self._live_waiting()
        self._live_without()
        self._live_triggered()
        self._live_stuck()
        self._counted(UNROLL_SECONDS)
        # The shortest questions to the unrolled steps before the layers backward (in
        # priority mode: each history found spares them a search), the deeper ones after:
        # each backward search decides for good, a "never" as well as a "sometimes", and
        # holds its diagrams, where the unrolled steps take a copy of every bit per step
        # (`indep-mixes-50-100-1`: 500 MB in 20 s).
        self._unroll(UNROLL_DEPTHS[:UNROLL_BEFORE_BACK])
        if self.exact:
            # In strict mode the first proofs come first: the layers backward wait for
            # what they leave open (in the loop below).
            self._back(BACK_FIRST)
        self._unroll(UNROLL_DEPTHS[UNROLL_BEFORE_BACK:UNROLL_FIRST])
        self._live_never()
        self._live_searched()
        self._finish_back(self._left(BACK_SHARE))
        self._counted(PROVE_SECONDS)
        self._prove(PROVE_FIRST)
        if self._without_dead():  # tools the proofs showed never allowed
            self._live_never()
        self._no_finish(again=True)
        self._live_stuck()  # where its share cut it short: its chainings go on
        # Deeper histories and proofs in turn, the proofs of each set taking about as long
        # as its histories took: a set reached only deep costs its proofs about what its
        # histories cost, and one never reached its histories about what its proof costs.
        for depth in UNROLL_DEPTHS[UNROLL_FIRST:-1]:
            self._unroll((depth,))
            self._back(PROVE_SECONDS)
            self._prove(PROVE_SECONDS, balanced=True)
        self._unroll(UNROLL_DEPTHS[-1:])
        # In strict mode the budget's questions below still need their time.
        self._back(None if self.exact else PROVE_SECONDS)
        self._prove(PROVE_SECONDS)
        self._finish_unrolled()

    def _finish_back(self, seconds: float | None) -> None:
        """The budget by the layers backward from the states that may stop, at most
        ``seconds`` more (``_Exact``); in strict mode the bounds of ``_finish_bounded`` and
        bounded model checking decide it."""

    def _stepped_back(self, target: Node, seconds: float | None) -> StepsBack | None:
        """The breadth-first layers backward from ``target`` (``StepsBack``, kept between
        calls), run for at most ``seconds`` more (None: the time left; ``_giving_up``);
        None when they were cut short (``_Late`` past the deadline)."""
        self._on_time()
        back = self._backs.get(target)
        if back is None:
            back = self._backs[target] = StepsBack(self.verdicts, target, self.projections.reached)
        try:
            back.run(self._giving_up(None if seconds is None else time.monotonic() + seconds))
        except _OutOfTime:
            self._on_time()
            return None
        return back

    def _back(self, most: float | None) -> None:
        """What is still open, decided backward from its states, at most ``most`` seconds
        each (None: the time left), half of it for each of two searches, each kept to go on
        with at the next call: the chaining (``_finishing``), where the initial state is
        not among the states it finds, none is reachable (`mixed-50-100-7` in priority
        mode: two requirements never live, shown so in 1 s and 0.3 s, where
        property-directed reachability gave up on both); then the layers
        (``_stepped_back``): a finding met there has its shortest witness, the engines'
        own; a tool allowed or a requirement live, its shortest history; and where they
        end without the initial state, none is reachable. In strict mode, only for what
        the first proofs leave open (``run``): on `indep-forced-50-100-6` three
        requirements never live, which property-directed reachability proved only after
        the unrolled steps' questions 48 and 64 steps deep, are shown so by the layers
        (the one-by-one analysis 17.1 s → 9.9 s), and `conditionals-50-100-2`'s last open
        requirement (22.5 s, left open, → 8.2 s); first, before the proofs, the layers
        cost more than they decided (`conditionals-50-100-0`: 4.2 s → 9.8 s)."""
        decided = self.result.decided
        assert decided is not None
        system = self.system
        each = None if most is None else most / 2
        for table in (self.unproven, self.open):
            for key, where in list(table.items()):
                if key not in table:
                    continue  # met along an earlier one's history
                # The chaining first, for a "never": it follows a chain of steps link by
                # link, where the layers take every cluster at each step.
                until = None if each is None else time.monotonic() + each
                chased = self._finishing(where, until)
                if chased is not None and not self.enc.holds_at(
                    chased, system.components, system.initial
                ):
                    del table[key]
                    decided.add(key)
                    continue
                back = self._stepped_back(where, each)
                if back is None:
                    continue  # cut short: it goes on at the next call
                if back.met is None:  # the layers ended without the start: never
                    del table[key]
                    decided.add(key)
                elif table is self.open:
                    self._met(tuple(back.trace()))  # this one, and any other on the way
                else:
                    del table[key]
                    decided.add(key)
                    self._witnessed(key, back.trace())

    def _none_within(self, where: Node, steps: int) -> bool:
        """Whether no history of at most ``steps`` steps reaches ``where``, as far as the
        layers backward from it show: each whole layer without the start rules out a
        history that short."""
        back = self._backs.get(where)
        return back is not None and back.met is None and len(back.layers) > steps

    def _left(self, share: float) -> float | None:
        """``share`` of the seconds left (None without a deadline)."""
        if self.deadline is None:
            return None
        return share * max(0.0, self.deadline - time.monotonic())

    def _findings(self) -> None:
        """The deadlock, each forced conflict and the tie, where the probe did not meet
        them: each met in the first layers (its shortest witness), or shown never (``_first``)."""
        result = self.result
        decided = result.decided
        assert decided is not None
        p, some = self.verdicts.pass_, self.verdicts.some
        inconsistent = ~p.consistent
        # What the probe met is decided already, and no tool that nothing hard-forces is in a
        # forced conflict (``_from_probe``).
        if result.deadlock is None:
            result.deadlock = self._first(
                some(inconsistent & p.stuck), _conflict_kind("deadlock"), "deadlock"
            )
        forcing = inconsistent & ~p.stuck
        for t in self.enc.tools:
            key = f"forced-conflict:{t}"
            if key in decided:
                continue
            target = some(forcing & p.hard[t])
            found = self._first(target, _forced_on(t), key)
            if found is not None:
                result.forced_conflicts[t] = found
        if result.tie is None:
            result.tie = self._first(some(p.tie), _has_tie, "forced-tie")

    def _first(self, target: Node, finding: Callable[[Outcome], bool], key: str) -> Witness | None:
        """The shortest witness of a finding the probe did not meet (the engines' own:
        breadth-first layers of the encoding, while they stay small and quick), or None;
        ``key`` is decided when a witness is found or no reachable state has the finding
        (shown by the projections or by layers that reach every state)."""
        decided = self.result.decided
        assert decided is not None
        if self._never(target):
            decided.add(key)
            return None
        v, bdd = self.verdicts, self.enc.bdd
        try:
            for d in range(LAYERS + 1):
                self._on_time()
                if nodes_held(bdd) > MANAGER_NODES:
                    break
                computed = d < len(v.layers)
                if not computed and self._layering > LAYER_SECONDS:
                    break
                started = time.monotonic()
                layer = v._layer(d)
                if not computed:
                    self._layering += time.monotonic() - started
                if layer is None:
                    decided.add(key)  # every reachable state is in the layers: never
                    return None
                if layer & target != bdd.false:
                    decided.add(key)
                    return v._witness(target, finding, d)
                if v.layered.dag_size > LAYER_NODES:
                    break
        except _OutOfTime:
            raise _Late from None
        self.unproven[key] = target
        return None

    def _tools(self) -> None:
        result = self.result
        decided = result.decided
        assert decided is not None
        p, some = self.verdicts.pass_, self.verdicts.some
        for tool in self.system.callable:
            key = f"tool:{tool}"
            if tool in result.allowed_tools:
                decided.add(key)
                continue
            self._on_time()
            # A short directed search first (``GLANCE_STATES``: a history to an allowed
            # tool is mostly found at once), then the orders of the histories that would
            # call it (``Orders.never_called``), then the projections' proof that it is never
            # allowed for a moment (a dead tool's is mostly quick, and a search for it fails
            # only at its whole budget), then the whole search (where it finds a history,
            # far cheaper than refining the projections until they give up: 2-5 s a tool
            # on `indep-counters-50-100-3`), then the proof with the time left.
            where = some(p.allowed[tool])
            found = self._sought(tool, GLANCE_STATES)
            if found is None and (
                self._never_called(tool) or self.projections.never(where, self._soon(QUICK_NEVER))
            ):
                decided.add(key)
                continue
            if found is None:
                found = self._sought(tool)
            if found is not None:
                self._allowed_along(found)
            elif self._never(where):
                decided.add(key)
            else:
                self.open[key] = some(p.callable[tool])
        self._without_dead()

    def _never_called(self, tool: str) -> bool:
        """Whether the orders of the histories that would call ``tool`` contradict each
        other (``Orders.never_called``): True is a proof that it is never allowed."""
        return self.orders.never_called(tool)

    def _sought(
        self, goal: str, states: int = SEEK_STATES, *, within: int | None = None
    ) -> tuple[Event, ...] | None:
        """A directed search of the whole system for ``goal`` (``seek``, at most ``states``
        states for a system of its size, within ``within`` steps when given)."""
        limit = searched(self.system, states)
        return seek(self.system, goal, self.enc.distances, limit=limit, within=within)

    def _allowed_along(self, history: tuple[Event, ...]) -> None:
        """Every tool allowed at some state along ``history`` (a real history), under some
        check values, decided allowed, with the history up to its first such state: a
        directed search's history to one tool passes where many others are allowed
        (`indep-approvals-50-100-5`: a projection's quick proof, which fails, and a search
        per tool had taken 6.5 s)."""
        result, system = self.result, self.system
        state = system.initial
        for i in range(len(history) + 1):
            if i:
                state = system.successor(state, history[i - 1])
            for tool in callable_at(system, state) - result.allowed_tools:
                self._show(f"tool:{tool}", history[:i])

    def _show(self, key: str, history: tuple[Event, ...]) -> None:
        """Decide ``key`` (``tool:T`` or ``live:R``) shown by ``history``, a real history to
        a state where the tool is allowed or the requirement live: decided, no longer open,
        ``history`` its example unless it has one."""
        result = self.result
        assert result.decided is not None
        result.decided.add(key)
        self.open.pop(key, None)
        self.narrowed.pop(key, None)
        (result.allowed_tools if key.startswith("tool:") else result.live).add(key[5:])
        result.firsts.setdefault(key, history)

    def _without_dead(self) -> bool:
        """The projections rebuilt without the steps of the tools shown never allowed (no
        history calls them: ``projections.without_dead``), and the open tools asked about
        again: what only a dead tool opens is dead too, and what only that one opens, which
        no pair of requirements shows (`conditionals-50-100-2`: `t47` is allowed only after
        a success of `t17` and only before one, `t26` only after a call of `t47`, `t8`
        only after `t26`, `t42` only after `t8`, and `t45` only after `t42`; the pairs
        show only the first two dead). The encoding's steps in Z3 (``unrolled``) are made
        again from the new projections when next asked for. Whether the projections were
        rebuilt."""
        result = self.result
        decided = result.decided
        assert decided is not None
        dead = frozenset(
            t
            for t in self.system.callable
            if f"tool:{t}" in decided and t not in result.allowed_tools
        )
        if dead <= self.projections.dead:
            return False
        self._on_time()
        p, some = self.verdicts.pass_, self.verdicts.some
        open_tools = [k[5:] for k in self.open if k.startswith("tool:")]
        self.projections, shown = without_dead(
            self.projections, lambda t: some(p.allowed[t]), open_tools, dead, self.deadline
        )
        self._unrolled = None
        for tool in shown:
            if f"tool:{tool}" in self.open:
                decided.add(f"tool:{tool}")
                del self.open[f"tool:{tool}"]
        return True

    def _finish(self) -> None:
        """``final_answer``: within the budget by some history, or never (projections), or
        first allowed at a depth the probe reached."""
        result = self.result
        decided = result.decided
        assert decided is not None
        if result.finish_depth is not None:
            decided.add("budget")  # the probe met it first: exact
            return
        p, some = self.verdicts.pass_, self.verdicts.some
        self._on_time()
        found = self._sought(FINAL_ANSWER)
        if found is not None:
            found = self._shorter(shortened(self.system, found))
            self.paths.append(found)
            self.finished = found
            result.finish_shown = len(found)
            if len(found) > self.budget:
                found = self._sought(FINAL_ANSWER, within=self.budget)
        if found is not None:
            decided.add("budget")
            result.finishes_within = len(found)
            result.allowed_tools.add(FINAL_ANSWER)
            result.firsts.setdefault("finish", found)
        elif never_finishes(self.system) or self._never(some(p.can_stop)):
            self._stuck_at_start()  # never, from the start
        else:
            self._finish_bounded()

    def _finish_bounded(self) -> None:
        """Where no history to ``final_answer`` was found within the budget: the least
        number of steps before it bounded from below (``finish_after``), by the components'
        relaxed distances and the calls every finishing history makes; the budget decided
        where some component alone never lets the run stop, or a history as short as the
        bound is known."""
        result = self.result
        decided = result.decided
        assert decided is not None
        estimates = Estimates(self.system, FINAL_ANSWER, self.enc.distances)
        least = estimates.bound(self.system.initial)
        if least is None:
            decided.add("budget")  # some component alone never lets the run stop
        else:
            # Each tool every finishing history calls costs a step of its own, and so
            # do the calls that the soft forces they set off cost besides.
            until = time.monotonic() + FORCED_SECONDS
            if self.deadline is not None:
                until = min(until, self.deadline)
            # Where a history is known, a bound as long makes it exact: the calls are
            # sought only until they show that much.
            known = None if self.finished is None else len(self.finished) - 1
            steps, self.needed = least_steps(self.system, until, beyond=known)
            calls = estimates.calls(self.system.initial, self.needed)
            assert calls is not None  # as ``bound``
            if not self.system.skips:  # a step is one call: the unrolled steps count them
                self.calls = calls
            each = sum(calls.values())
            result.finish_after = max(result.finish_after, least - 1, steps - 1, each - 1)
            if self.finished is not None and len(self.finished) <= result.finish_after + 1:
                self._exact(self.finished)  # a history as short as the bound

    def _shorter(self, found: tuple[Event, ...]) -> tuple[Event, ...]:
        """``found`` (a finishing history), or a shorter one: while a directed search
        finds one at least a step shorter (``seek`` within that many steps, which drops
        the states its bound leaves no room), that one, its detours taken out. On
        `conditionals-50-100-0`: 26 steps, then 24 at once, 23 once shortened, the exact
        least (a "within" question to Z3 took 1.7 to 12 s to find it). Past the deadline,
        the shortest so far."""
        while not self._late():
            shorter = self._sought(FINAL_ANSWER, within=len(found) - 1)
            if shorter is None:
                break
            found = shortened(self.system, shorter)
        return found

    def _no_finish(self, *, again: bool = False) -> None:
        """The no-finish verdict: the first probe state, breadth-first, shown unable to
        finish, when every state before it is shown to finish (``_first_stuck``); else
        from the states that can finish (``_can_finish``, at most ``FINISH_SECONDS``, or
        ``again`` with the time left): the reachable states outside them are the stuck
        ones, ruled out or met as the other findings are (``_first``: the symbolic
        engine's own witness, from the first breadth-first layer that meets them). Where
        those are not found in time, the first layers are searched for the witness state
        by state (``_stuck_in_layers``), before the other verdicts."""
        decided = self.result.decided
        assert decided is not None
        if "no-finish" in decided or "no-finish" in self.unproven:
            return
        if len(self.system.components) > FINISH_COMPONENTS:
            return
        if not again and self._first_stuck():
            return
        finishing = self._can_finish(None if again else FINISH_SECONDS)
        if finishing is None:
            if not again:
                self._stuck_in_layers()
            return  # out of its time: tried again later, unless the layers decided
        stuck = self._deciding & self.projections.reached & ~finishing
        found = self._first(stuck, _has_pass, "no-finish")
        if found is not None:
            self.result.no_finish = Witness(found.trace, (), found.depends_on_checks)

    def _can_finish(self, seconds: float | None) -> Node | None:
        """``can_finish``, computed once (``_finishing`` toward the states that may stop);
        None when ``seconds``, the manager's ``MANAGER_NODES`` or ``interrupt`` ran out
        first (``_Late`` past the deadline)."""
        if self.can_finish is not None:
            return self.can_finish
        self._on_time()
        v = self.verdicts
        until = None if seconds is None else time.monotonic() + seconds
        found = self._finishing(v.some(v.pass_.can_stop), until)
        if found is not None:
            self.can_finish = found
        return found

    def _finishing(self, stop: Node, until: float | None) -> Node | None:
        """The states from which a state of ``stop`` is reachable: the symbolic engine's
        backward chaining through the states the projections leave (a superset of the
        reachable ones, so the answer is exact on those); None when ``until``, the manager's
        ``MANAGER_NODES`` or ``interrupt`` ran out first (``_Late`` past the deadline). A
        chaining cut short is kept (``Chase``): the next ask for the same states goes on
        from where it stopped."""
        v = self.verdicts
        give_up = self._giving_up(until)
        if give_up():
            return None
        reach = self.projections.reached
        chase = self._chases.get((stop, reach))
        if chase is None:
            chase = self._chases[(stop, reach)] = Chase(v, stop, reach)
        try:
            return chase.run(give_up)
        except _OutOfTime:
            self._on_time()
            return None

    def _giving_up(self, until: float | None) -> Callable[[], bool]:
        """When a search that steps back through the diagrams stops: at ``until``, once
        the manager holds ``MANAGER_NODES``, or at the deadline (or told to)."""
        bdd = self.enc.bdd
        asked = itertools.count()

        def give_up() -> bool:
            if until is not None and time.monotonic() >= until:
                return True
            self.enc.mind_reordering()
            # The manager's size only now and then: reading it scans CUDD's tables' used
            # slots (``nodes_held``).
            if next(asked) % MANAGER_EVERY == 0:
                nodes = nodes_held(bdd)
                if nodes > REORDER_NODES:
                    self.enc.keep_order()
                if nodes > MANAGER_NODES:
                    return True
            return self._late()

        return give_up

    def _first_stuck(self) -> bool:
        """Look for the witness in the probe (see ``_no_finish``): whether it decided.

        In breadth-first order, each state not shown to finish is searched from (the
        histories known replayed first, ``Finishing``), and the first not shown to finish
        must be shown stuck. A state the probe's steps lead from to one that finishes
        (``_Explorer.reaching_finish``) finishes too. (Tried and dropped: deepest first,
        each state shown to finish showing those behind it. Replays from deep
        states mostly fail where they have only a shallow state's history to follow, and a
        search from a stuck state fails only once it has seen all it may.)"""
        result, explorer, system = self.result, self.explorer, self.system
        decided = result.decided
        assert decided is not None
        stop = self.verdicts.some(self.verdicts.pass_.can_stop)
        finishing = Finishing(system, self.enc)
        reaches = explorer.reaching_finish()
        for i, node in enumerate(explorer.nodes):
            if i not in explorer.deciding:
                return False  # not expanded: the probe stopped before it
            if not explorer.deciding[i] or reaches[i]:
                continue
            self._on_time()
            stuck = self._stuck_alone(node.state)
            if not stuck:
                if finishing.can_finish(node.state):
                    continue
                stuck = self.projections.at(node.state).never(stop, self.deadline)
            if not stuck:
                return False  # neither shown: undecided
            result.no_finish = explorer._witness(node, (), not explorer.always_deciding[i])
            decided.add("no-finish")
            return True
        return False

    def _stuck_in_layers(self) -> bool:
        """Look for the witness in the first breadth-first layers (see ``_no_finish``):
        whether it decided, within ``STUCK_LAYERS_SHARE`` of the time left.

        Layer by layer, the states with a pass not shown to finish are asked: while each
        asked is shown to finish, any of them; then the one the smallest trace reaches
        (``Verdicts._witness``, the engines' own order), which is the witness if it is
        shown stuck (every state of the layers before, and every one the layer's smaller
        traces reach, is shown to finish). A state is shown to finish by a history: one
        found before, followed with the steps not allowed left out (``Finishing.skipping``),
        or a directed search's; that history, replayed backward through the diagrams
        (``Layers.event_preimage``), shows every state from which an end of it replays. On
        `indep-counters-50-100-3` (the stuck state six steps deep, past the probe): 52
        histories show the first six layers, about 7 s, where the states that can finish
        are not found in the minute. (Tried and dropped: asking the probe's states one by
        one, 25,000 states in 10 s; replaying a history backward with any of its steps
        left out, which shows the six layers at once but built two million nodes in 17 s.)
        Gives up past ``LAYERS`` or ``STUCK_LAYER_NODES``, or at a state neither shown to
        finish nor stuck."""
        v, bdd, system = self.verdicts, self.enc.bdd, self.system
        decided = self.result.decided
        assert decided is not None
        until = self._share(STUCK_LAYERS_SHARE)
        stop = v.some(v.pass_.can_stop)
        open_ = self._deciding & ~stop
        shown: list[Node] = []  # per history found, the states it shows to finish
        replays = Finishing(system, self.enc)
        paths: list[tuple[Event, ...]] = []
        unfound: set[State] = set()  # states no history was found from
        try:
            for d in range(LAYERS + 1):
                layer = v._layer(d)
                if layer is None:
                    decided.add("no-finish")
                    return True  # every reachable state shown to finish
                if v.layered.dag_size > STUCK_LAYER_NODES or nodes_held(bdd) > MANAGER_NODES:
                    return False
                left = layer & open_
                for back in shown:
                    left &= ~back
                ordered = False  # any state of ``left`` first, while each is shown to finish
                while left != bdd.false:
                    self._on_time()
                    if until is not None and time.monotonic() > until:
                        return False
                    witness = v._witness(left, _has_pass, d) if ordered else None
                    state = self._state_of(left, witness)
                    stuck = self._stuck_alone(state)
                    if ordered and not stuck:  # the witness, if any: stuck, mostly
                        stuck = self.projections.at(state).never(stop, self.deadline)
                    if not stuck and state not in unfound:
                        found = self._finishing_from(state, paths, replays)
                        if found is not None:
                            paths.append(found)
                            back = self._backward(found, stop)
                            if not self.enc.holds_at(back, system.components, state):
                                return False  # never (the replay is exact); else claim nothing
                            shown.append(back)
                            left &= ~back
                            continue
                        unfound.add(state)
                    if not ordered:
                        ordered = True  # the smallest trace's state is the one to decide
                        continue
                    if not stuck:
                        return False
                    assert witness is not None  # ``ordered``
                    self.result.no_finish = Witness(witness.trace, (), witness.depends_on_checks)
                    decided.add("no-finish")
                    return True
        except _OutOfTime:
            raise _Late from None
        return False

    def _state_of(self, states: Node, witness: Witness | None) -> State:
        """The state ``witness`` leads to, or without one any state of ``states``."""
        if witness is not None:
            state = walk(self.system, witness.trace)
            assert state is not None  # a witness's steps are allowed under some check values
            return state
        picked = pick(self.enc.bdd, states)
        assert picked is not None  # ``states`` is not empty
        return tuple(self.enc.view(c, picked) for c in self.system.components)

    @cached_property
    def _alone(self) -> list[tuple[int, Distances]]:
        """Per component that does not yield, its index and its own distances to a view
        that lets the run stop (``Encoding.distances``)."""
        comps = self.system.components
        return [
            (i, self.enc.distances(c)) for i, c in enumerate(comps) if not c.requirement.yielding
        ]

    def _stuck_alone(self, state: State) -> bool:
        """Whether some component alone never lets the run stop from ``state``: stuck
        whatever the others do."""
        return any(dist.steps[state[i]] >= UNREACHABLE for i, dist in self._alone)

    def _finishing_from(
        self, state: State, paths: list[tuple[Event, ...]], replays: Finishing
    ) -> tuple[Event, ...] | None:
        """A history from ``state`` to where the run may stop: one of the last
        ``SKIPPED_PATHS`` of ``paths`` followed with the steps not allowed left out, else a
        directed search's; None when neither finds one."""
        for path in reversed(paths[-SKIPPED_PATHS:]):
            taken = replays.skipping(state, path)
            if taken is not None:
                return taken
        return seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=searched(self.system, SEEK_STATES),
            start=state,
            deadline=self.deadline,
        )

    def _backward(self, history: Sequence[Event], stop: Node) -> Node:
        """The states from which some end of ``history`` (a part of it that runs to its
        end) replays into ``stop``, every step allowed under some check values."""
        v = self.verdicts
        states = reached = stop
        for event in reversed(history):
            self._on_time()
            states = v.event_preimage(states, event)
            reached |= states
        return reached

    @property
    def _deciding(self) -> Node:
        """The states with a pass under some check values."""
        return self.verdicts.some(self.verdicts.pass_.consistent)

    def _live(self) -> None:
        """Requirements shown live by a probe state, or never live where no state in
        every pair's views is one (``_outside``); the others are left open, with the states
        where each is live, for what follows (``open``)."""
        result = self.result
        decided = result.decided
        assert decided is not None
        for name in sorted({c.requirement.name for c in self.system.components}):
            key = f"live:{name}"
            if name in result.live:
                decided.add(key)
                continue
            where = self.verdicts._live_at(name)
            if self._outside(where):
                decided.add(key)  # never live
            else:
                self.open[key] = where

    def _live_walked(self) -> None:
        """Requirements shown live at the states of seeded random walks (``walks``), for
        at most ``WALK_SHARE`` of the time left and ``WALK_MOST`` seconds: what the
        breadth-first probe did not reach, a walk often does, and each one shown spares
        ``_live`` its diagram. The tools allowed at the states they visit are decided
        allowed on the way. With a question asked (``asked``), only for that one, in one
        round of ``WALK_ASKED_ROUND`` states where it shows nothing."""
        result = self.result
        decided = result.decided
        assert decided is not None
        names = {c.requirement.name for c in self.system.components}
        wanted = {n for n in names if f"live:{n}" not in decided and n not in result.live}
        if self.asked is not None:
            wanted &= {self.asked[5:]} if self.asked.startswith("live:") else set()
        if not wanted:
            return
        self._on_time()
        until = self._soon(WALK_MOST)
        share = self._share(WALK_SHARE)
        if share is not None:
            until = min(until, share)

        def stop() -> bool:
            return self._late() or time.monotonic() >= until

        rounds = ROUND_STATES if self.asked is None else WALK_ASKED_ROUND
        walked = live_on_walks(self.system, wanted, stop, round_states=rounds)
        for name, history in sorted(walked.live.items()):
            self._show(f"live:{name}", history)
        for tool, history in sorted(walked.allowed.items()):
            self._show(f"tool:{tool}", history)
        self._on_time()

    def _live_never(self) -> None:
        """Open requirements never live by the projections (``Projections.narrowed``); the
        others keep the states the projections left, for the directed searches."""
        decided = self.result.decided
        assert decided is not None
        for key, where in list(self.open.items()):
            if not key.startswith("live:"):
                continue
            self._on_time()
            left = self.projections.narrowed(where, self.deadline)
            if left == self.enc.bdd.false:
                decided.add(key)
                del self.open[key]
            else:
                self.narrowed[key] = left

    def _live_searched(self, *, directed: bool = True) -> None:
        """Open requirements shown live by a state along (or a variation of) a history
        found so far, or (``directed``) by a directed search towards the states the
        projections left. Not ``directed``, the quick pass before any question to Z3:
        only the histories ``_reaching`` gives and the finishing ones are followed (a
        history to each tool, at 200 tools 600 of them, is for what is left), for at most
        ``ALONG_SHARE`` of the time left, or ``ALONG_MOST`` while it keeps showing more
        than one in ``ALONG_YIELD`` of the requirements it tries live."""
        result = self.result
        system, enc, comps = self.system, self.enc, self.system.components
        watched: dict[str, set[str]] = {}
        for c in comps:
            watched.setdefault(c.requirement.name, set()).update(c.watched)
        paths = set(self.paths)
        for key, path in result.firsts.items():
            if not directed:
                if key == "finish":
                    paths.add(path)
            elif key.startswith("tool:") and key[5:] != FINAL_ANSWER:
                paths.update((*path, (key[5:], status)) for status in STATUSES)
            else:
                paths.add(path)
        ordered = sorted(paths, key=lambda p: (-len(p), p))
        keys = [k for k, _ in self._wanted(self.narrowed if directed else self.open)]
        if not directed:
            keys = [k for k in keys if k.startswith("live:")]
        until = None if directed else self._share(ALONG_SHARE)
        most = None if directed else self._share(ALONG_MOST)
        tried = shown = 0
        for key in keys:
            where = self.open.get(key)
            if where is None:
                continue
            self._on_time()
            if (
                until is not None
                and most is not None
                and not worth_going_on(time.monotonic(), until, most, tried, shown)
            ):
                return  # the rest for the questions to Z3
            tried += 1
            name = key[5:]

            def goal(state: State, where: Node = where) -> bool:
                return bool(enc.holds_at(where, comps, state))

            reaching = self._reaching(name, watched[name])
            found = along(system, reaching, set(), goal, self.outcomes)
            if found is None:
                found = along(system, ordered, watched[name], goal, self.outcomes)
            if found is None and directed:
                found = toward(
                    system,
                    enc,
                    self.narrowed[key],
                    goal=goal,
                    limit=searched(system, LIVE_STATES),
                    deadline=self.deadline,
                )
            if found is not None:
                shown += 1
                self._show(key, found)

    def _live_waiting(self) -> None:
        """Open requirements that only keep the run from stopping until a tool is called
        (``followed.waits_for``), never live where every finishing history of the others
        calls that tool: tools found so by the relaxed product, closed under the soft
        forces that follow a needed call (``followed``). Such a requirement changes a pass
        only where the others let the run stop and that tool was not called
        (`conditionals-50-100-3`: "`final_answer` only after a call of `t33`", where `t33`
        is forced after `t47`, a tool every finish calls, and nothing can deny it or force
        another tool then); or that only keep it from stopping where the others never let
        it stop (``orders.waits_in_vain``). Strict mode only; at most ``WITHOUT_SHARE`` of
        the time left."""
        decided = self.result.decided
        assert decided is not None
        until = self._share(WITHOUT_SHARE)
        for key in list(self.open):
            if not key.startswith("live:"):
                continue
            self._on_time()
            if until is not None and time.monotonic() >= until:
                return
            if self.followed.never_live(key[5:]) or waits_in_vain(self.system, key[5:]):
                decided.add(key)
                del self.open[key]
                self.narrowed.pop(key, None)

    def _live_after(self) -> None:
        """Open requirements that deny a tool until, or once, a tool they watch was called
        ("`t` only after `x`", "`t` only before `x`", "`t` at most 3 times"), shown live
        where the others allow that tool then: per tool it watches (at most ``TRIGGERS``),
        from the first history to where that tool is allowed (``firsts``), the tool called,
        and called again where a directed search finds it allowed, until the requirement
        denies a tool (at most ``AFTER_CALLS`` calls); then a directed search of the system
        without the requirement, from there, for a state where the others allow a tool it
        denies, replayed through the whole system (``_shown_live``). Where the system never
        finishes, the searches that follow finishing histories find nothing
        (`indep-conditionals-50-100-0`: of the 18 requirements the quick pass left open,
        such as "`tag_10` only before `merge_40`", 14 are shown here in 0.03 s, where
        bounded model checking had taken 3.3 s for 15). At most ``WITHOUT_SHARE`` of the
        time left."""
        system, enc, comps = self.system, self.enc, self.system.components
        names = sorted({c.requirement.name for c in comps})
        limit = searched(system, LIVE_STATES)
        until = self._share(WITHOUT_SHARE)
        for key in list(self.open):
            if not key.startswith("live:"):
                continue
            name = key[5:]
            mine = [i for i, c in enumerate(comps) if c.requirement.name == name]
            kept = [i for i, c in enumerate(comps) if c.requirement.name != name]
            others: System | None = None

            def denies(state: State, mine: list[int] = mine) -> set[str]:
                """The tools other than ``final_answer`` the requirement denies there."""
                return {t for i in mine for t in comps[i].denied(state[i])} - {FINAL_ANSWER}

            for tool in sorted({t for i in mine for t in comps[i].watched})[:TRIGGERS]:
                self._on_time()
                if until is not None and time.monotonic() >= until:
                    return
                before = self.result.firsts.get(f"tool:{tool}")
                if before is None:
                    continue
                history, state = list(before), system.initial
                for event in before:
                    state = system.successor(state, event)
                denied = denies(state)
                for _ in range(AFTER_CALLS):
                    steps = system.steps_from(state, {tool})
                    if denied or not steps:
                        break
                    state, event = next(iter(steps.items()))
                    history.append(event)
                    denied = denies(state)
                    if denied:
                        break
                    again = seek(system, tool, enc.distances, limit=limit, start=state)
                    if again is None:
                        break
                    for event in again:
                        state = system.successor(state, event)
                    history.extend(again)
                    denied = denies(state)
                if not denied:
                    continue
                if others is None:
                    others = system.subsystem([n for n in names if n != name])
                start = tuple(state[i] for i in kept)
                shown = False
                for t in sorted(denied):
                    found = seek(others, t, enc.distances, limit=limit, start=start)
                    if found is not None and self._shown_live(key, [(*history, *found)]):
                        shown = True
                        break
                if shown:
                    break

    def _live_stuck(self) -> None:
        """Open requirements that only keep the run from stopping (``followed.only_stops``),
        never live where no reachable state lets the others stop: the states from which the
        system's steps lead to such a state (backward chaining through the projections,
        ``Verdicts._can_finish``, exact on the reachable states) leave out the initial
        state. A requirement that only denies ``final_answer`` changes a pass only where the
        others allow it (where they deny it too, every fact of the pass is the same, so
        whether a cycle guard gives way is too). The projections are asked first whether
        any reachable state lets the others stop (``_never``). Asked only where the system
        itself is not known to finish (else the others, which let the run stop wherever it
        does, would), until the first whose others finish from the start, and for at most
        ``STUCK_SHARE`` of the time left in all each time it is asked (twice, ``run``: a
        chaining cut short goes on at the second ask). (`indep-conditionals-50-100-0`:
        "`parse_41` at least twice", a tool never allowed, where the others never stop
        either, 1.6 s, which the orders of their histories did not show; `-5`: "`check_45`
        at least twice", 5.4 s, where bounded model checking and the proofs had spent the
        rest of the minute.) Each one shown so also shows that the system never finishes
        (``_stuck_at_start``)."""
        decided = self.result.decided
        assert decided is not None
        system, v = self.system, self.verdicts
        stuck = self.result.no_finish
        if self.finished is not None or (stuck is not None and stuck.trace):
            return  # the system finishes, from its start at least
        if self.can_finish is not None and self.enc.holds_at(
            self.can_finish, system.components, system.initial
        ):
            return
        names = [key[5:] for key in self.open if key.startswith("live:")]
        names = [name for name in names if only_stops(system, name)]
        if not names:
            return
        until = self._share(STUCK_SHARE)
        for name in names:
            self._on_time()
            stop = v.some(v.pass_without(name).can_stop)
            if not self._never(stop):  # else no reachable state lets the others stop
                finishing = self._finishing(stop, until)
                if finishing is None:
                    return
                if self.enc.holds_at(finishing, system.components, system.initial):
                    # The others finish from the start: most likely the rest do too,
                    # without any one of them (a guess, which saves their searches' time).
                    return
            key = f"live:{name}"
            decided.add(key)
            del self.open[key]
            self.narrowed.pop(key, None)
            self._stuck_at_start()

    def _stuck_at_start(self) -> None:
        """The no-finish and the budget, where no history lets the run stop: no reachable
        state does (``_finish``), or none lets the requirements but one stop
        (``_live_stuck``), and the system lets it stop only where they do. The budget is
        "never" (``finish_depth`` stays None), and the no-finish witness the initial state,
        as the engines' first layer gives it (where it has a pass)."""
        result, explorer = self.result, self.explorer
        decided = result.decided
        assert decided is not None
        decided.add("budget")  # never: ``finish_depth`` stays None
        if "no-finish" in decided or not explorer.deciding.get(0, False):
            return
        first = explorer.nodes[0]
        result.no_finish = explorer._witness(first, (), not explorer.always_deciding[0])
        decided.add("no-finish")

    def _live_without(self) -> None:
        """Open requirements that keep the run from stopping until a tool they watch is
        called, shown live where the others let it stop and none of those tools was
        called: a directed search for such a history, in the system without the
        requirement and avoiding its tools, replayed in the whole system to a state where
        the requirement is live. A finishing history of the whole system calls those tools
        wherever the others need them as well, and the searches toward the states the
        projections left seldom reach a stop that deep (`conditionals-50-100-9`: "`final_answer`
        only after a call of `t7`" is live some 40 steps in, where BMC and those searches
        had found nothing in the minute). At most ``WITHOUT_SHARE`` of the time left."""
        system, enc, comps = self.system, self.enc, self.system.components
        names = sorted({c.requirement.name for c in comps})
        until = self._share(WITHOUT_SHARE)
        for key in list(self.open):
            name = key[5:]
            if not key.startswith("live:") or not self._keeps_stop(name):
                continue
            self._on_time()
            if until is not None and time.monotonic() >= until:
                return
            watched = frozenset(t for c in comps if c.requirement.name == name for t in c.watched)
            others = system.subsystem([n for n in names if n != name])
            history = seek(
                others,
                FINAL_ANSWER,
                enc.distances,
                limit=searched(system, SEEK_STATES),
                deadline=until,
                avoid=watched,
            )
            if history is None and (fewer := short_of(system, name)) is not None:
                # A minimum of two calls or more the others need in part: its tool capped
                # one call short (`indep-counters-50-100-5`: "`test_03` at least 3 times",
                # which others need called, live 77 steps in, found in 0.4 s where the
                # questions to Z3 had not in the minute).
                history = seek(
                    fewer,
                    FINAL_ANSWER,
                    apart(enc.distances, comps, system.tools),
                    limit=searched(system, SEEK_STATES),
                    deadline=until,
                )
            if history is not None:
                self._shown_live(key, [history])

    def _shown_live(self, key: str, histories: Sequence[tuple[Event, ...]]) -> bool:
        """Whether a prefix of one of ``histories``, replayed through the whole system
        (``along``), ends where the requirement of ``key``, open, is live; it is then
        decided so, with that prefix as its example."""
        where, comps = self.open[key], self.system.components

        def goal(state: State) -> bool:
            return bool(self.enc.holds_at(where, comps, state))

        found = along(self.system, histories, set(), goal, self.outcomes)
        if found is None:
            return False
        self._show(key, found)
        return True

    def _live_triggered(self) -> None:
        """Open requirements that act right after a call of a tool they tell apart (a force
        after it), shown live where that call comes when the others may be done: per such
        tool (at most ``TRIGGERS``), a directed search of the system without the
        requirement and kept from stopping until that tool is called (``gated``), its
        finishing history replayed in the whole system up to a state where the
        requirement is live. No finishing history need call the tool, and where other
        rules hold it back until late, neither do the searches toward it
        (`conditionals-50-100-9`: "`t43` after `t21`", live 51 steps in, right after
        `t21`, which only comes after `t8`, `t28` and `t13`, and `t28` only before `t3`;
        found among the first 100 states). Each search decides at most ``LIVE_STATES``
        states (one that finds nothing took 0.3 s at 50 tools with 2,000), all of them at
        most ``WITHOUT_SHARE`` of the time left."""
        system, enc, comps = self.system, self.enc, self.system.components
        until = self._share(WITHOUT_SHARE)
        asked: list[tuple[int, str, list[str]]] = []
        for key in self.open:
            if key.startswith("live:"):
                told: set[str] = set()
                for c in comps:
                    if c.requirement.name == key[5:]:
                        told |= told_apart(c)
                if told:
                    asked.append((len(told), key, sorted(told)[:TRIGGERS]))
        # The fewest tools first: a force after one or two tools acts right after them.
        # A tool whose search found no finish is not sought again for another requirement
        # (the system differs by one requirement: a guess, which only saves time).
        missed: set[str] = set()
        for _, key, tools in sorted(asked):
            name = key[5:]
            for tool in tools:
                if tool in missed:
                    continue
                self._on_time()
                if until is not None and time.monotonic() >= until:
                    return
                # The gate's component is new: its distances are remembered apart, and
                # only while it lives (the encoding's are keyed by the identity of the
                # components, which a new one may reuse once this one is gone).
                history = seek(
                    gated(system, name, tool),
                    FINAL_ANSWER,
                    apart(enc.distances, comps, system.tools),
                    limit=searched(system, LIVE_STATES),
                    deadline=until,
                )
                if history is None:
                    missed.add(tool)
                    continue
                calls = [history[: i + 1] for i, (t, _) in enumerate(history) if t == tool]
                if self._shown_live(key, calls):
                    break

    def _keeps_stop(self, name: str) -> bool:
        """Whether requirement ``name`` denies ``final_answer`` before any call of a tool
        it watches (in every variant of its first view)."""
        return any(
            FINAL_ANSWER in c.denied(0)
            for c in self.system.components
            if c.requirement.name == name
        )

    def _reaching(self, name: str, watched: set[str]) -> list[tuple[Event, ...]]:
        """Histories to where a tool requirement ``name`` mentions (or, asking permission,
        covers) is first allowed: where a gate of its own still holds the tool back (the
        steps before), or where it asks (`indep-approvals-50-100-4`: nine such requirements
        were left to bounded model checking, 7 s of questions up to 16 steps deep). Each
        also followed by a call of a tool it watches: where a force after a tool changes the
        pass (its tool allowed, its trigger just called), which no finishing history need
        pass. And,
        for a requirement that counts, by as many calls of that tool as it has views, all
        successful or all failing (``along`` looks at every prefix): where a cap binds, or
        a count of every status passes the others' counts of successes. On
        `indep-counters-50-100-5`, 32 caps of 2 to 17 calls were left to bounded model
        checking, 14 s of questions 12 and 16 steps deep."""
        firsts = self.result.firsts
        mine = [c for c in self.system.components if c.requirement.name == name]
        views = max(len(c.views) for c in mine)
        tools = set(self.system.mentions.get(name, frozenset()))
        requirement = mine[0].requirement
        if isinstance(requirement, AskPermissionRequirement):
            tools |= {t for t in self.system.callable if requirement.covers(t)}
        out: list[tuple[Event, ...]] = []
        for tool in sorted(tools - {FINAL_ANSWER}):
            path = firsts.get(f"tool:{tool}")
            if path is not None:
                out.append(path)  # where ``tool`` is first allowed, and the steps before
                out.extend((*path, (w, status)) for w in sorted(watched) for status in STATUSES)
                if views > 2:
                    for w in sorted(watched):
                        out.extend(counted(path, w, views))
        return out

    @cached_property
    def orders(self) -> Orders:
        """The orders the histories keep (``orders.Orders``), its closures computed once."""
        return Orders(self.system)

    @cached_property
    def followed(self) -> Followed:
        """What soft forces make needed, asked requirement by requirement (made when first
        asked for)."""
        return Followed(self.system)

    @property
    def unrolled(self) -> Unrolled:
        """The steps in Z3 (made when first asked for), holding every pair's views."""
        if self._unrolled is None:
            held = [self.projections.reached, *self.projections.every_pair(self._late)]
            self._on_time()
            self._unrolled = Unrolled(self.verdicts, interrupt=self.interrupt, held=held)
        return self._unrolled

    def _unroll(self, depths: tuple[int, ...]) -> None:
        """The verdicts still open (``open``) and the findings neither shown nor ruled out
        (``unproven``), by bounded model checking: each set within ``k`` steps, for ``k``
        along ``depths``, until each is shown or the deadline (``_shown``: each history
        found for an open verdict is walked for every other set it meets; a finding's is
        made the engines' own witness). A history found is replayed (``Unrolled``); the
        sets left open stay undecided (no history of at most ``k`` steps proves nothing
        about longer ones). (One question for every open set at once was measured no
        faster: each history it found met one set or two, and its questions cost more
        than the one-set questions they saved.)"""
        for k in depths:
            for table in (self.open, self.unproven):
                for key, where in self._wanted(table):
                    if key not in table or self._none_within(where, k):
                        continue  # met along an earlier one's history, or none that short
                    self._on_time()
                    spent = self.spent.setdefault(key, [0.0, 0.0])
                    began = time.monotonic()
                    try:
                        found = self.unrolled.reaches(
                            where, k, self.deadline, within=True, seconds=UNROLL_SECONDS
                        )
                        if found is not None:
                            self._shown(table, key, where, found, 0, UNROLL_SECONDS)
                    except GaveUp:
                        self._on_time()  # the deadline, or told to stop: else only too hard
                        continue
                    finally:
                        spent[0] += time.monotonic() - began

    def _shown(
        self,
        table: dict[str, Node],
        key: str,
        where: Node,
        found: tuple[Event, ...],
        least: int,
        seconds: float,
    ) -> None:
        """Decide what ``found``, a history into ``where`` (the states of ``key`` in
        ``table``), shows: an open verdict, with every other it meets on the way
        (``_met``); a finding, with the engines' own witness (``_smallest``, from
        ``least``, a lower bound on its steps, each question at most ``seconds``).
        ``GaveUp`` from those questions leaves the finding as it was."""
        if table is self.open:
            self._met(found)
            return
        trace = self._smallest(where, found, least, seconds)
        decided = self.result.decided
        assert decided is not None
        del table[key]
        decided.add(key)
        self._witnessed(key, trace)

    def _met(self, path: tuple[Event, ...]) -> None:
        """Decide every open verdict some state along ``path`` (a real history) shows,
        with the history up to the first such state."""
        system, enc = self.system, self.enc
        state = system.initial
        for i in range(len(path) + 1):
            if i:
                state = system.successor(state, path[i - 1])
            for key, where in list(self.open.items()):
                if not enc.holds_at(where, system.components, state):
                    continue
                self._show(key, path[:i])

    def _horizon(self, where: Node) -> tuple[int, int] | None:
        """The fewest and the most steps after which a run can be in ``where`` (a set over
        view bits), as a component whose views there a run holds only within a bounded
        number of steps shows (a step counter: ``bounds.horizon``); None where none does.
        Sound in either mode: the components' moves do not depend on the passes."""
        enc, bdd = self.enc, self.enc.bdd
        if self._counters is None:
            self._counters = []
            for comp in self.system.components:
                found = horizon(comp, self.system.callable)
                views = [v for v, most in enumerate(found.most) if most is not None]
                if views:
                    cubes = [enc.cube(enc.bits[id(comp)], v) for v in views]
                    union = bdd.false
                    for cube in cubes:
                        union |= cube
                    self._counters.append((found, views, cubes, union))
        bound: tuple[int, int] | None = None
        for found, views, cubes, union in self._counters:
            if where & ~union != bdd.false:
                continue
            meets = [v for v, cube in zip(views, cubes, strict=True) if where & cube != bdd.false]
            least = min((found.least[v] for v in meets), default=0)
            most = max((found.most[v] or 0 for v in meets), default=0)
            bound = (least, most) if bound is None else (max(least, bound[0]), min(most, bound[1]))
        return bound

    def _counted(self, seconds: float) -> None:
        """The verdicts still open whose states lie within a bounded number of steps
        (``_horizon``: a hard force at a fixed step that counts every call), by bounded
        model checking of that many steps, each question at most ``seconds`` (in the
        solver's units): none is a proof that no reachable state is there; a history
        found shows it (a finding's made its shortest witness, the engines' own, by
        ``_smallest``). Where the layers outgrew their bound before that step, this is
        what decides a forced conflict at step 5 or 7 of 50 tools (`indep-mixes-50-100-4`
        without its cycle guards: 2 s), which property-directed reachability did not in
        25 s."""
        decided = self.result.decided
        assert decided is not None
        for table in (self.unproven, self.open):
            for key, where in list(table.items()):
                if key not in table:
                    continue  # met along an earlier one's history
                bound = self._horizon(where)
                if bound is None or bound[1] > COUNTED_STEPS:
                    continue
                self._on_time()
                try:
                    found = self.unrolled.reaches(
                        where, bound[1], self.deadline, within=True, seconds=seconds
                    )
                    if found is not None:
                        self._shown(table, key, where, found, bound[0], seconds)
                except GaveUp:
                    self._on_time()  # the deadline, or told to stop: else only too hard
                    continue
                if found is None:
                    del table[key]
                    decided.add(key)

    def _smallest(
        self, where: Node, found: tuple[Event, ...], least: int, seconds: float
    ) -> list[Event]:
        """The lexicographically smallest of the shortest histories into ``where`` (the
        engines' own witness), from ``found``, one of them, and ``least``, a lower bound on
        their steps: bounded model checking for one shorter until there is none, then a
        step at a time the first step, in declared order (``Verdicts._steps_from``), that
        a history of those steps goes on from, found by halving the steps in question.
        ``GaveUp`` as the questions raise it."""
        unrolled, deadline = self.unrolled, self.deadline
        steps = len(found)
        while steps > least:
            shorter = unrolled.reaches(where, steps - 1, deadline, within=True, seconds=seconds)
            if shorter is None:
                break
            steps = len(shorter)
        state = self.system.initial
        trace: list[Event] = []
        for at in range(steps):
            options = self.verdicts._steps_from(state)
            low, high = 0, len(options) - 1
            while low < high:
                middle = (low + high) // 2
                ahead = [after for _, after in options[low : middle + 1]]
                if unrolled.reaches_by(where, steps, at, state, ahead, deadline, seconds=seconds):
                    high = middle
                else:
                    low = middle + 1
            event, state = options[low]
            trace.append(event)
        if not self.enc.holds_at(where, self.system.components, state):
            raise AssertionError("the smallest history ends outside its target")
        return trace

    def _witnessed(self, key: str, trace: list[Event]) -> None:
        """The finding of ``key`` (decided) with its shortest witness, ``trace``."""
        result, v = self.result, self.verdicts
        if key == "deadlock":
            result.deadlock = v.witness_along(trace, _conflict_kind("deadlock"))
        elif key == "forced-tie":
            result.tie = v.witness_along(trace, _has_tie)
        elif key == "no-finish":
            found = v.witness_along(trace, _has_pass)
            result.no_finish = Witness(found.trace, (), found.depends_on_checks)
        else:
            tool = key.removeprefix("forced-conflict:")
            result.forced_conflicts[tool] = v.witness_along(trace, _forced_on(tool))

    def _prove(self, most: float, *, balanced: bool = False) -> None:
        """What is still open, proved never by property-directed reachability over the
        same steps (``Unrolled.never``), at most ``most`` seconds each: a finding shown
        unreachable (then it is none), a tool never allowed, a requirement never live.
        Unless ``balanced``, one proof for all of them first (``_proved_all``).
        ``balanced``: an open verdict's proofs take no more time in all than its questions
        to the unrolled steps took (``spent``), at least ``PROVE_FIRST`` a try; one whose
        proofs took as long already waits for the next depth."""
        decided = self.result.decided
        assert decided is not None
        if not balanced and self._proved_all(most):
            return
        for table in (self.unproven, self.open):
            for key, where in self._wanted(table):
                self._on_time()
                seconds = most
                spent = self.spent.setdefault(key, [0.0, 0.0])
                if balanced and table is self.open:
                    if spent[1] >= spent[0]:
                        continue
                    seconds = min(most, max(PROVE_FIRST, spent[0] - spent[1]))
                if self.deadline is not None:  # the time left, shared among what is open
                    left = self.deadline - time.monotonic()
                    waiting = len(self.unproven) + len(self.open)
                    seconds = min(seconds, max(PROVE_LEAST, left / max(1, waiting)))
                proved, took = self._proof(where, seconds)
                spent[1] += took
                if proved:
                    del table[key]
                    decided.add(key)

    def _proof(self, where: Node, seconds: float) -> tuple[bool, float]:
        """Whether Spacer proved no reachable state is in ``where`` within ``seconds``
        (``Unrolled.never``), and the seconds it took; ``_Late`` past the deadline or when
        told to stop."""
        began = time.monotonic()
        try:
            proved = self.unrolled.never(where, seconds, self.deadline)
        except GaveUp:
            raise _Late from None
        return proved, time.monotonic() - began

    def _proved_all(self, most: float) -> bool:
        """Whether one proof showed every verdict ``_prove`` would ask about never (at most
        ``most`` seconds): no reachable state is in the union of their states. Then each is
        decided; else none is, and each is asked on its own. Where most are never, one
        proof is as quick as each of them: on `indep-forced-50-100-6`, twelve requirements
        never live, each proved so in 0.4-0.6 s (three gave up at the limit), the union in
        0.56 s."""
        decided = self.result.decided
        assert decided is not None
        asked = [
            (table, key, where)
            for table in (self.unproven, self.open)
            for key, where in self._wanted(table)
        ]
        if len(asked) < 2:
            return False
        self._on_time()
        union = self.enc.bdd.false
        for _, _, where in asked:
            union |= where
        seconds = most
        if self.deadline is not None:  # as long as one of them would have, at most
            left = self.deadline - time.monotonic()
            seconds = min(seconds, max(PROVE_LEAST, left / (len(asked) + 1)))
        proved, took = self._proof(union, seconds)
        for _, key, _ in asked:
            self.spent.setdefault(key, [0.0, 0.0])[1] += took / len(asked)
        if proved:
            for table, key, _ in asked:
                del table[key]
                decided.add(key)
        return proved

    def _finish_unrolled(self) -> None:
        """The least number of steps before ``final_answer``, where the searches found none
        within the budget and the projections did not rule it out. None at all where the
        start is not among the states that can finish (``can_finish``). Else by bounded
        model checking, each question "within ``k`` steps" with every needed tool called:
        first a history at all, looking twice as far each time, each depth with none
        raising ``finish_after``; then, with a history of ``n`` steps known, whether one of
        at most ``n - 1`` exists. None there makes ``n`` exact, and decides the budget; a
        shorter one found is asked about in turn. A question cut short by the deadline
        leaves the budget undecided, with what was shown so far."""
        result = self.result
        decided = result.decided
        assert decided is not None
        if "budget" in decided:
            return
        system, v = self.system, self.verdicts
        if self.can_finish is not None and not self.enc.holds_at(
            self.can_finish, system.components, system.initial
        ):
            decided.add("budget")  # no history ever lets the run stop
            return
        target = v.some(v.pass_.can_stop)
        least = max(result.depth_done, result.finish_after) + 1
        best = self.finished
        k = least
        while best is None:
            if k > UNROLL_STEPS:
                return
            best = self._finish_within(target, k)
            if best is not None:
                result.finish_shown = len(best)
            else:
                result.finish_after = max(result.finish_after, k)
                if k >= UNROLL_STEPS:
                    return
                k = min(max(2 * k, 1), UNROLL_STEPS)
        tried = False
        while len(best) > max(least, result.finish_after + 1):
            # Near the lower bound, a history as short as the bound first: one question
            # (finding one is quicker than showing there is none) that may end the search;
            # without one, a step shorter each time.
            bound = max(least, result.finish_after + 1)
            steps = len(best) - 1
            if not tried and len(best) - bound <= SHORT_GAP:
                steps, tried = bound, True
            shorter = self._finish_within(target, steps)
            if shorter is None:
                result.finish_after = max(result.finish_after, steps)
                if steps < len(best) - 1:
                    continue
                break
            best = shorter
            result.finish_shown = len(best)
        self._exact(best)

    def _exact(self, best: tuple[Event, ...]) -> None:
        """Decide the budget with ``best``, a finishing history shown to be a shortest one
        (no history of fewer steps lets the run stop)."""
        result = self.result
        decided = result.decided
        assert decided is not None
        n = len(best)
        decided.add("budget")
        result.finish_depth = n
        result.allowed_tools.add(FINAL_ANSWER)
        if n <= self.budget:
            result.finishes_within = n
        result.firsts["finish"] = best
        if best not in self.paths:
            self.paths.append(best)

    def _finish_within(self, target: Node, steps: int) -> tuple[Event, ...] | None:
        """A history of at most ``steps`` steps to ``target`` (replayed), or None when the
        unrolled steps show there is none."""
        self._on_time()
        try:
            return self.unrolled.reaches(
                target, steps, self.deadline, within=True, calls=self.calls
            )
        except GaveUp:
            raise _Late from None  # the deadline, or told to stop


class _Exact(_Decider):
    """The verdicts one by one by the exact steps alone, for priority mode: there a higher
    tier overrides a component's denial, so neither a component on its own nor any two
    bound the runs, and nothing that reasons from them applies (the projections, the
    orders of the histories, the relaxed distances as bounds, the calls every finishing
    history makes). What is left decides each verdict only by a real history, replayed
    through the runtime's reasoner (the probe, the directed searches, the histories known
    followed, bounded model checking), by the breadth-first layers of the encoding while
    they stay small, by the layers backward from a verdict's states (``StepsBack``), or by
    a proof over the encoding's own steps (the backward chaining; property-directed
    reachability). Slower to decide a "never" than the strict analysis, but it needs no
    reachable set: `mixed-50-100-7` (a cycle guard's window of 10 calls over 50 tools,
    1.3·10¹⁰ states reached in the minute without a fixpoint) is complete in 35 s."""

    exact = True

    def _finish_back(self, seconds: float | None) -> None:
        """The budget, by the layers backward from the states that may stop (at most
        ``seconds`` more): the least number of steps before ``final_answer``, with the
        shortest history; or none at all, where the layers end first (then they hold
        every state that can finish, for the no-finish). Cut short, each whole layer
        raises the lower bound (``finish_after``)."""
        result = self.result
        decided = result.decided
        assert decided is not None
        if "budget" in decided:
            return
        v = self.verdicts
        target = v.some(v.pass_.can_stop)
        back = self._stepped_back(target, seconds)
        if back is None:
            back = self._backs[target]
            result.finish_after = max(result.finish_after, len(back.layers) - 1)
            return
        if back.met is not None:
            self._exact(tuple(back.trace()))
            return
        decided.add("budget")  # never: ``finish_depth`` stays None
        if self.can_finish is None:
            self.can_finish = back.seen

    def _never_called(self, tool: str) -> bool:
        return False  # the orders hold only where every denial does

    def _without_dead(self) -> bool:
        return False  # no projections to rebuild

    def _finish_bounded(self) -> None:
        pass  # no bound from the components alone: bounded model checking's, later

    def _first_stuck(self) -> bool:
        return False  # a state is shown stuck only by the states that can finish

    def _live_waiting(self) -> None:
        pass  # what the others need holds only where every denial does

    def _live_stuck(self) -> None:
        pass  # as ``_live_waiting``

    def _stuck_in_layers(self) -> bool:
        return False  # as ``_first_stuck``
