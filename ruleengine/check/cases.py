"""Policy test cases: traces, and what the passes along them must be (``ruleengine test``).

A cases file (TOML, YAML or JSON, told by its extension; read as policy files are read: at
most 10 MB of UTF-8) holds named cases. Each case has a trace, written as ``explain
--trace`` takes it, and expectations at chosen steps: the tools ``allowed`` (the exact set,
or some it ``includes`` or ``excludes``), the tool ``forced`` (or none), whether the agent
``can_stop``, whether the state has no pass (``conflict``), and whether the call the trace
makes there is ``refused``.

``load_cases`` reads a file against a policy; every mistake is a ``PolicyError`` naming the
file and line, the case, the step and the key. ``run_cases`` replays each trace through the
policy's runtime as ``explain`` does (``replay``: the requirements run on real run states
and the reasoner decides each pass; the static checker plays no part) and compares; a case
also fails when a call of its trace is refused, or a state on the way has no pass, unless
an expectation says so. ``text_results`` and ``json_results`` render the outcome.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from ruleengine.check.render import refusal, why_not_stop
from ruleengine.check.report import TraceStep
from ruleengine.check.trace import parse_trace, replay
from ruleengine.errors import ConflictError, PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.policy.load import MAX_BYTES, PARSERS, read_bounded

if TYPE_CHECKING:
    from ruleengine.policy import Policy

__all__ = [
    "CASES_SUFFIXES",
    "MAX_CASES_BYTES",
    "Case",
    "CaseResult",
    "Cases",
    "Expectation",
    "Failure",
    "Results",
    "is_cases_file",
    "json_results",
    "load_cases",
    "run_cases",
    "text_results",
]

MAX_CASES_BYTES = MAX_BYTES
"""Cases files larger than this are refused (10 MB, as policy files)."""

CASES_SUFFIXES = tuple(f".cases{suffix}" for suffix in PARSERS)
"""How the name of a cases file ends (``refunds.cases.toml``): ``check DIR`` leaves such
files out, so they can sit beside the policies they test."""

END = "end"
"""The ``step`` of the pass after the trace's last call."""

_TOP_KEYS = ("cases",)
_CASE_KEYS = ("name", "trace", "expect")
_EXPECT_KEYS = ("step", "allowed", "refused", "forced", "can_stop", "conflict")
_ALLOWED_KEYS = ("includes", "excludes")
_TRACE_HINT = (
    "a trace is a list of steps, each a tool name, a `[tool, status]` pair or a "
    '`{tool = …, status = …}` table; or one string, `"a,b:error,c"`, as `explain --trace` '
    "takes it"
)


def is_cases_file(path: str) -> bool:
    """Whether ``path`` names a cases file by its suffix (``*.cases.toml`` and the like)."""
    return os.path.basename(path).lower().endswith(CASES_SUFFIXES)


# -- what a file says --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expectation:
    """What one pass of a case must be: the pass before the ``step``-th call (the last
    step, one past the trace, is the pass after its last call). ``None``: not asked."""

    step: int
    path: str
    """Where the expectation is written: ``cases[0].expect[1]``."""
    allowed: tuple[str, ...] | None = None
    """The exact set of allowed tools (``final_answer`` among them when the agent may stop)."""
    includes: tuple[str, ...] = ()
    """Tools that must be among the allowed ones."""
    excludes: tuple[str, ...] = ()
    """Tools that must not be among the allowed ones."""
    forced: str | None = None
    """The forced tool, or ``None`` for none (when ``expects_forced``)."""
    expects_forced: bool = False
    can_stop: bool | None = None
    conflict: bool | None = None
    """True: the state has no pass (a ``ConflictError``); false: it has one."""
    refused: bool | None = None
    """True: the call the trace makes at this step is refused; false: it runs."""


@dataclass(frozen=True, slots=True)
class Case:
    """One named trace and its expectations, in the order of their steps."""

    name: str
    path: str
    """Where the case is written: ``cases[2]``."""
    trace: tuple[TraceStep, ...]
    finish: bool
    """Whether the trace ends with ``final_answer`` (a call at the step after its last)."""
    expect: tuple[Expectation, ...]

    @property
    def calls(self) -> int:
        """The calls the trace makes, ``final_answer`` included."""
        return len(self.trace) + (1 if self.finish else 0)


