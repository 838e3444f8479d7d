"""What the checker may claim when it cannot finish: ``timeout``, ``max_states``, requirements
without a monitor (a bounded search of concrete histories), and bad arguments.

An incomplete report says so (``complete: false`` and a ``reason``) and carries no universal
finding (``no-finish``, ``dead-tool``, ``dead-requirement`` claim something of every history);
the existential findings it does carry were seen, so their traces replay.
"""

from __future__ import annotations

from typing import Any

import pytest

import ruleengine.check.explicit as explicit_engine
import ruleengine.check.run as check_run
from ruleengine import (
    ConditionalRequirement,
    CycleGuard,
    Policy,
    PolicyError,
    Reasoner,
    Requirement,
    RunState,
    allowed,
    requirement,
)
from ruleengine.check import (
    Report,
    TraceStep,
    check,
    check_policy,
    confirm,
    diff,
    diff_policies,
    replay,
)

C = ConditionalRequirement
ENGINES = ("explicit", "symbolic")
UNIVERSAL = {"no-finish", "dead-tool", "dead-requirement"}


def assert_sound(report: Report, tools: list[str], reqs: list[Any], mode: str = "strict") -> None:
    """Incomplete: said so, nothing universal, and every finding seen replays."""
    assert not report.complete
    assert report.reason
    assert "reason" in report.model_dump(mode="json")
    assert not {f.id for f in report.findings} & UNIVERSAL
    reasoner = Reasoner(tools, reqs, mode=mode)  # type: ignore[arg-type]
    for f in report.findings:
        if not f.depends_on_custom_checks:
            assert confirm(reasoner, f) is None, f


def early_deadlock_in_a_large_space() -> list[Requirement]:
    """A deadlock after one call of `a`, and 51 × 51 states of `b` and `c` counts before."""
    return [
        C("a", max_invocations=1, reason="once", name="cap"),
        C("a", min_invocations=2, name="need"),
        C("b", max_invocations=50, only_before=["a"], reason="before a", name="b50"),
        C("c", max_invocations=50, only_before=["a"], reason="before a", name="c50"),
    ]


# -- timeout and max_states --------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_a_timeout_that_has_passed_leaves_the_report_incomplete(engine: str) -> None:
    reqs = early_deadlock_in_a_large_space()
    report = check(["a", "b", "c"], reqs, engine=engine, timeout=1e-9)  # type: ignore[arg-type]
    assert_sound(report, ["a", "b", "c"], reqs)
    assert "time" in (report.reason or "")


@pytest.mark.parametrize("engine", ENGINES)
def test_max_states_cuts_the_search(engine: str) -> None:
    reqs = early_deadlock_in_a_large_space()
    report = check(["a", "b", "c"], reqs, engine=engine, max_states=20)  # type: ignore[arg-type]
    assert_sound(report, ["a", "b", "c"], reqs)
    assert "state limit (20)" in (report.reason or "")


@pytest.mark.parametrize("engine", ENGINES)
def test_max_states_explores_as_deep_as_the_limit_allows(engine: str) -> None:
    # A chain of counters: breadth-first, the first layers fit in 10 states, the whole
    # space does not. Both engines report what they explored, within the limit, and the
    # depth they finished, never the size of the whole space.
    reqs = [
        C("a", max_invocations=5, name="A"),
        C("b", only_after=["a"], max_invocations=4, name="B"),
        C("c", max_invocations=0, name="Z"),
    ]
    full = check(["a", "b", "c"], reqs, engine=engine)  # type: ignore[arg-type]
    assert full.complete and full.stats.states > 10
    report = check(["a", "b", "c"], reqs, engine=engine, max_states=10)  # type: ignore[arg-type]
    assert_sound(report, ["a", "b", "c"], reqs)
    assert 1 < report.stats.states <= 10


