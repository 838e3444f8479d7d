"""An exhaustive reference of the aggregation semantics (SPEC §4, §11), without a solver.

It enumerates every assignment of the ``allowed``/``hidden`` atoms that satisfies the axioms
(hidden ⇒ not allowed; some tool allowed), sorted from the most preferred one (largest
``allowed`` vector in declared order, then smallest ``hidden`` vector). A set of assertions is a
bit mask over that list, so "the preferred model" is the lowest set bit of a conjunction.
Hard forces add one axiom on top: two hard forces on different tools cannot hold together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from strategies import Instance, Spec, truth

from ruleengine import FINAL_ANSWER, Rule
from ruleengine.rules import Emitted

Assignment = tuple[frozenset[str], frozenset[str]]


@dataclass(frozen=True)
class Unit:
    """One assertable part of an emitted item: its models, and the tool it hard-forces."""

    spec: Spec
    models: int
    hard: str | None = None


@dataclass(frozen=True)
class Expected:
    """The pass the semantics prescribes."""

    allowed: tuple[str, ...]
    hidden: tuple[str, ...]
    forced: str | None
    can_stop: bool
    tool_choice: str
    reasons: dict[str, str]
    tie: tuple[str, ...] = ()
    """The tools tied for the soft force (empty when there was no tie)."""
    overridden: frozenset[Emitted] = field(default_factory=frozenset)
    """Priority mode: the items with an overridden unit."""


@dataclass(frozen=True)
class Clash:
    """No pass: ``candidates`` are the units within which a core must be a minimal unsat set."""

    candidates: tuple[Unit, ...]
    kind: str = "deadlock"
    """SPEC §11: ``deadlock`` when the candidates without hard forces clash, else
    ``forced-conflict``."""
    forced: tuple[str, ...] = ()
    """For a forced-conflict, every hard-forced tool among the candidates (declared order)."""


class Reference:
    """The reference semantics for one declared tool list."""

    def __init__(self, tools: tuple[str, ...]) -> None:
        self.tools = tools
        models: list[Assignment] = []
        for flags in product((True, False), repeat=len(tools)):
            allowed_set = frozenset(t for t, f in zip(tools, flags, strict=True) if f)
            if not allowed_set:
                continue
            rest = [t for t in tools if t not in allowed_set]
            for hidden_flags in product((False, True), repeat=len(rest)):
                hidden_set = frozenset(t for t, h in zip(rest, hidden_flags, strict=True) if h)
                models.append((allowed_set, hidden_set))
        # `product` already enumerates allowed vectors from the largest down and hidden vectors
        # from the smallest up; the sort below states the preference order explicitly.
        models.sort(key=self._preference)
        self.models = models
        self.everything = (1 << len(models)) - 1

    def _preference(self, m: Assignment) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        allowed_set, hidden_set = m
        return (
            tuple(t not in allowed_set for t in self.tools),
            tuple(t in hidden_set for t in self.tools),
        )

    # -- units ----------------------------------------------------------------------------

    def _mask(self, predicate: object) -> int:
        mask = 0
        for i, (a, h) in enumerate(self.models):
            if predicate(a, h):  # type: ignore[operator]
                mask |= 1 << i
        return mask

    def restrict(self, spec: Spec) -> Unit | None:
        """The restricting unit of an item (``None`` when it restricts nothing)."""
        if spec.kind == "force":
            t = spec.item.tool  # type: ignore[attr-defined]
            return Unit(spec, self._mask(lambda a, h: t in a), hard=t)
        if spec.kind == "formula":
            ast = spec.ast
            return Unit(spec, self._mask(lambda a, h: truth(ast, a, h)))
        rule = spec.item
        assert isinstance(rule, Rule)
        if rule.allowed and not rule.hidden and not rule.prevent_stop:
            return None
        t = rule.target

        def holds(a: frozenset[str], h: frozenset[str]) -> bool:
            return (
                (rule.allowed or t not in a)
                and (not rule.hidden or t in h)
                and (not rule.prevent_stop or FINAL_ANSWER not in a)
            )

        return Unit(spec, self._mask(holds))

    def permit(self, spec: Spec) -> Unit | None:
        """The permitting unit of a rule (priority mode only)."""
        if spec.kind != "rule":
            return None
        rule = spec.item
        assert isinstance(rule, Rule)
        t = rule.target
        if not rule.allowed or rule.hidden or (rule.prevent_stop and t == FINAL_ANSWER):
            return None
        return Unit(spec, self._mask(lambda a, h: t in a))

    def models_of(self, units: list[Unit] | tuple[Unit, ...]) -> int:
        """The models satisfying every unit and the hard-force axiom (0: unsatisfiable)."""
        if len({u.hard for u in units if u.hard is not None}) > 1:
            return 0
        mask = self.everything
        for u in units:
            mask &= u.models
        return mask

    # -- deciding -------------------------------------------------------------------------

    def decide(self, instance: Instance, mode: str) -> Expected | Clash:
        specs = list({s.emitted: s for s in reversed(instance.specs)}.values())
        if mode == "strict":
            kept = [u for u in map(self.restrict, specs) if u is not None]
            if not self.models_of(kept):
                return self._clash(kept)
            dropped: frozenset[Emitted] = frozenset()
        else:
            outcome = self._tiers(specs)
            if isinstance(outcome, Clash):
                return outcome
            kept, dropped = outcome
        return self._pass(instance, specs, kept, dropped)

    def _tiers(self, specs: list[Spec]) -> tuple[list[Unit], frozenset[Emitted]] | Clash:
        tiers: dict[tuple[int, int], list[Unit]] = {}
        for s in specs:
            r, p = self.restrict(s), self.permit(s)
            if r is not None:
                tiers.setdefault((-s.priority, 0), []).append(r)
            if p is not None:
                tiers.setdefault((-s.priority, 1), []).append(p)
        kept: list[Unit] = []
        dropped: set[Emitted] = set()
        for rank in sorted(tiers):
            tier = tiers[rank]
            if self.models_of(kept + tier):
                kept += tier
                continue
            survivors = [u for u in tier if self.models_of([*kept, u])]
            dropped.update(u.spec.emitted for u in tier if u not in survivors)
            if survivors and not self.models_of(kept + survivors):
                return self._clash(kept + survivors)
            kept += survivors
        return kept, frozenset(dropped)

    def _clash(self, candidates: list[Unit]) -> Clash:
        hard = {u.hard for u in candidates if u.hard is not None}
        rest = [u for u in candidates if u.hard is None]
        if hard and self.models_of(rest):
            forced = tuple(t for t in self.tools if t in hard)
            return Clash(tuple(candidates), "forced-conflict", forced)
        # A deadlock's core is searched among the items without hard forces.
        return Clash(tuple(rest) if hard else tuple(candidates))

    def _pass(
        self,
        instance: Instance,
        specs: list[Spec],
        kept: list[Unit],
        dropped: frozenset[Emitted],
    ) -> Expected:
        mask = self.models_of(kept)
        allowed_set, hidden_set = self.models[(mask & -mask).bit_length() - 1]
        can = FINAL_ANSWER in allowed_set
        rules = [s for s in specs if s.kind == "rule" and s.emitted not in dropped]
        reasons = _reasons(rules)
        hard = next((u.hard for u in kept if u.hard is not None), None)
        tie: tuple[str, ...] = ()
        if hard is not None:
            chosen: str | None = hard
        else:
            bids: dict[str, int] = {}
            for s in rules:
                rule = s.item
                assert isinstance(rule, Rule)
                if rule.forced and rule.target in allowed_set:
                    bids[rule.target] = max(bids.get(rule.target, 0), s.priority)
            chosen = None
            if bids:
                top = max(bids.values())
                tied = tuple(t for t in self.tools if bids.get(t) == top)
                chosen = tied[0]
                tie = tied if len(tied) > 1 else ()
        allowed_tuple = tuple(t for t in self.tools if t in allowed_set)
        if chosen is not None:
            allowed_tuple = (chosen, FINAL_ANSWER) if can and chosen != FINAL_ANSWER else (chosen,)
            choice = chosen
        elif len(allowed_tuple) == 1:
            choice = allowed_tuple[0]
        elif not can or instance.final_answer_as_tool:
            choice = "required"
        else:
            choice = "auto"
        return Expected(
            allowed=allowed_tuple,
            hidden=tuple(t for t in self.tools if t in hidden_set),
            forced=chosen,
            can_stop=can,
            tool_choice=choice,
            reasons=reasons,
            tie=tie,
            overridden=dropped,
        )

    # -- cores ----------------------------------------------------------------------------

    def core_problem(self, clash: Clash, core: list[Emitted]) -> str | None:
        """Why ``core`` is not a minimal unsat core within ``clash`` (``None`` when it is)."""
        members = set(core)
        if len(members) != len(core):
            return f"core lists an item twice: {core}"
        units = [u for u in clash.candidates if u.spec.emitted in members]
        outside = members - {u.spec.emitted for u in units}
        if outside:
            return f"core items {outside} are not among the clashing candidates"
        if self.models_of(units):
            return f"core {core} is satisfiable"
        for e in core:
            rest = [u for u in units if u.spec.emitted != e]
            if not self.models_of(rest):
                return f"core {core} stays unsatisfiable without {e}"
        return None


def _reasons(rules: list[Spec]) -> dict[str, str]:
    best: dict[str, tuple[int, str, str]] = {}
    for s in rules:
        rule = s.item
        assert isinstance(rule, Rule)
        if rule.reason is None:
            continue
        # Highest priority first, then the smaller requirement name, then the smaller text.
        key = (-s.priority, s.requirement, rule.reason)
        old = best.get(rule.target)
        if old is None or key < old:
            best[rule.target] = key
    return {t: key[2] for t, key in best.items()}
