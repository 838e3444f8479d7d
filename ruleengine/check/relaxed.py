"""Which tools a run may ever call, by the *relaxed product*; and the fewest components
that keep a tool closed there.

The relaxed product forgets that the components move together: a tool counts as callable
once every component, each on its own, reaches a view that leaves it open, where a
component moves only by calls of tools already counted callable and open at its view (any
status). In strict mode this over-approximates the real runs (``bounds`` explains why a
component on its own is more permissive: a denial always holds, a hard force leaves only its
tool): the first call of any tool in a real run finds every tool called before it counted
callable (induction on the run), every component at a view so reached, and the tool open at
each. So a tool the relaxed product never counts callable is allowed in no reachable state.

A layered version follows the components' views step by step (the views each may be at
after exactly ``d`` steps, and the tools open in all of them at step ``d``) until a step where
every run is stuck (two hard forces at the same step) or the layers repeat. It is tighter
where it ends, but components that move on different events at the same step (a counter
of successful calls stays put on a failed one) are not tied together there either.

The checker uses this only for guesses: the fewest components under which a tool stays
closed in the relaxed product (``closing``) are, on the policies that have them, the
requirement-level core of that dead tool, found without analysing a single subsystem
(a chain of "only after"s around a cycle, a prerequisite capped at zero calls); the fewest
under which it stays closed while another tool is never called (``closed_until``) say why a
requirement that waits for that tool is dead. The core search still asks the engines
whether a guess holds and whether each member is needed, so a guess only saves questions,
never changes an answer; yielding requirements give way when they clash, so they close
nothing (they are left out).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from ruleengine._search import quickxplain
from ruleengine.check.system import Component
from ruleengine.ir import FINAL_ANSWER
from ruleengine.state import STATUSES

__all__ = ["Relaxed"]

_K = TypeVar("_K")
_V = TypeVar("_V")


_OK = STATUSES.index("ok")
"""The move table of a successful call, among a class's three (``Component.moves``)."""

OPENED_MEMO = 4096
"""Masks whose open tools one component remembers, and steps of the layered relaxation
(then it starts again)."""

LAYERS = 64
"""Steps the layered relaxation follows before it gives up looking for a step where every
run is stuck, or for its layers to repeat."""


class _Memo(dict[_K, _V]):
    """Answers remembered up to ``OPENED_MEMO`` of them (then it starts again)."""

    def keep(self, key: _K, value: _V) -> _V:
        """Remember ``value`` for ``key``, and return it."""
        if len(self) >= OPENED_MEMO:
            self.clear()
        self[key] = value
        return value


