"""The public results of a decision: ``Pass`` (the step's permit), ``Explanation``, cores."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    computed_field,
    field_serializer,
)

from ruleengine._base_errors import PolicyError
from ruleengine._model import ResultModel
from ruleengine.conditions.admission import Admission, ArgCheck, admit

__all__ = ["CoreEntry", "Explanation", "ForcedTie", "LazyMapping", "Mode", "Pass", "ToolDecision"]

Mode = Literal["strict", "priority"]
"""How a reasoner resolves rules: ``strict`` (deny wins) or ``priority`` (soft by priority)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class LazyMapping(Mapping[str, str]):
    """A read-only mapping computed on first use (a pass's reasons, most of them never read)."""

    __slots__ = ("_compute", "_value")

    def __init__(self, compute: Callable[[], Mapping[str, str]]) -> None:
        self._compute: Callable[[], Mapping[str, str]] | None = compute
        self._value: Mapping[str, str] | None = None

    def _get(self) -> Mapping[str, str]:
        value = self._value
        if value is None:
            compute = self._compute
            assert compute is not None
            value = self._value = compute()
            self._compute = None
        return value

    def __getitem__(self, key: str) -> str:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(dict(self._get()))


class CoreEntry(ResultModel):
    """One emitted rule or constraint, as cited by a core or an explanation."""

    model_config = _FROZEN

    requirement: str
    """The name of the requirement that emitted it."""
    priority: int
    """That requirement's priority."""
    rule: str
    """A readable rendering, e.g. ``Rule('send_email', allowed=False)``."""
    item: Any = Field(default=None, exclude=True, repr=False)
    """The emitted object itself (a ``Rule`` or a formula); not serialised."""

    def __str__(self) -> str:
        return f"`{self.requirement}` (priority {self.priority}): {self.rule}"

    def __getitem__(self, key: str) -> str | int:
        """``entry["requirement"]``, ``entry["priority"]``, ``entry["rule"]``: the record
        SPEC §10 writes as ``{requirement, priority, rule}``, read like the JSON it becomes."""
        if key == "requirement":
            return self.requirement
        if key == "priority":
            return self.priority
        if key == "rule":
            return self.rule
        raise KeyError(key)


class ToolDecision(ResultModel):
    """How one tool came out of a decision, and which emitted items decided it."""

    model_config = _FROZEN

    status: Literal["forced", "allowed", "excluded", "denied", "hidden"]
    """The tool's fate at this step; ``excluded``: allowed by the rules, but another tool is
    forced (the forced projection keeps only the forced tool and ``final_answer``)."""
    decided_by: tuple[CoreEntry, ...] = ()
    """The kept rules and constraints that mention the tool (highest priority first)."""
    overridden: tuple[CoreEntry, ...] = ()
    """Priority mode: rules about the tool that were overridden by higher priorities."""


class ForcedTie(ResultModel):
    """Soft forces on two or more allowed tools at the same top priority (SPEC §4.4).

    The tie is broken by declared order: ``tools[0]`` is the step's forced tool (unless a hard
    force decided the step, in which case there is no tie to break).
    """

    model_config = _FROZEN

    priority: int
    """The priority of the tied forcing rules."""
    tools: tuple[str, ...]
    """The tied tools, in declared order; the first one won."""
    rules: tuple[CoreEntry, ...]
    """The forcing rules at that priority on the tied tools (highest priority first, then by
    requirement name)."""


class Explanation(ResultModel):
    """Why the pass is what it is: per tool, the deciding rules; overridden rules; notes."""

    model_config = _FROZEN

    mode: Mode
    """The resolution mode that produced the pass."""
    tools: Mapping[str, ToolDecision]
    """Every declared tool, in declared order (read-only)."""

    @field_serializer("tools")
    def _tools_as_dict(self, tools: Mapping[str, ToolDecision]) -> dict[str, ToolDecision]:
        return dict(tools)

    overridden: tuple[CoreEntry, ...] = ()
    """Priority mode: every overridden rule or constraint (dropped, not applied)."""
    notes: tuple[str, ...] = ()
    """Remarks: forced ties broken by declared order, soft forces dropped, yielded rules."""
    yielded: tuple[CoreEntry, ...] = ()
    """Items of yielding requirements (the cycle guard) dropped to avoid a conflict."""
    forced_tie: ForcedTie | None = None
    """The soft-force tie broken by declared order at this step, if any."""

    def __str__(self) -> str:
        lines = []
        for tool, decision in self.tools.items():
            by = "; ".join(str(e) for e in decision.decided_by) or "no rule"
            lines.append(f"{tool}: {decision.status} ({by})")
            lines.extend(f"  overridden: {e}" for e in decision.overridden)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


