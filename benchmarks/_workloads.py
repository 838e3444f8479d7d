"""The emitted sets of table 1: deterministic pools of rules, and the steps drawn from them.

A ``Workload`` is a pool of four times *rules* emitted items over a tool list
(``make_workload``); a step draws *rules* of them (``draw_sets``). Conflict sets deny every
tool (``conflict_sets``) or hard-force a denied tool (``force_conflict_sets``); ``freshen``
copies sets into rules the reasoner has never seen. Everything is drawn from a seeded
``random.Random``, so the benchmark and the tests see the very same sets.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from benchmarks._config import SEED
from benchmarks._reference import ReferenceConflict, reference_aggregate
from ruleengine import (
    FINAL_ANSWER,
    Emitted,
    Expr,
    Rule,
    allowed,
    any_of,
    at_most,
    can_stop,
    exactly,
    forced,
    implies,
)

__all__ = [
    "PRIORITIES",
    "SIZES",
    "Workload",
    "blocked",
    "conflict_sets",
    "denied_tools",
    "draw_sets",
    "force_conflict_sets",
    "freshen",
    "make_workload",
]

SIZES: tuple[tuple[int, int], ...] = ((10, 20), (50, 100), (100, 200))
"""(tools, rules) per step; the tool count includes ``final_answer``."""

PRIORITIES = (1, 5, 10, 10, 10, 20, 50)
"""Requirement priorities, drawn with these weights (10 is the default priority)."""

_REASONS = ("search first", "budget spent", "needs approval", "already done", "use the cache")


@dataclass(frozen=True, slots=True)
class Workload:
    """The declared tools, the number of items per step, and the pool steps draw from."""

    tools: tuple[str, ...]
    rules: int
    pool: tuple[Emitted, ...]
    denials: dict[str, tuple[Emitted, ...]]
    """Per tool, the pool's plain rules that make it not allowed (conflict sets use them)."""

    @property
    def label(self) -> str:
        """The size as the tables write it: *tools*/*rules*."""
        return f"{len(self.tools)}/{self.rules}"


