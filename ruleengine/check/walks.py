"""Seeded random walks over a system's reachable states, each state decided by the runtime's
reasoner: a cheap way to show requirements live where the breadth-first probe stopped short.

A requirement is live where its records change a reachable state's pass; most live ones are
live at many states, deep ones too, which a walk reaches without every state before them.
At 200 tools and 400 random conditionals the probe's few thousand breadth-first states show
76 live; 2,000 states of walks, under two seconds, show 58 of the 194 that the rest of the
analysis had left open (each of those otherwise costs a diagram of its own, or a question to
Z3). A walk proves nothing when it shows nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Set
from dataclasses import dataclass, field

from ruleengine.check.explicit import asking_of, decide, live_at
from ruleengine.check.system import Event, System
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Pass
from ruleengine.state import STATUSES

__all__ = ["ROUND_STATES", "WALK_STEPS", "Walked", "live_on_walks"]

WALK_STEPS = 60
"""States a walk decides at most, the initial state first (so at most one call fewer); it
ends sooner where no tool is allowed."""

ROUND_STATES = 500
"""States decided per round: the walks go on while each round shows a requirement live."""


@dataclass
class Walked:
    """What ``live_on_walks`` found: per requirement shown live, the history to the first
    state where it is; per tool allowed at a state it visited (``final_answer`` aside),
    the history to the first such state; and how many states it decided."""

    live: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    allowed: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    states: int = 0


def live_on_walks(
    system: System,
    wanted: Set[str],
    stop: Callable[[], bool],
    *,
    seed: int = 0,
    steps: int = WALK_STEPS,
    round_states: int = ROUND_STATES,
) -> Walked:
    """Which requirements of ``wanted`` (names) are live at a state of random walks from
    the system's initial state, each with the history that reaches it. At each state the
    walk takes one valuation of the opaque checks (one set of records the state may emit),
    and a step calls a tool allowed there (``final_answer`` aside: it ends a run) with a
    status, all three drawn from ``random.Random(seed)``: every state a walk visits is
    reachable, and each requirement found is live (its records change the decision under
    that valuation, or it asks permission for a tool the pass allows: ``explicit.live_at``).

    Walks go on in rounds of ``round_states`` decided states while a round shows at least
    one more requirement live, until every one is found, or ``stop()`` (asked before each
    state) says to end: what was found by then is returned. Deterministic for a seed and
    the same ``stop`` answers. Cost: per state, one decision and ``live_at``'s decisions for
    the wanted requirements with records there (one valuation: with four cycle guards at
    20 tools, every one of them took ten times as long for the same requirements). The
    tools allowed at the states visited come with it (``Walked.allowed``)."""
    if steps < 1 or round_states < 1:
        raise ValueError(f"steps and round_states must be positive, not {steps}, {round_states}")
    found = Walked()
    left = set(wanted)
    if not left:
        return found
    rng = random.Random(seed)
    asking = asking_of(system)
    shown_in_round, states_in_round = 0, 0
    while left:
        state, history = system.initial, list[Event]()
        for _ in range(steps):
            if stop():
                return found
            found.states += 1
            states_in_round += 1
            callable_: set[str] = set()
            records = system.drawn(state, rng.choice)  # one valuation of the opaque checks
            outcome = decide(system, records)
            for name in sorted(live_at(system, records, outcome, left, asking)):
                found.live[name] = tuple(history)
                left.discard(name)
                shown_in_round += 1
            if isinstance(outcome, Pass):
                callable_.update(t for t in outcome.allowed if t != FINAL_ANSWER)
            for tool in sorted(callable_ - found.allowed.keys()):
                found.allowed[tool] = tuple(history)
            if not callable_ or not left:
                break
            event = (rng.choice(sorted(callable_)), rng.choice(STATUSES))
            history.append(event)
            state = system.successor(state, event)
        if states_in_round >= round_states:
            if not shown_in_round:
                return found
            shown_in_round, states_in_round = 0, 0
    return found
