"""Guesses for requirement-level cores, read off the policy's structure (no search).

A core search (``properties.requirement_core``) tries guesses before it searches: the
requirements around a finding's subject, one to three rounds out and then its whole cone
of influence (``_cones``, ``cone_of``); those on chains of dependencies between what a
requirement mentions and what it watches (``_between``); those that make a run long
(``_lengthening``); those around a requirement that may keep the run from stopping
(``_stopping``). Here too is what the guesses are made of: which requirements mention,
watch or single out which tools. Every guess is checked, never trusted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ruleengine.check.bounds import distances
from ruleengine.check.system import Checked, Component
from ruleengine.ir import FINAL_ANSWER

__all__ = ["Dependency", "cone_of"]


def _cones(system: Checked, tools: set[str], *, forcing: bool) -> list[frozenset[str]]:
    """Guesses from small to large for findings whose cause is usually local (a dead tool or
    requirement): the requirements around ``tools`` one, two and three rounds out, then the
    whole cone of influence."""
    local = tools - {FINAL_ANSWER}
    near = [_around(system, local, rounds) for rounds in (1, 2, 3)] if local else []
    return [*near, cone_of(system, tools, forcing=forcing)]


def _around(system: Checked, tools: set[str], rounds: int) -> frozenset[str]:
    """The requirements within ``rounds`` of ``tools``, where a requirement touches the tools
    its rules mention and the tools whose calls change its view, and ``final_answer`` links
    nothing (every requirement that prevents a stop mentions it)."""
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    touches, links = _watched(system), _watched(system, linking=True)
    for name, mentioned in mentions.items():
        touches.setdefault(name, set()).update(mentioned)
        links.setdefault(name, set()).update(mentioned)
    chosen: set[str] = set()
    reach = set(tools)
    for _ in range(rounds):
        added = {n for n, ts in touches.items() if n not in chosen and ts & reach}
        if not added:
            break
        chosen |= added
        for name in added:
            reach |= links[name] - {FINAL_ANSWER}
    return frozenset(chosen)


Dependency = tuple[str, str, str]
"""A requirement, a tool its rules mention, and a tool whose calls change its view."""


def _dependencies(system: Checked) -> list[Dependency]:
    """Per component (a requirement tabulated as factors has one per factor), each tool its
    rules mention paired with each tool that moves its view; global views (see
    ``_watched``) give none."""
    out: list[Dependency] = []
    for comp in system.components:
        if comp.is_global(_callable_count(system)):
            continue
        mentioned = sorted(comp.mentions - {FINAL_ANSWER})
        name = comp.requirement.name
        out.extend((name, m, w) for m in mentioned for w in comp.watched if m != w)
    return out


def _callable_count(system: Checked) -> int:
    return sum(t != FINAL_ANSWER for t in system.tools)


def _between(system: Checked, name: str, dependencies: list[Dependency]) -> list[frozenset[str]]:
    """Guesses for why requirement ``name`` is never live: the requirements on chains of
    dependencies from the tools it mentions and from the tools it watches to a common tool.

    A component that watches `w` and mentions `m` makes `m` depend on `w` ("`a` only after
    `b`": `a` on `b`; "`c` only before `a`": `c` on `a`). "`c` only before `a`" is never
    live when `a` needs `b` first and `c` is given up once `b` ran: `a` and `c` both depend
    on `b`. The guesses: the requirements on the shortest such pairs of chains, then on
    pairs one link longer."""
    edges = [(other, m, w) for other, m, w in dependencies if other != name]
    mine = [(m, w) for other, m, w in dependencies if other == name]
    ends = ({m for m, _ in mine}, {w for _, w in mine})
    if not mine:
        return []

    def forward(start: set[str]) -> dict[str, int]:
        dist = dict.fromkeys(start, 0)
        frontier, d = set(start), 0
        while frontier:
            d += 1
            frontier = {w for _, m, w in edges if m in frontier} - dist.keys()
            dist.update(dict.fromkeys(frontier, d))
        return dist

    def backward(goal: str) -> dict[str, int]:
        dist = {goal: 0}
        frontier, d = {goal}, 0
        while frontier:
            d += 1
            frontier = {m for _, m, w in edges if w in frontier} - dist.keys()
            dist.update(dict.fromkeys(frontier, d))
        return dist

    near = (forward(ends[0]), forward(ends[1]))
    common = near[0].keys() & near[1].keys()
    if not common:
        return []
    out: list[frozenset[str]] = []
    least = min(near[0][t] + near[1][t] for t in common)
    for slack in (0, 1):
        on: set[str] = set()
        for goal in common:
            if near[0][goal] + near[1][goal] > least + slack:
                continue
            back = backward(goal)
            for dist in near:
                # An edge on a shortest chain from this end to ``goal``.
                on |= {
                    other
                    for other, m, w in edges
                    if m in dist and w in back and dist[m] + 1 + back[w] == dist[goal]
                }
        if on and frozenset(on) not in out:
            out.append(frozenset(on))
    return out


def _lengthening(system: Checked) -> list[frozenset[str]]:
    """Guesses for a budget's core: the requirements that make a run long.

    The requirements that keep a run from stopping at first (a minimum of calls) and those
    that hard-force a tool; then, until nothing changes, those that deny at first a tool the
    chosen ones need called or force (an "only after"), whose prerequisites — the tools
    they watch — are then needed too. The first guess stops before that closure; the second
    is the closure. (On the benchmark's `mixed-20-40-8`, the budget holds with the first
    guess's 13 requirements, and its core has 4; searched among all 40, it had 12.)"""
    comps = [c for c in system.components if not c.requirement.yielding]
    chosen: set[str] = set()
    needed: set[str] = set()
    for comp in comps:
        bound = distances(comp, system.tools)
        forced = comp.hard_forces
        if bound.steps[0] > 0 or forced:
            chosen.add(comp.requirement.name)
            needed |= forced | {t for t, calls in bound.calls.items() if calls[0] > 0}
    if not chosen:
        return []
    out = [frozenset(chosen)]
    changed = True
    while changed:
        changed = False
        for comp in comps:
            if comp.requirement.name not in chosen and comp.denied(0) & needed:
                chosen.add(comp.requirement.name)
                needed |= set(comp.watched) - {FINAL_ANSWER}
                changed = True
    out.append(frozenset(chosen))
    return out


def _stopping(system: Checked, rounds: int = 0) -> list[frozenset[str]]:
    """Guesses for a no-finish's core: per requirement that may keep the run from stopping
    (its rules mention ``final_answer``), it and the requirements whose rules mention a
    tool it waits for (``_singled_out``: the target a count watches, the trigger of a force):
    a demand and what may deny it forever. With ``rounds``, grown that many times by the
    requirements whose rules mention a tool one of the guess's waits for: what denies a
    tool forever may do so through a chain ("`p` only before `d`", "`s` forced after `p`",
    "`d` forced after `s`")."""
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    waits = _singled_out(system)
    guesses = []
    for name, mentioned in mentions.items():
        if FINAL_ANSWER not in mentioned:
            continue
        guess = frozenset({name}) | _mentioning(system, waits.get(name, set()) - {FINAL_ANSWER})
        for _ in range(rounds):
            waited = set().union(*(waits.get(n, set()) for n in guess)) - {FINAL_ANSWER}
            guess |= _mentioning(system, waited)
        guesses.append(guess)
    return guesses


def _mentioning(system: Checked, tools: Iterable[str]) -> frozenset[str]:
    """The requirements whose rules mention one of ``tools``."""
    wanted = set(tools)
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    return frozenset(name for name, mentioned in mentions.items() if mentioned & wanted)


def _mentions_of(system: Checked, name: str) -> frozenset[str]:
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    return mentions.get(name, frozenset())


def _watched(system: Checked, *, linking: bool = False) -> dict[str, set[str]]:
    """Per requirement, the tools whose calls change its view. With ``linking``, not those
    of a global view (one that most tools move: a step counter, the last tool called): it
    would link every tool to every other, and a guess grown along links would be the whole
    policy. (A fresh copy: callers add to it. A system without components has none.)"""
    known: dict[bool, dict[str, frozenset[str]]] = getattr(system, "watching", {linking: {}})
    return {name: set(tools) for name, tools in known[linking].items()}


def _singled_out(system: Checked) -> dict[str, set[str]]:
    """Per requirement, the tools whose calls move one of its views otherwise than most
    tools do: all the tools a local view watches; for a global view (a step counter, the
    last tool called), those outside the class that most of its tools share (the trigger of
    a force after a tool, the target a count watches), which the view waits for. A view
    that tells most tools apart (the cycle guard's history) singles out none."""
    out: dict[str, set[str]] = {}
    comps: Sequence[Component] = getattr(system, "components", ())
    callable_count = _callable_count(system)
    for comp in comps:
        mine = out.setdefault(comp.requirement.name, set())
        watched = comp.watched
        if not comp.is_global(callable_count):
            mine.update(watched)
            continue
        common, size = Counter(comp.classes[t] for t in watched).most_common(1)[0]
        if size * 2 > len(watched):
            mine.update(t for t in watched if comp.classes[t] != common)
    return out


def cone_of(system: Checked, tools: set[str], *, forcing: bool) -> frozenset[str]:
    """The requirements that can influence ``tools``: those whose rules mention them, then,
    transitively, those whose rules mention a tool the former watch (a call that changes
    their view); with ``forcing``, every requirement that forces a tool (a forced tool
    excludes all others). A cone-of-influence guess for a requirement-level core: checked,
    never trusted."""
    mentions: dict[str, frozenset[str]] = getattr(system, "mentions", {})
    watched = _watched(system, linking=True)
    forcers: frozenset[str] = getattr(system, "forcing", frozenset())
    chosen: set[str] = set(forcers) if forcing else set()
    reach = set(tools)
    changed = True
    while changed:
        changed = False
        for name, mentioned in mentions.items():
            if name not in chosen and mentioned & reach:
                chosen.add(name)
                changed = True
        for name in list(chosen):
            new = watched.get(name, set()) - reach
            if new:
                reach |= new
                changed = True
    return frozenset(chosen)