def make_workload(tools: int, rules: int, *, general: bool = False, seed: int = SEED) -> Workload:
    """A deterministic pool of four times ``rules`` items over ``tools`` declared tools.

    The kinds of rule come in fixed quotas (``_quotas``); with ``general``, one item in five is
    a formula instead.
    """
    rng = random.Random(f"{seed}:{tools}:{rules}:{general}")
    names = (*(f"tool_{i:03d}" for i in range(tools - 1)), FINAL_ANSWER)
    requirements = [(f"req-{i:02d}", rng.choice(PRIORITIES)) for i in range(max(4, rules // 2))]
    size = 4 * rules
    formulas = size // 5 if general else 0
    kinds = [*_quotas(size - formulas, tools), *["formula"] * formulas]
    pool: dict[Emitted, None] = {}
    for kind in kinds:
        for _ in range(100):  # draw again on a duplicate
            name, priority = rng.choice(requirements)
            item = _random_formula(rng, names) if kind == "formula" else _rule(rng, kind, names)
            if Emitted(item, name, priority) not in pool:
                pool[Emitted(item, name, priority)] = None
                break
    items = tuple(rng.sample(list(pool), len(pool)))
    return Workload(names, rules, items, _denials(names, items))


def _denials(tools: Sequence[str], items: Iterable[Emitted]) -> dict[str, tuple[Emitted, ...]]:
    """Per tool, the items that make it not allowed; a lone ``lockdown`` denial if none does."""
    denials: dict[str, list[Emitted]] = {t: [] for t in tools}
    for e in items:
        for t in blocked(e.item):
            denials[t].append(e)
    for t, found in denials.items():  # conflict sets deny every tool: each needs a denial
        if not found:
            found.append(Emitted(Rule(t, allowed=False), "lockdown", 10))
    return {t: tuple(es) for t, es in denials.items()}


def _quotas(size: int, tools: int) -> list[str]:
    """How many rules of each kind a pool of ``size`` holds: a realistic, mostly-deny mix.

    About half the tools end up denied in a step of ``2 × tools`` rules. Forces and
    ``prevent_stop`` are per-step events, not per-tool ones: their share shrinks as the tool
    count grows, so a step has one or two forcing rules and less than one ``prevent_stop``
    at any size.
    """
    per_step = 10 / tools
    weights = {
        "deny": 14,
        "deny+reason": 10,
        "hide": 3,
        "allow+reason": 24,
        "allow": 12,
        "force": 6 * per_step,
        "stop": 2 * per_step,
        "force+stop": 1 * per_step,
    }
    total = sum(weights.values())
    counts = {kind: max(1, round(w / total * size)) for kind, w in weights.items()}
    counts["allow"] += size - sum(counts.values())  # rounding slack goes to a no-op kind
    return [kind for kind, n in counts.items() for _ in range(n)]


def _rule(rng: random.Random, kind: str, tools: Sequence[str]) -> Rule:
    """One rule of ``kind``; apart from ``prevent_stop``, about a tool other than the last."""
    target = rng.choice(tools[:-1])
    reason = rng.choice(_REASONS)
    match kind:
        case "deny":
            return Rule(target, allowed=False)
        case "deny+reason":
            return Rule(target, allowed=False, reason=reason)
        case "hide":
            return Rule(target, hidden=True, reason=reason if rng.random() < 0.5 else None)
        case "allow+reason":
            return Rule(target, reason=reason)
        case "allow":
            return Rule(target)
        case "force":
            return Rule(target, forced=True)
        case "stop":
            where = rng.choice(tools)
            return Rule(where, prevent_stop=True, reason=reason if rng.random() < 0.3 else None)
        case "force+stop":
            return Rule(target, forced=True, prevent_stop=True)
        case _:
            raise AssertionError(f"unknown kind {kind!r}")


def _random_formula(rng: random.Random, tools: Sequence[str]) -> Expr:
    a, b, c = rng.sample(tools[:-1], 3)
    templates: tuple[Callable[[], Expr], ...] = (
        lambda: at_most(1, allowed(a), allowed(b)),
        lambda: at_most(1, allowed(a), allowed(b), allowed(c)),
        lambda: implies(allowed(a), ~can_stop),
        lambda: implies(allowed(a), ~allowed(b)),
        lambda: any_of(allowed(a), allowed(b)),
        lambda: exactly(1, allowed(a), allowed(b)),
        lambda: forced(a),
    )
    return rng.choices(templates, weights=(4, 2, 3, 3, 2, 1, 1))[0]()


def blocked(item: Rule | Expr) -> tuple[str, ...]:
    """The tools a plain rule makes not allowed (none for formulas)."""
    if not isinstance(item, Rule):
        return ()
    denied = (item.target,) if not item.allowed or item.hidden else ()
    return (*denied, FINAL_ANSWER) if item.prevent_stop else denied


def denied_tools(drawn: Iterable[Emitted]) -> set[str]:
    """The tools some plain rule of ``drawn`` makes not allowed."""
    return {t for e in drawn for t in blocked(e.item)}


def draw_sets(
    workload: Workload,
    count: int,
    *,
    seed: int = 0,
    keep: Callable[[list[Emitted]], bool] | None = None,
) -> list[list[Emitted]]:
    """``count`` distinct random subsets of ``workload.rules`` pool items that ``keep`` accepts.

    By default a set is kept when the reference finds a pass (plain rules only); pass another
    ``keep`` for pools with formulas. The draw is sequential: fewer sets are a prefix of more.
    """
    rng = random.Random(f"draw:{seed}:{workload.label}")
    accept = keep if keep is not None else _reference_satisfiable(workload.tools)
    seen: set[frozenset[Emitted]] = set()
    sets: list[list[Emitted]] = []
    for _ in range(count * 50):
        if len(sets) == count:
            break
        drawn = rng.sample(workload.pool, workload.rules)
        key = frozenset(drawn)
        if key not in seen and accept(drawn):
            seen.add(key)
            sets.append(drawn)
    # INVARIANT: pools are sparse enough that almost every draw is kept.
    assert len(sets) == count, f"only {len(sets)} of {count} sets drawn"
    return sets


def _reference_satisfiable(tools: Sequence[str]) -> Callable[[list[Emitted]], bool]:
    def accept(drawn: list[Emitted]) -> bool:
        try:
            reference_aggregate(drawn, tools)
        except ReferenceConflict:
            return False
        return True

    return accept


def conflict_sets(workload: Workload, count: int, *, seed: int = 0) -> list[list[Emitted]]:
    """Distinct sets of ``workload.rules`` items in which every tool is denied.

    Each holds one random denial per tool plus random pool items; the minimal core is one
    denial per tool, so its size is the tool count.
    """
    rng = random.Random(f"conflict:{seed}:{workload.label}")
    tools = workload.tools
    sets: list[list[Emitted]] = []
    seen: set[frozenset[Emitted]] = set()
    while len(sets) < count:
        chosen = {rng.choice(workload.denials[t]): None for t in tools}
        rest = [e for e in workload.pool if e not in chosen]
        drawn = [*chosen, *rng.sample(rest, workload.rules - len(chosen))]
        key = frozenset(drawn)
        if key not in seen:
            seen.add(key)
            sets.append(drawn)
    return sets


def force_conflict_sets(
    workload: Workload, base: Sequence[list[Emitted]], *, seed: int = 0
) -> list[list[Emitted]]:
    """Each satisfiable ``base`` set plus a hard force on a tool that one of its rules denies.

    The typical run-time clash (a ``force_at_step`` when its tool may not run). Other denials
    of that tool are dropped, and random items to keep the size, so the core is those two.
    """
    rng = random.Random(f"force:{seed}:{workload.label}")
    out: list[list[Emitted]] = []
    for drawn in base:
        denied = sorted(denied_tools(drawn) - {FINAL_ANSWER})
        if not denied:
            continue
        tool = rng.choice(denied)
        keep = [e for e in drawn if tool not in blocked(e.item)]
        survivor = next(e for e in drawn if tool in blocked(e.item))
        rng.shuffle(keep)
        hard = Emitted(forced(tool), "force-at-step", 10)
        out.append([*keep[: workload.rules - 2], survivor, hard])
    return out


def freshen(sets: Sequence[list[Emitted]], *, tag: str = "cold") -> list[list[Emitted]]:
    """Copies of ``sets`` whose rules are new objects never seen: each gets a unique reason."""
    out: list[list[Emitted]] = []
    serial = 0
    for drawn in sets:
        copy = []
        for e in drawn:
            serial += 1
            r = e.item
            assert isinstance(r, Rule)
            fresh = Rule(
                r.target,
                allowed=r.allowed,
                hidden=r.hidden,
                forced=r.forced,
                prevent_stop=r.prevent_stop,
                reason=f"{r.reason or tag} #{serial}",
            )
            copy.append(Emitted(fresh, e.requirement, e.priority))
        out.append(copy)
    return out
