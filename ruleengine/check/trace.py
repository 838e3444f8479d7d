"""Replaying a checker trace through the runtime: static and dynamic semantics are one.

``replay`` decides every prefix of a trace with ``Reasoner.decide`` (the requirements run
on real run states); ``confirm`` says whether a finding's trace, replayed, reaches that
finding: every step was allowed when it was taken, and the last state shows the finding.
``parse_trace`` reads a trace a person wrote (``explain --trace``), and ``permissions`` says
which ask-permission requirements each step of a trace goes through before its tool runs.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from ruleengine import _validate
from ruleengine.check.report import Finding, TraceStep
from ruleengine.errors import ConflictError, PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.reasoner import Reasoner
from ruleengine.requirements import AskPermissionRequirement, Requirement
from ruleengine.rules import Emitted
from ruleengine.state import STATUSES, RunState, TraceEntry

__all__ = [
    "Permission",
    "confirm",
    "emit_state",
    "parse_trace",
    "permissions",
    "refused",
    "replay",
    "shows",
]


def _is_async(reasoner: Reasoner) -> bool:
    return any(
        getattr(r, "is_async", False) or inspect.iscoroutinefunction(getattr(r, "run", None))
        for r in reasoner.requirements
    )


def emit_state(reasoner: Reasoner, state: RunState) -> list[Emitted]:
    """What the requirements emit on ``state``, awaiting async ones when there are some."""
    if _is_async(reasoner):
        return anyio.run(reasoner.aemit, state)
    return reasoner.emit(state)


def replay(
    reasoner: Reasoner,
    trace: Sequence[TraceStep | TraceEntry | Mapping[str, Any]],
    *,
    input: str | None = None,
) -> list[Pass | ConflictError]:
    """The decision before each step of ``trace``, then after its last step. The steps are
    ``TraceStep``s (a finding's trace, with its example arguments and outputs), tool names
    (status ``ok``), ``(name, status)`` pairs or step dicts, as ``RunState.from_trace``
    takes them; ``input`` is the run's input (a finding's ``input``)."""
    _reasoner(reasoner, "replay")
    if isinstance(trace, str):
        raise PolicyError(
            f"replay: trace=`{trace!r}` is one string, not a list of steps",
            hint=f"pass a list: `[{trace!r}]`",
        )
    entries = [
        s.entry() if isinstance(s, TraceStep) else s
        for s in _validate.sequence(trace, name="trace")
    ]
    steps = RunState.from_trace(entries, input=input).steps
    outcomes: list[Pass | ConflictError] = []
    state = RunState(input=input)
    for n in range(len(steps) + 1):
        if n:
            state = state.with_step(steps[n - 1])  # summaries carried on, not recomputed
        try:
            outcomes.append(reasoner.resolve(emit_state(reasoner, state), step=n + 1))
        except ConflictError as exc:
            outcomes.append(exc.with_traceback(None))  # a value now: no frames kept alive
    return outcomes


def confirm(reasoner: Reasoner, finding: Finding) -> str | None:
    """Why ``finding``'s trace does not replay to it, or ``None`` when it does: every step
    is allowed where it is taken and its call admitted (``Pass.admits``, on the step's
    example arguments), and the last state shows the finding."""
    _reasoner(reasoner, "confirm")
    if not isinstance(finding, Finding):
        raise PolicyError(
            f"confirm: expected a `Finding` (from a report's `findings`), got "
            f"`{type(finding).__name__}`"
        )
    outcomes = replay(reasoner, finding.trace, input=finding.input)
    for n, step in enumerate(finding.trace):
        why = refused(outcomes[n], step)
        if why is not None:
            return f"step {n + 1}: {why}"
    return shows(finding, outcomes[-1])


def refused(before: Pass | ConflictError, step: TraceStep) -> str | None:
    """Why ``step`` could not be taken after a decision ``before`` (None: it could)."""
    if isinstance(before, ConflictError):
        return f"the state before it conflicts ({before.kind})"
    if step.tool not in before.allowed or step.tool == "final_answer":
        return f"`{step.tool}` is not allowed then ({before.allowed})"
    admission = before.admits(step.tool, step.arguments or {})
    if not admission.ok:
        return f"the call of `{step.tool}` is not admitted: {admission.reason}"
    return None


def shows(finding: Finding, last: Pass | ConflictError) -> str | None:
    """Why the decision ``last`` at the end of ``finding``'s trace does not show it (None:
    it does)."""
    match finding.id:
        case "deadlock":
            if not (isinstance(last, ConflictError) and last.kind == "deadlock"):
                return f"the last state does not deadlock: {_show(last)}"
        case "forced-conflict":
            if not (isinstance(last, ConflictError) and finding.tool in last.forced):
                return f"the last state is no forced-conflict on `{finding.tool}`: {_show(last)}"
        case "forced-tie":
            if not (isinstance(last, Pass) and last.forced_tie is not None):
                return f"the last state has no forced tie: {_show(last)}"
        case "no-finish":
            if isinstance(last, ConflictError):
                return "the last state conflicts (a no-finish state must not)"
        case _:
            if finding.trace:
                return f"a `{finding.id}` finding has no trace"
    return None


def _reasoner(reasoner: object, where: str) -> None:
    if not isinstance(reasoner, Reasoner):
        raise PolicyError(
            f"{where}: expected a `Reasoner`, got `{type(reasoner).__name__}`",
            hint="a policy's is `policy.reasoner()`",
        )


def _show(outcome: Pass | ConflictError) -> str:
    if isinstance(outcome, ConflictError):
        return f"conflict ({outcome.kind}, forced {outcome.forced})"
    return f"pass (allowed {outcome.allowed}, forced {outcome.forced})"


# -- traces people write -----------------------------------------------------------------------

TEXT_HINT = "write the steps as `tool` or `tool:status`, separated by commas: `a,b:error,c`"
JSON_HINT = (
    "a JSON trace is a list of steps, each a tool name, a `[tool, status]` pair or a "
    '`{"tool": …, "status": …}` object (with `arguments` and `output`, as `check` prints '
    'them): `["a", ["b", "error"]]`'
)


def parse_trace(
    text: str,
    tools: Sequence[str],
    *,
    where: str = "--trace",
    source: str | None = None,
    json_only: bool = False,
) -> tuple[list[TraceStep], bool]:
    """The steps ``text`` lists, and whether it ends with ``final_answer``; every mistake a
    ``PolicyError`` starting with ``where`` (``source``: the policy whose ``tools`` these
    are, for hints). ``text`` is JSON when it starts with ``[`` (or ``{`` or ``"``, to say
    it is not a list), or with ``json_only``: a list whose strings are tool names as they
    are, so a name may hold ``:`` or ``,``. Otherwise it is comma-separated ``tool`` or
    ``tool:status`` entries."""
    if json_only or text.lstrip()[:1] in ("[", "{", '"'):
        entries, hint = _json_entries(text, where), JSON_HINT
    else:
        entries, hint = _text_entries(text), TEXT_HINT
    steps: list[TraceStep] = []
    finish = False
    for n, (tool, status, shown, values) in enumerate(entries, 1):
        if not tool:
            raise PolicyError(f"{where}: entry {n} is empty", hint=hint)
        if tool == FINAL_ANSWER:
            if n != len(entries) or status != "ok":
                raise PolicyError(
                    f"{where}: `{shown}`: `final_answer` ends the run: only a plain "
                    "`final_answer` as the last entry",
                    hint=hint,
                )
            finish = True
            continue
        if tool not in tools:
            close = difflib.get_close_matches(tool, tools, n=1)
            maybe = f"did you mean `{close[0]}`? " if close else ""
            if hint is TEXT_HINT and shown in tools:  # `a:b` was read as tool `a`, status `b`
                maybe = (
                    f"`{shown}` is a tool: a name with `:` is written in a JSON list, "
                    f"`{json.dumps([shown], ensure_ascii=False)}`; "
                )
            raise PolicyError(
                f"{where}: unknown tool `{tool}` (entry {n})",
                hint=f"{maybe}the tools{f' of {source}' if source else ''}: "
                + ", ".join(f"`{t}`" for t in tools),
            )
        if status not in STATUSES:
            raise PolicyError(
                f"{where}: unknown status `{status}` for `{tool}` (entry {n})",
                hint="a status is `ok` (the default), `error` or `denied`",
            )
        steps.append(TraceStep(tool=tool, status=status, **values))
    return steps, finish


_Entry = tuple[str, str, str, dict[str, Any]]
"""A step as written: its tool, its status, how to show it in a message, and its example
values (``arguments``, ``output``: a JSON step as ``check`` prints it)."""


def _text_entries(text: str) -> list[_Entry]:
    if not text.strip():
        return []
    entries: list[_Entry] = []
    for entry in (e.strip() for e in text.split(",")):
        tool, _, status = entry.partition(":")
        entries.append((tool.strip(), status.strip() or "ok", entry, {}))
    return entries


def _json_entries(text: str, where: str) -> list[_Entry]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(
            f"{where}: invalid JSON: {exc.msg[:1].lower()}{exc.msg[1:]} "
            f"(line {exc.lineno}, column {exc.colno})",
            hint=JSON_HINT,
        ) from None
    except RecursionError:
        raise PolicyError(f"{where}: the JSON nests too deeply", hint=JSON_HINT) from None
    if not isinstance(data, list):
        raise PolicyError(f"{where}: `{_json(data)}` is not a list of steps", hint=JSON_HINT)
    return [_json_entry(item, n, where) for n, item in enumerate(data, 1)]


def _json_entry(item: object, n: int, where: str) -> _Entry:
    shown = _json(item)
    if isinstance(item, str):
        return item, "ok", shown, {}
    if isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item):
        return item[0], item[1], shown, {}
    if (
        isinstance(item, dict)
        and isinstance(item.get("tool"), str)
        and isinstance(item.get("status", "ok"), str)
        and isinstance(item.get("arguments", {}), dict)
        and set(item) <= {"tool", "status", "arguments", "output"}
    ):
        values = {k: item[k] for k in ("arguments", "output") if item.get(k) is not None}
        return item["tool"], item.get("status", "ok"), shown, values
    raise PolicyError(f"{where}: entry {n} is `{shown}`, not a step", hint=JSON_HINT)


def _json(value: object) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 60 else shown[:59] + "…"


# -- asking permission -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Permission:
    """An ask-permission requirement that covers a step's tool, and what it does about the
    call before the tool runs (as the agent's permission gate does)."""

    requirement: str
    priority: int
    answer: Literal["ask", "always", "approved", "refused"]
    """``ask``: its handler is asked; ``always``: ``always_allow`` approves without asking;
    ``approved``/``refused``: the answer of an earlier step is remembered."""
    remembered_from: int | None = None
    """The step (from 1) whose answer is remembered, for ``approved`` and ``refused``."""


def permissions(
    requirements: Sequence[Requirement], trace: Sequence[TraceStep]
) -> list[tuple[Permission, ...]]:
    """For each step of ``trace``, the enabled ask-permission requirements covering its
    tool, in the policy's order (``final_answer`` is never asked about)."""
    asking = [r for r in requirements if isinstance(r, AskPermissionRequirement) and r.enabled]
    result: list[tuple[Permission, ...]] = []
    for n, step in enumerate(trace):
        before = RunState.from_trace([(s.tool, s.status) for s in trace[:n]])
        covering = (r for r in asking if r.covers(step.tool))
        result.append(tuple(_permission(r, step.tool, before) for r in covering))
    return result


def _permission(req: AskPermissionRequirement, tool: str, before: RunState) -> Permission:
    """What ``req`` does about a call of ``tool`` after ``before``, in the order of the
    agent's gate: ``always_allow``, then a remembered answer, then asking."""
    if req.always_allow:
        return Permission(req.name, req.priority, "always")
    remembered = req.remembered(tool, before)
    if remembered is None:
        return Permission(req.name, req.priority, "ask")
    earlier = next(n for n, s in enumerate(before.steps, 1) if s.tool == tool)
    answer: Literal["approved", "refused"] = "approved" if remembered else "refused"
    return Permission(req.name, req.priority, answer, remembered_from=earlier)