def test_findings_seen_before_the_cut_are_reported_and_real() -> None:
    reqs = early_deadlock_in_a_large_space()
    report = check(["a", "b", "c"], reqs, engine="explicit", max_states=20)
    assert_sound(report, ["a", "b", "c"], reqs)
    assert report.stats.states <= 20
    deadlock = report.findings[0]
    assert deadlock.id == "deadlock" and [str(s) for s in deadlock.trace] == ["a"]
    assert [c.requirement for c in deadlock.core] == ["b50", "c50", "cap", "need"]


def test_the_same_policy_checked_in_full_has_the_universal_findings() -> None:
    reqs = early_deadlock_in_a_large_space()
    report = check(["a", "b", "c"], reqs)
    assert report.complete and report.reason is None
    assert "reason" not in report.model_dump(mode="json")
    assert [f.id for f in report.findings] == ["deadlock", "no-finish", "budget"]


def test_budget_is_reported_when_the_search_went_deep_enough() -> None:
    # Every state within max_iterations - 1 steps was decided before the cut: the budget
    # verdict is exact even though the report is incomplete.
    reqs = [C("a", min_invocations=3, name="three"), C("b", max_invocations=30, name="b30")]
    report = check(["a", "b"], reqs, engine="explicit", max_states=10, max_iterations=2)
    assert_sound(report, ["a", "b"], reqs)
    assert [(f.id, f.min_steps) for f in report.findings] == [("budget", 3)]


def test_a_cut_search_does_not_claim_final_answer_is_never_allowed() -> None:
    reqs = [C("a", min_invocations=3, name="three"), C("b", max_invocations=30, name="b30")]
    assert [f.min_steps for f in check(["a", "b"], reqs, max_iterations=2).findings] == [3]
    report = check(["a", "b"], reqs, engine="explicit", max_states=8, max_iterations=2)
    for f in report.findings:
        assert f.id != "budget" or (f.min_steps is not None or "never" not in f.message), f


class _Clock:
    """A clock for the explicit engine that stands still, then jumps past any deadline."""

    now = 0.0

    @classmethod
    def monotonic(cls) -> float:
        return cls.now


def test_a_timeout_during_the_core_search_is_not_a_complete_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `D` is dead because of `A` alone; `B` has nothing to do with it. The main analysis
    # completes; then the clock jumps and every analysis of a subsystem runs out of time
    # (each has hundreds of states: no short search settles it).
    reqs = [
        C("a", max_invocations=300, name="A"),
        C("a", max_invocations=600, name="D"),
        C("b", max_invocations=2, name="B"),
    ]
    assert [c.requirement for c in check(["a", "b"], reqs).findings[0].core] == ["A", "D"]
    findings = check_run.findings

    def late_findings(*args: Any, **kwargs: Any) -> Any:
        _Clock.now = 1e12
        return findings(*args, **kwargs)

    _Clock.now = 0.0
    monkeypatch.setattr(explicit_engine, "time", _Clock)
    monkeypatch.setattr(check_run, "findings", late_findings)
    report = check(["a", "b"], reqs, engine="explicit", timeout=3600)
    # The verdict was proved before the clock jumped, so the finding stays; only its core
    # may be larger than needed, and the report says so instead of claiming completeness.
    assert not report.complete
    assert report.reason is not None and "cores may not be minimal" in report.reason
    [dead] = report.findings
    assert (dead.id, dead.requirement) == ("dead-requirement", "D")
    assert {"A", "D"} <= {c.requirement for c in dead.core}


def test_timeout_and_max_states_through_a_policy() -> None:
    policy = Policy(["a", "b", "c"], early_deadlock_in_a_large_space())
    assert not policy.check(max_states=5).complete
    assert not policy.check(timeout=1e-9).complete


# -- requirements without a monitor --------------------------------------------------------------


@requirement(name="late-no-a")
def late_no_a(state: RunState) -> list[Any]:
    """No monitor: from the third step on, `a` is denied."""
    return [~allowed("a")] if len(state.steps) >= 2 else []


@requirement(name="quiet")
def quiet(state: RunState) -> list[Any]:
    """No monitor, no rules."""
    return []


