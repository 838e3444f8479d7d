"""The explicit engine: breadth-first search over the states of a ``System``.

Every reached state is decided by the runtime's ``Reasoner`` (once per distinct set of
records, under every value of the opaque checks), so static and runtime semantics are one.
States are expanded in breadth-first order with tools in declared order and statuses in the
order ``ok``, ``error``, ``denied``: the first state found with a property is reached by the
lexicographically smallest shortest trace, which is the witness reported.

It handles every policy whose requirements have monitors (priority mode, formulas, custom
checks included), and stops, incomplete, at ``max_states`` or the deadline.

A system with counters tabulated band by band (``check/skipping.py``) has steps that weigh
more than one call: it is searched by weighted depth (Dijkstra's order, ties in the order
states were found), so depths, first states and witnesses are those of the calls, and the
states a band's view stands for are counted.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

from ruleengine.aggregate import Clash
from ruleengine.check.analysis import Analysis, Witness
from ruleengine.check.progress import note as note_progress
from ruleengine.check.skipping import exact_skip, stood_for
from ruleengine.check.system import Event, State, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.requirements.permission import AskPermissionRequirement
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES

__all__ = [
    "Outcome",
    "Stopped",
    "allows",
    "analyse",
    "asking_of",
    "callable_at",
    "decide",
    "live_at",
    "live_here",
    "reaches",
    "same_pass",
    "walk",
]

Outcome = Pass | Clash
"""A decided state: its pass, or the clash that leaves it without one (whose minimal core is
found when first read: most conflicting states a search decides are never explained)."""


def decide(system: System, records: tuple[Emitted, ...]) -> Outcome:
    """The runtime's decision for ``records`` (``Reasoner.settle``: where the runtime raises
    a ``ConflictError``, the clash it is made from)."""
    return system.reasoner.settle(records)


def callable_at(system: System, state: State) -> set[str]:
    """The tools a step may call at ``state``: allowed under some values of the opaque
    checks (as the engines explore), ``final_answer`` aside (it ends a run)."""
    out: set[str] = set()
    for records in system.deciding(state):
        outcome = decide(system, records)
        if isinstance(outcome, Pass):
            out.update(t for t in outcome.allowed if t != FINAL_ANSWER)
    return out


def walk(system: System, trace: Sequence[Event]) -> State | None:
    """The state ``trace`` leads to when each of its steps is allowed when taken (see
    ``callable_at``), else None. Cost: one decision per step and set of records
    ``System.deciding`` gives there (one per distinct outcome of alike opaque checks)."""
    state = system.initial
    for tool, status in trace:
        if status not in STATUSES or tool not in callable_at(system, state):
            return None
        state = system.successor(state, (tool, status))
    return state


def allows(outcome: Outcome, goal: str) -> bool:
    """Whether a decided state allows ``goal`` (``final_answer``: the run may stop)."""
    if not isinstance(outcome, Pass):
        return False
    return outcome.can_stop if goal == FINAL_ANSWER else goal in outcome.allowed


def reaches(system: System, trace: Sequence[Event], goal: str) -> bool:
    """Whether ``trace`` replays (see ``walk``) to a state that allows ``goal`` under some
    values of the opaque checks. Cost: one decision per step and set of records
    ``System.deciding`` gives there."""
    state = walk(system, trace)
    return state is not None and any(
        allows(decide(system, records), goal) for records in system.deciding(state)
    )


def same_pass(a: Outcome, b: Outcome) -> bool:
    """Whether two decisions agree on what SPEC §8 compares (reasons and cores aside)."""
    if isinstance(a, Clash) or isinstance(b, Clash):
        return isinstance(a, Clash) and isinstance(b, Clash)
    return (
        a.allowed == b.allowed
        and a.hidden == b.hidden
        and a.forced == b.forced
        and a.can_stop == b.can_stop
    )


def live_at(
    system: System,
    records: tuple[Emitted, ...],
    outcome: Outcome,
    candidates: AbstractSet[str],
    asking: Mapping[str, AskPermissionRequirement],
    stop: Callable[[], bool] | None = None,
) -> set[str]:
    """Which of ``candidates`` are live at a state that emits ``records``, decided to
    ``outcome``: their records change the decision (SPEC §8), or they ask permission for a
    tool it allows (SPEC §11; ``asking``: the ask-permission requirements by name). With
    ``stop``, asked before each decision: once it says so, ``Stopped`` (the requirements
    found live so far in ``found`` of the exception)."""
    live: set[str] = set()
    if isinstance(outcome, Pass):
        for name, req in asking.items():
            if name in candidates and any(req.covers(t) for t in outcome.allowed):
                live.add(name)
    deciding = {e.requirement for e in records} & candidates
    if isinstance(outcome, Clash) and system.mode == "strict":
        # In strict mode records that hold a conflict's core conflict too (a constraint
        # added never mends a clash, and a yielding requirement's records are never in the
        # final core), so only a requirement with a record in the core can change it.
        deciding &= {e.requirement for e in outcome.core}
    # Most requirements' records are covered by others' (``Reasoner.unmoved``): no decision.
    deciding -= live
    deciding -= system.reasoner.unmoved(records, deciding)
    for name in sorted(deciding):
        if stop is not None and stop():
            raise Stopped(live)
        rest = tuple(e for e in records if e.requirement != name)
        if not same_pass(outcome, decide(system, rest)):
            live.add(name)
    return live


def live_here(
    system: System,
    state: State,
    candidates: AbstractSet[str],
    asking: Mapping[str, AskPermissionRequirement],
    stop: Callable[[], bool] | None = None,
) -> set[str]:
    """Which of ``candidates`` are live at ``state`` under some values of the opaque checks
    (``live_at`` at each set of records the state may emit). In strict mode, where records
    that hold together still do without some, a requirement is asked only at
    ``System.deciding``'s sets with its own opaque components kept apart: the others' alike
    checks stand for each other with its records as without them. In priority mode, where
    dropping records may make a clash and so a yielding requirement give way, at every set
    of ``variants``. ``stop`` as ``live_at``'s (``Stopped`` holds what was found)."""
    plan: list[tuple[Iterable[tuple[Emitted, ...]], AbstractSet[str]]]
    if system.mode != "strict" or not system.opaque_of:
        plan = [((records for records, _ in system.variants(state)), candidates)]
    else:
        groups: dict[frozenset[int], set[str]] = {}
        for name in sorted(candidates):
            groups.setdefault(system.opaque_of.get(name, frozenset()), set()).add(name)
        plan = [
            (system.deciding(state, apart), names)
            for apart, names in sorted(groups.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))
        ]
    live: set[str] = set()
    for sets, names in plan:
        for records in sets:
            left = names - live
            if not left:
                break
            try:
                live |= live_at(system, records, decide(system, records), left, asking, stop)
            except Stopped as stopped:
                raise Stopped(live | stopped.found) from None
    return live


