"""Calls a finishing history makes beyond one per needed tool, where soft forces cost them.

``Relaxed.needed`` gives the tools every history that lets the run stop calls, one step
each; the relaxed product cannot see what a soft force costs (there it may always be
dropped). Here a few components at a time are followed exactly, the rest of the system
over-approximated, and the calls of some tools beyond the needed ones are counted.

* A *group* is a plain forcing component (plain: strict mode, rules that are conjunctions
  of literals or hard forces, tabulated view by view, not yielding), the plain components
  that may deny a tool it forces, the small ones that may keep the run from stopping and
  watch a needed trigger of it (they say which calls of it must count), and, room
  permitting, the plain components that force its triggers (with their deniers).
* Its search starts at the system's start. A step calls any tool the group does not deny
  (whatever its opaque checks say) and that is not known to be not allowed, with any
  status; the run may stop where the group leaves ``final_answer`` undenied and every
  needed tool the group tells apart has been called (a tool of ``needed_ok`` by a success).
* Of the rest it keeps what holds whatever the rest does: the components outside that
  *may* be at a view where they force (set off by the step, or kept there by it if they may
  have been there), those that *surely* are at a view where they surely force one tool,
  and tools that are *surely not allowed*: a step whose tool no force could have asked for
  shows that no surely forced tool was allowed, and one whose tool was forced, that the
  surely forced tools that would have beaten it (by priority, then declared order) were
  not; they stay so until a step may lift a denial of theirs (``_unlocks``).
* A soft force narrows the step only when some tool surely forced (by the group or
  outside) is surely allowed: no component of the group may deny it there, none outside
  may deny it at all, and it is not known to be not allowed. Then the pass forces one of
  the tools anything may force now that no such tool surely beats (its priority above
  every rule's that may soft-force the other, or as high and declared first; a tool some
  rule may hard-force is never beaten), so the next step calls one of those that is not
  denied, or the run stops. A hard force leaves only its tool, or clashes. No hard force outside
  can be at play when a step is taken as evidence.

So every history of the system that lets the run stop projects onto a path of the group
with as many calls of each tool. The fewest calls of the group's *costly* tools (those it
tells apart; of a needed one, every call but the one counted with the needed tools) on
such a path bounds those calls in every finishing history from below, and groups whose
costly tools are disjoint add up: the least number of steps before ``final_answer`` is at
least the needed tools plus the sum (``extra_calls``).

A group's search is a 0-1 breadth-first search over those states, at most
``GROUP_STATES`` of them. The tools a group does not tell apart are pooled: by class alone
in a first pass (fast), then also by what they set off outside (tighter); each pass is a
bound, and the larger one is kept. Deterministic: groups in component order, each keeping
(QuickXplain) only the costly tools its bound needs of those a later group may count. A
state's steps do not depend on the needed tools called, nor on which tools are costly: a
group remembers them per state without those (for every search QuickXplain asks of it), and
the statuses of a call that lead to the same state are one step (on the benchmark's random
conditionals at 50 tools, a third of the time it took).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ruleengine._search import quickxplain
from ruleengine.check.followed import followed
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import Component, System, lowered
from ruleengine.conditions.admission import ArgCheck
from ruleengine.ir import FINAL_ANSWER
from ruleengine.rules import Lowered, literals_of
from ruleengine.state import STATUSES

__all__ = ["GROUP_STATES", "extra_calls", "least_steps", "told_apart"]

GROUP_STATES = 20_000
"""States one group's search may visit before it gives up (and bounds nothing)."""

GROUP_MEMBERS = 8
"""Components in a group at most: a forcing one and those that may deny what it forces or
keep the run from stopping; those that force the same tools, and those that force its
triggers, join when there is room."""

WATCHING = 3
"""A component that may keep the run from stopping joins the group of a forcing component
whose needed trigger it watches when it watches at most this many tools (a minimum of calls
of the trigger, say), so the group sees which calls the run must make."""

NEEDED_BITS = 8
"""Needed tools a group's search tracks at most; the others are left out of its goal,
which only lowers its bound."""

REMEMBERED_STEPS = 300_000
"""Steps from search states a group remembers at most (``_Group._successors``), some 100
bytes each. At 50 tools a group's searches take up to about 150,000; at 200 tools one group
took 2.4 million (the process at 469 MB, where it stays at 258 MB with this bound)."""

_OK = STATUSES.index("ok")

