"""``AskPermissionRequirement``: a human (or any handler) approves tool calls (SPEC §5).

The requirement is configuration and memory, not the asking: it says which tools are covered
(``covers``), holds the handler and its options (``timeout``, ``always_allow``), and reads the
answers a run remembers from its steps (``remembered``, ``run``). The agent asks: a blocking
listener on the tool's start event (``agent.permission``) calls the handler before a covered
tool runs. A refusal, a handler that raises, or one that times out is a denial (fail closed);
the agent records a ``denied`` step and the tool does not run. ``final_answer`` is never asked
about.

With ``remember_choices`` the first step of a covered tool decides for the rest of the run:
``denied`` is a remembered refusal, ``ok``/``error`` a remembered approval. Remembered answers
are read from the run's steps, never stored on the requirement, so one object can serve any
number of concurrent runs. They become rules: a refusal ``Rule(t, allowed=False,
hidden=hide_disallowed)``, an approval ``Rule(t, allowed=True)``.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any

from ruleengine import _validate
from ruleengine._tags import Tags
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.requirements._targets import as_refs, name_now, names_now, resolve_all
from ruleengine.requirements.base import DEFAULT_PRIORITY, Requirement
from ruleengine.requirements.monitor import Monitor
from ruleengine.rules import Item, Rule
from ruleengine.state import RunState, Status

__all__ = ["AskPermissionRequirement", "PermissionHandler", "PermissionMonitor"]

PermissionHandler = Callable[[str, Mapping[str, Any]], "bool | Awaitable[bool]"]
"""``handler(tool_name, arguments)`` answers whether the call may run (sync or async)."""

UNDECIDED, APPROVED, REFUSED = 0, 1, 2
INCLUDE, EXCLUDE = "include", "exclude"


class PermissionMonitor(Monitor):
    """The view: per covered tool, undecided / approved / refused (only when remembering)."""

    def __init__(self, covered: tuple[str, ...], *, remember: bool, hide: bool) -> None:
        self.covered = covered
        self.remember = remember
        self.hide = hide
        self._index = {t: i for i, t in enumerate(covered)}
        self._memo: dict[tuple[int, ...], tuple[Item, ...]] = {}

    def tools(self) -> frozenset[str]:
        return frozenset(self.covered)

    def factors(self) -> tuple[PermissionMonitor, ...] | None:
        # Each covered tool's remembered answer is read and written alone: one factor each.
        if not self.remember or len(self.covered) < 2:
            return None
        return tuple(PermissionMonitor((t,), remember=True, hide=self.hide) for t in self.covered)

    def initial(self) -> tuple[int, ...]:
        return (UNDECIDED,) * len(self.covered) if self.remember else ()

    def advance(self, view: Hashable, tool: str, status: Status) -> tuple[int, ...]:
        assert isinstance(view, tuple)
        i = self._index.get(tool)
        if not self.remember or i is None or view[i] != UNDECIDED:
            return view
        decided = REFUSED if status == "denied" else APPROVED
        return (*view[:i], decided, *view[i + 1 :])

    def view_of(self, state: RunState) -> tuple[int, ...]:
        if not self.remember:
            return ()
        first = state.summary().first_status
        return tuple(
            UNDECIDED
            if (status := first.get(t)) is None
            else REFUSED
            if status == "denied"
            else APPROVED
            for t in self.covered
        )

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> tuple[Item, ...]:
        assert isinstance(view, tuple)
        if not self.remember:
            return ()
        found = self._memo.get(view)
        if found is None:
            rules: list[Item] = []
            for t, decided in zip(self.covered, view, strict=True):
                if decided == REFUSED:
                    rules.append(
                        Rule(t, allowed=False, hidden=self.hide, reason=f"the user refused `{t}`")
                    )
                elif decided == APPROVED:
                    rules.append(Rule(t, allowed=True))
            found = tuple(rules)
            self._memo[view] = found
        return found


class AskPermissionRequirement(Requirement):
    """Ask a handler before covered tools run; optionally remember the answers per run.

    ``include`` (default: every tool but ``final_answer``) minus ``exclude`` are covered.
    ``always_allow=True`` approves every call without asking (asking switched off, the
    requirement kept in place). ``timeout`` bounds a handler's answer, in seconds.
    """

    def __init__(
        self,
        include: object = None,
        exclude: object = None,
        handler: PermissionHandler | None = None,
        *,
        remember_choices: bool = False,
        hide_disallowed: bool = False,
        always_allow: bool = False,
        timeout: float | None = None,
        priority: int = DEFAULT_PRIORITY,
        enabled: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__(
            name=name if name is not None else "ask-permission", priority=priority, enabled=enabled
        )
        owner = _validate.owner_of(self.name)
        self._include = as_refs(include, owner=owner, parameter="include", tags=True)
        self._exclude = as_refs(exclude, owner=owner, parameter="exclude", tags=True)
        if handler is not None and not callable(handler):
            raise PolicyError(
                f"{owner}: handler=`{handler!r}` is not callable", parameter="handler"
            )
        self.handler: PermissionHandler | None = handler
        """Answers whether a call may run; ``None``: the agent's default, a terminal prompt."""
        _validate.flag(remember_choices, name="remember_choices", owner=owner)
        _validate.flag(hide_disallowed, name="hide_disallowed", owner=owner)
        _validate.flag(always_allow, name="always_allow", owner=owner)
        if timeout is not None:
            _validate.number(timeout, name="timeout", owner=owner)
        self.remember_choices = remember_choices
        self.hide_disallowed = hide_disallowed
        self.always_allow = always_allow
        self.timeout = timeout
        included = names_now(self._include)
        excluded = names_now(self._exclude)
        self._covered: tuple[str, ...] | None = None
        if included and excluded is not None:
            self._covered = _covered(included, excluded)
        # Before binding, what is known by name already decides `covers` (classes need tools).
        self._included_now = frozenset(n for r in self._include if (n := name_now(r)))
        self._excluded_now = frozenset(n for r in self._exclude if (n := name_now(r)))
        self._monitor: PermissionMonitor | None = None
        if self._covered is not None:
            self._monitor = self._make_monitor(self._covered)

    def _make_monitor(self, covered: tuple[str, ...]) -> PermissionMonitor:
        return PermissionMonitor(covered, remember=self.remember_choices, hide=self.hide_disallowed)

    def bind(self, tools: Sequence[object]) -> AskPermissionRequirement:
        owner = _validate.owner_of(self.name)
        tools = _validate.sequence(tools, name="tools", owner=owner)
        include = [
            n for r in self._include for n in resolve_all(r, tools, owner=owner, parameter=INCLUDE)
        ]
        exclude = [
            n for r in self._exclude for n in resolve_all(r, tools, owner=owner, parameter=EXCLUDE)
        ]
        tagged = any(isinstance(r, Tags) for r in (*self._include, *self._exclude))
        if not include:
            include = [n for n in (_name(t) for t in tools) if n != FINAL_ANSWER]
        covered = _covered(tuple(include), tuple(exclude))
        if covered == self._covered:
            return self
        # A copy keeps the original include/exclude, so binding again to the same tools
        # gives the same coverage (an empty one included) and returns the bound copy itself.
        bound = copy.copy(self)
        if tagged:
            # Tags resolved to names, so that binding again to the tools by name (a policy's
            # reasoner, the checker) finds the same ones.
            bound._include = tuple(include) if self._include else ()
            bound._exclude = tuple(exclude)
            bound._included_now = frozenset(include if self._include else ())
            bound._excluded_now = frozenset(exclude)
        bound._covered = covered
        bound._monitor = bound._make_monitor(covered)
        return bound

    def covers(self, tool: str) -> bool:
        """Whether calls of ``tool`` are asked about."""
        if tool == FINAL_ANSWER:
            return False
        if self._covered is not None:
            return tool in self._covered
        if self._include and tool not in self._included_now:
            return False
        return tool not in self._excluded_now

    def monitor(self) -> PermissionMonitor:
        if self._monitor is None:
            raise PolicyError(
                f"requirement `{self.name}` covers every tool: bind it to the declared tools",
                hint="the reasoner and the agent bind requirements for you",
            )
        return self._monitor

    def run(self, state: RunState) -> tuple[Item, ...]:
        if not self.remember_choices:
            return ()
        monitor = self.monitor()
        return monitor.emit(monitor.view_of(state))

    def remembered(self, tool: str, state: RunState) -> bool | None:
        """The remembered answer for ``tool`` in this run, if any."""
        if not self.remember_choices or not self.covers(tool):
            return None
        status = state.summary().first_status.get(tool)
        if status is None:
            return None
        return status != "denied"


def _covered(include: tuple[str, ...], exclude: tuple[str, ...]) -> tuple[str, ...]:
    dropped = set(exclude) | {FINAL_ANSWER}
    return tuple(t for t in dict.fromkeys(include) if t not in dropped)


def _name(tool: object) -> str:
    name = tool if isinstance(tool, str) else getattr(tool, "name", None)
    if not isinstance(name, str):
        raise PolicyError(f"`{tool!r}` is not a tool")
    return name
