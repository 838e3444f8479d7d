"""Laws of the bounds the soft forces give (``landmarks.extra_calls``) and of the tools every
finishing history calls successfully (``Relaxed.needed_ok``), against the explicit engine:
the needed tools (with those soft forces add, ``followed``) and the extra calls
(``landmarks.least_steps``) never add up to more steps than the shortest history to a state
where the run may stop takes.

Besides the shared random policies, a generator of its own: random conditionals over a few
tools, most of them soft forces after random triggers (with random priorities, counting
modes and consecutive calls), the rest orders and counts on random targets, so that forces
set off and drop one another, as on the benchmark's wide policies."""

from __future__ import annotations

import random
from unittest import mock

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from policy_strategies import PolicyCase, UserParams, drawn_conditional, policies
from stopping import assert_never_stops

from benchmarks._policies import conditionals
from ruleengine.check import landmarks
from ruleengine.check.explicit import analyse
from ruleengine.check.landmarks import least_steps
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import Requirement
from ruleengine.state import STATUSES

MAX_STATES = 3000
"""States of the explicit search; a case it does not finish is skipped."""

TOOLS = ("a", "b", "c", "d", "e")

KINDS = (
    ["force_after"] * 3 + ["only_after", "only_before", "max_invocations"] + ["min_invocations"] * 2
)
"""The kinds of conditional drawn, weighted by repetition."""

FORCING_EXAMPLES = 500
"""Examples of the forcing generator (small policies, milliseconds each): its shapes are
where a bound that forgot a way to drop a force would show."""


@st.composite
def forcing(draw: st.DrawFn) -> tuple[tuple[str, ...], list[Requirement]]:
    """A few tools and random conditionals over them, most of them soft forces; sometimes
    a user requirement that denies by a formula (a force it makes drop is not a literal
    denial) or hard-forces."""
    tools = TOOLS[: draw(st.integers(2, 5))]
    out: list[Requirement] = []
    if draw(st.integers(0, 2)) == 0:
        tool, other = draw(st.permutations(tools))[:2]
        kind = draw(st.sampled_from(["exclusive", "guard", "force", "deny"]))
        limit = draw(st.integers(0, 2))
        out.append(UserParams(tool, other, limit, kind).build("user"))
    for i in range(draw(st.integers(1, 7))):
        out.append(drawn_conditional(draw, tools, KINDS, f"r{i}"))
    return tools, out


def _system(case: PolicyCase) -> System:
    note(case.source())
    assume(case.mode == "strict")
    return System(list(case.tools), case.requirements())


def _fewest_steps(system: System) -> int:
    """The exact fewest steps before ``final_answer`` is allowed (skips what it cannot tell)."""
    analysis = analyse(system, max_states=MAX_STATES, live=False)
    assume(analysis.complete and analysis.finish_depth is not None)
    assert analysis.finish_depth is not None
    return analysis.finish_depth


def _bound(system: System) -> int:
    """The needed tools (with those soft forces add, ``followed``) and the extra calls."""
    return least_steps(system)[0]


@given(policies(priority=False, max_requirements=6))
def test_needed_tools_and_forced_calls_never_exceed_the_fewest_steps(case: PolicyCase) -> None:
    system = _system(case)
    assert _bound(system) <= _fewest_steps(system)


def _drawn(drawn: tuple[tuple[str, ...], list[Requirement]]) -> System:
    """The system of a drawn forcing policy, its requirements noted for a failing example."""
    tools, requirements = drawn
    note(repr(requirements))
    return System(list(tools), requirements)


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing())
def test_the_bound_holds_where_soft_forces_set_off_and_drop_one_another(
    drawn: tuple[tuple[str, ...], list[Requirement]],
) -> None:
    system = _drawn(drawn)
    assert _bound(system) <= _fewest_steps(system)


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing(), st.integers(0, 2))
def test_the_bound_holds_where_a_group_tracks_fewer_needed_tools_than_it_tells_apart(
    drawn: tuple[tuple[str, ...], list[Requirement]], tracked: int
) -> None:
    # A group tracks at most `NEEDED_BITS` of the needed tools (8): its goal does not wait
    # for the others, and their calls must not count. Here it tracks 0 to 2, so that the
    # small policies have needed tools past the limit.
    system = _drawn(drawn)
    with mock.patch.object(landmarks, "NEEDED_BITS", tracked):
        bound = _bound(system)
    assert bound <= _fewest_steps(system)


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing())
def test_a_bound_asked_only_to_exceed_a_number_exceeds_it_exactly_when_the_bound_does(
    drawn: tuple[tuple[str, ...], list[Requirement]],
) -> None:
    system = _drawn(drawn)
    whole, needed = least_steps(system)
    for beyond in range(-1, whole + 1):
        asked, same = least_steps(system, beyond=beyond)
        assert same == needed
        assert (asked > beyond) == (whole > beyond), (beyond, asked, whole)
        assert asked <= whole  # stopped early, it is a bound all the same