class _Table:
    """One component's views with, per view, the tools it leaves open (a bit mask) and its
    moves per class of tools (the tools of each class as a bit mask)."""

    __slots__ = (
        "_open_in",
        "_opened",
        "_relevant",
        "_steps",
        "_stops_with",
        "moves",
        "open_at",
        "stops",
    )

    def __init__(self, comp: Component, bit: dict[str, int]) -> None:
        everything = sum(bit.values())
        self.stops = [FINAL_ANSWER not in comp.denied(v) for v in range(len(comp.views))]
        """Per view, whether it lets the run stop (``final_answer`` not denied)."""
        self.open_at: list[int] = []
        for view in range(len(comp.views)):
            denied = sum(bit[t] for t in comp.denied(view) if t in bit)
            forced = sum(bit[t] for t in comp.hard_forced(view) if t in bit)
            self.open_at.append(everything & ~denied & (forced if forced else everything))
        members: dict[int, int] = {}
        for tool, klass in comp.classes.items():
            if tool in bit:
                members[klass] = members.get(klass, 0) | bit[tool]
        self._opened: _Memo[tuple[int, int], int] = _Memo()
        self._open_in: _Memo[frozenset[int], int] = _Memo()
        self._steps: _Memo[tuple[frozenset[int], int], frozenset[int]] = _Memo()
        # Per class: its tools, and the views after a step of it with each status.
        self.moves = [
            (mask, [comp.moves[klass * 3 + s] for s in range(3)])
            for klass, mask in sorted(members.items())
        ]
        self._relevant = 0
        """The tools whose calls change some view: the others leave every view as it is, so
        what this component reaches depends on the open tools among these alone (the
        memos' keys are masked with it: on a wide policy most components are moved by a
        few tools, and the questions that differ in the others are one)."""
        for mask, tables in self.moves:
            if any(after != view for table in tables for view, after in enumerate(table)):
                self._relevant |= mask
        self._stops_with: _Memo[tuple[int, int], bool] = _Memo()

    def may_stop(self, callable_tools: int, failing_only: int = 0) -> bool:
        """Whether calls of ``callable_tools`` only (open where called, any status; those
        of ``failing_only`` with status ``error`` or ``denied`` only) reach a view where
        this component lets the run stop (memoised)."""
        key = (callable_tools & self._relevant, failing_only & self._relevant)
        found = self._stops_with.get(key)
        if found is None:
            found = self._stops_with.keep(key, self._may_stop(*key))
        return found

    def _may_stop(self, callable_tools: int, failing_only: int) -> bool:
        seen = {0}
        stack = [0]
        while stack:
            view = stack.pop()
            if self.stops[view]:
                return True
            for after in self._after(view, callable_tools, failing_only):
                if after not in seen:
                    seen.add(after)
                    stack.append(after)
        return False

    def _after(self, view: int, callable_tools: int, failing_only: int = 0) -> Iterator[int]:
        """The views one call of one of ``callable_tools`` open at ``view`` leads to (each
        status, but not ``ok`` for a class of ``failing_only`` tools only; repeats
        possible)."""
        steps = self.open_at[view] & callable_tools
        if steps:
            for mask, tables in self.moves:
                if mask & steps:
                    succeeding = bool(mask & steps & ~failing_only)
                    for status, table in enumerate(tables):
                        if status != _OK or succeeding:
                            yield table[view]

    def open_in(self, views: frozenset[int]) -> int:
        """The tools open at some of ``views`` (memoised, as ``step``)."""
        found = self._open_in.get(views)
        if found is None:
            opened = 0
            for view in views:
                opened |= self.open_at[view]
            found = self._open_in.keep(views, opened)
        return found

    def step(self, views: frozenset[int], callable_tools: int) -> frozenset[int]:
        """The views one call of one of ``callable_tools`` (open there) after ``views``
        (memoised: the layers of a closing set's search follow the same views under the
        same open tools for most of the subsets it tries; 89 % of the steps on
        `mixed-20-40-4`)."""
        key = (views, callable_tools)
        found = self._steps.get(key)
        if found is None:
            found = self._steps.keep(key, self._step(views, callable_tools))
        return found

    def _step(self, views: frozenset[int], callable_tools: int) -> frozenset[int]:
        return frozenset(after for view in views for after in self._after(view, callable_tools))

    def opened(self, callable_tools: int, failing_only: int = 0) -> int:
        """The tools open at some view reached by calls of ``callable_tools`` only, those of
        ``failing_only`` with status ``error`` or ``denied`` only (memoised: the fixpoints of
        a core search ask the same few masks again and again)."""
        relevant = self._relevant
        key = (callable_tools & relevant, failing_only & relevant)
        found = self._opened.get(key)
        if found is None:
            found = self._opened.keep(key, self._search(*key))
        return found

    def _search(self, callable_tools: int, failing_only: int) -> int:
        seen = {0}
        stack = [0]
        opened = 0
        while stack:
            view = stack.pop()
            opened |= self.open_at[view]
            for after in self._after(view, callable_tools, failing_only):
                if after not in seen:
                    seen.add(after)
                    stack.append(after)
        return opened