@dataclass(frozen=True, slots=True)
class Cases:
    """A cases file, read and checked against one policy."""

    file: str
    policy: str
    """The policy the cases were read against (its ``source``)."""
    cases: tuple[Case, ...]
    places: Mapping[str, tuple[int, int]]
    """Key path → (line, column) of everything the file writes."""

    def line(self, path: str) -> int | None:
        """The line of ``path``, or of the nearest enclosing path the file writes."""
        while True:
            found = self.places.get(path)
            if found is not None:
                return found[0]
            if not path:
                return None
            path = _parent(path)


def _parent(path: str) -> str:
    """``cases[0].expect`` → ``cases[0]`` → ``cases`` → ``""``."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def load_cases(file: str, policy: Policy) -> Cases:
    """The cases in ``file``, checked against ``policy``'s tools; any mistake (a file that
    cannot be read, bad syntax, an unknown key or tool, a malformed step, a value of the
    wrong type) is a ``PolicyError`` naming the file and line, the case, step and key."""

    def fail(problem: str) -> PolicyError:
        return PolicyError(f"{file}: {problem}", location=file)

    data = read_bounded(file, MAX_CASES_BYTES, fail, what="a cases file")
    suffix = Path(file).suffix.lower()
    parser = PARSERS.get(suffix)
    if parser is None:
        raise PolicyError(
            f"{file}: unknown cases file extension `{suffix or '(none)'}`",
            hint="a cases file is .toml, .yaml, .yml or .json (`NAME.cases.toml`)",
            location=file,
        )
    text = _decoded(file, data)
    if not text.strip():
        raise _error(file, 1, "the file is empty", "a cases file lists its `cases`")
    try:
        parsed, places = parser(text)
    except RecursionError:
        raise _error(file, 1, "the file nests too deeply") from None
    except Exception as exc:  # the parsers' FormatError: a message and the line it is at
        line, message = getattr(exc, "line", None), getattr(exc, "message", None)
        if not (isinstance(line, int) and isinstance(message, str)):
            raise
        raise _error(file, line, message, getattr(exc, "hint", None)) from None
    return _Reader(file, places, policy).cases(parsed)


def _decoded(file: str, data: bytes) -> str:
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _error(
            file,
            line,
            f"the file is not UTF-8: byte `0x{data[exc.start]:02x}` at offset {exc.start}",
            "save the file as UTF-8",
        ) from None


def _error(file: str, line: int, message: str, hint: str | None = None) -> PolicyError:
    return PolicyError(f"{file}:{line}: {message}", hint=hint, location=f"{file}:{line}")


class _Reader:
    """Turns a cases file's data into ``Cases``, every mistake located in the file."""

    def __init__(self, file: str, places: Mapping[str, tuple[int, int]], policy: Policy):
        self.file = file
        self.places = places
        self.policy = policy
        self.names = (*policy.tools, FINAL_ANSWER)
        self.at = Cases(file, policy.source, (), places)

    def error(
        self,
        path: str,
        message: str,
        hint: str | None = None,
        *,
        case: str | None = None,
        step: int | None = None,
    ) -> PolicyError:
        """A mistake at ``path``, in ``case`` (its name, or its place when it has none), at
        ``step``."""
        line = self.at.line(path) or 1
        where = ""
        if case is not None:
            where = f"case {case}" + (f", step {step}" if step is not None else "") + ": "
        return _error(self.file, line, where + message, hint)

    def keys(
        self, data: Mapping[str, object], path: str, allowed: Sequence[str], what: str, **at: Any
    ) -> None:
        """An unknown key in ``data`` is a mistake (with the closest known key)."""
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                maybe = f"did you mean `{close[0]}`? " if close else ""
                listed = ", ".join(f"`{k}`" for k in allowed)
                raise self.error(
                    _child(path, str(key)),
                    f"unknown key `{key}`",
                    f"{maybe}{what} has {listed}",
                    **at,
                )

    def cases(self, data: object) -> Cases:
        if not isinstance(data, dict):
            raise self.error(
                "",
                f"the top level is `{_shown(data)}`, not a mapping of keys",
                "a cases file is a mapping with one key, `cases`: a list of cases",
            )
        self.keys(data, "", _TOP_KEYS, "a cases file")
        if "cases" not in data:
            raise self.error("", "missing key `cases`", "a cases file lists its `cases`")
        entries = data["cases"]
        if not isinstance(entries, list):
            raise self.error("cases", f"`cases` is `{_shown(entries)}`, not a list of cases")
        if not entries:
            raise self.error("cases", "`cases` is empty", "write at least one case")
        cases: list[Case] = []
        seen: dict[str, str] = {}
        for index, entry in enumerate(entries):
            case = self.case(index, entry)
            if case.name in seen:
                first = self.at.line(seen[case.name])
                raise self.error(
                    _child(case.path, "name"),
                    f"case `{case.name}` is named twice (first at line {first})",
                    "give every case a name of its own",
                )
            seen[case.name] = case.path
            cases.append(case)
        return Cases(self.file, self.policy.source, tuple(cases), self.places)

    def case(self, index: int, entry: object) -> Case:
        path = _child("cases", index)
        label = f"{index + 1} (`{path}`)"
        if not isinstance(entry, dict):
            raise self.error(
                path,
                f"case {label} is `{_shown(entry)}`, not a mapping",
                "a case is a mapping with `name`, `trace` and `expect`",
            )
        self.keys(entry, path, _CASE_KEYS, "a case", case=label)
        name = entry.get("name")
        if name is None:
            raise self.error(path, "missing key `name`", case=label)
        if not isinstance(name, str) or not name.strip():
            what = "empty" if isinstance(name, str) else f"{_kind(name)}, not a string"
            raise self.error(
                _child(path, "name"),
                f"`name` is {what}",
                "a case's name is a non-empty string (quote it)",
                case=label,
            )
        label = f"`{name}`"
        if "trace" not in entry:
            raise self.error(path, "missing key `trace`", _TRACE_HINT, case=label)
        trace, finish = self.trace(_child(path, "trace"), entry["trace"], label)
        expect = entry.get("expect", [])
        if not isinstance(expect, list):
            raise self.error(
                _child(path, "expect"),
                f"`expect` is `{_shown(expect)}`, not a list of expectations",
                "write `expect = [{step = 1, allowed = [...]}]`, or `[[cases.expect]]` tables",
                case=label,
            )
        expectations: dict[int, Expectation] = {}
        for n, item in enumerate(expect):
            expectation = self.expectation(_child(_child(path, "expect"), n), item, label, trace)
            earlier = expectations.get(expectation.step)
            if earlier is not None:
                raise self.error(
                    expectation.path,
                    f"step {expectation.step} is expected twice "
                    f"(first at line {self.at.line(earlier.path)})",
                    "write what one step must be in one expectation",
                    case=label,
                )
            expectations[expectation.step] = expectation
        case = Case(
            name, path, tuple(trace), finish, tuple(expectations[s] for s in sorted(expectations))
        )
        self.consistent(case, label)
        return case

    def trace(self, path: str, value: object, label: str) -> tuple[list[TraceStep], bool]:
        """The steps, read as ``explain`` reads ``--trace`` (a list, as its JSON form)."""
        where = f"{self.file}:{self.at.line(path) or 1}: case {label}: trace"
        if isinstance(value, str):
            return parse_trace(value, self.policy.tools, where=where, source=self.policy.source)
        if not isinstance(value, list):
            raise self.error(
                path, f"`trace` is `{_shown(value)}`, not a list of steps", _TRACE_HINT, case=label
            )
        text = json.dumps(value, ensure_ascii=False, default=str)
        return parse_trace(
            text, self.policy.tools, where=where, source=self.policy.source, json_only=True
        )

    def expectation(
        self, path: str, item: object, label: str, trace: Sequence[TraceStep]
    ) -> Expectation:
        if not isinstance(item, dict):
            raise self.error(
                path,
                f"an expectation is `{_shown(item)}`, not a mapping",
                "an expectation is a mapping with `step` and what to expect there",
                case=label,
            )
        known = _peek_step(item.get("step"), len(trace))
        self.keys(item, path, _EXPECT_KEYS, "an expectation", case=label, step=known)
        if "step" not in item:
            raise self.error(path, "missing key `step`", _STEP_HINT, case=label)
        step = self.step(_child(path, "step"), item["step"], label, len(trace))
        at: dict[str, Any] = {"case": label, "step": step}
        asked = [k for k in _EXPECT_KEYS if k != "step" and k in item]
        if not asked:
            listed = ", ".join(f"`{k}`" for k in _EXPECT_KEYS[1:])
            raise self.error(path, "expects nothing", f"add one of {listed}", **at)
        fields: dict[str, Any] = {}
        for key in ("refused", "can_stop", "conflict"):
            if key in item:
                fields[key] = self.boolean(_child(path, key), key, item[key], at)
        if "forced" in item:
            fields["expects_forced"] = True
            fields["forced"] = self.forced(_child(path, "forced"), item["forced"], at)
        if "allowed" in item:
            fields.update(self.allowed(_child(path, "allowed"), item["allowed"], at))
        return Expectation(step=step, path=path, **fields)

    def step(self, path: str, value: object, label: str, length: int) -> int:
        end = length + 1
        if value == END:
            return end
        if not _is_count(value) or value < 1:
            raise self.error(
                path, f"`step` is `{_shown(value)}`, not a step number", _STEP_HINT, case=label
            )
        if value > end:
            raise self.error(
                path,
                f"`step` {value} is past the end: the trace has {_count(length, 'step')}",
                f"step {end} (or `{END}`) is the pass after its last call",
                case=label,
                step=value,
            )
        return value

    def boolean(self, path: str, key: str, value: object, at: dict[str, Any]) -> bool:
        if not isinstance(value, bool):
            raise self.error(path, f"`{key}` is `{_shown(value)}`, not true or false", **at)
        return value

    def forced(self, path: str, value: object, at: dict[str, Any]) -> str | None:
        if value is None or value is False:
            return None
        if not isinstance(value, str):
            raise self.error(
                path,
                f"`forced` is `{_shown(value)}`, not a tool",
                "`forced` is the forced tool's name, or false (null in YAML and JSON) for none",
                **at,
            )
        return self.tool(path, "forced", value, at)

    def allowed(self, path: str, value: object, at: dict[str, Any]) -> dict[str, Any]:
        if isinstance(value, list):
            return {"allowed": self.tools(path, "allowed", value, at)}
        if not isinstance(value, dict):
            raise self.error(
                path,
                f"`allowed` is `{_shown(value)}`, not a list of tools",
                "`allowed` is the exact list of allowed tools, or a mapping with `includes` "
                "and/or `excludes` lists",
                **at,
            )
        self.keys(value, path, _ALLOWED_KEYS, "`allowed`", **at)
        if not value:
            raise self.error(path, "`allowed` is empty: give `includes` or `excludes`", **at)
        return {
            key: self.tools(_child(path, key), f"allowed.{key}", value[key], at)
            for key in _ALLOWED_KEYS
            if key in value
        }

    def tools(self, path: str, key: str, value: object, at: dict[str, Any]) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.error(path, f"`{key}` is `{_shown(value)}`, not a list of tools", **at)
        names = []
        for n, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(
                    _child(path, n), f"`{key}`: `{_shown(item)}` is not a tool name", **at
                )
            names.append(self.tool(_child(path, n), key, item, at))
        return tuple(dict.fromkeys(names))

    def tool(self, path: str, key: str, name: str, at: dict[str, Any]) -> str:
        if name not in self.names:
            close = difflib.get_close_matches(name, self.names, n=1)
            maybe = f"did you mean `{close[0]}`? " if close else ""
            listed = ", ".join(f"`{t}`" for t in self.names)
            raise self.error(
                path,
                f"`{key}`: unknown tool `{name}`",
                f"{maybe}the tools of {self.policy.source}: {listed}",
                **at,
            )
        return name

    def consistent(self, case: Case, label: str) -> None:
        """What the expectations ask is possible: ``refused`` only where the trace makes a
        call, ``refused = true`` only at its last call, ``conflict = true`` only at its
        end and alone."""
        end = len(case.trace) + 1
        for e in case.expect:
            at: dict[str, Any] = {"case": label, "step": e.step}
            path = _child(e.path, "refused")
            if e.refused is not None and e.step > case.calls:
                raise self.error(
                    path,
                    "`refused`: the trace makes no call at this step",
                    f"the trace makes {_count(case.calls, 'call')}; step {e.step} is the pass "
                    "after its last call",
                    **at,
                )
            if e.refused and e.step != case.calls:
                raise self.error(
                    path,
                    "`refused = true`: a refused call ends the run, so it must be the trace's "
                    f"last (its step {case.calls})",
                    "end the trace with the call that is refused",
                    **at,
                )
            if e.refused and any(later.step > e.step for later in case.expect):
                raise self.error(path, "`refused = true`: no step follows a refused call", **at)
            if e.conflict and (e.step != end or case.finish):
                raise self.error(
                    _child(e.path, "conflict"),
                    "`conflict = true`: a state with no pass ends the run, so only the end of "
                    f"the trace (step {end}, without `final_answer`) can have it",
                    **at,
                )
            pass_keys = e.allowed is not None or e.includes or e.excludes or e.expects_forced
            if e.conflict and (pass_keys or e.can_stop is not None or e.refused is not None):
                raise self.error(
                    _child(e.path, "conflict"),
                    "`conflict = true` leaves no pass to expect anything else of",
                    **at,
                )


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _peek_step(value: object, length: int) -> int | None:
    """The step ``value`` names, if it is a good one (to name it in messages), else None."""
    if value == END:
        return length + 1
    return value if _is_count(value) and 1 <= value <= length + 1 else None


