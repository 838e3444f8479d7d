"""Rules, the items requirements emit, and their lowering to the IR.

A requirement's ``run`` returns a list mixing ``Rule`` objects (BeeAI-compatible sugar about one
tool) and ``Expr`` formulas (``ruleengine.ir``). The reasoner wraps each in an ``Emitted`` record
carrying its requirement's name and priority, then lowers it with ``lower``: a *restricting*
part (deny, hide, prevent_stop, or the whole constraint), a *permitting* part (``allowed(t)``
from ``Rule(allowed=True)``, asserted only in priority mode), and an optional soft force.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from ruleengine import _validate
from ruleengine.conditions.admission import ArgCheck
from ruleengine.errors import PolicyError
from ruleengine.ir import (
    FINAL_ANSWER,
    TRUE,
    Allowed,
    And,
    CanStop,
    Const,
    Expr,
    Forced,
    Hidden,
    Not,
    all_of,
    allowed,
    can_stop,
    hidden,
    mentioned_tools,
    tool_name,
    walk,
)

__all__ = [
    "Emitted",
    "Item",
    "Literal",
    "Lowered",
    "Rule",
    "check_record",
    "describe",
    "literals_of",
    "lower",
]


class _RuleFields(NamedTuple):
    target: str
    """The tool this rule is about (a name; tool objects are accepted and reduced to it)."""
    allowed: bool
    """Whether the tool may be called this step (``True`` asserts nothing in strict mode)."""
    hidden: bool
    """Whether the tool is hidden from the model (and so not allowed)."""
    forced: bool
    """Whether the tool should be the step's forced tool."""
    prevent_stop: bool
    """Whether the agent must not stop this step (``final_answer`` not allowed)."""
    reason: str | None
    """An explanation for the model, rendered into the system prompt."""


class Rule(_RuleFields):
    """A verdict about one tool for one step (the unit the original design aggregates).

    ``Rule(target="send_email", allowed=False, reason="search first")``. The flags combine:
    ``hidden`` implies not allowed; ``forced`` makes the tool the step's forced tool if it stays
    allowed (a *soft* force: the highest-priority forcing rule wins); ``prevent_stop`` makes
    ``final_answer`` not allowed.

    Rules are immutable and compare by value. They are tuples underneath (so hashing and
    equality run in C on the per-step hot path); treat that as an implementation detail.
    """

    __slots__ = ()

    def __new__(
        cls,
        target: object,
        allowed: bool = True,
        hidden: bool = False,
        forced: bool = False,
        prevent_stop: bool = False,
        reason: str | None = None,
    ) -> Rule:
        name = tool_name(target)
        owner = f"rule on `{name}`"
        for flag, value in (
            ("allowed", allowed),
            ("hidden", hidden),
            ("forced", forced),
            ("prevent_stop", prevent_stop),
        ):
            if value is not True and value is not False:
                _validate.flag(value, name=flag, owner=owner)
        if reason is not None and type(reason) is not str:
            _validate.text(reason, name="reason", owner=owner, empty=True)
        return tuple.__new__(cls, (name, allowed, hidden, forced, prevent_stop, reason))

    def __repr__(self) -> str:
        parts = [repr(self.target)]
        if not self.allowed:
            parts.append("allowed=False")
        if self.hidden:
            parts.append("hidden=True")
        if self.forced:
            parts.append("forced=True")
        if self.prevent_stop:
            parts.append("prevent_stop=True")
        if self.reason is not None:
            parts.append(f"reason={self.reason!r}")
        return f"Rule({', '.join(parts)})"


Item: TypeAlias = "Rule | Expr | ArgCheck"
"""What a requirement emits: rules, formulas, and checks of a call's arguments (``ArgCheck``,
which restrict no tool by name: the reasoner decides them apart)."""


class Emitted(NamedTuple):
    """One emitted rule or constraint and the requirement it came from."""

    item: Item
    """The rule or formula as the requirement returned it."""
    requirement: str
    """The name of the requirement that emitted it."""
    priority: int
    """That requirement's priority (higher wins)."""


def check_record(e: object) -> None:
    """Raise ``PolicyError`` unless ``e`` is a well-formed ``Emitted`` record.

    ``decide`` builds records itself; records handed to ``Reasoner.resolve`` get these checks
    the first time the reasoner sees them.
    """
    if type(e) is not Emitted:
        raise PolicyError(f"`{e!r}` is not an `Emitted(item, requirement, priority)` record")
    if not isinstance(e.requirement, str) or not e.requirement:
        raise PolicyError(f"`{e!r}`: the requirement name must be non-empty text")
    _validate.priority(e.priority, owner=_validate.owner_of(e.requirement))
    if not isinstance(e.item, (Rule, Expr, ArgCheck)):
        raise PolicyError(
            f"requirement `{e.requirement}`: `{e.item!r}` is neither a `Rule` nor a formula"
        )


