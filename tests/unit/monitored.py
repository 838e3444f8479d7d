"""A requirement that is just a monitor, for unit tests of the static checker that need a
rule set no built-in emits (a denial that gives way, a count that releases a stop)."""

from __future__ import annotations

from typing import Any

from ruleengine import Monitor, Requirement, RunState

__all__ = ["Monitored"]


class Monitored(Requirement):
    """Emits what its monitor emits at the run's view; ``yielding``: gives way when its
    rules clash, like the cycle guard."""

    def __init__(self, monitor: Monitor, *, name: str, yielding: bool = False) -> None:
        super().__init__(name=name)
        self._monitor = monitor
        self.yielding = yielding

    def run(self, state: RunState) -> list[Any]:
        return list(self._monitor.emit(self._monitor.view_of(state)))

    def monitor(self) -> Monitor:
        return self._monitor