DEADLINE_EVERY = 512
"""States a group's search visits between two looks at the clock."""


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


@dataclass(frozen=True, slots=True)
class _Facts:
    """What one component may do, over all its views and opaque-check values."""

    plain: bool
    """Literal rules and hard forces only, tabulated view by view, not yielding."""
    may_deny: frozenset[str]
    """Tools it may deny or hide somewhere (every tool a non-literal rule mentions)."""
    may_force: tuple[frozenset[str], ...]
    """Per view, the tools it may force (soft or hard)."""
    sure_soft: tuple[frozenset[str], ...]
    """Per view, the tools it soft-forces whatever its checks say."""
    maybe_denied: tuple[frozenset[str], ...]
    """Per view, the tools some check values deny or hide (``final_answer``: no stop)."""
    entering: dict[tuple[str, str], frozenset[str]]
    """Per event, the tools it may force in a view that event leads to from a view where
    it may force nothing (only events that lead to a forcing view)."""
    staying: dict[tuple[str, str], frozenset[str]]
    """The same from a view where it may force something."""
    forces_surely: frozenset[str]
    """The tools it soft-forces, whatever its checks, at every view where it surely forces
    something (empty: it is never followed as sure)."""
    sure_enter: frozenset[tuple[str, str]]
    """The events after which it is at such a view whatever its view before (its force
    set off by the last tool, say)."""
    sure_keep: frozenset[tuple[str, str]]
    """The events that keep it at such views (a failed call a force counting successes
    does not see, say)."""
    ranks: dict[str, tuple[int, int]]
    """Per tool it may soft-force, the least and the greatest priority of its forcing
    rules."""


def _facts(comp: Component, tools: Sequence[str]) -> _Facts:
    plain = not comp.requirement.yielding and comp.spans is None
    may_deny: set[str] = set()
    may_force: list[frozenset[str]] = []
    sure_soft: list[frozenset[str]] = []
    maybe_denied: list[frozenset[str]] = []
    ranks: dict[str, tuple[int, int]] = {}
    for variants in comp.variants:
        forcing: set[str] = set()
        denying: set[str] = set()
        sure: frozenset[str] | None = None
        for variant in variants:
            soft: set[str] = set()
            for e in variant.records:
                low: Lowered = lowered(e.item)
                if type(e.item) is ArgCheck:
                    plain = False
                    may_deny |= low.mentions
                if low.soft_force is not None:
                    soft.add(low.soft_force)
                    least, most = ranks.get(low.soft_force, (e.priority, e.priority))
                    ranks[low.soft_force] = (min(least, e.priority), max(most, e.priority))
                if low.hard_force is not None:
                    forcing.add(low.hard_force)
                    continue
                literals = literals_of(low.restrict)
                if literals is None:
                    plain = False
                    may_deny |= low.mentions
                    continue
                for kind, tool, value in literals:
                    if (kind == "allowed") != value:
                        denying.add(tool)
            forcing |= soft
            sure = frozenset(soft) if sure is None else sure & soft
        may_deny |= denying
        may_force.append(frozenset(forcing))
        sure_soft.append(sure or frozenset())
        maybe_denied.append(frozenset(denying))
    entering: dict[tuple[str, str], frozenset[str]] = {}
    staying: dict[tuple[str, str], frozenset[str]] = {}
    sure_views = [v for v, tools_there in enumerate(sure_soft) if tools_there]
    surely = frozenset.intersection(*(sure_soft[v] for v in sure_views)) if sure_views else None
    sure_enter: set[tuple[str, str]] = set()
    sure_keep: set[tuple[str, str]] = set()
    if any(may_force):
        for tool in tools:
            if tool == FINAL_ANSWER:
                continue
            klass = comp.classes[tool]
            for s, status in enumerate(STATUSES):
                table = comp.moves[klass * 3 + s]
                enters: set[str] = set()
                stays: set[str] = set()
                for before, after in enumerate(table):
                    (stays if may_force[before] else enters).update(may_force[after])
                if enters:
                    entering[(tool, status)] = frozenset(enters)
                if stays:
                    staying[(tool, status)] = frozenset(stays)
                if surely:
                    if all(sure_soft[after] for after in table):
                        sure_enter.add((tool, status))
                    if all(sure_soft[table[v]] for v in sure_views):
                        sure_keep.add((tool, status))
    return _Facts(
        plain,
        frozenset(may_deny),
        tuple(may_force),
        tuple(sure_soft),
        tuple(maybe_denied),
        entering,
        staying,
        surely or frozenset(),
        frozenset(sure_enter),
        frozenset(sure_keep),
        ranks,
    )


