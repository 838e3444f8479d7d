"""What makes requirement-level cores cheap, without changing them: histories that refuted a
core question are replayed on the next subsystem (``walk``, ``Analysis.example``), and a
dead requirement's first guess follows chains of dependencies (``_between``).

A replayed history only ever answers "the finding does not hold" when it truly does not
(every step allowed when taken, the counterexample at its end), so a core search with
replays asks the engine fewer questions and gets the same answers: the same report.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine import CycleGuard
from ruleengine.check import check, explicit, properties, symbolic
from ruleengine.check.explicit import decide, walk
from ruleengine.check.symbolic import Encoding, analyse_symbolic
from ruleengine.check.system import System
from ruleengine.passes import Pass

# -- walk ------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check here runs its lanes in this process: the spies below count calls made
    here, and a lane that ran in a forked child would be missed (when it does depends on
    the machine's load)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")


def test_walk_follows_allowed_steps_and_refuses_the_first_disallowed_one() -> None:
    system = System(["a", "b"], [C("b", only_after=["a"], name="b-after-a")])
    assert walk(system, []) == system.initial
    after_a = walk(system, [("a", "ok")])
    assert after_a is not None and after_a != system.initial
    assert walk(system, [("a", "ok"), ("b", "ok")]) is not None
    assert walk(system, [("b", "ok")]) is None  # `b` is not allowed before `a`
    assert walk(system, [("a", "error"), ("b", "ok")]) is None  # only a successful `a` counts
    assert walk(system, [("final_answer", "ok")]) is None  # it ends a run, it is no step


def test_walk_takes_a_step_that_some_check_value_allows() -> None:
    system = System(["a", "b"], [C("b", custom_checks=[lambda state: False], name="b-if")])
    assert walk(system, [("b", "ok")]) is not None  # allowed when the check passes


# -- examples from the symbolic engine -----------------------------------------------------


CHAIN = ["a", "b", "c", "d"]


def _chain_system(extra: list[Any] | None = None) -> System:
    reqs: list[Any] = [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(CHAIN)
    ]
    reqs.append(C("final_answer", only_after=["d"], name="answer-last"))
    return System([*CHAIN, "x"], reqs + (extra or []))


def _ends(system: System, trace: tuple[tuple[str, str], ...]) -> list[Pass]:
    state = walk(system, trace)
    assert state is not None, trace
    outcomes = [decide(system, records) for records, _ in system.variants(state)]
    return [o for o in outcomes if isinstance(o, Pass)]


def test_a_tool_found_allowed_early_comes_with_a_shortest_history_to_it() -> None:
    system = _chain_system()
    found = analyse_symbolic(system, focus="tool:d")
    assert found.partial and found.example is not None
    assert [t for t, _ in found.example] == ["a", "b", "c"]
    assert any("d" in p.allowed for p in _ends(system, found.example))


def test_a_finish_within_the_budget_comes_with_its_history() -> None:
    system = _chain_system()
    # The directed search finds a stop within the budget, and says how far it went.
    found = analyse_symbolic(system, focus="finish:10")
    assert found.finishes_within == 4 and found.example is not None
    assert len(found.example) == 4
    assert any(p.can_stop for p in _ends(system, found.example))
    # The breadth-first layers alone give the fewest steps, with their history.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(symbolic, "seek", lambda *args, **kwargs: None)
        patch.setattr(symbolic, "UNROLLED_SECONDS", 0)
        layered = analyse_symbolic(system, focus="finish:10")
    assert layered.finish_depth == 4 and layered.example is not None
    assert any(p.can_stop for p in _ends(system, layered.example))
    # Not within the budget: no finish, so nothing to show.
    short = analyse_symbolic(system, focus="finish:2")
    assert short.finish_depth is None and short.example is None


def test_a_live_requirement_found_early_comes_with_a_history_where_it_is_live() -> None:
    system = _chain_system([C("c", max_invocations=1, name="cap-c")])
    found = analyse_symbolic(system, focus="live:cap-c")
    assert found.partial and found.example is not None
    assert properties._shows(system, found.example, "live:cap-c")
    # A whole analysis (the requirement never live) gives no example.
    dead = _chain_system([C("c", max_invocations=1, name="cap-c"), C("a", max_invocations=0)])
    whole = analyse_symbolic(dead, focus="live:cap-c")
    assert not whole.partial and "cap-c" not in whole.live and whole.example is None


def test_shows_checks_the_focused_counterexample_on_the_subsystem_it_is_given() -> None:
    system = _chain_system([C("a", max_invocations=0, name="block-a")])
    trace = (("a", "ok"), ("b", "ok"), ("c", "ok"))
    assert properties._shows(system.subsystem(["b-after-a", "c-after-b"]), trace, "tool:d")
    two = trace[:2]  # `c` not run yet: `d` is not allowed at the end
    assert not properties._shows(system.subsystem(["d-after-c"]), two, "tool:d")
    assert properties._shows(system.subsystem(["c-after-b"]), two, "tool:d")
    assert not properties._shows(system, trace, "tool:d")  # `a` is blocked: the walk fails
    four = (*trace, ("d", "ok"))
    keep = ["b-after-a", "c-after-b", "d-after-c", "answer-last"]
    assert properties._shows(system.subsystem(keep), four, "finish:4")
    assert not properties._shows(system.subsystem(keep), four, "finish:3")  # too long
    assert not properties._shows(system.subsystem(keep), trace, "finish:9")  # `d` not run
    assert not properties._shows(system, (), "no-finish")  # no history refutes no-finish


# -- replays change no answer -----------------------------------------------------------------


def _engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    calls: list[str | None] = []
    run = symbolic._Symbolic.run

    def counted(self: Any) -> Any:
        calls.append(self.focus)
        return run(self)

    monkeypatch.setattr(symbolic._Symbolic, "run", counted)
    return calls


def report_of(tools: list[str], reqs: list[Any], **options: Any) -> dict[str, Any]:
    out = check(tools, reqs, engine="symbolic", **options).model_dump(mode="json")
    out.pop("stats")
    return out


def test_replayed_histories_save_engine_calls_and_change_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every core question goes to the engine (no short explicit search); `x` is dead only
    # through the whole chain, so the core search asks about many subsystems where it is
    # allowed a few steps in.
    monkeypatch.setattr(properties, "QUICK_STATES", 1)
    tools = [*CHAIN, "x", "y", "z"]
    reqs: list[Any] = [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(CHAIN)
    ]
    reqs += [C("x", only_after=["d"], name="x-after-d"), C("a", max_invocations=0, name="no-a")]
    reqs += [C(t, max_invocations=2, name=f"cap-{t}") for t in ("y", "z", "b")]
    calls = _engine_calls(monkeypatch)
    with_replays = report_of(tools, reqs)
    replayed = len(calls)
    monkeypatch.setattr(properties, "EXAMPLES", 0)
    calls.clear()
    without = report_of(tools, reqs)
    assert with_replays == without
    assert replayed < len(calls)
    dead_x = next(f for f in with_replays["findings"] if f["tool"] == "x")
    assert {e["requirement"] for e in dead_x["core"]} == {
        "no-a",
        "b-after-a",
        "c-after-b",
        "d-after-c",
        "x-after-d",
    }


# -- guesses along chains of dependencies ---------------------------------------------------


def test_a_dead_requirements_first_guess_is_the_chain_that_kills_it() -> None:
    # `c` only before `a` is never live: `a` needs x1, x1 needs x2, x2 needs `b`, and `c`
    # is given up once `b` ran. Fillers link other tools to the same ones.
    tools = ["a", "b", "c", "x1", "x2", "f1", "f2", "f3"]
    chain = [
        C("a", only_after=["x1"], name="a-after-x1"),
        C("x1", only_after=["x2"], name="x1-after-x2"),
        C("x2", only_after=["b"], name="x2-after-b"),
        C("c", only_before=["b"], name="c-before-b"),
    ]
    noise = [
        C("f1", only_after=["c"], name="f1-after-c"),
        C("f2", only_after=["a"], name="f2-after-a"),
        C("f3", only_before=["x1"], name="f3-before-x1"),
        C("c", max_invocations=3, name="cap-c"),
        CycleGuard(),
    ]
    dead = C("c", only_before=["a"], name="c-before-a")
    system = System(tools, [*chain, *noise, dead])
    guesses = properties._between(system, "c-before-a", properties._dependencies(system))
    assert guesses and guesses[0] == frozenset(r.name for r in chain)
    report = check(tools, [*chain, *noise, dead])
    finding = next(f for f in report.findings if f.requirement == "c-before-a")
    assert {e.requirement for e in finding.core} == {r.name for r in [*chain, dead]}


# -- guesses for a no-finish -------------------------------------------------------------------


def _stuck_policy() -> tuple[list[str], list[Any]]:
    """`s` is needed but only before `k`: after `k` without `s`, the run can never stop.
    Nineteen other requirements (a chain, satisfiable demands, caps, a force) do not matter."""
    tools = ["s", "k", "a", "b", "c", "d", "e", "f"]
    cause: list[Any] = [
        C("s", min_invocations=1, name="need-s"),
        C("s", only_before=["k"], name="s-before-k"),
    ]
    noise: list[Any] = [
        C(later, only_after=[earlier], name=f"{later}-after-{earlier}")
        for earlier, later in itertools.pairwise(["a", "b", "c", "d"])
    ]
    noise += [C(t, min_invocations=1, name=f"need-{t}") for t in ("a", "b", "e")]
    noise += [C(t, max_invocations=3, name=f"cap-{t}") for t in ("a", "b", "c", "d", "e", "f")]
    noise += [C(t, only_after=["a"], name=f"{t}-after-a") for t in ("e", "f")]
    noise += [C("e", force_after=["d"], name="e-after-d")]
    noise += [C(t, max_invocations=5, name=f"cap5-{t}") for t in ("k", "f", "c", "d")]
    return tools, [*cause, *noise]


def test_a_no_finish_is_first_guessed_as_a_demand_and_what_denies_it() -> None:
    tools, reqs = _stuck_policy()
    system = System(tools, reqs)
    guesses = properties._stopping(system)
    # Per requirement that may keep the run from stopping: it, and what mentions the tools
    # it waits for.
    assert frozenset({"need-s", "s-before-k"}) in guesses
    assert frozenset({"need-e", "e-after-a", "e-after-d", "cap-e"}) in guesses
    assert (
        frozenset({"e-after-d", "e-after-a", "cap-e", "need-e", "d-after-c", "cap-d", "cap5-d"})
        in guesses
    )  # a force waits for its trigger and its tool
    # One per such requirement, and no other.
    stoppers = {n for n, mentioned in system.mentions.items() if "final_answer" in mentioned}
    assert stoppers == {"need-s", "need-a", "need-b", "need-e", "e-after-d"}
    assert len(guesses) == len(stoppers) and all(g & stoppers for g in guesses)


def test_a_no_finish_core_from_its_guess_asks_only_about_small_subsystems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools, reqs = _stuck_policy()
    asked: list[int] = []
    holds = properties._holds

    def spied(sub: Any, names: frozenset[str], *rest: Any) -> Any:
        if rest[2] == "no-finish":
            asked.append(len(names))
        return holds(sub, names, *rest)

    monkeypatch.setattr(properties, "_holds", spied)
    report = check(tools, reqs)
    (finding,) = [f for f in report.findings if f.id == "no-finish"]
    assert {e.requirement for e in finding.core} == {"need-s", "s-before-k"}
    # Without the guess, the search's first question keeps half the policy.
    assert asked and max(asked) <= properties.SMALL_GUESS < len(reqs) // 2


def test_global_views_make_no_dependencies() -> None:
    # The cycle guard and a step counter watch every tool: they would link all of them.
    tools = ["a", "b", "c"]
    system = System(
        tools,
        [
            CycleGuard(),
            C("a", force_at_step=2, name="a-at-2"),
            C("b", only_after=["c"], name="b-c"),
        ],
    )
    found = properties._dependencies(system)
    assert {d[0] for d in found} == {"b-c"}
    assert properties._between(system, "a-at-2", found) == []


def test_the_tools_a_view_singles_out_are_those_it_waits_for() -> None:
    tools = ["a", "b", "c", "d", "e", "f"]
    system = System(
        tools,
        [
            CycleGuard(),  # its history tells every tool apart: it waits for none
            C("a", force_at_step=2, name="a-at-2"),  # a step counter that stops at `a`
            # The last tool called (a global view), and whether `d` ran since `e` did.
            C("e", force_after=["d"], consecutive_allowed=False, name="e-after-d"),
            C("b", only_after=["c"], name="b-c"),  # a local view: all it watches
            C("f", max_invocations=0, name="no-f"),  # a view no call moves
        ],
    )
    assert properties._singled_out(system) == {
        "cycle-guard": set(),
        "a-at-2": {"a"},
        "e-after-d": {"d", "e"},
        "b-c": {"c"},
        "no-f": set(),
    }


def test_a_requirement_waiting_for_a_dead_tool_is_first_guessed_dead_for_that_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `d` is dead (it only runs after `c`, which never runs), so the force after `d` never
    # fires: `e-after-d`'s guesses start from it and the dead tool's core.
    tools = ["a", "b", "c", "d", "e", "x"]
    killing = [C("c", max_invocations=0, name="no-c"), C("d", only_after=["c"], name="d-c")]
    noise = [
        C("x", only_after=["a"], name="x-a"),
        C("b", max_invocations=2, name="cap-b"),
        C("a", only_before=["x"], name="a-before-x"),
        CycleGuard(),
    ]
    waiting = C("e", force_after=["d"], name="e-after-d")
    first: dict[str, frozenset[str]] = {}
    search = properties.requirement_core

    def spy(system: Any, holds: Any, engine: Any, focus: Any = None, **kw: Any) -> Any:
        if focus == "live:e-after-d":
            first[focus] = kw["hints"][0]
        return search(system, holds, engine, focus, **kw)

    monkeypatch.setattr(properties, "requirement_core", spy)
    monkeypatch.setenv("RULEENGINE_LANES", "1")  # the spy sees the core searches
    report = check(tools, [*killing, *noise, waiting], engine="symbolic")
    assert first == {"live:e-after-d": frozenset({"e-after-d", "no-c", "d-c"})}
    finding = next(f for f in report.findings if f.requirement == "e-after-d")
    assert {e.requirement for e in finding.core} == {"e-after-d", "no-c", "d-c"}


# -- the variable order --------------------------------------------------------------------


def test_global_views_come_first_and_linked_tools_sit_together() -> None:
    tools = ["t0", "t1", "t2", "t3", "t4", "t5"]
    reqs = [
        C("t5", only_after=["t0"], name="t5-after-t0"),
        C("t0", max_invocations=2, name="cap-t0"),
        C("t5", max_invocations=2, name="cap-t5"),
        C("t1", max_invocations=2, name="cap-t1"),
        C("t3", force_at_step=3, name="t3-at-3"),
    ]
    system = System(tools, reqs)
    order = [c.requirement.name for c in symbolic._variable_order(system)]
    assert order[0] == "t3-at-3"  # a step counter: every tool moves it
    # t0 and t5 are linked, so their counters sit next to each other (and the link's bit
    # with them), not at the two ends of the declared order.
    linked = {order.index(n) for n in ("cap-t0", "cap-t5", "t5-after-t0")}
    assert max(linked) - min(linked) == 2
    assert order == [c.requirement.name for c in symbolic._variable_order(System(tools, reqs))]
    # The encoding declares the bits in that order (and reorders them in blocks).
    enc = Encoding(system)
    first = [enc.bits[id(c)] for c in symbolic._variable_order(system) if enc.bits[id(c)]]
    levels = [enc.bdd.level_of_var(bits[0]) for bits in first]
    assert levels == sorted(levels)


# -- liveness from decided states -------------------------------------------------------------


def _wide() -> tuple[list[str], list[Any]]:
    """More reachable states than ``FEW_STATES``: requirements live only after a few calls,
    one live only where it alone denies its tool, and dead ones."""
    tools = ["a", "b", "c", "d", "e", "f"]
    reqs: list[Any] = [C(t, max_invocations=3, name=f"cap-{t}") for t in tools]
    reqs += [
        C("b", only_after=["a"], name="b-after-a"),
        C("c", only_after=["b"], name="c-after-b"),
        C("c", only_after=["a"], name="c-after-a"),  # dead: implied by the two above
        C("d", only_before=["c"], name="d-before-c"),
        C("e", only_after=["d"], name="e-after-d"),
        C("f", max_invocations=5, name="loose-f"),  # dead: cap-f is tighter
    ]
    return tools, reqs


@pytest.mark.parametrize(("sampled", "probes"), [(64, 4), (0, 0), (0, 4), (64, 0)])
def test_live_requirements_agree_however_they_are_found(
    sampled: int, probes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools, reqs = _wide()
    system = System(tools, reqs)
    monkeypatch.setattr(symbolic, "SAMPLED", sampled)
    monkeypatch.setattr(symbolic, "PROBES", probes)
    found = analyse_symbolic(system)
    assert found.states > symbolic.FEW_STATES
    from ruleengine.check.explicit import analyse

    assert found.live == analyse(system).live
    assert found.live == {r.name for r in system.requirements} - {"c-after-a", "loose-f"}


def test_requirements_are_decided_only_where_their_rules_can_change_a_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `_unmasked` over-approximates where a requirement can be live: deciding it only
    # there finds the same live requirements with fewer decisions.
    tools, reqs = _wide()
    system = System(tools, reqs)
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    names = [r.name for r in system.requirements]
    unmasked = {name: run._unmasked(name) for name in names}
    asked: list[int] = []
    real = explicit.live_at

    def counted(
        sub: Any, records: Any, outcome: Any, candidates: Any, asking: Any, stop: Any = None
    ) -> set[str]:
        asked.append(len(candidates))
        return real(sub, records, outcome, candidates, asking, stop)

    monkeypatch.setattr(explicit, "live_at", counted)  # what ``live_here`` asks
    walks = run._walks()
    everywhere = run._live_by_deciding(names, walks)
    plain = sum(asked)
    asked.clear()
    assert run._live_by_deciding(names, walks, unmasked) == everywhere
    assert 0 < sum(asked) < plain
    assert everywhere <= {n for n in names if n not in ("c-after-a", "loose-f")}


def test_random_walks_are_reachable_and_the_same_every_time() -> None:
    tools, reqs = _wide()
    system = System(tools, reqs)
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    walks = run._walks()
    assert walks == symbolic._Symbolic(system, Encoding(system), None, None, None)._walks()
    assert 1 < len(walks) <= symbolic.SAMPLED and walks[0] == system.initial
    # Every state of a walk is reachable.
    run.start = run.enc.cube([b for c in system.components for b in run.enc.bits[id(c)]], 0)
    reach = run._reach()
    for state in walks:
        bits = run.enc.state_bits(system.components, state)
        assert run.bdd.let(bits, reach) == run.bdd.true


def test_a_state_is_in_a_set_exactly_when_substituting_it_gives_true() -> None:
    # `holds_at` walks one branch from the root; substituting the whole assignment is the
    # reference. Every state of the product, against sets with complemented edges: the
    # reachable set, its complement, each tool's pass, some of them over check bits too
    # (which the walk cannot follow: it substitutes, and a state is in such a set when it
    # is whatever the checks say).
    tools, reqs = _wide()
    reqs = [*reqs[:4], C("a", custom_checks=[lambda s: True], name="checked-a")]
    system = System(tools, reqs)
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    run.start = run.enc.cube([b for c in system.components for b in run.enc.bits[id(c)]], 0)
    reach = run._reach()
    comps, enc, bdd = system.components, run.enc, run.bdd
    sets = [reach, ~reach, bdd.true, bdd.false, *run.pass_.allowed.values()]
    assert any(u.support & set(run.check_names) for u in sets)  # a set the walk cannot take
    states = list(itertools.product(*(range(len(c.views)) for c in comps)))
    assert len(states) > 100
    for u in sets:
        for state in states:
            expected = bdd.let(enc.state_bits(comps, state), u) == bdd.true
            assert enc.holds_at(u, comps, state) == expected


def test_a_state_is_read_from_the_list_of_components_asked_about_each_time() -> None:
    # `holds_at` knows the last list it was given by identity. Lists in another order, a
    # copy, and the first list again in turn: each state is read through the list given
    # (the same state tuple means other views under another order).
    system = System(*_wide())
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    run.start = run.enc.cube([b for c in system.components for b in run.enc.bits[id(c)]], 0)
    reach = run._reach()
    comps, enc, bdd = system.components, run.enc, run.bdd
    backwards = list(reversed(comps))
    copied = list(comps)
    sizes = [len(c.views) for c in comps]
    states = list(itertools.islice(itertools.product(*(range(n) for n in sizes)), 0, None, 97))
    differ = 0
    for state in states:
        turned = tuple(reversed(state))
        expected = bdd.let(enc.state_bits(comps, state), reach) == bdd.true
        for given, views in ((comps, state), (backwards, turned), (copied, state), (comps, state)):
            assert enc.holds_at(reach, given, views) == expected
        if all(v < n for v, n in zip(state, reversed(sizes), strict=True)):
            # The same tuple read through the reversed list is another state.
            other = bdd.let(enc.state_bits(backwards, state), reach) == bdd.true
            assert enc.holds_at(reach, backwards, state) == other
            differ += other != expected
    assert differ  # the order matters for some state: a stale list would be caught


def test_the_reachable_set_search_takes_the_clusters_bottom_up() -> None:
    tools = [f"t{i}" for i in range(6)]
    reqs = [C(t, max_invocations=2, name=f"cap-{t}") for t in tools]
    reqs += [C(t, consecutive_allowed=False, name=f"apart-{t}") for t in tools]
    system = System(tools, reqs)
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    level = run.bdd.level_of_var
    tops = [min(level(b) for b in c.current) for c in run._bottom_up()]
    assert sorted(run._bottom_up(), key=id) == sorted(run.clusters, key=id)  # each once
    assert tops == sorted(tops, reverse=True)
    # Ties keep the declared order.
    for a, b in itertools.pairwise(run._bottom_up()):
        if min(level(x) for x in a.current) == min(level(x) for x in b.current):
            assert run.clusters.index(a) < run.clusters.index(b)


def _react_chained() -> System:
    """``think`` first and after some actions, never twice in a row; actions capped and
    chained by ``only_after``: a chain the reachable-set search's sweeps follow a link at a
    time, in diagrams that grow each sweep."""
    acts = [f"act{i}" for i in range(7)]
    reqs = [
        C("think", force_at_step=1, name="think-first"),
        C("think", force_after=["act6", "act0", "act5"], consecutive_allowed=False, name="ta"),
        C("act0", force_at_step=2, name="prefix-2"),
    ]
    caps = {"act5": 1, "act6": 2, "act2": 2, "act4": 2, "act3": 2}
    reqs += [C(a, max_invocations=m, name=f"cap-{a}") for a, m in caps.items()]
    chained = ["act4-act2", "act6-act0", "act3-act2", "act4-act3", "act4-act1", "act6-act1"]
    for pair in [*chained, "act1-act0"]:
        a, b = pair.split("-")
        reqs.append(C(a, only_after=[b], name=f"{a}-after-{b}"))
    return System(["think", *acts], reqs)


def _reached(system: System, growth: float) -> tuple[set[Any], int]:
    """The reachable set's states (of every product state, those it holds) with
    ``SWEEP_GROWTH`` at ``growth``, and the most nodes of any set the search stepped from."""
    run = symbolic._Symbolic(system, Encoding(system), None, None, None)
    run.start = run.enc.cube([b for c in system.components for b in run.enc.bits[id(c)]], 0)
    image, most = run._image, [0]

    def spied(states: Any, g: Any) -> Any:
        most[0] = max(most[0], len(states))
        return image(states, g)

    run._image = spied  # type: ignore[method-assign]
    original = symbolic.SWEEP_GROWTH
    symbolic.SWEEP_GROWTH = growth
    try:
        reach = run._reach()
    finally:
        symbolic.SWEEP_GROWTH = original
    states = itertools.product(*(range(len(c.views)) for c in system.components))
    return {s for s in states if run.enc.holds_at(reach, system.components, s)}, most[0]


def test_sweeps_whose_diagrams_grow_are_dropped_for_the_event_driven_search() -> None:
    system = _react_chained()
    # Every reachable state, by a plain breadth-first walk of the runtime's decisions.
    seen, todo = {system.initial}, [system.initial]
    while todo:
        state = todo.pop()
        for tool in explicit.callable_at(system, state) - {"final_answer"}:
            for status in ("ok", "error", "denied"):
                after = system.successor(state, (tool, status))
                if after not in seen:
                    seen.add(after)
                    todo.append(after)
    dropped, small = _reached(system, symbolic.SWEEP_GROWTH)
    kept, large = _reached(system, float("inf"))  # the sweeps' sets stay pending
    assert dropped == kept == seen  # the same fixpoint either way
    # Dropped after a sweep that more than doubled the diagram: the sets stepped from stay
    # far smaller (here 71 nodes at most, against 110).
    assert small < large * 0.75


def test_dynamic_reordering_only_with_many_bits_of_global_views() -> None:
    tools = [f"t{i}" for i in range(6)]
    counters = [C(t, max_invocations=3, name=f"cap-{t}") for t in tools]
    plain = Encoding(System(tools, counters))
    assert not plain.reordering
    # "Not twice in a row" and forced steps watch every tool: global views.
    many = [C(t, consecutive_allowed=False, name=f"apart-{t}") for t in tools]
    many += [C(t, force_at_step=i + 3, name=f"at-{t}") for i, t in enumerate(tools)]
    system = System(tools, counters + many)
    assert sum(len(Encoding(system).bits[id(c)]) for c in system.components if c.is_global(6)) > (
        symbolic.GLOBAL_BITS
    )
    if hasattr(Encoding(system).bdd, "group"):  # CUDD
        reordering = Encoding(system)
        assert reordering.reordering
        # Shorter reorderings: sifting may grow the diagrams less than CUDD's default.
        assert reordering.bdd.configure()["max_growth"] == pytest.approx(symbolic.REORDER_GROWTH)
        assert plain.bdd.configure()["max_growth"] == pytest.approx(1.2)


def test_the_reachable_set_search_sifts_shortest_and_puts_the_growth_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    six = [f"t{i}" for i in range(6)]
    system = System(six, _global_views(six))
    if not hasattr(Encoding(system).bdd, "group"):  # not CUDD: no reordering to bound
        return
    growths: list[float] = []
    after: list[float] = []
    search, liveness = symbolic._Symbolic._reach, symbolic._Symbolic._universal

    def reach(self: Any) -> Any:
        growths.append(self.bdd.configure()["max_growth"])
        return search(self)

    def universal(self: Any, **kw: Any) -> Any:
        after.append(self.bdd.configure()["max_growth"])
        return liveness(self, **kw)

    monkeypatch.setattr(symbolic._Symbolic, "_reach", reach)
    monkeypatch.setattr(symbolic._Symbolic, "_universal", universal)
    plain = analyse_symbolic(system, encoding=Encoding(system))
    monkeypatch.setattr(symbolic, "REACH_GROWTH", 1.2)
    assert analyse_symbolic(system, encoding=Encoding(system)) == plain  # only the speed
    assert growths == [pytest.approx(1.0), pytest.approx(1.2)]
    # The questions after the search sift as before.
    assert after == [pytest.approx(symbolic.REORDER_GROWTH)] * 2
    # So does the encoding after a block that fails.
    enc = Encoding(system)
    with pytest.raises(KeyError), enc.growth(1.0):
        assert enc.bdd.configure()["max_growth"] == pytest.approx(1.0)
        raise KeyError("the search failed")
    assert enc.bdd.configure()["max_growth"] == pytest.approx(symbolic.REORDER_GROWTH)
    # Without dynamic reordering the bound is left alone.
    plain_enc = Encoding(System(six, [C(t, max_invocations=2) for t in six]))
    with plain_enc.growth(1.0):
        assert plain_enc.bdd.configure()["max_growth"] == pytest.approx(1.2)


def test_sifting_keeps_each_bits_current_and_next_variable_side_by_side() -> None:
    # Per-tool counters, some ordered: one sifting of their reachable set parted a third of
    # the pairs before they were grouped.
    tools = [f"t{i}" for i in range(8)]
    reqs = [C(t, max_invocations=3, name=f"cap-{t}") for t in tools]
    reqs += [C(tools[i], only_after=[tools[(i * 3 + 1) % 8]], name=f"after-{i}") for i in range(8)]
    reqs += [C(t, min_invocations=1, name=f"need-{t}") for t in tools[::3]]
    system = System(tools, reqs)
    enc = Encoding(system)
    if not hasattr(enc.bdd, "group"):  # not CUDD: nothing is ever sifted
        return
    plain = analyse_symbolic(system, encoding=Encoding(system))
    assert analyse_symbolic(system, encoding=enc) == plain
    enc.bdd.reorder()
    level = enc.bdd.level_of_var
    pairs = [
        (x, y)
        for c in enc.order
        for x, y in zip(enc.bits[id(c)], enc.next_bits[id(c)], strict=True)
    ]
    assert pairs and all(abs(level(x) - level(y)) == 1 for x, y in pairs)
    # And each component's variables still move as one block.
    for c in enc.order:
        own = sorted(
            level(v) for v in (*enc.bits[id(c)], *enc.next_bits[id(c)], *enc.check_bits[id(c)])
        )
        assert own == list(range(own[0], own[0] + len(own)))


def test_the_variables_are_sifted_once_when_a_reachable_set_passes_sift_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = ["a", "b", "c", "d"]
    reqs = [C("b", only_after=["a"]), C("c", only_after=["b"]), C("d", max_invocations=2)]
    system = System(tools, reqs)
    small = Encoding(system)
    if not hasattr(small.bdd, "group"):  # not CUDD: nothing is ever sifted
        assert small.settled
        return
    analyse_symbolic(system, encoding=small)
    assert not small.settled  # far under SIFT_NODES: the static order stays
    sifted = Encoding(system)
    calls: list[object] = []
    sifted.bdd = _CountingReorders(sifted.bdd, calls)
    monkeypatch.setattr(symbolic, "SIFT_NODES", 0)
    assert analyse_symbolic(system, encoding=sifted) == analyse_symbolic(system, encoding=small)
    names = [r.name for r in system.requirements]
    analyse_symbolic(system.subsystem(names[1:]), encoding=sifted)  # shares the encoding
    assert sifted.settled and calls == [None]  # sifting: no order given
    # Past SIFT_MAX_NODES the order stays as it is, and no later set is sifted either.
    monkeypatch.setattr(symbolic, "SIFT_MAX_NODES", 0)
    too_large = Encoding(system)
    too_large.bdd = _CountingReorders(too_large.bdd, calls)
    analyse_symbolic(system, encoding=too_large)
    assert too_large.settled and calls == [None]
    # With dynamic reordering on, the order is CUDD's to keep: never sifted by hand.
    six = [f"t{i}" for i in range(6)]
    many = [C(t, consecutive_allowed=False, name=f"apart-{t}") for t in six]
    many += [C(t, force_at_step=i + 3, name=f"at-{t}") for i, t in enumerate(six)]
    assert Encoding(System(six, many)).settled


def _global_views(tools: list[str]) -> list[C]:
    """Requirements whose views most tools move: enough bits of them for dynamic reordering."""
    many = [C(t, consecutive_allowed=False, name=f"apart-{t}") for t in tools]
    return many + [C(t, force_at_step=i + 2, name=f"at-{t}") for i, t in enumerate(tools)]


def test_the_order_a_search_ends_with_is_kept_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tools = [f"t{i}" for i in range(6)]
    system = System(tools, _global_views(tools))
    if not hasattr(Encoding(system).bdd, "group"):  # not CUDD: no dynamic reordering
        return
    reordered = Encoding(system)
    assert reordered.reordering
    found = analyse_symbolic(system, encoding=reordered)
    # The search chains with reordering on; the order it ends with is kept for what follows.
    assert not reordered.reordering and not reordered.bdd.configure()["reordering"]
    # Core questions on that manager, or on a fresh one: the same answers.
    names = [r.name for r in system.requirements]
    sub = system.subsystem(names[2:])
    assert _verdicts(analyse_symbolic(sub, encoding=reordered)) == _verdicts(
        analyse_symbolic(sub, encoding=Encoding(system))
    )
    assert _verdicts(found) == _verdicts(analyse_symbolic(system, encoding=Encoding(system)))


def test_a_state_limit_drops_the_layers_a_search_by_layers_found_past_it() -> None:
    tools = [f"t{i}" for i in range(6)]
    system = System(tools, _global_views(tools))
    whole = analyse_symbolic(system)
    assert whole.complete and whole.states > 10
    for limit in (1, 10, whole.states - 1):
        cut = analyse_symbolic(system, max_states=limit)
        assert not cut.complete and f"state limit ({limit})" in (cut.reason or "")
        assert 1 <= cut.states <= limit  # whole breadth-first layers, within the limit
        assert cut.depth_done < explicit.analyse(system).depth_done  # not every layer


def test_states_listed_in_part_leave_dynamic_reordering_as_it_was() -> None:
    # CUDD's pick_iter turns reordering off while it runs and back on only at its end.
    tools = [f"t{i}" for i in range(6)]
    system = System(tools, _global_views(tools))
    enc = Encoding(system)
    if not hasattr(enc.bdd, "group"):  # not CUDD: no dynamic reordering
        return
    run = symbolic._Symbolic(system, enc, None, None, None)
    everything = enc.bdd.true
    listing = run._states(everything)
    assert next(listing) is not None
    assert not enc.bdd.configure()["reordering"]  # off while the listing runs
    listing.close()  # abandoned after one state
    assert enc.bdd.configure()["reordering"]
    assert sum(1 for _ in itertools.islice(run._states(everything), 3)) == 3
    assert enc.bdd.configure()["reordering"]


def _verdicts(analysis: Any) -> Any:
    """``analysis`` but how deep its breadth-first layers went (a search by layers to the
    fixpoint knows the deepest; chaining knows only the layers it was asked for)."""
    return dataclasses.replace(analysis, depth_done=0)


class _CountingReorders:
    """A BDD manager that records its ``reorder`` calls (CUDD's class is immutable)."""

    def __init__(self, bdd: Any, calls: list[object]) -> None:
        self._bdd, self._calls = bdd, calls

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bdd, name)

    def reorder(self, order: object = None) -> None:
        self._calls.append(order)
        self._bdd.reorder(order)


