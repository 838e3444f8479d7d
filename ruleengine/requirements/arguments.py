"""``ArgumentsRequirement``: conditions on a tool's arguments and the run's values.

``allow_if`` conditions must hold for a call to be admitted, a call meeting a ``deny_if``
condition is refused, and a call meeting an ``ask_if`` condition needs permission first
(others do not). Conditions are text in Python syntax or terms built with the handles of
``ruleengine.conditions``; they are parsed when the requirement is made and typed against the
target's parameters when it is bound to the declared tools, so every mistake is reported at
load time. Each step it emits one ``ArgCheck`` per condition with the run's values bound; the
reasoner allows the tool only if some arguments pass them all, and the pass admits each call
on its own arguments (``Pass.admits``). A value the run does not have refuses the call.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ruleengine import _validate
from ruleengine._validate import _shown
from ruleengine.conditions.admission import ArgCheck, CheckKind
from ruleengine.conditions.bind import bind
from ruleengine.conditions.evaluate import Undefined
from ruleengine.conditions.handles import Handle
from ruleengine.conditions.parse import parse
from ruleengine.conditions.terms import (
    Arg,
    Input,
    LastArg,
    LastOut,
    Outputs,
    Term,
    text,
    walk,
)
from ruleengine.conditions.typecheck import Scope, check
from ruleengine.conditions.types import (
    Parameters,
    ParamType,
    ToolSpec,
    parameters_from_model,
    parameters_from_schema,
    parameters_from_spec,
)
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.requirements._targets import as_refs, names_now, resolve
from ruleengine.requirements.base import DEFAULT_PRIORITY, Requirement
from ruleengine.requirements.monitor import Monitor
from ruleengine.requirements.permission import PermissionHandler
from ruleengine.rules import Item, Rule
from ruleengine.state import RunState, Status

__all__ = ["ArgumentsMonitor", "ArgumentsRequirement", "parameters_of"]

_KINDS: tuple[CheckKind, ...] = ("allow_if", "deny_if", "ask_if")

FINAL_ANSWER_PARAMETERS: Parameters = {"response": ParamType("string")}
"""What ``final_answer`` takes unless it is declared otherwise: the answer's text."""


def parameters_of(tool: object) -> Parameters | None:
    """A declared tool's parameters, where it says them: a ``parameters`` mapping (types by
    name, or ``ParamType`` objects), an ``input_schema`` (JSON Schema), or an ``input_model``
    (pydantic); ``None`` when it says nothing (a tool declared by name)."""
    if isinstance(tool, str | tuple):
        return None
    if isinstance(tool, ToolSpec):
        return dict(tool.parameters) if tool.parameters is not None else None
    name = getattr(tool, "name", "?")
    owner = f"tool `{name}`"
    params = getattr(tool, "parameters", None)
    if isinstance(params, Mapping):
        if all(isinstance(v, ParamType) for v in params.values()):
            return dict(params)
        return parameters_from_spec(params, owner=owner)
    schema = getattr(tool, "input_schema", None)
    if isinstance(schema, Mapping):
        return parameters_from_schema(schema, owner=owner)
    model = getattr(tool, "input_model", None)
    if isinstance(model, type) and hasattr(model, "model_json_schema"):
        return parameters_from_model(model, owner=owner)
    return None


