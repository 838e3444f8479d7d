"""A system's steps as propositional logic for Z3: bounded model checking for histories,
property-directed reachability for proofs that a set of states is never reached.

Where the reachable set is too large for the BDD engines, "is some state of this set
reachable in exactly ``k`` steps?" is still a small propositional question: ``k + 1``
copies of the view bits, one choice of a group of events per step (``Layers.groups``), its
guard (the symbolic engine's own diagram, translated node by node) and the move tables of
the components it moves, and the set at the last copy. Asked for ``k = 0, 1, 2, …`` the
first satisfiable ``k`` is the set's distance from the start, and the model is a shortest
history into it; each unsatisfiable ``k`` proves that no history of exactly that length
gets there. Asked "within ``k``" (the last steps may pick no event), a model is some history
of at most ``k`` steps.

``Unrolled`` keeps one incremental solver per system: copies are added as the questions go
deeper, and each question is asked under assumptions, so the steps are encoded once for
every target, and copies made for a deeper question never constrain a shallower one.
Every history is replayed through the runtime's reasoner before it is returned: each step
must be an event the runtime allows that leads to the model's next state, and the last
state must be in the target; a model that does not replay is a bug, and raises
``AssertionError`` rather than being taken.

``never`` hands the same step, as a constrained Horn clause over one copy and the next, to
Z3's Spacer engine (IC3/PDR): "unsat" is an inductive invariant that excludes the target,
a proof for histories of any length. It often gives up within its time; then the verdict
stays open.

Both are as faithful as the encoding (``symbolic_encoding``): the laws check them against
the explicit engine (``tests/property/test_check_unrolled_laws.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import z3

from ruleengine.check.explicit import allows, decide
from ruleengine.check.symbolic_layers import Layers, _Group
from ruleengine.check.system import Event, State, System

__all__ = ["POLL", "WATCHER", "GaveUp", "Unrolled"]

Node = Any
"""A BDD node of the encoding's manager."""

POLL = 0.05
"""Seconds between two questions to ``interrupt`` while the solver runs."""

WATCHER = "ruleengine-unrolled-watch"
"""The name of the thread that asks them."""


class GaveUp(Exception):
    """The solver stopped before it answered: the deadline passed, or it was told to."""


