"""The symbolic engine's verdicts as sets of states, and the witnesses that show them.

``Verdicts`` extends an analysis's layers (``Layers``) with what the findings are made
of: the existential verdicts (a deadlock, a forced conflict, a forced tie, the first
finishing depth), the states that can still finish (``_can_finish``, for no-finish and
for a path within the budget), and where each requirement can be live (``_unmasked``,
``_live_at``: the pass with and without its records). A verdict that holds somewhere gets
a witness: the lexicographically smallest shortest trace into its set (``_witness``), found
from independent groups where the system has them (``symbolic_groups``), else forward
through concrete states while the layers are small, else back through preimages.
Which of these an analysis computes, and the liveness decided at concrete states, are
``symbolic``'s.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from ruleengine.aggregate import Clash
from ruleengine.check._bdd import restricted
from ruleengine.check.analysis import Witness
from ruleengine.check.explicit import Outcome, callable_at, decide
from ruleengine.check.seek import seek
from ruleengine.check.symbolic_encoding import (
    _FACT_TABLES,
    EncodingBase,
    Node,
    _differ,
    _Pass,
)
from ruleengine.check.symbolic_groups import Groups, TooComplex, split
from ruleengine.check.symbolic_layers import Layers, _Cluster, _Group, _OutOfTime
from ruleengine.check.symbolic_priority import decided
from ruleengine.check.system import Component, Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.requirements.permission import AskPermissionRequirement
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES

__all__ = ["Chase", "StepsBack", "Verdicts"]

SEEK_STATES = 256
"""States a directed search (``seek``) decides for a tool allowed, or a stop within the
budget, before the breadth-first layers (which reach a deep one only through every state
before it)."""

FOCUSED_WITNESS_STATES = 64
"""``Verdicts.witness_states`` for an analysis that answers one question (a core's): its one
witness shares the concrete search with no other."""


class Verdicts(Layers):
    """One symbolic analysis's verdicts over its sets of states, with their witnesses."""

    def __init__(
        self,
        system: System,
        enc: EncodingBase,
        max_states: int | None,
        deadline: float | None,
        focus: str | None,
        budget: int | None = None,
        *,
        witness_states: int,
    ) -> None:
        super().__init__(system, enc, max_states, deadline, focus)
        self.budget = budget
        self.witness_states = witness_states
        """Up to this many states in the layers before a witness's depth, its trace is found
        by a search of concrete states (``_forward_trace``); and up to this many states of
        the target at that depth are listed rather than tested one by one (the engine's
        ``WITNESS_STATES``)."""
        self.can_finish: Node | None = None
        self._live_where: dict[str, Node] = {}
        self._counts: dict[str, tuple[dict[str, Node], dict[str, Node]]] | None = None
        self._concrete: list[list[tuple[State, tuple[Event, ...]]]] = []
        """``_concrete_layer``'s layers so far."""
        self._reached: set[State] = set()
        """The states in ``_concrete``."""
        self.exact = False
        """Whether ``reach`` is every reachable state and no layer was pruned: then depths
        and witnesses may come from independent groups (``symbolic_groups``)."""
        self._independent: Groups | bool | None = False
        """``split``'s groups once asked for (False: not yet)."""

    # -- verdicts ----------------------------------------------------------------------------

    def _existential(self) -> None:
        """Findings with a witness: conflicts, ties, the finishing depth."""
        p, some, result = self.pass_, self.some, self.result
        focus = self.focus
        if focus in (None, "finish"):
            within = self._finish_path() if focus is None else None
            if within is not None:
                result.finishes_within = within
            else:
                result.finish_depth = self._depth(some(p.can_stop))
        if focus is not None:
            return
        inconsistent = ~p.consistent
        deadlock = some(inconsistent & p.stuck)
        if self._depth(deadlock) is not None:
            result.deadlock = self._witness(deadlock, _conflict_kind("deadlock"))
        forcing = inconsistent & ~p.stuck
        for t in self.enc.tools:
            target = some(forcing & p.hard[t])
            if self._depth(target) is not None:
                result.forced_conflicts[t] = self._witness(target, _forced_on(t))
        tie = some(p.tie)
        if self._depth(tie) is not None:
            result.tie = self._witness(tie, _has_tie)

    def _can_finish(
        self,
        finish: Node,
        reach: Node | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> Node:
        """The reachable states from which some path of deciding states reaches ``finish``
        (``reach``: a set of states that holds every reachable one, by default the reachable
        set; the answer is then exact on the reachable states, for a path from one passes
        only through reachable ones); ``_OutOfTime`` once ``give_up()`` says so, as past
        the deadline (``Chase``, which a caller that may come back keeps instead)."""
        return Chase(self, finish, self.reach if reach is None else reach).run(give_up)

    def _range(self, g: _Group | _Cluster) -> Node:
        """The states one step of ``g`` can lead to (from any state its guard holds in)."""
        if g.range is None:
            g.range = self._image(self.bdd.true, g)
        return g.range

    def _no_finish(self) -> None:
        bdd, p, some, reach = self.bdd, self.pass_, self.some, self.reach
        deciding = reach & some(p.consistent)
        reaches = self.can_finish = self._can_finish(some(p.can_stop))
        stuck = deciding & ~reaches
        if stuck != bdd.false:
            # The finding at its end: the state has a pass (it is stuck, not in conflict).
            witness = self._witness(stuck, _has_pass)
            self.result.no_finish = Witness(witness.trace, (), witness.depends_on_checks)

    def _finish_path(self) -> int | None:
        """The length of some path to a state that may stop, when one within the budget is
        found by walking forward through states that can still finish (taking the first
        step, in declared order, to a state not visited yet), or else by a directed search
        (``seek``, ``SEEK_STATES``). Budgets are checked against it without breadth-first
        layers; ``finish_depth`` is only computed when both fail. (The walk wanders where
        counters keep every state new: on `indep-conditionals-20-40-5` it passed the budget
        of 38 steps, and the 26 layers to the first stop took 2.3 s of the analysis's 2.6 s;
        the search found 36 steps in 0.01 s.)"""
        if self.budget is None or self.can_finish is None:
            return None
        walked = self._finish_walk(self.budget)
        if walked is not None:
            return walked
        found = seek(
            self.system,
            FINAL_ANSWER,
            self.enc.distances,
            limit=SEEK_STATES,
            within=self.budget,
            deadline=self.deadline,
        )
        return None if found is None else len(found)

    def _finish_walk(self, budget: int) -> int | None:
        """``_finish_path``'s walk through the states that can still finish."""
        assert self.can_finish is not None
        system, enc = self.system, self.enc
        finish = self.some(self.pass_.can_stop)
        comps = system.components
        state = system.initial
        seen = {state}
        for length in range(budget + 1):
            if enc.holds_at(finish, comps, state):
                return length
            step = None
            for tool in system.callable:
                if not enc.holds_at(self._callable(tool), comps, state):
                    continue
                for status in STATUSES:
                    after = system.successor(state, (tool, status))
                    if after not in seen and enc.holds_at(self.can_finish, comps, after):
                        step = after
                        break
                if step is not None:
                    break
            if step is None:
                return None
            seen.add(step)
            state = step
        return None

    # -- where requirements are live ---------------------------------------------------------

    def _unmasked(self, name: str) -> Node:
        """The states (checks quantified; reachable or not) where requirement ``name``'s
        rules change a fact the pass is made of or bid for a soft force, or everywhere when
        it yields or asks permission. Outside them, dropping its records leaves every fact of
        ``_pass`` as it is (another requirement denies, hides, allows, shows or hard-forces
        the same tool there; an allow or show that clashes with nothing is no fact at all),
        and every bid, so the pass is the same: the requirement is not live there. Far
        cheaper than ``_live_at`` (no pass without it), and exact enough for requirements
        masked everywhere. In priority mode, where a rule another requirement states too may
        still decide a tier: ``_unmasked_by_tiers``.
        """
        bdd = self.bdd
        requirement = next(
            c.requirement for c in self.system.components if c.requirement.name == name
        )
        if requirement.yielding or isinstance(requirement, AskPermissionRequirement):
            return bdd.true
        if self.system.mode != "strict":
            return self._unmasked_by_tiers(name)
        counts = self._fact_counts()
        out = bdd.false
        for where in self._stated(name, "soft").values():
            out |= where  # wherever it bids, whatever the others bid
        for table in _FACT_TABLES:
            at_least_two = counts[table][1]
            for t, here in self._stated(name, table).items():
                changed = here & ~at_least_two[t]  # no other requirement states it there
                if table == "allow":
                    changed &= counts["deny"][0][t]  # only a clash with a denial counts
                elif table == "show":
                    changed &= counts["hide"][0][t]
                out |= changed
        return self.some(out)

    def _unmasked_by_tiers(self, name: str) -> Node:
        """``_unmasked`` in priority mode: where requirement ``name`` emits a record that
        restricts or bids, or one that requires a tool allowed which some lower-priority
        record denies there. Elsewhere it emits nothing, or only permissions that override
        nothing: its records dropped, every tier keeps what it kept (a permission contradicts
        only a denial, and its own priority's denials come before it), and the pass is the
        same."""
        bdd, enc = self.bdd, self.enc
        out = bdd.false
        for comp in self.system.components:
            if comp.requirement.name != name:
                continue
            mine = comp.requirement.priority
            for record, where in enc.records(comp).items():
                if record.restrict is not None or record.soft is not None:
                    out |= where
                    continue
                # INVARIANT: a record is kept in ``records`` only where it asserts something.
                assert record.permit is not None
                allows = record.permit[2]
                below = bdd.false
                for other in self.system.components:
                    if other.requirement.priority >= mine:
                        continue
                    for theirs, there in enc.records(other).items():
                        denies = 0 if theirs.restrict is None else theirs.restrict[0]
                        if denies & allows:
                            below |= there
                out |= where & below
        return self.some(out)

    def _stated(self, name: str, table: str) -> dict[str, Node]:
        """Per tool, where requirement ``name`` (all its factors) states the fact ``table``
        of ``_Facts`` (tools it never states it of are left out)."""
        out: dict[str, Node] = {}
        for comp in self.system.components:
            if comp.requirement.name == name:
                for t, where in getattr(self.enc.facts(comp), table).items():
                    out[t] = out.get(t, self.bdd.false) | where
        return out

    def _fact_counts(self) -> dict[str, tuple[dict[str, Node], dict[str, Node]]]:
        """Per kind of fact and tool, where at least one requirement states it, and where
        at least two do (a requirement's factors count once)."""
        if self._counts is not None:
            return self._counts
        bdd, tools = self.bdd, self.enc.tools
        names = dict.fromkeys(c.requirement.name for c in self.system.components)
        counts: dict[str, tuple[dict[str, Node], dict[str, Node]]] = {}
        for table in _FACT_TABLES:
            one = dict.fromkeys(tools, bdd.false)
            two = dict.fromkeys(tools, bdd.false)
            for name in names:
                for t, here in self._stated(name, table).items():
                    two[t] |= one[t] & here
                    one[t] |= here
            counts[table] = (one, two)
        self._counts = counts
        return counts

    def _sole_denier(self, name: str) -> Node:
        """The states (checks quantified; reachable or not) where requirement ``name``
        denies some tool that no other requirement denies there."""
        at_least_two = self._fact_counts()["deny"][1]
        out = self.bdd.false
        for t, here in self._stated(name, "deny").items():
            out |= here & ~at_least_two[t]
        return self.some(out)

    def _live_at(self, name: str) -> Node:
        """The states (reachable or not) where requirement ``name`` is live: it changes the
        pass, or, asking permission, the pass allows a tool it covers (SPEC §11). Memoised:
        a core question asks it before its search and again of the reachable set."""
        found = self._live_where.get(name)
        if found is None:
            found = self._live_where[name] = self._live_where_now(name)
        return found

    def _live_where_now(self, name: str) -> Node:
        bdd, some, p = self.bdd, self.some, self.pass_
        comps = self.system.components
        mine = [c for c in comps if c.requirement.name == name]  # one per factor
        requirement = mine[0].requirement
        where = bdd.false
        if isinstance(requirement, AskPermissionRequirement):
            for t in self.enc.tools:
                if requirement.covers(t):
                    where |= some(p.allowed[t])
        if not any(self._states_something(c) for c in mine):
            return where  # it states nothing anywhere: it cannot change a pass
        return where | some(_differ(p, self.pass_without(name), self.enc.tools))

    def _states_something(self, comp: Component) -> bool:
        """Whether ``comp`` states some fact of the pass somewhere (in priority mode, any
        record: a permitting rule may override a lower denial)."""
        if self.system.mode != "strict":
            return bool(self.enc.records(comp))
        f = self.enc.facts(comp)
        return any((f.deny, f.hide, f.allow, f.show, f.hard, f.soft))

    def pass_without(self, name: str) -> _Pass:
        """The pass of the requirements other than ``name`` (yielding included), over the
        view and check bits: where it differs from ``pass_``, that requirement is live."""
        others = [c for c in self.system.components if c.requirement.name != name]
        return decided(self.enc, others, self.priorities)

    # -- depths and witnesses ----------------------------------------------------------------

    def _split(self) -> Groups | None:
        """The system's independent groups (``symbolic_groups``), when the analysis is exact
        and the system has them; computed once."""
        if not self.exact or self.pruned:
            return None
        return self._groups_found()

    def _groups_found(self) -> Groups | None:
        """``split``'s groups of the system (None: it has none), computed once. They hold
        for every state: the reachable set may come from them (``_Symbolic._reach``)."""
        if self._independent is False:
            self._independent = split(self.system, self.enc, self._callable, self._tick)
        assert not isinstance(self._independent, bool)
        return self._independent

    def _depth(self, target: Node) -> int | None:
        """The fewest steps reaching ``target`` (None: it is unreachable): from the groups
        where the system has them, else the first breadth-first layer meeting it."""
        groups = self._split()
        if groups is not None:
            if self.reach & target == self.bdd.false:
                return None
            try:
                return groups.distance(target, self.system.initial)
            except TooComplex:
                pass
        return self._first_layer(target)

    def _witness(
        self, target: Node, finding: Callable[[Outcome], bool] | None, depth: int | None = None
    ) -> Witness:
        """The lexicographically smallest shortest trace into ``target`` (over view bits);
        ``depth``: the first layer meeting it, when the caller knows."""
        if depth is None:
            depth = self._depth(target)
        assert depth is not None
        trace = self._grouped_trace(target, depth)
        if trace is None:
            trace = self._forward_trace(target, depth)
        if trace is None:
            trace = self._backward_trace(target, depth)
        return self.witness_along(trace, finding)

    def witness_along(
        self, trace: list[Event], finding: Callable[[Outcome], bool] | None
    ) -> Witness:
        """The witness of a finding at the end of ``trace`` (a history into its states):
        the records of the first variant there that shows it (``finding``), and whether it
        depends on the checks' values, on the way or there."""
        system = self.system
        state = system.initial
        depends = False
        for event in trace:
            outcomes = [decide(system, records) for records in system.deciding(state)]
            depends = depends or not all(
                isinstance(o, Pass) and event[0] in o.allowed for o in outcomes
            )
            state = system.successor(state, event)
        records: tuple[Emitted, ...] = ()
        if finding is not None:
            decided = [(rs, decide(system, rs)) for rs, _ in system.variants(state)]
            showing = [rs for rs, o in decided if finding(o)]
            # INVARIANT: the target set holds this state under some check values.
            assert showing
            records = showing[0]
            depends = depends or len(showing) < len(decided)
        return Witness(tuple(trace), records, depends)

    def _grouped_trace(self, target: Node, depth: int) -> list[Event] | None:
        """The trace of ``_witness`` from the groups' distances (None: no groups, or the
        target too complex for them; then the layers up to ``depth`` are computed)."""
        groups = self._split()
        if groups is None:
            return None
        try:
            return groups.trace(target, depth, self.system.initial, self._steps_from, self._tick)
        except TooComplex:
            # INVARIANT: the layers' depth is the groups' (the runs are the same).
            assert self._first_layer(target) == depth
            return None

    def _forward_trace(self, target: Node, depth: int) -> list[Event] | None:
        """The trace of ``_witness`` by a breadth-first search of concrete states through
        the layers (``_concrete_layer``, shared by the witnesses of an analysis), when the
        layers before ``depth`` hold at most ``witness_states`` states (None: more). Parents
        are expanded in the order of their traces and steps in declared order, so each
        state is first reached by its smallest trace, as on the way back."""
        if depth == 0:
            return []
        limit = self.witness_states if self.focus is None else FOCUSED_WITNESS_STATES
        before = sum(self._count(layer) for layer in self.layers[:depth])
        if before > limit:
            return None
        enc, comps = self.enc, self.system.components
        goal = self.layers[depth] & target
        members: set[State] | None = None
        if self._count(goal) <= min(self.witness_states, 3 * before):
            # Listing the target's states costs about a third of testing every step from
            # a state before it (each listed state is built bit by bit; a test is a walk).
            members = set(self._states(goal))
        for state, trace in self._concrete_layer(depth - 1):
            for event, after in self._steps_from(state):
                # The target's states at this depth are first reached there.
                if members is not None:
                    if after in members:
                        return [*trace, event]
                elif enc.holds_at(goal, comps, after):
                    return [*trace, event]
        # INVARIANT: layer `depth` meets the target, and the search covered that layer.
        raise AssertionError("no trace into the target")  # pragma: no cover

    def _concrete_layer(self, d: int) -> list[tuple[State, tuple[Event, ...]]]:
        """The states first reached after ``d`` steps, each with its smallest trace, in the
        order of those traces (computed on demand from the layer before; with pruned
        layers, only the states they keep)."""
        enc, comps = self.enc, self.system.components
        found = self._concrete
        while len(found) <= d:
            self._tick()
            k = len(found)
            if k == 0:
                found.append([(self.system.initial, ())])
                self._reached.add(self.system.initial)
                continue
            following: list[tuple[State, tuple[Event, ...]]] = []
            for state, trace in found[k - 1]:
                for event, after in self._steps_from(state):
                    if after in self._reached:
                        continue
                    # A state first reached now is in the layer, unless the layers were
                    # pruned (``_finish_within``): then it must be in it.
                    if self.pruned and not enc.holds_at(self.layers[k], comps, after):
                        continue
                    self._reached.add(after)
                    following.append((after, (*trace, event)))
            found.append(following)
        return found[d]

    def _steps_from(self, state: State) -> list[tuple[Event, State]]:
        """The states a step allowed at ``state`` (under some check values) leads to, each
        with the first such step in declared order (``System.steps_from``)."""
        found = self.system.steps_from(state, callable_at(self.system, state))
        return [(event, after) for after, event in found.items()]

    def _backward_trace(self, target: Node, depth: int) -> list[Event]:
        """The trace of ``_witness`` from the states of each layer that lead into the
        target (preimages), followed forward from the initial state."""
        system, enc, bdd = self.system, self.enc, self.bdd
        back = [bdd.false] * (depth + 1)
        back[depth] = self.layers[depth] & target
        for d in range(depth - 1, -1, -1):
            self._tick()
            into = back[d + 1]
            if not self.pruned:
                # A step from layer d stays within d + 1 steps: elsewhere the set is free,
                # and far smaller that way than its own diagram.
                into = restricted(into, self._within(d + 1))
            back[d] = self.preimage(into, self.layers[d])
        state = system.initial
        trace: list[Event] = []
        comps = system.components
        for d in range(depth):
            chosen = next(
                (
                    (event, after)
                    for event, after in self._steps_from(state)
                    if enc.holds_at(back[d + 1], comps, after)
                ),
                None,
            )
            # INVARIANT: back[d] holds `state`, so some step leads into back[d + 1].
            assert chosen is not None
            trace.append(chosen[0])
            state = chosen[1]
        return trace


def _conflict_kind(kind: str) -> Callable[[Outcome], bool]:
    return lambda o: isinstance(o, Clash) and o.kind == kind


def _forced_on(tool: str) -> Callable[[Outcome], bool]:
    return lambda o: isinstance(o, Clash) and o.kind == "forced-conflict" and tool in o.forced


def _has_pass(o: Outcome) -> bool:
    """A stuck state's finding: it has a pass (it is not in conflict)."""
    return isinstance(o, Pass)


def _has_tie(o: Outcome) -> bool:
    return isinstance(o, Pass) and o.forced_tie is not None


class Chase:
    """Backward chaining from the states of ``finish`` through those of ``reach`` (see
    ``Verdicts._can_finish``), which a caller can stop and later take up where it stopped.

    Event-driven: each cluster keeps the states added since it last stepped back from them
    (its *pending* set); the cluster with the lowest index whose pending set meets its range
    (the states one of its steps can lead to) steps back from those alone, and what it adds
    becomes pending for every cluster whose range it meets. A cluster is skipped only where
    its preimage must be empty, so the fixpoint is the same as stepping every cluster back
    from everything; but a chain of steps is followed link after link (300 tools chained by
    `only_after`: 90,000 preimages of the whole set before, about one per link now). Done as
    soon as every deciding state is in. Independent groups (``symbolic_groups``), where the
    analysis has them, answer at once instead (or are given up for the chaining).

    ``run`` asks ``give_up`` before each preimage and raises ``_OutOfTime`` when it says
    so, its sets as they were after the last preimage: the next ``run`` goes on from there
    (on `indep-counters-50-100-3` the states that can finish are not found in a minute;
    a first try cut short at 1.5 s leaves the rest of its time to the first layers'
    search, which finds the stuck state, instead of throwing away 5 s of steps back)."""

    def __init__(self, verdicts: Verdicts, finish: Node, reach: Node) -> None:
        self._v, self._reach = verdicts, reach
        self._deciding = reach & verdicts.some(verdicts.pass_.consistent)
        self._reaches = reach & finish
        self._finish = finish
        self._active: list[tuple[_Cluster, Node]] | None = None
        self._ranges: list[Node] = []
        self._pending: list[Node] = []
        self._heap: list[int] = []
        self._queued: set[int] = set()
        self.done: Node | None = None
        """The answer, once a run has ended."""

    def run(self, give_up: Callable[[], bool] | None = None) -> Node:
        """The states of ``reach`` from which some path of deciding states reaches
        ``finish``; ``_OutOfTime`` once ``give_up()`` says so (the chase can be run
        again)."""
        if self.done is not None:
            return self.done
        v, bdd = self._v, self._v.bdd
        if self._active is None:
            if self._deciding & ~self._reaches == bdd.false:
                self.done = self._reaches
                return self.done
            groups = v._split()
            if groups is not None:
                # Every path leaves from a deciding state (a step needs a pass), so the
                # states reaching ``finish`` by some path are these (the same set: BDDs are
                # canonical).
                try:
                    self.done = self._reach & groups.backward(self._finish)
                    return self.done
                except TooComplex:
                    pass
            # A cluster that cannot fire in a deciding state adds nothing (and its relation
            # is never built).
            guarded = [(c, self._deciding & c.guard) for c in v.clusters]
            active = [(g, where) for g, where in guarded if where != bdd.false]
            self._ranges = [v._range(g) for g, _ in active]
            self._pending = [self._reaches] * len(active)
            self._heap = [
                i for i in range(len(active)) if self._reaches & self._ranges[i] != bdd.false
            ]
            self._queued = set(self._heap)
            self._active = active
        active, ranges, pending, heap = self._active, self._ranges, self._pending, self._heap
        while heap:
            v._tick()
            if give_up is not None and give_up():
                raise _OutOfTime
            i = heapq.heappop(heap)
            self._queued.discard(i)
            g, where = active[i]
            todo, pending[i] = pending[i], bdd.false
            new = where & v._preimage(todo & ranges[i], g) & ~self._reaches
            if new == bdd.false:
                continue
            self._reaches |= new
            if self._deciding & ~self._reaches == bdd.false:
                break  # every deciding state is in: nothing more to add
            for j in range(len(active)):
                if new & ranges[j] != bdd.false:  # elsewhere its preimage adds nothing
                    pending[j] |= new
                    if j not in self._queued:
                        heapq.heappush(heap, j)
                        self._queued.add(j)
        self.done = self._reaches
        return self.done


class StepsBack:
    """Breadth-first layers backward from the states of ``target`` through those of
    ``reach`` (a superset of the reachable states): layer ``k`` holds the states from which
    the fewest steps into the target, through states with a pass, are ``k``. Where the
    initial state is in layer ``k`` (``met``), ``k`` is the length of a shortest history
    into the target, and ``trace`` gives the lexicographically smallest one (the engines'
    witness). Where a layer comes out empty first (``done``), no history reaches the target
    at all: a proof. Each whole layer ``k`` without the initial state proves that no
    history of ``k`` steps or fewer does.

    Unlike ``Chase`` it keeps the number of steps, at the cost of every cluster stepping
    back from each layer (a long chain of steps costs a layer per link); the two compute
    the same states once done. ``run`` asks ``give_up`` before each preimage and raises
    ``_OutOfTime`` when it says so: the next ``run`` goes on from there."""

    def __init__(self, verdicts: Verdicts, target: Node, reach: Node) -> None:
        self._v = verdicts
        self._deciding = reach & verdicts.some(verdicts.pass_.consistent)
        first = reach & target
        self.layers: list[Node] = [first]
        """The layers so far, each whole."""
        self.seen: Node = first
        """Their union: the states within ``len(layers) - 1`` steps of the target."""
        self.met: int | None = None
        """The initial state's layer, once met."""
        self.done = first == verdicts.bdd.false
        """Whether the last layer came out empty (the initial state in none)."""
        self._firing: list[_Cluster] | None = None
        self._next = verdicts.bdd.false
        """The layer being built, from the clusters before ``_at``."""
        self._at = 0
        self._initial_in(first, 0)

    def _initial_in(self, layer: Node, k: int) -> None:
        system = self._v.system
        if self._v.enc.holds_at(layer, system.components, system.initial):
            self.met = k

    def run(self, give_up: Callable[[], bool] | None = None) -> None:
        """Add layers until the initial state is met, a layer comes out empty, or
        ``give_up()`` says to stop (``_OutOfTime``; the layers so far stay whole)."""
        v, bdd = self._v, self._v.bdd
        if self._firing is None:
            # A cluster that cannot fire in a deciding state adds nothing (and its relation
            # is never built).
            self._firing = [c for c in v.clusters if self._deciding & c.guard != bdd.false]
        firing = self._firing
        while self.met is None and not self.done:
            frontier = self.layers[-1]
            while self._at < len(firing):
                v._tick()
                if give_up is not None and give_up():
                    raise _OutOfTime
                g = firing[self._at]
                todo = frontier & v._range(g)
                if todo != bdd.false:
                    # Within the guard already: a step needs its tool allowed.
                    self._next |= v._preimage(todo, g)
                self._at += 1
            new = self._next & self._deciding & ~self.seen
            self._next, self._at = bdd.false, 0
            if new == bdd.false:
                self.done = True
                break
            self.layers.append(new)
            self.seen |= new
            self._initial_in(new, len(self.layers) - 1)

    def trace(self) -> list[Event]:
        """The lexicographically smallest shortest history into the target, once ``met``:
        from the initial state, each step the first in declared order that leads one layer
        nearer."""
        assert self.met is not None
        v = self._v
        comps = v.system.components
        state = v.system.initial
        trace: list[Event] = []
        for k in range(self.met - 1, -1, -1):
            chosen = next(
                (
                    (event, after)
                    for event, after in v._steps_from(state)
                    if v.enc.holds_at(self.layers[k], comps, after)
                ),
                None,
            )
            # INVARIANT: ``state`` is in layer k + 1, so some step leads into layer k.
            assert chosen is not None
            trace.append(chosen[0])
            state = chosen[1]
        return trace
