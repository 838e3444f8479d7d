"""Reports for people: what a terminal shows of ``check``, ``diff``, ``explain`` and ``bench``.

``text_report`` writes a check's findings with their traces as numbered steps and their cores
with the ``file:line`` of each requirement; ``text_diff``, ``text_explain`` and ``text_bench``
do the same for ``diff``, ``explain`` and ``bench``; ``refusal`` and ``why_not_stop`` say why
a pass refuses a call or a stop. ``RULES`` (what each finding id means, and what to do about
it), ``Source`` (what a renderer reads of a policy) and ``step_text`` are shared with the
machine formats, which ``ruleengine.check.formats`` owns. ``Progress`` is the line a terminal
shows while a check runs. Everything here only reads results: nothing decides a pass or
searches a state.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence
from decimal import Decimal
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TextIO

from ruleengine.check.progress import Status
from ruleengine.check.report import (
    CallVerdict,
    DiffReport,
    Finding,
    FindingId,
    PassView,
    Report,
    TraceStep,
)
from ruleengine.errors import ConflictError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import CoreEntry, Pass

if TYPE_CHECKING:
    from ruleengine.check.bench import BenchResult
    from ruleengine.check.trace import Permission
    from ruleengine.policy import Location

__all__ = [
    "RULES",
    "Progress",
    "Source",
    "refusal",
    "step_text",
    "text_bench",
    "text_diff",
    "text_explain",
    "text_report",
    "why_not_stop",
]

RULES: dict[FindingId, tuple[str, str, str]] = {
    "deadlock": (
        "Deadlock",
        "A reachable state where no tool is allowed.",
        "Relax one of the clashing rules of the core, or let the agent finish in that state.",
    ),
    "forced-conflict": (
        "ForcedConflict",
        "A hard force (force_at_step) that cannot be honoured.",
        "Allow the forced tool at that step, or move or drop the force.",
    ),
    "no-finish": (
        "NoFinish",
        "A reachable state from which final_answer can never be reached.",
        "Make sure whatever blocks the final answer can still be satisfied after the trace.",
    ),
    "budget": (
        "Budget",
        "final_answer cannot be reached within max_iterations.",
        "Raise max_iterations, or ask for fewer steps before the final answer.",
    ),
    "dead-tool": (
        "DeadTool",
        "A declared tool that is allowed in no reachable state.",
        "Remove the tool, or fix the rules that never let it run (often an only_after cycle).",
    ),
    "dead-requirement": (
        "DeadRequirement",
        "A requirement that changes the pass in no reachable state.",
        "Remove the requirement, or fix it so that it says something other requirements don't.",
    ),
    "forced-tie": (
        "ForcedTie",
        "Two tools forced at equal top priority in a reachable state.",
        "Give the forcing requirements different priorities; only one tool can be forced.",
    ),
    "unsatisfiable-condition": (
        "UnsatisfiableCondition",
        "Conditions on a tool's arguments that no arguments satisfy together.",
        "Relax one of the conditions of the core: as they stand, the tool can never be called.",
    ),
    "shadowed-condition": (
        "ShadowedCondition",
        "A condition on a tool's arguments that the tool's other conditions imply.",
        "Remove the condition, or fix it: it never decides a call.",
    ),
}
"""Per finding id: its SARIF rule name, what it means, and what to do about it."""


class Source(Protocol):
    """What the renderers read of a policy: where it came from and where each requirement is
    written (``ruleengine.Policy`` has both)."""

    @property
    def source(self) -> str: ...

    def location(
        self, requirement_name: str | None = None, key: str | None = None
    ) -> Location | None: ...


# -- text: check -------------------------------------------------------------------------------


def text_report(report: Report, policy: Source | None = None) -> str:
    """A check's report as text: a header, each finding, a summary line."""
    lines = [report.policy]
    for finding in report.findings:
        lines.extend(_finding_lines(finding, policy))
    lines.append("  " + _summary(report))
    return "\n".join(lines)


RUN = 4
"""Identical steps in a row from which a text trace prints them as one line."""


