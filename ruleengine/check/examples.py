"""Example values for a finding's trace: each call's arguments, and the outputs (and input)
the conditions read, found by Z3 and kept only when they replay through the runtime.

The checker explores states where a condition that reads run values either admits some
arguments or denies its tool (an opaque check), so a trace may need particular values.
``with_examples`` looks for them. Candidate run values come from Z3 models of each tool's
conditions with their run values as unknowns (``conditions.admission.some_run``), one per
tool and all of them merged, plus an empty output, from which every value read is undefined
(which refuses the tools that read it). Each call's arguments are a model of its tool's
conditions at that step (``some_arguments``), with the values later conditions read of them
where it can. A bounded search walks the trace with the runtime's reasoner, in order, and
keeps the first choice for which every call is admitted (``Pass.admits``) and the last state
shows the finding (``trace.shows``): a trace with examples is one ``trace.confirm`` accepts.
When none is found within ``MAX_DECISIONS`` decisions, the finding keeps its bare trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ruleengine.check.report import Finding, TraceStep
from ruleengine.check.trace import emit_state, refused, shows
from ruleengine.conditions.admission import some_arguments, some_run
from ruleengine.conditions.evaluate import Undefined
from ruleengine.conditions.terms import (
    Arg,
    Cmp,
    Const,
    Input,
    LastArg,
    LastOut,
    Outputs,
    Term,
    walk,
)
from ruleengine.conditions.types import Parameters, ParamType
from ruleengine.errors import ConflictError, RuleEngineError
from ruleengine.passes import Pass
from ruleengine.reasoner import Reasoner
from ruleengine.requirements.arguments import ArgumentsRequirement
from ruleengine.state import RunState

__all__ = ["MAX_DECISIONS", "Reads", "with_examples"]

MAX_DECISIONS = 400
"""Passes one finding's search decides at most (each a runtime decision of one state)."""

_TRACED = ("deadlock", "forced-conflict", "no-finish", "forced-tie")
"""The findings with a trace (the others have none: no calls to give arguments)."""


def with_examples(reasoner: Reasoner, findings: Sequence[Finding]) -> list[Finding]:
    """``findings``, their traces with example values where the policy has conditions on
    arguments (see the module's docstring); unchanged for a policy without them."""
    policy = Reads.of(reasoner)
    if policy is None:
        return list(findings)
    out = []
    for finding in findings:
        found = policy.example(finding) if finding.id in _TRACED else None
        out.append(finding if found is None else found)
    return out