class Unrolled:
    """A system's steps unrolled for bounded model checking (see the module's docstring)."""

    def __init__(
        self,
        layers: Layers,
        interrupt: Callable[[], bool] | None = None,
        held: Sequence[Node] = (),
    ) -> None:
        self.layers = layers
        self.interrupt = interrupt
        """Asked every ``POLL`` seconds while the solver runs: True stops it."""
        self.system: System = layers.system
        self.enc = layers.enc
        self.ctx = z3.Context()
        self.solver = z3.SolverFor("QF_FD", ctx=self.ctx)
        comps = self.system.components
        self.names = [b for c in comps for b in self.enc.bits[id(c)]]
        self.currents = {
            y: x
            for c in comps
            for x, y in zip(self.enc.bits[id(c)], self.enc.next_bits[id(c)], strict=True)
        }
        self.groups: list[_Group] = list(layers.groups)
        self._tools_of = [frozenset(t for t, _ in g.events) for g in self.groups]
        """Per group, the tools its events are of."""
        self.copies: list[dict[str, z3.BoolRef]] = []
        self.picks: list[list[z3.BoolRef]] = []
        self.moves: list[z3.BoolRef] = []
        """Per step, the literal that, assumed, makes it take an event."""
        self._memo: list[dict[int, z3.BoolRef]] = []
        self._literals: list[dict[tuple[str, bool], z3.BoolRef]] = []
        """Per copy, each bit and its negation, made once (``_literal``)."""
        self._targets: dict[
            tuple[int, int, tuple[tuple[str, int], ...]], tuple[Node, z3.BoolRef]
        ] = {}
        self._first_step: z3.BoolRef | None = None
        self._first_picks: list[z3.BoolRef] = []
        self._alive: list[Node] = []
        """Every node translated. The memos are keyed by a node's address, and CUDD's dynamic
        reordering rewrites nodes in place (each keeps its function) and frees those left
        unreferenced: a node the memo knows, alive only as the child of another, could be
        freed and its address reused for another function. A reference to each keeps it."""
        self.solver.add(self._translate(layers.start, 0))
        parts = [self._translate(u, 0) for u in held]
        self._held = z3.And(*parts) if parts else z3.BoolVal(True, self.ctx)
        """``held``, sets over current view bits that every reachable state is in (an
        over-approximation, ``Projections.every_pair``), conjoined at copy 0: asserted of
        every later copy (implied constraints: they change no answer, and cut the states a
        question may consider) and in ``never``'s steps; ``outside`` asks only them."""
        self._free: z3.Solver | None = None
        self._asked_by = 0
        """``reaches_by``'s questions so far (each has an assumption literal of its own)."""
        self._calls: dict[tuple[str, int, int], z3.BoolRef] = {}
        """``_surely_called``'s definitions so far, per tool, count and step."""

    # -- the unrolling ------------------------------------------------------------------------

    def _bits(self, i: int) -> dict[str, z3.BoolRef]:
        """Copy ``i`` of the view bits (made when first asked for)."""
        while len(self.copies) <= i:
            n = len(self.copies)
            self.copies.append({x: z3.Bool(f"{x}@{n}", self.ctx) for x in self.names})
            self._memo.append({})
        return self.copies[i]

    def _copy(self, deadline: float | None = None) -> None:
        """One more step of the unrolling, from the last copy of the view bits into a new
        one (``_step``); it must take an event only where its ``moves`` is assumed. All or
        nothing: ``GaveUp`` (the deadline) leaves the unrolling as it was."""
        i = len(self.picks) + 1
        picks = [z3.Bool(f"step{k}@{i}", self.ctx) for k in range(len(self.groups))]
        step = self._step_at(i, picks, deadline)
        moves = z3.Bool(f"moves@{i}", self.ctx)
        # Elsewhere it may keep every view (no group picked), so that copies made for a
        # deeper question never require a history to go on that far.
        some = z3.Or(*picks) if picks else z3.BoolVal(False, self.ctx)
        self.solver.add(z3.Implies(moves, some), step, self._held_at(i))
        if self.picks:
            # A step that picks no event is followed only by such steps: a history shorter
            # than the copies idles at their end. Every history keeps one form, and a
            # "within" question with no answer need not rule out each placement of the
            # idle steps.
            earlier = self.picks[-1]
            stepped = z3.Or(*earlier) if earlier else z3.BoolVal(False, self.ctx)
            self.solver.add(z3.Or(stepped, z3.Not(some)))
        self.picks.append(picks)
        self.moves.append(moves)

    def _step_at(
        self, i: int, picks: Sequence[z3.BoolRef], deadline: float | None = None
    ) -> z3.BoolRef:
        """``_step(i, picks)`` as one formula: the first step's, built once, renamed into
        copies ``i - 1`` and ``i`` (one substitution in Z3, linear in the formula, where
        translating the guards again costs seconds at 200 tools)."""
        if self._first_step is None:
            parts = self._step(1, picks, deadline)
            self._first_step = z3.And(*parts) if parts else z3.BoolVal(True, self.ctx)
            self._first_picks = list(picks)
        pairs = [(a, b) for a, b in zip(self._first_picks, picks, strict=True) if not a.eq(b)]
        if i != 1:
            pairs += [*self._renaming(0, i - 1), *self._renaming(1, i)]
        return z3.substitute(self._first_step, *pairs) if pairs else self._first_step

    def _held_at(self, i: int) -> z3.BoolRef:
        """The sets held (``held``) at copy ``i``: renamed from copy 0."""
        return z3.substitute(self._held, *self._renaming(0, i)) if i else self._held

    def _renaming(self, source: int, target: int) -> list[tuple[z3.BoolRef, z3.BoolRef]]:
        """Each view bit of copy ``source`` with the same bit of copy ``target``, for
        ``z3.substitute``."""
        a, b = self._bits(source), self._bits(target)
        return [(a[x], b[x]) for x in self.names]

    def _step(
        self, i: int, picks: Sequence[z3.BoolRef], deadline: float | None = None
    ) -> list[z3.BoolRef]:
        """A step from copy ``i - 1`` into copy ``i`` of the view bits: at most one of
        ``picks`` (one per group of events, ``Layers.groups``: the same effect on every
        component), whose guard holds before it; each component it moves goes by its move
        table, every other keeps its view (and with no pick, every view stays)."""
        before, after = self._bits(i - 1), self._bits(i)
        out: list[z3.BoolRef] = []
        if len(picks) > 1:
            out.append(z3.PbLe([(p, 1) for p in picks], 1))
        moving: dict[int, list[z3.BoolRef]] = {}
        for pick, group in zip(picks, self.groups, strict=True):
            self._on_time(deadline)
            out.append(z3.Implies(pick, self._translate(group.guard, i - 1)))
            for comp, index in group.moved:
                # The encoding's own relation of the move table, translated node by node:
                # the groups that move a component alike share its formula (at 50 tools, a
                # cube per view and group took 1 to 3.5 s a step; this, under 0.2 s).
                out.append(z3.Implies(pick, self._translate(self.enc.move(comp, index), i - 1)))
                moving.setdefault(id(comp), []).append(pick)
        for comp in self.system.components:
            movers = moving.get(id(comp), [])
            for x in self.enc.bits[id(comp)]:
                stays = before[x] == after[x]
                out.append(z3.Or(stays, *movers) if movers else stays)
        return out

    def _translate(self, u: Node, i: int) -> z3.BoolRef:
        """The BDD ``u`` as a Z3 formula with its current view bits at copy ``i`` and its
        next ones at copy ``i + 1``: one ``If`` per node, shared through copy ``i``'s memo.
        An iterative walk (no recursion limit on deep diagrams)."""
        now, later = self._bits(i), None
        memo = self._memo[i]
        true = z3.BoolVal(True, self.ctx)
        stack = [u]
        while stack:
            e = stack[-1]
            key = int(e) & ~1
            if key in memo:
                stack.pop()
                continue
            var = e.var
            if var is None:
                memo[key] = true
                self._alive.append(e)
                stack.pop()
                continue
            hi, lo = e.high, e.low
            pending = [c for c in (hi, lo) if (int(c) & ~1) not in memo]
            if pending:
                stack.extend(pending)
                continue
            bit = now.get(var)
            if bit is None:
                if later is None:
                    later = self._bits(i + 1)
                bit = later[self.currents[var]]
            memo[key] = z3.If(bit, self._edge(hi, memo), self._edge(lo, memo))
            self._alive.append(e)
            stack.pop()
        return self._edge(u, memo)

    @staticmethod
    def _edge(e: Node, memo: dict[int, z3.BoolRef]) -> z3.BoolRef:
        value = memo[int(e) & ~1]
        return z3.Not(value) if e.negated else value

    # -- questions ----------------------------------------------------------------------------

    def reaches(
        self,
        target: Node,
        steps: int,
        deadline: float | None = None,
        *,
        within: bool = False,
        calls: Collection[str] | Mapping[str, int] = (),
        seconds: float | None = None,
    ) -> tuple[Event, ...] | None:
        """A history of exactly ``steps`` steps into ``target`` (a set over view bits;
        replayed), or None when there is none; ``within``: of at most ``steps`` steps (not
        necessarily the shortest). ``calls``: tools that the caller has shown every
        history into ``target`` to call (``Relaxed.needed``), or per tool the fewest calls
        of it every such history makes (``Estimates.calls``); asserted with the target,
        they change no answer but prune the search (with as many calls as steps, every
        step must be one of them). Raises ``GaveUp`` when the solver stopped first: after
        ``seconds`` (a budget in Z3's resource units, ``UNITS_PER_SECOND``: the same cut on
        every run), at the deadline, or told to by ``interrupt``."""
        if steps < 0:
            raise ValueError(f"a history has at least 0 steps, not {steps}")
        if isinstance(calls, str):
            raise TypeError(f"calls: tool names or a count per tool, not the string {calls!r}")
        while len(self.picks) < steps:
            self._on_time(deadline)
            self._copy(deadline)
        target = self.layers.some(target)
        flag = self._goal(target, steps, calls)
        _bound(self.solver, seconds, deadline)
        # Within: steps may keep the state, so the target is met after at most ``steps``.
        assumed = [flag] if within else [flag, *self.moves[:steps]]
        answer = self._watched(lambda: self.solver.check(*assumed))
        if answer == z3.unsat:
            return None
        if answer != z3.sat:
            raise GaveUp
        return self._history(self.solver.model(), steps, target)

    def reaches_by(
        self,
        target: Node,
        steps: int,
        at: int,
        state: State,
        ahead: Sequence[State],
        deadline: float | None = None,
        *,
        seconds: float | None = None,
    ) -> bool:
        """Whether a history of exactly ``steps`` steps into ``target`` is at ``state`` after
        ``at`` steps and at one of ``ahead`` after one more: the question that walks to
        the lexicographically smallest such history, a step at a time, with the steps
        already taken (``state``, reached by them) and a range of the next ones. Asked
        under assumptions, as ``reaches`` is, so it constrains no other question; raises
        ``GaveUp`` as ``reaches`` does."""
        if not 0 <= at < steps:
            raise ValueError(f"step {at} is not one of a history of {steps} steps")
        while len(self.picks) < steps:
            self._on_time(deadline)
            self._copy(deadline)
        flag = self._goal(target, steps, ())
        by = z3.Bool(f"by{self._asked_by}", self.ctx)
        self._asked_by += 1
        self.solver.add(
            z3.Implies(by, z3.And(self._state_is(state, at), self._one_of(ahead, at + 1)))
        )
        _bound(self.solver, seconds, deadline)
        answer = self._watched(lambda: self.solver.check(flag, by, *self.moves[:steps]))
        if answer == z3.unsat:
            return False
        if answer != z3.sat:
            raise GaveUp
        return True

    def _state_is(self, state: State, i: int) -> z3.BoolRef:
        """Copy ``i`` of the view bits spells ``state``."""
        values = self.enc.state_bits(self.system.components, state)
        return self._all([self._literal(i, x, value) for x, value in values.items()])

    def _one_of(self, states: Sequence[State], i: int) -> z3.BoolRef:
        """Copy ``i`` of the view bits spells one of ``states``: the bits they all agree on
        once, and a choice among the rest. (The states a step leads to from one state
        differ in the few components it moves: at 50 tools, pinning every bit of each of
        a bisection's 75 states took 24 ms a question, 7 s of a minute's analysis.)"""
        if not states:
            return z3.BoolVal(False, self.ctx)
        comps = self.system.components
        values = [self.enc.state_bits(comps, state) for state in states]
        first = values[0]
        shared = {x: v for x, v in first.items() if all(other[x] == v for other in values[1:])}
        options = [
            self._all([self._literal(i, x, v) for x, v in each.items() if x not in shared])
            for each in values
        ]
        agreed = [self._literal(i, x, v) for x, v in shared.items()]
        return self._all([*agreed, z3.Or(*options)])

    def _all(self, literals: list[z3.BoolRef]) -> z3.BoolRef:
        """The conjunction of ``literals`` (true for none, in this solver's context)."""
        return z3.And(*literals) if literals else z3.BoolVal(True, self.ctx)

    def _literal(self, i: int, name: str, value: bool) -> z3.BoolRef:
        """Bit ``name`` of copy ``i``, or its negation (made once)."""
        while len(self._literals) <= i:
            self._literals.append({})
        key = (name, value)
        found = self._literals[i].get(key)
        if found is None:
            bit = self._bits(i)[name]
            found = self._literals[i][key] = bit if value else z3.Not(bit)
        return found

    def _goal(
        self, target: Node, steps: int, calls: Collection[str] | Mapping[str, int]
    ) -> z3.BoolRef:
        """The literal that, assumed, puts copy ``steps`` in ``target`` (with ``calls``, as
        ``reaches`` says), made once per target, depth and calls."""
        target = self.layers.some(target)
        if isinstance(calls, Mapping):
            least = {t: n for t, n in calls.items() if n > 0}
        else:
            least = dict.fromkeys(calls, 1)
        needed = tuple(sorted(least.items()))
        key = (int(target), steps, needed)
        known = self._targets.get(key)
        if known is None:
            flag = z3.Bool(f"goal{len(self._targets)}", self.ctx)
            self._targets[key] = (target, flag)
            self.solver.add(z3.Implies(flag, self._translate(target, steps)))
            for tool, times in needed:
                # Each call of the tool picks a group with an event of it.
                some_call = [pick for i in range(steps) for pick in self._picking(tool, i)]
                if len(some_call) < times:
                    enough = z3.BoolVal(False, self.ctx)
                elif times == 1:
                    enough = z3.Or(*some_call)
                else:
                    enough = z3.PbGe([(p, 1) for p in some_call], times)
                self.solver.add(z3.Implies(flag, enough))
            if needed:
                self.solver.add(z3.Implies(flag, self._spare_at_most(steps, least)))
        else:
            flag = known[1]
        return flag

    def _spare_at_most(self, steps: int, least: Mapping[str, int]) -> z3.BoolRef:
        """Of the first ``steps`` steps, at most ``steps`` less the calls ``least`` asks for
        are *spare*: every history calls each tool of ``least`` at least that many times,
        those first calls of each are steps of their own, and the others are the spare
        ones (a further call of the same tool among them).

        A step is counted as one of those first calls where it picks a group with an event
        of such a tool that earlier steps did not surely call that many times: a group
        that holds events of that tool alone says it was called; one that holds events of
        several (the failed calls of tools nothing counts, say) says only that one of them
        was. So each of them is counted, and the bound holds of every history. Implied by
        the steps, it changes no answer; but bounded model checking could not use it
        unstated: asked whether the run may stop within 21 steps on
        `conditionals-50-100-7` (19 tools needed, two of them forced twice by soft forces),
        Z3 gave up after 150 s, where stated it shows in seconds that no history does
        (unstated, its search placed each needed tool before counting the calls the
        forces repeat)."""
        ctx = self.ctx
        wanted = sorted(least.items())
        spare: list[z3.BoolRef] = []
        for i in range(steps):
            picks = self.picks[i]
            firsts = []
            for tool, times in wanted:
                calls = self._picking(tool, i)
                if calls:
                    done = self._surely_called(tool, i, times)
                    firsts.append(z3.And(z3.Or(*calls), z3.Not(done)))
            taken = z3.Or(*picks) if picks else z3.BoolVal(False, ctx)
            spare.append(z3.And(taken, z3.Not(z3.Or(*firsts))) if firsts else taken)
        if not spare:
            return z3.BoolVal(True, ctx)  # no steps: the calls asked for rule out a history
        return z3.PbLe([(x, 1) for x in spare], max(0, steps - sum(least.values())))

    def _picking(self, tool: str, i: int, *, alone: bool = False) -> list[z3.BoolRef]:
        """The picks of step ``i`` (0-based) whose group has an event of ``tool`` (``alone``:
        events of that tool only)."""
        return [
            pick
            for pick, tools in zip(self.picks[i], self._tools_of, strict=True)
            if tool in tools and (not alone or len(tools) == 1)
        ]

    def _surely_called(self, tool: str, before: int, times: int) -> z3.BoolRef:
        """Whether the steps before step ``before`` (0-based) picked groups whose events
        are all of ``tool`` at least ``times`` times: a unary count per tool, shared by
        every question (one definition per tool, count and step)."""
        ctx = self.ctx
        if times > before:
            return z3.BoolVal(False, ctx)
        false, true = z3.BoolVal(False, ctx), z3.BoolVal(True, ctx)
        memo = self._calls
        for i in range(before):
            if (tool, times, i) in memo:
                continue
            picks = self._picking(tool, i, alone=True)
            here = z3.Or(*picks) if picks else false
            for j in range(1, times + 1):
                if (tool, j, i) in memo:
                    continue
                was = memo.get((tool, j, i - 1), false)
                fewer = memo.get((tool, j - 1, i - 1), false) if j > 1 else true
                count = z3.Bool(f"called:{tool}:{j}@{i + 1}", ctx)
                self.solver.add(count == z3.Or(was, z3.And(fewer, here)))
                memo[(tool, j, i)] = count
        return memo[(tool, times, before - 1)]

    def outside(
        self, target: Node, seconds: float | None = None, deadline: float | None = None
    ) -> bool:
        """Whether no state in ``target`` (a set over view bits) is in every set held
        (``held``): True is a proof that no reachable state is in it, for histories of any
        length; one copy of the view bits and no steps, so a question of a few milliseconds
        where ``Projections.narrowed`` gives up on the diagram of the same conjunction.
        False when some state is, or the solver gave up within ``seconds`` (in units, as
        ``reaches``); ``GaveUp`` when
        ``deadline`` passed or ``interrupt`` said to stop."""
        return self.meets(target, seconds, deadline) is False

    def meets(
        self, target: Node, seconds: float | None = None, deadline: float | None = None
    ) -> bool | None:
        """``outside``'s question with its answer: whether some state in ``target`` is in
        every set held, None where the solver gave up within ``seconds``. True means that
        nothing built from fewer of the sets held (``Projections.narrowed``, whose pairs
        are among them) can rule ``target`` out."""
        target = self.layers.some(target)
        if self._free is None:
            self._free = z3.SolverFor("QF_FD", ctx=self.ctx)
            self._free.add(self._held)
        free = self._free
        free.push()
        try:
            free.add(self._translate(target, 0))
            _bound(free, seconds, deadline)
            answer = self._watched(free.check)
        finally:
            free.pop()
        if answer == z3.unsat:
            return False
        self._on_time(deadline)
        return True if answer == z3.sat else None

    def never(self, target: Node, seconds: float, deadline: float | None = None) -> bool:
        """Whether no reachable state is in ``target`` (a set over view bits), proved by
        Z3's property-directed reachability engine (Spacer: inductive invariants, for
        histories of any length) over the same steps; False when it found none within
        ``seconds`` (in units, as ``reaches``) or found such a state. Raises ``GaveUp``
        when ``deadline`` passed or ``interrupt`` said to stop."""
        target = self.layers.some(target)
        # A fixedpoint of its own per question: one that gave up on an earlier question
        # was measured slower on the next than a fresh one.
        fp, reach = self._fixedpoint()
        _bound(fp, seconds, deadline)
        now = [self._bits(0)[x] for x in self.names]
        query = z3.And(reach(*now), self._held, self._translate(target, 0))
        answer = self._watched(lambda: _query(fp, query))
        if answer == z3.unsat:
            return True
        if deadline is not None and time.monotonic() > deadline:
            raise GaveUp
        if self.interrupt is not None and self.interrupt():
            raise GaveUp
        return False

    def _fixedpoint(self) -> tuple[z3.Fixedpoint, z3.FuncDeclRef]:
        """The reachable states as the least relation ``reach`` over the view bits that
        holds at the start and is closed under a step (``_step`` from copy 0 into copy 1,
        with picks of its own)."""
        fp = z3.Fixedpoint(ctx=self.ctx)
        fp.set(engine="spacer")
        kind = z3.BoolSort(self.ctx)
        reach = z3.Function("reach", *([kind] * len(self.names)), kind)
        fp.register_relation(reach)
        now = [self._bits(0)[x] for x in self.names]
        later = [self._bits(1)[x] for x in self.names]
        picks = [z3.Bool(f"any{k}", self.ctx) for k in range(len(self.groups))]
        fp.declare_var(*now, *later, *picks)
        fp.rule(reach(*now), self._translate(self.layers.start, 0))
        # Steps only from states in every set held: all the reachable ones are.
        fp.rule(reach(*later), [reach(*now), self._held, self._step_at(1, picks)])
        return fp, reach

    def _on_time(self, deadline: float | None) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise GaveUp
        if self.interrupt is not None and self.interrupt():
            raise GaveUp

    def _watched(self, ask: Callable[[], z3.CheckSatResult]) -> z3.CheckSatResult:
        """``ask()``'s answer; while it runs, a thread asks ``interrupt`` every ``POLL``
        seconds and interrupts Z3 when told to stop (the answer is then ``unknown``)."""
        interrupt = self.interrupt
        if interrupt is None:
            return ask()
        done = threading.Event()

        def watch() -> None:
            while not done.wait(POLL):
                if interrupt():
                    self.ctx.interrupt()
                    return

        watcher = threading.Thread(target=watch, name=WATCHER, daemon=True)
        watcher.start()
        try:
            return ask()
        finally:
            done.set()
            watcher.join()

    def _history(self, model: z3.ModelRef, steps: int, target: Node) -> tuple[Event, ...]:
        system, enc, comps = self.system, self.enc, self.system.components
        state = system.initial
        path: list[Event] = []
        for i in range(1, steps + 1):
            picked = next(
                (k for k, p in enumerate(self.picks[i - 1]) if z3.is_true(model.eval(p, True))),
                None,
            )
            wanted = self._state(model, i)
            if picked is None:  # a step that keeps every view (``within``)
                if wanted != state:
                    raise AssertionError("an unrolled step changes views without an event")
                continue
            event = self._event(state, self.groups[picked], wanted)
            path.append(event)
            state = system.successor(state, event)
        if not enc.holds_at(target, comps, state):
            raise AssertionError("an unrolled history ends outside its target")
        return tuple(path)

    def _state(self, model: z3.ModelRef, i: int) -> State:
        values = {x: z3.is_true(model.eval(v, True)) for x, v in self.copies[i].items()}
        return tuple(self.enc.view(c, values) for c in self.system.components)

    def _event(self, state: State, group: _Group, wanted: State) -> Event:
        """The event of ``group`` the runtime allows at ``state`` that leads to
        ``wanted``."""
        system = self.system
        outcomes = [decide(system, records) for records in system.deciding(state)]
        for event in group.events:
            allowed = any(allows(o, event[0]) for o in outcomes)
            if allowed and system.successor(state, event) == wanted:
                return event
        raise AssertionError("an unrolled step the runtime does not take")