class Stopped(Exception):
    """``live_at`` told to stop before it decided every candidate."""

    def __init__(self, found: set[str]) -> None:
        super().__init__("stopped")
        self.found = found


def asking_of(system: System) -> dict[str, AskPermissionRequirement]:
    """The system's ask-permission requirements, by name."""
    return {
        c.requirement.name: c.requirement
        for c in system.components
        if isinstance(c.requirement, AskPermissionRequirement)
    }


@dataclass(slots=True)
class _Node:
    state: State
    depth: int
    parent: int
    """The index of the node it was first reached from (-1 for the initial state)."""
    event: Event | None
    depends: bool
    """Whether its trace needs particular check values."""


def analyse(
    system: System,
    *,
    max_states: int | None = None,
    deadline: float | None = None,
    live: bool | str = True,
    until: str | None = None,
    width: int | None = None,
) -> Analysis:
    """Explore ``system`` breadth-first and collect every verdict (``live``: also which
    requirements change some pass, which costs one more decision per requirement and state
    until each is found live; a requirement's name: only whether that one is). With
    ``until`` (a key of ``Analysis.firsts``), stop, incomplete, once it is found. With
    ``width``, stop, incomplete, once more than ``width`` states per layer reached have been
    explored (past ``width`` states: a probe for a narrow, deep space gives up at once on a
    wide one)."""
    return _Explorer(system, max_states, deadline, live, until, width).run()


