"""Hypothesis strategies for whole policies, as the static checker takes them.

A ``PolicyCase`` is a small random policy: 1–4 tools, 1–5 requirements of every built-in kind
(conditional, ask_permission, cycle guard) with small parameters, sometimes a user
``@requirement`` with a ``Monitor`` (whose function reads the state directly, so the monitor's
faithfulness is checked too), sometimes custom checks, sometimes a disabled requirement,
sometimes priority mode. It keeps the parameters, not the objects, so a failing example
prints as something one can rebuild (``source()`` writes it as Python).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, note
from hypothesis import strategies as st
from requirement_strategies import (
    Check,
    CondParams,
    PermParams,
    conditional_params,
    permission_params,
)

from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Monitor,
    Requirement,
    Rule,
    RunState,
    allowed,
    at_most,
    can_stop,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine.check.symbolic import supports
from ruleengine.check.system import System

TOOL_POOL = ("a", "b", "c", "d")
USER_KINDS = ("deny", "hide", "show", "force", "require", "no-stop", "exclusive", "guard")
"""What a user requirement emits once its tool has been called ``limit`` times: the first
six are literals (the symbolic engine takes them), the last two general formulas."""


# -- a user requirement with a monitor ---------------------------------------------------------


@dataclass(frozen=True)
class UserParams:
    """``@requirement`` that counts calls of ``tool`` (any status) and, from the ``limit``-th
    on, emits one item of ``kind`` about ``tool`` and ``other``."""

    tool: str
    other: str
    limit: int
    kind: str
    priority: int = 10

    def items(self) -> list[object]:
        t, o = self.tool, self.other
        match self.kind:
            case "deny":
                return [~allowed(t)]
            case "hide":
                return [Rule(t, hidden=True, reason="hidden by the user rule")]
            case "show":
                return [~hidden(o)]
            case "force":
                return [forced(o)]
            case "require":
                return [allowed(o)]
            case "no-stop":
                return [~can_stop]
            case "exclusive":
                return [at_most(1, allowed(t), allowed(o))]
            case "guard":
                return [implies(allowed(o), ~can_stop) & ~hidden(o)]
        raise AssertionError(self.kind)  # pragma: no cover

    def build(self, name: str, enabled: bool = True) -> Requirement:
        params = self

        def run(state: RunState) -> list[object]:
            calls = sum(1 for s in state.steps if s.tool == params.tool)
            return params.items() if calls >= params.limit else []

        return requirement(
            name=name, priority=self.priority, enabled=enabled, monitor=CountMonitor(self)
        )(run)


class CountMonitor(Monitor):
    """The view: calls of one tool, saturated at the limit (other tools act alike)."""

    def __init__(self, params: UserParams) -> None:
        self.params = params

    def initial(self) -> Hashable:
        return 0

    def advance(self, view: Hashable, tool: str, status: str) -> Hashable:  # type: ignore[override]
        assert isinstance(view, int)
        return min(view + 1, self.params.limit) if tool == self.params.tool else view

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Any]:
        assert isinstance(view, int)
        return self.params.items() if view >= self.params.limit else []

    def tools(self) -> frozenset[str]:
        return frozenset({self.params.tool})


# -- the policies ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CycleParams:
    max_strike_length: int
    max_total_occurrences: int
    window_size: int
    priority: int = 1


Params = CondParams | PermParams | CycleParams | UserParams


@dataclass(frozen=True)
class ReqSpec:
    name: str
    params: Params
    enabled: bool = True

    def build(self) -> Requirement:
        p, name, enabled = self.params, self.name, self.enabled
        if isinstance(p, CondParams):
            return ConditionalRequirement(
                p.target,
                force_at_step=p.force_at_step,
                only_before=list(p.only_before),
                only_after=list(p.only_after),
                force_after=list(p.force_after),
                force_prevent_stop=p.force_prevent_stop,
                min_invocations=p.min_invocations,
                max_invocations=p.max_invocations,
                only_success_invocations=p.only_success,
                consecutive_allowed=p.consecutive_allowed,
                custom_checks=list(p.checks),
                priority=p.priority,
                reason=p.reason,
                name=name,
                enabled=enabled,
            )
        if isinstance(p, PermParams):
            return AskPermissionRequirement(
                list(p.include) or None,
                list(p.exclude) or None,
                lambda tool, arguments: True,
                remember_choices=p.remember,
                hide_disallowed=p.hide,
                name=name,
                enabled=enabled,
            )
        if isinstance(p, CycleParams):
            return CycleGuard(
                max_strike_length=p.max_strike_length,
                max_total_occurrences=p.max_total_occurrences,
                window_size=p.window_size,
                priority=p.priority,
                name=name,
                enabled=enabled,
            )
        return p.build(name, enabled)

    @property
    def opaque(self) -> bool:
        """Whether the checker treats part of it as an unknown boolean."""
        if not self.enabled:
            return False
        if isinstance(self.params, CycleParams):
            return True
        return isinstance(self.params, CondParams) and bool(self.params.checks)

    def source(self) -> str:
        p = self.params
        off = "" if self.enabled else ", enabled=False"
        if isinstance(p, CondParams):
            args = [repr(p.target)]
            defaults = CondParams(p.target)
            for field, arg in (
                ("force_at_step", "force_at_step"),
                ("only_before", "only_before"),
                ("only_after", "only_after"),
                ("force_after", "force_after"),
                ("force_prevent_stop", "force_prevent_stop"),
                ("min_invocations", "min_invocations"),
                ("max_invocations", "max_invocations"),
                ("only_success", "only_success_invocations"),
                ("consecutive_allowed", "consecutive_allowed"),
                ("checks", "custom_checks"),
                ("reason", "reason"),
                ("priority", "priority"),
            ):
                value = getattr(p, field)
                if value != getattr(defaults, field):
                    shown = list(value) if isinstance(value, tuple) else value
                    args.append(f"{arg}={shown!r}")
            return f"ConditionalRequirement({', '.join(args)}, name={self.name!r}{off})"
        if isinstance(p, PermParams):
            return (
                f"AskPermissionRequirement({list(p.include) or None!r}, "
                f"{list(p.exclude) or None!r}, remember_choices={p.remember}, "
                f"hide_disallowed={p.hide}, name={self.name!r}{off})"
            )
        if isinstance(p, CycleParams):
            return (
                f"CycleGuard(max_strike_length={p.max_strike_length}, "
                f"max_total_occurrences={p.max_total_occurrences}, "
                f"window_size={p.window_size}, priority={p.priority}, name={self.name!r}{off})"
            )
        return f"UserParams{(p.tool, p.other, p.limit, p.kind, p.priority)}.build({self.name!r})"


@dataclass(frozen=True)
class PolicyCase:
    """A policy to check: tools, requirement specs, mode and budget."""

    tools: tuple[str, ...]
    specs: tuple[ReqSpec, ...]
    mode: str = "strict"
    max_iterations: int = 20

    def requirements(self) -> list[Requirement]:
        """Fresh requirement objects (they hold no state, but fresh ones keep runs apart)."""
        return [s.build() for s in self.specs]

    @property
    def opaque(self) -> bool:
        return any(s.opaque for s in self.specs)

    def kwargs(self) -> dict[str, Any]:
        return {"mode": self.mode, "max_iterations": self.max_iterations}

    def source(self) -> str:
        """The policy as Python, for a bug report."""
        lines = [f"tools = {list(self.tools)!r}", "requirements = ["]
        lines += [f"    {s.source()}," for s in self.specs]
        lines.append("]")
        lines.append(
            f"check(tools, requirements, mode={self.mode!r}, max_iterations={self.max_iterations})"
        )
        return "\n".join(lines)


def _strip_checks(p: CondParams) -> CondParams:
    return CondParams(**{**p.__dict__, "checks": ()})


@st.composite
def requirement_params(
    draw: st.DrawFn,
    tools: tuple[str, ...],
    *,
    opaque: bool = True,
    user: bool = True,
    small: bool = False,
    cycle: bool = True,
) -> Params:
    """Parameters of one requirement over ``tools`` (``opaque``: custom checks and cycle
    guards may appear; ``user``: user requirements with monitors may appear)."""
    kinds = ["conditional", "conditional", "conditional", "permission"]
    if opaque and cycle:
        kinds.append("cycle")
    if user and len(tools) > 1:
        kinds.append("user")
    kind = draw(st.sampled_from(kinds))
    if kind == "conditional":
        p = draw(conditional_params(tools, with_checks=opaque))
        if opaque and p.checks and draw(st.integers(0, 2)):
            p = _strip_checks(p)  # custom checks sometimes, not most of the time
        if small:
            p = _shrunk(p)
        return p
    if kind == "permission":
        return draw(permission_params(tools))
    if kind == "cycle":
        return CycleParams(
            draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
        )
    tool = draw(st.sampled_from(tools))
    other = draw(st.sampled_from([t for t in (*tools, FINAL_ANSWER) if t != tool]))
    return UserParams(
        tool,
        other,
        draw(st.integers(0, 2)),
        draw(st.sampled_from(USER_KINDS)),
        draw(st.sampled_from((1, 2, 10))),
    )


def _shrunk(p: CondParams) -> CondParams:
    """Smaller counts and steps, so the reachable space fits in a short bounded search."""
    fields = dict(p.__dict__)
    fields["min_invocations"] = min(p.min_invocations, 2)
    if p.max_invocations is not None:
        fields["max_invocations"] = min(max(p.max_invocations, fields["min_invocations"]), 2)
    if p.force_at_step is not None:
        fields["force_at_step"] = min(p.force_at_step, 3)
    return CondParams(**fields)


@st.composite
def policies(
    draw: st.DrawFn,
    *,
    max_tools: int = 4,
    max_requirements: int = 5,
    opaque: bool = True,
    user: bool = True,
    priority: bool = True,
    disabled: bool = True,
    small: bool = False,
    cycle: bool = True,
    max_iterations: tuple[int, int] = (1, 6),
) -> PolicyCase:
    """Small random policies (see the module docstring)."""
    size = draw(st.integers(1, max_tools))
    tools = tuple(draw(st.permutations(TOOL_POOL))[:size])
    count = draw(st.integers(1, max_requirements))
    specs = []
    for i in range(count):
        params = draw(requirement_params(tools, opaque=opaque, user=user, small=small, cycle=cycle))
        enabled = not (disabled and draw(st.integers(0, 9)) == 0)
        specs.append(ReqSpec(f"r{i}", params, enabled))
    mode = "priority" if priority and draw(st.integers(0, 3)) == 0 else "strict"
    return PolicyCase(tools, tuple(specs), mode, draw(st.integers(*max_iterations)))


@st.composite
def priority_policies(draw: st.DrawFn, *, guards: bool = False) -> PolicyCase:
    """A random policy in priority mode; with ``guards``, one to three cycle guards, at
    one priority (often above other requirements'), besides its other requirements."""
    case = draw(policies(priority=False, cycle=not guards))
    specs = case.specs
    if guards:
        priority = draw(st.sampled_from([1, 10, 15, 30]))
        drawn = draw(
            st.lists(
                st.builds(
                    CycleParams,
                    st.integers(1, 3),
                    st.integers(1, 3),
                    st.integers(1, 4),
                    st.just(priority),
                ),
                min_size=1,
                max_size=3,
            )
        )
        specs = (*specs, *(ReqSpec(f"g{i}", p) for i, p in enumerate(drawn)))
    return PolicyCase(case.tools, specs, "priority", case.max_iterations)


def drawn_conditional(
    draw: st.DrawFn, tools: Sequence[str], kinds: Sequence[str], name: str
) -> ConditionalRequirement:
    """A conditional on a tool of ``tools`` of one kind drawn from ``kinds`` (weights by
    repetition): ``force_after``, ``only_after`` or ``only_before`` one or two other tools,
    ``max_invocations`` 0 to 2, or ``min_invocations`` 1 or 2; its priority, counting mode
    and consecutive calls drawn too. For the laws whose own generators tangle orders,
    counts and forces on a few tools."""
    target = draw(st.sampled_from(tools))
    others = [t for t in tools if t != target]
    kind = draw(st.sampled_from(kinds))
    params: dict[str, Any] = {}
    if kind in ("force_after", "only_after", "only_before"):
        params[kind] = draw(st.lists(st.sampled_from(others), min_size=1, max_size=2))
    elif kind == "max_invocations":
        params[kind] = draw(st.integers(0, 2))
    else:
        params[kind] = draw(st.integers(1, 2))
    return ConditionalRequirement(
        target,
        name=name,
        priority=draw(st.sampled_from([1, 10, 10, 20])),
        only_success_invocations=draw(st.booleans()),
        consecutive_allowed=draw(st.booleans()),
        **params,
    )


__all__ = [
    "TOOL_POOL",
    "Check",
    "CountMonitor",
    "CycleParams",
    "PolicyCase",
    "ReqSpec",
    "UserParams",
    "drawn_conditional",
    "policies",
    "requirement_params",
]


def priority_system(case: PolicyCase) -> System:
    """The case's system in priority mode, when the symbolic engine takes it; else the
    example is skipped (``assume``)."""
    note(case.source())
    system = System(list(case.tools), case.requirements(), mode="priority")
    assume(supports(system) is None)
    return system


def symbolic_system(case: PolicyCase) -> System:
    """The case's system, when the symbolic engine takes it (strict mode, literal rules, at
    most one yielding requirement); else the example is skipped (``assume``)."""
    note(case.source())
    assume(case.mode == "strict")
    system = System(list(case.tools), case.requirements())
    assume(supports(system) is None)
    return system
