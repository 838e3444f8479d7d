"""Reports for people, editors, CI and code-scanning services (JSON is the models' dump).

``text_report`` writes a check's findings with their traces as numbered steps and their cores
with the ``file:line`` of each requirement; ``sarif_log`` writes SARIF 2.1.0 with locations in
the policy files; ``concise_report`` one ``file:line:col: severity: message [id]`` line per
finding, for editors; ``github_report`` the same as GitHub workflow annotations. ``Unchecked``
is a policy that could not be loaded or checked, which every machine format reports in its
own way; ``CheckOutput`` writes a ``check``'s results in the format asked for. ``text_diff``,
``text_explain``, ``json_explain`` and ``text_bench`` do the same for ``diff``, ``explain``
and ``bench``. ``Progress`` is the line a terminal shows while a check runs. Everything here
only reads results: nothing decides a pass or searches a state.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib import metadata
from pathlib import Path, PurePath
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from ruleengine.check.progress import Status
from ruleengine.check.report import (
    FINDING_IDS,
    SEVERITY,
    DiffReport,
    Finding,
    FindingId,
    PassView,
    Report,
    TraceStep,
)
from ruleengine.errors import ConflictError, PolicyError, RequirementError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import CoreEntry, Pass

if TYPE_CHECKING:
    from ruleengine.check.bench import BenchResult
    from ruleengine.check.trace import Permission
    from ruleengine.policy import Location

__all__ = [
    "FORMATS",
    "POLICY_ERROR",
    "RULES",
    "SARIF_SCHEMA",
    "CheckOutput",
    "Progress",
    "Source",
    "Unchecked",
    "concise_report",
    "github_command",
    "github_report",
    "json_explain",
    "json_text",
    "refusal",
    "sarif_log",
    "text_bench",
    "text_diff",
    "text_explain",
    "text_report",
    "why_not_stop",
]

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The JSON Schema of SARIF 2.1.0 (OASIS), which ``$schema`` names."""

INFORMATION_URI = "urn:x-ruleengine:docs:checking"
"""What the driver's ``informationUri`` says when the package metadata names no project page
(a URN: there is no public page to point at yet)."""

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
}
"""Per finding id: its SARIF rule name, what it means, and what to do about it."""

POLICY_ERROR = "policy-error"
"""The id under which the machine formats report a policy that could not be loaded (a
missing file, a mistake in it) or checked (a requirement that raised)."""
POLICY_ERROR_RULE = (
    "PolicyError",
    "A policy that could not be loaded or checked.",
    "Fix what the message names (at the line given), then check the policy again.",
)
"""The SARIF rule of ``policy-error``: its name, what it means, and what to do about it."""

FORMATS = ("text", "json", "sarif", "concise", "github")
"""The formats ``CheckOutput`` writes (``ruleengine check --format``)."""


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


def _finding_lines(finding: Finding, policy: Source | None) -> list[str]:
    lines = [f"  {finding.severity} {finding.id}: {finding.message}"]
    if finding.id in ("deadlock", "forced-conflict", "no-finish", "forced-tie"):
        lines.append("    trace:" if finding.trace else "    trace: none, at the first step")
        lines.extend(f"      {n}. {_step(s)}" for n, s in enumerate(finding.trace, 1))
    if finding.core:
        if _requirement_level(finding.core):
            label = "requirements it needs"
        else:
            label = "tied forces" if finding.id == "forced-tie" else "clashing rules"
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


def _step(step: TraceStep) -> str:
    return step.tool if step.status == "ok" else f"{step.tool} ({step.status})"


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


# -- SARIF -------------------------------------------------------------------------------------


