"""``diff`` on conditions on arguments: a call one policy admits and the other refuses (or
asks about and the other does not), or a proof that the two admit the same calls, and ask
about the same ones, in every state.

``differing`` names the tools whose conditions differ (as written). ``call_witness`` searches
concrete histories, breadth-first and bounded (``MAX_DEPTH`` steps, ``MAX_DECISIONS``
decisions), with example values (``examples.Reads``: models of both policies' conditions,
and the empty output); at each state where both passes allow such a tool it asks Z3 for
arguments one policy's residual conditions admit and the other's refuse
(``some_arguments``), and keeps a call only when ``Pass.admits`` says so in the runtime: a
witness replays by construction. Where the tool's ``ask_if`` conditions differ and no such
call is found there, it asks Z3 for arguments both admit with some ``ask_if`` of one side
holding and none of the other's, kept only when the two ``Admission.ask`` differ; such a
witness is returned once every history as short as its own is decided (a refusal that short
comes first). ``unproved`` asks Z3 whether each such tool's conditions
admit the same calls, and ask about the same ones, for every call and every value of the run
values (``same_calls``); conditions that read different run values are not compared (a value
the run lacks refuses every call on one side only).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ruleengine.check.examples import Reads, _filled, _json, _unique
from ruleengine.check.report import CallVerdict, CallWitness, TraceStep
from ruleengine.check.trace import emit_state
from ruleengine.conditions.admission import (
    Admission,
    ArgCheck,
    same_calls,
    separating_run,
    some_arguments,
)
from ruleengine.conditions.evaluate import Undefined
from ruleengine.conditions.terms import All, AnyOf, Negation, Term, run_values, walk
from ruleengine.conditions.types import Parameters, ParamType
from ruleengine.errors import ConflictError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.reasoner import Reasoner
from ruleengine.requirements.arguments import ArgumentsRequirement
from ruleengine.state import STATUSES, RunState

__all__ = ["MAX_DECISIONS", "MAX_DEPTH", "Found", "call_witness", "differing", "unproved"]

MAX_DEPTH = 3
"""Steps of the longest history ``call_witness`` tries."""

MAX_DECISIONS = 300
"""Histories ``call_witness`` decides at most (each with both policies)."""


@dataclass(frozen=True, slots=True)
class Found:
    """A history after which the two policies decide differently: their passes, or a call."""

    trace: tuple[TraceStep, ...]
    input: str | None
    old: Pass | ConflictError
    new: Pass | ConflictError
    call: CallWitness | None
    """None when the passes themselves differ."""


_Side = tuple[list[Term], list[Term], list[Term]]


def _conditions(reasoner: Reasoner) -> dict[str, _Side]:
    """Per tool, the ``allow_if``, ``deny_if`` and ``ask_if`` conditions of the enabled
    arguments requirements (typed, as written)."""
    out: dict[str, _Side] = {}
    for req in reasoner.requirements:
        monitor = req.monitor() if isinstance(req, ArgumentsRequirement) and req.enabled else None
        if monitor is None:
            continue
        side = out.setdefault(monitor.target, ([], [], []))
        for kind, term in monitor.conditions:
            side[("allow_if", "deny_if", "ask_if").index(kind)].append(term)
    return out


def _shown(side: Sequence[list[Term]]) -> Counter[tuple[int, str]]:
    from ruleengine.conditions.terms import text

    return Counter((i, text(t)) for i, group in enumerate(side) for t in group)


def differing(left: Reasoner, right: Reasoner) -> list[str]:
    """The tools whose conditions differ between the two policies (as written)."""
    a, b = _conditions(left), _conditions(right)
    empty: _Side = ([], [], [])
    return [
        t for t in dict.fromkeys([*a, *b]) if _shown(a.get(t, empty)) != _shown(b.get(t, empty))
    ]


def _declared(reasoner: Reasoner) -> dict[str, Parameters]:
    out: dict[str, Parameters] = {}
    for req in reasoner.requirements:
        if isinstance(req, ArgumentsRequirement):
            for tool, params in req.declared.items():
                if params is not None:
                    out.setdefault(tool, params)
    return out


def unproved(left: Reasoner, right: Reasoner) -> str | None:
    """Why the two policies' conditions are not proved to admit the same calls in every
    state (None: proved, tool by tool)."""
    a, b = _conditions(left), _conditions(right)
    declared = {**_declared(right), **_declared(left)}
    empty: _Side = ([], [], [])
    for tool in differing(left, right):
        old, new = a.get(tool, empty), b.get(tool, empty)
        reads = [{r for group in side for t in group for r in _read(t)} for side in (old, new)]
        if reads[0] != reads[1]:
            return f"the conditions on `{tool}` read different values of the run"
        params: dict[str, ParamType] = dict(declared.get(tool) or {})
        answer = same_calls(old, new, params, tools=declared)
        if answer is not True:
            found = "Z3 finds calls" if answer is False else "Z3 cannot tell whether calls"
            return (
                f"{found} of `{tool}` that the two policies' conditions decide differently"
                " for some values of the run, which no history tried here gives"
            )
    return None


def _read(term: Term) -> list[object]:
    """The run values a condition reads, with the kind each is read as."""
    from ruleengine.conditions.terms import Expect

    wrapped = [(t.of, t.kind) for t in walk(term) if isinstance(t, Expect)]
    return [*wrapped, *run_values(term)]


# -- a witness ---------------------------------------------------------------------------------


def call_witness(left: Reasoner, right: Reasoner, tools: Sequence[str]) -> Found | None:
    """A short history (with example values) after which the passes differ, or a call of one
    of ``tools`` one policy admits and the other refuses, or one both admit and only one asks
    about (the shortest history first; at equal length, a refusal first); None when none is
    found within the bounds."""
    reads = [r for r in (Reads.of(left), Reads.of(right)) if r is not None]
    if reads:
        # Run values under which the two decide some call differently (a price between two
        # limits): histories that hold them are tried too.
        for values in _separating(left, right):
            reads[0].add_run(values)
    inputs: list[str | None] = [None]
    if any(r.input_read for r in reads):
        models = [m for r in reads for m in r.models]
        inputs = [*_unique(m.input for m in models if m.input is not None), None]
    decisions = 0
    # The first call only one policy asks about, reported once every history as short as
    # its own is decided: a refusal (or passes that differ) that short comes first.
    asked: Found | None = None
    asking = _asks_differ(left, right, tools)
    for given in inputs:
        queue: deque[tuple[TraceStep, ...]] = deque([()])
        while queue and decisions < MAX_DECISIONS:
            steps = queue.popleft()
            if asked is not None and len(steps) > len(asked.trace):
                return asked
            decisions += 1
            try:
                old, new = _decide(left, steps, given), _decide(right, steps, given)
            except RuleEngineError:
                continue  # a requirement failed on these values
            if not isinstance(old, Pass) or not isinstance(new, Pass):
                if isinstance(old, Pass) or isinstance(new, Pass):
                    return Found(steps, given, old, new, None)
                continue
            if _view(old) != _view(new):
                return Found(steps, given, old, new, None)
            for tool in (t for t in tools if t in old.allowed):
                call = _call(old, new, tool, reads, ask=asked is None and tool in asking)
                if call is not None and call.old.admitted != call.new.admitted:
                    return Found(steps, given, old, new, call)
                if call is not None:
                    asked = Found(steps, given, old, new, call)
            if len(steps) < MAX_DEPTH:
                queue.extend((*steps, s) for s in _next_steps(old, new, reads))
        if asked is not None:
            return asked
    return None


def _separating(left: Reasoner, right: Reasoner) -> list[dict[Term, Any]]:
    """Per tool whose conditions differ (as written), run values under which they decide
    some call differently (``separating_run``), where Z3 finds some."""
    a, b = _conditions(left), _conditions(right)
    declared = {**_declared(right), **_declared(left)}
    empty: _Side = ([], [], [])
    out = []
    for tool in differing(left, right):
        params: dict[str, ParamType] = dict(declared.get(tool) or {})
        found = separating_run(a.get(tool, empty), b.get(tool, empty), params, tools=declared)
        if found:
            out.append(found)
    return out


def _asks_differ(left: Reasoner, right: Reasoner, tools: Sequence[str]) -> list[str]:
    """The ``tools`` whose ``ask_if`` conditions differ (as written): with the same ones, a
    call both policies admit is asked about by both or by neither."""
    a, b = _conditions(left), _conditions(right)
    empty: _Side = ([], [], [])
    return [t for t in tools if _shown(a.get(t, empty)[2:]) != _shown(b.get(t, empty)[2:])]


def _decide(reasoner: Reasoner, steps: Sequence[TraceStep], given: str | None) -> Any:
    state = RunState.from_trace([s.entry() for s in steps], input=given)
    try:
        return reasoner.resolve(emit_state(reasoner, state), step=len(steps) + 1)
    except ConflictError as exc:
        return exc.with_traceback(None)


def _view(p: Pass) -> tuple[object, ...]:
    return (frozenset(p.allowed), frozenset(p.hidden), p.forced, p.can_stop)


def _next_steps(old: Pass, new: Pass, reads: Sequence[Reads]) -> list[TraceStep]:
    """One step for each tool both allow and each status, with arguments both admit (the
    first found) and each candidate output."""
    out: list[TraceStep] = []
    for tool in old.allowed:
        if tool == FINAL_ANSWER:
            continue
        arguments = next(
            (a for r in reads for a in r.arguments(old, tool) if new.admits(tool, a).ok),
            {} if old.admits(tool, {}).ok and new.admits(tool, {}).ok else None,
        )
        if arguments is None:
            continue
        for status in STATUSES:
            bare = TraceStep(tool=tool, status=status)
            outputs = _unique(o for r in reads for o in r.outputs(bare)) or [None]
            for output in outputs:
                out.append(bare.model_copy(update={"arguments": arguments, "output": output}))
    return out


def _of(checks: Sequence[ArgCheck], kind: str) -> list[Term]:
    """The residuals of ``checks`` of one kind."""
    out = []
    for c in checks:
        if c.kind == kind:
            # INVARIANT: the callers skip a tool with an undefined residual (`_bound`).
            assert not isinstance(c.residual, Undefined)
            out.append(c.residual)
    return out


def _admits(checks: Sequence[ArgCheck]) -> Term:
    """One term for what a call must meet: every ``allow_if`` and no ``deny_if``."""
    return All((*_of(checks, "allow_if"), Negation(AnyOf(tuple(_of(checks, "deny_if"))))))


def _bound(old: Pass, new: Pass, tool: str) -> tuple[tuple[ArgCheck, ...], ...] | None:
    """Both passes' checks on ``tool``; None when a value they read is undefined (each call
    is refused on that side, and the passes already tell whether the tool is allowed)."""
    checks = (old.argument_checks(tool), new.argument_checks(tool))
    if any(isinstance(c.residual, Undefined) for side in checks for c in side):
        return None
    return checks


def _parameters(old: Pass, new: Pass, tool: str, reads: Sequence[Reads]) -> dict[str, ParamType]:
    """The parameters of ``tool``: declared, and those its checks on either side name."""
    params: dict[str, ParamType] = {}
    for r in reads:
        params.update(r.declared.get(tool) or {})
    for side in (old, new):
        for c in side.argument_checks(tool):
            params.update(c.parameters)
    return params


def _examples(old: Pass, new: Pass, tool: str, reads: Sequence[Reads]) -> list[dict[str, Any]]:
    """Example arguments either pass admits for a call of ``tool``, each also without each
    of its arguments (one side may read one the other does not)."""
    out: list[dict[str, Any]] = []
    for r in reads:
        for decided in (old, new):
            admitted = list(r.arguments(decided, tool))
            out += admitted
            out += [{k: v for k, v in a.items() if k != name} for a in admitted for name in a]
    return out


def _modelled(answer: dict[str, Any] | bool | None, params: dict[str, ParamType]) -> list[Any]:
    """A Z3 model as candidate calls: every parameter given, and only those it names."""
    if not isinstance(answer, dict):
        return []
    return [_filled(_json(answer), params), _json(answer)]


def _witness(tool: str, arguments: dict[str, Any], a: Admission, b: Admission) -> CallWitness:
    def verdict(admission: Admission) -> CallVerdict:
        return CallVerdict(admitted=admission.ok, reason=admission.reason, ask=admission.ask)

    return CallWitness(tool=tool, arguments=arguments, old=verdict(a), new=verdict(b))


def _call(
    old: Pass, new: Pass, tool: str, reads: Sequence[Reads], *, ask: bool
) -> CallWitness | None:
    """A call of ``tool`` one pass admits and the other refuses; failing one, with ``ask``,
    a call both admit and only one asks about."""
    checks = _bound(old, new, tool)
    if checks is None:
        return None
    params = _parameters(old, new, tool, reads)
    examples = _examples(old, new, tool, reads)
    candidates: list[dict[str, Any]] = []
    for mine, other in (checks, checks[::-1]):
        forbidden = [*_of(mine, "deny_if"), *([_admits(other)] if other else [])]
        answer = some_arguments(_of(mine, "allow_if"), forbidden, params)
        candidates += _modelled(answer, params)
    for arguments in _unique([*candidates, *examples]):
        a, b = old.admits(tool, arguments), new.admits(tool, arguments)
        if a.ok != b.ok:
            return _witness(tool, arguments, a, b)
    if not ask:
        return None
    for arguments in _unique([*_asking(checks, params), *examples]):
        a, b = old.admits(tool, arguments), new.admits(tool, arguments)
        if a.ok and b.ok and bool(a.ask) != bool(b.ask):
            return _witness(tool, arguments, a, b)
    return None


def _asking(
    checks: tuple[tuple[ArgCheck, ...], ...], params: dict[str, ParamType]
) -> list[dict[str, Any]]:
    """Candidate calls both sides' checks admit and only one side asks about: Z3's arguments
    that meet every ``allow_if`` and no ``deny_if`` of both, some ``ask_if`` of one side and
    none of the other's, every ``ask_if`` of the asking side readable (one that reads a
    missing argument refuses the call)."""
    both = [c for side in checks for c in side]
    out: list[dict[str, Any]] = []
    for mine, other in (checks, checks[::-1]):
        asking = _of(mine, "ask_if")
        if not asking:
            continue
        required = [*_of(both, "allow_if"), AnyOf(tuple(asking))]
        forbidden = [*_of(both, "deny_if"), *_of(other, "ask_if")]
        out += _modelled(some_arguments(required, forbidden, params, readable=asking), params)
    return out
