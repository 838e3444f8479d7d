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

__all__ = ["FAMILIES", "make_policy", "policy_file"]


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
    # A chain of n steps needs n calls before the answer: a budget that allows them.
    return Policy(
        names, out[:reqs], max_iterations=3 * tools, source=f"chain-{tools}-{reqs}-{seed}"
    )


def counters(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"tool{i}" for i in range(tools)]
    out: list[Requirement] = []
    for t in names[:reqs]:
        low = rng.randint(0, 2)
        high = rng.choice([None, low + rng.randint(0, 2)])
        if high == 0 or (low == 0 and high is None):
            low, high = 0, rng.randint(1, 3)  # a counter that counts
        out.append(
            ConditionalRequirement(t, min_invocations=low, max_invocations=high, name=f"count-{t}")
        )
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(tools), 2))
        a, b = names[j], names[i]
        out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
    return Policy(names, out, max_iterations=4 * tools, source=f"counters-{tools}-{reqs}-{seed}")


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
    # The costly or risky actions get a cap (about one in four); the rest of the
    # requirements order actions (this one only after that one).
    for a in rng.sample(actions, max(1, len(actions) // 4)):
        out.append(ConditionalRequirement(a, max_invocations=rng.randint(1, 4), name=f"cap-{a}"))
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(len(actions)), 2))  # later actions after earlier ones
        a, b = actions[j], actions[i]
        out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
    return Policy(names, out[:reqs], source=f"react-{tools}-{reqs}-{seed}")


def approvals(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"op{i}" for i in range(tools)]
    risky = names[: max(1, tools // 3)]
    out: list[Requirement] = [
        AskPermissionRequirement(include=risky, remember_choices=True, name="approve"),
    ]
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(tools), 2))
        a, b = names[j], names[i]  # orderings follow the declared order
        kind = rng.random()
        if kind < 0.4:
            out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
        elif kind < 0.7:
            out.append(
                ConditionalRequirement(
                    a, max_invocations=rng.randint(1, 3), name=f"cap-{a}-{len(out)}"
                )
            )
        else:
            out.append(ConditionalRequirement(b, only_before=a, name=f"{b}-before-{a}-{len(out)}"))
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


def policy_file(policy: Policy) -> dict[str, object]:
    """``policy`` as the keys of a policy file (SPEC §10), for ``ruleengine check``."""
    reqs: list[dict[str, object]] = []
    for req in policy.requirements:
        entry: dict[str, object] = {"name": req.name, "priority": req.priority}
        if isinstance(req, ConditionalRequirement):
            m = req.monitor()
            entry.update(
                type="conditional",
                target=m.target,
                only_before=list(m.only_before),
                only_after=list(m.only_after),
                force_after=list(m.force_after),
                force_at_step=m.force_at_step,
                force_prevent_stop=m.force_prevent_stop,
                min_invocations=m.min_invocations,
                max_invocations=m.max_invocations,
                only_success_invocations=m.only_success,
                consecutive_allowed=m.consecutive_allowed,
            )
            entry = {k: v for k, v in entry.items() if v is not None}
        elif isinstance(req, AskPermissionRequirement):
            entry.update(
                type="ask_permission",
                include=list(req.monitor().covered),
                remember_choices=req.remember_choices,
                hide_disallowed=req.hide_disallowed,
            )
        elif isinstance(req, CycleGuard):
            entry.update(
                type="cycle_guard",
                max_strike_length=req.max_strike_length,
                max_total_occurrences=req.max_total_occurrences,
                window_size=req.window_size,
            )
        else:  # pragma: no cover - the families use built-ins only
            raise TypeError(f"no file form for {req!r}")
        reqs.append(entry)
    return {
        "tools": list(policy.tools),
        "max_iterations": policy.max_iterations,
        "mode": policy.mode,
        "requirements": reqs,
    }
