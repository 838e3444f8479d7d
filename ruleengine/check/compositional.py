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
probe explored, not the reachable ones). It applies where the symbolic engine does (strict
mode, literal rules): it reads the encoding's pass diagrams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ruleengine.check.analysis import Analysis, Witness, listed
from ruleengine.check.bounds import UNREACHABLE
from ruleengine.check.explicit import Outcome, _Explorer
from ruleengine.check.histories import LIVE_STATES, SEEK_STATES, Finishing, along, searched, toward
from ruleengine.check.histories import Late as _Late
from ruleengine.check.projections import Projections
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.seek import Estimates, seek
from ruleengine.check.symbolic_encoding import EncodingBase
from ruleengine.check.symbolic_layers import _OutOfTime
from ruleengine.check.symbolic_verdicts import Verdicts, _conflict_kind, _forced_on, _has_tie
from ruleengine.check.system import Event, State, System
from ruleengine.check.unrolled import GaveUp, Unrolled
from ruleengine.ir import FINAL_ANSWER
from ruleengine.state import STATUSES

__all__ = ["analyse_compositional"]

Node = Any
"""A BDD node of the encoding's manager."""

PROBE_STATES = 4096
"""States the breadth-first probe explores (its depth is exact)."""


LAYERS = 8
"""Breadth-first layers (of the encoding) searched for a finding's shortest witness..."""

LAYER_NODES = 50_000
"""... while the states they reached take at most this many BDD nodes."""

MANAGER_NODES = 2_000_000
"""BDD nodes the manager may hold before the steps back stop (a few hundred MiB)."""

FINISH_COMPONENTS = 200
"""Components up to which the steps back are tried: they build the encoding's transition
relations, which past that (400 requirements over 200 tools) take gigabytes."""

FINISH_ROUNDS = 16
"""Steps back from the states that may stop, to show that every state can finish."""

UNROLL_DEPTHS = (2, 4, 8, 12, 16, 24, 32, 48, 64)
"""The numbers of steps within which the open "sometimes" verdicts are asked of the
unrolled steps, in turn (the easy ones first, each question costs more the deeper it
goes) ..."""

UNROLL_FIRST = 5
"""... the first this many before the proofs that they never hold (``_prove``), the rest
after."""

UNROLL_SECONDS = 2.0
"""The longest one of those questions may take (a harder one is left for the next
depth)."""

PROVE_SECONDS = 10.0
"""The longest one proof that a set of states is never reached may take; with a deadline,
the time left is shared among those still open, at least ``PROVE_LEAST`` each."""

PROVE_LEAST = 2.0

UNROLL_STEPS = 64
"""Steps up to which the least number before ``final_answer`` is asked of them."""

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
) -> Analysis:
    """The verdicts of ``system`` decided one by one (see the module's docstring): those
    decided are named in ``Analysis.decided``, the analysis is complete when every one is.
    ``budget``: the steps before ``final_answer`` that ``max_iterations`` allows. A probe
    that explores every state gives the explicit engine's own analysis. Past ``deadline``
    it returns what it decided so far, and so it does once ``interrupt`` (asked between
    steps) says to stop. Deterministic but for where those cut it short."""
    probe_limit = PROBE_STATES if probe_states is None else probe_states
    explorer = _Explorer(system, probe_limit, deadline, True)
    probe = explorer.run()
    if probe.complete or probe.reason is None or "time limit" in probe.reason:
        return probe
    decider = _Decider(system, enc, explorer, probe, budget, deadline, interrupt)
    result = decider.result
    try:
        decider.run()
    except _Late:
        cut = True
    else:
        cut = False
    left = decider.undecided()
    result.complete = not left
    result.undecided = tuple(left)
    if left:
        why = "the time limit ran out" if cut else "the rest is out of its reach"
        result.reason = (
            f"verdicts decided one by one, {len(left)} left undecided ({why}): {listed(left)}"
        )
    return result


