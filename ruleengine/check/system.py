"""The transition system of a policy, built from its requirements' own monitors.

Each enabled requirement with a monitor becomes a ``Component``: its monitor's finite view
space, explored once from ``initial()`` through ``advance`` (one representative for the tools
its monitor does not name, see ``Monitor.tools``), and what ``emit`` returns for every view
and every value of its opaque checks, wrapped as the runtime wraps it (``Reasoner.wrap``).
A *state* of the system is a tuple of view indices, one per component; a *step* is a tool
call with its status. Nothing here re-implements a requirement: views, steps and rules all
come from the monitors, and passes from the runtime's ``Reasoner``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import chain, product
from typing import Any, Protocol

from ruleengine.check import skipping
from ruleengine.check.skipping import NotPure, Skip, skip_of
from ruleengine.conditions.admission import ArgCheck
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Mode
from ruleengine.reasoner import Reasoner
from ruleengine.requirements.base import Requirement
from ruleengine.requirements.monitor import Monitor
from ruleengine.rules import Emitted, Literal, Lowered, literals_of, lower
from ruleengine.state import STATUSES, Status

__all__ = [
    "Checked",
    "Component",
    "Event",
    "State",
    "System",
    "Unexplorable",
    "Variant",
    "symbolic_problem",
]

State = tuple[int, ...]
"""One view index per component."""

Event = tuple[str, Status]
"""A step: the tool called and how the call ended."""

MAX_VIEWS = 200_000
"""Bound on one monitor's views (a monitor past it is not explored)."""

MAX_CHECKS = 12
"""Bound on one requirement's opaque checks (2**12 valuations)."""


lowered = lru_cache(maxsize=4096)(lower)
"""``rules.lower``, memoised: the tables emit the same items view after view, and the
bounds and guesses of core searches ask each component what its views deny and force many
times over (a pure function of an immutable item)."""


class Unexplorable(Exception):
    """A requirement the engines cannot abstract: no monitor, or one too large to tabulate.

    The check falls back to a bounded search of concrete histories and says why.
    """


@dataclass(frozen=True, slots=True)
class Variant:
    """What one component emits at one view under some values of its opaque checks."""

    records: tuple[Emitted, ...]
    checks: tuple[tuple[bool, ...], ...]
    """Every check valuation under which the component emits ``records``."""


