"""Monitors: a requirement's finite abstraction of the history it reads.

A monitor is a small deterministic automaton over steps. Its *views* are hashable values
(tuples of small ints, tool names and booleans). ``initial()`` is the view of an empty run,
``advance(view, tool, status)`` the view after one more step, and ``emit(view, checks)`` the
rules of the next step, a function of the view and of the values of the requirement's opaque
custom checks alone. Views saturate (counts stop at the largest threshold that matters, step
numbers after the last step that is looked at), so every monitor has finitely many views and
the static checker can explore the product of all monitors for histories of any length.

A requirement with a monitor computes its rules at run time through the same ``emit``, from
``view_of(state)``. ``view_of`` replays the state's steps through ``advance`` unless a monitor
overrides it with a faster reading (the built-ins read the state's shared summary); tests
check, for every built-in, that the two agree on random traces (the *replay law*), so the
runtime and the checker cannot disagree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ruleengine.rules import Item
    from ruleengine.state import RunState, Status

__all__ = ["Counter", "Monitor", "replay"]


class Monitor(ABC):
    """The finite abstraction of the history one requirement reads."""

    checks: int = 0
    """How many opaque boolean custom checks ``emit`` takes (both values are possible)."""

    @abstractmethod
    def initial(self) -> Hashable:
        """The view of a run with no steps."""

    @abstractmethod
    def advance(self, view: Hashable, tool: str, status: Status) -> Hashable:
        """The view after one more step calling ``tool`` that ended with ``status``."""

    @abstractmethod
    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Item]:
        """The rules and constraints for the next step, from the view alone."""

    def view_of(self, state: RunState) -> Hashable:
        """The view after ``state``'s steps: by default ``advance`` replayed over them.

        Overrides must give the same view as the replay (the replay law), only faster.
        """
        return replay(self, ((s.tool, s.status) for s in state.steps))

    def tools(self) -> frozenset[str] | None:
        """The tools whose calls act on the view each in its own way, or ``None`` for all.

        Calls of every tool *not* listed must act alike: the same view after any of them with
        the same status (they may still change it, e.g. reset a "last tool" or count a step).
        The static checker relies on this to explore one representative of the others;
        ``None`` (the default) makes it explore every tool.
        """
        return None

    def check_keys(self) -> tuple[Hashable, ...]:
        """What each opaque check computes, one key per check: two checks (of any monitors)
        with equal keys give the same value on every history.

        ``diff`` pairs checks with equal keys when it compares two policies: a custom check
        both policies share is one unknown, not two. The default gives each check a key of
        its own (equal to no other monitor's).
        """
        return tuple((self, i) for i in range(self.checks))

    def counter(self) -> Counter | None:
        """The count of one tool's calls this monitor's view keeps, or ``None`` (the default).

        A monitor that declares one promises, for every view ``v`` and count ``c`` the view
        can hold:

        1. a call of ``Counter.tool`` ending with one of ``Counter.statuses`` adds one to the
           count (it stays at ``Counter.bounds[-1]``, the largest); any other step leaves it;
        2. the rest of the view moves as if the count were not there:
           ``advance(write(v, c), t, s)`` is ``write(advance(v, t, s), c')`` with ``c'`` the
           count rule 1 gives;
        3. ``emit`` reads the count only through its *band*: two counts between the same two
           consecutive ``bounds`` (the last one alone) give the same rules.

        The static checker then skips through a band (``check/pumping.py``) instead of
        visiting every count in it: ``max_invocations = 100000`` costs what ``10`` does.
        Tests check the promise for every built-in (the counter law).
        """
        return None

    def factors(self) -> Sequence[Monitor] | None:
        """Independent monitors whose product is this one, or ``None`` (the default).

        A monitor may split when its view is a tuple of parts that never read each other:
        each factor advances on its own, and the rules this monitor emits at a view are the
        factors' rules at their parts, together (in any order: a step is decided by the set
        of records). The static checker then tabulates each factor alone, so a requirement
        that remembers 16 independent answers costs 16 × 3 views, not 3¹⁶. Factors take no
        opaque checks.
        """
        return None


@dataclass(frozen=True, slots=True)
class Counter:
    """A count a monitor's view keeps (see ``Monitor.counter``)."""

    tool: str
    statuses: frozenset[str]
    """The statuses of the calls it counts."""
    bounds: tuple[int, ...]
    """Where its bands start, increasing from 0; the last is the count it stays at."""
    read: Callable[[Hashable], int]
    """The count a view holds."""
    write: Callable[[Hashable, int], Hashable]
    """The view with another count (a count in ``0..bounds[-1]``)."""

    def band(self, count: int) -> int:
        """The index of the band ``count`` is in."""
        return bisect_right(self.bounds, count) - 1

    def size(self, count: int) -> int:
        """How many counts ``count``'s band holds (the last band holds one)."""
        i = self.band(count)
        return 1 if i + 1 == len(self.bounds) else self.bounds[i + 1] - self.bounds[i]


def replay(monitor: Monitor, trace: Iterable[tuple[str, Status]]) -> Hashable:
    """The view after ``trace``, a sequence of ``(tool, status)`` steps."""
    view = monitor.initial()
    for tool, status in trace:
        view = monitor.advance(view, tool, status)
    return view