def sarif_log(
    checked: Iterable[tuple[Report, Source | None]], unchecked: Iterable[Unchecked] = ()
) -> dict[str, Any]:
    """One SARIF 2.1.0 log, one run, a result per finding of every report, and one (rule
    ``policy-error``, level ``error``) per policy that could not be loaded or checked."""
    pairs = list(checked)
    failed = list(unchecked)
    results = [_result(f, report, policy) for report, policy in pairs for f in report.findings]
    results.extend(_unchecked_result(u) for u in failed)
    checks = [report.model_dump(mode="json", exclude={"findings"}) for report, _ in pairs]
    notes = [
        {
            "level": "warning",
            "message": {"text": f"{r.policy}: the check is incomplete ({r.reason}): not a proof"},
        }
        for r, _ in pairs
        if not r.complete
    ]
    notes.extend(
        {
            "level": "error",
            "descriptor": {"id": POLICY_ERROR},
            "message": {"text": f"not checked: {u.message}"},
            "locations": result["locations"],
        }
        for u, result in zip(failed, results[len(results) - len(failed) :], strict=True)
    )
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {"driver": _driver(with_policy_error=bool(failed))},
        "invocations": [invocation],
        "results": results,
        "properties": {"checks": checks},
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _driver(*, with_policy_error: bool = False) -> dict[str, Any]:
    """The tool and its rules: the seven finding ids, and ``policy-error`` after them when
    some policy could not be checked (so a clean log's rules stay the finding ids)."""
    described: list[tuple[str, str, str, str, str]] = [
        (f, *RULES[f], SEVERITY[f]) for f in FINDING_IDS
    ]
    if with_policy_error:
        described.append((POLICY_ERROR, *POLICY_ERROR_RULE, "error"))
    rules = [
        {
            "id": rule_id,
            "name": name,
            "shortDescription": {"text": meaning},
            "fullDescription": {"text": f"{meaning} {advice}"},
            "help": {"text": advice},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["policy", "static-check"]},
        }
        for rule_id, name, meaning, advice, level in described
    ]
    return {
        "name": "ruleengine",
        "version": _version(),
        "informationUri": _information_uri(),
        "rules": rules,
    }


def _result(finding: Finding, report: Report, policy: Source | None) -> dict[str, Any]:
    uri = _artifact_uri(report.policy)
    first = _first_requirement(finding)
    primary = _region(policy, first)
    related = [
        {
            "id": i,
            "physicalLocation": _physical(uri, _region(policy, entry.requirement)),
            "message": {"text": f"{entry.requirement} (priority {entry.priority}): {entry.rule}"},
        }
        for i, entry in enumerate(finding.core, 1)
        if entry.requirement != first
    ]
    result: dict[str, Any] = {
        "ruleId": finding.id,
        "ruleIndex": FINDING_IDS.index(finding.id),
        "level": finding.severity,
        "message": {"text": _finding_text(finding)},
        "locations": [{"physicalLocation": _physical(uri, primary)}],
        "properties": {
            "policy": report.policy,
            "tool": finding.tool,
            "requirement": finding.requirement,
            "trace": [s.model_dump(mode="json") for s in finding.trace],
            "core": [e.model_dump(mode="json") for e in finding.core],
            "depends_on_custom_checks": finding.depends_on_custom_checks,
        },
    }
    if related:
        result["relatedLocations"] = related
    if finding.id == "budget":
        result["properties"]["min_steps"] = finding.min_steps
    return result


def _first_requirement(finding: Finding) -> str | None:
    """The requirement a finding is located at: its own (``dead-requirement``), else the
    first of its core; ``None`` when it has neither."""
    if finding.requirement is not None:
        return finding.requirement
    return finding.core[0].requirement if finding.core else None


def _finding_text(finding: Finding) -> str:
    """A finding's message, and its trace in words: what one line or one result says."""
    if not finding.trace:
        return finding.message
    return f"{finding.message} (trace: {', '.join(_step(s) for s in finding.trace)})"


def _unchecked_result(failed: Unchecked) -> dict[str, Any]:
    region = {"startLine": max(failed.line or 1, 1)}
    if failed.column is not None:
        region["startColumn"] = max(failed.column, 1)
    return {
        "ruleId": POLICY_ERROR,
        "ruleIndex": len(FINDING_IDS),
        "level": "error",
        "message": {"text": failed.problem},
        "locations": [{"physicalLocation": _physical(_artifact_uri(failed.file), region)}],
        "properties": {"policy": failed.policy, "hint": failed.hint, "trace": []},
    }


def _region(policy: Source | None, requirement: str | None) -> dict[str, int]:
    found = None if policy is None or requirement is None else policy.location(requirement)
    if found is None:
        return {"startLine": 1}
    region = {"startLine": max(found.line, 1)}
    if found.column is not None:
        region["startColumn"] = max(found.column, 1)
    return region


