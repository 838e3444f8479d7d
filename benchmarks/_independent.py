"""A second generator of policy families, written from the user documentation alone.

``_policies.py``'s families are the ones the checker was tuned on. These six were written
later, without reading that file, from what ``docs/`` says a policy file may hold: the same
broad shapes (workflows, counters, forced schedules, approvals, mixes, random conditionals)
drawn another way, each seed drawing its own rates and knobs. They return the keys of a JSON
policy file (``make``), as a user would write one; ``python -m benchmarks.static --families
indep-chains,...`` times them like the others. A target met only on one generator is not
met.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

__all__ = ["SHAPES", "make"]

Entry = dict[str, Any]
"""One requirement's keys in a policy file."""

VERBS = [
    "fetch",
    "parse",
    "load",
    "plan",
    "draft",
    "check",
    "send",
    "store",
    "query",
    "sync",
    "build",
    "test",
    "deploy",
    "notify",
    "scan",
    "merge",
    "tag",
    "pay",
    "refund",
    "log",
]


def _tools(rng: random.Random, n: int) -> list[str]:
    return [f"{rng.choice(VERBS)}_{i:02d}" for i in range(n)]


_KINDS = (
    "force_at_step",
    "only_before",
    "only_after",
    "force_after",
    "min_invocations",
    "max_invocations",
    "consecutive_allowed",
)
"""The parameters of a conditional requirement that make it say something."""


class _Builder:
    """Requirements as policy-file entries, each valid on its own (contradictions between
    requirements are allowed, and meant in the mixes)."""

    def __init__(self, rng: random.Random, tools: list[str]) -> None:
        self.rng, self.tools = rng, tools
        self.reqs: list[Entry] = []

    def cond(self, target: str, **given: Any) -> None:
        kw = {k: v for k, v in given.items() if v is not None and v != []}
        for key in ("only_before", "only_after", "force_after"):
            if key in kw:
                kept = [t for t in dict.fromkeys(kw[key]) if t != target]
                if kept:
                    kw[key] = kept
                else:
                    del kw[key]
        if "only_before" in kw:
            clash = set(kw.get("only_after", [])) | set(kw.get("force_after", []))
            kept = [t for t in kw["only_before"] if t not in clash]
            if kept:
                kw["only_before"] = kept
            else:
                del kw["only_before"]
        if "min_invocations" in kw and "max_invocations" in kw:
            kw["min_invocations"] = min(kw["min_invocations"], kw["max_invocations"])
        if target == "final_answer":
            kw.pop("min_invocations", None)
        if not any(k in kw for k in _KINDS):
            kw["max_invocations"] = self.rng.randint(1, 5)
        self.reqs.append({"type": "conditional", "target": target, **kw})

    def ask(self, include: list[str], **kw: Any) -> None:
        self.reqs.append({"type": "ask_permission", "include": list(dict.fromkeys(include)), **kw})

    def cycle(self, **kw: Any) -> None:
        self.reqs.append({"type": "cycle_guard", **kw})

    def finish(self, count: int, more: Callable[[], None]) -> list[Entry]:
        if self.rng.random() < 0.3:
            self.rng.shuffle(self.reqs)
        while len(self.reqs) < count:
            more()
        out = []
        for i, r in enumerate(self.reqs[:count]):
            rest = {k: v for k, v in r.items() if k != "type"}
            out.append({"type": r["type"], "name": f"r{i:03d}-{r['type']}", **rest})
        return out