@dataclass(frozen=True, slots=True, eq=False)
class Component:
    """One requirement's monitor, tabulated."""

    requirement: Requirement
    """The requirement (bound to the declared tools)."""
    views: tuple[Hashable, ...]
    """The monitor's reachable views; a state holds an index into this tuple."""
    classes: dict[str, int]
    """Per tool, the class of tools it acts like on this monitor (``Monitor.tools``)."""
    moves: tuple[tuple[int, ...], ...]
    """``moves[class * 3 + status][view]``: the view after such a step."""
    variants: tuple[tuple[Variant, ...], ...]
    """Per view, the distinct rule sets the monitor emits (one unless it has opaque checks)."""
    still: tuple[bool, ...]
    """Per move table, whether it leaves every view as it is."""
    moving: tuple[tuple[Event, int], ...]
    """The steps that change some view, each with its move table (in tool order, then
    status order): a system's steps are built from these, not from every tool and status."""
    keys: tuple[Hashable, ...] = ()
    """What each opaque check computes (``Monitor.check_keys``), in check order."""
    spans: tuple[int, ...] | None = None
    """Tabulated band by band (``skipping``): per view, how many counts it stands for (and
    how many calls a counting step from it weighs); None for a component tabulated view by
    view."""
    counting: frozenset[Event] = frozenset()
    """The steps that count, for a component tabulated band by band."""

    @property
    def opaque(self) -> bool:
        """Whether some view emits differently depending on opaque checks."""
        return any(len(vs) > 1 for vs in self.variants)

    @property
    def watched(self) -> list[str]:
        """The tools whose (successful) calls change the view."""
        return [t for t, c in self.classes.items() if not self.still[c * 3]]

    @property
    def mentions(self) -> frozenset[str]:
        """Every tool its rules mention in any view (``final_answer`` for a prevented
        stop)."""
        tools: set[str] = set()
        for variants in self.variants:
            for variant in variants:
                for e in variant.records:
                    tools |= lowered(e.item).mentions
        return frozenset(tools)

    @property
    def hard_forces(self) -> frozenset[str]:
        """Every tool its rules hard-force in some view."""
        return self._forces(soft=False)

    @property
    def soft_forces(self) -> frozenset[str]:
        """Every tool its rules soft-force in some view."""
        return self._forces(soft=True)

    def _forces(self, *, soft: bool) -> frozenset[str]:
        return frozenset(
            forced
            for variants in self.variants
            for variant in variants
            for e in variant.records
            if (forced := _forced(lowered(e.item), soft)) is not None
        )

    def denied(self, view: int) -> frozenset[str]:
        """The tools its rules deny (or hide) at ``view`` whatever its opaque checks say,
        ``final_answer`` for a prevented stop. Rules that are not conjunctions of literals
        deny nothing here (this is for lower bounds, guesses and proofs that rest on sure
        denials, ``orders``; never for verdicts found by exploring)."""
        out: frozenset[str] | None = None
        for variant in self.variants[view]:
            tools: set[str] = set()
            for e in variant.records:
                literals = literals_of(lowered(e.item).restrict)
                for kind, tool, value in literals or ():
                    if (kind == "allowed") != value:  # not allowed, or hidden
                        tools.add(tool)
            out = frozenset(tools) if out is None else out & tools
        return out or frozenset()

    def hard_forced(self, view: int) -> frozenset[str]:
        """The tools its rules hard-force at ``view`` whatever its opaque checks say."""
        out: frozenset[str] | None = None
        for variant in self.variants[view]:
            tools = {f for e in variant.records if (f := lowered(e.item).hard_force) is not None}
            out = frozenset(tools) if out is None else out & tools
        return out or frozenset()

    def is_global(self, callable_tools: int) -> bool:
        """Whether most of the ``callable_tools`` tools move the view (a step counter, the
        last tool called, the cycle guard's history): such a view links every tool to
        every other, so guesses and orders built on links leave it out."""
        return len(self.watched) * 2 > callable_tools

    def move(self, view: int, tool: str, status: Status) -> int:
        """The view index after a step."""
        return self.moves[self.classes[tool] * 3 + STATUSES.index(status)][view]


def _forced(low: Lowered, soft: bool) -> str | None:
    """The tool a lowered item soft-forces (``soft``) or hard-forces, if any."""
    return low.soft_force if soft else low.hard_force


def tabulate(
    requirement: Requirement,
    monitor: Monitor,
    tools: Sequence[str],
    reasoner: Reasoner,
    *,
    skip: Skip | None = None,
) -> Component:
    """Explore ``monitor``'s views from its initial one over every step on ``tools`` (with
    ``skip``, band by band where its counter keeps its promise: ``check/skipping.py``)."""
    callable_tools = [t for t in tools if t != FINAL_ANSWER]
    named = monitor.tools()
    if skip is not None:
        try:
            return _tabulated(requirement, monitor, callable_tools, named, reasoner, skip)
        except NotPure:
            pass  # a counting call changes more than the count somewhere: view by view
    return _tabulated(requirement, monitor, callable_tools, named, reasoner, None)