def _physical(uri: str, region: dict[str, int]) -> dict[str, Any]:
    return {"artifactLocation": {"uri": uri}, "region": region}


def _artifact_uri(source: str) -> str:
    """The policy's file as a URI reference: relative paths stay relative (code-scanning
    services resolve them against the checkout), absolute ones become ``file:`` URIs."""
    path = _source_file(source)
    if path.is_absolute():
        return path.as_uri()
    return urllib.parse.quote(path.as_posix())


def _source_file(source: str) -> PurePath:
    """The file a policy source names: the file itself, the ``.py`` of ``file.py:attr``, or
    the module file of an imported ``module:attr``."""
    path = Path(source)
    if path.suffix.lower() in (".toml", ".yaml", ".yml", ".json"):
        return path
    head, sep, _ = source.rpartition(":")
    if sep and head.endswith(".py"):
        return Path(head)
    module = sys.modules.get(head) if sep else None
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        found = Path(file)
        try:
            return found.relative_to(Path.cwd())
        except ValueError:
            return found
    return path


def _version() -> str:
    try:
        return metadata.version("ruleengine")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


def _information_uri() -> str:
    try:
        urls: list[str] = metadata.metadata("ruleengine").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "documentation", "source"):
            return str(url).strip()
    return INFORMATION_URI


