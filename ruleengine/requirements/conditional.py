"""``ConditionalRequirement``: when a tool may run, when it must, how often (SPEC §5).

The requirement reads its history through ``ConditionalMonitor``, whose view is

    (count, last, after, before, step)

* ``count`` — counted calls of the target, saturated at the largest of ``min_invocations``
  and ``max_invocations``;
* ``last`` — the last counted tool if it is the target or in ``force_after``, else ``None``;
* ``after`` — bit mask of the ``only_after`` tools called so far;
* ``before`` — whether some ``only_before`` tool has been called;
* ``step`` — counted steps + 1, saturated just past ``force_at_step``.

Counting is over counted steps: only ``ok`` ones when ``only_success_invocations``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER, forced
from ruleengine.requirements._targets import as_refs, names_now, resolve
from ruleengine.requirements.base import DEFAULT_PRIORITY, Requirement
from ruleengine.requirements.monitor import Monitor
from ruleengine.rules import Item, Rule
from ruleengine.state import RunState, Status

__all__ = ["ConditionalMonitor", "ConditionalRequirement"]

CustomCheck = Callable[[RunState], bool]

View = tuple[int, str | None, int, bool, int]


class ConditionalMonitor(Monitor):
    """The finite view of history a ``ConditionalRequirement`` decides from."""

    def __init__(
        self,
        *,
        target: str,
        only_before: tuple[str, ...],
        only_after: tuple[str, ...],
        force_after: tuple[str, ...],
        force_at_step: int | None,
        force_prevent_stop: bool,
        min_invocations: int,
        max_invocations: int | None,
        only_success: bool,
        consecutive_allowed: bool,
        checks: int,
        reason: str | None,
    ) -> None:
        self.target = target
        self.only_before = only_before
        self.only_after = only_after
        self.force_after = force_after
        self.force_at_step = force_at_step
        self.force_prevent_stop = force_prevent_stop
        self.min_invocations = min_invocations
        self.max_invocations = max_invocations
        self.only_success = only_success
        self.consecutive_allowed = consecutive_allowed
        self.checks = checks
        self.reason = reason
        self._cap = max(min_invocations, max_invocations or 0)
        self._step_cap = force_at_step + 1 if force_at_step is not None else 1
        self._remembered = frozenset((target, *force_after))
        self._after_bit = {t: 1 << i for i, t in enumerate(only_after)}
        self._after_all = (1 << len(only_after)) - 1
        self._before = frozenset(only_before)
        self._memo: dict[tuple[View, tuple[bool, ...]], tuple[Item, ...]] = {}

    def tools(self) -> frozenset[str]:
        return frozenset((self.target, *self.only_before, *self.only_after, *self.force_after))

    def initial(self) -> View:
        return (0, None, 0, False, 1)

    def advance(self, view: Hashable, tool: str, status: Status) -> View:
        count, last, after, before, step = _unpack(view)
        if self.only_success and status != "ok":
            return (count, last, after, before, step)
        if tool == self.target:
            count = min(count + 1, self._cap)
        return (
            count,
            tool if tool in self._remembered else None,
            after | self._after_bit.get(tool, 0),
            before or tool in self._before,
            min(step + 1, self._step_cap),
        )

    def view_of(self, state: RunState) -> View:
        """The view after ``state``'s steps, read from its shared summary (no replay)."""
        summary = state.summary(only_success=self.only_success)
        counts = summary.counts
        after = 0
        for t, bit in self._after_bit.items():
            if t in counts:
                after |= bit
        before = False
        for t in self._before:
            if t in counts:
                before = True
                break
        last = summary.last
        count = counts.get(self.target, 0)
        step = summary.length + 1
        return (
            count if count < self._cap else self._cap,
            last if last in self._remembered else None,
            after,
            before,
            step if step < self._step_cap else self._step_cap,
        )

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> tuple[Item, ...]:
        key = (_unpack(view), checks)
        found = self._memo.get(key)
        if found is None:
            found = self._emit(*key)
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _emit(self, view: View, checks: tuple[bool, ...]) -> tuple[Item, ...]:
        count, last, after, before, step = view
        target = self.target
        allowed = (
            (self.consecutive_allowed or last != target)
            and (self.max_invocations is None or count < self.max_invocations)
            and after == self._after_all
            and not before
            and all(checks)
        )
        hard = self.force_at_step is not None and step == self.force_at_step
        soft = allowed and not hard and last is not None and last in self.force_after
        prevent = count < self.min_invocations or (
            (hard or soft) and self.force_prevent_stop and target != FINAL_ANSWER
        )
        rule = Rule(
            target,
            allowed=allowed,
            forced=soft,
            prevent_stop=prevent,
            reason=None if allowed else self.reason,
        )
        return (rule, forced(target)) if hard else (rule,)