def numbered(trace: Sequence[TraceStep]) -> list[str]:
    """A trace's steps as numbered lines; ``RUN`` or more identical steps in a row (a
    counter's calls) as one: ``3–100002. a (100000 times)``."""
    lines: list[str] = []
    n = 0
    while n < len(trace):
        step = trace[n]
        end = n + 1
        while end < len(trace) and trace[end] == step:
            end += 1
        if end - n >= RUN:
            lines.append(f"{n + 1}–{end}. {step_values(step)} ({end - n} times)")
        else:
            lines.extend(f"{k + 1}. {step_values(step)}" for k in range(n, end))
        n = end
    return lines


def _finding_lines(finding: Finding, policy: Source | None) -> list[str]:
    lines = [f"  {finding.severity} {finding.id}: {finding.message}"]
    if finding.id in ("deadlock", "forced-conflict", "no-finish", "forced-tie"):
        lines.append("    trace:" if finding.trace else "    trace: none, at the first step")
        lines.extend(f"      {line}" for line in numbered(finding.trace))
        if finding.input is not None:
            lines.append(f"    input: {_brief(finding.input)}")
        if finding.depends_on_tool_outputs and any(s.arguments is None for s in finding.trace):
            lines.append(
                "    example values: none found that replay (the trace may need values no run"
                " gives, such as a different input at each step)"
            )
    if finding.core:
        if _requirement_level(finding.core):
            label = "requirements it needs"
        else:
            label = {
                "forced-tie": "tied forces",
                "unsatisfiable-condition": "clashing conditions",
                "shadowed-condition": "the tool's conditions",
            }.get(finding.id, "clashing rules")
        lines.append(f"    core ({label}):")
        shown = _core_lines(finding.core[:CORE_LINES], policy)
        lines.extend("      " + line for line in shown)
        if len(finding.core) > CORE_LINES:
            rest = len(finding.core) - CORE_LINES
            lines.append(f"      … and {rest} more (`--format json` lists them all)")
    checks = (
        "yes: it needs particular answers of opaque custom checks"
        if finding.depends_on_custom_checks
        else "no"
    )
    lines.append(f"    depends on custom checks: {checks}")
    if finding.depends_on_tool_outputs:
        lines.append("    depends on tool outputs: yes: it needs particular values the run reads")
    advice = RULES[finding.id][2]
    lines.append(f"    hint: {advice[0].lower()}{advice[1:].rstrip('.')}")
    return lines


CORE_LINES = 20
"""A finding's core entries shown in text (a core cut short by the time limit may hold every
requirement of the policy); JSON and SARIF give them all."""


def _core_lines(core: Sequence[CoreEntry], policy: Source | None) -> list[str]:
    """One line per core entry: the requirement, its priority, where it is, and the rule."""
    lines = []
    for entry in core:
        where = _where(policy, entry.requirement)
        at = f" at {where}" if where else ""
        kind = _requirement_type(entry)
        if kind is not None:
            lines.append(f"- {entry.requirement} ({kind}, priority {entry.priority}){at}")
        else:
            lines.append(f"- {entry.requirement} (priority {entry.priority}){at}: {entry.rule}")
    return lines


def _requirement_type(entry: CoreEntry) -> str | None:
    """The type of a requirement-level core entry (``requirement NAME (TYPE)``), else None."""
    prefix = f"requirement {entry.requirement} ("
    if entry.rule.startswith(prefix) and entry.rule.endswith(")"):
        return entry.rule[len(prefix) : -1]
    return None


def _requirement_level(core: Sequence[CoreEntry]) -> bool:
    return all(_requirement_type(e) is not None for e in core)


def _summary(report: Report) -> str:
    errors = sum(1 for f in report.findings if f.severity == "error")
    warnings = len(report.findings) - errors
    if report.findings:
        counts = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
    else:
        counts = "no findings" if report.complete else "no findings so far"
    if report.complete:
        verdict = "complete: holds for histories of any length"
    else:
        verdict = f"incomplete ({report.reason}): not a proof"
    stats = report.stats
    return f"{counts} · {verdict} · {_states(stats.states)} · {stats.seconds:.2f} s"


def _where(policy: Source | None, requirement: str | None = None) -> str | None:
    """``file:line`` of a requirement (or of the policy), when the policy comes from a file."""
    if policy is None:
        return None
    found = policy.location(requirement)
    return None if found is None else f"{found.file}:{found.line}"


