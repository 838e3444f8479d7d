"""What a step's conditions mean for a tool: ``ArgCheck`` records, and admitting one call.

A requirement with conditions (``ArgumentsRequirement``, or a custom one) emits, at each step,
one ``ArgCheck`` per condition: the tool, whether the condition allows, denies or asks, its
text, and its *residual* — the condition with the run's values bound (``evaluate.bind``), or
the ``Undefined`` value that makes it refuse every call. The reasoner groups a step's checks
by tool: a tool is allowed only if some arguments pass all of them (``admissible``, decided by
Z3); ``admit`` then decides each call on its concrete arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ruleengine.conditions.evaluate import Undefined, holds
from ruleengine.conditions.terms import AnyOf, Term, text
from ruleengine.conditions.types import Parameters, ParamType
from ruleengine.conditions.witness import guess

__all__ = [
    "Admission",
    "ArgCheck",
    "CheckKind",
    "Verdict",
    "Violation",
    "admissible",
    "admit",
    "clashing",
    "conditions_text",
    "same_calls",
    "separating_run",
    "some_arguments",
    "some_run",
]

CheckKind: TypeAlias = Literal["allow_if", "deny_if", "ask_if"]


@dataclass(frozen=True, slots=True)
class ArgCheck:
    """One condition on one tool at one step, its run values bound."""

    tool: str
    kind: CheckKind
    condition: str
    """The condition as written (typed text)."""
    residual: Term | Undefined
    """The condition with the run's values substituted, or the value it lacks."""
    parameters: tuple[tuple[str, ParamType], ...]
    """The tool's parameters (what the residual's ``arg.NAME`` are)."""
    reason: str | None = None
    """Why the requirement refuses a call this condition refuses."""

    @property
    def residual_text(self) -> str:
        return str(self.residual) if isinstance(self.residual, Undefined) else text(self.residual)

    def __repr__(self) -> str:
        return f"ArgCheck({self.tool!r}, {self.kind}={self.condition!r})"


@dataclass(frozen=True, slots=True)
class Violation:
    """A condition a call fails: which requirement, which condition, and what was wrong."""

    requirement: str
    kind: CheckKind
    condition: str
    why: str
    """``fails`` (an ``allow_if`` that does not hold), ``holds`` (a ``deny_if`` that does),
    or the undefined value (``` `last("lookup_order").output.price` does not exist… ```)."""

    def __str__(self) -> str:
        tail = f" {self.why}" if self.why in ("fails", "holds") else f": {self.why}"
        return f"{self.kind} `{self.condition}` of `{self.requirement}`{tail}"


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether a pass admits one call with its arguments."""

    ok: bool
    reason: str | None = None
    """Why not, in one line (``None`` when admitted)."""
    core: tuple[Violation, ...] = ()
    """The conditions these arguments violate (every one of them: each alone refuses)."""
    ask: tuple[str, ...] = ()
    """The requirements whose ``ask_if`` holds: the call needs permission first."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether some arguments could pass a tool's checks at this step."""

    ok: bool
    reason: str | None = None
    core: tuple[int, ...] = ()
    """Indices of the checks that refuse every call together (a minimal set)."""
    example: Mapping[str, Any] | None = None


def _parameters(checks: Sequence[ArgCheck]) -> dict[str, ParamType]:
    out: dict[str, ParamType] = {}
    for c in checks:
        out.update(c.parameters)
    return out


def admissible(checks: Sequence[ArgCheck], owners: Sequence[str] | None = None) -> Verdict:
    """Whether some arguments pass every ``allow_if`` and no ``deny_if`` of ``checks`` (one
    tool's; ``owners``: their requirements, named in the reason). An undefined value refuses
    every call; Z3 decides the rest (an answer Z3 cannot
    give in time counts as admissible: each call is still tested on its own arguments)."""
    for i, c in enumerate(checks):
        if isinstance(c.residual, Undefined):
            return Verdict(False, f"{c.kind} `{c.condition}`: {c.residual}", (i,))
    # Z3 is imported on the first conditions it decides: a run without conditions, and the
    # static checker's literal steps, never load it.
    from ruleengine.conditions import _z3

    gating = [(i, c) for i, c in enumerate(checks) if c.kind != "ask_if"]
    required = [c.residual for _, c in gating if c.kind == "allow_if"]
    forbidden = [c.residual for _, c in gating if c.kind == "deny_if"]
    assert all(not isinstance(r, Undefined) for r in (*required, *forbidden))
    params = _parameters(checks)
    found_call = guess(required, forbidden, params)  # type: ignore[arg-type]
    if found_call is not None:
        return Verdict(True, example=found_call)
    answer = _z3.satisfiable(required, forbidden, params)  # type: ignore[arg-type]
    if answer is None:
        return Verdict(True)
    if answer is not False:
        assert isinstance(answer, dict)
        return Verdict(True, example=answer)
    found = _z3.clash(required, forbidden, params)  # type: ignore[arg-type]
    allow_at = [i for i, c in gating if c.kind == "allow_if"]
    deny_at = [i for i, c in gating if c.kind == "deny_if"]
    if found is None:  # pragma: no cover - Z3 answered unsat once and not twice
        core = tuple(i for i, _ in gating)
    else:
        core = tuple(sorted([allow_at[k] for k in found[0]] + [deny_at[k] for k in found[1]]))
    shown = " and ".join(
        f"{checks[i].kind} `{checks[i].condition}`" + (f" ({owners[i]})" if owners else "")
        for i in core
    )
    return Verdict(False, f"no arguments satisfy {shown}", core)