def _tabulated(
    requirement: Requirement,
    monitor: Monitor,
    callable_tools: list[str],
    named: frozenset[str] | None,
    reasoner: Reasoner,
    skip: Skip | None,
) -> Component:
    advance = monitor.advance if skip is None else skip.advance
    if named is None:
        representatives = list(callable_tools)
    else:
        representatives = [t for t in callable_tools if t in named]
        others = [t for t in callable_tools if t not in named]
        if others:
            representatives.append(others[0])
    classes: dict[str, int] = {}
    for t in callable_tools:
        if t in representatives:
            classes[t] = representatives.index(t)
        else:
            classes[t] = len(representatives) - 1  # the "others" representative
    start = monitor.initial()
    index: dict[Hashable, int] = {start: 0}
    views: list[Hashable] = [start]
    moves: list[list[int]] = [[] for _ in range(len(representatives) * 3)]
    i = 0
    while i < len(views):
        view = views[i]
        for c, tool in enumerate(representatives):
            for s, status in enumerate(STATUSES):
                after = advance(view, tool, status)
                found = index.get(after)
                if found is None:
                    found = index[after] = len(views)
                    views.append(after)
                    if len(views) > MAX_VIEWS:
                        raise Unexplorable(
                            f"requirement `{requirement.name}`: its monitor has more than "
                            f"{MAX_VIEWS} views"
                        )
                moves[c * 3 + s].append(found)
        i += 1
    tables = tuple(tuple(m) for m in moves)
    still = tuple(all(after == view for view, after in enumerate(t)) for t in tables)
    spans = None if skip is None else tuple(skip.span(v) for v in views)
    if spans is not None and all(n == 1 for n in spans):
        spans = skip = None  # every step was one call: as tabulated view by view
    return Component(
        requirement,
        tuple(views),
        classes,
        tables,
        tuple(_variants(requirement, monitor, v, reasoner) for v in views),
        still,
        tuple(
            ((tool, status), table)
            for tool in callable_tools
            for s, status in enumerate(STATUSES)
            if not still[table := classes[tool] * 3 + s]
        ),
        _check_keys(requirement, monitor),
        spans,
        frozenset()
        if skip is None
        else frozenset(
            (tool, status)
            for tool in callable_tools
            for status in STATUSES
            if skip.counts(tool, status)
        ),
    )


def _check_keys(requirement: Requirement, monitor: Monitor) -> tuple[Hashable, ...]:
    """``monitor.check_keys()``, checked: one hashable key per opaque check."""
    if not monitor.checks:
        return ()
    keys = monitor.check_keys()
    where = f"requirement `{requirement.name}`: {type(monitor).__name__}.check_keys()"
    if not isinstance(keys, tuple) or len(keys) != monitor.checks:
        raise PolicyError(
            f"{where} gave `{keys!r:.60}`: it must be a tuple of one key per check"
            f" ({monitor.checks})",
        )
    try:
        hash(keys)
    except TypeError:
        raise PolicyError(f"{where} gave an unhashable key: `{keys!r:.60}`") from None
    return keys


def _variants(
    requirement: Requirement, monitor: Monitor, view: Hashable, reasoner: Reasoner
) -> tuple[Variant, ...]:
    checks = monitor.checks
    if checks > MAX_CHECKS:
        raise Unexplorable(
            f"requirement `{requirement.name}` has more than {MAX_CHECKS} custom checks"
        )
    by_records: dict[tuple[Emitted, ...], list[tuple[bool, ...]]] = {}
    # True first: the valuation "every check passes" is the first one tried.
    for values in product((True, False), repeat=checks):
        records = tuple(reasoner.wrap(requirement, monitor.emit(view, values)))
        by_records.setdefault(records, []).append(values)
    return tuple(Variant(records, tuple(vals)) for records, vals in by_records.items())