class ArgumentsRequirement(Requirement):
    """Conditions on the calls of one tool (see the module's docstring).

    ``target`` is a tool (a name or a tool object); ``allow_if``, ``deny_if`` and ``ask_if``
    are each a condition or a list of them (text, or a handle such as
    ``arg.amount <= last("lookup_order").output.price``); ``reason`` is what a refused call
    is told (by default, the conditions it failed). An agent asks ``handler`` (as
    ``AskPermissionRequirement`` asks its own, within ``timeout`` seconds) before a call that
    meets an ``ask_if`` condition runs; a refusal is a ``denied`` step.
    """

    def __init__(
        self,
        target: object,
        *,
        allow_if: object = None,
        deny_if: object = None,
        ask_if: object = None,
        reason: str | None = None,
        handler: PermissionHandler | None = None,
        timeout: float | None = None,
        priority: int = DEFAULT_PRIORITY,
        enabled: bool = True,
        name: str | None = None,
    ) -> None:
        early_owner = _validate.owner_of(name if isinstance(name, str) else "arguments")
        refs = as_refs(target, owner=early_owner, parameter="target")
        if len(refs) != 1:
            raise PolicyError(f"{early_owner}: target must be one tool", parameter="target")
        self._target_ref = refs[0]
        early = names_now(refs)
        default = f"arguments({early[0] if early else '?'})"
        super().__init__(
            name=name if name is not None else default, priority=priority, enabled=enabled
        )
        owner = _validate.owner_of(self.name)
        self.reason = _validate.optional_text(reason, name="reason", owner=owner)
        if handler is not None and not callable(handler):
            raise PolicyError(
                f"{owner}: handler=`{handler!r:.60}` is not callable", parameter="handler"
            )
        self.handler: PermissionHandler | None = handler
        """Answers an ``ask_if`` question (``handler(tool, arguments)``, sync or async);
        ``None``: the agent's default, a terminal prompt."""
        if timeout is not None:
            _validate.number(timeout, name="timeout", owner=owner)
        self.timeout = timeout
        """Seconds a handler has to answer; no answer is a refusal."""
        self._written: list[tuple[CheckKind, Term]] = []
        for kind, value in zip(_KINDS, (allow_if, deny_if, ask_if), strict=True):
            for item in _conditions(value, owner, kind):
                self._written.append((kind, item))
        if not self._written:
            raise PolicyError(
                f"{owner}: give at least one of `allow_if`, `deny_if`, `ask_if`",
                hint='e.g. ArgumentsRequirement("refund", allow_if="arg.amount <= 100")',
            )
        self._bound: tuple[tuple[CheckKind, Term], ...] | None = None
        self._target: str | None = None
        self._parameters: tuple[tuple[str, ParamType], ...] = ()
        self._scope: dict[str, Parameters | None] = {}

    @property
    def asks(self) -> bool:
        """Whether it has an ``ask_if`` condition (the agent then asks before such calls)."""
        return any(kind == "ask_if" for kind, _ in self._written)

    @property
    def target(self) -> str | None:
        """The target tool's name, once bound (or given by name)."""
        if self._target is not None:
            return self._target
        early = names_now((self._target_ref,))
        return early[0] if early else None

    @property
    def conditions(self) -> tuple[tuple[CheckKind, str], ...]:
        """Each condition with its kind, as text."""
        terms = self._bound if self._bound is not None else tuple(self._written)
        return tuple((kind, text(term)) for kind, term in terms)

    @property
    def declared(self) -> Mapping[str, Parameters | None]:
        """The declared tools' parameters, as binding found them (empty before binding):
        what an earlier call's ``last("T").arguments.NAME`` is."""
        return dict(self._scope)

    def bind(self, tools: Sequence[object]) -> ArgumentsRequirement:
        owner = _validate.owner_of(self.name)
        tools = _validate.sequence(tools, name="tools", owner=owner)
        target = resolve(self._target_ref, tools, owner=owner, parameter="target")
        declared: dict[str, Parameters | None] = {}
        for tool in tools:
            tool_name = tool if isinstance(tool, str) else getattr(tool, "name", None)
            if isinstance(tool, tuple) and tool:
                tool_name = tool[0]
            if isinstance(tool_name, str):
                declared[tool_name] = parameters_of(tool)
        # Bound again to the same tools by name (the checker, a policy's copy): what the
        # first binding learnt of their parameters still holds.
        for tool_name, known in self._scope.items():
            if declared.get(tool_name) is None and known is not None:
                declared[tool_name] = known
        if declared.get(FINAL_ANSWER) is None:
            # The built-in answer tool takes the answer's text (an agent with a typed answer
            # gives its own `final_answer`, whose input model says its fields).
            declared[FINAL_ANSWER] = FINAL_ANSWER_PARAMETERS
        params = declared.get(target) or {}
        scope = Scope(target, params, declared)
        typed = []
        for kind, term in self._written:
            where = f"{owner}: {kind}"
            if not params and any(isinstance(t, Arg) for t in walk(term)):
                raise PolicyError(
                    f"{where}: condition `{text(term)}` names an argument, but tool "
                    f"`{target}` declares no parameters",
                    hint='declare them: `parameters = { amount = "number" }` in a policy '
                    "file, or a tool with an input model",
                )
            typed.append((kind, check(term, scope, where=where)))
        bound = copy.copy(self)
        bound._bound = tuple(typed)
        bound._target = target
        bound._target_ref = target
        bound._parameters = tuple(sorted(params.items()))
        bound._scope = declared
        return bound

    def monitor(self) -> ArgumentsMonitor | None:
        """The checker's view of this requirement (see ``ArgumentsMonitor``); None before
        binding."""
        if self._bound is None or self._target is None:
            return None
        return ArgumentsMonitor(self._target, self._bound, self._parameters, self.reason)

    def run(self, state: RunState) -> list[ArgCheck]:
        if self._bound is None or self._target is None:
            raise PolicyError(
                f"requirement `{self.name}` is not bound to its tools",
                hint="give it to a `Reasoner`, a `Policy` or an agent, which bind it",
            )
        out = []
        for kind, term in self._bound:
            out.append(
                ArgCheck(
                    self._target,
                    kind,
                    text(term),
                    bind(term, state),
                    self._parameters,
                    self.reason,
                )
            )
        return out


def _conditions(value: object, owner: str, kind: str) -> list[Term]:
    if value is None:
        return []
    items: Sequence[Any]
    if isinstance(value, str | Handle):
        items = [value]
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise PolicyError(
            f"{owner}: {kind}=`{_shown(value)}` is not a condition",
            hint="a condition is text such as `arg.amount <= 100`, or a list of them",
            parameter=kind,
        )
    out = []
    for item in items:
        if isinstance(item, Handle):
            out.append(item.term)
        elif isinstance(item, str):
            out.append(parse(item, where=f"{owner}: {kind}"))
        else:
            raise PolicyError(
                f"{owner}: {kind} holds `{_shown(item)}`, not a condition",
                parameter=kind,
            )
    return out


