"""Hypothesis strategies for the built-in requirements, and reference models of SPEC §5.

``CondParams`` describes a valid ``ConditionalRequirement`` (``build`` makes it); ``expected_*``
compute what a requirement should emit straight from the concrete history, with unbounded
counts and no monitor, so they check the monitors' saturation as well as their logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Rule,
    RunState,
    Step,
    forced,
)

TOOLS = ("a", "b", "c", "d")
"""The declared tools (``final_answer`` is added last by the reasoner)."""
STATUSES = ("ok", "error", "denied")
ARGUMENTS = ({}, {"q": 1}, {"q": 1, "p": "x"}, {"p": "x", "q": 1}, {"q": 2})
"""Call arguments for cycle traces; the third and fourth differ only in key order."""

Trace = list[tuple[str, str]]


# -- traces ------------------------------------------------------------------------------------


def moves(tools: tuple[str, ...] = TOOLS) -> st.SearchStrategy[tuple[str, str]]:
    return st.tuples(st.sampled_from(tools), st.sampled_from(STATUSES))


def traces(tools: tuple[str, ...] = TOOLS, max_size: int = 12) -> st.SearchStrategy[Trace]:
    return st.lists(moves(tools), max_size=max_size)


def state_of(trace: Trace) -> RunState:
    return RunState.from_trace(trace)


def call_traces(
    tools: tuple[str, ...] = TOOLS[:2], max_size: int = 12
) -> st.SearchStrategy[list[Step]]:
    """Steps with arguments (drawn from a few, so identical calls are frequent)."""
    step = st.builds(
        lambda tool, status, i: Step(tool=tool, status=status, arguments=dict(ARGUMENTS[i])),
        st.sampled_from(tools),
        st.sampled_from(STATUSES),
        st.integers(0, len(ARGUMENTS) - 1),
    )
    return st.lists(step, max_size=max_size)


def _subset(pool: list[str], max_size: int = 2) -> st.SearchStrategy[tuple[str, ...]]:
    if not pool:
        return st.just(())
    return st.lists(st.sampled_from(pool), unique=True, max_size=max_size).map(tuple)


# -- conditional -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """A custom check that depends on the state: ``(len(steps) + offset) % modulus != 0``."""

    offset: int
    modulus: int

    def value(self, length: int) -> bool:
        return (length + self.offset) % self.modulus != 0

    def __call__(self, state: RunState) -> bool:
        return self.value(len(state.steps))


@dataclass(frozen=True)
class CondParams:
    target: str
    only_before: tuple[str, ...] = ()
    only_after: tuple[str, ...] = ()
    force_after: tuple[str, ...] = ()
    force_at_step: int | None = None
    force_prevent_stop: bool = True
    min_invocations: int = 0
    max_invocations: int | None = None
    only_success: bool = True
    consecutive_allowed: bool = True
    checks: tuple[Check, ...] = ()
    reason: str | None = None
    priority: int = 10

    def build(self, name: str | None = None) -> ConditionalRequirement:
        return ConditionalRequirement(
            self.target,
            force_at_step=self.force_at_step,
            only_before=list(self.only_before),
            only_after=list(self.only_after),
            force_after=list(self.force_after),
            force_prevent_stop=self.force_prevent_stop,
            min_invocations=self.min_invocations,
            max_invocations=self.max_invocations,
            only_success_invocations=self.only_success,
            consecutive_allowed=self.consecutive_allowed,
            custom_checks=list(self.checks),
            priority=self.priority,
            reason=self.reason,
            name=name,
        )

    @property
    def cap(self) -> int:
        return max(self.min_invocations, self.max_invocations or 0)

    @property
    def step_cap(self) -> int:
        return self.force_at_step + 1 if self.force_at_step is not None else 1

    def view_bound(self) -> int:
        """An upper bound on the number of views of its monitor.

        count ∈ 0..cap; last ∈ {None, target} ∪ force_after; a bit per only_after tool; whether
        an only_before tool ran; step ∈ 1..step_cap.
        """
        return (
            (self.cap + 1)
            * (len(self.force_after) + 2)
            * 2 ** len(self.only_after)
            * 2
            * self.step_cap
        )


@st.composite
def conditional_params(
    draw: st.DrawFn, tools: tuple[str, ...] = TOOLS, with_checks: bool = True
) -> CondParams:
    """Valid parameters only: no self-reference, before disjoint from after and force_after."""
    target = draw(st.sampled_from((*tools, FINAL_ANSWER)))
    others = [t for t in tools if t != target]
    only_before = draw(_subset(others))
    rest = [t for t in others if t not in only_before]
    only_after = draw(_subset(rest))
    force_after = draw(_subset(rest))
    minimum = 0 if target == FINAL_ANSWER else draw(st.integers(0, 3))
    maximum = draw(st.none() | st.integers(minimum, 4))
    checks: tuple[Check, ...] = ()
    if with_checks:
        checks = tuple(
            draw(st.lists(st.builds(Check, st.integers(0, 3), st.integers(2, 4)), max_size=2))
        )
    return CondParams(
        target=target,
        only_before=only_before,
        only_after=only_after,
        force_after=force_after,
        force_at_step=draw(st.none() | st.integers(1, 4)),
        force_prevent_stop=draw(st.booleans()),
        min_invocations=minimum,
        max_invocations=maximum,
        only_success=draw(st.booleans()),
        consecutive_allowed=draw(st.booleans()),
        checks=checks,
        reason=draw(st.sampled_from((None, "because"))),
        priority=draw(st.integers(1, 3)),
    )


def expected_conditional(p: CondParams, trace: Trace) -> tuple[Any, ...]:
    """What SPEC §5/§11 say a ConditionalRequirement emits after ``trace``.

    Counted steps are all steps, or only ``ok`` ones when ``only_success``; counts are exact.
    """
    counted = [t for t, s in trace if s == "ok" or not p.only_success]
    count = counted.count(p.target)
    last = counted[-1] if counted else None
    failed = [repr(c) for c in p.checks if not c.value(len(trace))]
    causes = []
    if p.max_invocations == 0:
        causes.append(f"`{p.target}` may not be called (max 0)")
    elif p.max_invocations is not None and count >= p.max_invocations:
        times = "time" if p.max_invocations == 1 else "times"
        causes.append(
            f"`{p.target}` already called {p.max_invocations} {times} (max {p.max_invocations})"
        )
    if not p.consecutive_allowed and last == p.target:
        causes.append(f"`{p.target}` cannot run twice in a row")
    missing = [t for t in p.only_after if t not in counted]
    if missing:
        causes.append(f"needs {' and '.join(f'`{t}`' for t in missing)} first")
    if any(t in counted for t in p.only_before):
        listed = " or ".join(f"`{t}`" for t in p.only_before)
        causes.append(f"`{p.target}` only runs before {listed}")
    if failed:
        causes.append(f"custom check {' and '.join(f'`{c}`' for c in failed)} failed")
    allowed = not causes
    step = len(counted) + 1
    hard = p.force_at_step is not None and step == p.force_at_step
    soft = allowed and not hard and last in p.force_after
    # SPEC §5: a target that is not allowed is not forced, so a hard force on a denied target
    # adds no prevent_stop.
    prevent = count < p.min_invocations or (
        (soft or (hard and allowed)) and p.force_prevent_stop and p.target != FINAL_ANSWER
    )
    reason = None if allowed else (p.reason if p.reason is not None else "; ".join(causes))
    rule = Rule(p.target, allowed=allowed, forced=soft, prevent_stop=prevent, reason=reason)
    return (rule, forced(p.target)) if hard else (rule,)


# -- permission --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PermParams:
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    remember: bool
    hide: bool

    def build(self, name: str | None = None) -> AskPermissionRequirement:
        return AskPermissionRequirement(
            list(self.include) or None,
            list(self.exclude) or None,
            lambda tool, arguments: True,
            remember_choices=self.remember,
            hide_disallowed=self.hide,
            name=name,
        )

    def covered(self, tools: tuple[str, ...] = TOOLS) -> tuple[str, ...]:
        include = self.include or tools
        return tuple(t for t in include if t not in self.exclude and t != FINAL_ANSWER)


@st.composite
def permission_params(draw: st.DrawFn, tools: tuple[str, ...] = TOOLS) -> PermParams:
    include = draw(_subset([*tools, FINAL_ANSWER], max_size=3))
    exclude = draw(_subset(list(tools), max_size=2))
    return PermParams(include, exclude, draw(st.booleans()), draw(st.booleans()))


def expected_permission(p: PermParams, trace: Trace) -> list[tuple[str, bool, bool]]:
    """(target, allowed, hidden) of each remembered rule, in covered order (SPEC §11)."""
    if not p.remember:
        return []
    first: dict[str, str] = {}
    for tool, status in trace:
        first.setdefault(tool, status)
    out = []
    for t in p.covered():
        if t in first:
            refused = first[t] == "denied"
            out.append((t, not refused, p.hide and refused))
    return out


# -- cycle guard -------------------------------------------------------------------------------


@st.composite
def cycle_guards(draw: st.DrawFn) -> CycleGuard:
    return CycleGuard(
        max_strike_length=draw(st.integers(1, 3)),
        max_total_occurrences=draw(st.integers(1, 4)),
        window_size=draw(st.integers(1, 8)),
    )


def expected_cycle(guard: CycleGuard, steps: list[Step]) -> str | None:
    """The cycling tool at the end of ``steps`` (identical = same tool, same argument dict)."""
    if not steps:
        return None

    def key(s: Step) -> tuple[str, Any]:
        return (s.tool, sorted(s.arguments.items()))

    last = key(steps[-1])
    strike = 0
    for s in reversed(steps):
        if key(s) != last:
            break
        strike += 1
    window = steps[-guard.window_size :]
    total = sum(1 for s in window if key(s) == last)
    if strike > guard.max_strike_length or total > guard.max_total_occurrences:
        return steps[-1].tool
    return None