def _chained_policy() -> tuple[list[str], list[Any]]:
    """`p` needed twice, but denied after `d`, which two forces bring right after the first
    `p`: the run never stops. `x` needed twice and allowed once besides, and requirements
    on other tools that change nothing of that."""
    fillers = [f"f{i}" for i in range(12)]
    reqs: list[Any] = [
        C("p", only_before=["d"], name="p-before-d"),
        C("s", force_after=["p"], name="s-after-p"),
        C("d", force_after=["s"], name="d-after-s"),
        C("p", min_invocations=2, name="need-p"),
        C("x", min_invocations=2, name="need-x"),
        C("x", max_invocations=1, name="cap-x"),
        *(C(f, only_after=[g], name=f"{f}-after-{g}") for f, g in itertools.pairwise(fillers)),
    ]
    return ["p", "d", "s", "x", *fillers], reqs


def test_a_demand_denied_through_a_chain_of_forces_is_guessed_a_round_out() -> None:
    tools, reqs = _chained_policy()
    system = System(tools, reqs)
    chain = {"p-before-d", "s-after-p", "d-after-s", "need-p"}
    # The demand and what mentions the tool it waits for: the force that `p` triggers and
    # the "only before", not the force that brings `d`.
    assert not any(chain <= g for g in properties._stopping(system))
    # One round out, what mentions the tools those wait for: the whole chain.
    grown = [g for g in properties._stopping(system, 1) if chain <= g]
    assert grown and min(len(g) for g in grown) < len(reqs) // 2
