"""What a check returns: findings, their traces and cores, as models whose JSON is SPEC §10's.

``Report.model_dump(mode="json")`` is exactly the object ``ruleengine check --format json``
prints; ``DiffReport`` likewise for ``ruleengine diff``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_serializer

from ruleengine import _validate
from ruleengine._model import ResultModel
from ruleengine.passes import CoreEntry
from ruleengine.state import Status

__all__ = [
    "FINDING_IDS",
    "SEVERITY",
    "Budgets",
    "CallVerdict",
    "CallWitness",
    "DiffReport",
    "Finding",
    "FindingId",
    "PassView",
    "Report",
    "Severity",
    "Stats",
    "TraceStep",
]

FindingId = Literal[
    "deadlock",
    "forced-conflict",
    "no-finish",
    "budget",
    "dead-tool",
    "dead-requirement",
    "forced-tie",
    "unsatisfiable-condition",
    "shadowed-condition",
]
FINDING_IDS: tuple[FindingId, ...] = (
    "deadlock",
    "forced-conflict",
    "no-finish",
    "budget",
    "dead-tool",
    "dead-requirement",
    "forced-tie",
    "unsatisfiable-condition",
    "shadowed-condition",
)
"""Every finding, in the order reports list them."""

Severity = Literal["error", "warning"]
SEVERITY: dict[FindingId, Severity] = {
    "deadlock": "error",
    "forced-conflict": "error",
    "no-finish": "error",
    "budget": "error",
    "dead-tool": "warning",
    "dead-requirement": "warning",
    "forced-tie": "warning",
    "unsatisfiable-condition": "error",
    "shadowed-condition": "warning",
}
"""SPEC §8: errors break a policy; warnings point at rules that do nothing or tie."""


class TraceStep(ResultModel):
    """One step of a trace: a tool call and how it ended, and, when the policy has
    conditions on arguments, the arguments of the call and what it returned."""

    tool: str
    status: Status = "ok"
    arguments: dict[str, Any] | None = None
    """Example arguments the call is admitted with at this step (a Z3 model of the tool's
    conditions there); in reports only when given: on every step of a finding's trace when
    the policy has conditions on arguments."""
    output: Any = None
    """An example of what the call returned (JSON), on a successful step of a tool whose
    output conditions read; in reports only when given."""

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("arguments", "output"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    def __hash__(self) -> int:
        # The arguments are a dict: equal steps have equal tools and statuses.
        return hash((self.tool, self.status))

    def entry(self) -> dict[str, Any]:
        """The step as ``RunState.from_trace`` takes it (with its values, when given)."""
        out: dict[str, Any] = {"tool": self.tool, "status": self.status}
        if self.arguments is not None:
            out["arguments"] = self.arguments
        if self.output is not None:
            out["output"] = self.output
        return out

    def __str__(self) -> str:
        return self.tool if self.status == "ok" else f"{self.tool}:{self.status}"


class Finding(ResultModel):
    """One thing wrong with a policy, with the shortest history that shows it."""

    id: FindingId
    """What kind of finding (SPEC §8)."""
    severity: Severity
    tool: str | None = None
    """The tool, for ``dead-tool``, ``forced-conflict`` and the condition findings."""
    requirement: str | None = None
    """The requirement, for ``dead-requirement`` and ``shadowed-condition``."""
    message: str
    """What is wrong, in one line."""
    trace: tuple[TraceStep, ...] = ()
    """A shortest history reaching the finding (before the failing step); empty for
    ``budget``, ``dead-tool`` and ``dead-requirement``."""
    core: tuple[CoreEntry, ...] = ()
    """The clashing rules (deadlock, forced-conflict, forced-tie), or the requirements the
    finding needs (the others: ``rule`` reads ``requirement NAME (TYPE)``)."""
    depends_on_custom_checks: bool = False
    """Whether the finding needs particular values of opaque custom checks."""
    depends_on_tool_outputs: bool = False
    """Whether the finding needs particular values of the run (tool outputs, arguments of
    earlier calls, the input) that conditions on arguments read; in reports only when true."""
    min_steps: int | None = None
    """``budget`` only: the least number of steps before ``final_answer`` (None: never)."""
    input: str | None = None
    """An example of the run's input (the user's prompt) the trace needs, when conditions
    read ``input``; in reports only when given."""

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.id != "budget":
            data.pop("min_steps", None)
        if self.input is None:
            data.pop("input", None)
        if not self.depends_on_tool_outputs:
            data.pop("depends_on_tool_outputs", None)
        return data


class Stats(ResultModel):
    """How much the check explored."""

    states: int
    seconds: float


class Report(ResultModel):
    """The findings of one policy (``ruleengine check``)."""

    policy: str
    """Where the policy came from: a file path, ``module:attr``, or ``<python>``."""
    complete: bool
    """True when the verdicts hold for histories of every length."""
    findings: tuple[Finding, ...] = ()
    stats: Stats
    reason: str | None = None
    """Why the check is incomplete (only present when ``complete`` is false)."""
    undecided: tuple[str, ...] = ()
    """Of an incomplete check that decided its verdicts one by one, those it left
    undecided: ``deadlock``, ``forced-tie``, ``budget``, ``no-finish``,
    ``forced-conflict:TOOL``, ``dead-tool:TOOL``, ``dead-requirement:NAME``; every other
    verdict was decided, and the findings hold them (present only when not empty)."""

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("reason") is None:
            data.pop("reason", None)
        if not data.get("undecided"):
            data.pop("undecided", None)
        return data

    def at_or_above(self, severity: Severity) -> tuple[Finding, ...]:
        """The findings of ``severity`` or worse (``warning`` includes errors)."""
        _validate.one_of(severity, ("error", "warning"), name="severity")
        if severity == "warning":
            return self.findings
        return tuple(f for f in self.findings if f.severity == "error")


class PassView(ResultModel):
    """A pass as ``diff`` compares it (reasons and cores do not count), or a conflict."""

    conflict: bool
    allowed: tuple[str, ...] | None = None
    hidden: tuple[str, ...] | None = None
    forced: str | None = None
    can_stop: bool | None = None

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.conflict:
            return {"conflict": True}
        return data


class Budgets(ResultModel):
    """The ``max_iterations`` of the two policies a diff compares, when they differ."""

    old: int
    new: int


class CallVerdict(ResultModel):
    """What one policy says of a call (``Pass.admits``)."""

    admitted: bool
    reason: str | None = None
    """Why it refuses the call (None when admitted)."""
    ask: tuple[str, ...] = ()
    """The requirements whose ``ask_if`` holds for the admitted call: it asks for permission
    before the call runs (``Admission.ask``); in reports only when some do."""

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.ask:
            data.pop("ask", None)
        return data


class CallWitness(ResultModel):
    """A call two policies decide differently after a ``diff``'s trace: one admits it and the
    other refuses it, or both admit it and only one asks first (``ask_if``)."""

    tool: str
    arguments: dict[str, Any]
    old: CallVerdict
    new: CallVerdict


class DiffReport(ResultModel):
    """Whether two policies ever give different passes (``ruleengine diff``), and whether
    their budgets differ."""

    old: str
    new: str
    equivalent: bool
    complete: bool
    trace: tuple[TraceStep, ...] = ()
    """A shortest history after which the passes differ (empty when equivalent)."""
    difference: dict[str, PassView] | None = None
    """``{"old": …, "new": …}``: the two passes after ``trace``; None when equivalent."""
    stats: Stats
    reason: str | None = None
    """Why the comparison is incomplete (only present when ``complete`` is false)."""
    budget: Budgets | None = None
    """The two ``max_iterations``, only when they differ (``diff_policies``; ``diff`` compares
    passes alone). ``equivalent`` is about passes: equivalent policies may differ here."""
    call: CallWitness | None = None
    """When the passes after ``trace`` agree but the policies' conditions on arguments do
    not: a call one admits and the other refuses, or one both admit and only one asks about
    (only present then)."""
    input: str | None = None
    """The run's input the trace and the call need (only present then)."""

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("reason", "budget", "call", "input"):
            if data.get(key) is None:
                data.pop(key, None)
        return data
