"""Findings about conditions on arguments, from the conditions alone (no history needed).

For each tool, the conditions of the policy's arguments requirements that read no run value
are the same at every step, so Z3 answers for every history at once:

- ``unsatisfiable-condition`` (error): no arguments satisfy them together, so the tool can
  never be called; the core is a minimal set of them (by requirement);
- ``shadowed-condition`` (warning): one of them never decides, being implied by the others
  (an ``allow_if`` every admissible call meets anyway, a ``deny_if`` no otherwise admissible
  call meets).

Conditions that read run values are left out (they may decide differently at each step); an
answer Z3 cannot give within its resource limit claims nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ruleengine.check.report import SEVERITY, Finding
from ruleengine.conditions.admission import clashing, some_arguments
from ruleengine.conditions.terms import Input, LastArg, LastOut, Outputs, Term, text, walk
from ruleengine.conditions.types import ParamType
from ruleengine.passes import CoreEntry
from ruleengine.requirements.arguments import ArgumentsRequirement

__all__ = ["condition_findings"]

_RUN_VALUES = (Input, LastArg, LastOut, Outputs)


@dataclass(frozen=True, slots=True)
class _Condition:
    requirement: ArgumentsRequirement
    kind: str
    term: Term
    text: str


def _static(term: Term) -> bool:
    return not any(isinstance(t, _RUN_VALUES) for t in walk(term))


def _entry(c: _Condition) -> CoreEntry:
    return CoreEntry(
        requirement=c.requirement.name, priority=c.requirement.priority, rule=f"{c.kind} `{c.text}`"
    )


def condition_findings(requirements: Sequence[object]) -> list[Finding]:
    """The two findings above, for the enabled arguments requirements of ``requirements``
    (bound), tool by tool in the order they first appear."""
    by_tool: dict[str, list[_Condition]] = {}
    parameters: dict[str, dict[str, ParamType]] = {}
    for req in requirements:
        if not isinstance(req, ArgumentsRequirement) or not req.enabled or req.target is None:
            continue
        monitor = req.monitor()
        if monitor is None:
            continue
        parameters.setdefault(req.target, {}).update(dict(monitor.parameters))
        for kind, term in monitor.conditions:
            if kind != "ask_if" and _static(term):
                by_tool.setdefault(req.target, []).append(_Condition(req, kind, term, text(term)))
    out: list[Finding] = []
    for tool, conditions in by_tool.items():
        params = parameters[tool]
        allow = [c for c in conditions if c.kind == "allow_if"]
        deny = [c for c in conditions if c.kind == "deny_if"]
        answer = some_arguments([c.term for c in allow], [c.term for c in deny], params)
        if answer is False:
            found = clashing([c.term for c in allow], [c.term for c in deny], params)
            core = (
                [allow[i] for i in found[0]] + [deny[i] for i in found[1]]
                if found is not None
                else conditions
            )
            shown = " and ".join(f"{c.kind} `{c.text}`" for c in core)
            out.append(
                Finding(
                    id="unsatisfiable-condition",
                    severity=SEVERITY["unsatisfiable-condition"],
                    tool=tool,
                    message=f"no arguments of `{tool}` satisfy {shown}: it can never be called",
                    core=tuple(_entry(c) for c in core),
                )
            )
            continue
        if answer is None:
            continue
        for c in conditions:
            others_allow = [o.term for o in allow if o is not c]
            others_deny = [o.term for o in deny if o is not c]
            if c.kind == "allow_if":
                # Shadowed: no call the others admit fails it.
                verdict = some_arguments(others_allow, [*others_deny, c.term], params)
                how = "every call the other conditions admit meets it"
            else:
                # Shadowed: no call the others admit meets it.
                verdict = some_arguments([*others_allow, c.term], others_deny, params)
                how = "no call the other conditions admit meets it"
            if verdict is not False:
                continue
            out.append(
                Finding(
                    id="shadowed-condition",
                    severity=SEVERITY["shadowed-condition"],
                    tool=tool,
                    requirement=c.requirement.name,
                    message=f"{c.kind} `{c.text}` of `{c.requirement.name}` never decides a call"
                    f" of `{tool}`: {how}",
                    core=tuple(_entry(o) for o in conditions),
                )
            )
    return out