def test_a_requirement_without_a_monitor_gets_a_bounded_search() -> None:
    reqs = [late_no_a, C("a", min_invocations=3, name="three")]
    report = check(["a"], reqs, max_iterations=4)
    assert_sound(report, ["a"], reqs)
    assert "`late-no-a`" in (report.reason or "") and "monitor" in (report.reason or "")
    assert [(f.id, [str(s) for s in f.trace]) for f in report.findings] == [
        ("deadlock", ["a", "a"]),
        ("budget", []),
    ]
    deadlock = report.findings[0]
    assert [(c.requirement, c.rule) for c in deadlock.core] == [
        ("late-no-a", "~allowed('a')"),
        ("three", "Rule('a', prevent_stop=True)"),
    ]


def test_a_disabled_requirement_without_a_monitor_does_not_matter() -> None:
    off = requirement(name="off", enabled=False)(lambda state: [~allowed("a")])
    report = check(["a"], [off, C("a", max_invocations=1, name="cap")])
    assert report.complete and report.findings == ()


def test_too_many_custom_checks_get_a_bounded_search() -> None:
    checks = [lambda state: True] * 13
    reqs = [C("a", custom_checks=checks, name="many")]
    report = check(["a"], reqs, max_iterations=2)
    assert_sound(report, ["a"], reqs)
    assert "`many`" in (report.reason or "") and "custom checks" in (report.reason or "")


@pytest.mark.parametrize("engine", [*ENGINES, "auto"])
def test_the_bounded_search_ignores_the_engine_choice(engine: str) -> None:
    report = check(["a"], [quiet], engine=engine, max_iterations=4)  # type: ignore[arg-type]
    assert not report.complete and report.findings == ()


@requirement(name="late-stop")
async def late_stop(state: RunState) -> list[Any]:
    """No monitor, and async: from the third step on, neither `a` nor `b` is allowed."""
    return [~allowed("a"), ~allowed("b")] if len(state.steps) >= 2 else []


def test_the_bounded_search_awaits_async_requirements() -> None:
    reqs = [late_stop, C("b", min_invocations=1, name="need-b")]
    report = check(["a", "b"], reqs, max_iterations=4)
    assert not report.complete
    [deadlock] = report.findings
    assert deadlock.id == "deadlock"
    assert [(s.tool, s.status) for s in deadlock.trace] == [("a", "ok"), ("a", "ok")]
    assert {c.requirement for c in deadlock.core} == {"late-stop", "need-b"}


def test_the_bounded_search_stops_at_max_states() -> None:
    reqs = [quiet, C("a", max_invocations=1, name="cap"), C("a", min_invocations=2, name="n")]
    report = check(["a", "b", "c"], reqs, max_states=5)
    assert_sound(report, ["a", "b", "c"], reqs)
    assert "limit" in (report.reason or "")


def test_the_bounded_search_does_not_claim_never() -> None:
    reqs = [quiet, C("a", min_invocations=3, name="three")]
    [budget] = check(["a"], reqs, max_iterations=2).findings
    assert budget.min_steps == 3 or "never" not in budget.message


def test_the_bounded_search_gives_a_minimal_budget_core() -> None:
    reqs = [quiet, C("a", min_invocations=3, name="three")]
    [budget] = check(["a"], reqs, max_iterations=2).findings
    assert [c.requirement for c in budget.core] == ["three"]


# -- bad arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iterations": True}, "max_iterations"),
        ({"max_iterations": 2.0}, "max_iterations"),
        ({"timeout": -1}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "1"}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"max_states": 0}, "max_states"),
        ({"max_states": 1.5}, "max_states"),
        ({"engine": "fast"}, "engine"),
        ({"mode": "fast"}, "mode"),
    ],
)
def test_bad_arguments_are_policy_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        check(["a"], [C("a", max_invocations=1)], **options)