_STEP_HINT = (
    "`step` is a number from 1 (the pass before the first call) to the trace's length plus "
    f"one (the pass after its last call, also written `{END}`)"
)


def _kind(value: object) -> str:
    """What ``value`` is, in words (for a value of the wrong type)."""
    kinds = [(bool, "true or false"), (int, "a number"), (float, "a number"), (list, "a list")]
    kinds += [(dict, "a mapping"), (type(None), "null")]
    for kind, words in kinds:
        if isinstance(value, kind):
            return f"{words} (`{_shown(value)}`)"
    return f"a {type(value).__name__} (`{value}`)"


def _shown(value: object) -> str:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= 60 else shown[:59] + "…"


# -- running them ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """One expectation a case did not meet (or a call refused, a state with no pass, that
    no expectation allowed for)."""

    step: int
    key: str
    """``allowed``, ``forced``, ``can_stop``, ``conflict`` or ``refused``."""
    expected: object
    got: object
    message: str
    """``expected …, got …``."""
    line: int | None


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    line: int | None
    failures: tuple[Failure, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass(frozen=True, slots=True)
class Results:
    cases: Cases
    results: tuple[CaseResult, ...]

    @property
    def failed(self) -> int:
        return sum(1 for r in self.results if not r.passed)

    @property
    def passed(self) -> int:
        return len(self.results) - self.failed


def run_cases(policy: Policy, cases: Cases) -> Results:
    """Each case's trace replayed through ``policy``'s runtime, and what it did not meet."""
    reasoner = policy.reasoner()
    order = {name: n for n, name in enumerate((*policy.tools, FINAL_ANSWER))}
    results = []
    for case in cases.cases:
        outcomes = replay(reasoner, case.trace)
        failures = tuple(_Judge(case, cases, order).failures(outcomes))
        results.append(CaseResult(case, cases.line(case.path), failures))
    return Results(cases, tuple(results))


class _Judge:
    """Compares one case's passes with what it expects."""

    def __init__(self, case: Case, cases: Cases, order: Mapping[str, int]) -> None:
        self.case = case
        self.cases = cases
        self.order = order

    def failure(
        self, step: int, key: str, expected: object, got: object, message: str, path: str
    ) -> Failure:
        return Failure(step, key, expected, got, message, self.cases.line(path))

    def failures(self, outcomes: Sequence[Pass | ConflictError]) -> Iterator[Failure]:
        case = self.case
        by_step = {e.step: e for e in case.expect}
        for n, outcome in enumerate(outcomes):
            step = n + 1
            want = by_step.get(step)
            call_path = _child(_child(case.path, "trace"), n)
            if isinstance(outcome, ConflictError):
                if want is not None and want.conflict:
                    return
                path = _child(want.path, "conflict") if want is not None else call_path
                got = f"a conflict ({outcome.kind}): {outcome.message}"
                yield self.failure(
                    step, "conflict", False, True, f"expected a pass, got {got}", path
                )
                return
            if want is not None:
                yield from self.compare(want, outcome)
                if want.conflict:
                    return
            if n < len(case.trace):
                tool = case.trace[n].tool
                refused = refusal(outcome, tool)
            elif case.finish:
                tool = FINAL_ANSWER
                refused = (
                    None
                    if outcome.can_stop
                    else f"the agent may not stop here ({why_not_stop(outcome)})"
                )
            else:
                return
            wanted = None if want is None else want.refused
            path = call_path if want is None or wanted is None else _child(want.path, "refused")
            if refused is None and wanted:
                message = f"expected `{tool}` to be refused, got it allowed"
                yield self.failure(step, "refused", True, False, message, path)
                return
            if refused is not None:
                if not wanted:
                    message = f"expected `{tool}` to run, got it refused: {refused}"
                    yield self.failure(step, "refused", False, True, message, path)
                return

    def compare(self, want: Expectation, got: Pass) -> Iterator[Failure]:
        step = want.step

        def at(key: str) -> str:
            return _child(want.path, key)

        if want.conflict:
            message = f"expected conflict = true, got a pass (allowed {_listed(got.allowed)})"
            yield self.failure(step, "conflict", True, False, message, at("conflict"))
            return
        allowed = set(got.allowed)
        shown = _listed(got.allowed)
        if want.allowed is not None and set(want.allowed) != allowed:
            expected = self.sorted(want.allowed)
            extra = [t for t in got.allowed if t not in want.allowed]
            missing = [t for t in expected if t not in allowed]
            notes = [
                f"{what}: {', '.join(names)}"
                for what, names in (("not expected", extra), ("missing", missing))
                if names
            ]
            message = f"expected allowed = {_listed(expected)}, got {shown} ({'; '.join(notes)})"
            yield self.failure(step, "allowed", expected, list(got.allowed), message, at("allowed"))
        missing = [t for t in self.sorted(want.includes) if t not in allowed]
        if missing:
            message = (
                f"expected allowed to include {_listed(self.sorted(want.includes))}, got "
                f"{shown} (missing: {', '.join(missing)})"
            )
            expected_json = {"includes": self.sorted(want.includes)}
            path = _child(at("allowed"), "includes")
            yield self.failure(step, "allowed", expected_json, list(got.allowed), message, path)
        present = [t for t in self.sorted(want.excludes) if t in allowed]
        if present:
            message = (
                f"expected allowed to exclude {_listed(self.sorted(want.excludes))}, got "
                f"{shown} (allowed: {', '.join(present)})"
            )
            expected_json = {"excludes": self.sorted(want.excludes)}
            path = _child(at("allowed"), "excludes")
            yield self.failure(step, "allowed", expected_json, list(got.allowed), message, path)
        if want.expects_forced and want.forced != got.forced:
            message = f"expected forced = {want.forced or 'none'}, got {got.forced or 'none'}"
            yield self.failure(step, "forced", want.forced, got.forced, message, at("forced"))
        if want.can_stop is not None and want.can_stop != got.can_stop:
            why = "" if got.can_stop else f" ({why_not_stop(got)})"
            message = f"expected can_stop = {_bool(want.can_stop)}, got {_bool(got.can_stop)}{why}"
            yield self.failure(
                step, "can_stop", want.can_stop, got.can_stop, message, at("can_stop")
            )

    def sorted(self, tools: Sequence[str]) -> list[str]:
        return sorted(tools, key=lambda t: self.order.get(t, len(self.order)))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _listed(tools: Sequence[str]) -> str:
    return "[" + ", ".join(tools) + "]"