def conditions_text(checks: Sequence[ArgCheck]) -> str:
    """What a call must meet, in words: the ``allow_if`` residuals, and ``not (…)`` of the
    ``deny_if`` ones (``ask_if`` decides no admission), joined by ``and``; ``""`` for none."""
    # An `or` inside the `and` keeps its parentheses (`a or b and c` reads `a or (b and c)`).
    return " and ".join(
        (f"({c.residual_text})" if isinstance(c.residual, AnyOf) else c.residual_text)
        if c.kind == "allow_if"
        else f"not ({c.residual_text})"
        for c in checks
        if c.kind != "ask_if"
    )


def admit(
    checks: Sequence[tuple[str, ArgCheck]], arguments: Mapping[str, Any]
) -> tuple[tuple[Violation, ...], tuple[str, ...]]:
    """The violations of one call (``checks``: each with its requirement's name) and the
    requirements whose ``ask_if`` holds for it."""
    violations: list[Violation] = []
    asking: list[str] = []
    params = _parameters([c for _, c in checks])
    for requirement, c in checks:
        if isinstance(c.residual, Undefined):
            violations.append(Violation(requirement, c.kind, c.condition, str(c.residual)))
            continue
        value = holds(c.residual, arguments, params)
        if isinstance(value, Undefined):
            violations.append(Violation(requirement, c.kind, c.condition, str(value)))
        elif c.kind == "allow_if" and not value:
            violations.append(Violation(requirement, c.kind, c.condition, "fails"))
        elif c.kind == "deny_if" and value:
            violations.append(Violation(requirement, c.kind, c.condition, "holds"))
        elif c.kind == "ask_if" and value and requirement not in asking:
            asking.append(requirement)
    return tuple(violations), tuple(asking)


def some_arguments(
    required: Sequence[Term],
    forbidden: Sequence[Term],
    parameters: Mapping[str, ParamType],
    *,
    readable: Sequence[Term] = (),
) -> dict[str, Any] | bool | None:
    """Some arguments meeting every ``required`` condition and no ``forbidden`` one (residuals:
    no run values), each ``readable`` one reading no missing argument, whether it holds or
    not; ``False`` if none do, ``None`` if Z3 cannot tell (``_z3.satisfiable``)."""
    from ruleengine.conditions import _z3

    return _z3.satisfiable(required, forbidden, parameters, readable=readable)


def clashing(
    required: Sequence[Term], forbidden: Sequence[Term], parameters: Mapping[str, ParamType]
) -> tuple[list[int], list[int]] | None:
    """A minimal set of the conditions no arguments meet together (``_z3.clash``)."""
    from ruleengine.conditions import _z3

    return _z3.clash(required, forbidden, parameters)


def some_run(
    required: Sequence[Term],
    forbidden: Sequence[Term],
    parameters: Mapping[str, ParamType],
    *,
    mentioned: Sequence[Term] = (),
    tools: Mapping[str, Parameters | None],
) -> tuple[dict[str, Any], dict[Term, Any]] | bool | None:
    """Some arguments *and some run values* meeting every ``required`` condition and no
    ``forbidden`` one, the conditions as written (their run values unknowns: ``input``,
    ``last("T").arguments.NAME`` and ``.output.KEY…`` of the kind they are read as, and one
    output of ``T`` for ``… in outputs("T")``; ``tools``: the declared tools' parameters).
    The run values are given by term (``LastOut``, ``LastArg``, ``Input``, ``Outputs``);
    the ``mentioned`` conditions (``ask_if``) are not asserted, but their run values get
    values too. ``False`` if nothing meets them, ``None`` if Z3 cannot tell
    (``_z3.satisfiable_with_run``)."""
    from ruleengine.conditions import _z3

    return _z3.satisfiable_with_run(required, forbidden, mentioned, parameters, tools)


def separating_run(
    old: tuple[Sequence[Term], Sequence[Term], Sequence[Term]],
    new: tuple[Sequence[Term], Sequence[Term], Sequence[Term]],
    parameters: Mapping[str, ParamType],
    *,
    tools: Mapping[str, Parameters | None],
) -> dict[Term, Any] | None:
    """Values of the run values two sets of conditions on one tool read (by term: ``input``,
    ``last(…)``) under which they decide some call differently, or None when Z3 finds none
    (``_z3.separating_run``): what a history must hold for a call to tell them apart."""
    from ruleengine.conditions import _z3

    return _z3.separating_run(old, new, parameters, tools)


def same_calls(
    old: tuple[Sequence[Term], Sequence[Term], Sequence[Term]],
    new: tuple[Sequence[Term], Sequence[Term], Sequence[Term]],
    parameters: Mapping[str, ParamType],
    *,
    tools: Mapping[str, Parameters | None],
) -> bool | None:
    """Whether two sets of conditions on one tool (its ``allow_if``, ``deny_if`` and
    ``ask_if`` conditions as written) admit the same calls, and ask about the same ones, in
    every state: ``True`` proved (for every call and every value of the run values, which
    must be the same on both sides), ``False`` Z3 found a call on which they differ, ``None``
    it cannot tell (``_z3.equivalent``)."""
    from ruleengine.conditions import _z3

    return _z3.equivalent(old, new, parameters, tools)