class _Decider:
    """One compositional analysis (``analyse_compositional``): ``result`` fills as each
    verdict is decided, and ``result.decided`` names each one."""

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        explorer: _Explorer,
        probe: Analysis,
        budget: int,
        deadline: float | None,
        interrupt: Callable[[], bool] | None = None,
    ) -> None:
        self.system, self.enc, self.explorer = system, enc, explorer
        self.budget, self.deadline, self.interrupt = budget, deadline, interrupt
        self.verdicts = v = Verdicts(
            system, enc, None, deadline, None, budget, witness_states=WITNESS_STATES
        )
        v.begin()
        self.projections = Projections(system, enc)
        self.paths: list[tuple[Event, ...]] = []
        """Histories found so far (to tools, to a finish), for the liveness searches."""
        self.result = Analysis(
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
            decided=set(),
        )
        p = v.pass_
        self.hard = [t for t in enc.tools if p.hard[t] != enc.bdd.false]
        """The tools some state hard-forces (the others never conflict by force)."""
        self.open: dict[str, Node] = {}
        """The "sometimes" verdicts the searches left open, by key: the states that show
        them, for the unrolled steps (``_unroll``)."""
        self.needed: frozenset[str] = frozenset()
        """Tools every finishing history calls (``Relaxed.needed``), once asked."""
        self.narrowed: dict[str, Node] = {}
        """Per open requirement, the states where it is live that the projections left."""
        self.unproven: dict[str, Node] = {}
        """Findings neither shown nor ruled out (``_first``): their states, for a proof
        that none is reachable (``_prove``)."""
        self._unrolled: Unrolled | None = None

    def keys(self) -> list[str]:
        """Every verdict an analysis decides, as ``Analysis.decided`` names them."""
        system = self.system
        return [
            "deadlock",
            *(f"forced-conflict:{t}" for t in self.enc.tools),
            "forced-tie",
            "budget",
            "no-finish",
            *(f"tool:{t}" for t in system.callable),
            *(f"live:{name}" for name in sorted({c.requirement.name for c in system.components})),
        ]

    def undecided(self) -> list[str]:
        decided = self.result.decided
        assert decided is not None
        return [k for k in self.keys() if k not in decided]

    def _never(self, where: Node) -> bool:
        """Whether no reachable state is in ``where``, by the projections' diagrams or by
        every pair of them at once (``_outside``): True is a proof."""
        self._on_time()
        return self.projections.never(where, self.deadline) or self._outside(where)

    def _outside(self, where: Node) -> bool:
        """Whether no state in ``where`` is in every pair's reachable views at once
        (``Unrolled.outside``): True is a proof that no reachable state is."""
        try:
            return self.unrolled.outside(where, UNROLL_SECONDS, self.deadline)
        except GaveUp:
            raise _Late from None  # the deadline, or told to stop

    def _on_time(self) -> None:
        if self._late():
            raise _Late

    def _late(self) -> bool:
        """Whether the deadline passed or ``interrupt`` says to stop."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            return True
        return self.interrupt is not None and self.interrupt()

    def run(self) -> None:
        result = self.result
        decided = result.decided
        assert decided is not None
        p, some = self.verdicts.pass_, self.verdicts.some
        inconsistent = ~p.consistent
        if result.deadlock is None:
            result.deadlock = self._first(
                some(inconsistent & p.stuck), _conflict_kind("deadlock"), "deadlock"
            )
        else:
            decided.add("deadlock")
        forcing = inconsistent & ~p.stuck
        for t in self.enc.tools:
            key = f"forced-conflict:{t}"
            if t in result.forced_conflicts or t not in self.hard:
                decided.add(key)
                continue
            target = some(forcing & p.hard[t])
            found = self._first(target, _forced_on(t), key)
            if found is not None:
                result.forced_conflicts[t] = found
        if result.tie is None:
            result.tie = self._first(some(p.tie), _has_tie, "forced-tie")
        else:
            decided.add("forced-tie")
        self._tools()
        self._finish()
        self._no_finish()
        self._live()
        self._unroll(UNROLL_DEPTHS[:UNROLL_FIRST])
        self._live_never()
        self._live_searched()
        self._prove()
        self._unroll(UNROLL_DEPTHS[UNROLL_FIRST:])
        self._finish_unrolled()

    def _first(self, target: Node, finding: Callable[[Outcome], bool], key: str) -> Witness | None:
        """The shortest witness of a finding the probe did not meet (the engines' own:
        breadth-first layers of the encoding, while they stay small), or None; ``key`` is
        decided when a witness is found or no reachable state has the finding (shown by the
        projections or by layers that reach every state)."""
        decided = self.result.decided
        assert decided is not None
        if self._never(target):
            decided.add(key)
            return None
        v, bdd = self.verdicts, self.enc.bdd
        try:
            for d in range(LAYERS + 1):
                self._on_time()
                if len(bdd) > MANAGER_NODES:
                    break
                layer = v._layer(d)
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
            if tool in result.allowed_tools or self._never(some(p.allowed[tool])):
                decided.add(key)
                continue
            found = seek(
                self.system, tool, self.enc.distances, limit=searched(self.system, SEEK_STATES)
            )
            if found is not None:
                decided.add(key)
                result.allowed_tools.add(tool)
                result.firsts.setdefault(f"tool:{tool}", found)
            else:
                self.open[key] = some(p.callable[tool])

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
        found = seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=searched(self.system, SEEK_STATES),
        )
        if found is not None:
            self.paths.append(found)
            if len(found) > self.budget:
                found = seek(
                    self.system,
                    FINAL_ANSWER,
                    self.enc.distances,
                    limit=searched(self.system, SEEK_STATES),
                    within=self.budget,
                )
        if found is not None:
            decided.add("budget")
            result.finishes_within = len(found)
            result.allowed_tools.add(FINAL_ANSWER)
            result.firsts.setdefault("finish", found)
        elif self._never(some(p.can_stop)):
            decided.add("budget")  # never: ``finish_depth`` stays None
        else:
            # Undecided; but the components' relaxed distances bound it from below.
            least = Estimates(self.system, FINAL_ANSWER, self.enc.distances).bound(
                self.system.initial
            )
            if least is None:
                decided.add("budget")  # some component alone never lets the run stop
            else:
                # Each tool every finishing history calls costs a step of its own.
                self.needed = Relaxed(self.system.components, self.system.tools).needed()
                result.finish_after = max(result.finish_after, least - 1, len(self.needed) - 1)

    def _no_finish(self) -> None:
        """The first probe state, breadth-first, from which no history finishes, when
        every state before it is shown to finish (the engines' own witness); else, none
        at all where the projections show that every reachable state that has a pass can
        finish within a few steps (``_finishing_soon``)."""
        if not self._first_stuck() and len(self.system.components) <= FINISH_COMPONENTS:
            stuck = self._deciding & ~self._finishing_soon()
            if stuck == self.enc.bdd.false or self._never(stuck):
                decided = self.result.decided
                assert decided is not None
                decided.add("no-finish")

    def _first_stuck(self) -> bool:
        """Look for the witness in the probe (see ``_no_finish``): whether it decided."""
        result, explorer, system = self.result, self.explorer, self.system
        decided = result.decided
        assert decided is not None
        kept = [
            (i, self.enc.distances(c))
            for i, c in enumerate(system.components)
            if not c.requirement.yielding
        ]
        stop = self.verdicts.some(self.verdicts.pass_.can_stop)
        finishing = Finishing(system, self.enc)
        for i, node in enumerate(explorer.nodes):
            if i not in explorer.deciding:
                return False  # not expanded: the probe stopped before it
            if not explorer.deciding[i] or explorer.finishing[i]:
                continue
            self._on_time()
            stuck = any(d.steps[node.state[k]] >= UNREACHABLE for k, d in kept)
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

    @property
    def _deciding(self) -> Node:
        """The states with a pass under some check values."""
        return self.verdicts.some(self.verdicts.pass_.consistent)

    def _finishing_soon(self) -> Node:
        """States (reachable or not) from which a real path of at most ``FINISH_ROUNDS``
        steps, through states with a pass, reaches one that may stop: preimages of the
        encoding's steps, cluster by cluster, while the set stays under ``LAYER_NODES`` and
        the manager under ``MANAGER_NODES`` (a step that moves nothing adds nothing)."""
        v, bdd = self.verdicts, self.enc.bdd
        deciding = self._deciding
        soon = deciding & v.some(v.pass_.can_stop)
        try:
            for _ in range(FINISH_ROUNDS):
                more = soon
                if len(bdd) > MANAGER_NODES:
                    return soon
                for cluster in v.clusters:
                    self._on_time()
                    if more.dag_size > LAYER_NODES:
                        return soon
                    if deciding & cluster.guard != bdd.false:
                        more |= deciding & v._preimage(soon, cluster)
                if more == soon:
                    break
                soon = more
        except _OutOfTime:
            raise _Late from None
        return soon

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

    def _live_searched(self) -> None:
        """Open requirements shown live by a state along (or a variation of) a history
        found so far, or by a directed search towards the states the projections left."""
        result = self.result
        decided = result.decided
        assert decided is not None
        system, enc, comps = self.system, self.enc, self.system.components
        watched: dict[str, set[str]] = {}
        for c in comps:
            watched.setdefault(c.requirement.name, set()).update(c.watched)
        paths = set(self.paths)
        for key, path in result.firsts.items():
            if key.startswith("tool:") and key[5:] != FINAL_ANSWER:
                paths.update((*path, (key[5:], status)) for status in STATUSES)
            else:
                paths.add(path)
        ordered = sorted(paths, key=lambda p: (-len(p), p))
        for key, left in self.narrowed.items():
            where = self.open.get(key)
            if where is None:
                continue
            self._on_time()
            name = key[5:]

            def goal(state: State, where: Node = where) -> bool:
                return bool(enc.holds_at(where, comps, state))

            found = along(system, ordered, watched[name], goal)
            if found is None:
                found = toward(
                    system,
                    enc,
                    left,
                    goal=goal,
                    limit=searched(system, LIVE_STATES),
                    deadline=self.deadline,
                )
            if found is not None:
                decided.add(key)
                del self.open[key]
                result.live.add(name)
                result.firsts.setdefault(key, found)

    @property
    def unrolled(self) -> Unrolled:
        """The steps in Z3 (made when first asked for), holding every pair's views."""
        if self._unrolled is None:
            held = [self.projections.reached, *self.projections.every_pair(self._late)]
            self._on_time()
            self._unrolled = Unrolled(self.verdicts, interrupt=self.interrupt, held=held)
        return self._unrolled

    def _unroll(self, depths: tuple[int, ...]) -> None:
        """The verdicts still open (``open``), by bounded model checking: each open set
        within ``k`` steps, for ``k`` along ``depths``, until each is shown or the
        deadline; each history found is walked for every other set it meets (``_met``).
        A history found is replayed (``Unrolled``); the sets left open stay undecided (no
        history of at most ``k`` steps proves nothing about longer ones). (One question for
        every open set at once was measured no faster: each history it found met one set
        or two, and its questions cost more than the one-set questions they saved.)"""
        for k in depths:
            for key, where in list(self.open.items()):
                if key not in self.open:
                    continue  # met along an earlier one's history
                self._on_time()
                try:
                    found = self.unrolled.reaches(
                        where, k, self.deadline, within=True, seconds=UNROLL_SECONDS
                    )
                except GaveUp:
                    self._on_time()  # the deadline, or told to stop: else only too hard
                    continue
                if found is not None:
                    self._met(found)

    def _met(self, path: tuple[Event, ...]) -> None:
        """Decide every open verdict some state along ``path`` (a real history) shows,
        with the history up to the first such state."""
        result, system, enc = self.result, self.system, self.enc
        decided = result.decided
        assert decided is not None
        state = system.initial
        for i in range(len(path) + 1):
            if i:
                state = system.successor(state, path[i - 1])
            for key, where in list(self.open.items()):
                if not enc.holds_at(where, system.components, state):
                    continue
                del self.open[key]
                decided.add(key)
                result.firsts.setdefault(key, path[:i])
                if key.startswith("tool:"):
                    result.allowed_tools.add(key[5:])
                else:
                    result.live.add(key[5:])

    def _prove(self) -> None:
        """What is still open, proved never by property-directed reachability over the
        same steps (``Unrolled.never``), at most ``PROVE_SECONDS`` each: a finding shown
        unreachable (then it is none), a tool never allowed, a requirement never live."""
        decided = self.result.decided
        assert decided is not None
        for table in (self.unproven, self.open):
            for key, where in list(table.items()):
                self._on_time()
                seconds = PROVE_SECONDS
                if self.deadline is not None:  # the time left, shared among what is open
                    left = self.deadline - time.monotonic()
                    waiting = len(self.unproven) + len(self.open)
                    seconds = min(seconds, max(PROVE_LEAST, left / max(1, waiting)))
                try:
                    proved = self.unrolled.never(where, seconds, self.deadline)
                except GaveUp:
                    raise _Late from None
                if proved:
                    del table[key]
                    decided.add(key)

    def _finish_unrolled(self) -> None:
        """The least number of steps before ``final_answer``, where the searches found none
        within the budget and the projections did not rule it out: bounded model checking
        from the first depth nothing has ruled out yet. Exact, so it decides the budget,
        when the first history is found; each depth shown empty raises ``finish_after``."""
        result = self.result
        decided = result.decided
        assert decided is not None
        if "budget" in decided:
            return
        v = self.verdicts
        target = v.some(v.pass_.can_stop)
        k = max(result.depth_done, result.finish_after) + 1
        while k <= UNROLL_STEPS:
            self._on_time()
            try:
                found = self.unrolled.reaches(target, k, self.deadline, calls=self.needed)
            except GaveUp:
                raise _Late from None  # the deadline, or told to stop
            if found is None:
                result.finish_after = k  # none at k, nor (shown before) earlier
                k += 1
                continue
            decided.add("budget")
            result.finish_depth = k
            result.allowed_tools.add(FINAL_ANSWER)
            if k <= self.budget:
                result.finishes_within = k
            result.firsts.setdefault("finish", found)
            self.paths.append(found)
            return
