"""Hypothesis strategies: small tool vocabularies, random formulas, rules and emitted sets.

Formulas are drawn as a small tree of our own (``Ast``, nested tuples) and turned into engine
formulas with the public builders (``build``). The brute-force reference evaluates the tree
itself (``truth``), so it never relies on the engine's IR, its constant folding or ``evaluate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

from hypothesis import strategies as st

from ruleengine import (
    FINAL_ANSWER,
    Expr,
    Requirement,
    Rule,
    all_of,
    allowed,
    any_of,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine.rules import Emitted

TOOL_POOL = ("a", "b", "c", "d")
"""Names declared tools are drawn from (``final_answer`` is always added last)."""
REQUIREMENT_NAMES = ("p", "q", "r", "s")
REASONS = (None, "x", "y")
PRIORITIES = (1, 2, 3)


class Named(Requirement):
    """A requirement that only names records: a reasoner built with these reads their names
    and whether they yield, for records made by hand."""

    def __init__(self, name: str, *, yielding: bool) -> None:
        super().__init__(name=name)
        self.yielding = yielding

    def run(self, state: object) -> list[object]:
        return []


Ast = tuple[Any, ...]
"""A formula tree: ``("allowed", t)``, ``("hidden", t)``, ``("can_stop",)``, ``("const", b)``,
``("not", f)``, ``("and", fs)``, ``("or", fs)``, ``("implies", f, g)``, and
``("at_most" | "at_least" | "exactly", k, fs)``."""


# -- formulas -------------------------------------------------------------------------------


def build(ast: Ast) -> Expr | bool:
    """The engine formula of ``ast``, made with the public builders and operators.

    Constants stay Python bools (the builders accept them as operands), so folding is exercised.
    """
    kind = ast[0]
    if kind == "allowed":
        return allowed(ast[1])
    if kind == "hidden":
        return hidden(ast[1])
    if kind == "can_stop":
        return can_stop
    if kind == "const":
        return bool(ast[1])
    if kind == "not":
        inner = build(ast[1])
        return (not inner) if isinstance(inner, bool) else ~inner
    if kind == "and":
        parts = [build(a) for a in ast[1]]
        if len(parts) == 2 and isinstance(parts[0], Expr):
            return parts[0] & parts[1]
        return all_of(*parts)
    if kind == "or":
        parts = [build(a) for a in ast[1]]
        if len(parts) == 2 and isinstance(parts[1], Expr):
            return parts[0] | parts[1]
        return any_of(*parts)
    if kind == "implies":
        return implies(build(ast[1]), build(ast[2]))
    builder = {"at_most": at_most, "at_least": at_least, "exactly": exactly}[kind]
    return builder(ast[1], *(build(a) for a in ast[2]))


def build_item(ast: Ast) -> Expr:
    """``build`` as a whole emitted item (a top-level constant becomes a constant formula)."""
    built = build(ast)
    if isinstance(built, bool):
        return all_of(built)
    return built


def truth(ast: Ast, allowed_set: frozenset[str], hidden_set: frozenset[str]) -> bool:
    """The value of ``ast`` under one assignment, straight from the definition."""
    kind = ast[0]
    if kind == "allowed":
        return ast[1] in allowed_set
    if kind == "hidden":
        return ast[1] in hidden_set
    if kind == "can_stop":
        return FINAL_ANSWER in allowed_set
    if kind == "const":
        return bool(ast[1])
    if kind == "not":
        return not truth(ast[1], allowed_set, hidden_set)
    if kind == "and":
        return all(truth(a, allowed_set, hidden_set) for a in ast[1])
    if kind == "or":
        return any(truth(a, allowed_set, hidden_set) for a in ast[1])
    if kind == "implies":
        return not truth(ast[1], allowed_set, hidden_set) or truth(ast[2], allowed_set, hidden_set)
    count = sum(truth(a, allowed_set, hidden_set) for a in ast[2])
    if kind == "at_most":
        return count <= ast[1]
    if kind == "at_least":
        return count >= ast[1]
    assert kind == "exactly"
    return count == ast[1]


def formulas(tools: tuple[str, ...], *, max_leaves: int = 6) -> st.SearchStrategy[Ast]:
    """Formula trees over ``tools`` (which include ``final_answer``)."""
    leaves = st.one_of(
        st.tuples(st.just("allowed"), st.sampled_from(tools)),
        st.tuples(st.just("allowed"), st.sampled_from(tools)),
        st.tuples(st.just("hidden"), st.sampled_from(tools)),
        st.just(("can_stop",)),
        st.tuples(st.just("const"), st.booleans()),
    )

    def branches(children: st.SearchStrategy[Ast]) -> st.SearchStrategy[Ast]:
        many = st.lists(children, min_size=2, max_size=3).map(tuple)

        def cardinality(kind: str) -> st.SearchStrategy[Ast]:
            return many.flatmap(
                lambda args: st.tuples(st.just(kind), st.integers(0, len(args) + 1), st.just(args))
            )

        return st.one_of(
            st.tuples(st.just("not"), children),
            st.tuples(st.just("and"), many),
            st.tuples(st.just("or"), many),
            st.tuples(st.just("implies"), children, children),
            cardinality("at_most"),
            cardinality("at_least"),
            cardinality("exactly"),
        )

    return st.recursive(leaves, branches, max_leaves=max_leaves)


# -- instances ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One emitted item and what the reference needs to read it."""

    kind: str
    """``"rule"``, ``"formula"`` or ``"force"``."""
    emitted: Emitted
    ast: Ast | None = None
    """The formula tree (formulas only)."""

    @property
    def item(self) -> object:
        return self.emitted.item

    @property
    def requirement(self) -> str:
        return self.emitted.requirement

    @property
    def priority(self) -> int:
        return self.emitted.priority