def _query(fp: z3.Fixedpoint, query: z3.BoolRef) -> z3.CheckSatResult:
    """``fp.query``, whose timeout and interruption raise rather than answer ``unknown``
    (the rules are ours and well formed, so any error is one of those)."""
    try:
        return fp.query(query)
    except z3.Z3Exception:
        return z3.unknown


NO_LIMIT = 4_294_967_295
"""Z3's ``timeout`` that means none (the largest unsigned 32-bit value)."""

UNITS_PER_SECOND = 5_000_000
"""Z3 resource units (``rlimit``) that stand for a second of a question's own budget:
measured on these questions at 50 tools, 4 to 11 million a second (`conditionals-50-100-1`).
A budget counted in units cuts a question at the same point on a loaded machine as on an
idle one, so what the questions decide, and the state the incremental solver keeps for the
next, do not depend on the machine's speed; only the deadline is kept by the clock."""


def _bound(
    solver: z3.Solver | z3.Fixedpoint, seconds: float | None, deadline: float | None
) -> None:
    """Bound ``solver``'s next question: its own budget of ``seconds``, counted in Z3's
    resource units (``UNITS_PER_SECOND``, deterministic), and ``deadline`` by the clock
    (both optional; none: unbounded); ``GaveUp`` when the deadline has passed."""
    solver.set("rlimit", 0 if seconds is None else _units(seconds))
    solver.set("timeout", _milliseconds(deadline))


def _units(seconds: float) -> int:
    """The resource units of a budget of ``seconds`` (at least one, at most Z3's largest)."""
    return max(1, int(min(float(NO_LIMIT - 1), seconds * UNITS_PER_SECOND)))


def _milliseconds(deadline: float | None) -> int:
    """Z3's ``timeout`` for a question that must end by ``deadline`` (none: no limit);
    ``GaveUp`` when the deadline has passed."""
    if deadline is None:
        return NO_LIMIT
    left = deadline - time.monotonic()
    if left <= 0:
        raise GaveUp
    return max(1, int(min(float(NO_LIMIT - 1), left * 1000)))