def least_steps(
    system: System,
    deadline: float | None = None,
    *,
    forced: bool = True,
    beyond: int | None = None,
) -> tuple[int, frozenset[str]]:
    """A lower bound on the steps before ``final_answer`` in every history of ``system``
    that lets the run stop, and the tools every such history calls (``Relaxed.needed``):
    one step per such tool and, with ``forced``, the calls that soft forces cost besides
    (``extra_calls``, until ``deadline``). Strict mode without counters tabulated band by
    band only (the relaxed product's premise); else ``(0, frozenset())``. Deterministic
    without ``forced``; with it, a ``deadline`` that passes only lowers the bound. With
    ``beyond``, the question is only whether the bound exceeds it: the calls are sought
    until it does (the bound returned is then above ``beyond``, not necessarily the
    largest)."""
    if system.mode != "strict" or system.skips:
        return 0, frozenset()
    relaxed = Relaxed(system.components, system.tools)
    needed, needed_ok = followed(system, relaxed.needed(), relaxed.needed_ok())
    calls = needed - {FINAL_ANSWER}
    if not forced or (beyond is not None and len(calls) > beyond):
        return len(calls), needed
    enough = None if beyond is None else beyond + 1 - len(calls)
    return len(calls) + extra_calls(system, calls, needed_ok, deadline, enough=enough), needed


def extra_calls(
    system: System,
    needed: frozenset[str],
    needed_ok: frozenset[str] = frozenset(),
    deadline: float | None = None,
    *,
    enough: int | None = None,
) -> int:
    """Calls every history that lets the run stop makes besides one call of each tool in
    ``needed`` (tools every such history calls, ``Relaxed.needed``), as the module's
    docstring bounds them: 0 where it shows nothing, in priority mode, or with counters
    tabulated band by band. ``len(needed) + extra_calls(...)`` is a lower bound on the
    steps before ``final_answer``. Stops early (with what it has) at ``deadline``, and
    once it has ``enough`` when given."""
    if system.mode != "strict" or system.skips:
        return 0
    facts = [_facts(c, system.tools) for c in system.components]
    groups = _groups(system.components, facts, needed)
    unlocks = _unlocks(system.components, facts, system.tools)
    apart = [_told_apart([system.components[j] for j in g], [facts[j] for j in g]) for g in groups]
    later: list[frozenset[str]] = [frozenset()] * len(groups)
    for k in range(len(groups) - 2, -1, -1):
        later[k] = later[k + 1] | apart[k + 1]
    totals = []
    for fine in (False, True):  # each pass a bound of its own: the larger one holds
        used: set[str] = set()
        total = 0
        for k, group in enumerate(groups):
            if _late(deadline):
                break
            search = _Group(system, facts, group, needed, needed_ok, unlocks, fine, deadline)
            costly = set(search.apart - used)
            best = search.least(frozenset(costly))
            if not best:
                continue
            total += best
            if enough is not None and total >= enough:
                return total
            costly = _shrunk(search, costly, later[k], best)
            used.update(costly)
        totals.append(total)
    return max(totals)