def test_a_name_that_is_not_text_is_refused_before_the_check_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_search(*args: object, **kwargs: object) -> object:
        raise AssertionError("the check ran")

    monkeypatch.setattr(check_run, "_whole_if_small", no_search)
    with pytest.raises(PolicyError, match="name=`3` must be text"):
        check(["a"], [C("a", max_invocations=1)], name=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("given", [None, "policy.toml", 3, Reasoner(["a"], [])])
def test_check_policy_and_diff_policies_name_what_they_got_instead_of_a_policy(
    given: object,
) -> None:
    kind = type(given).__name__
    with pytest.raises(PolicyError, match=f"check_policy: expected a `Policy`, got `{kind}`"):
        check_policy(given)  # type: ignore[arg-type]
    policy = Policy(["a"], [C("a", max_invocations=1)])
    with pytest.raises(PolicyError, match=rf"diff_policies \(new\): .* got `{kind}`"):
        diff_policies(policy, given)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=rf"diff_policies \(old\): .* got `{kind}`"):
        diff_policies(given, policy)  # type: ignore[arg-type]


@pytest.mark.parametrize("side", [None, (["a"], []), ["a"], (["a"], [], "strict", "extra")])
def test_diff_wants_a_triple_per_side(side: object) -> None:
    good = (["a"], [C("a", max_invocations=1)], "strict")
    with pytest.raises(PolicyError, match="`new` must be a `\\(tools, requirements, mode\\)`"):
        diff(good, side)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="old_name"):
        diff(good, good, old_name=None)  # type: ignore[arg-type]


def test_severities_are_error_or_warning() -> None:
    report = check(["a"], [C("a", max_invocations=0)])
    assert [f.id for f in report.at_or_above("warning")] == ["dead-tool"]
    assert report.at_or_above("error") == ()  # a dead tool is a warning
    for bad in ("fatal", "Error", 3, None):
        with pytest.raises(PolicyError, match="severity"):
            report.at_or_above(bad)  # type: ignore[arg-type]


def test_replay_takes_trace_steps_names_and_pairs_alike() -> None:
    reasoner = Reasoner(["a", "b"], [C("b", only_after=["a"])])
    steps = [TraceStep(tool="a", status="error"), TraceStep(tool="b", status="ok")]

    def shown(outcomes: list[Any]) -> list[Any]:
        return [o.allowed for o in outcomes]

    assert shown(replay(reasoner, steps)) == shown(replay(reasoner, [("a", "error"), "b"]))
    assert shown(replay(reasoner, ["a"])) == [("a", "final_answer"), ("a", "b", "final_answer")]


@pytest.mark.parametrize(
    ("reasoner", "trace", "match"),
    [
        (None, [], "replay: expected a `Reasoner`, got `NoneType`"),
        ("policy.toml", [], "replay: expected a `Reasoner`, got `str`"),
        (Reasoner(["a"], []), "a", "one string, not a list of steps"),
        (Reasoner(["a"], []), None, "trace=`None` must be a list"),
        (Reasoner(["a"], []), [3], "trace entry 1"),
        (Reasoner(["a"], []), [("a", "maybe")], "status `maybe`"),
    ],
)
def test_replay_names_bad_input(reasoner: object, trace: object, match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        replay(reasoner, trace)  # type: ignore[arg-type]


def test_confirm_names_bad_input() -> None:
    report = check(["a"], [C("a", max_invocations=0)])
    reasoner = Reasoner(["a"], [C("a", max_invocations=0)])
    assert confirm(reasoner, report.findings[0]) is None
    with pytest.raises(PolicyError, match=r"confirm: expected a `Finding` \(.*\), got `dict`"):
        confirm(reasoner, report.findings[0].model_dump())  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="confirm: expected a `Reasoner`"):
        confirm(None, report.findings[0])  # type: ignore[arg-type]