@dataclass(slots=True)
class _Values:
    """One model's run values, by where a run takes them from."""

    outputs: dict[str, Any] = field(default_factory=dict)
    """Per tool, an output."""
    arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per tool, the arguments later conditions read of its latest call."""
    input: str | None = None


class _OutOfBudget(Exception):
    pass


class Reads:
    """What a policy's conditions read, and the candidate values for them (``diff`` reads
    them too)."""

    def __init__(self, reasoner: Reasoner, requirements: Sequence[ArgumentsRequirement]) -> None:
        self.reasoner = reasoner
        self.declared: dict[str, Parameters] = {}
        conditions: dict[str, list[tuple[str, Any]]] = {}
        parameters: dict[str, dict[str, ParamType]] = {}
        for req in requirements:
            monitor = req.monitor()
            if monitor is None:
                continue
            conditions.setdefault(monitor.target, []).extend(monitor.conditions)
            parameters.setdefault(monitor.target, {}).update(monitor.parameters)
            for tool, params in req.declared.items():
                if params is not None:
                    self.declared.setdefault(tool, params)
        terms = [t for found in conditions.values() for _, term in found for t in walk(term)]
        self.outputs_read = {t.tool for t in terms if isinstance(t, LastOut | Outputs)}
        self.arguments_read: dict[str, set[str]] = {}
        for t in terms:
            if isinstance(t, LastArg):
                self.arguments_read.setdefault(t.tool, set()).add(t.name)
        self.input_read = any(isinstance(t, Input) for t in terms)
        self.models = self._models(conditions, parameters)

    @classmethod
    def of(cls, reasoner: Reasoner) -> Reads | None:
        requirements = [
            r
            for r in reasoner.requirements
            if isinstance(r, ArgumentsRequirement) and r.enabled and r.target is not None
        ]
        return cls(reasoner, requirements) if requirements else None

    def _models(
        self,
        conditions: Mapping[str, list[tuple[str, Any]]],
        parameters: Mapping[str, dict[str, ParamType]],
    ) -> list[_Values]:
        """Per tool with conditions that read run values, a model of them all (merged
        first: the values under which every such tool may be called)."""
        out: list[_Values] = []
        for tool, found in conditions.items():
            if not any(isinstance(t, _RUN) for _, term in found for t in walk(term)):
                continue
            answer = some_run(
                [t for kind, t in found if kind == "allow_if"],
                [t for kind, t in found if kind == "deny_if"],
                parameters[tool],
                mentioned=[t for kind, t in found if kind == "ask_if"],
                tools=self.declared,
            )
            if isinstance(answer, tuple):
                out.append(_values_of(answer[1]))
        if len(out) > 1:
            merged = _Values()
            for values in out:
                for tool, output in values.outputs.items():
                    merged.outputs[tool] = _merged(merged.outputs.get(tool), output)
                for tool, arguments in values.arguments.items():
                    merged.arguments[tool] = {**arguments, **merged.arguments.get(tool, {})}
                merged.input = merged.input if merged.input is not None else values.input
            out.insert(0, merged)
        return out

    def add_run(self, values: Mapping[Any, Any]) -> None:
        """Take a model's run values (by term) as one more candidate: after the others, so
        what a finding shows with the policy's own models comes first."""
        found = _values_of(values)
        self.models.append(found)
        if found.input is not None:
            self.input_read = True

    # -- the search ------------------------------------------------------------------------

    def example(self, finding: Finding) -> Finding | None:
        """``finding`` with example values on its trace, or None when none were found."""
        inputs: list[str | None] = [None]
        if self.input_read:
            # No input first: a finding that shows without one names none.
            inputs = [None, *_unique(m.input for m in self.models if m.input is not None)]
        budget = [MAX_DECISIONS]
        for given in inputs:
            try:
                steps = self._walk(finding, given, [], budget)
            except _OutOfBudget:
                return None
            except RuleEngineError:
                return None  # a requirement failed on these values: no example
            if steps is not None:
                return finding.model_copy(update={"trace": tuple(steps), "input": given})
        return None

    def _walk(
        self, finding: Finding, given: str | None, steps: list[TraceStep], budget: list[int]
    ) -> list[TraceStep] | None:
        if budget[0] <= 0:
            raise _OutOfBudget
        budget[0] -= 1
        outcome = self._decide(steps, given)
        n = len(steps)
        if n == len(finding.trace):
            return steps if shows(finding, outcome) is None else None
        event = finding.trace[n]
        if not isinstance(outcome, Pass) or event.tool not in outcome.allowed:
            return None
        for arguments in self.arguments(outcome, event.tool):
            for output in self.outputs(event):
                step = TraceStep(
                    tool=event.tool, status=event.status, arguments=arguments, output=output
                )
                if refused(outcome, step) is not None:
                    continue
                found = self._walk(finding, given, [*steps, step], budget)
                if found is not None:
                    return found
        return None

    def _decide(self, steps: Sequence[TraceStep], given: str | None) -> Pass | ConflictError:
        state = RunState.from_trace([s.entry() for s in steps], input=given)
        try:
            return self.reasoner.resolve(emit_state(self.reasoner, state), step=len(steps) + 1)
        except ConflictError as exc:
            return exc.with_traceback(None)

    def outputs(self, event: TraceStep) -> list[Any]:
        """What a step may have returned: nothing unless a condition reads it."""
        if event.status != "ok" or event.tool not in self.outputs_read:
            return [None]
        found = [m.outputs[event.tool] for m in self.models if event.tool in m.outputs]
        return _unique([*found, {}])

    def arguments(self, decided: Pass, tool: str) -> Iterator[dict[str, Any]]:
        """Arguments ``decided`` admits for a call of ``tool``: with the values later
        conditions read of them first, then any, then without those values (so that what
        later conditions read of them is undefined)."""
        checks = decided.argument_checks(tool)
        # INVARIANT: the tool is allowed, so no residual is undefined (that refuses it).
        if any(isinstance(c.residual, Undefined) for c in checks):
            return
        required: list[Term] = [c.residual for c in checks if c.kind == "allow_if"]  # type: ignore[misc]
        forbidden: list[Term] = [c.residual for c in checks if c.kind == "deny_if"]  # type: ignore[misc]
        params: dict[str, ParamType] = dict(self.declared.get(tool) or {})
        for c in checks:
            params.update(c.parameters)
        wanted = _unique(m.arguments[tool] for m in self.models if tool in m.arguments)
        tried: list[dict[str, Any]] = []
        for want in [*wanted, {}]:
            pinned = [
                Cmp("==", Arg(name), Const(_literal(value)))
                for name, value in want.items()
                if name in params and _literal(value) is not None
            ]
            if checks:
                answer = some_arguments([*required, *pinned], forbidden, params)
                if not isinstance(answer, dict):
                    continue
                found = {**want, **answer}
            else:
                found = dict(want)
            tried += [_filled(_json(found), params), _json(found)]
        read = self.arguments_read.get(tool, set())
        if read:
            tried += [{k: v for k, v in t.items() if k not in read} for t in tried]
        for arguments in _unique(tried):
            if decided.admits(tool, arguments).ok:
                yield arguments