class System:
    """The product of the components: states, steps, and the records a state emits."""

    def __init__(
        self,
        tools: Sequence[object],
        requirements: Sequence[Requirement],
        *,
        mode: Mode = "strict",
        components: Sequence[Component] | None = None,
        reasoner: Reasoner | None = None,
        skipping: bool = False,
    ) -> None:
        if reasoner is None:
            reasoner = Reasoner(tools, requirements, mode=mode, cache_size=65536)
        self.reasoner = reasoner
        """The runtime's reasoner: it decides every state (a subsystem shares its parent's,
        which decides any set of records of the same tools)."""
        self.tools = self.reasoner.tools
        """The declared tools, ``final_answer`` last."""
        self.mode: Mode = mode
        if components is None:
            self.requirements = tuple(r for r in reasoner.requirements if r.enabled)
        else:
            # A requirement whose monitor has factors has one component per factor.
            by_id = {id(c.requirement): c.requirement for c in components}
            self.requirements = tuple(by_id.values())
        """The enabled requirements (bound), in name order."""
        if components is None:
            unmonitored = [r.name for r in self.requirements if _monitor(r) is None]
            if unmonitored:
                raise Unexplorable(_unmonitored(self.requirements, unmonitored[0]))
            monitors = [(r, m) for r in self.requirements for m in _factors_of(_monitor_of(r))]
            chosen = _skips(monitors, self.tools) if skipping else [None] * len(monitors)
            components = [
                tabulate(r, m, self.tools, self.reasoner, skip=skip)
                for (r, m), skip in zip(monitors, chosen, strict=True)
            ]
        self.components = tuple(components)
        self.callable = tuple(t for t in self.tools if t != FINAL_ANSWER)
        """The tools a step may call (``final_answer`` ends the run instead)."""
        self.initial: State = tuple(0 for _ in self.components)
        # Per event, the components it moves (others keep their view: identity moves), in
        # component order.
        effects: dict[Event, list[tuple[int, tuple[int, ...]]]] = {
            (tool, status): [] for tool in self.callable for status in STATUSES
        }
        for i, comp in enumerate(self.components):
            try:
                for event, index in comp.moving:
                    effects[event].append((i, comp.moves[index]))
            except KeyError:
                tool = next(e[0] for e, _ in comp.moving if e not in effects)
                raise PolicyError(
                    f"requirement `{comp.requirement.name}`: its component was tabulated "
                    f"over other tools (`{tool}` is not a tool of this system)"
                ) from None
        self._effects: dict[Event, tuple[tuple[int, tuple[int, ...]], ...]] = {
            event: tuple(moved) for event, moved in effects.items()
        }
        # For ``variants``: the components some view of which emits more than one way, and
        # per component and view, its first variant's records.
        self._opaque = tuple(i for i, c in enumerate(self.components) if c.opaque)
        self.opaque_of: dict[str, frozenset[int]] = {}
        """Per requirement name, the indices of its components with opaque checks (none:
        a name missing)."""
        for i in self._opaque:
            name = self.components[i].requirement.name
            self.opaque_of[name] = self.opaque_of.get(name, frozenset()) | {i}
        self._singles = tuple(tuple(vs[0].records for vs in c.variants) for c in self.components)
        self._worded: dict[tuple[int, int], tuple[int, ...] | None] = {}
        counted: dict[Event, list[int]] = {}
        for i, comp in enumerate(self.components):
            for event in comp.counting:
                counted.setdefault(event, []).append(i)
        self.skips: dict[Event, tuple[int, ...]] = {e: tuple(c) for e, c in counted.items()}
        """Per counting step of components tabulated band by band, those components (such
        a step may weigh several calls: ``weight``)."""
        # Per tool, its events, each with the key of its effects: events with the same key
        # lead every state to the same successor (key 0: they move nothing).
        keys: dict[tuple[tuple[int, tuple[int, ...]], ...], int] = {(): 0}
        self._steps: dict[str, tuple[tuple[Event, int], ...]] = {
            tool: tuple(
                ((tool, status), keys.setdefault(self._effects[(tool, status)], len(keys)))
                for status in STATUSES
            )
            for tool in self.callable
        }

    @cached_property
    def mentions(self) -> dict[str, frozenset[str]]:
        """Per requirement, every tool its rules mention in any view (``final_answer`` for a
        prevented stop)."""
        out: dict[str, frozenset[str]] = {}
        for comp in self.components:
            name = comp.requirement.name
            out[name] = out.get(name, frozenset()) | comp.mentions
        return out

    @cached_property
    def watching(self) -> dict[bool, dict[str, frozenset[str]]]:
        """Per requirement, the tools whose (successful) calls change its view; under
        ``True``, not those of a global view (``Component.is_global``)."""
        callable_count = sum(t != FINAL_ANSWER for t in self.tools)
        out: dict[bool, dict[str, frozenset[str]]] = {False: {}, True: {}}
        for comp in self.components:
            name = comp.requirement.name
            moving = frozenset(comp.watched)
            for linking in (False, True):
                kept = frozenset() if linking and comp.is_global(callable_count) else moving
                out[linking][name] = out[linking].get(name, frozenset()) | kept
        return out

    @cached_property
    def forcing(self) -> frozenset[str]:
        """The requirements that force a tool (hard or soft) in some view."""
        return frozenset(
            comp.requirement.name
            for comp in self.components
            if any(
                lowered(e.item).hard_force is not None or lowered(e.item).soft_force is not None
                for variants in comp.variants
                for variant in variants
                for e in variant.records
            )
        )

    def subsystem(self, keep: Sequence[str]) -> System:
        """The same system with only the requirements named in ``keep`` (tables reused)."""
        names = set(keep)
        kept = [c for c in self.components if c.requirement.name in names]
        return System(
            self.tools,
            [c.requirement for c in kept],
            mode=self.mode,
            components=kept,
            reasoner=self.reasoner,
        )

    def successor(self, state: State, event: Event) -> State:
        """The state after ``event``."""
        effects = self._effects[event]
        if not effects:
            return state
        after = list(state)
        for i, table in effects:
            after[i] = table[state[i]]
        return tuple(after)

    def moved(self, event: Event) -> tuple[int, ...]:
        """The indices of the components ``event`` may move (the others keep their view)."""
        return tuple(i for i, _ in self._effects[event])

    def weight(self, state: State, event: Event) -> int:
        """How many calls ``event`` from ``state`` stands for: for a counting step of a
        component tabulated band by band, the counts its view stands for, else 1."""
        counting = self.skips.get(event)
        if counting is None:
            return 1
        most = 1
        for i in counting:
            spans = self.components[i].spans
            assert spans is not None
            most = max(most, spans[state[i]])
        return most

    def spans(self, component: int) -> tuple[int, ...] | None:
        """Per view of ``component``, the counts it stands for (``Component.spans``)."""
        return self.components[component].spans

    def calls(self, trace: Sequence[Event]) -> int:
        """How many calls ``trace`` (a history of this system) stands for (``weight``)."""
        if not self.skips:
            return len(trace)
        state, total = self.initial, 0
        for event in trace:
            total += self.weight(state, event)
            state = self.successor(state, event)
        return total

    def steps_from(self, state: State, tools: AbstractSet[str]) -> dict[State, Event]:
        """The states one step calling one of ``tools`` leads to from ``state``, each with
        the first such step (tools in declared order, statuses in the order of
        ``STATUSES``), in the order of those steps. Steps that move the components alike are
        followed once."""
        out: dict[State, Event] = {}
        done: set[int] = set()
        for tool in self.callable:
            if tool not in tools:
                continue
            for event, key in self._steps[tool]:
                if key in done:
                    continue
                done.add(key)
                out.setdefault(state if key == 0 else self.successor(state, event), event)
        return out

    def variants(self, state: State) -> Iterator[tuple[tuple[Emitted, ...], bool]]:
        """Every distinct set of records ``state`` may emit, with whether it is the only one.

        One set when no component has opaque checks at this state; otherwise one per
        combination of the components' variants (the static checker explores every value
        of every opaque check).
        """
        opaque = self._opaque
        if not opaque or all(len(self.components[i].variants[state[i]]) == 1 for i in opaque):
            singles = self._singles
            yield tuple(chain.from_iterable([singles[i][v] for i, v in enumerate(state)])), True
            return
        per_component = [self.components[i].variants[v] for i, v in enumerate(state)]
        for combination in product(*per_component):
            yield tuple(chain.from_iterable([v.records for v in combination])), False

    def drawn(
        self, state: State, choose: Callable[[Sequence[Variant]], Variant]
    ) -> tuple[Emitted, ...]:
        """One set of records ``state`` may emit: per component, the variant ``choose``
        picks among its variants there (``random.Random.choice``: each set of ``variants``
        as likely), without building the others."""
        if not self._opaque:
            return next(self.variants(state))[0]
        picked = []
        for comp, view in zip(self.components, state, strict=True):
            menu = comp.variants[view]
            picked.append(menu[0] if len(menu) == 1 else choose(menu))
        return tuple(chain.from_iterable([v.records for v in picked]))

    def deciding(self, state: State, apart: Collection[int] = ()) -> Iterator[tuple[Emitted, ...]]:
        """Sets of records ``state`` may emit whose decisions are every decision of
        ``variants``' sets (allowed, hidden and forced tools and ``can_stop``, or a clash;
        reasons and cores aside): for the searches and replays that ask only what a state
        allows. Fewer where opaque components emit alike: components whose every variant
        has a word (``Reasoner.word``: literal rules, no soft force) count only through
        the or of their variants' words, so one combination stands for each value that or
        takes (eight cycle guards, each denying the last tool or not: two sets where
        ``variants`` gives 256). Where one of those combinations lets a yielding
        requirement give way (``Reasoner.yields``), whose records a clash holds decides,
        and every set of ``variants`` is given instead. The components of ``apart``
        (indices) keep every variant: each of their values is given with every value of
        the others' or (a requirement's liveness, ``explicit.live_here``). Deterministic."""
        opaque = self._opaque
        if not opaque or all(len(self.components[i].variants[state[i]]) == 1 for i in opaque):
            yield next(self.variants(state))[0]
            return
        menus: list[tuple[Variant, ...]] = [
            self.components[i].variants[v] for i, v in enumerate(state)
        ]
        # The components whose variants have words: one variant each per value of the or.
        alike: dict[int, tuple[int, ...]] = {0: ()}
        keyed: list[int] = []
        for i in opaque:
            words = self._words(i, state[i]) if len(menus[i]) > 1 and i not in apart else None
            if words is None:
                continue
            keyed.append(i)
            grown: dict[int, tuple[int, ...]] = {}
            for word, picks in alike.items():
                for k, w in enumerate(words):
                    grown.setdefault(word | w, (*picks, k))
            alike = grown
        found: list[tuple[Emitted, ...]] = []
        for picks in alike.values():
            chosen = list(menus)
            for i, k in zip(keyed, picks, strict=True):
                chosen[i] = (menus[i][k],)
            for combination in product(*chosen):
                records = tuple(chain.from_iterable([v.records for v in combination]))
                if keyed and self.reasoner.yields(records):
                    for every, _ in self.variants(state):
                        yield every
                    return
                found.append(records)
        yield from found

    def _words(self, i: int, view: int) -> tuple[int, ...] | None:
        """Per variant of component ``i`` at ``view``, its records' word (``Reasoner.word``),
        or None where one has none. Memoised."""
        key = (i, view)
        if key not in self._worded:
            words: list[int] = []
            for variant in self.components[i].variants[view]:
                word = self.reasoner.word(variant.records)
                if word is None:
                    self._worded[key] = None
                    return None
                words.append(word)
            self._worded[key] = tuple(words)
        return self._worded[key]

    def views(self, state: State) -> dict[str, Hashable]:
        """Per requirement name, its monitor's view at ``state`` (for messages and tests); a
        requirement tabulated as factors gives the tuple of its factors' views."""
        parts: dict[str, list[Hashable]] = {}
        for c, v in zip(self.components, state, strict=True):
            parts.setdefault(c.requirement.name, []).append(c.views[v])
        return {
            name: views[0] if len(views) == 1 else tuple(views) for name, views in parts.items()
        }