def test_the_symbolic_engine_refuses_what_it_cannot_decide() -> None:
    # In priority mode, guards that give way together, but at two priorities: which tier
    # each denial sits in would decide which gives way first.
    guards = [CycleGuard(name="g1"), CycleGuard(priority=5, name="g2")]
    with pytest.raises(PolicyError, match="yielding requirements at one priority"):
        check(["a", "b"], guards, mode="priority", engine="symbolic")
    # At one priority it takes them, and says what the explicit engine says.
    alike = [CycleGuard(name="g1"), CycleGuard(name="g2"), C("a", max_invocations=1)]
    by_symbolic = check(["a", "b"], alike, mode="priority", engine="symbolic")
    by_explicit = check(["a", "b"], alike, mode="priority", engine="explicit")
    assert by_symbolic.model_dump(exclude={"stats"}) == by_explicit.model_dump(exclude={"stats"})


def test_bad_tools_and_requirements_are_policy_errors() -> None:
    with pytest.raises(PolicyError):
        check(["a", "a"], [])
    with pytest.raises(PolicyError):
        check(["a"], [C("b", max_invocations=1)])
    with pytest.raises(PolicyError):
        check(["a"], ["not a requirement"])  # type: ignore[list-item]


def test_past_the_deadline_no_core_question_is_asked_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Many dead tools, each with a core to search: once the clock passes the deadline, the
    # remaining questions are answered "keep" without asking anything (the time limit holds
    # however many remain), and each core keeps every requirement: right, not minimal.
    import ruleengine.check.properties as properties_module
    import ruleengine.check.relaxed as relaxed_module

    tools = [f"t{i}" for i in range(12)]
    reqs = [C(t, only_after=[tools[(i + 1) % 12]], name=f"r{i}") for i, t in enumerate(tools)]
    findings = check_run.findings
    asked: list[str | None] = []
    engine = check_run._engine

    def spying_engine(*args: Any, **kwargs: Any) -> Any:
        run = engine(*args, **kwargs)

        def spy(sub: Any, focus: str | None = None) -> Any:
            asked.append(focus)
            return run(sub, focus)

        return spy

    def late_findings(*args: Any, **kwargs: Any) -> Any:
        _Clock.now = 1e12
        asked.clear()
        return findings(*args, **kwargs)

    monkeypatch.setenv("RULEENGINE_LANES", "1")  # one process: the spy sees every question
    _Clock.now = 0.0
    for module in (explicit_engine, properties_module, relaxed_module):
        monkeypatch.setattr(module, "time", _Clock)
    monkeypatch.setattr(check_run, "findings", late_findings)
    monkeypatch.setattr(check_run, "_engine", spying_engine)
    report = check(tools, reqs, engine="explicit", timeout=3600)
    dead = [f for f in report.findings if f.id == "dead-tool"]
    assert len(dead) == 12 and asked == []
    assert all({c.requirement for c in f.core} == {r.name for r in reqs} for f in dead)
    assert not report.complete and "cores may not be minimal" in (report.reason or "")


def test_auto_keeps_time_for_the_first_steps_when_its_engine_stops_without_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The symbolic engine computes its verdicts from the whole reachable set: stopped by the
    # time limit before it has one, it reports nothing. `auto` keeps a share of the limit for
    # a breadth-first search of the first steps, whose findings are real shortest histories.
    from ruleengine.check.analysis import Analysis

    tools = ["t0", "t1", "t2", "t3"]
    reqs = [
        C("t1", force_after=["t0"], name="t1-after-t0"),
        C("t2", force_after=["t0"], name="t2-after-t0"),
        C("t3", max_invocations=30, name="t3-cap"),
    ]
    stopped = Analysis(states=7, complete=False, reason="the time limit ran out")

    def out_of_time(self: Any, sub: Any, focus: str | None = None) -> Analysis:
        return stopped

    monkeypatch.setattr(check_run._SymbolicEngine, "__call__", out_of_time)
    monkeypatch.setattr(check_run, "_whole_if_small", lambda *a, **k: (None, None))
    whole = check(tools, reqs, engine="explicit")
    # Raced, the verdicts decided one by one in a second child answer in full: the same
    # report as the explicit engine's, for all the symbolic engine's stopping early.
    raced = check(tools, reqs, timeout=3600)
    assert raced.complete and raced.findings == whole.findings
    # Without the race (no second child here), the reserve's first steps are what is left.
    monkeypatch.setattr(check_run, "_raced", lambda *a, **k: None)
    report = check(tools, reqs, timeout=3600)
    assert_sound(report, tools, reqs)
    tie = [f for f in report.findings if f.id == "forced-tie"]
    assert tie and [str(s) for s in tie[0].trace] == ["t0"]
    assert {c.requirement for c in tie[0].core} == {"t1-after-t0", "t2-after-t0"}
    # without a time limit there is no share to keep: the engine's report stands alone
    assert check(tools, reqs).findings == ()