# -- policies that could not be checked --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unchecked:
    """A policy that could not be loaded or checked: the error, and where it points."""

    policy: str
    """The policy as it was named (on the command line)."""
    message: str
    """The error's message, as stderr has it (it usually starts with ``file:line: ``)."""
    hint: str | None
    file: str
    """The file the error is in: the policy's own, or the one its location names."""
    line: int | None = None
    """The line, from 1, when known."""
    column: int | None = None
    """The column, from 1, when known."""

    @classmethod
    def of(cls, policy: str, error: RuleEngineError, source: Source | None = None) -> Unchecked:
        """What ``error`` says about ``policy``: located at the ``file:line`` a
        ``PolicyError`` names, at the requirement a ``RequirementError`` names (in
        ``source``, the loaded policy), or else at the policy's file."""
        file, line, column = _source_file(policy).as_posix(), None, None
        if isinstance(error, PolicyError) and error.location and error.location != policy:
            file, line, column = _split_location(error.location)
        elif isinstance(error, RequirementError) and source is not None:
            found = source.location(error.requirement)
            if found is not None:
                file, line, column = found.file, found.line, found.column
        return cls(policy, error.message, error.hint, file, line, column)

    @property
    def problem(self) -> str:
        """The message without the place it starts with (the formats that give the place
        apart), and the hint after it."""
        text = self.message
        for place in (self.where, self.file, self.policy):
            if text.startswith(place + ": "):
                text = text[len(place) + 2 :]
                break
        return f"{text} (hint: {self.hint})" if self.hint else text

    @property
    def where(self) -> str:
        """``file:line`` or ``file:line:column``, as far as they are known."""
        parts = [self.file, *(str(n) for n in (self.line, self.column) if n is not None)]
        return ":".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The object ``check --format json`` prints for this policy."""
        error = {
            "message": self.message,
            "hint": self.hint,
            "file": self.file,
            "line": self.line,
            "column": self.column,
        }
        return {"policy": self.policy, "error": error}


def _split_location(location: str) -> tuple[str, int | None, int | None]:
    """``file``, ``file:line`` or ``file:line:column`` (a file name may hold ``:``)."""
    numbers: list[int] = []
    rest = location
    while len(numbers) < 2:
        head, sep, tail = rest.rpartition(":")
        if not (sep and head and tail.isdigit()):
            break
        numbers.insert(0, int(tail))
        rest = head
    if len(numbers) == 2:
        return rest, numbers[0], numbers[1]
    if numbers:
        return rest, numbers[0], None
    return location, None, None


# -- concise and GitHub annotations ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Line:
    """One thing a machine reads: where, how bad, what, and its id."""

    file: str
    line: int
    column: int
    severity: str  # error, warning or note
    message: str
    id: str


def _lines(report: Report, policy: Source | None) -> list[_Line]:
    """One ``_Line`` per finding (at its requirement, or its core's first), and a note when
    the check is incomplete."""
    file = _source_file(report.policy).as_posix()
    lines = []
    for finding in report.findings:
        region = _region(policy, _first_requirement(finding))
        column = region.get("startColumn", 1)
        text = _finding_text(finding)
        lines.append(_Line(file, region["startLine"], column, finding.severity, text, finding.id))
    if not report.complete:
        text = f"the check is incomplete ({report.reason}): not a proof"
        lines.append(_Line(file, 1, 1, "note", text, "incomplete"))
    return lines


def _unchecked_line(failed: Unchecked) -> _Line:
    return _Line(
        failed.file, failed.line or 1, failed.column or 1, "error", failed.problem, POLICY_ERROR
    )


def _concise(line: _Line) -> str:
    text = " ".join(line.message.splitlines())
    return f"{line.file}:{line.line}:{line.column}: {line.severity}: {text} [{line.id}]"


def concise_report(report: Report, policy: Source | None = None) -> list[str]:
    """``PATH:LINE:COL: SEVERITY: MESSAGE [ID]`` per finding (and a ``note`` when the check
    is incomplete): what editors and problem matchers read."""
    return [_concise(line) for line in _lines(report, policy)]


_GITHUB_LEVELS = {"error": "error", "warning": "warning", "note": "notice"}


def github_command(
    level: str, message: str, *, file: str, line: int, column: int, title: str
) -> str:
    """A GitHub workflow annotation (``::error file=…,line=…,col=…,title=…::message``),
    escaped as the runner reads it: ``%``, CR and LF in the message, and ``,`` and ``:``
    too in the properties."""
    properties = {"file": file, "line": str(line), "col": str(column), "title": title}
    shown = ",".join(f"{key}={_escape(value, True)}" for key, value in properties.items())
    return f"::{level} {shown}::{_escape(message, False)}"


def _escape(text: str, is_property: bool) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if is_property:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _github(line: _Line) -> str:
    return github_command(
        _GITHUB_LEVELS[line.severity],
        line.message,
        file=line.file,
        line=line.line,
        column=line.column,
        title=line.id,
    )


def github_report(report: Report, policy: Source | None = None) -> list[str]:
    """A GitHub workflow annotation per finding (``::error``, ``::warning``), and a
    ``::notice`` when the check is incomplete."""
    return [_github(line) for line in _lines(report, policy)]


# -- check: the output, in any format ----------------------------------------------------------


def json_text(data: object, *, compact: bool) -> str:
    """``data`` as JSON: one line (``compact``), or indented by two spaces."""
    if compact:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(data, ensure_ascii=False, indent=2)


class CheckOutput:
    """What ``check`` prints, in one of ``FORMATS``, written through ``write`` (a line at a
    time) as each policy is done; SARIF, one log for every policy, at ``close``.

    ``several``: more than one policy (or a directory), so that JSON prints one compact
    object per line (JSON Lines) rather than one indented object."""

    def __init__(self, format: str, write: Callable[[str], None], *, several: bool) -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}")
        self.format = format
        self.write = write
        self.several = several
        self.checked: list[tuple[Report, Source | None]] = []
        self.unchecked: list[Unchecked] = []

    def report(self, report: Report, policy: Source | None) -> None:
        """A policy's report."""
        first = not self.checked and not self.unchecked
        self.checked.append((report, policy))
        if self.format == "text":
            self.write(text_report(report, policy) if first else "\n" + text_report(report, policy))
        elif self.format == "json":
            self.write(json_text(report.model_dump(mode="json"), compact=self.several))
        elif self.format == "concise":
            self._lines(concise_report(report, policy))
        elif self.format == "github":
            self._lines(github_report(report, policy))

    def failed(self, failed: Unchecked) -> None:
        """A policy that could not be loaded or checked (the text format says it on stderr
        alone: nothing is written here)."""
        self.unchecked.append(failed)
        if self.format == "json":
            self.write(json_text(failed.as_json(), compact=self.several))
        elif self.format == "concise":
            self.write(_concise(_unchecked_line(failed)))
        elif self.format == "github":
            self.write(_github(_unchecked_line(failed)))

    def close(self) -> None:
        """The end: the SARIF log, when that is the format."""
        if self.format == "sarif":
            self.write(json_text(sarif_log(self.checked, self.unchecked), compact=False))

    def _lines(self, lines: list[str]) -> None:
        if lines:
            self.write("\n".join(lines))


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
        lines.extend(f"    {n}. {_step(s)}" for n, s in enumerate(report.trace, 1))
        difference = report.difference or {}
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
    shown = ", ".join(_step(s) for s in trace) or "the empty run"
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
            lines.append(f"step {n + 1}: {_step(trace[n])}: {verdict}")
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
    return f"after step {n}{end}: " + ", ".join(_step(s) for s in trace[:n])


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


# -- JSON: explain -----------------------------------------------------------------------------


def json_explain(
    policy: Source,
    trace: Sequence[TraceStep],
    outcomes: Sequence[Pass | ConflictError],
    *,
    finish: bool = False,
    asking: Sequence[Sequence[Permission]] = (),
) -> tuple[dict[str, Any], bool]:
    """What ``text_explain`` says, as one JSON object (``explain --format json``): per step,
    the pass that decides it (or the conflict), and the call made then, whether it runs, why
    not, and the ask-permission requirements covering it. Also whether the trace runs."""
    steps: list[dict[str, Any]] = []
    result = "runs"
    for n, outcome in enumerate(outcomes):
        entry: dict[str, Any] = {"step": n + 1, "pass": None, "conflict": None, "call": None}
        steps.append(entry)
        if isinstance(outcome, ConflictError):
            entry["conflict"] = {
                "kind": outcome.kind,
                "message": outcome.message,
                "forced": list(outcome.forced),
                "core": _json_entries(outcome.core, policy),
                "hint": outcome.hint,
            }
            result = "conflict"
            break
        entry["pass"] = _json_pass(outcome, policy)
        if n < len(trace):
            step = trace[n]
            refused = refusal(outcome, step.tool)
            covering = asking[n] if n < len(asking) and refused is None else ()
            entry["call"] = _json_call(step.tool, step.status, refused, covering, policy)
        elif finish:
            refused = (
                None
                if outcome.can_stop
                else f"the agent may not stop here ({why_not_stop(outcome)})"
            )
            entry["call"] = _json_call(FINAL_ANSWER, "ok", refused, (), policy)
        else:
            continue
        if refused is not None:
            result = "refused"
            break
    data = {
        "policy": policy.source,
        "trace": [s.model_dump(mode="json") for s in trace],
        "final_answer": finish,
        "runs": result == "runs",
        "result": result,
        "steps": steps,
    }
    return data, result == "runs"


def _json_pass(decided: Pass, policy: Source) -> dict[str, Any]:
    explanation = decided.explanation
    tools = {
        tool: {
            "status": decision.status,
            "decided_by": _json_entries(decision.decided_by, policy),
            "overridden": _json_entries(decision.overridden, policy),
        }
        for tool, decision in explanation.tools.items()
    }
    return {
        "allowed": list(decided.allowed),
        "hidden": list(decided.hidden),
        "forced": decided.forced,
        "can_stop": decided.can_stop,
        "tool_choice": decided.tool_choice,
        "reasons": dict(decided.reasons),
        "tools": tools,
        "yielded": _json_entries(explanation.yielded, policy),
        "notes": list(explanation.notes),
    }


def _json_call(
    tool: str,
    status: str,
    refused: str | None,
    covering: Sequence[Permission],
    policy: Source,
) -> dict[str, Any]:
    permissions = [
        {
            "requirement": p.requirement,
            "priority": p.priority,
            "answer": p.answer,
            "remembered_from": p.remembered_from,
            "location": _json_location(policy, p.requirement),
        }
        for p in covering
    ]
    return {
        "tool": tool,
        "status": status,
        "allowed": refused is None,
        "refused": refused,
        "permissions": permissions,
    }


def _json_entries(entries: Sequence[CoreEntry], policy: Source) -> list[dict[str, Any]]:
    return [
        {
            "requirement": e.requirement,
            "priority": e.priority,
            "rule": e.rule,
            "location": _json_location(policy, e.requirement),
        }
        for e in entries
    ]


def _json_location(policy: Source, requirement: str) -> dict[str, Any] | None:
    found = policy.location(requirement)
    if found is None:
        return None
    return {"file": found.file, "line": found.line, "column": found.column}


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
