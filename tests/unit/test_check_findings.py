"""The static checker's findings (SPEC §8, §10, §11) on hand-built policies.

Each test pins the whole report: every finding with its exact trace (the lexicographically
smallest shortest one: tools in declared order, statuses ok < error < denied), its core, its
subject, severity, ``min_steps`` and ``depends_on_custom_checks``; and every finding's trace
replays through the runtime reasoner to it (``confirm``). Policies the symbolic engine takes
(strict mode, literal rules) are checked by both engines.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    CycleGuard,
    Monitor,
    Policy,
    PolicyError,
    Reasoner,
    RunState,
    allowed,
    at_most,
    requirement,
)
from ruleengine.check import (
    FINDING_IDS,
    Report,
    TraceStep,
    check,
    check_policy,
    confirm,
    replay,
)
from ruleengine.rules import Emitted

ENGINES = ("explicit", "symbolic")
WARNINGS = {"dead-tool", "dead-requirement", "forced-tie"}

C = ConditionalRequirement


class Row(NamedTuple):
    """A finding as these tests compare it (the message is checked on its own)."""

    id: str
    tool: str | None
    requirement: str | None
    trace: tuple[str, ...]
    core: tuple[tuple[str, int, str], ...]
    depends: bool = False
    min_steps: int | None = None


def rows(report: Report) -> list[Row]:
    return [
        Row(
            f.id,
            f.tool,
            f.requirement,
            tuple(str(s) for s in f.trace),
            tuple((c.requirement, c.priority, c.rule) for c in f.core),
            f.depends_on_custom_checks,
            f.min_steps,
        )
        for f in report.findings
    ]


def level(
    *names: str, types: dict[str, str] | None = None, priorities: dict[str, int] | None = None
) -> tuple[tuple[str, int, str], ...]:
    """A requirement-level core: ``requirement NAME (TYPE)`` entries (conditional, priority
    10, unless said otherwise)."""
    types, priorities = types or {}, priorities or {}
    return tuple(
        (n, priorities.get(n, 10), f"requirement {n} ({types.get(n, 'conditional')})")
        for n in names
    )


def run(tools: list[str], reqs: list[Any], engine: str, **options: Any) -> Report:
    """Check, then replay every finding that does not lean on custom checks."""
    report = check(tools, reqs, engine=engine, **options)  # type: ignore[arg-type]
    reasoner = Reasoner(tools, reqs, mode=options.get("mode", "strict"))
    for f in report.findings:
        assert f.severity == ("warning" if f.id in WARNINGS else "error")
        if not f.depends_on_custom_checks:
            assert confirm(reasoner, f) is None, f
    return report


# -- deadlock ------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_deadlock_with_its_core_and_the_runs_that_cannot_finish(engine: str) -> None:
    reqs = [
        C("a", max_invocations=1, reason="once", name="cap"),
        C("a", min_invocations=2, name="need"),
    ]
    report = run(["a"], reqs, engine)
    assert report.complete and report.reason is None
    assert rows(report) == [
        Row(
            "deadlock",
            None,
            None,
            ("a",),
            (
                ("cap", 10, "Rule('a', allowed=False, reason='once')"),
                ("need", 10, "Rule('a', prevent_stop=True)"),
            ),
        ),
        # `a:error` and `a:denied` count for nobody: the empty run never gets anywhere else.
        Row("no-finish", None, None, (), level("cap", "need")),
        Row("budget", None, None, (), level("cap", "need"), min_steps=None),
    ]
    deadlock = report.findings[0]
    assert "after 1 step" in deadlock.message
    assert "`cap`" in deadlock.message and "`need`" in deadlock.message


@pytest.mark.parametrize("engine", ENGINES)
def test_one_deadlock_finding_for_many_deadlocked_states(engine: str) -> None:
    reqs = [
        C("final_answer", max_invocations=0, reason="never", name="nostop"),
        C("a", max_invocations=1, reason="once", name="a1"),
        C("b", max_invocations=1, reason="once", name="b1"),
    ]
    found = rows(run(["a", "b"], reqs, engine))
    assert found == [
        Row(
            "deadlock",
            None,
            None,
            ("a", "b"),  # not `b, a`: the smaller of the two shortest traces
            (
                ("a1", 10, "Rule('a', allowed=False, reason='once')"),
                ("b1", 10, "Rule('b', allowed=False, reason='once')"),
                ("nostop", 10, "Rule('final_answer', allowed=False, reason='never')"),
            ),
        ),
        Row("no-finish", None, None, (), level("nostop")),
        Row("budget", None, None, (), level("nostop")),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_smallest_trace_takes_error_before_denied(engine: str) -> None:
    # `once` counts every call, `after-a` only successful ones: a failed or refused call of
    # `a` leaves nothing to call, and the witness is the failed one.
    reqs = [
        C("a", max_invocations=1, only_success_invocations=False, reason="once", name="once"),
        C("final_answer", only_after=["a"], reason="a first", name="after-a"),
    ]
    assert rows(run(["a"], reqs, engine)) == [
        Row(
            "deadlock",
            None,
            None,
            ("a:error",),
            (
                ("after-a", 10, "Rule('final_answer', allowed=False, reason='a first')"),
                ("once", 10, "Rule('a', allowed=False, reason='once')"),
            ),
        )
    ]


# -- forced-conflict -------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_hard_force_on_a_denied_target_is_a_forced_conflict_not_a_deadlock(engine: str) -> None:
    reqs = [C("a", force_at_step=1, only_after=["b"], reason="needs b", name="fa")]
    report = run(["a", "b"], reqs, engine)
    assert rows(report) == [
        Row(
            "forced-conflict",
            "a",
            None,
            (),
            (("fa", 10, "Rule('a', allowed=False, reason='needs b')"), ("fa", 10, "forced('a')")),
        ),
        Row("budget", None, None, (), level("fa")),
        Row("dead-tool", "a", None, (), level("fa")),
        Row("dead-tool", "b", None, (), level("fa")),
    ]
    assert "`a`" in report.findings[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_two_clashing_hard_forces_give_one_finding_per_tool(engine: str) -> None:
    reqs = [C("a", force_at_step=1, name="fa"), C("b", force_at_step=1, name="fb")]
    found = rows(run(["a", "b"], reqs, engine))
    both = (("fa", 10, "forced('a')"), ("fb", 10, "forced('b')"))
    assert found[:2] == [
        Row("forced-conflict", "a", None, (), both),
        Row("forced-conflict", "b", None, (), both),
    ]
    assert [r.id for r in found[2:]] == ["budget", "dead-tool", "dead-tool"]


@pytest.mark.parametrize("engine", ENGINES)
def test_forced_conflict_is_reported_once_per_tool_at_its_first_state(engine: str) -> None:
    # `a` is hard-forced at its third counted step and may not follow `b`: every run that
    # calls `b` before that clashes; the finding is the first one, once.
    reqs = [C("a", force_at_step=3, only_before=["b"], reason="before b", name="fa")]
    found = rows(run(["a", "b"], reqs, engine))
    assert found == [
        Row(
            "forced-conflict",
            "a",
            None,
            ("a", "b"),
            (
                ("fa", 10, "Rule('a', allowed=False, reason='before b')"),
                ("fa", 10, "forced('a')"),
            ),
        )
    ]


def test_clashing_hard_forces_in_priority_mode() -> None:
    reqs = [
        C("a", force_at_step=1, priority=3, name="fa"),
        C("c", force_at_step=1, priority=3, name="fc"),
        C("b", force_at_step=1, priority=1, name="fb"),  # overridden by both
    ]
    report = run(["a", "b", "c"], reqs, "explicit", mode="priority")
    reasoner = Reasoner(["a", "b", "c"], reqs, mode="priority")
    conflicts = [f for f in report.findings if f.id == "forced-conflict"]
    assert [f.tool for f in conflicts] == ["a", "c"]
    for f in conflicts:
        assert f"forced({f.tool!r})" in [c.rule for c in f.core]
        with pytest.raises(ConflictError):
            reasoner.resolve([Emitted(c.item, c.requirement, c.priority) for c in f.core])


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_seams_example(engine: str) -> None:
    """The example of the engine seams issue: c3's force lands on a denied target (a
    forced-conflict, not a deadlock), and c0 and c2 leave nothing to call after `t0:error, t1`
    even though c3 also forces `t1` there (the items without the forces already clash)."""
    reqs = [
        C(
            "t1",
            only_after=["t0"],
            min_invocations=2,
            consecutive_allowed=False,
            only_success_invocations=False,
            reason="c0 denies",
            name="c0",
        ),
        C("t0", force_at_step=3, only_before=["t1"], reason="c2 denies", name="c2"),
        C("t1", force_at_step=2, only_before=["t0"], reason="c3 denies", name="c3"),
    ]
    report = run(["t0", "t1"], reqs, engine)
    assert rows(report) == [
        Row(
            "deadlock",
            None,
            None,
            ("t0:error", "t1"),
            (
                ("c0", 10, "Rule('t1', allowed=False, prevent_stop=True, reason='c0 denies')"),
                ("c2", 10, "Rule('t0', allowed=False, reason='c2 denies')"),
            ),
        ),
        Row(
            "forced-conflict",
            "t1",
            None,
            ("t0",),
            (
                ("c3", 10, "Rule('t1', allowed=False, reason='c3 denies')"),
                ("c3", 10, "forced('t1')"),
            ),
        ),
        # c2 only denies `t0` after `t1` succeeded, and every such state conflicts anyway.
        Row("dead-requirement", None, "c2", (), level("c0", "c2", "c3")),
    ]
    # The issue's own trace, decided by the runtime: c2's force on `t0` it denies.
    trace = ["t0", ("t0", "error"), "t1", ("t0", "error"), ("t1", "error")]
    with pytest.raises(ConflictError) as info:
        Reasoner(["t0", "t1"], reqs).decide(RunState.from_trace(trace))
    assert info.value.kind == "forced-conflict"
    assert info.value.forced == ("t0",)
    assert [(c.requirement, c.rule) for c in info.value.core] == [
        ("c2", "Rule('t0', allowed=False, reason='c2 denies')"),
        ("c2", "forced('t0')"),
    ]


# -- no-finish and budget --------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_no_finish_after_the_step_that_closes_the_way_out(engine: str) -> None:
    reqs = [C("b", min_invocations=1, only_before=["a"], name="nb")]
    report = run(["a", "b"], reqs, engine)
    assert rows(report) == [Row("no-finish", None, None, ("a",), level("nb"))]
    assert "after 1 step" in report.findings[0].message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("max_iterations", [1, 2, 3])
def test_budget_counts_steps_before_the_final_answer(engine: str, max_iterations: int) -> None:
    reqs = [C("a", min_invocations=3, name="three")]
    report = run(["a"], reqs, engine, max_iterations=max_iterations)
    assert rows(report) == [Row("budget", None, None, (), level("three"), min_steps=3)]
    message = report.findings[0].message
    assert "3 steps" in message and f"max_iterations={max_iterations}" in message


@pytest.mark.parametrize("engine", ENGINES)
def test_budget_is_met_by_exactly_enough_iterations(engine: str) -> None:
    reqs = [C("a", min_invocations=3, name="three")]
    assert run(["a"], reqs, engine, max_iterations=4).findings == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_budget_min_steps_is_null_when_final_answer_is_never_allowed(engine: str) -> None:
    reqs = [C("final_answer", max_invocations=0, name="never")]
    report = run(["a"], reqs, engine, max_iterations=3)
    assert rows(report) == [
        Row("no-finish", None, None, (), level("never")),
        Row("budget", None, None, (), level("never"), min_steps=None),
    ]
    # `final_answer` is allowed nowhere, yet it is never a dead tool (SPEC §11).
    assert "never allowed" in report.findings[1].message


# -- dead-tool ---------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_dead_tools_need_both_requirements(engine: str) -> None:
    reqs = [C("a", only_after=["b"], name="ab"), C("b", only_after=["a"], name="ba")]
    report = run(["a", "b"], reqs, engine)
    assert rows(report) == [
        Row("dead-tool", "a", None, (), level("ab", "ba")),
        Row("dead-tool", "b", None, (), level("ab", "ba")),
    ]
    assert all(f.trace == () for f in report.findings)


def test_a_formula_can_leave_a_tool_dead() -> None:
    """A user requirement with a monitor emitting a general formula (explicit engine only):
    the lexicographically most permissive pass keeps `a` and gives up `b`."""
    items = [at_most(1, allowed("a"), allowed("b"))]

    class Always(Monitor):
        def initial(self) -> int:
            return 0

        def advance(self, view: object, tool: str, status: str) -> int:  # type: ignore[override]
            return 0

        def emit(self, view: object, checks: tuple[bool, ...] = ()) -> list[Any]:
            return items

    @requirement(name="one-of", monitor=Always())
    def one_of(state: RunState) -> list[Any]:
        return items

    report = run(["a", "b"], [one_of], "auto")
    assert rows(report) == [
        Row("dead-tool", "b", None, (), level("one-of", types={"one-of": "FunctionRequirement"}))
    ]
    with pytest.raises(PolicyError, match="symbolic engine"):
        check(["a", "b"], [one_of], engine="symbolic")


# -- dead-requirement --------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_dead_requirement_core_names_what_makes_it_dead(engine: str) -> None:
    reqs = [C("a", max_invocations=1, name="cap1"), C("a", max_invocations=5, name="cap5")]
    report = run(["a"], reqs, engine)
    assert rows(report) == [Row("dead-requirement", None, "cap5", (), level("cap1", "cap5"))]
    assert "`cap5`" in report.findings[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_ask_permission_is_live_when_a_covered_tool_is_allowed(engine: str) -> None:
    # It emits nothing (no remembered choices): its effect is at the gate.
    assert run(["a", "b"], [AskPermissionRequirement(["a"], name="ask")], engine).findings == ()
    remember = AskPermissionRequirement(
        ["a"], remember_choices=True, hide_disallowed=True, name="ask"
    )
    assert run(["a"], [remember], engine).findings == ()


@pytest.mark.parametrize("engine", ENGINES)
def test_ask_permission_about_a_dead_tool_is_dead(engine: str) -> None:
    reqs = [C("a", max_invocations=0, name="cap0"), AskPermissionRequirement(["a"], name="ask")]
    assert rows(run(["a", "b"], reqs, engine)) == [
        Row("dead-tool", "a", None, (), level("cap0")),
        Row(
            "dead-requirement",
            None,
            "ask",
            (),
            level("ask", "cap0", types={"ask": "ask_permission"}),
        ),
    ]


def test_remembered_permissions_over_many_tools_are_checked_completely() -> None:
    # 14 covered tools remember an answer each: 3**14 views as one monitor, far past the
    # tabulation bound; as 14 independent factors, 14 * 3 (the symbolic engine; the product
    # of the factors is still millions of states for the explicit one). A refusal is
    # remembered, and `t1` needs a successful `t0` first: after `t0:denied`, `t1` is never
    # allowed again and the run cannot finish. The requirement-level core is smaller than
    # that story: remembering a refusal of `t1` itself is enough for no-finish to exist.
    engine = "symbolic"
    tools = [f"t{i}" for i in range(14)]
    reqs = [
        AskPermissionRequirement(tools, remember_choices=True, name="ask"),
        C("t1", only_after=["t0"], name="t1-after-t0"),
        C("t1", min_invocations=1, name="need-t1"),
    ]
    report = run(tools, reqs, engine)
    assert report.complete
    [no_finish] = [f for f in report.findings if f.id == "no-finish"]
    assert [str(s) for s in no_finish.trace] == ["t0:denied"]
    assert [c.requirement for c in no_finish.core] == ["ask", "need-t1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_ask_permission_about_final_answer_only_is_dead(engine: str) -> None:
    reqs = [AskPermissionRequirement(["final_answer"], name="ask")]
    assert rows(run(["a"], reqs, engine)) == [
        Row("dead-requirement", None, "ask", (), level("ask", types={"ask": "ask_permission"}))
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_disabled_requirements_are_ignored(engine: str) -> None:
    off = C("a", max_invocations=0, name="off", enabled=False)
    assert run(["a"], [off], engine).findings == ()
    # ... and never part of a core, nor dead themselves.
    reqs = [off, C("a", max_invocations=1, name="cap1"), C("a", max_invocations=5, name="cap5")]
    assert rows(run(["a"], reqs, engine)) == [
        Row("dead-requirement", None, "cap5", (), level("cap1", "cap5"))
    ]


# -- forced-tie --------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_forced_tie_cites_the_tied_forcing_rules(engine: str) -> None:
    reqs = [C("a", force_after=["c"], name="fa"), C("b", force_after=["c"], name="fb")]
    report = run(["a", "b", "c"], reqs, engine)
    assert rows(report) == [
        # `a` always wins the tie, so `fb` never changes a pass.
        Row("dead-requirement", None, "fb", (), level("fa", "fb")),
        Row(
            "forced-tie",
            None,
            None,
            ("c",),
            (
                ("fa", 10, "Rule('a', forced=True, prevent_stop=True)"),
                ("fb", 10, "Rule('b', forced=True, prevent_stop=True)"),
            ),
        ),
    ]
    assert "`a` wins" in report.findings[1].message


@pytest.mark.parametrize("engine", ENGINES)
def test_no_tie_between_different_priorities(engine: str) -> None:
    reqs = [
        C("a", force_after=["c"], priority=20, name="fa"),
        C("b", force_after=["c"], name="fb"),
    ]
    assert [f.id for f in run(["a", "b", "c"], reqs, engine).findings] == ["dead-requirement"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tie_under_every_check_value_does_not_depend_on_the_checks(engine: str) -> None:
    # The cycle guard's window leaves part of the history opaque: after `c` the state emits
    # two sets of records, and both tie `a` and `b`. Found by the engines' agreement law:
    # the explicit engine said the tie depended on the checks because there were two.
    plain = {
        "force_prevent_stop": False,
        "only_success_invocations": False,
        "consecutive_allowed": False,
        "priority": 1,
    }
    reqs = [
        C("a", force_after=["b", "c"], name="r0", **plain),
        C("b", force_after=["a", "c"], name="r1", **plain),
        CycleGuard(max_strike_length=1, max_total_occurrences=1, window_size=1, name="r2"),
    ]
    report = check(["a", "b", "c"], reqs, max_iterations=1, engine=engine)
    [tie] = [f for f in report.findings if f.id == "forced-tie"]
    assert [(s.tool, s.status) for s in tie.trace] == [("c", "ok")]
    assert not tie.depends_on_custom_checks


# -- custom checks -----------------------------------------------------------------------------


def always(state: RunState) -> bool:
    return True


@pytest.mark.parametrize("engine", ENGINES)
def test_findings_that_need_a_custom_check_say_so(engine: str) -> None:
    reqs = [
        C("a", custom_checks=[always], reason="check failed", name="checked"),
        C("a", min_invocations=1, name="must"),
        C("b", max_invocations=0, reason="no b", name="no-b"),
    ]
    found = rows(run(["a", "b"], reqs, engine))
    assert found == [
        Row(
            "deadlock",
            None,
            None,
            (),
            (
                ("checked", 10, "Rule('a', allowed=False, reason='check failed')"),
                ("must", 10, "Rule('a', prevent_stop=True)"),
                ("no-b", 10, "Rule('b', allowed=False, reason='no b')"),
            ),
            depends=True,
        ),
        Row("dead-tool", "b", None, (), level("no-b")),
    ]


def test_cycle_guard_policies_are_checked_by_the_explicit_engine() -> None:
    # The guard yields rather than deadlock: after `a, a` it can deny `a` (live), earlier
    # its deny would leave nothing to call and it gives way.
    reqs = [CycleGuard(name="guard"), C("a", min_invocations=2, name="need")]
    assert run(["a"], reqs, "explicit").findings == ()
    # Here it only ever denies `a` where `a` is denied anyway, or gives way: dead whatever its
    # opaque "is cycling" check answers (a "never" verdict holds for every check value).
    reqs = [CycleGuard(name="guard"), C("a", min_invocations=1, consecutive_allowed=False)]
    report = run(["a"], reqs, "explicit")
    assert rows(report) == [
        Row(
            "dead-requirement",
            None,
            "guard",
            (),
            level(
                "conditional(a)", "guard", types={"guard": "cycle_guard"}, priorities={"guard": 1}
            ),
            depends=False,
        )
    ]


@pytest.mark.parametrize("engine", ["auto", "symbolic"])
def test_cycle_guard_with_a_hard_force_under_the_default_engine(engine: str) -> None:
    reqs = [CycleGuard(name="guard"), C("a", force_at_step=2, name="fa")]
    assert check(["a"], reqs, engine=engine).findings == ()  # type: ignore[arg-type]


def test_engines_agree_on_a_guard_that_only_yields() -> None:
    reqs = [
        CycleGuard(name="guard"),
        C("a", min_invocations=1, consecutive_allowed=False, custom_checks=[always], name="c"),
    ]
    explicit = check(["a"], reqs, engine="explicit").model_dump(mode="json")
    symbolic = check(["a"], reqs, engine="symbolic").model_dump(mode="json")
    explicit.pop("stats"), symbolic.pop("stats")
    assert explicit == symbolic


@pytest.mark.parametrize(
    "reqs",
    [
        [
            C(
                "a",
                force_at_step=3,
                only_success_invocations=False,
                consecutive_allowed=False,
                custom_checks=[always],
                name="fa",
            )
        ],
        [
            C(
                "b",
                force_at_step=4,
                only_success_invocations=False,
                consecutive_allowed=False,
                name="fb",
            ),
            CycleGuard(name="guard"),
        ],
    ],
    ids=["custom-check", "cycle-guard"],
)
def test_engines_agree_on_witnesses_through_opaque_checks(reqs: list[Any]) -> None:
    explicit = check(["a", "b"], reqs, engine="explicit")
    symbolic = check(["a", "b"], reqs, engine="symbolic")
    assert rows(explicit) == rows(symbolic)


@pytest.mark.parametrize("engine", ENGINES)
def test_no_finish_through_a_custom_check_says_so(engine: str) -> None:
    def never(state: RunState) -> bool:
        return False

    reqs = [
        C("a", min_invocations=2, consecutive_allowed=False, only_success_invocations=False),
        C("a", custom_checks=[never], name="checked"),
    ]
    report = check(["a"], reqs, engine=engine)  # type: ignore[arg-type]
    reasoner = Reasoner(["a"], reqs)
    for f in report.findings:
        assert f.depends_on_custom_checks or confirm(reasoner, f) is None, f


# -- the report as data ------------------------------------------------------------------------

FINDING_KEYS = {
    "id",
    "severity",
    "tool",
    "requirement",
    "message",
    "trace",
    "core",
    "depends_on_custom_checks",
}


def test_report_json_is_exactly_spec_shape() -> None:
    reqs = [
        C("a", max_invocations=1, reason="once", name="cap"),
        C("a", min_invocations=2, name="need"),
        C("b", max_invocations=0, reason="no b", name="no-b"),
    ]
    report = check(["a", "b"], reqs, name="policy.toml", max_iterations=3)
    data = report.model_dump(mode="json")
    assert json.loads(report.model_dump_json()) == data
    assert set(data) == {"policy", "complete", "findings", "stats"}  # no reason: complete
    assert data["policy"] == "policy.toml" and data["complete"] is True
    assert set(data["stats"]) == {"states", "seconds"}
    assert isinstance(data["stats"]["states"], int) and data["stats"]["states"] >= 1
    assert [f["id"] for f in data["findings"]] == ["deadlock", "no-finish", "budget", "dead-tool"]
    for f in data["findings"]:
        keys = FINDING_KEYS | ({"min_steps"} if f["id"] == "budget" else set())
        assert set(f) == keys
        for step in f["trace"]:
            assert set(step) == {"tool", "status"}
        for entry in f["core"]:
            assert set(entry) == {"requirement", "priority", "rule"}
            assert isinstance(entry["priority"], int)
    deadlock, _, budget, dead = data["findings"]
    assert deadlock == {
        "id": "deadlock",
        "severity": "error",
        "tool": None,
        "requirement": None,
        "message": deadlock["message"],
        "trace": [{"tool": "a", "status": "ok"}],
        "core": [
            {
                "requirement": "cap",
                "priority": 10,
                "rule": "Rule('a', allowed=False, reason='once')",
            },
            {"requirement": "need", "priority": 10, "rule": "Rule('a', prevent_stop=True)"},
            {
                "requirement": "no-b",
                "priority": 10,
                "rule": "Rule('b', allowed=False, reason='no b')",
            },
        ],
        "depends_on_custom_checks": False,
    }
    assert budget["min_steps"] is None and budget["trace"] == []
    assert dead["tool"] == "b" and dead["severity"] == "warning"
    assert dead["core"] == [
        {"requirement": "no-b", "priority": 10, "rule": "requirement no-b (conditional)"}
    ]


def test_budget_json_carries_min_steps() -> None:
    data = check(["a"], [C("a", min_invocations=3, name="t")], max_iterations=2).model_dump(
        mode="json"
    )
    assert data["findings"][0]["min_steps"] == 3


def test_findings_come_in_spec_order_with_subjects_in_declared_order() -> None:
    reqs = [
        C("z", max_invocations=0, name="no-z"),
        C("a", max_invocations=0, name="no-a"),
        C("a", max_invocations=3, name="cap3"),
        C("y", force_at_step=1, only_after=["z"], name="fy"),
    ]
    report = check(["z", "y", "a"], reqs)
    ids = [f.id for f in report.findings]
    assert ids == sorted(ids, key=FINDING_IDS.index)
    assert [f.tool for f in report.findings if f.id == "dead-tool"] == ["z", "y", "a"]
    subjects = [(f.id, f.tool, f.requirement) for f in report.findings]
    assert len(subjects) == len(set(subjects))


def test_policy_check_is_check_policy_is_check() -> None:
    reqs = [C("a", max_invocations=1, name="cap1"), C("a", max_invocations=5, name="cap5")]
    policy = Policy(["a", "b"], reqs, max_iterations=7)
    by_policy = policy.check().model_dump(mode="json")
    by_function = check_policy(policy).model_dump(mode="json")
    direct = check(["a", "b"], reqs, max_iterations=7).model_dump(mode="json")
    for data in (by_policy, by_function, direct):
        data.pop("stats")
    assert by_policy == by_function == direct
    budget = check_policy(policy, max_iterations=1)
    assert [f.id for f in budget.findings] == ["dead-requirement"]
    tight = check_policy(Policy(["a"], [C("a", min_invocations=1)]), max_iterations=1)
    assert [(f.id, f.min_steps) for f in tight.findings] == [("budget", 1)]


def test_a_policy_checks_like_its_requirements() -> None:
    ask = AskPermissionRequirement(exclude=["a", "b"], remember_choices=True, name="ask")
    direct = check(["a", "b"], [ask])
    by_policy = Policy(["a", "b"], [ask]).check()
    assert rows(by_policy) == rows(direct)


# -- replay and confirm ------------------------------------------------------------------------


def test_replay_decides_before_every_step_and_after_the_last() -> None:
    reqs = [C("a", max_invocations=1, reason="once", name="cap")]
    report = check(["a", "b"], [*reqs, C("final_answer", max_invocations=0, name="nostop")])
    [deadlock, *_] = report.findings
    outcomes = replay(Reasoner(["a", "b"], reqs), deadlock.trace)
    assert len(outcomes) == len(deadlock.trace) + 1
    assert all(not isinstance(o, ConflictError) for o in outcomes)


def test_confirm_says_why_a_finding_does_not_replay() -> None:
    reqs = [C("a", max_invocations=1, reason="once", name="cap"), C("a", min_invocations=2)]
    reasoner = Reasoner(["a"], reqs)
    deadlock, _, budget = check(["a"], reqs, max_iterations=3).findings
    assert (deadlock.id, budget.id) == ("deadlock", "budget")
    assert confirm(reasoner, deadlock) is None and confirm(reasoner, budget) is None
    a = TraceStep(tool="a")
    twice = deadlock.model_copy(update={"trace": (a, a)})
    assert "conflicts" in (confirm(reasoner, twice) or "")
    early = deadlock.model_copy(update={"trace": ()})
    assert "does not deadlock" in (confirm(reasoner, early) or "")
    assert confirm(reasoner, budget.model_copy(update={"trace": (a,)})) is not None


def test_at_or_above_picks_errors_or_everything() -> None:
    reqs = [C("a", max_invocations=0, name="no-a"), C("b", min_invocations=3, name="three")]
    report = check(["a", "b"], reqs, max_iterations=2)
    assert [f.id for f in report.findings] == ["budget", "dead-tool"]
    assert [f.id for f in report.at_or_above("error")] == ["budget"]
    assert report.at_or_above("warning") == report.findings
