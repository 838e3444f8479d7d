"""Where a running check is: its phase and counters, for a progress line or a supervisor.

The engines call ``note`` at the natural points of their loops (a state expanded, a layer of
the symbolic search, a finding's core found). It costs a few attribute writes, and a call to
the *sink* at most every ``Watch.every`` seconds. A sink is installed for the span of a check
by ``watching``: the command line's progress line, or a supervised worker's pipe
(``supervise.py``). Without one, ``note`` only keeps the counters.

The watch is per context (a ``ContextVar``): checks in several threads of one program keep
apart. A process forked by the lanes (``lanes.py``) inherits it, so a lane's notes reach the
same sink (a worker's pipe takes short writes whole).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from ruleengine.errors import PolicyError

__all__ = ["Status", "Watch", "current", "note", "watching"]


@dataclass(frozen=True, slots=True)
class Status:
    """A check's progress at one moment."""

    phase: str = "starting"
    """What it is doing: ``loading``, ``exploring states``, ``cores``, …"""
    states: int = 0
    """States explored so far (the largest count any search reported)."""
    layers: int = 0
    """Layers (steps from the start) the current search has completed."""
    findings: int = 0
    """Findings whose cores are done."""
    engine: str = ""
    """The engine of the latest search (``explicit``, ``symbolic``, ``concrete``)."""

    def counts(self) -> list[str]:
        """What was done so far, in words (``1,204 states``, ``7 layers``, …)."""
        out = []
        if self.states:
            out.append(_count(self.states, "state"))
        if self.layers:
            search = f" of the {self.engine} search" if self.engine else ""
            out.append(_count(self.layers, "layer") + search)
        if self.findings:
            out.append(_count(self.findings, "finding"))
        return out

    def line(self) -> str:
        """The status in a few words, for a progress line."""
        return " · ".join([self.phase, *self.counts()])


def _count(n: int, noun: str) -> str:
    shown = f"{n:,}" if n < 10**6 else f"~{n:.1e}".replace("e+", "e")
    return f"{shown} {noun}{'' if n == 1 else 's'}"


class Watch:
    """The status of one check, and where it goes."""

    every = 0.2
    """Seconds between two calls of the sink (the first note goes at once)."""

    def __init__(self, sink: Callable[[Status], None] | None) -> None:
        self.status = Status()
        self.sink = sink
        self._sent = float("-inf")

    def note(
        self,
        *,
        phase: str | None = None,
        states: int | None = None,
        layers: int | None = None,
        findings: int | None = None,
        engine: str | None = None,
    ) -> None:
        s = self.status
        changed = replace(
            s,
            phase=s.phase if phase is None else phase,
            states=s.states if states is None else max(s.states, states),
            layers=s.layers if layers is None else layers,
            findings=s.findings if findings is None else findings,
            engine=s.engine if engine is None else engine,
        )
        self.status = changed
        if self.sink is None:
            return
        now = time.monotonic()
        if (phase is not None and phase != s.phase) or now - self._sent >= self.every:
            self._sent = now
            self.sink(changed)


_WATCH: ContextVar[Watch | None] = ContextVar("ruleengine_check_watch", default=None)


def note(
    *,
    phase: str | None = None,
    states: int | None = None,
    layers: int | None = None,
    findings: int | None = None,
    engine: str | None = None,
) -> None:
    """Record where the check is (no-op outside ``watching``)."""
    watch = _WATCH.get()
    if watch is not None:
        watch.note(phase=phase, states=states, layers=layers, findings=findings, engine=engine)


def current() -> Status | None:
    """The status of the check being watched here, if any."""
    watch = _WATCH.get()
    return None if watch is None else watch.status


@contextmanager
def watching(sink: Callable[[Status], None] | None = None) -> Iterator[Watch]:
    """Watch the checks run inside: their notes go to ``sink`` (at most every
    ``Watch.every`` seconds, and at every change of phase)."""
    if sink is not None and not callable(sink):
        raise PolicyError(f"watching: sink=`{sink!r:.60}` is not callable")
    watch = Watch(sink)
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)
