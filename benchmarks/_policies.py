"""Generated policy families for the static checker's benchmark (``benchmarks/static.py``).

Every family is a function of a size (tools, requirements) and a seed, deterministic, and
returns a ``Policy``. They model what real agents declare:

* ``chain`` — a workflow: each step only after the previous one, with retry caps, the
  answer only after the last step;
* ``counters`` — per-tool budgets: minimum and maximum calls;
* ``react`` — a ReAct loop: ``think`` forced at step 1 and after every action, actions capped;
* ``approvals`` — risky tools behind remembered human approval, with ordering between them;
* ``mixed`` — random parameters of every built-in, some of them contradicting each other.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ruleengine import AskPermissionRequirement, ConditionalRequirement, CycleGuard, Policy
from ruleengine.requirements.base import Requirement

__all__ = ["FAMILIES", "make_policy"]


def chain(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"step{i}" for i in range(tools)]
    out: list[Requirement] = []
    for i, t in enumerate(names):
        if len(out) >= reqs:
            break
        after = [names[i - 1]] if i else None
        out.append(ConditionalRequirement(t, only_after=after, name=f"order-{t}"))
    for t in names:
        if len(out) >= reqs - 1:
            break
        out.append(
            ConditionalRequirement(t, max_invocations=rng.randint(1, 3), name=f"retries-{t}")
        )
    out.append(ConditionalRequirement("final_answer", only_after=names[-1], name="answer-last"))
    return Policy(names, out[:reqs], source=f"chain-{tools}-{reqs}-{seed}")


def counters(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"tool{i}" for i in range(tools)]
    out: list[Requirement] = []
    i = 0
    while len(out) < reqs:
        t = names[i % tools]
        low = rng.randint(0, 2)
        high = rng.choice([None, low + rng.randint(0, 2)])
        if high == 0:
            high = None
        out.append(
            ConditionalRequirement(
                t, min_invocations=low, max_invocations=high, name=f"count-{t}-{i}"
            )
        )
        i += 1
    return Policy(names, out, source=f"counters-{tools}-{reqs}-{seed}")


def react(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    actions = [f"act{i}" for i in range(tools - 1)]
    names = ["think", *actions]
    out: list[Requirement] = [
        ConditionalRequirement("think", force_at_step=1, name="think-first"),
        ConditionalRequirement(
            "think", force_after=actions, consecutive_allowed=False, name="think-after-acting"
        ),
    ]
    for a in actions:
        if len(out) >= reqs:
            break
        out.append(ConditionalRequirement(a, max_invocations=rng.randint(1, 4), name=f"cap-{a}"))
    while len(out) < reqs:
        a, b = rng.sample(actions, 2)
        out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
    return Policy(names, out, source=f"react-{tools}-{reqs}-{seed}")


def approvals(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"op{i}" for i in range(tools)]
    risky = names[: max(1, tools // 3)]
    out: list[Requirement] = [
        AskPermissionRequirement(include=risky, remember_choices=True, name="approve"),
    ]
    while len(out) < reqs:
        a, b = rng.sample(names, 2)
        kind = rng.random()
        if kind < 0.4:
            out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
        elif kind < 0.7:
            out.append(
                ConditionalRequirement(a, max_invocations=rng.randint(1, 3), name=f"cap-{a}-{len(out)}")
            )
        else:
            out.append(ConditionalRequirement(a, only_before=b, name=f"{a}-before-{b}-{len(out)}"))
    return Policy(names, out, source=f"approvals-{tools}-{reqs}-{seed}")


def mixed(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(tools)]
    out: list[Requirement] = [CycleGuard()] if rng.random() < 0.5 else []
    while len(out) < reqs:
        target = rng.choice([*names, "final_answer"] if rng.random() < 0.1 else names)
        others = [t for t in names if t != target]
        params: dict[str, object] = {}
        roll = rng.random()
        if roll < 0.25:
            params["only_after"] = rng.sample(others, rng.randint(1, 2))
        elif roll < 0.4:
            params["only_before"] = rng.sample(others, 1)
        elif roll < 0.55 and target != "final_answer":
            params["force_after"] = rng.sample(others, 1)
        elif roll < 0.65 and target != "final_answer":
            params["force_at_step"] = rng.randint(1, 4)
        if target != "final_answer" and rng.random() < 0.5:
            low = rng.randint(0, 2)
            params["min_invocations"] = low
            params["max_invocations"] = rng.choice([None, low + rng.randint(0, 2) or 1])
        if rng.random() < 0.2:
            params["consecutive_allowed"] = False
        if rng.random() < 0.3:
            params["only_success_invocations"] = False
        params["priority"] = rng.randint(1, 20)
        try:
            out.append(ConditionalRequirement(target, name=f"r{len(out)}-{target}", **params))  # type: ignore[arg-type]
        except Exception:
            continue
    return Policy(names, out, source=f"mixed-{tools}-{reqs}-{seed}")


FAMILIES: dict[str, Callable[[int, int, int], Policy]] = {
    "chain": chain,
    "counters": counters,
    "react": react,
    "approvals": approvals,
    "mixed": mixed,
}


def make_policy(family: str, tools: int, reqs: int, seed: int = 0) -> Policy:
    """One generated policy."""
    return FAMILIES[family](tools, reqs, seed)