def test_a_symbolic_step_looks_at_the_clock_between_its_parts() -> None:
    # One layer of a large subsystem is many images, one per cluster of tools: the deadline
    # is looked at before each, so a layer does not outlast it by all the others.
    import time

    from ruleengine.check.symbolic import Encoding
    from ruleengine.check.symbolic_layers import Layers, _OutOfTime
    from ruleengine.check.system import System

    system = System(["a", "b", "c"], [C("b", only_after=["a"]), C("c", max_invocations=1)])
    enc = Encoding(system)
    start = enc.bdd.cube(enc.state_bits(system.components, system.initial))
    layers = Layers(system, enc, None, None, None)
    assert layers.image(start) != enc.bdd.false
    assert layers.preimage(layers.image(start), enc.bdd.true) != enc.bdd.false
    late = Layers(system, enc, None, time.monotonic() - 1, None)
    with pytest.raises(_OutOfTime):
        late.image(start)
    with pytest.raises(_OutOfTime):
        late.preimage(layers.image(start), enc.bdd.true)


def test_the_explicit_search_looks_at_the_clock_within_a_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the first step, three cycle guards' opaque checks give every state 8 sets of
    # records, each decided and each asked which requirements it makes live: one state can
    # take longer than the limit leaves. The clock is looked at within it (here it is past
    # the deadline from the second state's expansion on), and the search ends there with
    # what it found, not after 63 more states.
    from ruleengine.check.system import System

    reqs = [CycleGuard(max_strike_length=n, name=f"guard{n}") for n in (2, 3, 4)]
    system = System(["a", "b"], [*reqs, C("a", max_invocations=3, name="cap")])
    after_a = explicit_engine.walk(system, [("a", "ok")])
    assert after_a is not None and len(list(system.variants(after_a))) == 8
    whole = explicit_engine.analyse(system)
    assert whole.complete and whole.states > 2
    now = [0.0]
    real = explicit_engine._Explorer._expand

    def expand(self: Any, i: int, queue: Any) -> None:
        if i == 1:
            now[0] = 10.0  # the deadline passes as the second state is expanded
        real(self, i, queue)

    monkeypatch.setattr(explicit_engine.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(explicit_engine._Explorer, "_expand", expand)
    cut = explicit_engine.analyse(system, deadline=5.0)
    assert not cut.complete
    assert cut.reason is not None and cut.reason.startswith("the time limit ran out after ")
    assert cut.depth_done == 0  # the second state, one step deep, was not expanded
    assert 1 < cut.states < whole.states


def test_live_at_stops_when_told_with_what_it_found() -> None:
    from ruleengine.check.explicit import Stopped, decide, live_at
    from ruleengine.check.system import System

    system = System(["a", "b"], [C("b", only_after=["a"], name="gate"), C("a", name="plain")])
    records = next(iter(system.variants(system.initial)))[0]
    outcome = decide(system, records)
    assert live_at(system, records, outcome, {"gate", "plain"}, {}) == {"gate"}
    with pytest.raises(Stopped) as stopped:
        live_at(system, records, outcome, {"gate", "plain"}, {}, lambda: True)
    assert stopped.value.found == set()