def step_text(step: TraceStep) -> str:
    """A trace step as the text formats show it: ``tool``, or ``tool (status)``."""
    return step.tool if step.status == "ok" else f"{step.tool} ({step.status})"


def steps_text(trace: Sequence[TraceStep]) -> str:
    """A trace in words on one line, ``RUN`` or more identical steps in a row as one:
    ``a × 100000, b``."""
    parts: list[str] = []
    n = 0
    while n < len(trace):
        end = n + 1
        while end < len(trace) and step_text(trace[end]) == step_text(trace[n]):
            end += 1
        text = step_text(trace[n])
        parts += [f"{text} × {end - n}"] if end - n >= RUN else [text] * (end - n)
        n = end
    return ", ".join(parts)


VALUES_WIDTH = 60
"""Characters of a step's example arguments or output shown in text (JSON gives them all)."""


def step_values(step: TraceStep) -> str:
    """A trace step with its example values, briefly: ``refund {"amount": 1} -> {"ok": 1}``."""
    shown = step_text(step)
    if step.arguments is not None:
        shown += f" {_brief(step.arguments)}"
    if step.output is not None:
        shown += f" -> {_brief(step.output)}"
    return shown


def _brief(value: object) -> str:
    """``value`` as JSON, cut at ``VALUES_WIDTH`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= VALUES_WIDTH else text[: VALUES_WIDTH - 1] + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


EXACT_STATES = 10**6
"""State counts above this are printed rounded (``~1.2e144 states``); JSON keeps them exact."""


def _states(n: int) -> str:
    """A state count for people: exact up to a million, then ``~1.2e144``. A symbolic
    engine counts states it never lists, and such counts can have hundreds of digits."""
    if n <= EXACT_STATES:
        return _count(n, "state")
    mantissa, _, exponent = f"{Decimal(n):.1e}".partition("e")  # exact for any integer
    return f"~{mantissa}e{int(exponent)} states"


# -- text: diff --------------------------------------------------------------------------------


def text_diff(report: DiffReport) -> str:
    """A diff's verdict as text: the separating trace and both passes, or the proof; and
    both budgets when they differ."""
    names = f"{report.old} and {report.new}"
    budget = report.budget
    if not report.equivalent:
        when = f"after {_count(len(report.trace), 'step')}" if report.trace else "at the first step"
        lines = [f"{names} differ {when}"]
        lines.append("  trace:" if report.trace else "  trace: none, at the first step")
        lines.extend(f"    {line}" for line in numbered(report.trace))
        if report.input is not None:
            lines.append(f"  input: {_brief(report.input)}")
        difference = report.difference or {}
        call = report.call
        if call is not None:
            lines.append(f"  call: {call.tool} {_brief(call.arguments)}")
            # Both admit it: they differ in asking, which the quiet side then says too.
            both = call.old.admitted and call.new.admitted
            for side, verdict_of in (("old", call.old), ("new", call.new)):
                lines.append(f"  {side}: {_said(verdict_of, both)}")
        else:
            for side in ("old", "new"):
                view = difference.get(side)
                lines.append(f"  {side}: {_view(view) if view is not None else '?'}")
        verdict = ""
    elif report.complete:
        found = "are equivalent" if budget is None else "differ only in their budgets"
        lines = [f"{names} {found}: no history of any length gives them different passes"]
        verdict = "complete: this is a proof · "
    else:
        found = "no difference found" if budget is None else "only their budgets differ so far"
        lines = [f"{names}: {found}"]
        verdict = f"incomplete ({report.reason}): not a proof · "
    if budget is not None:
        lines.append(f"  budget: max_iterations {budget.old} (old), {budget.new} (new)")
    stats = f"{_states(report.stats.states)} · {report.stats.seconds:.2f} s"
    lines.append(f"  {verdict}{stats}")
    return "\n".join(lines)


def _said(verdict: CallVerdict, both: bool) -> str:
    """What one policy says of a diff's witness call."""
    if not verdict.admitted:
        return f"refuses it: {verdict.reason}"
    if verdict.ask:
        return "admits it after asking: " + ", ".join(f"`{r}`" for r in verdict.ask)
    return "admits it without asking" if both else "admits it"