class Relaxed:
    """The relaxed product of ``components`` over ``tools`` (the declared tools with
    ``final_answer``). Built once per system; every question is a fixpoint over tabulated
    views (no decisions, no BDDs): linear in the components' views × classes per round, at
    most one round per tool."""

    def __init__(self, components: Sequence[Component], tools: Sequence[str]) -> None:
        callable_tools = [t for t in tools if t != FINAL_ANSWER]
        self._bit = {t: 1 << i for i, t in enumerate(callable_tools)}
        self._kept = [i for i, c in enumerate(components) if not c.requirement.yielding]
        self._tables = {i: _Table(components[i], self._bit) for i in self._kept}

    def callable(
        self, members: Sequence[int] | None = None, *, never: Iterable[str] = ()
    ) -> frozenset[str]:
        """The tools the relaxed product of the components at indices ``members`` (None:
        all of them; yielding ones are always left out) counts callable: a superset of the
        tools the real system allows in some reachable state, in strict mode. ``never``:
        tools shown never allowed in any reachable state (no history calls them), left out
        from the start, and with them what only they would open."""
        closed = sum(self._bit.get(t, 0) for t in set(never))
        mask = self._callable(self._kept if members is None else members, closed)
        return frozenset(t for t, b in self._bit.items() if mask & b)

    def closing(
        self,
        tool: str,
        earlier: list[list[int]] | None = None,
        *,
        deadline: float | None = None,
    ) -> list[int] | None:
        """A minimal set of component indices under whose relaxed product ``tool`` is
        never callable, or None when it is callable under all of them. QuickXplain in
        index order, inside the first of ``earlier`` (sets found for earlier tools, to which
        the set found is added) that closes this one too: deterministic for given
        arguments. A set that closes it without the layers (a cycle of "only after"s, a cap
        at zero) is preferred: such sets are small, while the layers tend to gather every
        force that ends the runs early. None as well once ``deadline`` (a
        ``time.monotonic()`` value) has passed: the set is a guess, and the search stops."""
        try:
            return self._closing(tool, earlier, deadline)
        except _Late:
            return None

    def _closing(
        self, tool: str, earlier: list[list[int]] | None, deadline: float | None
    ) -> list[int] | None:
        b = self._bit.get(tool)
        if b is None:
            return None
        everything = sum(self._bit.values())
        index_bit = {i: 1 << n for n, i in enumerate(self._kept)}

        def tables(mask: int) -> list[_Table]:
            return [self._tables[i] for i in self._kept if index_bit[i] & mask]

        def open_unlayered(mask: int) -> bool:
            _on_time(deadline)
            return bool(self._unlayered(tables(mask), everything) & b)

        def open_layered(mask: int) -> bool:
            _on_time(deadline)
            return bool(self._callable([i for i in self._kept if index_bit[i] & mask]) & b)

        full = (1 << len(self._kept)) - 1
        for opens in (open_unlayered, open_layered):
            if not opens(full):
                # A set that closed another tool often closes this one too (a conflict that
                # ends every run early closes them all): the search then stays inside it.
                pool = next(
                    (
                        found
                        for found in earlier or ()
                        if not opens(sum(index_bit[i] for i in found))
                    ),
                    self._kept,
                )
                found = quickxplain(pool, index_bit, opens)
                if earlier is not None and found not in earlier:
                    earlier.append(found)
                return found
        return None

    def closed_until(
        self,
        tool: str,
        first: str,
        leaving: Sequence[int],
        *,
        succeeded: bool,
        deadline: float | None = None,
    ) -> list[int] | None:
        """A minimal set of component indices, none of ``leaving``, under whose relaxed
        product ``tool`` is never callable while ``first`` is never called (``succeeded``:
        never called with status ``ok``), without the layers; so every run calls ``first``
        (successfully) before ``tool``. None when no such set exists or the tools are one.
        QuickXplain in index order: deterministic.

        The guess for a requirement that keeps ``tool`` closed until ``first`` runs and is
        dead because others already do ("`d` only after `a`" beside "`d` only after `c`",
        "`c` only after `b`", "`b` only after `a`"). None as well once ``deadline`` (a
        ``time.monotonic()`` value) has passed: the set is a guess, and the search stops."""
        try:
            return self._closed_until(tool, first, leaving, succeeded, deadline)
        except _Late:
            return None

    def _closed_until(
        self,
        tool: str,
        first: str,
        leaving: Sequence[int],
        succeeded: bool,
        deadline: float | None,
    ) -> list[int] | None:
        b, banned = self._bit.get(tool), self._bit.get(first)
        if b is None or banned is None or b == banned:
            return None
        everything = sum(self._bit.values())
        if succeeded:
            failing_only = banned
        else:
            everything &= ~banned
            failing_only = 0
        kept = [i for i in self._kept if i not in set(leaving)]
        index_bit = {i: 1 << n for n, i in enumerate(kept)}

        def opens(mask: int) -> bool:
            _on_time(deadline)
            tables = [self._tables[i] for i in kept if index_bit[i] & mask]
            return bool(self._unlayered(tables, everything, failing_only) & b)

        if opens((1 << len(kept)) - 1):
            return None
        return quickxplain(kept, index_bit, opens)

    def needed(
        self, members: Sequence[int] | None = None, tools: Iterable[str] | None = None
    ) -> frozenset[str]:
        """The tools every history that ends where the run may stop calls at least once:
        ``x`` is one when, in the relaxed product without ``x``, some component reaches no
        view that lets the run stop (``final_answer`` among its denials everywhere it
        gets). A real history without ``x`` is a run of that relaxed product (the
        induction of the module's docstring, with ``x`` never callable), and where the run
        may stop no component denies ``final_answer``. So each one costs a step of its own:
        their number is a lower bound on the steps before ``final_answer``. (Where no
        history stops at all, every tool is one: the bound is then vacuous, and
        ``final_answer`` never allowed is shown elsewhere.) Of the components at indices
        ``members`` (None: all), among ``tools`` (None: all). Linear in the views and
        classes per tool and round; no decisions."""
        tables = self._tables_of(members)
        everything = sum(self._bit.values())
        out = []
        for tool, bit in self._asked(tools):
            without = self._unlayered(tables, everything & ~bit)
            if not all(table.may_stop(without) for table in tables):
                out.append(tool)
        return frozenset(out)

    def needed_ok(
        self, members: Sequence[int] | None = None, tools: Iterable[str] | None = None
    ) -> frozenset[str]:
        """The tools every history that ends where the run may stop calls successfully at
        least once: as ``needed``, with the tool's calls kept but only those that fail or
        are denied (a subset of ``needed``: a history without the tool has none that
        succeed). Same arguments and cost as ``needed``."""
        tables = self._tables_of(members)
        everything = sum(self._bit.values())
        out = []
        for tool, bit in self._asked(tools):
            reached = self._unlayered(tables, everything, bit)
            if not all(table.may_stop(reached, bit) for table in tables):
                out.append(tool)
        return frozenset(out)

    def _tables_of(self, members: Sequence[int] | None) -> list[_Table]:
        if members is None:
            return [self._tables[i] for i in self._kept]
        return [self._tables[i] for i in members if i in self._tables]

    def _asked(self, tools: Iterable[str] | None) -> list[tuple[str, int]]:
        if tools is None:
            return list(self._bit.items())
        wanted = set(tools)
        return [(t, b) for t, b in self._bit.items() if t in wanted]

    def _callable(self, members: Sequence[int], closed: int = 0) -> int:
        tables = [self._tables[i] for i in members if i in self._tables]
        everything = sum(self._bit.values()) & ~closed
        found = self._unlayered(tables, everything)
        layered = self._layered(tables, everything)
        return found if layered is None else found & layered

    @staticmethod
    def _unlayered(tables: Sequence[_Table], everything: int, failing_only: int = 0) -> int:
        found = -1
        now = 0
        while found != now:
            found = now
            now = everything
            for table in tables:
                now &= table.opened(found, failing_only)
                if not now:
                    break
        return found

    @staticmethod
    def _layered(tables: Sequence[_Table], everything: int) -> int | None:
        views: tuple[frozenset[int], ...] = tuple(frozenset((0,)) for _ in tables)
        seen: set[tuple[frozenset[int], ...]] = set()
        found = 0
        for _ in range(LAYERS):
            if views in seen:
                return found
            seen.add(views)
            now = everything
            for table, at in zip(tables, views, strict=True):
                now &= table.open_in(at)
                if not now:
                    return found  # every run is stuck by this step
            found |= now
            views = tuple(table.step(at, now) for table, at in zip(tables, views, strict=True))
        return None


class _Late(Exception):
    """The deadline passed during a search for a guess (raised out of QuickXplain's
    predicate, caught where the guess is asked for)."""


def _on_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _Late
