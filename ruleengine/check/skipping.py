"""Skipping through counts: a component whose monitor keeps a large count is tabulated with
one view per band of the count, not one per count.

A monitor may declare a ``Counter`` (``Monitor.counter``): a count of one tool's calls that
its rules read only through bands (``max_invocations = 100000``: below the cap, or at it).
Its component is then tabulated with two views per band: the band's first count (its
*start*) and the count after it, standing for the rest of the band (its *inside*). The
first call into a band is a step like any other (it may change other views: the first call
of a tool that another requirement waits for); a call from an inside must change nothing
but the count, and then the band's remaining calls can be taken at once, a step to the next
band's start that weighs that many calls. This is exact:

- every count of a band gives the same rules, and calls from an inside change no other
  view (checked at the monitor's views when it is tabulated, and at each state of the
  system by the explicit engine, which raises ``Impure`` where one does: the check then
  runs again without skipping), so a state at any count of an inside decides as the state
  the inside stands for, and the states reachable from them differ only in that count;
- the shortest history to a state takes an inside's calls where the tool is allowed, all at
  once: it is a weighted shortest path (``explicit.analyse`` searches by weighted depth);
- an inside stands for its first count alone, or for all of its counts when some state of
  it where the tool is allowed leads there (``explicit`` counts them, so a report says how
  many states there are, as without skipping).

Traces are kept with one counting call per inside crossed (every internal replay uses the
skipping system); ``expand`` writes each such call out as the calls it weighs, before a
report leaves ``check``.

Where a call from an inside changes anything else (a step counter, the last tool called),
the component is tabulated count by count, or the check runs again without skipping.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Mapping, Sequence
from itertools import pairwise
from typing import Protocol

from ruleengine.check.report import Finding, TraceStep
from ruleengine.errors import PolicyError
from ruleengine.requirements.monitor import Counter, Monitor
from ruleengine.state import STATUSES, Status

__all__ = [
    "SKIP_FROM",
    "Impure",
    "NotPure",
    "Skip",
    "Weighted",
    "exact_skip",
    "expand",
    "skip_of",
    "stood_for",
]

SKIP_FROM = 64
"""The smallest band a counter must have for its component to be tabulated band by band
(smaller counts cost less to visit than to reason about)."""


Event = tuple[str, Status]


State = tuple[int, ...]


class Weighted(Protocol):
    """What this module reads of a system (``System``): its steps, their weights, and the
    components counting each step (with the counts each view stands for)."""

    @property
    def initial(self) -> State: ...

    @property
    def skips(self) -> Mapping[Event, tuple[int, ...]]: ...

    def weight(self, state: State, event: Event) -> int: ...

    def successor(self, state: State, event: Event) -> State: ...

    def spans(self, component: int) -> Sequence[int] | None: ...


class NotPure(Exception):
    """A counting call changes more than the count, or another step changes the count: the
    monitor is tabulated view by view."""


class Impure(Exception):
    """A counting call inside a band moves another component: the system is checked again
    without skipping (raised by the explicit engine where it meets one)."""


class Skip:
    """How a component with a counter steps band by band (see the module's docstring).

    Its views hold a band's first count (the band's *start*) or the one after it (its
    *inside*, standing for every count after the start to the band's end). A counting call
    from a start is a step like any other (to the inside, or to the next start when the
    band holds one count); one from an inside, which must change nothing but the count,
    leads to the next band's start and weighs the calls it stands for (``span``)."""

    def __init__(
        self, monitor: Monitor, counter: Counter, bounds: tuple[int, ...] | None = None
    ) -> None:
        self.monitor = monitor
        self.counter = (
            counter if isinstance(counter, _Checked) else _Checked(counter, type(monitor).__name__)
        )
        self.bounds = counter.bounds if bounds is None else bounds
        """Where bands start: the counter's own bounds, and those of the other counters of
        the same calls (so that counters of the same calls skip alike)."""

    def events(self, tools: Sequence[str]) -> frozenset[tuple[str, Status]]:
        """The steps that count, among calls of ``tools``."""
        return frozenset((t, s) for t in tools for s in STATUSES if self.counts(t, s))

    def sharing(self, bounds: Sequence[int]) -> Skip:
        """This skip with the bands of other counters of the same calls as well."""
        return Skip(self.monitor, self.counter, tuple(sorted({*self.bounds, *bounds})))

    def counts(self, tool: str, status: Status) -> bool:
        return tool == self.counter.tool and status in self.counter.statuses

    def advance(self, view: Hashable, tool: str, status: Status) -> Hashable:
        """The view after a step. Raises ``NotPure`` where the monitor breaks its promise,
        or a counting call from an inside changes more than the count."""
        c = self.counter
        after = self.monitor.advance(view, tool, status)
        count = c.read(view)
        if not self.counts(tool, status):
            if c.read(after) != count:
                raise NotPure
            return after
        if self.span(view) == 1:
            return after
        if after != c.write(view, count + 1):
            raise NotPure
        return c.write(view, self.bounds[bisect_right(self.bounds, count)])

    def span(self, view: Hashable) -> int:
        """How many counts ``view`` stands for, and how many calls a counting step from it
        weighs: a band's inside from its count to the band's end (below the counter's own
        largest count, where it stays), else one."""
        count = self.counter.read(view)
        following = bisect_right(self.bounds, count)
        if following == len(self.bounds) or count >= self.counter.bounds[-1]:
            return 1
        if count == self.bounds[following - 1]:
            return 1  # a band's start
        return self.bounds[following] - count

    def widest(self) -> int:
        """The most counts one band holds (below the counter's largest count)."""
        top = self.counter.bounds[-1]
        return max((b - a for a, b in pairwise(self.bounds) if b <= top), default=0)


class _Checked(Counter):
    """A monitor's ``Counter`` whose ``read`` and ``write`` fail with a ``PolicyError``
    naming the monitor (a wrong count is a broken promise, not a verdict)."""

    def __init__(self, counter: Counter, owner: str) -> None:
        def read(view: Hashable) -> int:
            try:
                count = counter.read(view)
            except Exception as exc:
                raise _broken(owner, "read", exc) from exc
            if type(count) is not int:
                raise PolicyError(
                    f"{owner}.counter().read gave `{count!r:.40}` for view `{view!r:.40}`: "
                    "it must be an int"
                )
            return count

        def write(view: Hashable, count: int) -> Hashable:
            try:
                return counter.write(view, count)
            except Exception as exc:
                raise _broken(owner, "write", exc) from exc

        super().__init__(counter.tool, counter.statuses, counter.bounds, read, write)


def _broken(owner: str, what: str, exc: Exception) -> PolicyError:
    return PolicyError(
        f"{owner}.counter().{what} raised {type(exc).__name__}: {exc}",
        hint="a monitor's counter must read and write every view its monitor gives",
    )


def skip_of(monitor: Monitor, named: frozenset[str] | None) -> Skip | None:
    """How to tabulate ``monitor`` band by band, or None: it keeps no counter, or its
    counted tool shares a class with others (``named``: ``Monitor.tools()``). Whether its
    bands are wide enough (``SKIP_FROM``) is for the system to say, with the other counters
    of the same calls (``Skip.sharing``)."""
    counter = monitor.counter()
    if counter is None:
        return None
    if not isinstance(counter, Counter):
        raise PolicyError(
            f"{type(monitor).__name__}.counter() gave `{counter!r:.60}`: it must be a `Counter`"
            " or None"
        )
    owner = type(monitor).__name__
    bounds = counter.bounds
    if not isinstance(bounds, tuple) or not all(type(b) is int for b in bounds):
        raise PolicyError(f"{owner}.counter().bounds=`{bounds!r:.60}` is not a tuple of ints")
    if not isinstance(counter.tool, str) or not isinstance(counter.statuses, frozenset):
        raise PolicyError(
            f"{owner}.counter(): `tool` must be a tool name and `statuses` a frozenset of"
            f" statuses (got `{counter.tool!r:.40}`, `{counter.statuses!r:.40}`)"
        )
    if not bounds or bounds[0] != 0 or any(b <= a for a, b in pairwise(bounds)):
        return None  # not a promise the checker can use: count by count
    if named is not None and counter.tool not in named:
        return None
    return Skip(monitor, counter)


def exact_skip(
    system: Weighted, state: State, after: State, counting: tuple[int, ...], weight: int
) -> None:
    """Raise ``Impure`` unless a counting step from ``state`` to ``after`` that weighs
    ``weight`` calls moves only ``counting``'s components, each from an inside standing for
    exactly that many counts (one at a band's start would take its next call as a step of
    its own)."""
    for n, (a, b) in enumerate(zip(after, state, strict=True)):
        if a == b:
            continue
        spans = system.spans(n)
        if n not in counting or spans is None or spans[b] != weight:
            raise Impure


def stood_for(
    system: Weighted,
    states: Sequence[State],
    edges: Mapping[int, Sequence[int]],
    skipping: Mapping[int, set[tuple[int, ...]]],
    crossing: Mapping[int, set[tuple[int, tuple[int, ...]]]],
) -> int:
    """How many states the ``states`` a search found stand for: each one, times, for each
    group of components counting the same calls, the counts its inside stands for where the
    inside is *full*: reached along steps that do not count from a node whose counting step
    skips through it (``skipping``: per node, the groups whose inside its counting step
    skips; ``crossing``: per node, each node a counting step leads to, with its group).
    Cost: one walk of ``edges`` per group."""
    factor = [1] * len(states)
    for group in sorted(set(system.skips.values())):
        todo = [i for i, groups in skipping.items() if group in groups]
        full = set(todo)
        while todo:
            i = todo.pop()
            crossed = crossing.get(i, set())
            for j in edges.get(i, ()):
                if j not in full and (j, group) not in crossed:
                    full.add(j)
                    todo.append(j)
        spans = [system.spans(k) for k in group]
        for i in full:
            factor[i] *= max(s[states[i][k]] for k, s in zip(group, spans, strict=True) if s)
    return sum(factor)


def expand(system: Weighted, findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` with each counting call that crosses a band written out as the band's
    size of calls (the histories the runtime replays)."""
    return [_expanded(system, f) for f in findings]


def _expanded(system: Weighted, finding: Finding) -> Finding:
    if not finding.trace:
        return finding
    state = system.initial
    steps: list[TraceStep] = []
    for step in finding.trace:
        event: Event = (step.tool, step.status)
        steps.extend([step] * system.weight(state, event))
        state = system.successor(state, event)
    if len(steps) == len(finding.trace):
        return finding
    return finding.model_copy(update={"trace": tuple(steps)})