def _bool(value: bool) -> str:
    return "true" if value else "false"


# -- what it prints ----------------------------------------------------------------------------


def text_results(results: Results) -> str:
    """One line per failure, ``CASES:LINE: case `NAME` step K: expected …, got …``, then a
    summary line."""
    file = results.cases.file
    lines = []
    for result in results.results:
        for f in result.failures:
            where = f"{file}:{f.line}" if f.line is not None else file
            lines.append(f"{where}: case `{result.case.name}` step {f.step}: {f.message}")
    lines.append(
        f"{file}: {_count(len(results.results), 'case')} against {results.cases.policy}: "
        f"{results.passed} passed, {results.failed} failed"
    )
    return "\n".join(lines)


def json_results(results: Results) -> dict[str, Any]:
    """The outcome as one JSON object (``ruleengine test --format json``)."""
    return {
        "policy": results.cases.policy,
        "cases_file": results.cases.file,
        "passed": results.passed,
        "failed": results.failed,
        "cases": [
            {
                "name": r.case.name,
                "line": r.line,
                "passed": r.passed,
                "failures": [
                    {
                        "step": f.step,
                        "line": f.line,
                        "key": f.key,
                        "expected": f.expected,
                        "got": f.got,
                        "message": f.message,
                    }
                    for f in r.failures
                ],
            }
            for r in results.results
        ],
    }
