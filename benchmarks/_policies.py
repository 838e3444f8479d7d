"""Generated policy families for the static checker's benchmark (``benchmarks/static.py``).

Every family is a function of a size (tools, requirements) and a seed, deterministic, and
returns a ``Policy``. They model what real agents declare:

* ``chain`` — a workflow: each step only after the previous one, with retry caps, the
  answer only after the last step;
* ``counters`` — per-tool budgets: minimum and maximum calls;
* ``react`` — a ReAct loop: ``think`` forced at step 1 and after every action, actions capped;
* ``approvals`` — risky tools behind remembered human approval, with ordering between them;
* ``mixed`` — random parameters of every built-in, some of them contradicting each other,
  a quarter of the seeds in priority mode;
* ``conditionals`` — random conditionals on random targets, one parameter each;
* ``tallies`` — independent per-tool counters (caps, minimums, two counting modes).

Each family draws its own knobs per seed (shares, caps, fan-in, budget slack, which
variant of a shape), so a size's seeds are different shapes, not one shape reshuffled.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable

from ruleengine import AskPermissionRequirement, ConditionalRequirement, CycleGuard, Policy
from ruleengine.errors import PolicyError
from ruleengine.requirements.base import Requirement

__all__ = ["FAMILIES", "make_policy", "policy_file"]


def _conditional(out: list[Requirement], target: str, name: str, **params: object) -> None:
    """Append a ``ConditionalRequirement``; drop a draw the constructor refuses (a random
    mix of parameters can contradict itself, e.g. ``min_invocations`` above the maximum)."""
    with contextlib.suppress(PolicyError):
        out.append(ConditionalRequirement(target, name=name, **params))  # type: ignore[arg-type]


def chain(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    # Per seed: how far back a step may branch, how many retries a cap allows, how much
    # slack the budget leaves, whether the last step is required.
    branch = rng.random() * 0.4
    most_retries = rng.randint(1, 4)
    slack = rng.choice([2, 3, 4])
    names = [f"step{i}" for i in range(tools)]
    out: list[Requirement] = []
    for i, t in enumerate(names):
        if len(out) >= reqs:
            break
        after = [names[i - 1]] if i else None
        if after and i > 1 and rng.random() < branch:
            after = [names[rng.randrange(i - 1)], names[i - 1]]
        out.append(ConditionalRequirement(t, only_after=after, name=f"order-{t}"))
    for t in names:
        if len(out) >= reqs - 1:
            break
        _conditional(out, t, f"retries-{t}", max_invocations=rng.randint(1, most_retries))
    if rng.random() < 0.5:
        _conditional(out, names[-1], "last-required", min_invocations=1)
    out = out[: reqs - 1]
    out.append(ConditionalRequirement("final_answer", only_after=names[-1], name="answer-last"))
    # A chain of n steps needs n calls before the answer: a budget that allows them.
    return Policy(names, out, max_iterations=slack * tools, source=f"chain-{tools}-{reqs}-{seed}")


def counters(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    # Per seed: the highest minimum and spread, how many tools are counted, whether
    # failed calls count too, and the budget's slack.
    most_low, spread = rng.randint(1, 3), rng.randint(0, 3)
    counted = max(1, min(tools, reqs, round(tools * rng.uniform(0.5, 1.0))))
    every_status = rng.random() * 0.5
    names = [f"tool{i}" for i in range(tools)]
    out: list[Requirement] = []
    for t in names[:counted]:
        low = rng.randint(0, most_low)
        high = rng.choice([None, low + rng.randint(0, spread)])
        if high == 0 or (low == 0 and high is None):
            low, high = 0, rng.randint(1, 3)  # a counter that counts
        out.append(
            ConditionalRequirement(
                t,
                min_invocations=low,
                max_invocations=high,
                only_success_invocations=rng.random() >= every_status,
                name=f"count-{t}",
            )
        )
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(tools), 2))
        a, b = names[j], names[i]
        out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
    budget = rng.choice([3, 4, 6]) * tools
    return Policy(names, out, max_iterations=budget, source=f"counters-{tools}-{reqs}-{seed}")


def react(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    actions = [f"act{i}" for i in range(tools - 1)]
    names = ["think", *actions]
    # Per seed: ``think`` forced after every action or after some of them; a forced
    # prefix (steps 1 and 2); how many actions are capped and how tightly; whether the
    # capped actions are gated on one of the first three.
    after = actions if rng.random() < 0.5 else rng.sample(actions, max(1, len(actions) // 2))
    out: list[Requirement] = [
        ConditionalRequirement("think", force_at_step=1, name="think-first"),
        ConditionalRequirement(
            "think", force_after=after, consecutive_allowed=False, name="think-after-acting"
        ),
    ]
    if rng.random() < 0.4:
        out.append(ConditionalRequirement(actions[0], force_at_step=2, name="prefix-2"))
    capped = rng.sample(actions, max(1, round(len(actions) * rng.uniform(0.2, 0.9))))
    most = rng.randint(1, 4)
    gated = rng.random() < 0.4
    for a in capped:
        out.append(ConditionalRequirement(a, max_invocations=rng.randint(1, most), name=f"cap-{a}"))
        if gated and a not in actions[:3]:
            gate = rng.choice(actions[:3])
            out.append(ConditionalRequirement(a, only_after=gate, name=f"{a}-gated-{gate}"))
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(len(actions)), 2))  # later actions after earlier ones
        a, b = actions[j], actions[i]
        out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
    return Policy(names, out[:reqs], source=f"react-{tools}-{reqs}-{seed}")


def approvals(tools: int, reqs: int, seed: int) -> Policy:
    rng = random.Random(seed)
    names = [f"op{i}" for i in range(tools)]
    # Per seed: the share of risky tools, whether choices are remembered, and the mix
    # of orderings and caps.
    risky = names[: max(1, round(tools * rng.uniform(0.1, 0.5)))]
    after_share = rng.uniform(0.2, 0.6)
    cap_share = rng.uniform(0.1, 0.4)
    out: list[Requirement] = [
        AskPermissionRequirement(
            include=risky, remember_choices=rng.random() < 0.7, name="approve"
        ),
    ]
    while len(out) < reqs:
        i, j = sorted(rng.sample(range(tools), 2))
        a, b = names[j], names[i]  # orderings follow the declared order
        kind = rng.random()
        if kind < after_share:
            out.append(ConditionalRequirement(a, only_after=b, name=f"{a}-after-{b}-{len(out)}"))
        elif kind < after_share + cap_share:
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
    # Per seed: how often each parameter is drawn.
    p_answer, p_counted = rng.uniform(0.0, 0.2), rng.uniform(0.2, 0.7)
    p_strict, p_every = rng.uniform(0.0, 0.35), rng.uniform(0.0, 0.5)
    cuts = sorted(rng.uniform(0.0, 1.0) for _ in range(4))
    out: list[Requirement] = [CycleGuard()] if rng.random() < 0.5 else []
    while len(out) < reqs:
        target = rng.choice([*names, "final_answer"] if rng.random() < p_answer else names)
        others = [t for t in names if t != target]
        params: dict[str, object] = {}
        roll = rng.random()
        if roll < cuts[0]:
            params["only_after"] = rng.sample(others, rng.randint(1, 2))
        elif roll < cuts[1]:
            params["only_before"] = rng.sample(others, 1)
        elif roll < cuts[2] and target != "final_answer":
            params["force_after"] = rng.sample(others, 1)
        elif roll < cuts[3] and target != "final_answer":
            params["force_at_step"] = rng.randint(1, 4)
        if target != "final_answer" and rng.random() < p_counted:
            low = rng.randint(0, 2)
            params["min_invocations"] = low
            params["max_invocations"] = rng.choice([None, low + rng.randint(0, 2) or 1])
        if rng.random() < p_strict:
            params["consecutive_allowed"] = False
        if rng.random() < p_every:
            params["only_success_invocations"] = False
        params["priority"] = rng.randint(1, 20)
        _conditional(out, target, f"r{len(out)}-{target}", **params)
    # Every fourth seed (3, 7, ...) in priority mode; each keeps its requirements.
    mode = "priority" if seed % 4 == 3 else "strict"
    return Policy(names, out, mode=mode, source=f"mixed-{tools}-{reqs}-{seed}")


def conditionals(tools: int, reqs: int, seed: int) -> Policy:
    """Random conditionals on random targets, each with one kind of parameter, in
    proportions drawn per seed; none of the other families' structure (no order among
    the tools, no forced schedule)."""
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(tools)]
    kinds = ["only_after", "only_before", "max_invocations", "min_invocations", "force_after"]
    weights = [rng.uniform(0.2, 1.0) for _ in kinds]
    widest = rng.randint(1, 3)
    out: list[Requirement] = []
    while len(out) < reqs:
        target = rng.choice(names)
        others = [t for t in names if t != target]
        kind = rng.choices(kinds, weights)[0]
        value: object
        if kind in ("only_after", "only_before", "force_after"):
            value = rng.sample(others, rng.randint(1, widest))
        elif kind == "max_invocations":
            value = rng.randint(1, 3)
        else:
            value = 1
        params: dict[str, object] = {kind: value}
        if rng.random() < 0.2:
            params["only_success_invocations"] = False
        _conditional(out, target, f"r{len(out)}-{target}", **params)
    return Policy(names, out, source=f"conditionals-{tools}-{reqs}-{seed}")


def tallies(tools: int, reqs: int, seed: int) -> Policy:
    """Independent per-tool counters: every tool capped, some also required, some counted
    twice (successes and every call); no requirement links two tools."""
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(tools)]
    most = rng.randint(2, 4)
    required = rng.uniform(0.2, 0.6)
    every_status = rng.uniform(0.0, 1.0)
    out: list[Requirement] = []
    for t in names[:reqs]:
        out.append(
            ConditionalRequirement(
                t,
                max_invocations=rng.randint(1, most),
                min_invocations=1 if rng.random() < required else 0,
                only_success_invocations=rng.random() >= every_status,
                name=f"cap-{t}",
            )
        )
    while len(out) < reqs:
        t = rng.choice(names)
        out.append(
            ConditionalRequirement(
                t,
                max_invocations=rng.randint(1, most + 1),
                only_success_invocations=rng.random() < 0.5,
                name=f"cap-{t}-{len(out)}",
            )
        )
    return Policy(names, out, source=f"tallies-{tools}-{reqs}-{seed}")


FAMILIES: dict[str, Callable[[int, int, int], Policy]] = {
    "chain": chain,
    "counters": counters,
    "react": react,
    "approvals": approvals,
    "mixed": mixed,
    "conditionals": conditionals,
    "tallies": tallies,
}


def make_policy(family: str, tools: int, reqs: int, seed: int = 0) -> Policy:
    """One generated policy."""
    return FAMILIES[family](tools, reqs, seed)


def policy_file(policy: Policy) -> dict[str, object]:
    """``policy`` as the keys of a policy file, for ``ruleengine check``."""
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