class Checked(Protocol):
    """What findings read of a system (``System``, or ``ConcreteSystem`` for bounded search)."""

    reasoner: Reasoner
    tools: tuple[str, ...]
    requirements: tuple[Requirement, ...]

    @property
    def components(self) -> Sequence[Component]: ...

    def subsystem(self, keep: Sequence[str]) -> Any: ...


def _monitor(requirement: Requirement) -> Monitor | None:
    """The monitor the checker trusts for ``requirement`` (``Requirement.checked_monitor``)."""
    try:
        return requirement.checked_monitor()
    except PolicyError:
        return None


def _unmonitored(requirements: Sequence[Requirement], name: str) -> str:
    found = next(r for r in requirements if r.name == name)
    try:
        own = found.monitor()
    except PolicyError:
        own = None
    if own is not None:  # it has one, but its class's `run` is not the one it describes
        return (
            f"requirement `{name}` ({type(found).__name__}) overrides `run`, so the monitor"
            " it inherits does not describe it"
        )
    return f"requirement `{name}` has no monitor"


def _skips(
    monitors: Sequence[tuple[Requirement, Monitor]], tools: Sequence[str]
) -> list[Skip | None]:
    """Per monitor, how to tabulate it band by band (``check/skipping.py``), or None: its
    counter's bands (with those of every counter of the same calls, which must skip alike)
    are all narrower than ``SKIP_FROM``, or another counter counts some of its calls but
    not the same ones (their counts drift apart: count by count)."""
    callable_tools = [t for t in tools if t != FINAL_ANSWER]
    found = [skip_of(m, m.tools()) for _, m in monitors]
    events = [None if s is None else s.events(callable_tools) for s in found]
    out: list[Skip | None] = list(found)
    for i, skip in enumerate(found):
        mine = events[i]
        if skip is None or mine is None:
            continue
        group = [j for j, theirs in enumerate(events) if theirs is not None and theirs & mine]
        if any(events[j] != mine for j in group):
            out[i] = None
            continue
        shared = [skip]
        for j in group:
            other = found[j]
            assert other is not None
            skip = skip.sharing(other.counter.bounds)
            shared.append(other.sharing(skip.bounds))
        # The counters of the same calls skip alike, or none of them does.
        wide = max(s.sharing(skip.bounds).widest() for s in shared) >= skipping.SKIP_FROM
        out[i] = skip if wide else None
    return out