_NO_CONDITIONS_DEFAULT: Mapping[str, str] = {}


def _no_explanation() -> Explanation:
    return Explanation(mode="strict", tools={})


class Pass(ResultModel):
    """The step's permit: which tools the model may call, which one is forced, may it stop."""

    model_config = _FROZEN

    allowed: tuple[str, ...]
    """The tools that may be called, in declared order (``final_answer`` last when allowed)."""
    hidden: tuple[str, ...]
    """The tools hidden from the model: not in the prompt nor in its tool list."""
    forced: str | None
    """The tool the model must call this step, if any."""
    can_stop: bool
    """Whether ``final_answer`` is allowed (the agent may finish at this step)."""
    tool_choice: str
    """``"auto"``, ``"required"``, or the name of the one tool the model must call."""
    reasons: Mapping[str, str] = {}
    """Per tool, the reason of the highest-priority rule about it that gave one (read-only)."""
    conditions: Mapping[str, str] = {}
    """Per allowed tool with conditions on its arguments, what a call must meet at this step,
    as text with the run's values substituted (``arg.amount <= 42.5``); ``admits`` tests a
    call."""

    @field_serializer("conditions")
    def _conditions_as_dict(self, conditions: Mapping[str, str]) -> dict[str, str]:
        return dict(conditions)

    @field_serializer("reasons")
    def _reasons_as_dict(self, reasons: Mapping[str, str]) -> dict[str, str]:
        return dict(reasons)

    _explain: Callable[[], Explanation] | None = PrivateAttr(default=None)
    _tie: Callable[[], ForcedTie | None] | None = PrivateAttr(default=None)
    _checks: Mapping[str, tuple[tuple[str, ArgCheck], ...]] = PrivateAttr(default_factory=dict)

    def admits(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Admission:
        """Whether a call of ``tool`` with ``arguments`` may run at this step: the tool is
        allowed and the call meets every condition on it. A refused call's ``core`` lists
        the conditions it violates; ``ask`` the requirements whose ``ask_if`` holds (the call
        needs permission)."""
        if not isinstance(tool, str):
            raise PolicyError(f"admits: tool=`{tool!r:.60}` must be a tool name")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise PolicyError(f"admits: arguments=`{arguments!r:.60}` must be a mapping")
        if tool not in self.allowed:
            why = self.reasons.get(tool)
            return Admission(False, why or f"`{tool}` is not allowed at this step")
        checks = self._checks.get(tool)
        if not checks:
            return _ADMITTED
        violations, asking = admit(checks, arguments)
        if violations:
            reasons = dict.fromkeys(
                c.reason for r, c in checks for v in violations if r == v.requirement and c.reason
            )
            detail = "; ".join(str(v) for v in violations)
            reason = f"{'; '.join(reasons)} ({detail})" if reasons else detail
            return Admission(False, reason, violations)
        return Admission(True, ask=asking)

    def argument_checks(self, tool: str) -> tuple[ArgCheck, ...]:
        """The checks on the arguments of ``tool`` at this step (its conditions with the run's
        values bound), for tools that want to say them in their own terms: a narrowed JSON
        schema (``ruleengine.conditions.narrow``), a form."""
        if not isinstance(tool, str):
            raise PolicyError(f"argument_checks: tool=`{tool!r:.60}` must be a tool name")
        return tuple(check for _, check in self._checks.get(tool, ()))

    def _conditioned(
        self,
        conditions: Mapping[str, str],
        checks: Mapping[str, tuple[tuple[str, ArgCheck], ...]],
    ) -> Pass:
        """This pass with the conditions of its allowed tools (the reasoner's, once per
        decision)."""
        explain = self._explain
        out = Pass._trusted(
            self.allowed,
            self.hidden,
            self.forced,
            self.can_stop,
            self.tool_choice,
            self.reasons,
            explain if explain is not None else _no_explanation,
            self._tie,
            conditions=dict(conditions),
        )
        out._checks = checks
        return out

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def explanation(self) -> Explanation:
        """Which rules decided each tool (computed on first access)."""
        if self._explain is None:
            return Explanation(mode="strict", tools={})
        return self._explain()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pass):
            return NotImplemented
        return (
            self.allowed == other.allowed
            and self.hidden == other.hidden
            and self.forced == other.forced
            and self.can_stop == other.can_stop
            and self.tool_choice == other.tool_choice
            and dict(self.reasons) == dict(other.reasons)
            and dict(self.conditions) == dict(other.conditions)
        )

    def __hash__(self) -> int:
        return hash((self.allowed, self.hidden, self.forced, self.can_stop, self.tool_choice))

    def is_allowed(self, tool: str) -> bool:
        """Whether ``tool`` may be called at this step."""
        return tool in self.allowed

    @property
    def forced_tie(self) -> ForcedTie | None:
        """``explanation.forced_tie`` without building the rest of the explanation (the
        static checker reads it at every state)."""
        if self._tie is None:
            return None
        return self._tie()

    @classmethod
    def _trusted(
        cls,
        allowed: tuple[str, ...],
        hidden: tuple[str, ...],
        forced: str | None,
        can_stop: bool,
        tool_choice: str,
        reasons: Mapping[str, str],
        explain: Callable[[], Explanation],
        tie: Callable[[], ForcedTie | None] | None = None,
        *,
        conditions: Mapping[str, str] = _NO_CONDITIONS_DEFAULT,
    ) -> Pass:
        """A pass from values that are right by construction (the aggregator's), unvalidated.

        The same object ``model_construct`` builds, at a fraction of its cost (the per-step
        decision builds one per cache miss): every field set, no extras, ``explain`` and
        ``tie`` as the private explainers. This is the one place that writes pydantic's
        instance layout; at import the layout is compared with ``model_construct``'s, and if
        a pydantic release changed it, ``model_construct`` is used instead
        (``_TRUSTED_LAYOUT``).
        """
        values: dict[str, Any] = {
            "allowed": allowed,
            "hidden": hidden,
            "forced": forced,
            "can_stop": can_stop,
            "tool_choice": tool_choice,
            # Read-only (cached passes are shared by every caller), computed when read.
            "reasons": reasons,
            "conditions": conditions,
        }
        if not _TRUSTED_LAYOUT:
            p = cls.model_construct(**values)
            p._explain = explain
            p._tie = tie
            return p
        p = cls.__new__(cls)
        setter = object.__setattr__
        setter(p, "__dict__", values)
        setter(p, "__pydantic_fields_set__", _PASS_FIELDS)
        setter(p, "__pydantic_extra__", None)
        setter(
            p,
            "__pydantic_private__",
            {"_explain": explain, "_tie": tie, "_checks": {}},
        )
        return p