Literal: TypeAlias = tuple[str, str, bool]
"""An atom and its value: ``("allowed", tool, value)`` or ``("hidden", tool, value)``."""


@dataclass(frozen=True, slots=True)
class Lowered:
    """An item in the IR, split the way both resolution modes need it."""

    restrict: Expr
    """The restricting part: what must hold (``TRUE`` when the item restricts nothing)."""
    permit: Expr | None
    """``allowed(t)`` from ``Rule(allowed=True)`` on a visible tool: asserted in priority mode."""
    soft_force: str | None
    """The tool a ``Rule(forced=True)`` asks to force, if any."""
    hard_force: str | None
    """The tool a ``forced(t)`` constraint forces, if any."""
    target: str | None
    """The tool a rule is about (where its reason goes); ``None`` for formulas."""
    reason: str | None
    """The rule's reason, if any."""
    mentions: frozenset[str]
    """Every tool whose atoms the item mentions."""


def lower(item: Item) -> Lowered:
    """Lower a rule or formula; raise ``PolicyError`` for a misplaced ``forced``."""
    if isinstance(item, Rule):
        t = item.target
        restrict = all_of(
            TRUE if item.allowed else ~allowed(t),
            hidden(t) if item.hidden else TRUE,
            ~can_stop if item.prevent_stop else TRUE,
        )
        # The permitting part asserts `allowed(t)` (priority mode); a rule that prevents
        # stopping on `final_answer` itself has none, as it would contradict its own restriction.
        permits = item.allowed and not item.hidden and not (item.prevent_stop and t == FINAL_ANSWER)
        permit = allowed(t) if permits else None
        mentions = {t, FINAL_ANSWER} if item.prevent_stop else {t}
        return Lowered(
            restrict=restrict,
            permit=permit,
            soft_force=t if item.forced else None,
            hard_force=None,
            target=t,
            reason=item.reason,
            mentions=frozenset(mentions),
        )
    if isinstance(item, Forced):
        return Lowered(item, None, None, item.tool, None, None, frozenset({item.tool}))
    if isinstance(item, ArgCheck):
        # A call's conditions restrict no tool by name (the reasoner decides them apart).
        return Lowered(TRUE, None, None, None, None, None, frozenset({item.tool}))
    if isinstance(item, Expr):
        _reject_nested_force(item)
        return Lowered(item, None, None, None, None, None, mentioned_tools(item))
    raise PolicyError(f"`{item!r}` is neither a `Rule` nor a formula")


def _reject_nested_force(expr: Expr) -> None:
    for node in walk(expr):
        if isinstance(node, Forced):
            raise PolicyError(
                f"`forced({node.tool!r})` appears inside the formula `{expr!r}`",
                hint="a hard force must be emitted on its own: `forced(t)` as a whole item",
            )


def literals_of(expr: Expr) -> tuple[Literal, ...] | None:
    """The literals of ``expr`` if it is a conjunction of literals, else ``None``.

    ``TRUE`` is the empty conjunction. Such items need no helper variable in the solver: their
    literals are assumed directly.
    """
    parts = expr.args if isinstance(expr, And) else (expr,)
    out: list[Literal] = []
    for part in parts:
        value = True
        if isinstance(part, Not):
            value, part = False, part.arg
        match part:
            case Allowed(tool=t):
                out.append(("allowed", t, value))
            case CanStop():
                out.append(("allowed", FINAL_ANSWER, value))
            case Hidden(tool=t):
                out.append(("hidden", t, value))
            case Const(value=True) if value:
                pass
            case _:
                return None
    return tuple(out)


def describe(item: Item, part: str = "") -> str:
    """A short rendering of an item for messages and cores, e.g. ``denies `search```.

    ``part="permitting"`` describes a rule's permitting part alone (priority mode).
    """
    if part == "permitting" and isinstance(item, Rule):
        return f"allows `{item.target}`"
    if isinstance(item, Rule):
        t = item.target
        parts = []
        if item.hidden:
            parts.append(f"hides `{t}`")
        elif not item.allowed:
            parts.append(f"denies `{t}`")
        if item.prevent_stop:
            parts.append("prevents stopping")
        if item.forced:
            parts.append(f"forces `{t}`")
        if not parts:
            parts.append(f"allows `{t}`")
        return " and ".join(parts)
    if isinstance(item, Forced):
        return f"forces `{item.tool}` (hard)"
    if isinstance(item, ArgCheck):
        return f"{item.kind} `{item.condition}` on `{item.tool}`"
    literals = literals_of(item)
    if literals:
        return " and ".join(_describe_literal(lit) for lit in literals)
    return f"requires `{item!r}`"


def _describe_literal(lit: Literal) -> str:
    kind, t, value = lit
    if kind == "hidden":
        return f"hides `{t}`" if value else f"keeps `{t}` visible"
    if t == FINAL_ANSWER:
        return "allows stopping" if value else "prevents stopping"
    return f"requires `{t}` allowed" if value else f"denies `{t}`"