def _factors_of(monitor: Monitor) -> Sequence[Monitor]:
    """The monitors to tabulate for ``monitor``: its factors, or itself."""
    factors = monitor.factors()
    return [monitor] if not factors else list(factors)


def _monitor_of(requirement: Requirement) -> Monitor:
    monitor = _monitor(requirement)
    # INVARIANT: System.__init__ refused requirements without a monitor.
    assert monitor is not None
    return monitor


def _give_way_together(yielding: Sequence[Component]) -> bool:
    """Whether yielding components always give way together, so that a step's pass is
    that of every requirement where it is consistent, else that of the others (as with
    one): they keep alike views under alike moves (from the same start), and at each view
    each emits either nothing or one set of literals common to all, forcing nothing (cycle
    guards: the last tool called, denied where the guard's check says it cycles). Then a
    clash of the others with any of them is a clash with each, every core the runtime
    finds holds one of them until none is left, and the steps between are never seen."""
    first = yielding[0]
    for comp in yielding[1:]:
        if comp.views != first.views or comp.classes.keys() != first.classes.keys():
            return False
        for tool in first.classes:
            for status in STATUSES:
                for view in range(len(first.views)):
                    if comp.move(view, tool, status) != first.move(view, tool, status):
                        return False
    for view in range(len(first.views)):
        common: frozenset[Literal] | None = None
        for comp in yielding:
            for variant in comp.variants[view]:
                said: set[Literal] = set()
                for e in variant.records:
                    low = lower(e.item)
                    literals = literals_of(low.restrict)
                    if literals is None or low.hard_force or low.soft_force:
                        return False
                    said.update(literals)
                if not said:
                    continue
                if common is None:
                    common = frozenset(said)
                elif said != common:
                    return False
    return True