@dataclass(frozen=True)
class Instance:
    """A declared tool list and one step's emitted items."""

    declared: tuple[str, ...]
    """The declared tools, without ``final_answer``."""
    specs: tuple[Spec, ...]
    final_answer_as_tool: bool = True

    @property
    def tools(self) -> tuple[str, ...]:
        return (*self.declared, FINAL_ANSWER)

    @property
    def emitted(self) -> list[Emitted]:
        return [s.emitted for s in self.specs]


def rules(tools: tuple[str, ...], *, force_bias: bool = False) -> st.SearchStrategy[Rule]:
    """Rules with random flags; ``force_bias`` makes most of them allowing and forcing."""
    return st.builds(
        Rule,
        target=st.sampled_from(tools),
        allowed=st.sampled_from((True, True, True, False)) if force_bias else st.booleans(),
        hidden=st.sampled_from((False, False, True)),
        forced=st.sampled_from((True, True, False) if force_bias else (False, False, True)),
        prevent_stop=st.sampled_from((False, False, True)),
        reason=st.sampled_from(REASONS),
    )


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    max_items: int = 8,
    with_formulas: bool = True,
    with_forces: bool = True,
    force_bias: bool = False,
) -> Instance:
    """A random vocabulary (up to 4 declared tools, in a random order) and emitted items.

    Requirements get a priority each; every item names the requirement that emitted it.
    ``force_bias`` favours soft forces and ties between them (two priorities, no hard force).
    """
    size = draw(st.integers(1, len(TOOL_POOL)))
    declared = tuple(draw(st.permutations(TOOL_POOL))[:size])
    tools = (*declared, FINAL_ANSWER)
    priorities = PRIORITIES[:2] if force_bias else PRIORITIES
    priority_of = {n: draw(st.sampled_from(priorities)) for n in REQUIREMENT_NAMES}
    kinds = ["rule", "rule", "rule"]
    if with_formulas:
        kinds += ["formula", "formula"]
    if with_forces and not force_bias:
        kinds += ["force"]
    specs: list[Spec] = []
    for _ in range(draw(st.integers(0, max_items))):
        name = draw(st.sampled_from(REQUIREMENT_NAMES))
        kind = draw(st.sampled_from(kinds))
        if kind == "rule":
            rule = draw(rules(tools, force_bias=force_bias))
            if not with_forces and rule.forced:
                rule = rule._replace(forced=False)
            specs.append(Spec("rule", Emitted(rule, name, priority_of[name])))
        elif kind == "formula":
            ast = draw(formulas(tools))
            specs.append(Spec("formula", Emitted(build_item(ast), name, priority_of[name]), ast))
        else:
            target = draw(st.sampled_from(tools))
            specs.append(Spec("force", Emitted(forced(target), name, priority_of[name])))
    return Instance(declared, tuple(specs), draw(st.booleans()))


def requirements_of(specs: tuple[Spec, ...] | list[Spec]) -> list[Requirement]:
    """One requirement per requirement name, returning its items in the given order."""
    grouped: dict[str, list[object]] = {}
    priority: dict[str, int] = {}
    for s in specs:
        grouped.setdefault(s.requirement, []).append(s.item)
        priority[s.requirement] = s.priority
    out: list[Requirement] = []
    for name, items in grouped.items():

        def run(state: object, items: list[object] = items) -> list[object]:
            return list(items)

        out.append(requirement(name=name, priority=priority[name])(run))
    return out


@st.composite
def assignments(draw: st.DrawFn, tools: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """An assignment satisfying the axioms: some tool allowed, hidden tools not allowed."""
    subsets = [frozenset(c) for k in range(1, len(tools) + 1) for c in combinations(tools, k)]
    allowed_set = draw(st.sampled_from(subsets))
    rest = [t for t in tools if t not in allowed_set]
    hidden_set = frozenset(t for t in rest if draw(st.booleans()))
    return allowed_set, hidden_set
