"""Reports for editors, CI and code-scanning services (JSON is the models' dump).

``sarif_log`` writes SARIF 2.1.0 with locations in the policy files; ``concise_report`` one
``file:line:col: severity: message [id]`` line per finding, for editors; ``github_report`` the
same as GitHub workflow annotations; ``json_explain`` what ``explain`` says, as one JSON
object. ``Unchecked`` is a policy that could not be loaded or checked, which every machine
format reports in its own way; ``CheckOutput`` writes a ``check``'s results in the format
asked for (text through ``ruleengine.check.render``, which owns the reports for people and
the finding ids' descriptions). Everything here only reads results: nothing decides a pass or
searches a state.
"""

from __future__ import annotations

import json
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from ruleengine.check.render import (
    RULES,
    Source,
    refusal,
    steps_text,
    text_report,
    why_not_stop,
)
from ruleengine.check.report import FINDING_IDS, SEVERITY, Finding, Report, TraceStep
from ruleengine.errors import ConflictError, PolicyError, RequirementError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import CoreEntry, Pass

if TYPE_CHECKING:
    from ruleengine.check.trace import Permission

__all__ = [
    "FORMATS",
    "POLICY_ERROR",
    "SARIF_SCHEMA",
    "CheckOutput",
    "Unchecked",
    "concise_report",
    "github_command",
    "github_report",
    "json_explain",
    "json_text",
    "sarif_log",
]

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The JSON Schema of SARIF 2.1.0 (OASIS), which ``$schema`` names."""

INFORMATION_URI = "urn:x-ruleengine:docs:checking"
"""What the driver's ``informationUri`` says when the package metadata names no project page
(a URN: there is no public page to point at yet)."""


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
    if finding.depends_on_tool_outputs:
        result["properties"]["depends_on_tool_outputs"] = True
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
    return f"{finding.message} (trace: {steps_text(finding.trace)})"


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