def _groups(
    comps: Sequence[Component], facts: Sequence[_Facts], needed: frozenset[str]
) -> list[tuple[int, ...]]:
    """The groups (see the module's docstring), each as its members' indices, in the order
    of their forcing components; the same group once."""
    deniers: dict[str, list[int]] = {}
    forcers: dict[str, list[int]] = {}
    for i, f in enumerate(facts):
        if f.plain:  # the others stay outside: what they may deny is never sure
            for tool in f.may_deny:
                deniers.setdefault(tool, []).append(i)
            for tool in f.ranks:
                forcers.setdefault(tool, []).append(i)
    watched = [frozenset(c.watched) for c in comps]
    stoppers = [
        j
        for j, f in enumerate(facts)
        if f.plain and FINAL_ANSWER in f.may_deny and len(watched[j]) <= WATCHING
    ]

    def core(i: int) -> set[int]:
        """A forcing component, what may deny a tool it forces, and the small components
        that may keep the run from stopping and watch a needed trigger of it (a needed
        trigger may be called only with a status that sets nothing off, unless the group
        sees the call that must count)."""
        forced = frozenset().union(*facts[i].may_force)
        members = {i} | {j for t in forced for j in deniers.get(t, ())}
        for t in told_apart(comps[i]) & needed:
            members.update(j for j in stoppers if t in watched[j])
        return members

    groups: list[tuple[int, ...]] = []
    for i, f in enumerate(facts):
        if not f.plain or not any(f.sure_soft):
            continue
        forced = frozenset().union(*f.may_force)
        members = core(i)
        if len(members) > GROUP_MEMBERS:
            continue
        # Room permitting, the others that force the same tools, each with its own core:
        # the calls of a tool that several rules force add up only where one group sees
        # every trigger ("`c` after `a`" and "`c` after `b`": `a` then `b` is two calls of
        # `c`, where each rule alone shows one).
        more = set(members)
        for t in sorted(forced):
            for j in forcers.get(t, ()):
                if j != i and any(facts[j].sure_soft):
                    more |= core(j)
        if len(more) <= GROUP_MEMBERS:
            members = more
        # And, room permitting, what forces its triggers (with what may deny those): a
        # chain of forces costs a call at each link.
        triggers = told_apart(comps[i])
        more = set(members)
        for t in sorted(triggers - forced):
            for j in forcers.get(t, ()):
                more.add(j)
                more.update(k for u in facts[j].ranks for k in deniers.get(u, ()))
        if len(more) <= GROUP_MEMBERS:
            members = more
        group = tuple(sorted(members))
        if group not in groups:
            groups.append(group)
    return groups


def _unlocks(
    comps: Sequence[Component], facts: Sequence[_Facts], tools: Sequence[str]
) -> dict[str, frozenset[tuple[str, str]] | None]:
    """Per tool some component may deny, the events after which it may no longer be: a
    literal denial's component at a view that denies it surely no more (None: any event,
    for a tool a formula or an unplain component may deny)."""
    out: dict[str, set[tuple[str, str]] | None] = {}
    callable_tools = [t for t in tools if t != FINAL_ANSWER]
    for comp, f in zip(comps, facts, strict=True):
        if not f.plain:
            for tool in f.may_deny:
                out[tool] = None
            continue
        members: dict[int, list[str]] = {}
        for t in callable_tools:
            members.setdefault(comp.classes[t], []).append(t)
        for view, maybe in enumerate(f.maybe_denied):
            for tool in maybe:
                if tool in out and out[tool] is None:
                    continue
                events = out.setdefault(tool, set())
                assert events is not None
                for klass, of_class in members.items():
                    for s, status in enumerate(STATUSES):
                        if tool not in comp.denied(comp.moves[klass * 3 + s][view]):
                            events.update((t, status) for t in of_class)
    return {t: None if e is None else frozenset(e) for t, e in out.items()}


def _shrunk(search: _Group, costly: set[str], later: frozenset[str], best: int) -> set[str]:
    """The tools of ``costly`` that ``search``'s bound ``best`` needs, of those a later group
    may count (``later``): a minimal set of them that keeps it (QuickXplain: the bound only
    grows with the tools counted), with all the others."""
    shared = sorted(costly & later)
    if not shared:
        return costly
    fixed = frozenset(costly - later)
    bit = {t: 1 << n for n, t in enumerate(shared)}

    def below(mask: int) -> bool:
        return search.least(fixed | {t for t in shared if mask & bit[t]}) < best

    return set(fixed) | set(quickxplain(shared, bit, below))


def _told_apart(comps: Sequence[Component], facts: Sequence[_Facts]) -> frozenset[str]:
    """The tools some of ``comps`` tells apart from most, or may deny or force."""
    mentioned: set[str] = set()
    for f in facts:
        for part in (*f.may_force, *f.maybe_denied):
            mentioned |= part
    mentioned.discard(FINAL_ANSWER)
    return frozenset(mentioned).union(*map(told_apart, comps))


