"""``Requirement``: reads the run state, emits rules and constraints; ``@requirement``.

Requirement objects hold no per-run state: one object may serve many runs and agents at once.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from ruleengine import _validate
from ruleengine.errors import PolicyError

if TYPE_CHECKING:
    from ruleengine.requirements.monitor import Monitor
    from ruleengine.rules import Item
    from ruleengine.state import RunState

__all__ = ["FunctionRequirement", "Requirement", "RunResult", "requirement"]

RunResult: TypeAlias = "Sequence[Item] | Awaitable[Sequence[Item]]"

DEFAULT_PRIORITY = 10


class Requirement:
    """Reads the run state each step and emits rules and constraints about tools.

    Subclass and implement ``run(state)`` (sync or async), returning a list of ``Rule`` objects
    and formulas. ``name`` defaults to the class name; ``priority`` (an int ≥ 1, default 10)
    decides forced-tool ties, reasons, and everything in priority mode.
    """

    name: str
    """How explanations and cores cite this requirement."""
    priority: int = DEFAULT_PRIORITY
    """Higher wins. At least 1."""
    enabled: bool = True
    """Disabled requirements are not run."""
    yielding: bool = False
    """A yielding requirement gives way instead of causing a conflict: when a step's clash
    involves its rules, the reasoner drops them and notes it in the explanation (the cycle
    guard yields)."""
    keeps_monitor: bool = False
    """Set on a subclass that overrides ``run`` but keeps the semantics its parent's monitor
    describes (a logging wrapper, say): its monitor is then trusted (see ``checked_monitor``).
    It counts only on the class that defines the ``run`` in use."""

    def __init__(
        self, *, name: str | None = None, priority: int | None = None, enabled: bool | None = None
    ) -> None:
        # Unset arguments fall back to class attributes, so `class Budget(Requirement):
        # name = "budget"; priority = 20` works without an __init__.
        cls = type(self)
        resolved = name if name is not None else getattr(cls, "name", cls.__name__)
        self.name = _validate.text(resolved, name="name")
        owner = _validate.owner_of(self.name)
        priority = priority if priority is not None else cls.priority
        self.priority = _validate.priority(priority, owner=owner)
        enabled = enabled if enabled is not None else cls.enabled
        self.enabled = _validate.flag(enabled, name="enabled", owner=owner)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    def run(self, state: RunState) -> RunResult:
        """The rules and constraints for the step about to be decided."""
        raise PolicyError(
            f"requirement `{self.name}` does not implement `run(state)`",
            hint="subclasses of `Requirement` must define `run(self, state)`",
        )

    def bind(self, tools: Sequence[object]) -> Requirement:
        """This requirement checked against (and resolved for) the declared ``tools``.

        Answers ``self`` or a resolved copy, never mutates: one requirement object may serve
        several agents with different tools. Raises ``PolicyError`` for unknown tools.
        """
        return self

    def monitor(self) -> Monitor | None:
        """The finite abstraction of the history this requirement reads, if it has one.

        Requirements without a monitor cannot be checked statically.
        """
        return None

    def checked_monitor(self) -> Monitor | None:
        """The monitor the static checker may trust, if any: ``monitor()``, unless the ``run``
        in use is defined below the class that defined ``monitor`` (closer to this object's
        class in its method resolution order).

        A subclass of a built-in that changes ``run`` (adds rules, denies a tool after some
        calls) would otherwise be checked as its parent: the monitor describes the parent's
        ``run``. Such a requirement is opaque to the checker (explored by running it), unless
        the class defining its ``run`` declares ``keeps_monitor = True``, or defines
        ``monitor`` too. Raises ``PolicyError`` where ``monitor()`` does (unbound).
        """
        monitor = self.monitor()
        return monitor if monitor is None or _trusts_monitor(type(self)) else None

    @property
    def statically_checkable(self) -> bool:
        """Whether the static checker can explore this requirement (it has a monitor it
        trusts: see ``checked_monitor``).

        Built-ins always can; before binding, a built-in naming tools by class reports true
        (its monitor exists once bound), unless its class overrides ``run``.
        """
        try:
            return self.checked_monitor() is not None
        except PolicyError:
            return _trusts_monitor(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, priority={self.priority})"


class FunctionRequirement(Requirement):
    """A requirement made from a function of the state by ``@requirement``."""

    def __init__(
        self,
        function: Callable[[RunState], RunResult],
        *,
        name: str | None = None,
        priority: int = DEFAULT_PRIORITY,
        enabled: bool = True,
        monitor: Monitor | None = None,
    ) -> None:
        if not callable(function):
            raise PolicyError(f"@requirement needs a function, got `{function!r}`")
        name = name if name is not None else getattr(function, "__name__", "requirement")
        # Unlike a subclass's, a decorated function's priority has no class default behind it.
        _validate.priority(priority, owner=_validate.owner_of(str(name)))
        if monitor is not None and not _is_monitor(monitor):
            raise PolicyError(
                f"requirement `{name}`: monitor=`{monitor!r}` is not a `Monitor`",
                hint="subclass `ruleengine.Monitor` (initial, advance, emit)",
            )
        super().__init__(
            name=name,
            priority=priority,
            enabled=enabled,
        )
        self.function = function
        """The function that computes the rules."""
        self.is_async = inspect.iscoroutinefunction(function)
        """Whether the function must be awaited (then use ``Reasoner.adecide``)."""
        self._monitor = monitor

    def run(self, state: RunState) -> RunResult:
        return self.function(state)

    def monitor(self) -> Monitor | None:
        """The monitor given to ``@requirement(monitor=...)``, if any."""
        return self._monitor


def _trusts_monitor(cls: type) -> bool:
    """Whether ``cls``'s ``run`` is the one its ``monitor`` describes: defined in the same
    class as ``monitor`` or above it, or below it by a class that says it keeps the monitor."""
    mro = cls.__mro__
    runs = next(i for i, k in enumerate(mro) if "run" in k.__dict__)
    monitors = next(i for i, k in enumerate(mro) if "monitor" in k.__dict__)
    return runs >= monitors or mro[runs].__dict__.get("keeps_monitor", False) is True


def _is_monitor(value: object) -> bool:
    from ruleengine.requirements.monitor import Monitor

    return isinstance(value, Monitor)


@overload
def requirement(function: Callable[[RunState], RunResult], /) -> FunctionRequirement: ...
@overload
def requirement(
    *,
    name: str | None = None,
    priority: int = DEFAULT_PRIORITY,
    enabled: bool = True,
    monitor: Monitor | None = None,
) -> Callable[[Callable[[RunState], RunResult]], FunctionRequirement]: ...


def requirement(
    function: Callable[[RunState], RunResult] | None = None,
    /,
    *,
    name: str | None = None,
    priority: int = DEFAULT_PRIORITY,
    enabled: bool = True,
    monitor: Monitor | None = None,
) -> FunctionRequirement | Callable[[Callable[[RunState], RunResult]], FunctionRequirement]:
    """Make a requirement from a function of the state (sync or async).

    Use bare (``@requirement``) or with options (``@requirement(name="x", priority=20)``).
    A ``monitor`` (see ``ruleengine.requirements.monitor``) makes it statically checkable;
    keeping it faithful to the function is then the author's job.
    """
    if function is not None:
        return FunctionRequirement(
            function, name=name, priority=priority, enabled=enabled, monitor=monitor
        )

    def decorate(fn: Callable[[RunState], RunResult]) -> FunctionRequirement:
        return FunctionRequirement(
            fn, name=name, priority=priority, enabled=enabled, monitor=monitor
        )

    return decorate
