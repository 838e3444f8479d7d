"""``ConditionalRequirement``: when a tool may run, when it must, how often (SPEC §5).

The requirement reads its history through ``ConditionalMonitor``, whose view is

    (count, last, after, before, step)

* ``count`` — counted calls of the target, saturated at the largest of ``min_invocations``
  and ``max_invocations``;
* ``last`` — what a rule reads of the last counted tool: the target (when
  ``consecutive_allowed`` is false), or, for any ``force_after`` tool, the first of them (they
  all force alike); ``None`` for every other tool;
* ``after`` — bit mask of the ``only_after`` tools called so far;
* ``before`` — whether some ``only_before`` tool has been called;
* ``step`` — counted steps + 1, saturated just past ``force_at_step``.

Counting is over counted steps: only ``ok`` ones when ``only_success_invocations``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Sequence

from ruleengine import _validate
from ruleengine._tags import Tags
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER, forced
from ruleengine.requirements._targets import as_refs, names_now, resolve, resolve_all
from ruleengine.requirements.base import DEFAULT_PRIORITY, Requirement
from ruleengine.requirements.monitor import Counter, Monitor
from ruleengine.rules import Item, Rule
from ruleengine.state import STATUSES, RunState, Status

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
        check_names: tuple[str, ...] = (),
        check_keys: tuple[Hashable, ...] = (),
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
        self.check_names = check_names or tuple(f"#{i + 1}" for i in range(checks))
        self._check_keys = check_keys
        self._cap = max(min_invocations, max_invocations or 0)
        self._step_cap = force_at_step + 1 if force_at_step is not None else 1
        # `last` is kept only as far as a rule reads it: the target itself when it may not
        # run twice in a row, and "one of the force_after tools" (all of them force alike, so
        # they share one view: the first of them). Every other last tool is the same view.
        self._last: dict[str, str] = {t: force_after[0] for t in force_after}
        if not consecutive_allowed:
            self._last[target] = target
        self._after_bit = {t: 1 << i for i, t in enumerate(only_after)}
        self._after_all = (1 << len(only_after)) - 1
        self._before = frozenset(only_before)
        self._memo: dict[tuple[View, tuple[bool, ...]], tuple[Item, ...]] = {}

    def tools(self) -> frozenset[str]:
        return frozenset((self.target, *self.only_before, *self.only_after, *self.force_after))

    def check_keys(self) -> tuple[Hashable, ...]:
        """The custom check functions themselves (with the requirement's class, which reads
        them): the same function gives the same value on the same history."""
        return self._check_keys or super().check_keys()

    def initial(self) -> View:
        return (0, None, 0, False, 1)

    def counter(self) -> Counter | None:
        """The count of the target's (counted) calls: the rules read it only as below or at
        ``min_invocations`` and ``max_invocations``."""
        if self._cap == 0:
            return None
        bounds = sorted({0, self.min_invocations, self.max_invocations or 0, self._cap})
        return Counter(
            self.target,
            frozenset(("ok",)) if self.only_success else frozenset(STATUSES),
            tuple(bounds),
            _count_of,
            _with_count,
        )

    def advance(self, view: Hashable, tool: str, status: Status) -> View:
        count, last, after, before, step = _unpack(view)
        if self.only_success and status != "ok":
            return (count, last, after, before, step)
        if tool == self.target:
            count = min(count + 1, self._cap)
        return (
            count,
            self._last.get(tool),
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
            self._last.get(last) if last is not None else None,
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
        # A target that is not allowed is not forced (SPEC §5): a hard force landing on a
        # denied target stays a hard force (the clash is a forced-conflict), but it does not
        # also keep the agent from stopping.
        prevent = count < self.min_invocations or (
            (soft or (hard and allowed)) and self.force_prevent_stop and target != FINAL_ANSWER
        )
        reason = None
        if not allowed:
            reason = self.reason if self.reason is not None else self._why_denied(view, checks)
        rule = Rule(target, allowed=allowed, forced=soft, prevent_stop=prevent, reason=reason)
        return (rule, forced(target)) if hard else (rule,)

    def _why_denied(self, view: View, checks: tuple[bool, ...]) -> str:
        """The causes of a denial, in words (when the requirement gives no ``reason``)."""
        count, last, after, before, _ = view
        t = self.target
        causes = []
        cap = self.max_invocations
        if cap == 0:
            causes.append(f"`{t}` may not be called (max 0)")
        elif cap is not None and count >= cap:
            # Counts saturate at the cap (the view cannot tell more), and a run the gate
            # guards never goes past it.
            causes.append(
                f"`{t}` already called {cap} {'time' if cap == 1 else 'times'} (max {cap})"
            )
        if not self.consecutive_allowed and last == t:
            causes.append(f"`{t}` cannot run twice in a row")
        missing = [u for u in self.only_after if not after & self._after_bit[u]]
        if missing:
            causes.append(f"needs {_listed(missing)} first")
        if before:
            causes.append(f"`{t}` only runs before {_listed(self.only_before, 'or')}")
        failed = [name for name, ok in zip(self.check_names, checks, strict=False) if not ok]
        if failed:
            causes.append(f"custom check {_listed(failed)} failed")
        return "; ".join(causes)


def _count_of(view: Hashable) -> int:
    return _unpack(view)[0]


def _with_count(view: Hashable, count: int) -> View:
    _, last, after, before, step = _unpack(view)
    return (count, last, after, before, step)


def _listed(names: Sequence[str], conjunction: str = "and") -> str:
    quoted = [f"`{n}`" for n in names]
    if len(quoted) < 3:
        return f" {conjunction} ".join(quoted)
    return f"{', '.join(quoted[:-1])} {conjunction} {quoted[-1]}"


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
        custom_checks: Sequence[CustomCheck] | CustomCheck = (),
        priority: int = DEFAULT_PRIORITY,
        enabled: bool = True,
        reason: str | None = None,
        name: str | None = None,
    ) -> None:
        early_owner = _validate.owner_of(name if isinstance(name, str) else "conditional")
        target_refs = as_refs(target, owner=early_owner, parameter="target", tags=True)
        if len(target_refs) != 1:
            raise PolicyError(f"{early_owner}: target must be one tool", parameter="target")
        self._target_ref = target_refs[0]
        early = names_now(target_refs)
        default_name = f"conditional({early[0] if early else _class_name(self._target_ref)})"
        super().__init__(
            name=name if name is not None else default_name, priority=priority, enabled=enabled
        )
        owner = _validate.owner_of(self.name)
        self._refs = {
            "only_before": as_refs(only_before, owner=owner, parameter="only_before", tags=True),
            "only_after": as_refs(only_after, owner=owner, parameter="only_after", tags=True),
            "force_after": as_refs(force_after, owner=owner, parameter="force_after", tags=True),
        }
        self.force_at_step = _validate.optional_integer(
            force_at_step, name="force_at_step", owner=owner, least=1
        )
        self.min_invocations = _validate.integer(
            min_invocations, name="min_invocations", owner=owner
        )
        self.max_invocations = _validate.optional_integer(
            max_invocations, name="max_invocations", owner=owner
        )
        if self.max_invocations is not None and self.min_invocations > self.max_invocations:
            raise PolicyError(
                f"{owner}: min_invocations=`{self.min_invocations}` exceeds "
                f"max_invocations=`{self.max_invocations}`",
                hint="the tool could never be called often enough to let the agent stop",
                parameter="min_invocations",
            )
        self.force_prevent_stop = _validate.flag(
            force_prevent_stop, name="force_prevent_stop", owner=owner
        )
        self.only_success_invocations = _validate.flag(
            only_success_invocations, name="only_success_invocations", owner=owner
        )
        self.consecutive_allowed = _validate.flag(
            consecutive_allowed, name="consecutive_allowed", owner=owner
        )
        self.custom_checks = _validate.callables(custom_checks, name="custom_checks", owner=owner)
        self.reason = _validate.optional_text(reason, name="reason", owner=owner)
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
        owner = _validate.owner_of(self.name)
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
                    f"{owner}: {parameter} contains the target `{target}` itself",
                    hint=hint,
                    parameter=parameter,
                )
        for a, b in (("only_before", "only_after"), ("only_before", "force_after")):
            left = only_before
            right = only_after if b == "only_after" else force_after
            both = sorted(set(left) & set(right))
            if both:
                raise PolicyError(
                    f"{owner}: tool `{both[0]}` is in both {a} and {b}",
                    hint="after that tool the target could never be allowed",
                    parameter=b,
                )
        if target == FINAL_ANSWER and self.min_invocations:
            raise PolicyError(
                f"{owner}: min_invocations on `final_answer` can never be met",
                hint="the run ends when `final_answer` runs",
                parameter="min_invocations",
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
            check_names=tuple(_callable_name(c) for c in self.custom_checks),
            check_keys=tuple(("custom check", type(self), c) for c in self.custom_checks),
        )

    def bind(self, tools: Sequence[object]) -> ConditionalRequirement:
        owner = _validate.owner_of(self.name)
        tools = _validate.sequence(tools, name="tools", owner=owner)
        target = resolve(self._target_ref, tools, owner=owner, parameter="target")
        # A tag stands for the tools carrying it, in declared order, but the target itself.
        lists = {
            p: tuple(
                name
                for r in refs
                for name in resolve_all(r, tools, owner=owner, parameter=p, target=target)
            )
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
        # A copy, not a new ConditionalRequirement: a subclass stays itself (its own `run`
        # included). It refers to the tools by the names they resolved to, as the monitor
        # does, so binding it again (to these tools, by name) finds the same ones.
        bound = copy.copy(self)
        bound._target_ref = target
        bound._refs = dict(lists)
        bound._monitor = bound._build_monitor(
            target, lists["only_before"], lists["only_after"], lists["force_after"]
        )
        return bound

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


def _class_name(ref: object) -> str:
    if isinstance(ref, Tags):
        return str(ref)  # `tag:read`
    return ref.__name__ if isinstance(ref, type) else repr(ref)


def _callable_name(fn: object) -> str:
    return getattr(fn, "__name__", repr(fn))