def told_apart(comp: Component) -> frozenset[str]:
    """The tools ``comp`` tells apart from most: outside the class that holds more tools
    than any other (every tool, when no class does)."""
    counts: dict[int, int] = {}
    for tool, klass in comp.classes.items():
        if tool != FINAL_ANSWER:
            counts[klass] = counts.get(klass, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    most = ranked[0] if ranked and (len(ranked) == 1 or ranked[0] > ranked[1]) else None
    return frozenset(
        t
        for t, k in comp.classes.items()
        if t != FINAL_ANSWER and (most is None or counts[k] != most)
    )


_Node = tuple[tuple[int, ...], int, frozenset[int], frozenset[int], frozenset[str]]
"""A group's search state: its views, the tracked needed tools called (bits), the
components outside it that may be at a view where they force, those that surely are at a
view where they surely force (``_Facts.forces_surely``), and tools surely not allowed."""


_Successor = tuple[int, int, tuple[int, ...], frozenset[int], frozenset[int], frozenset[str]]
"""A step from a search state (``_Group._successors``): its index, the needed bit it sets,
and the state after it but for the needed tools called."""


@dataclass(frozen=True, slots=True)
class _Step:
    """A step of a group's search: a tool told apart, or one for a pool of others."""

    tool: str
    apart: bool
    bit: int
    """Its needed bit (0: not tracked)."""
    ok_only: bool
    """Whether only a successful call sets the bit (the tool is in ``needed_ok``)."""
    entering: tuple[frozenset[int], ...]
    """Per status, the components outside it leads from a view that forces nothing to one
    that may force."""
    staying: tuple[frozenset[int], ...]
    """Per status, the components outside it may keep at a view that may force."""
    sure_enter: tuple[frozenset[int], ...]
    """Per status, the plain components outside it leads to a view where they surely force,
    from any view."""
    sure_keep: tuple[frozenset[int], ...]
    """Per status, the plain components outside it keeps at such views."""


@dataclass(frozen=True, slots=True)
class _Here:
    """What a group says at its views, whatever its checks say unless told otherwise."""

    denied: frozenset[str]
    hard: frozenset[str]
    maybe: frozenset[str]
    """What some check values deny."""
    may_force: frozenset[str]
    sure: dict[str, int]
    """The tools it surely soft-forces, each with a least priority of its forcing rule."""


class _Group:
    """One group's product, its rest over-approximated (see the module's docstring)."""

    def __init__(
        self,
        system: System,
        facts: Sequence[_Facts],
        members: tuple[int, ...],
        needed: frozenset[str],
        needed_ok: frozenset[str],
        unlocks: dict[str, frozenset[tuple[str, str]] | None],
        fine: bool = True,
        deadline: float | None = None,
    ) -> None:
        self.deadline = deadline
        self.comps = [system.components[j] for j in members]
        self.facts = [facts[j] for j in members]
        self.start_views = tuple(system.initial[j] for j in members)
        inside = set(members)
        outside = [j for j in range(len(facts)) if j not in inside]
        self.outside_deny = frozenset().union(*(facts[j].may_deny for j in outside))
        self.start_pending = frozenset(j for j in outside if facts[j].may_force[system.initial[j]])
        self.start_sure = frozenset(
            j
            for j in outside
            if facts[j].plain and facts[j].forces_surely and facts[j].sure_soft[system.initial[j]]
        )
        self.forces = {j: frozenset().union(*facts[j].may_force) for j in outside}
        """Per component outside, every tool it may force somewhere."""
        self.forces_surely = {j: facts[j].forces_surely for j in outside}
        self.ranks = {j: facts[j].ranks for j in outside}
        self.top: dict[str, int] = {}
        """Per tool, the greatest priority of a rule that may soft-force it."""
        for f in facts:
            for t, (_, most) in f.ranks.items():
                self.top[t] = max(self.top.get(t, most), most)
        self.hard = frozenset().union(*(c.hard_forces for c in system.components))
        """Every tool some component may hard-force."""
        self.order = {t: i for i, t in enumerate(system.tools)}
        self._losses: dict[object, frozenset[str]] = {}
        self._nexts: dict[object, tuple[frozenset[int], frozenset[int], frozenset[str]]] = {}
        self._here: dict[tuple[int, ...], _Here] = {}
        self._moves: dict[tuple[tuple[int, ...], int], tuple[tuple[int, ...], ...]] = {}
        callable_tools = [t for t in system.tools if t != FINAL_ANSWER]
        joint = {t: tuple(c.classes[t] for c in self.comps) for t in callable_tools}
        self.apart = _told_apart(self.comps, self.facts)
        """The tools some member tells apart from most, or whose calls it may deny or force."""
        forcing = [j for j in outside if self.forces[j]]

        followed = [j for j in forcing if facts[j].plain and facts[j].forces_surely]

        def per_status(
            t: str, among: list[int], events: Callable[[_Facts], Collection[tuple[str, str]]]
        ) -> tuple[frozenset[int], ...]:
            """Per status, the components of ``among`` whose ``events`` hold a call of ``t``."""
            return tuple(
                frozenset(j for j in among if (t, status) in events(facts[j]))
                for status in STATUSES
            )

        def sets(t: str) -> tuple[tuple[frozenset[int], ...], ...]:
            return (
                per_status(t, forcing, lambda f: f.entering),
                per_status(t, forcing, lambda f: f.staying),
            )

        def sure(t: str) -> tuple[tuple[frozenset[int], ...], ...]:
            return (
                per_status(t, followed, lambda f: f.sure_enter),
                per_status(t, followed, lambda f: f.sure_keep),
            )

        # Steps: one per tool told apart; the others pooled by class and by what they may
        # set off outside (a pooled needed tool moves nothing apart: it is not tracked).
        pools: dict[object, list[str]] = {}
        outside_sets = {t: (sets(t), sure(t)) for t in callable_tools}
        for t in callable_tools:
            key = (joint[t], outside_sets[t]) if fine else joint[t]
            pools.setdefault(t if t in self.apart else key, []).append(t)
        bits: dict[str, int] = {}
        for t in sorted(self.apart & needed):
            if len(bits) < NEEDED_BITS:
                bits[t] = 1 << len(bits)
        self.full = sum(bits.values())
        self.untracked = (self.apart & needed) - bits.keys()
        """The needed tools it tells apart past ``NEEDED_BITS``: its goal does not wait for
        them, and their first call would not be free, so ``least`` never counts their calls
        (it would count a call that the needed tools count already)."""
        self.steps: list[_Step] = []
        self.of_tool: dict[str, int] = {}
        """Per tool, the index of its step (its own, or its pool's)."""
        self.pools: dict[str, list[str]] = {}
        """Per step's tool, the tools it stands for."""
        for pool in pools.values():
            rep = pool[0]
            self.pools[rep] = pool
            for t in pool:
                self.of_tool[t] = len(self.steps)
            # A pool stands for a call of any of its tools: what any sets off outside,
            # what all surely do.
            parts = [outside_sets[t] for t in pool]
            entering, staying = (
                tuple(frozenset().union(*(p[0][w][n] for p in parts)) for n in range(3))
                for w in (0, 1)
            )
            sure_enter, sure_keep = (
                tuple(frozenset.intersection(*(p[1][w][n] for p in parts)) for n in range(3))
                for w in (0, 1)
            )
            self.steps.append(
                _Step(
                    rep,
                    rep in self.apart,
                    bits.get(rep, 0),
                    rep in needed_ok,
                    entering,
                    staying,
                    sure_enter,
                    sure_keep,
                )
            )

        self.every_step = list(range(len(self.steps)))
        self._chosen: dict[frozenset[str], list[int]] = {}
        """Per set of tools denied, the steps left (``_choices``)."""
        self._steps_from: dict[object, tuple[_Successor, ...]] = {}
        """Per search state but for its needed bits, its steps (``_successors``)."""
        self._remembered = 0
        """The steps ``_steps_from`` holds (at most about ``REMEMBERED_STEPS``)."""
        self.hard_pool = [any(t in self.hard for t in self.pools[st.tool]) for st in self.steps]
        """Per step, whether some tool of its pool may be hard-forced (it shows nothing)."""
        self.unlocked: list[list[frozenset[str]]] = []
        """Per step and status, the tools a denial of which a call of its pool may lift."""
        for st in self.steps:
            self.unlocked.append(
                [
                    frozenset(
                        t
                        for t, events in unlocks.items()
                        if events is None or any((u, status) in events for u in self.pools[st.tool])
                    )
                    for status in STATUSES
                ]
            )
        self.alike: list[tuple[int, ...]] = []
        """Per step and status, the first status whose call the search cannot tell apart
        from it but by the group's views: it sets the same needed bit, sets off and keeps
        the same components outside, and may lift the same denials."""
        for k, st in enumerate(self.steps):
            effects = [
                (
                    s == _OK or not st.ok_only,
                    st.entering[s],
                    st.staying[s],
                    st.sure_enter[s],
                    st.sure_keep[s],
                    self.unlocked[k][s],
                )
                for s in range(len(STATUSES))
            ]
            self.alike.append(tuple(effects.index(e) for e in effects))

    def least(self, costly: frozenset[str]) -> int:
        """The fewest calls of ``costly`` tools (a needed one's calls after its first; none
        of an ``untracked`` one) on a path of the group to a state where the run may stop
        with every tracked needed tool called; 0 where there is none within
        ``GROUP_STATES`` states (no bound)."""
        start: _Node = (self.start_views, 0, self.start_pending, self.start_sure, frozenset())
        charged = frozenset(
            k
            for k, st in enumerate(self.steps)
            if st.apart and st.tool in costly and st.tool not in self.untracked
        )
        dist = {start: 0}
        queue: deque[_Node] = deque([start])
        done: set[_Node] = set()
        while queue:
            node = queue.popleft()
            if node in done:
                continue
            done.add(node)
            if len(done) > GROUP_STATES:
                return 0
            if len(done) % DEADLINE_EVERY == 0 and _late(self.deadline):
                return 0
            d = dist[node]
            views, called, pending, sure_out, blocked = node
            here = self._at(views)
            if FINAL_ANSWER not in here.denied and called == self.full:
                return d
            for k, bit, moved, after, surely, held in self._successors(
                views, pending, sure_out, blocked
            ):
                # The call of a needed tool counted with the needed ones is free: its
                # first, or its first success where it is needed so.
                cost = int(k in charged and not (bit and not called & bit))
                nd = d + cost
                nxt = (moved, called | bit, after, surely, held)
                if nd < dist.get(nxt, nd + 1):
                    dist[nxt] = nd
                    if cost:
                        queue.append(nxt)
                    else:
                        queue.appendleft(nxt)
        return 0

    def _successors(
        self,
        views: tuple[int, ...],
        pending: frozenset[int],
        sure_out: frozenset[int],
        blocked: frozenset[str],
    ) -> tuple[_Successor, ...]:
        """The steps from a search state, whatever its needed tools called (remembered: the
        same views, forces and denials recur with each set of them, and in each ``least``
        of the group): per step and status that leads elsewhere, the step's index, the
        needed bit its call sets (0: none), and the state after it but for those bits
        (empty on a clash: no pass, no step)."""
        key = (views, pending, sure_out, blocked)
        found = self._steps_from.get(key)
        if found is not None:
            return found
        here = self._at(views)
        candidates, surely_forced = self._forces(here, pending, sure_out)
        choices = self._choices(here, candidates, surely_forced, here.denied | blocked)
        out: list[_Successor] = []
        sure_key = frozenset(surely_forced.items()) if surely_forced else frozenset()
        for k in choices or ():
            step = self.steps[k]
            # A step shows which surely forced tools were not allowed (``_lost``); they stay
            # so until a step may lift a denial of theirs (``_next``).
            lost = blocked
            if sure_key and not self.hard_pool[k]:
                lost = blocked | self._lost(k, candidates, sure_key)
            alike = self.alike[k]
            moves = self._moved(views, k)
            for s, moved in enumerate(moves):
                first = alike[s]
                if first != s and moves[first] == moved:
                    continue  # the same successor as the status before
                bit = step.bit if s == _OK or not step.ok_only else 0
                out.append((k, bit, moved, *self._next(k, s, pending, sure_out, lost)))
        found = tuple(out)
        if self._remembered < REMEMBERED_STEPS:
            self._remembered += len(found)
            self._steps_from[key] = found
        return found

    def _forces(
        self, here: _Here, pending: frozenset[int], sure_out: frozenset[int]
    ) -> tuple[frozenset[str], dict[str, int]]:
        """The tools anything may force at this state, and those some component surely
        forces, each with a least priority of its forcing rule (the pass forces one of the
        first whenever one of the second is allowed)."""
        if not pending and not sure_out:
            return here.may_force, here.sure
        may = set(here.may_force)
        for j in pending | sure_out:
            may |= self.forces[j]
        sure = dict(here.sure)
        for j in sure_out:
            for t in self.forces_surely[j]:
                least = self.ranks[j][t][0]
                sure[t] = max(sure.get(t, least), least)
        return frozenset(may), sure

    def _beaten(self, u: str, allowed: Collection[str], sure: dict[str, int]) -> bool:
        """Whether a tool of ``allowed`` (surely forced, each with a least priority of its
        forcing rules in ``sure``, and allowed) surely beats ``u`` for the pass's forced
        tool: its priority is above any rule's that may soft-force ``u`` (``top``), or as
        high and it is declared first. A tool some rule may hard-force is never beaten (a
        hard force beats every soft one)."""
        if u in self.hard or u not in self.top:
            return False
        most = self.top[u]
        return any(
            t != u and (sure[t] > most or (sure[t] == most and self.order[t] < self.order[u]))
            for t in allowed
        )

    def _lost(
        self, k: int, candidates: frozenset[str], sure: frozenset[tuple[str, int]]
    ) -> frozenset[str]:
        """The tools surely forced (with a least priority of their forcing rules, ``sure``)
        that a call of step ``k`` shows were not allowed: that call was the forced tool,
        which they would have beaten, or there was none (no hard force can be at play)."""
        key = (k, candidates, sure)
        found = self._losses.get(key)
        if found is None:
            pool = self.pools[self.steps[k].tool]
            asked = [u for u in pool if u in candidates]
            found = frozenset(
                t
                for t, rank in sure
                if all(
                    rank > self.top[u] or (rank == self.top[u] and self.order[t] < self.order[u])
                    for u in asked
                )
            )
            self._losses[key] = found
        return found

    def _next(
        self,
        k: int,
        s: int,
        pending: frozenset[int],
        sure_out: frozenset[int],
        lost: frozenset[str],
    ) -> tuple[frozenset[int], frozenset[int], frozenset[str]]:
        """After step ``k`` with status ``s``: the components outside that may force (those
        it sets off, and those it keeps at a forcing view if they may have been there), those
        that surely do, and the tools of ``lost`` surely still not allowed (those a force
        outside may ask for: the group's own denials are in its views)."""
        key = (k, s, pending, sure_out, lost)
        found = self._nexts.get(key)
        if found is None:
            step = self.steps[k]
            after = step.entering[s] | (pending & step.staying[s])
            surely = step.sure_enter[s] | (sure_out & step.sure_keep[s])
            held = lost
            if held:
                asking = frozenset().union(*(self.forces[j] for j in after))
                unlocked = self.unlocked[k][s]
                held = frozenset(t for t in held & asking if t not in unlocked)
            found = (after, surely, held)
            self._nexts[key] = found
        return found

    def _at(self, views: tuple[int, ...]) -> _Here:
        """What the group says at ``views`` (remembered)."""
        found = self._here.get(views)
        if found is None:
            denied: set[str] = set()
            hard: set[str] = set()
            maybe: set[str] = set()
            may: set[str] = set()
            sure: dict[str, int] = {}
            for c, f, v in zip(self.comps, self.facts, views, strict=True):
                denied |= c.denied(v)
                hard |= c.hard_forced(v)
                maybe |= f.maybe_denied[v]
                may |= f.may_force[v]
                for t in f.sure_soft[v]:
                    sure[t] = max(sure.get(t, f.ranks[t][0]), f.ranks[t][0])
            found = _Here(
                frozenset(denied), frozenset(hard), frozenset(maybe), frozenset(may), sure
            )
            self._here[views] = found
        return found

    def _moved(self, views: tuple[int, ...], k: int) -> tuple[tuple[int, ...], ...]:
        """The group's views after step ``k`` from ``views``, per status."""
        key = (views, k)
        found = self._moves.get(key)
        if found is None:
            tool = self.steps[k].tool
            found = tuple(
                tuple(c.move(v, tool, status) for c, v in zip(self.comps, views, strict=True))
                for status in STATUSES
            )
            self._moves[key] = found
        return found

    def _choices(
        self,
        here: _Here,
        may: frozenset[str],
        sure: dict[str, int],
        denied: frozenset[str],
    ) -> list[int] | None:
        """The steps the group leaves at a state (indices into ``steps``), None on a clash;
        ``may`` and ``sure`` as ``_forces`` gives them; ``denied``: the tools the group
        denies there, and those surely not allowed."""
        hard = here.hard
        if hard:
            if len(hard) > 1 or hard & denied:
                return None
            return [self.of_tool[t] for t in hard if t in self.of_tool]
        allowed_sure = sure.keys() - here.maybe - self.outside_deny - denied
        if allowed_sure:
            # One of the tools some component is sure to force is allowed: the pass forces
            # one of the allowed tools that anything may force now, and none that such a
            # tool surely beats.
            return sorted(
                {
                    self.of_tool[t]
                    for t in may - denied
                    if t in self.of_tool and not self._beaten(t, allowed_sure, sure)
                }
            )
        if not denied:
            return self.every_step
        found = self._chosen.get(denied)
        if found is None:
            found = self._chosen[denied] = [
                k
                for k, step in enumerate(self.steps)
                if any(t not in denied for t in self.pools[step.tool])
            ]
        return found
