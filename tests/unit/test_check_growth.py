"""Core searches that grow their pool from counterexamples (``requirement_core``'s ``grown``).

When no small guess holds, a core search for a "never" finding starts from nothing and, while
the pool's subsystem shows a history refuting the finding (the first one a breadth-first
search finds: ``Analysis.firsts``), adds the requirement that stops that history on the whole
policy (``_blocker``). The questions then stay about systems as small as the core; the core
is the same as the search without growth finds wherever the core is unique.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine import CycleGuard
from ruleengine.check import check, counterexamples, properties
from ruleengine.check.analysis import Analysis
from ruleengine.check.bounds import Remembered
from ruleengine.check.counterexamples import directed
from ruleengine.check.explicit import analyse, reaches
from ruleengine.check.properties import CoreCache, requirement_core
from ruleengine.check.system import System

CHAIN = ["a", "b", "c", "d"]


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check here runs its lanes in this process: the spies below count calls made
    here, and a lane that ran in a forked child would be missed (when it does depends on
    the machine's load)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")


def _chain(extra: int = 0) -> list[Any]:
    """`a` is never allowed, and `d` comes only after `c`, after `b`, after `a`: `d` is dead,
    and its one minimal core is the whole chain. ``extra`` caps on `x` change nothing."""
    reqs: list[Any] = [C("a", max_invocations=0, name="no-a")]
    reqs += [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(CHAIN)
    ]
    reqs += [C("x", max_invocations=i + 1, name=f"cap-x-{i:02}") for i in range(extra)]
    return reqs


def _explicit(sub: Any, focus: str | None = None) -> Analysis:
    return analyse(sub, live=focus[5:] if focus and focus.startswith("live:") else True)


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every subsystem a core search asks about (through ``_holds``)."""
    sizes: list[int] = []
    real = properties._holds

    def counted(sub: Any, names: frozenset[str], *args: Any) -> Any:
        sizes.append(len(names))
        return real(sub, names, *args)

    monkeypatch.setattr(properties, "_holds", counted)
    return sizes


# -- first histories of the explicit search ---------------------------------------------------


