"""Systems with one requirement replaced by another, for the directed searches that show a
requirement live (``compositional``, ``counterexamples``): its finishing histories end where
the requirement taken out may act. Built from the system's own components and reasoner;
imports no BDD package, since every core search may use them. And the histories that call a
tool as often as a count needs (``counted``).
"""

from __future__ import annotations

from collections.abc import Callable

from ruleengine.check.system import Event, System
from ruleengine.requirements import ConditionalRequirement, Requirement
from ruleengine.state import Status

__all__ = ["capped", "counted", "gated", "short_of"]

_COUNTED: tuple[Status, ...] = ("ok", "error")


def counted(history: tuple[Event, ...], tool: str, times: int) -> list[tuple[Event, ...]]:
    """``history`` followed by ``times`` calls of ``tool``, all succeeding, and again all
    failing: a cap binds along one of them (every prefix is looked at), or a count of
    every status passes the others' counts of successes."""
    return [(*history, *[(tool, status)] * times) for status in _COUNTED]


def gated(system: System, without: str, tool: str) -> System:
    """``system`` without requirement ``without`` and with one more, which keeps the run
    from stopping until ``tool`` is called (with any status). Its finishing histories each
    call ``tool`` where the others may be done, so a requirement that acts right after
    ``tool`` (a force after it) may be live there, in ``system``: no finishing history of
    ``system`` need call ``tool`` at all. The components and the reasoner are
    ``system``'s (the reasoner decides any records of the same tools), the new
    requirement's own; its name is none of ``system``'s."""
    return _replaced(
        system,
        without,
        f"{without} waits for {tool}",
        lambda name: ConditionalRequirement(
            tool, min_invocations=1, only_success_invocations=False, name=name
        ),
    )


def capped(system: System, without: str, tool: str, most: int, *, only_success: bool) -> System:
    """``system`` without requirement ``without`` and with one more, which allows at most
    ``most`` calls of ``tool`` (successful ones only, with ``only_success``). Where
    ``without`` keeps the run from stopping until ``tool`` was called more often than
    that, a finishing history of this system ends where the others let the run stop and
    it does not: where it is live, in ``system``. Unlike a search that never calls
    ``tool``, it finds one where the others need ``tool`` called too, but fewer times.
    Built as ``gated``."""
    return _replaced(
        system,
        without,
        f"{without} capped at {most} calls of {tool}",
        lambda name: ConditionalRequirement(
            tool, max_invocations=most, only_success_invocations=only_success, name=name
        ),
    )


def short_of(system: System, name: str) -> System | None:
    """For requirement ``name`` of ``system``, a ``ConditionalRequirement`` that keeps the
    run from stopping until its tool was called ``min_invocations`` times, at least twice:
    the system without it and with that tool capped one call short (``capped``), whose
    finishing histories end where it is live. None for any other requirement (at one call,
    a search that never calls the tool is the same)."""
    requirement = next(
        (c.requirement for c in system.components if c.requirement.name == name), None
    )
    if not isinstance(requirement, ConditionalRequirement) or requirement.min_invocations < 2:
        return None
    return capped(
        system,
        name,
        requirement.target,
        requirement.min_invocations - 1,
        only_success=requirement.only_success_invocations,
    )


def _replaced(
    system: System, without: str, name: str, gate_of: Callable[[str], Requirement]
) -> System:
    """``system`` without requirement ``without`` and with the requirement ``gate_of``
    builds, named ``name`` (primed until it is none of ``system``'s names)."""
    names = {c.requirement.name for c in system.components}
    while name in names:
        name += "'"
    gate = gate_of(name)
    own = System(system.tools, [gate], mode=system.mode).components
    kept = [c for c in system.components if c.requirement.name != without]
    return System(
        system.tools,
        [*(c.requirement for c in kept), gate],
        mode=system.mode,
        components=[*kept, *own],
        reasoner=system.reasoner,
    )