_RUN = (Input, LastArg, LastOut, Outputs)


def _values_of(values: Mapping[Any, Any]) -> _Values:
    """A model's run values (by term) as outputs, arguments and input."""
    out = _Values()
    # Paths into outputs first: an `outputs(T)` item only where no path says what T returned.
    ordered = sorted(values.items(), key=lambda kv: not isinstance(kv[0], LastOut))
    for term, value in ordered:
        value = _json(value)
        if isinstance(term, LastOut):
            out.outputs[term.tool] = _put(out.outputs.get(term.tool), term.keys, value)
        elif isinstance(term, Outputs):
            out.outputs.setdefault(term.tool, value)
        elif isinstance(term, LastArg):
            out.arguments.setdefault(term.tool, {})[term.name] = value
        elif isinstance(term, Input) and isinstance(value, str):
            out.input = value
    return out


def _put(base: Any, keys: Sequence[str | int], value: Any) -> Any:
    """``base`` with ``value`` at the path ``keys`` (mappings for names, lists for
    indices); where ``base`` already holds something else there, ``base`` wins."""
    if not keys:
        return value if base is None else base
    key, rest = keys[0], keys[1:]
    if isinstance(key, str):
        if base is not None and not isinstance(base, dict):
            return base
        mapping = dict(base or {})
        mapping[key] = _put(mapping.get(key), rest, value)
        return mapping
    if base is not None and not isinstance(base, list):
        return base
    items = list(base or [])
    size = key + 1 if key >= 0 else -key
    items.extend([None] * (size - len(items)))
    at = key if key >= 0 else len(items) + key
    items[at] = _put(items[at], rest, value)
    return items


def _merged(a: Any, b: Any) -> Any:
    """Two outputs as one: mappings key by key, ``a`` winning elsewhere."""
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {**b, **{k: _merged(v, b.get(k)) for k, v in a.items()}}
    return a


def _json(value: Any) -> Any:
    """A model's value as JSON: a fraction as an integer or a float (a float reads back as
    the decimal it prints, so the replay decides whether it still passes)."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _literal(value: Any) -> Any:
    """A value as a condition's literal, or None (a list, or a float that is no number)."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return Fraction(repr(value))
    return None


_DEFAULTS: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "strings": [],
}


def _filled(arguments: dict[str, Any], params: Mapping[str, ParamType]) -> dict[str, Any]:
    """``arguments`` with a plain value for each parameter they do not give (an enum's first
    choice), so that an example is a whole call; opaque parameters stay out."""
    out = dict(arguments)
    for name, param in sorted(params.items()):
        if name in out:
            continue
        if param.choices is not None:
            out[name] = _json(param.choices[0])
        elif param.kind in _DEFAULTS:
            out[name] = _DEFAULTS[param.kind]
    return out


def _unique(values: Any) -> list[Any]:
    """``values`` without repeats (compared as JSON), in order."""
    seen: set[str] = set()
    out = []
    for v in values:
        key = json.dumps(v, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out