def test_the_explicit_search_keeps_a_shortest_history_to_each_first() -> None:
    system = System([*CHAIN, "x"], [*_chain()[1:], C("final_answer", only_after=["c"])])
    found = analyse(system)
    assert found.complete
    assert found.firsts["tool:d"] == (("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert found.firsts["tool:a"] == ()
    assert found.firsts["finish"] == (("a", "ok"), ("b", "ok"), ("c", "ok"))
    for key, trace in found.firsts.items():
        kind, _, subject = key.partition(":")
        if kind == "tool":
            assert reaches(system, trace, subject), key
        elif kind == "live":
            assert properties._shows(system, trace, key), key
    # Liveness: `c-after-b` changes the pass at the start (it keeps `c` back).
    assert found.firsts["live:c-after-b"] == ()


def test_a_search_until_a_first_stops_there_incomplete() -> None:
    system = System([*CHAIN, "x"], _chain(extra=2)[1:])
    found = analyse(system, live=False, until="tool:c")
    assert not found.complete and found.reason is not None
    assert "`tool:c` was found" in found.reason
    assert found.firsts["tool:c"] == (("a", "ok"), ("b", "ok"))
    assert "tool:d" not in found.firsts
    assert found.states < analyse(system, live=False).states
    # A first that never comes: the search runs to the end, complete.
    dead = System([*CHAIN, "x"], _chain())
    whole = analyse(dead, live=False, until="tool:d")
    assert whole.complete and "tool:d" not in whole.firsts


# -- growing a pool ------------------------------------------------------------------------------


def test_a_pool_grown_from_counterexamples_asks_only_about_small_systems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system = System([*CHAIN, "x"], _chain(extra=20))
    sizes = _asked(monkeypatch)
    grown = requirement_core(system, lambda a: "d" not in a.allowed_tools, _explicit, "tool:d")
    assert {r.name for r in grown} == {"no-a", "b-after-a", "c-after-b", "d-after-c"}
    assert max(sizes) <= 4  # the core's size: never a system with the caps on `x`
    sizes.clear()
    monkeypatch.setattr(properties, "_guided", lambda system, focus: False)
    plain = requirement_core(system, lambda a: "d" not in a.allowed_tools, _explicit, "tool:d")
    assert plain == grown
    assert max(sizes) > 4  # without growth, QuickXplain starts from all 24


def test_growth_finds_a_dead_requirements_core() -> None:
    # `cap-d` never changes a pass because `d` is dead: its core is the chain, and itself.
    reqs = [*_chain(extra=6), C("d", max_invocations=1, name="cap-d")]
    system = System([*CHAIN, "x"], reqs)
    core = requirement_core(
        system, lambda a: "cap-d" not in a.live, _explicit, "live:cap-d", keep=("cap-d",)
    )
    assert {r.name for r in core} == {"no-a", "b-after-a", "c-after-b", "d-after-c", "cap-d"}


def test_growth_and_guesses_give_the_same_report_on_both_engines() -> None:
    tools = [*CHAIN, "x", "y"]
    reqs = [*_chain(extra=4), CycleGuard(max_total_occurrences=3, window_size=4)]
    reqs.append(C("y", only_after=["d"], name="y-after-d"))
    explicit = check(tools, reqs, engine="explicit").model_dump(mode="json")
    symbolic = check(tools, reqs, engine="symbolic").model_dump(mode="json")
    assert explicit | {"stats": None} == symbolic | {"stats": None}
    dead = {f["tool"]: {c["requirement"] for c in f["core"]} for f in explicit["findings"]}
    assert dead["d"] == {"no-a", "b-after-a", "c-after-b", "d-after-c"}
    assert dead["y"] == dead["d"] | {"y-after-d"}


def test_growth_stops_at_the_deadline_and_the_core_stays_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system = System([*CHAIN, "x"], _chain(extra=8))
    blockers: list[str | None] = []
    real = properties._blocker

    def counted(*args: Any) -> str | None:
        found = real(*args)
        blockers.append(found)
        return found

    monkeypatch.setattr(properties, "_blocker", counted)
    cut: list[str] = []
    late = CoreCache(deadline=time.monotonic() - 1, cut=cut)
    asked: list[str | None] = []

    def engine(sub: Any, focus: str | None = None) -> Any:
        asked.append(focus)
        return _explicit(sub, focus)

    core = requirement_core(
        system, lambda a: "d" not in a.allowed_tools, engine, "tool:d", cache=late
    )
    # Past the deadline nothing more is asked (the time limit is kept however many questions
    # remain): every requirement stays, so the core is right (the finding holds with them
    # all), not minimal, and the cut is recorded for the report.
    assert {r.name for r in core} == {r.name for r in system.requirements}
    assert blockers == [] and asked == [] and len(late) == 0
    assert cut == [properties.LATE]


def test_growth_gives_up_where_many_opaque_checks_multiply_the_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Five requirements with an opaque check each: 32 sets of records per state, past
    # GROW_VARIANTS, so the growth does not walk them; the core search finds the core anyway.
    checks = [C("x", custom_checks=[lambda state: True], name=f"opaque-{i}") for i in range(5)]
    system = System([*CHAIN, "x"], [*_chain(), *checks])
    assert properties._variants(system, system.initial) is None
    found: list[str | None] = []
    real = properties._blocker

    def counted(*args: Any) -> str | None:
        found.append(real(*args))
        return found[-1]

    monkeypatch.setattr(properties, "_blocker", counted)
    core = requirement_core(system, lambda a: "d" not in a.allowed_tools, _explicit, "tool:d")
    assert {r.name for r in core} == {"no-a", "b-after-a", "c-after-b", "d-after-c"}
    assert found == [None]  # asked once, and it gave up
    few = System([*CHAIN, "x"], [*_chain(), *checks[:2]])
    variants = properties._variants(few, few.initial)
    assert variants is not None and len(variants) == 4


def test_growth_goes_on_once_the_engine_finds_the_pool_refuted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The growth's short search sees the first state only: each pool's question goes to
    # the engine, and when it says "refuted", a longer search finds the history to follow,
    # instead of the growth giving up (and asking about the policy's large systems, which
    # at 50 tools may cost more than the policy). The engine's own history is not used:
    # the core must not depend on which engine answered. (No directed search either: see
    # the next test.)
    monkeypatch.setattr(properties, "QUICK_STATES", 1)
    monkeypatch.setattr(properties, "_shown_directed", lambda sub, focus, cache: None)
    system = System([*CHAIN, "x"], _chain(extra=20))
    engined: list[str | None] = []

    def engine(example: bool) -> Any:
        def run(sub: Any, focus: str | None = None) -> Analysis:
            engined.append(focus)
            found = _explicit(sub, focus)
            if example and focus in found.firsts:  # a refuting history, not the first one
                found.example = (("x", "ok"), *found.firsts[focus])
            return found

        return run

    cores = []
    for example in (False, True):
        sizes = _asked(monkeypatch)
        core = requirement_core(
            system, lambda a: "d" not in a.allowed_tools, engine(example), "tool:d"
        )
        assert {r.name for r in core} == {"no-a", "b-after-a", "c-after-b", "d-after-c"}
        assert max(sizes) <= 4
        cores.append(core)
    assert engined  # the first searches found nothing: the engine answered
    assert cores[0] == cores[1]
    # With no longer search either, the growth gives up, and larger systems are asked.
    monkeypatch.setattr(properties, "REFUTE_STATES", 1)
    sizes = _asked(monkeypatch)
    core = requirement_core(system, lambda a: "d" not in a.allowed_tools, engine(False), "tool:d")
    assert core == cores[0]
    assert max(sizes) > 4


def _blind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither breadth-first search of a core search sees past the first state: as at 50
    tools, where none reaches a history as deep as a refutation needs."""
    monkeypatch.setattr(properties, "QUICK_STATES", 1)
    monkeypatch.setattr(properties, "REFUTE_STATES", 1)


def _directed_or_not(
    monkeypatch: pytest.MonkeyPatch, core: Callable[[], set[str]]
) -> tuple[set[str], int, int]:
    """``core()`` (the same with the searches directed at the goal and without them), and
    the largest system the core search asked about with them, then without them."""
    sizes = _asked(monkeypatch)
    found = core()
    directed_most = max(sizes)
    monkeypatch.setattr(properties, "_shown_directed", lambda sub, focus, cache: None)
    sizes.clear()
    assert core() == found
    return found, directed_most, max(sizes)


def test_a_dead_tools_core_grows_from_the_histories_a_directed_search_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A search directed at the tool (`seek`) finds each pool's history to `d`, without the
    # engine. Only the last pool, where `d` is dead, goes to the engine. Without it, the
    # growth gives up, and QuickXplain asks about larger systems.
    _blind(monkeypatch)
    system = System([*CHAIN, "x"], _chain(extra=20))
    engined: list[int] = []

    def engine(sub: Any, focus: str | None = None) -> Analysis:
        engined.append(len(sub.requirements))
        return _explicit(sub, focus)

    def core() -> set[str]:
        found = requirement_core(system, lambda a: "d" not in a.allowed_tools, engine, "tool:d")
        return {r.name for r in found}

    found, directed_most, blind_most = _directed_or_not(monkeypatch, core)
    assert found == {"no-a", "b-after-a", "c-after-b", "d-after-c"}
    assert directed_most <= 4 < blind_most
    assert engined and min(engined) <= 4


def test_a_dead_requirements_core_grows_from_the_histories_a_directed_search_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `cap-d` is dead because `d` is. A search without `cap-d` directed at `d`, then calls
    # of `d`, shows `cap-d` live on each pool (at the second call), and the growth follows.
    _blind(monkeypatch)
    system = System([*CHAIN, "x"], [*_chain(extra=20), C("d", max_invocations=1, name="cap-d")])

    def core() -> set[str]:
        found = requirement_core(
            system, lambda a: "cap-d" not in a.live, _explicit, "live:cap-d", keep=("cap-d",)
        )
        return {r.name for r in found}

    found, directed_most, blind_most = _directed_or_not(monkeypatch, core)
    assert found == {"no-a", "b-after-a", "c-after-b", "d-after-c", "cap-d"}
    assert directed_most <= 5 < blind_most


def test_a_directed_search_shows_a_requirement_live_only_where_it_is() -> None:
    # The history found without the requirement is cut where it is first live (on the
    # system with it), and replays there; a requirement live nowhere gets none.
    system = System(["a", "b", "x"], [C("b", only_after=["a"], name="b-after-a")])
    found = directed(system, "live:b-after-a", Remembered(system.tools), limit=64, deadline=None)
    assert found == ()  # `b` is kept back at the start
    assert properties._shows(system, found, "live:b-after-a")
    capped = System(["a", "x"], [C("a", max_invocations=2, name="cap-a")])
    found = directed(capped, "live:cap-a", Remembered(capped.tools), limit=64, deadline=None)
    assert found == (("a", "ok"), ("a", "ok"))  # live at the third call, not before
    assert properties._shows(capped, found, "live:cap-a")
    assert not properties._shows(capped, found[:1], "live:cap-a")
    # `no-b` denies `b` everywhere: `b-after-a` never changes a pass.
    dead = System(
        ["a", "b"],
        [C("b", max_invocations=0, name="no-b"), C("b", only_after=["a"], name="b-after-a")],
    )
    assert directed(dead, "live:b-after-a", Remembered(dead.tools), limit=64, deadline=None) is None
    stop = System(["a", "b"], [C("a", min_invocations=1, name="a-once")])
    found = directed(stop, "live:a-once", Remembered(stop.tools), limit=64, deadline=None)
    assert found == ()  # the others let the run stop at once; `a-once` keeps it going


def test_a_directed_search_shows_counts_past_its_first_calls() -> None:
    # A cap of 6 calls of any status, where the others cap successes at 2: live only
    # after 6 failing calls, past what a few successful ones show.
    system = System(
        ["a", "x"],
        [
            C("a", max_invocations=6, only_success_invocations=False, name="cap-a"),
            C("a", max_invocations=2, name="two-successes"),
        ],
    )
    found = directed(system, "live:cap-a", Remembered(system.tools), limit=64, deadline=None)
    assert found == (("a", "error"),) * 6
    assert properties._shows(system, found, "live:cap-a")
    # "`a` at least 3 times" where the others need `a` once: the run that never calls `a`
    # does not stop; one that calls it once, with `a` capped at 2 calls, does.
    least = System(
        ["a", "x"],
        [C("a", min_invocations=3, name="a-thrice"), C("a", min_invocations=1, name="a-once")],
    )
    found = directed(least, "live:a-thrice", Remembered(least.tools), limit=64, deadline=None)
    assert found is not None and 1 <= found.count(("a", "ok")) <= 2
    assert properties._shows(least, found, "live:a-thrice")


def test_a_directed_search_seeks_each_goal_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # `a-once` keeps the run from stopping until `a`; `never-stop` keeps it from stopping
    # at all, so `a-once` is dead. Its goals: `a`, which it mentions, and the stop; each is
    # sought once, and neither shows it live.
    goals: list[str] = []
    real = counterexamples.seek

    def seek(system: Any, goal: str, *args: Any, **kwargs: Any) -> Any:
        goals.append(goal)
        return real(system, goal, *args, **kwargs)

    monkeypatch.setattr(counterexamples, "seek", seek)
    reqs = [
        C("a", min_invocations=1, name="a-once"),
        C("final_answer", max_invocations=0, name="never-stop"),
    ]
    system = System(["a", "b"], reqs)
    assert (
        directed(system, "live:a-once", Remembered(system.tools), limit=64, deadline=None) is None
    )
    assert sorted(goals) == ["a", "final_answer"]


def test_a_budget_core_grows_from_the_histories_a_directed_search_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # At 50 tools no breadth-first search reaches a history as long as the budget: here
    # the short and the longer searches see the first state only. A budget question's
    # directed search (`seek`) finds one on each pool, without the engine; the growth
    # follows it, and every question stays about a system no larger than the core. Without
    # it, the growth gives up, and QuickXplain asks about all 25 requirements.
    _blind(monkeypatch)
    links = ["b", "c", "d", "e"]
    reqs: list[Any] = [C("final_answer", only_after=["e"], name="finish-after-e")]
    reqs += [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(["a", *links])
    ]
    reqs += [C("x", max_invocations=i + 1, name=f"cap-x-{i:02}") for i in range(20)]
    system = System(["a", *links, "x"], reqs)

    def fails(a: Analysis) -> bool:  # no stop within 3 steps
        return a.finish_depth is None or a.finish_depth > 3

    engined: list[str | None] = []

    def engine(sub: Any, focus: str | None = None) -> Analysis:
        engined.append(focus)
        return _explicit(sub, focus)

    def core() -> set[str]:
        return {r.name for r in requirement_core(system, fails, engine, "finish:3")}

    core()
    assert not engined  # every question answered by the bounds and the directed searches
    found, directed_most, blind_most = _directed_or_not(monkeypatch, core)
    # b, c, d and e before the stop: 4 steps. `b-after-a` is not needed (without it, still
    # 4), and with it alone the chain from `final_answer` is too short.
    assert found == {"finish-after-e", "e-after-d", "d-after-c", "c-after-b"}
    assert directed_most <= 4 < blind_most


def test_both_engines_give_one_report_when_they_answer_every_core_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by `test_the_engines_agree_when_they_answer_every_core_question` (property
    # laws): a growth that followed the engine's own history (the symbolic engine has one at
    # hand, the explicit one none) gave the two engines different cores here.
    monkeypatch.setattr(properties, "QUICK_STATES", 1)
    plain = {
        "force_prevent_stop": False,
        "only_success_invocations": False,
        "consecutive_allowed": False,
    }
    reqs = [
        C("a", min_invocations=1, name="r0", **plain),
        C("a", min_invocations=1, custom_checks=[lambda state: True], name="r1", **plain),
        C("final_answer", only_before=["a"], name="r2", **plain),
    ]
    explicit = check(["a"], reqs, max_iterations=2, engine="explicit").model_dump(mode="json")
    symbolic = check(["a"], reqs, max_iterations=2, engine="symbolic").model_dump(mode="json")
    assert explicit["findings"]
    assert explicit | {"stats": None} == symbolic | {"stats": None}


def _no_engine(sub: Any, focus: str | None = None) -> Analysis:
    raise AssertionError(f"no engine question here ({focus})")


def test_a_budget_core_asks_no_engine_where_bounds_and_histories_answer() -> None:
    # Four tools every finish calls, against a budget of 3 steps: the budget holds, and on
    # each smaller policy either the tools every finish calls still number more than 3, or a
    # directed search finds a history of at most 3 steps. Six counters make each subsystem
    # too large for the short breadth-first search (729 states and more), so without those
    # two answers the engine would be asked.
    tools = [f"t{i}" for i in range(10)]
    requirements = [
        *(C(f"t{i}", min_invocations=1, name=f"need-t{i}") for i in range(4)),
        *(C(f"t{i}", max_invocations=2, name=f"cap-t{i}") for i in range(4, 10)),
        C("t1", only_after=["t0"], name="t1-after-t0"),
    ]
    system = System(tools, requirements)

    def holds(a: Analysis) -> bool:
        return a.finish_depth is None or a.finish_depth > 3

    core = requirement_core(system, holds, _no_engine, "finish:3")
    assert sorted(r.name for r in core) == ["need-t0", "need-t1", "need-t2", "need-t3"]
    exact = analyse(system.subsystem([r.name for r in core]), live=False)
    assert exact.finish_depth == 4


def test_cores_found_before_are_taken_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    # A check whose verdicts one by one ran out of time while seeking the rest of their
    # cores sent those of the first phase; the report keeps them and asks nothing about
    # them again.
    monkeypatch.setenv("RULEENGINE_LANES", "1")
    requirements = [
        C("a", min_invocations=1, name="need-a"),
        C("b", only_after=["c"], name="b-after-c"),
        C("c", only_after=["b"], name="c-after-b"),
        C("d", max_invocations=1, name="cap-d"),
    ]
    system = System(["a", "b", "c", "d"], requirements)
    analysis = analyse(system)
    sent: list[list[Any]] = []
    first = properties.findings(
        system, analysis, max_iterations=20, engine=_explicit, reported=sent.append
    )
    # Once per finding as it is found, each time with those before it.
    assert [len(found) for found in sent] == list(range(1, len(sent) + 1))

    def subject(f: Any) -> tuple[str, str, str]:
        return f.id, f.tool or "", f.requirement or ""

    wanted = [f for f in first if f.id in ("dead-tool", "dead-requirement")]
    assert sorted(sent[-1], key=subject) == sorted(wanted, key=subject)
    ((tool_finding,),) = [[f for f in sent[-1] if f.id == "dead-tool" and f.tool == "b"]]
    assert {c.requirement for c in tool_finding.core} == {"b-after-c", "c-after-b"}

    # The same findings again, with no core search for what was sent.
    def searched(*args: object, **kwargs: object) -> None:
        raise AssertionError("a core search for a finding that was sent")

    monkeypatch.setattr(properties, "_dead_tool", searched)
    again = properties.findings(
        system, analysis, max_iterations=20, engine=_explicit, known=sent[-1]
    )
    assert [f for f in again if f.id == "dead-tool"] == [f for f in first if f.id == "dead-tool"]


@pytest.mark.parametrize("longer", [True, False])
def test_a_budget_question_the_first_search_misses_goes_to_a_longer_one(
    monkeypatch: pytest.MonkeyPatch, longer: bool
) -> None:
    # Nine tools every finish calls, against a budget of 8 steps, among twelve: without one
    # of them, a history of 8 steps lets the run stop, deeper than the short breadth-first
    # search reaches. Where the first directed search sees next to nothing, the longer one
    # after the bounds finds those histories; where that one does not either, the engine
    # is asked.
    monkeypatch.setattr(properties, "SEEK_STATES", 1)
    if not longer:
        monkeypatch.setattr(properties, "BUDGET_STATES", 1)
    tools = [f"t{i}" for i in range(12)]
    requirements = [C(f"t{i}", min_invocations=1, name=f"need-t{i}") for i in range(9)]
    system = System(tools, requirements)

    def holds(a: Analysis) -> bool:
        return a.finish_depth is None or a.finish_depth > 8

    if not longer:
        with pytest.raises(AssertionError, match="no engine question"):
            requirement_core(system, holds, _no_engine, "finish:8")
        return
    core = requirement_core(system, holds, _no_engine, "finish:8")
    assert sorted(r.name for r in core) == sorted(r.name for r in requirements)


def test_a_likely_guess_is_asked_before_the_pool_is_grown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "`x` at least twice" is dead: the others never let the run stop (`p` is needed twice,
    # but the first call brings `s`, then `d`, after which `p` is denied). A guess of that
    # chain, padded past the small guesses' size with demands that change nothing.
    fillers = [f"f{i}" for i in range(properties.SMALL_GUESS)]
    chain = [
        C("p", only_before=["d"], name="p-before-d"),
        C("s", force_after=["p"], name="s-after-p"),
        C("d", force_after=["s"], name="d-after-s"),
        C("p", min_invocations=2, name="need-p"),
    ]
    reqs = [*chain, C("x", min_invocations=2, name="need-x")]
    reqs += [C(f, min_invocations=1, name=f"need-{f}") for f in fillers]
    system = System(["p", "d", "s", "x", *fillers], reqs)
    guess = frozenset(r.name for r in reqs[: len(chain) + 1 + properties.SMALL_GUESS // 2])
    assert properties.SMALL_GUESS < len(guess) <= properties.LIKELY_GUESS
    blockers: list[object] = []
    blocker = properties._blocker

    def counted(*args: Any) -> Any:
        blockers.append(args)
        return blocker(*args)

    monkeypatch.setattr(properties, "_blocker", counted)

    def core(**guesses: Any) -> set[str]:
        found = requirement_core(
            system,
            lambda a: "need-x" not in a.live,
            _explicit,
            "live:need-x",
            keep=("need-x",),
            **guesses,
        )
        return {r.name for r in found}

    assert core(likely=[guess]) == {r.name for r in chain} | {"need-x"}
    assert blockers == []  # the guess held: no pool grown
    # The same guess among the others: asked only once a pool is grown, the same core.
    assert core(hints=[guess]) == {r.name for r in chain} | {"need-x"}
    assert blockers