@given(st.one_of(policies(priority=False, max_requirements=6), forcing()))
def test_no_run_stops_without_a_successful_call_of_a_tool_needed_so(
    drawn: PolicyCase | tuple[tuple[str, ...], list[Requirement]],
) -> None:
    # Explored with that tool's calls failing or denied only, no reachable state lets the
    # run stop.
    if isinstance(drawn, PolicyCase):
        system = _system(drawn)
    else:
        note(repr(drawn[1]))
        system = System(list(drawn[0]), drawn[1])
    relaxed = Relaxed(system.components, system.tools)
    needed_ok = relaxed.needed_ok()
    assert needed_ok <= relaxed.needed()
    for tool in sorted(needed_ok):
        assert_never_stops(
            system, lambda t, status, tool=tool: t == tool and status == "ok", MAX_STATES, tool
        )


def _searches(system: System) -> list[tuple[landmarks._Group, landmarks._Group]]:
    """Per group of ``system``'s soft forces, its search twice: as ``extra_calls`` makes it,
    and one that remembers no step and takes every status's call as a step of its own."""
    facts = [landmarks._facts(c, system.tools) for c in system.components]
    relaxed = Relaxed(system.components, system.tools)
    needed, needed_ok = relaxed.needed(), relaxed.needed_ok()
    unlocks = landmarks._unlocks(system.components, facts, system.tools)
    out = []
    for group in landmarks._groups(system.components, facts, needed):
        for fine in (False, True):
            search, plain = (
                landmarks._Group(system, facts, group, needed, needed_ok, unlocks, fine)
                for _ in range(2)
            )
            plain.alike = [tuple(range(len(STATUSES)))] * len(plain.steps)
            plain._remembered = landmarks.REMEMBERED_STEPS  # full: it keeps no more
            out.append((search, plain))
    return out


SEARCH_STATES = 300
"""States of a group's search whose steps are compared, at most."""


def _assert_steps_alike(system: System) -> None:
    """From every state of each group's search (whatever the needed tools called, up to
    ``SEARCH_STATES``), the steps it takes, asked twice (the second time remembered), lead
    to the same states with the same needed bits as those of a search that remembers
    nothing and takes each status's call as a step of its own."""
    for search, plain in _searches(system):
        start = (search.start_views, search.start_pending, search.start_sure, frozenset())
        order, seen = [start], {start}
        for key in order:
            if len(seen) >= SEARCH_STATES:
                break
            expected = set(plain._successors(*key))
            for _ in range(2):
                assert set(search._successors(*key)) == expected, key
            for _, _, moved, after, surely, held in sorted(expected, key=repr):
                if (moved, after, surely, held) not in seen:
                    seen.add((moved, after, surely, held))
                    order.append((moved, after, surely, held))
        assert not plain._steps_from


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing())
def test_a_group_steps_alike_whether_it_remembers_and_merges_statuses_or_not(
    drawn: tuple[tuple[str, ...], list[Requirement]],
) -> None:
    # Merging statuses drops only steps that lead to the same state, and a remembered
    # state's steps are those it had.
    _assert_steps_alike(_drawn(drawn))


@settings(max_examples=FORCING_EXAMPLES)
@given(forcing(), st.randoms(use_true_random=False))
def test_a_group_remembers_its_steps_and_merges_statuses_without_changing_its_bound(
    drawn: tuple[tuple[str, ...], list[Requirement]], rng: random.Random
) -> None:
    # The same searches, one after another with costly tools drawn at random (as the
    # shrinking of the costly tools asks them), give the same fewest calls as a search that
    # remembers nothing and steps through every status.
    system = _drawn(drawn)
    for search, plain in _searches(system):
        apart = sorted(search.apart)
        for _ in range(4):
            costly = frozenset(t for t in apart if rng.random() < 0.6)
            expected = plain.least(costly)
            assert search.least(costly) == expected, sorted(costly)
        assert not plain._steps_from


@pytest.mark.parametrize("seed", range(4))
def test_a_group_steps_alike_on_wide_random_conditionals(seed: int) -> None:
    # Wider policies, where a group leaves forces outside it that a call sets off only when
    # it succeeds: a status merged with another must set off the same ones.
    policy = conditionals(16, 32, seed)
    _assert_steps_alike(System(list(policy.tools), list(policy.requirements)))