def _chains(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """Workflows: tools only after earlier ones (some branching), retry caps, required ends."""
    b = _Builder(rng, tools)
    k = rng.randint(2, max(2, len(tools) // 4))
    order = tools[:]
    rng.shuffle(order)
    cuts = sorted(rng.sample(range(1, len(order)), k - 1))
    chains = [order[i:j] for i, j in zip([0, *cuts], [*cuts, len(order)], strict=True)]
    branch_p, cap_p, need_ends = rng.uniform(0.0, 0.6), rng.uniform(0.1, 0.7), rng.uniform(0.3, 1)
    for ch in chains:
        for i in range(1, len(ch)):
            if rng.random() < branch_p and i >= 2:
                preds = [rng.choice(ch[: i - 1])]
                if rng.random() < 0.3:
                    preds.append(ch[i - 1])
            else:
                preds = [ch[i - 1]]
            cap = rng.randint(1, 4) if rng.random() < cap_p else None
            b.cond(ch[i], only_after=preds, max_invocations=cap)
        if ch and rng.random() < need_ends:
            b.cond(
                ch[-1], min_invocations=rng.randint(1, 2), max_invocations=rng.choice([None, 2, 3])
            )

    def more() -> None:
        t = rng.choice(tools)
        r = rng.random()
        if r < 0.5:
            cap = rng.randint(1, 5)
            b.cond(t, max_invocations=cap, only_success_invocations=rng.choice([None, False]))
        elif r < 0.8:
            ch = next(c for c in chains if t in c)
            i = ch.index(t)
            if i > 0:
                b.cond(t, only_after=[rng.choice(ch[:i])])
            else:
                b.cond(t, max_invocations=rng.randint(2, 6))
        else:
            b.cond(t, min_invocations=1, max_invocations=rng.randint(1, 3))

    return b.finish(count, more)


def _counters(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """Per-tool caps (up to 2, 4, 8 or 20 per seed) and minimums, some ordering."""
    b = _Builder(rng, tools)
    order_p, min_p = rng.uniform(0.0, 0.6), rng.uniform(0.0, 0.5)
    cap = rng.choice([2, 4, 8, 20])
    perm = tools[:]
    rng.shuffle(perm)

    def one() -> None:
        i = rng.randrange(len(perm))
        most = rng.randint(0 if rng.random() < 0.05 else 1, cap)
        least = rng.randint(1, min(3, max(most, 1))) if rng.random() < min_p else None
        after = [rng.choice(perm[:i])] if i > 0 and rng.random() < order_p else None
        every = False if rng.random() < 0.2 else None
        b.cond(
            perm[i],
            max_invocations=most,
            min_invocations=least,
            only_after=after,
            only_success_invocations=every,
        )

    for _ in range(count):
        one()
    return b.finish(count, one)


def _forced(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """A tool forced first and after actions (not twice in a row), a forced prefix, the
    actions capped and gated on the first tools."""
    b = _Builder(rng, tools)
    think, *rest = tools
    prefix, actions = rest[:2], rest[2:]
    first = rng.random() < 0.75
    start = 2 if first and rng.random() < 0.7 else 1  # 1: it clashes with `think` at step 1
    after = actions if rng.random() < 0.5 else rng.sample(actions, rng.randint(1, len(actions)))
    also = prefix if rng.random() < 0.5 else []
    b.cond(
        think,
        force_at_step=1 if first else None,
        force_after=after + also,
        consecutive_allowed=False,
    )
    for j, p in enumerate(prefix):
        every = False if rng.random() < 0.3 else None
        b.cond(p, force_at_step=start + j, only_success_invocations=every)
    gates = [think, *prefix]
    gate_p = rng.uniform(0.3, 1.0)
    for t in actions:
        cap = rng.randint(1, 3)
        gate = [rng.choice(gates)] if rng.random() < gate_p else None
        b.cond(t, max_invocations=cap, only_after=gate)

    def more() -> None:
        t = rng.choice(actions)
        r = rng.random()
        if r < 0.4:
            b.cond(t, max_invocations=rng.randint(1, 3), only_after=[rng.choice(gates)])
        elif r < 0.6:
            b.cond(t, min_invocations=1, max_invocations=rng.randint(1, 3))
        elif r < 0.8:
            b.cond(t, only_before=[rng.choice(actions)], max_invocations=rng.randint(1, 3))
        else:
            b.cond(t, consecutive_allowed=False, max_invocations=rng.randint(1, 3))

    return b.finish(count, more)


def _approvals(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """Up to six ask-permission requirements over risky tools (some by exclusion), with
    orderings and caps."""
    b = _Builder(rng, tools)
    risky = rng.sample(tools, rng.randint(2, max(2, len(tools) // 2)))
    for _ in range(rng.randint(1, 6)):
        sub = rng.sample(risky, rng.randint(1, len(risky)))
        kw: dict[str, Any] = {}
        if rng.random() < 0.6:
            kw["remember_choices"] = True
        if rng.random() < 0.4:
            kw["hide_disallowed"] = True
        if rng.random() < 0.1:
            kw["always_allow"] = True
        if rng.random() < 0.15:
            kw["exclude"] = [t for t in tools if t not in sub]
            b.reqs.append({"type": "ask_permission", **kw})
        else:
            b.ask(sub, **kw)
    safe = [t for t in tools if t not in risky]
    perm = tools[:]
    rng.shuffle(perm)

    def more() -> None:
        t = rng.choice(risky if rng.random() < 0.6 else tools)
        r = rng.random()
        if r < 0.4:
            before = perm[: perm.index(t)] or safe or tools
            b.cond(
                t,
                only_after=rng.sample(before, min(len(before), rng.randint(1, 2))),
                max_invocations=rng.choice([None, 1, 2, 3]),
            )
        elif r < 0.75:
            b.cond(t, max_invocations=rng.randint(1, 4))
        elif r < 0.9:
            b.cond(t, only_before=[rng.choice(tools)])
        else:
            b.cond(t, min_invocations=1, max_invocations=rng.choice([None, 1, 2]))

    return b.finish(count, more)


def _mixes(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """Every built-in kind at rates drawn per seed (some seeds calm, some contradictory),
    cycle guards and priorities included."""
    b = _Builder(rng, tools)
    if rng.random() < 0.5:
        b.cycle(
            max_strike_length=rng.randint(1, 3),
            max_total_occurrences=rng.randint(2, 6),
            window_size=rng.randint(6, 12),
        )

    def some(k: int = 3) -> list[str]:
        return rng.sample(tools, rng.randint(1, k))

    bounds = {
        "ask": (0.0, 0.15),
        "cycle": (0.0, 0.05),
        "at_step": (0.0, 0.1),
        "after": (0.05, 0.5),
        "before": (0.0, 0.3),
        "force": (0.0, 0.3),
        "max": (0.1, 0.6),
        "never": (0.0, 0.15),
        "min": (0.0, 0.3),
        "every": (0.0, 0.4),
        "twice": (0.0, 0.3),
        "priority": (0.0, 0.3),
    }
    p = {k: rng.uniform(lo, hi) for k, (lo, hi) in bounds.items()}
    last_step = rng.randint(1, 10)

    def more() -> None:
        r = rng.random()
        if r < p["ask"]:
            kw: dict[str, Any] = {}
            for key in ("remember_choices", "hide_disallowed", "always_allow"):
                if rng.random() < 0.4:
                    kw[key] = rng.random() < 0.5
            if rng.random() < 0.3:
                b.reqs.append({"type": "ask_permission", "exclude": some(4), **kw})
            else:
                b.ask(some(5), **kw)
            return
        if r < p["ask"] + p["cycle"]:
            b.cycle(max_strike_length=rng.randint(1, 4))
            return
        t = rng.choice([*tools, "final_answer"] if rng.random() < 0.1 else tools)
        kw = {}
        if rng.random() < p["at_step"]:
            kw["force_at_step"] = rng.randint(1, last_step)
        if rng.random() < p["after"]:
            kw["only_after"] = some(2)
        if rng.random() < p["before"]:
            kw["only_before"] = some(2)
        if rng.random() < p["force"]:
            kw["force_after"] = some(3)
            if rng.random() < 0.3:
                kw["force_prevent_stop"] = False
        if rng.random() < p["max"]:
            kw["max_invocations"] = rng.randint(0 if rng.random() < p["never"] else 1, 6)
        if rng.random() < p["min"]:
            kw["min_invocations"] = rng.randint(1, 3)
        if rng.random() < p["every"]:
            kw["only_success_invocations"] = False
        if rng.random() < p["twice"]:
            kw["consecutive_allowed"] = False
        if rng.random() < p["priority"]:
            kw["priority"] = rng.randint(1, 30)
        if rng.random() < 0.03:
            kw["enabled"] = False
        b.cond(t, **kw)

    return b.finish(count, more)


def _random_conditionals(rng: random.Random, tools: list[str], count: int) -> list[Entry]:
    """Random targets, each with one kind of parameter, the kinds weighted per seed."""
    b = _Builder(rng, tools)
    weights = [rng.random() + 0.05 for _ in range(5)]
    kinds = ["only_after", "only_before", "max_invocations", "min_invocations", "force_after"]

    def more() -> None:
        t = rng.choice(tools)
        kind = rng.choices(kinds, weights)[0]
        others = [x for x in tools if x != t]
        if kind in ("only_after", "only_before"):
            b.cond(t, **{kind: rng.sample(others, rng.randint(1, 2))})
        elif kind == "max_invocations":
            b.cond(t, max_invocations=rng.randint(0 if rng.random() < 0.05 else 1, 5))
        elif kind == "min_invocations":
            b.cond(t, min_invocations=rng.randint(1, 2))
        else:
            b.cond(t, force_after=rng.sample(others, rng.randint(1, 3)))

    return b.finish(count, more)


SHAPES: dict[str, Callable[[random.Random, list[str], int], list[Entry]]] = {
    "indep-chains": _chains,
    "indep-counters": _counters,
    "indep-forced": _forced,
    "indep-approvals": _approvals,
    "indep-mixes": _mixes,
    "indep-conditionals": _random_conditionals,
}
"""The families, by the name ``benchmarks.static`` knows them by."""


_SEEDED = {"indep-conditionals": "randcond"}
"""Names in the random seed other than the family's without ``indep-`` (the generator's
first runs named them so)."""


def make(family: str, tools: int, reqs: int, seed: int) -> dict[str, Any]:
    """The keys of one policy file of ``family`` (deterministic per family, size and seed);
    a quarter of the mixes in priority mode."""
    seeded = _SEEDED.get(family, family.removeprefix("indep-"))
    rng = random.Random(f"{seeded}-{tools}-{seed}")
    names = _tools(rng, tools)
    if family == "indep-forced":
        names[0] = "think"
    requirements = SHAPES[family](rng, names, reqs)
    out: dict[str, Any] = {
        "tools": names,
        "max_iterations": rng.randint(20, 40),
        "requirements": requirements,
    }
    if family == "indep-mixes" and rng.random() < 0.25:
        out["mode"] = "priority"
    return out
