"""The one-by-one analysis's liveness steps that need no finishing history
(``compositional._Decider._live_after``, ``_live_stuck``) decide only what holds.

On random policies made never to finish (a tool needed more often than another requirement
lets it be called) and with requirements that only keep the run from stopping, each step is
asked about every requirement still open after a probe of the first state alone, and each
verdict it decides is the explicit engine's: a requirement shown live is live, with an
example that replays to a state where it is; one shown dead is live nowhere; the no-finish
it gives with it (or ``_finish``, where no reachable state lets the run stop) is the
engine's, at the first step. The drawn policies make both steps
decide (over 300 cases, ``_live_stuck`` decided in about half, ``_live_after`` in a third),
where the analysis's other laws seldom reach them (they find finishing histories first,
or decide the requirements before: in 400 of their cases, ``_live_stuck`` decided none).
"""

from __future__ import annotations

import time

from hypothesis import assume, given, note
from hypothesis import strategies as st
from policy_strategies import policies

from ruleengine import ConditionalRequirement, Requirement
from ruleengine.check.compositional import _Decider
from ruleengine.check.explicit import _Explorer, analyse, decide, live_at, walk
from ruleengine.check.symbolic import Encoding, supports
from ruleengine.check.system import System

MAX_STATES = 3000
"""States the explicit engine may take to check a drawn policy whole (else skipped)."""


@st.composite
def never_finishing(draw: st.DrawFn) -> tuple[System, list[str]]:
    """A random strict policy, a tool of it needed more often than another requirement
    lets it be called (so the run never stops), and one to three requirements that only
    keep the run from stopping until a tool is called ("at least n times"): the system,
    and the names of the stop-only ones."""
    case = draw(policies(priority=False, opaque=False, max_tools=4, max_requirements=4))
    tools = list(case.tools)
    extra: list[Requirement] = []
    if draw(st.booleans()):
        blocked = draw(st.sampled_from(tools))
        cap = draw(st.integers(0, 2))
        extra += [
            ConditionalRequirement(blocked, max_invocations=cap, name="cap"),
            ConditionalRequirement(blocked, min_invocations=cap + 1, name="need"),
        ]
    waiting = []
    for k in range(draw(st.integers(1, 3))):
        name = f"wait{k}"
        target = draw(st.sampled_from(tools))
        extra.append(
            ConditionalRequirement(target, min_invocations=draw(st.integers(1, 2)), name=name)
        )
        waiting.append(name)
    system = System(tools, [*case.requirements(), *extra])
    note(f"tools={tools} requirements={[r.name for r in system.requirements]}")
    assume(supports(system) is None)
    return system, waiting


def _decider(system: System) -> _Decider:
    """The analysis of ``system`` with a probe of its first state alone, every requirement's
    liveness open, and the tools decided (``_live_after`` starts from their histories)."""
    explorer = _Explorer(system, 1, None, True)
    probe = explorer.run()
    decider = _Decider(system, Encoding(system), explorer, probe, 30, time.monotonic() + 600)
    decider._tools()
    decided = decider.result.decided
    assert decided is not None
    for name in sorted({c.requirement.name for c in system.components}):
        if f"live:{name}" not in decided:
            decider.open[f"live:{name}"] = decider.verdicts._live_at(name)
    return decider


def _live_where(system: System, name: str, example: tuple[object, ...]) -> bool:
    """Whether requirement ``name`` is live at the state ``example`` leads to."""
    state = walk(system, example)  # type: ignore[arg-type]
    assert state is not None, "the example does not replay"
    return any(
        name in live_at(system, records, decide(system, records), {name}, {})
        for records, _ in system.variants(state)
    )


@given(drawn=never_finishing())
def test_what_the_liveness_steps_decide_is_the_engines(drawn: tuple[System, list[str]]) -> None:
    system, _ = drawn
    exact = analyse(system, max_states=MAX_STATES)
    assume(exact.complete)
    decider = _decider(system)
    before = set(decider.open)
    decider._finish()  # where no reachable state lets the run stop: the no-finish at once
    decider._live_after()
    decider._live_stuck()
    result = decider.result
    assert result.decided is not None
    for key in before - set(decider.open):
        name = key[5:]
        assert key in result.decided
        if name in result.live:
            assert name in exact.live, f"{name} shown live, the engine finds it dead"
            assert _live_where(system, name, result.firsts[key])
        else:
            assert name not in exact.live, f"{name} shown dead, the engine finds it live"
    if "no-finish" in result.decided:
        assert result.no_finish == exact.no_finish
        assert "budget" in result.decided and exact.finish_depth is None