def _unpack(view: Hashable) -> View:
    # INVARIANT: views come from this monitor's initial/advance/view_of.
    assert isinstance(view, tuple) and len(view) == 5
    return view


class ConditionalRequirement(Requirement):
    """Allow, force, or limit one tool according to the history (SPEC §5).

    The target is allowed iff it was not the last counted tool (when ``consecutive_allowed``
    is false), it has been called fewer than ``max_invocations`` times, every ``only_after``
    tool has been called, no ``only_before`` tool has been called, and every custom check
    passes. When allowed it is forced (soft) right after a ``force_after`` tool; at step
    ``force_at_step`` it is hard-forced (a conflict if it is not allowed then). Stopping is
    prevented while it has fewer than ``min_invocations`` calls, and while it is forced
    (unless ``force_prevent_stop`` is false). ``reason`` is given only while it denies.
    """

    def __init__(
        self,
        target: object,
        *,
        force_at_step: int | None = None,
        only_before: object = None,
        only_after: object = None,
        force_after: object = None,
        force_prevent_stop: bool = True,
        min_invocations: int = 0,
        max_invocations: int | None = None,
        only_success_invocations: bool = True,
        consecutive_allowed: bool = True,
        custom_checks: Sequence[CustomCheck] = (),
        priority: int = DEFAULT_PRIORITY,
        enabled: bool = True,
        reason: str | None = None,
        name: str | None = None,
    ) -> None:
        target_refs = as_refs(target, owner=name or "conditional", parameter="target")
        if len(target_refs) != 1:
            raise PolicyError(f"requirement `{name or 'conditional'}`: target must be one tool")
        self._target_ref = target_refs[0]
        early = names_now(target_refs)
        default_name = f"conditional({early[0] if early else _class_name(self._target_ref)})"
        super().__init__(
            name=name if name is not None else default_name, priority=priority, enabled=enabled
        )
        owner = self.name
        self._refs = {
            "only_before": as_refs(only_before, owner=owner, parameter="only_before"),
            "only_after": as_refs(only_after, owner=owner, parameter="only_after"),
            "force_after": as_refs(force_after, owner=owner, parameter="force_after"),
        }
        self.force_at_step = _optional_count(force_at_step, owner, "force_at_step", least=1)
        self.min_invocations = _count(min_invocations, owner, "min_invocations")
        self.max_invocations = _optional_count(max_invocations, owner, "max_invocations")
        if self.max_invocations is not None and self.min_invocations > self.max_invocations:
            raise PolicyError(
                f"requirement `{owner}`: min_invocations=`{self.min_invocations}` exceeds "
                f"max_invocations=`{self.max_invocations}`",
                hint="the tool could never be called often enough to let the agent stop",
            )
        for flag, value in (
            ("force_prevent_stop", force_prevent_stop),
            ("only_success_invocations", only_success_invocations),
            ("consecutive_allowed", consecutive_allowed),
        ):
            if not isinstance(value, bool):
                raise PolicyError(
                    f"requirement `{owner}`: {flag}=`{value!r}` must be true or false"
                )
        self.force_prevent_stop = force_prevent_stop
        self.only_success_invocations = only_success_invocations
        self.consecutive_allowed = consecutive_allowed
        checks = tuple(custom_checks)
        for check in checks:
            if not callable(check):
                raise PolicyError(
                    f"requirement `{owner}`: custom check `{check!r}` is not callable"
                )
        self.custom_checks = checks
        if reason is not None and not isinstance(reason, str):
            raise PolicyError(f"requirement `{owner}`: reason=`{reason!r}` must be text")
        self.reason = reason
        self._monitor: ConditionalMonitor | None = None
        names = names_now((self._target_ref, *self._all_refs()))
        if names is not None:
            self._monitor = self._build_monitor(
                early[0] if early else names[0],
                *(names_now(self._refs[p]) or () for p in self._refs),
            )

    # -- names -------------------------------------------------------------------------

    def _all_refs(self) -> tuple[object, ...]:
        return (*self._refs["only_before"], *self._refs["only_after"], *self._refs["force_after"])

    def _build_monitor(
        self,
        target: str,
        only_before: tuple[str, ...],
        only_after: tuple[str, ...],
        force_after: tuple[str, ...],
    ) -> ConditionalMonitor:
        owner = self.name
        for parameter, names in (
            ("only_before", only_before),
            ("only_after", only_after),
            ("force_after", force_after),
        ):
            if target in names:
                hint = {
                    "force_after": "a tool forced after itself would be forced forever "
                    "(or, with consecutive_allowed=false, never allowed when forced)",
                }.get(parameter, "a tool cannot be ordered relative to itself")
                raise PolicyError(
                    f"requirement `{owner}`: {parameter} contains the target `{target}` itself",
                    hint=hint,
                )
        for a, b in (("only_before", "only_after"), ("only_before", "force_after")):
            left = only_before
            right = only_after if b == "only_after" else force_after
            both = sorted(set(left) & set(right))
            if both:
                raise PolicyError(
                    f"requirement `{owner}`: tool `{both[0]}` is in both {a} and {b}",
                    hint="after that tool the target could never be allowed",
                )
        if target == FINAL_ANSWER and self.min_invocations:
            raise PolicyError(
                f"requirement `{owner}`: min_invocations on `final_answer` can never be met",
                hint="the run ends when `final_answer` runs",
            )
        return ConditionalMonitor(
            target=target,
            only_before=tuple(dict.fromkeys(only_before)),
            only_after=tuple(dict.fromkeys(only_after)),
            force_after=tuple(dict.fromkeys(force_after)),
            force_at_step=self.force_at_step,
            force_prevent_stop=self.force_prevent_stop,
            min_invocations=self.min_invocations,
            max_invocations=self.max_invocations,
            only_success=self.only_success_invocations,
            consecutive_allowed=self.consecutive_allowed,
            checks=len(self.custom_checks),
            reason=self.reason,
        )

    def bind(self, tools: Sequence[object]) -> ConditionalRequirement:
        owner = self.name
        target = resolve(self._target_ref, tools, owner=owner, parameter="target")
        lists = {
            p: tuple(resolve(r, tools, owner=owner, parameter=p) for r in refs)
            for p, refs in self._refs.items()
        }
        monitor = self._monitor
        if monitor is not None and (
            monitor.target,
            monitor.only_before,
            monitor.only_after,
            monitor.force_after,
        ) == (
            target,
            tuple(dict.fromkeys(lists["only_before"])),
            tuple(dict.fromkeys(lists["only_after"])),
            tuple(dict.fromkeys(lists["force_after"])),
        ):
            return self
        return ConditionalRequirement(
            target,
            force_at_step=self.force_at_step,
            only_before=lists["only_before"],
            only_after=lists["only_after"],
            force_after=lists["force_after"],
            force_prevent_stop=self.force_prevent_stop,
            min_invocations=self.min_invocations,
            max_invocations=self.max_invocations,
            only_success_invocations=self.only_success_invocations,
            consecutive_allowed=self.consecutive_allowed,
            custom_checks=self.custom_checks,
            priority=self.priority,
            enabled=self.enabled,
            reason=self.reason,
            name=self.name,
        )

    @property
    def target(self) -> str:
        """The target tool's name (after binding, for class targets)."""
        return self._bound_monitor().target

    def monitor(self) -> ConditionalMonitor:
        return self._bound_monitor()

    def _bound_monitor(self) -> ConditionalMonitor:
        if self._monitor is None:
            raise PolicyError(
                f"requirement `{self.name}` names tools by class: bind it to the declared tools",
                hint="the reasoner and the agent bind requirements for you",
            )
        return self._monitor

    # -- running -----------------------------------------------------------------------

    def run(self, state: RunState) -> tuple[Item, ...]:
        monitor = self._monitor or self._bound_monitor()
        checks = self.check_values(state) if self.custom_checks else ()
        return monitor.emit(monitor.view_of(state), checks)

    def check_values(self, state: RunState) -> tuple[bool, ...]:
        """The values of the custom checks on ``state``."""
        values = []
        for check in self.custom_checks:
            value = check(state)
            if not isinstance(value, bool):
                raise PolicyError(
                    f"requirement `{self.name}`: custom check `{_callable_name(check)}` "
                    f"returned `{value!r}`, not true or false"
                )
            values.append(value)
        return tuple(values)

    def __repr__(self) -> str:
        target = self._monitor.target if self._monitor else _class_name(self._target_ref)
        return f"ConditionalRequirement({target!r}, name={self.name!r}, priority={self.priority})"


def _count(value: Any, owner: str, parameter: str, *, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"requirement `{owner}`: {parameter}=`{value!r}` must be an integer")
    if value < least:
        bound = "must not be negative" if least == 0 else f"must be at least {least}"
        raise PolicyError(f"requirement `{owner}`: {parameter}=`{value}` {bound}")
    return value


def _optional_count(value: Any, owner: str, parameter: str, *, least: int = 0) -> int | None:
    return None if value is None else _count(value, owner, parameter, least=least)


def _class_name(ref: object) -> str:
    return ref.__name__ if isinstance(ref, type) else repr(ref)


def _callable_name(fn: object) -> str:
    return getattr(fn, "__name__", repr(fn))