_NO_CONDITIONS = _NO_CONDITIONS_DEFAULT
_PASS_FIELDS = frozenset(Pass.model_fields)
_ADMITTED = Admission(True)


def _layout_matches() -> bool:
    """Whether ``Pass._trusted``'s direct writes build what ``model_construct`` builds."""
    sample: dict[str, Any] = {
        "allowed": ("a",),
        "hidden": (),
        "forced": None,
        "can_stop": False,
        "tool_choice": "a",
        "reasons": {},
        "conditions": _NO_CONDITIONS,
    }
    try:
        reference = Pass.model_construct(**sample)
        reference._explain = None
        reference._tie = None
        reference._checks = {}
        slots = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__")
        expected = {a: getattr(reference, a) for a in slots}
        expected["__pydantic_private__"] = reference.__pydantic_private__
        probe = Pass.__new__(Pass)
        setter = object.__setattr__
        setter(probe, "__dict__", dict(sample))
        setter(probe, "__pydantic_fields_set__", _PASS_FIELDS)
        setter(probe, "__pydantic_extra__", None)
        setter(
            probe,
            "__pydantic_private__",
            {"_explain": None, "_tie": None, "_checks": {}},
        )
        got = {a: getattr(probe, a) for a in (*slots, "__pydantic_private__")}
        return got == expected and probe == reference and probe.allowed == ("a",)
    except Exception:
        return False


_TRUSTED_LAYOUT = _layout_matches()
"""Whether ``Pass._trusted`` may write the instance layout directly (checked at import)."""