def _view(view: PassView) -> str:
    if view.conflict:
        return "conflict (no pass)"
    return (
        f"allowed {_names(view.allowed)} · hidden {_names(view.hidden)} · "
        f"forced {view.forced or 'none'} · can stop {'yes' if view.can_stop else 'no'}"
    )


def _names(tools: Sequence[str] | None) -> str:
    return ", ".join(tools) if tools else "none"


# -- text: explain -----------------------------------------------------------------------------


def text_explain(
    policy: Source,
    trace: Sequence[TraceStep],
    outcomes: Sequence[Pass | ConflictError],
    *,
    finish: bool = False,
    asking: Sequence[Sequence[Permission]] = (),
) -> tuple[str, bool]:
    """The pass before each step of ``trace`` and after its last, with the rules that decided
    it, as ``replay`` gives them (``outcomes``); with ``finish``, whether the run may then
    stop; under each allowed step, the ask-permission requirements it goes through
    (``asking``, per step, as ``permissions`` gives them). Also says whether the trace runs
    through: every step allowed, no conflict."""
    shown = ", ".join(step_text(s) for s in trace) or "the empty run"
    lines = [f"{policy.source}: {shown}{', final_answer' if finish else ''}"]
    for n, outcome in enumerate(outcomes):
        lines.append(_explain_label(trace, n))
        if isinstance(outcome, ConflictError):
            lines.extend(_conflict_lines(outcome, policy))
            lines.append("result: the run is stuck here: the runtime raises ConflictError")
            return "\n".join(lines), False
        lines.extend(_pass_lines(outcome, policy))
        if n < len(trace):
            refused = refusal(outcome, trace[n].tool)
            verdict = "allowed" if refused is None else f"REFUSED: {refused}"
            lines.append(f"step {n + 1}: {step_text(trace[n])}: {verdict}")
            if refused is not None:
                lines.append("result: the runtime would refuse this call")
                return "\n".join(lines), False
            if n < len(asking):
                lines.extend(_permission_line(p, policy) for p in asking[n])
        elif finish and not outcome.can_stop:
            lines.append(
                f"final_answer: REFUSED: the agent may not stop here ({why_not_stop(outcome)})"
            )
            return "\n".join(lines), False
        elif finish:
            lines.append("final_answer: allowed: the run ends")
    lines.append("result: every step was allowed")
    return "\n".join(lines), True


_ANSWERS = {
    "ask": "asks before the call runs",
    "always": "approves without asking (always_allow)",
    "approved": "approves without asking: the answer to step {step} is remembered",
    "refused": "refuses without asking: the answer to step {step} is remembered",
}


def _permission_line(permission: Permission, policy: Source) -> str:
    """An ask-permission requirement covering a step: who, where, and what it does."""
    where = _where(policy, permission.requirement)
    at = f" at {where}" if where else ""
    answer = _ANSWERS[permission.answer].format(step=permission.remembered_from)
    return f"  permission: {permission.requirement} (priority {permission.priority}){at}: {answer}"


def why_not_stop(decided: Pass) -> str:
    """Which requirements keep ``decided`` from letting the agent stop (``prevented by
    `a`, `b```, or ``no rule allows it``)."""
    decision = decided.explanation.tools.get(FINAL_ANSWER)
    names = sorted({e.requirement for e in decision.decided_by}) if decision else []
    if not names:
        return "no rule allows it"
    return "prevented by " + ", ".join(f"`{n}`" for n in names)


def _explain_label(trace: Sequence[TraceStep], n: int) -> str:
    """The heading of the decision before step ``n + 1``."""
    if n == 0:
        return "before step 1 (no calls yet)"
    end = " (the end of the trace)" if n == len(trace) else ""
    return f"after step {n}{end}: " + ", ".join(step_text(s) for s in trace[:n])