class _Explorer:
    def __init__(
        self,
        system: System,
        max_states: int | None,
        deadline: float | None,
        live: bool | str,
        until: str | None = None,
        width: int | None = None,
    ) -> None:
        self.system = system
        self.until = until
        self.width = width
        self.max_states = max_states
        self.deadline = deadline
        self.want_live = live is not False
        self.only_live = live if isinstance(live, str) else None
        self.nodes: list[_Node] = [_Node(system.initial, 0, -1, None, False)]
        self.index: dict[State, int] = {system.initial: 0}
        self.edges: dict[int, list[int]] = {}
        """Per expanded node, the nodes one step leads to."""
        self.finishing: dict[int, bool] = {}
        self.deciding: dict[int, bool] = {}
        """Per expanded node, whether some check values give it a pass (it does not
        conflict)."""
        self.always_deciding: dict[int, bool] = {}
        """Per expanded node, whether every check value gives it a pass."""
        self.weighted = bool(system.skips)
        """Whether some steps weigh more than one call (``System.weight``)."""
        self.skipping: dict[int, set[tuple[int, ...]]] = {}
        """Weighted: per node, the groups of components counting the same calls
        (``System.skips``) whose inside a counting step skips from it."""
        self.crossing: dict[int, set[tuple[int, tuple[int, ...]]]] = {}
        """Weighted: per node, each node a counting step leads to, with the group counting
        it."""
        self.result = Analysis(depends_on_checks=any(c.opaque for c in system.components))
        self.asking = asking_of(system)
        self.firsts: dict[str, int] = {}
        """The first node found with each of ``Analysis.firsts``' keys."""
        self.candidates = (
            frozenset([self.only_live])
            if self.only_live is not None
            else frozenset(r.name for r in system.requirements)
        )

    def run(self) -> Analysis:
        result = self.result
        queue: _Queue = _Heap() if self.weighted else _Fifo()
        queue.push(0, 0)
        while queue:
            i = queue.pop()
            if i in self.edges:
                continue  # found again by a shorter path, and expanded then
            if self._out_of_time(i):
                break
            try:
                self._expand(i, queue)
            except _Late:
                # Within one state, whose opaque checks' values and requirements' liveness
                # take many decisions: what it found stays (each fact holds at a state
                # reached), and it counts as not expanded.
                self._stop(i, "the time limit ran out")
                break
            if result.reason is not None:
                break
            if self.until is not None and self.until in self.firsts:
                self._stop(i, f"`{self.until}` was found")
                break
            width = self.width
            if width is not None and len(self.nodes) > width * (self.nodes[i].depth + 1):
                self._stop(i, f"more than {width} states per layer were found")
                break
        if result.reason is None:
            result.depth_done = max(n.depth for n in self.nodes)
            self._no_finish()
        result.complete = result.reason is None
        result.states = self._states()
        result.firsts = {key: self._trace(self.nodes[i]) for key, i in self.firsts.items()}
        return result

    def _out_of_time(self, i: int) -> bool:
        """Whether the deadline has passed (asked before each state: one state may take
        a second, under every value of eight opaque checks), the search then stopped."""
        if i % 64 == 0:
            note_progress(states=len(self.nodes), layers=self.nodes[i].depth, engine="explicit")
        if self._late():
            self._stop(i, "the time limit ran out")
            return True
        return False

    def _late(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def _stop(self, i: int, reason: str) -> None:
        self.result.reason = f"{reason} after {self._states()} states"
        self.result.depth_done = self.nodes[i].depth - 1

    def _states(self) -> int:
        """The states the nodes found stand for (``skipping.stood_for``)."""
        if not self.weighted:
            return len(self.nodes)
        states = [n.state for n in self.nodes]
        return stood_for(self.system, states, self.edges, self.skipping, self.crossing)

    def _expand(self, i: int, queue: _Queue) -> None:
        system, node = self.system, self.nodes[i]
        outcomes = []
        for records, _ in system.variants(node.state):
            if self._late():
                raise _Late
            outcomes.append((records, decide(system, records)))
        callable_by_all: set[str] | None = None
        callable_by_some: set[str] = set()
        finishing = deciding = False
        always = True
        for records, outcome in outcomes:
            if isinstance(outcome, Clash):
                self._conflict(node, records, outcome, outcomes)
                callable_by_all = set()
                always = False
                continue
            deciding = True
            here = {t for t in outcome.allowed if t != FINAL_ANSWER}
            seen = self.result.allowed_tools
            if not seen.issuperset(outcome.allowed):  # mostly: no tool allowed for the first time
                for tool in outcome.allowed:
                    if tool not in seen:
                        self.firsts[f"tool:{tool}"] = i
                seen.update(outcome.allowed)
            callable_by_some |= here
            callable_by_all = here if callable_by_all is None else callable_by_all & here
            if outcome.can_stop:
                finishing = True
                self.firsts.setdefault("finish", i)
            if self.result.tie is None and outcome.forced_tie is not None:
                # It depends on the checks unless every check valuation shows a tie (as
                # for a conflict, and as the symbolic engine decides it).
                everywhere = all(
                    isinstance(o, Pass) and o.forced_tie is not None for _, o in outcomes
                )
                self.result.tie = self._witness(node, records, not everywhere)
        if self.want_live:
            self._liveness(i)
        if finishing and self.result.finish_depth is None:
            self.result.finish_depth = node.depth
        self.finishing[i] = finishing
        self.deciding[i] = deciding
        self.always_deciding[i] = always
        self.edges[i] = self._successors(i, callable_by_some, callable_by_all or set(), queue)

    def _successors(self, i: int, some: set[str], every: set[str], queue: _Queue) -> list[int]:
        node, nodes, index, system = self.nodes[i], self.nodes, self.index, self.system
        found: dict[int, None] = {}  # in order of discovery, without repeats
        for after, event in system.steps_from(node.state, some).items():
            weight = system.weight(node.state, event) if self.weighted else 1
            depth = node.depth + weight
            depends = node.depends or event[0] not in every
            j = index.get(after)
            if j is None:
                if self.max_states is not None and len(nodes) >= self.max_states:
                    self._stop(i, f"the state limit ({self.max_states}) was reached")
                    return list(found)
                j = index[after] = len(nodes)
                nodes.append(_Node(after, depth, i, event, depends))
                queue.push(depth, j)
            elif depth < nodes[j].depth and j not in self.edges:
                # Weighted: a shorter way to a state found but not expanded yet.
                nodes[j] = _Node(after, depth, i, event, depends)
                queue.push(depth, j)
            counting = system.skips.get(event)
            if counting is not None:
                self.crossing.setdefault(i, set()).add((j, counting))
                if weight > 1:
                    self._skipped(i, after, counting, weight)
            found[j] = None
        return list(found)

    def _skipped(self, i: int, after: State, counting: tuple[int, ...], weight: int) -> None:
        """Note that a counting step from node ``i`` skips through the insides of
        ``counting``'s components (``skipping.exact_skip`` raises ``Impure`` where it is
        not exact)."""
        exact_skip(self.system, self.nodes[i].state, after, counting, weight)
        self.skipping.setdefault(i, set()).add(counting)

    def _conflict(
        self,
        node: _Node,
        records: tuple[Emitted, ...],
        clash: Clash,
        outcomes: list[tuple[tuple[Emitted, ...], Outcome]],
    ) -> None:
        result = self.result
        if clash.kind == "deadlock":
            if result.deadlock is None:
                everywhere = all(isinstance(o, Clash) and o.kind == "deadlock" for _, o in outcomes)
                result.deadlock = self._witness(node, records, not everywhere)
            return
        for tool in clash.forced:
            if tool not in result.forced_conflicts:
                everywhere = all(isinstance(o, Clash) and tool in o.forced for _, o in outcomes)
                result.forced_conflicts[tool] = self._witness(node, records, not everywhere)

    def _trace(self, node: _Node) -> tuple[Event, ...]:
        """The history that first reached ``node``."""
        trace: list[Event] = []
        walk = node
        while walk.event is not None:
            trace.append(walk.event)
            walk = self.nodes[walk.parent]
        return tuple(reversed(trace))

    def _witness(self, node: _Node, records: tuple[Emitted, ...], partial: bool) -> Witness:
        steps = node.depth if self.weighted else None
        return Witness(self._trace(node), records, node.depends or partial, steps)

    def _liveness(self, i: int) -> None:
        """Mark the requirements whose records change the pass at node ``i`` under some
        values of the opaque checks (SPEC §8), and the ask-permission ones that cover a tool
        it allows (SPEC §11): ``live_here``."""
        live = self.result.live
        try:
            found = live_here(
                self.system, self.nodes[i].state, self.candidates - live, self.asking, self._late
            )
        except Stopped as stopped:
            self._live(i, stopped.found)  # shown live all the same
            raise _Late from None
        self._live(i, found)

    def _live(self, i: int, found: set[str]) -> None:
        """Mark ``found`` live, first at node ``i``."""
        for name in found:
            self.firsts[f"live:{name}"] = i
        self.result.live |= found

    def reaching_finish(self) -> list[bool]:
        """Per node, whether a path along the edges found (each step allowed under some
        check values) leads from it to a finishing node. Cost: linear in the nodes and
        edges."""
        back: list[list[int]] = [[] for _ in self.nodes]
        for i, successors in self.edges.items():
            for j in successors:
                back[j].append(i)
        reaches = [False] * len(self.nodes)
        todo = [i for i, f in self.finishing.items() if f]
        for i in todo:
            reaches[i] = True
        while todo:
            j = todo.pop()
            for i in back[j]:
                if not reaches[i]:
                    reaches[i] = True
                    todo.append(i)
        return reaches

    def _no_finish(self) -> None:
        """The first state (breadth-first) from which no path reaches a finishing state."""
        nodes = self.nodes
        reaches = self.reaching_finish()
        # The first such node by depth (by index, when every step is one call).
        order = sorted(range(len(nodes)), key=lambda i: nodes[i].depth) if self.weighted else None
        for i in order or range(len(nodes)):
            node = nodes[i]
            if self.deciding[i] and not reaches[i]:
                # Stuck whatever the checks say; but the state has a pass (rather than a
                # conflict) only for some check values when not every value decides it.
                self.result.no_finish = self._witness(node, (), not self.always_deciding[i])
                return


class _Late(Exception):
    """The deadline passed within a state's expansion (``_Explorer._expand``)."""


class _Queue(Protocol):
    """The nodes to expand: breadth-first (``_Fifo``), or by weighted depth (``_Heap``)."""

    def push(self, depth: int, i: int) -> None: ...

    def pop(self) -> int: ...

    def __bool__(self) -> bool: ...


class _Fifo:
    def __init__(self) -> None:
        self._items: deque[int] = deque()

    def push(self, depth: int, i: int) -> None:
        self._items.append(i)

    def pop(self) -> int:
        return self._items.popleft()

    def __bool__(self) -> bool:
        return bool(self._items)


class _Heap:
    def __init__(self) -> None:
        self._items: list[tuple[int, int]] = []

    def push(self, depth: int, i: int) -> None:
        heapq.heappush(self._items, (depth, i))

    def pop(self) -> int:
        return heapq.heappop(self._items)[1]

    def __bool__(self) -> bool:
        return bool(self._items)