def symbolic_problem(system: System) -> str | None:
    """Why the symbolic engine cannot check ``system`` (None: it can). Here, not in the
    engine's module, so that choosing an engine imports no BDD package."""
    if system.skips:
        return "it has counters tabulated band by band, which only the explicit engine weighs"
    yielding = [c for c in system.components if c.requirement.yielding]
    if len(yielding) > 1 and not _give_way_together(yielding):
        return (
            "it models several yielding requirements only where they give way together "
            "(alike views and moves, the same rules where they act, as cycle guards)"
        )
    if system.mode == "priority" and yielding:
        if len({c.requirement.priority for c in yielding}) > 1:
            return "in priority mode, it models yielding requirements at one priority only"
        for comp in yielding:
            for variants in comp.variants:
                for variant in variants:
                    if any(lower(e.item).hard_force is not None for e in variant.records):
                        return (
                            f"in priority mode, yielding requirement `{comp.requirement.name}` "
                            "hard-forces a tool, which only the explicit engine weighs"
                        )
    for comp in system.components:
        for variants in comp.variants:
            for variant in variants:
                for e in variant.records:
                    if type(e.item) is ArgCheck:
                        return (
                            f"requirement `{comp.requirement.name}` puts conditions on a "
                            "call's arguments, which only the explicit engine decides"
                        )
                    lowered = lower(e.item)
                    if lowered.hard_force is None and literals_of(lowered.restrict) is None:
                        return (
                            f"requirement `{comp.requirement.name}` emits the formula "
                            f"`{e.item!r}`, which is not a conjunction of literals"
                        )
    return None