def _pass_lines(decided: Pass, policy: Source) -> list[str]:
    lines = [
        f"  allowed: {_names(decided.allowed)}",
        f"  hidden: {_names(decided.hidden)}",
        f"  forced: {decided.forced or 'none'} · can stop: {'yes' if decided.can_stop else 'no'}"
        f" · tool_choice: {decided.tool_choice}",
    ]
    if decided.reasons:
        lines.append("  reasons:")
        lines.extend(f"    {tool}: {text}" for tool, text in decided.reasons.items())
    explanation = decided.explanation
    lines.append("  decided by:")
    for tool, decision in explanation.tools.items():
        by = "" if decision.decided_by else " (no rule)"
        lines.append(f"    {tool}: {decision.status}{by}")
        lines.extend("      " + line for line in _core_lines(decision.decided_by, policy))
        for line in _core_lines(decision.overridden, policy):
            lines.append(f"      overridden {line}")
    lines.extend(f"  yielded {line}" for line in _core_lines(explanation.yielded, policy))
    lines.extend(f"  note: {note}" for note in explanation.notes)
    return lines


def _conflict_lines(error: ConflictError, policy: Source) -> list[str]:
    lines = [f"  conflict ({error.kind}): {error.message}", "  core:"]
    lines.extend("    " + line for line in _core_lines(error.core, policy))
    if error.hint:
        lines.append(f"  hint: {error.hint}")
    return lines


def refusal(decided: Pass, tool: str) -> str | None:
    """Why ``decided`` does not let ``tool`` run, or None when it does (as ``explain`` says
    it after ``REFUSED:``)."""
    if tool in decided.allowed:
        return None
    status = decided.explanation.tools.get(tool)
    if status is not None and status.status == "excluded":
        return f"`{decided.forced}` is forced"
    what = "hidden" if tool in decided.hidden else "not allowed"
    reason = decided.reasons.get(tool)
    return f"`{tool}` is {what} here" + (f" ({reason})" if reason else "")


# -- text: bench -------------------------------------------------------------------------------


_ENDINGS = {
    "steps": "at the step limit",
    "finish": "with only final_answer left",
    "conflict": "in a conflict",
}


def text_bench(result: BenchResult) -> str:
    """A bench's measurements as text."""
    ended = ", ".join(f"{n} {_ENDINGS[why]}" for why, n in result.ended.items() if n)
    return "\n".join(
        [
            f"{result.policy}: {_count(result.walks, 'walk')} of at most "
            f"{_count(result.steps, 'step')}, {_count(result.decisions, 'decision')} "
            f"(seed {result.seed})",
            f"  decision time: p50 {result.p50_us:.1f} µs · p99 {result.p99_us:.1f} µs · "
            f"max {result.max_us:.1f} µs · first (cold) {result.first_us:.1f} µs",
            f"  cache hit rate: {result.cache_hit_rate:.1%}",
            f"  solver checks per decision: {result.solver_checks_per_decision:.3f}",
            f"  walks ended: {ended}",
        ]
    )


# -- progress ----------------------------------------------------------------------------------


class Progress:
    """A line on a terminal while something long runs: shown after ``after`` seconds,
    refreshed every ``every`` seconds, erased at the end; nothing at all when ``stream`` is
    not a terminal (a pipe, a file, a CI log). It shows ``status`` (the phase, states,
    layers, findings so far) when the work reports it: ``update`` is a sink for it."""

    def __init__(
        self, label: str, stream: TextIO | None = None, *, after: float = 1.0, every: float = 0.5
    ) -> None:
        self.label = label
        self.status: Status | None = None
        """Where the work is (set from another thread: a supervisor's progress)."""
        self.stream: TextIO = sys.stderr if stream is None else stream
        self.after = after
        self.every = every
        self.shown = False
        """Whether the line was ever written."""
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def update(self, status: Status) -> None:
        """Where the work is now (shown at the next refresh)."""
        self.status = status

    def __enter__(self) -> Progress:
        if _is_terminal(self.stream):
            self._thread = threading.Thread(target=self._run, name="ruleengine-progress")
            self._thread.daemon = True
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _run(self) -> None:
        started = time.monotonic()
        if self._done.wait(self.after):
            return
        while not self._done.is_set():
            elapsed = time.monotonic() - started
            status = self.status
            detail = f" · {status.line()}" if status is not None else ""
            self.stream.write(f"\r\x1b[Kruleengine: {self.label}… {elapsed:.0f} s{detail}")
            self.stream.flush()
            self.shown = True
            self._done.wait(self.every)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