class ArgumentsMonitor(Monitor):
    """What the static checker knows of an arguments requirement: which tools its conditions
    read (``last``, ``outputs``) have succeeded, and nothing of the values.

    A condition that reads no run value is emitted as it is (an ``ArgCheck``: the reasoner
    decides it, with the step's other conditions, exactly). One that reads the latest call of
    a tool that never succeeded refuses every call, as at run time; one whose only run values
    are the outputs of tools that never succeeded reads empty lists, and is emitted bound to
    them. One that reads values the run has (an output, an argument, the input, the outputs
    of a tool that ran) is opaque: together, such conditions either admit some arguments
    (nothing is emitted) or do not (the target is denied), so they make one opaque check
    however many they are (an ``ask_if`` never refuses, so it makes none). Every pass the
    runtime decides is one of these, so what the checker proves for every value of the check
    holds for every value of the outputs; a finding that needs some values says it depends
    on them (and may need values no run has: it is then a false alarm, flagged as such).
    """

    def __init__(
        self,
        target: str,
        conditions: tuple[tuple[CheckKind, Term], ...],
        parameters: tuple[tuple[str, ParamType], ...],
        reason: str | None,
    ) -> None:
        self.target = target
        self.conditions = conditions
        self.parameters = parameters
        self.reason = reason
        read: list[str] = []
        self._reads: list[tuple[str, ...]] = []
        self._opaque: list[int] = []
        for i, (_, term) in enumerate(conditions):
            tools = tuple(dict.fromkeys(_tools_read(term)))
            self._reads.append(tools)
            read.extend(t for t in tools if t not in read)
            if any(isinstance(t, _VALUES) for t in walk(term)):
                self._opaque.append(i)
        self.read = tuple(read)
        self._refusing = tuple(i for i in self._opaque if conditions[i][0] != "ask_if")
        self.checks = 1 if self._refusing else 0

    def initial(self) -> frozenset[str]:
        return frozenset()

    def advance(self, view: Hashable, tool: str, status: Status) -> frozenset[str]:
        assert isinstance(view, frozenset)
        if status == "ok" and tool in self.read and tool not in view:
            return view | {tool}
        return view

    def tools(self) -> frozenset[str]:
        return frozenset(self.read)

    def check_keys(self) -> tuple[Hashable, ...]:
        if not self._refusing:
            return ()
        read = tuple((self.conditions[i][0], text(self.conditions[i][1])) for i in self._refusing)
        return (("arguments", self.target, read),)

    def emit(self, view: Hashable, checks: tuple[bool, ...] = ()) -> Sequence[Item]:
        assert isinstance(view, frozenset)
        out: list[Item] = []
        opaque = set(self._opaque)
        undecided: list[str] = []
        for i, (kind, term) in enumerate(self.conditions):
            missing = [t for t in _last_read(term) if t not in view]
            shown = text(term)
            if missing:
                value = Undefined(
                    f"last({missing[0]!r})", "does not exist: the tool never succeeded", True
                )
                out.append(ArgCheck(self.target, kind, shown, value, self.parameters, self.reason))
            elif i not in opaque:
                out.append(ArgCheck(self.target, kind, shown, term, self.parameters, self.reason))
            elif _only_outputs_of(term, view):
                # every value it reads is `outputs(T)` of a tool that never succeeded: the
                # empty list, at run time too, so the condition is decided as it is
                empty = bind(term, RunState())
                assert not isinstance(empty, Undefined)
                out.append(ArgCheck(self.target, kind, shown, empty, self.parameters, self.reason))
            elif kind != "ask_if":
                undecided.append(f"{kind} `{shown}`")
        admits = checks[0] if checks else True
        if undecided and not admits:
            # the check is whether the conditions left open admit some arguments together
            what = undecided[0] if len(undecided) == 1 else "; ".join(undecided)
            why = self.reason or f"{what} admits no arguments for these values"
            out.append(Rule(self.target, allowed=False, reason=why))
        return tuple(out)


_VALUES = (Input, LastArg, LastOut, Outputs)


def _only_outputs_of(term: Term, view: frozenset[str]) -> bool:
    """Whether every run value ``term`` reads is ``outputs(T)`` of a tool not in ``view``."""
    return all(
        isinstance(t, Outputs) and t.tool not in view for t in walk(term) if isinstance(t, _VALUES)
    )


def _tools_read(term: Term) -> list[str]:
    return [t.tool for t in walk(term) if isinstance(t, LastArg | LastOut | Outputs)]


def _last_read(term: Term) -> list[str]:
    return [t.tool for t in walk(term) if isinstance(t, LastArg | LastOut)]
