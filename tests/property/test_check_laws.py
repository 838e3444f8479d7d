"""Laws of the static checker, on small random policies (STYLE §7, SPEC §8/§11, issue 9 item 5).

(1) every trace replays through ``Reasoner.decide`` to its finding; (2) the explicit and the
symbolic engines give the same report; (3) a plain bounded enumeration of concrete histories,
written here (no abstraction, no reduction), agrees with the checker on everything visible
within its depth; (4) requirement-level cores satisfy their definition; (5) conflict cores are
minimal unsat sets at the witness's last state, and a tie's core is the tied forcing rules;
(6) a ``diff`` trace replays to a difference, and an equivalence holds on every short history.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any
from unittest.mock import patch

from hypothesis import given, note
from hypothesis import strategies as st
from policy_strategies import CycleParams, PolicyCase, ReqSpec, policies
from requirement_strategies import Check, CondParams

from ruleengine import FINAL_ANSWER, ConflictError, Pass, Reasoner, Requirement, RunState
from ruleengine.check import FINDING_IDS, Finding, Report, check, confirm, diff, properties
from ruleengine.check import symbolic as symbolic_engine
from ruleengine.check.symbolic import supports
from ruleengine.check.system import System
from ruleengine.rules import Emitted

STATUSES = ("ok", "error", "denied")
WARNINGS = {"dead-tool", "dead-requirement", "forced-tie"}
REQUIREMENT_LEVEL = {"no-finish", "budget", "dead-tool", "dead-requirement"}
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

Event = tuple[str, str]
Outcome = Pass | ConflictError


def checked(
    case: PolicyCase, engine: str | None = None, reqs: Sequence[Any] | None = None
) -> Report:
    note(case.source())
    return check(
        list(case.tools),
        list(case.requirements() if reqs is None else reqs),
        engine=engine or "auto",  # type: ignore[arg-type]
        **case.kwargs(),
    )


def reasoner_of(case: PolicyCase, reqs: Sequence[Requirement] | None = None) -> Reasoner:
    return Reasoner(
        list(case.tools),
        list(case.requirements() if reqs is None else reqs),
        mode=case.mode,  # type: ignore[arg-type]
    )


def decide(reasoner: Reasoner, trace: Sequence[Event]) -> Outcome:
    try:
        return reasoner.decide(RunState.from_trace(list(trace)))
    except ConflictError as exc:
        return exc


def trace_of(f: Finding) -> tuple[Event, ...]:
    return tuple((s.tool, s.status) for s in f.trace)


def subject(f: Finding) -> tuple[str, str | None, str | None]:
    return (f.id, f.tool, f.requirement)


# -- (1) replay ----------------------------------------------------------------------------


@given(case=policies())
def test_every_trace_replays_to_its_finding(case: PolicyCase) -> None:
    report = checked(case)
    reasoner = reasoner_of(case)
    subjects = [subject(f) for f in report.findings]
    assert len(subjects) == len(set(subjects)), "a finding twice for one subject"
    ids = [f.id for f in report.findings]
    assert ids == sorted(ids, key=FINDING_IDS.index)
    for f in report.findings:
        note(repr(f))
        data = f.model_dump(mode="json")
        assert set(data) == FINDING_KEYS | ({"min_steps"} if f.id == "budget" else set())
        assert f.severity == ("warning" if f.id in WARNINGS else "error")
        assert (f.tool is not None) == (f.id in ("dead-tool", "forced-conflict"))
        assert (f.requirement is not None) == (f.id == "dead-requirement")
        assert f.core, "every finding cites its reasons"
        if f.id in ("budget", "dead-tool", "dead-requirement"):
            assert f.trace == ()
        if not report.complete:
            assert f.id not in ("no-finish", "dead-tool", "dead-requirement")
        if not case.opaque:
            assert not f.depends_on_custom_checks
        if not f.depends_on_custom_checks:
            assert confirm(reasoner, f) is None


# -- (2) the two engines agree -------------------------------------------------------------


def comparable(a: Report, b: Report) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two reports without their stats (the engines count states differently)."""
    left, right = a.model_dump(mode="json"), b.model_dump(mode="json")
    left.pop("stats"), right.pop("stats")
    return left, right


def symbolic_applies(case: PolicyCase) -> bool:
    note(case.source())
    system = System(list(case.tools), case.requirements(), mode=case.mode)  # type: ignore[arg-type]
    return supports(system) is None


@given(case=policies())
def test_explicit_and_symbolic_engines_agree(case: PolicyCase) -> None:
    if not symbolic_applies(case):
        return
    by_explicit = checked(case, "explicit")
    explicit, symbolic = comparable(by_explicit, checked(case, "symbolic"))
    assert explicit == symbolic
    # `auto`: the explicit engine for a small whole policy, the symbolic one for the rest.
    auto, _ = comparable(checked(case, "auto"), by_explicit)
    assert auto == explicit


@st.composite
def guarded_policies(draw: st.DrawFn) -> PolicyCase:
    """A strict-mode policy with two or three cycle guards besides its other requirements."""
    case = draw(policies(priority=False, user=False, cycle=False))
    guards = draw(
        st.lists(
            st.builds(CycleParams, st.integers(1, 3), st.integers(1, 3), st.integers(1, 4)),
            min_size=2,
            max_size=3,
        )
    )
    specs = (*case.specs, *(ReqSpec(f"g{i}", p) for i, p in enumerate(guards)))
    return PolicyCase(case.tools, specs, case.mode, case.max_iterations)


@given(case=guarded_policies())
def test_the_engines_agree_with_several_cycle_guards(case: PolicyCase) -> None:
    # They give way together: where a step's rules clash with any of them, the runtime
    # drops each in turn (every core holds one, as they deny the same tool), and the
    # symbolic engine takes the pass without them all, read over one guard's view bits.
    assert symbolic_applies(case)
    explicit, symbolic = comparable(checked(case, "explicit"), checked(case, "symbolic"))
    assert explicit == symbolic


@given(case=policies())
def test_the_engines_agree_when_they_answer_every_core_question(case: PolicyCase) -> None:
    # On small policies the core questions' short explicit searches settle most of them;
    # here they see the first state only, so the engine answers each, and a pool's growth
    # looks for the history refuting it with its longer search (`REFUTE_STATES`) once the
    # engine finds it refuted. Which engine answered must change no core.
    if not symbolic_applies(case):
        return
    with patch.object(properties, "QUICK_STATES", 1):
        explicit, symbolic = comparable(checked(case, "explicit"), checked(case, "symbolic"))
    assert explicit == symbolic


@given(case=policies())
def test_the_symbolic_engine_finds_the_same_witnesses_by_preimages(case: PolicyCase) -> None:
    # Few states: its witnesses come from a search of concrete states; here, from the
    # preimages of the layers (what it does with many states) — the same traces.
    if not symbolic_applies(case):
        return
    by_states, by_preimages = _symbolic_with(case, "WITNESS_STATES", 0)
    assert by_states == by_preimages


@given(case=policies())
def test_the_symbolic_engine_reports_the_same_after_sifting(case: PolicyCase) -> None:
    # Past SIFT_NODES nodes of a reachable set the variables are sifted once; here every
    # analysis sifts at its first chance. The order changes the BDDs' shapes, never a result.
    if not symbolic_applies(case):
        return
    static, sifted = _symbolic_with(case, "SIFT_NODES", 0)
    assert static == sifted


@given(case=policies())
def test_the_symbolic_engine_reports_the_same_when_its_sweeps_are_dropped(
    case: PolicyCase,
) -> None:
    # A sweep after the first that grows the reachable set's diagram past SWEEP_GROWTH
    # times drops the sweeps' states and restarts the event-driven search from the start;
    # here every second sweep does. The search's course changes, never a result.
    if not symbolic_applies(case):
        return
    swept, dropped = _symbolic_with(case, "SWEEP_GROWTH", -1)
    assert swept == dropped


@given(case=policies())
def test_the_symbolic_engine_reports_the_same_under_dynamic_reordering(case: PolicyCase) -> None:
    # Dynamic reordering is on only past GLOBAL_BITS bits of global views, and then the
    # reachable-set search takes its clusters bottom up (by the levels reordering left).
    # Here every analysis reorders and chains bottom up: the order of the variables and of
    # the steps changes the BDDs' shapes and the search's course, never a result.
    if not symbolic_applies(case):
        return
    with patch.object(symbolic_engine, "GLOBAL_BITS", -1):
        reordered = checked(case, "symbolic")
    static, dynamic = comparable(checked(case, "symbolic"), reordered)
    assert static == dynamic


def _symbolic_with(
    case: PolicyCase, constant: str, value: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The symbolic engine's report as it is, and with one of its tuning constants set to
    ``value`` (``comparable``)."""
    with patch.object(symbolic_engine, constant, value):
        tuned = checked(case, "symbolic")
    return comparable(checked(case, "symbolic"), tuned)


# -- (3) a plain bounded enumeration -------------------------------------------------------


@dataclass
class Bounded:
    """What every history of at most ``depth`` steps shows, found by deciding each one."""

    depth: int
    deadlock: tuple[Event, ...] | None = None
    forced: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    tie: tuple[Event, ...] | None = None
    finish: int | None = None
    allowed: set[str] = field(default_factory=set)
    live: set[str] = field(default_factory=set)


def same_pass(a: Outcome, b: Outcome) -> bool:
    """Whether two decisions agree on what SPEC §8 compares (reasons and cores aside)."""
    if isinstance(a, ConflictError) or isinstance(b, ConflictError):
        return isinstance(a, ConflictError) and isinstance(b, ConflictError)
    return all(getattr(a, f) == getattr(b, f) for f in ("allowed", "hidden", "forced", "can_stop"))


def enumerate_histories(case: PolicyCase, depth: int) -> Bounded:
    """Breadth-first over every history (steps: allowed tools × ok/error/denied), in
    lexicographic order (declared tools, then ok < error < denied), so the first history
    found with a property is the smallest shortest one. Each requirement is live when
    dropping it changes some history's pass, or, asking permission, when a tool it covers
    is allowed."""
    reqs = case.requirements()
    full = reasoner_of(case, reqs)
    enabled = [s.name for s in case.specs if s.enabled]
    without = {n: reasoner_of(case, [r for r in reqs if r.name != n]) for n in enabled}
    asks = {r.name: r for r in full.requirements if hasattr(r, "covers") and r.enabled}
    out = Bounded(depth)
    layer: list[tuple[Event, ...]] = [()]
    for d in range(depth + 1):
        deeper: list[tuple[Event, ...]] = []
        for trace in layer:
            outcome = decide(full, trace)
            for name in enabled:
                if name in out.live:
                    continue
                ask = asks.get(name)
                if (
                    ask is not None
                    and isinstance(outcome, Pass)
                    and any(ask.covers(t) for t in outcome.allowed)  # type: ignore[attr-defined]
                ):
                    out.live.add(name)
                    continue
                if not same_pass(outcome, decide(without[name], trace)):
                    out.live.add(name)
            if isinstance(outcome, ConflictError):
                if outcome.kind == "deadlock":
                    out.deadlock = trace if out.deadlock is None else out.deadlock
                for t in outcome.forced:
                    out.forced.setdefault(t, trace)
                continue
            out.allowed |= set(outcome.allowed)
            if outcome.can_stop and out.finish is None:
                out.finish = d
            if outcome.forced_tie is not None and out.tie is None:
                out.tie = trace
            if d < depth:
                for t in full.tools:
                    if t != FINAL_ANSWER and t in outcome.allowed:
                        deeper += [(*trace, (t, s)) for s in STATUSES]
        layer = deeper
    return out


def radius(case: PolicyCase, limit: int) -> int | None:
    """How many steps reach every reachable combination of the requirements' monitor views
    (None: more than ``limit``). Within that many steps the enumeration meets every state
    the policy can be in, so "never" verdicts can be compared."""
    reasoner = reasoner_of(case)
    monitors = [r.monitor() for r in reasoner.requirements if r.enabled]

    def key(trace: tuple[Event, ...]) -> tuple[Hashable, ...]:
        state = RunState.from_trace(list(trace))
        return tuple(m.view_of(state) for m in monitors)

    seen = {key(())}
    layer: list[tuple[Event, ...]] = [()]
    depth = 0
    while layer:
        deeper = []
        for trace in layer:
            outcome = decide(reasoner, trace)
            if isinstance(outcome, ConflictError):
                continue
            for t in reasoner.tools:
                if t == FINAL_ANSWER or t not in outcome.allowed:
                    continue
                for s in STATUSES:
                    longer = (*trace, (t, s))
                    k = key(longer)
                    if k not in seen:
                        seen.add(k)
                        deeper.append(longer)
        if deeper:
            depth += 1
            if depth > limit:
                return None
        layer = deeper
    return depth


def finishes_within(reasoner: Reasoner, trace: tuple[Event, ...], steps: int) -> bool:
    """Whether some history of at most ``steps`` more steps after ``trace`` may stop."""
    outcome = decide(reasoner, trace)
    if isinstance(outcome, ConflictError):
        return False
    if outcome.can_stop:
        return True
    return steps > 0 and any(
        finishes_within(reasoner, (*trace, (t, s)), steps - 1)
        for t in outcome.allowed
        if t != FINAL_ANSWER
        for s in STATUSES
    )


small_policies = policies(
    max_tools=3, max_requirements=4, opaque=False, small=True, max_iterations=(1, 4)
)


@given(case=small_policies, engine=st.sampled_from(["explicit", "auto"]))
def test_bounded_enumeration_agrees_with_the_checker(case: PolicyCase, engine: str) -> None:
    depth = 4 if len(case.tools) <= 2 else 3
    report = checked(case, engine)
    assert report.complete
    seen = enumerate_histories(case, depth)
    note(f"enumeration to depth {depth}: {seen}")
    by_id: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_id.setdefault(f.id, []).append(f)

    def agrees(found: list[Finding], witness: tuple[Event, ...] | None) -> None:
        if witness is not None:
            assert [trace_of(f) for f in found] == [witness]
        else:
            assert all(len(f.trace) > depth for f in found)

    agrees(by_id.get("deadlock", []), seen.deadlock)
    agrees(by_id.get("forced-tie", []), seen.tie)
    forced = {f.tool: f for f in by_id.get("forced-conflict", [])}
    for tool in (*case.tools, FINAL_ANSWER):
        agrees([forced[tool]] if tool in forced else [], seen.forced.get(tool))
    budget = by_id.get("budget", [])
    last = case.max_iterations - 1  # the deepest state before the final answer
    if seen.finish is not None and seen.finish <= last:
        assert budget == []
    elif seen.finish is not None:
        assert [f.min_steps for f in budget] == [seen.finish]
    else:
        assert last > depth or budget, "no final answer within max_iterations - 1 steps"
        assert all(f.min_steps is None or f.min_steps > depth for f in budget)
    reasoner = reasoner_of(case)
    for f in by_id.get("no-finish", []):
        assert not finishes_within(reasoner, trace_of(f), 2)
    if radius(case, depth - 1) is not None:
        # Every reachable state is met within the depth: "never" can be compared too.
        dead = {f.tool for f in by_id.get("dead-tool", [])}
        assert dead == {t for t in case.tools if t not in seen.allowed}
        dead_requirements = {f.requirement for f in by_id.get("dead-requirement", [])}
        assert dead_requirements == {s.name for s in case.specs if s.enabled} - seen.live


# -- (4) requirement-level cores ------------------------------------------------------------


@given(case=policies(max_requirements=4))
def test_requirement_level_cores_are_minimal_and_sufficient(case: PolicyCase) -> None:
    report = checked(case)
    if not report.complete:
        return
    reqs = {r.name: r for r in case.requirements()}
    for f in report.findings:
        if f.id not in REQUIREMENT_LEVEL:
            continue
        note(repr(f))
        names = [c.requirement for c in f.core]
        assert len(names) == len(set(names))
        for c in f.core:
            assert c.rule.startswith(f"requirement {c.requirement} (")
            assert c.priority == reqs[c.requirement].priority
            assert reqs[c.requirement].enabled
        if f.id == "dead-requirement":
            assert f.requirement in names
        kept = [reqs[n] for n in names]
        assert subject(f) in {subject(g) for g in checked(case, reqs=kept).findings}
        for name in names:
            if name == f.requirement:
                continue
            fewer = [r for r in kept if r.name != name]
            assert subject(f) not in {subject(g) for g in checked(case, reqs=fewer).findings}, (
                f"the finding holds without `{name}`"
            )


# -- (5) conflict cores --------------------------------------------------------------------


def emitted_of(entries: Sequence[Any]) -> list[Emitted]:
    return [Emitted(c.item, c.requirement, c.priority) for c in entries]


def conflicts(reasoner: Reasoner, records: Sequence[Emitted]) -> bool:
    try:
        reasoner.resolve(list(records))
    except ConflictError:
        return True
    return False


@given(case=policies(opaque=False))
def test_conflict_cores_are_minimal_at_the_last_state(case: PolicyCase) -> None:
    report = checked(case)
    reasoner = reasoner_of(case)
    for f in report.findings:
        if f.id not in ("deadlock", "forced-conflict", "forced-tie"):
            continue
        note(repr(f))
        state = RunState.from_trace(list(trace_of(f)))
        records = reasoner.emit(state)
        core = emitted_of(f.core)
        assert set(core) <= set(records), "the core cites what the last state emits"
        if f.id == "forced-tie":
            tie = reasoner.decide(state).forced_tie
            assert tie is not None
            assert [(c.requirement, c.rule) for c in f.core] == [
                (c.requirement, c.rule) for c in tie.rules
            ]
            continue
        if f.id == "forced-conflict":
            assert f"forced({f.tool!r})" in [c.rule for c in f.core]
        assert conflicts(reasoner, core), "the core is satisfiable"
        for e in core:
            assert not conflicts(reasoner, [x for x in core if x != e]), f"{e} is not needed"


# -- (6) diff --------------------------------------------------------------------------------


@st.composite
def policy_pairs(draw: st.DrawFn) -> tuple[PolicyCase, PolicyCase]:
    """A small policy and the same one with a requirement dropped, or in the other mode."""
    old = draw(policies(max_tools=2, max_requirements=3, opaque=False, small=True))
    if draw(st.booleans()) and len(old.specs) > 1:
        i = draw(st.integers(0, len(old.specs) - 1))
        new = PolicyCase(old.tools, old.specs[:i] + old.specs[i + 1 :], old.mode)
    else:
        new = PolicyCase(old.tools, old.specs, "priority" if old.mode == "strict" else "strict")
    return old, new


def key_of(outcome: Outcome) -> tuple[Any, ...]:
    if isinstance(outcome, ConflictError):
        return ("conflict",)
    return (set(outcome.allowed), set(outcome.hidden), outcome.forced, outcome.can_stop)


@st.composite
def opaque_policy_pairs(draw: st.DrawFn) -> tuple[PolicyCase, PolicyCase]:
    """A small policy with custom checks or cycle guards, and a mutant of it: a requirement
    dropped, the other mode, a guard's thresholds or a check changed, or the same policy."""
    old = draw(policies(max_tools=2, max_requirements=3, opaque=True, small=True))
    specs = list(old.specs)
    i = draw(st.integers(0, len(specs) - 1))
    change = draw(st.sampled_from(["drop", "mode", "retune", "same"]))
    if change == "drop" and len(specs) > 1:
        del specs[i]
    elif change == "mode":
        return old, PolicyCase(
            old.tools, old.specs, "priority" if old.mode == "strict" else "strict"
        )
    elif change == "retune":
        p = specs[i].params
        if isinstance(p, CycleParams):
            specs[i] = ReqSpec(
                specs[i].name,
                CycleParams(p.max_strike_length % 2 + 1, p.max_total_occurrences, p.window_size),
                specs[i].enabled,
            )
        elif isinstance(p, CondParams) and p.checks:
            first = p.checks[0]
            retuned = Check(first.offset + 1, first.modulus)
            specs[i] = ReqSpec(
                specs[i].name,
                CondParams(**{**p.__dict__, "checks": (retuned, *p.checks[1:])}),
                specs[i].enabled,
            )
    return old, PolicyCase(old.tools, tuple(specs), old.mode)


@given(pair=opaque_policy_pairs())
def test_diff_with_opaque_parts_claims_only_what_replays(
    pair: tuple[PolicyCase, PolicyCase],
) -> None:
    # A difference replays through both runtimes; a proof holds on every history up to three
    # steps; anything else says it is not a proof, and why.
    old, new = pair
    note(f"old:\n{old.source()}\nnew:\n{new.source()}")
    report = diff(
        (list(old.tools), old.requirements(), old.mode),  # type: ignore[arg-type]
        (list(new.tools), new.requirements(), new.mode),  # type: ignore[arg-type]
        max_states=3000,
    )
    left, right = reasoner_of(old), reasoner_of(new)
    if not report.equivalent:
        assert report.complete
        assert_separates(left, right, report)
        return
    if not report.complete:
        assert report.reason
        return
    assert_agree_up_to(left, right, 4)


def assert_separates(left: Reasoner, right: Reasoner, report: Any) -> None:
    """The report's trace is a history both runtimes allow step by step, after which their
    passes differ (and before which they agree)."""
    trace = tuple((s.tool, s.status) for s in report.trace)
    for n in range(len(trace)):
        assert key_of(decide(left, trace[:n])) == key_of(decide(right, trace[:n]))
        for reasoner in (left, right):
            before = decide(reasoner, trace[:n])
            assert isinstance(before, Pass) and trace[n][0] in before.allowed
    assert key_of(decide(left, trace)) != key_of(decide(right, trace))


def assert_agree_up_to(left: Reasoner, right: Reasoner, depth: int) -> None:
    """Every history of at most ``depth`` steps gives both runtimes the same pass."""
    layer: list[tuple[Event, ...]] = [()]
    for _ in range(depth):
        deeper = []
        for trace in layer:
            a, b = decide(left, trace), decide(right, trace)
            assert key_of(a) == key_of(b), f"a proof, yet the passes differ after {trace}"
            if isinstance(a, Pass):
                deeper += [
                    (*trace, (t, s)) for t in a.allowed if t != FINAL_ANSWER for s in STATUSES
                ]
        layer = deeper


@given(pair=policy_pairs())
def test_diff_traces_replay_and_equivalences_hold(pair: tuple[PolicyCase, PolicyCase]) -> None:
    old, new = pair
    note(f"old:\n{old.source()}\nnew:\n{new.source()}")
    report = diff(
        (list(old.tools), old.requirements(), old.mode),  # type: ignore[arg-type]
        (list(new.tools), new.requirements(), new.mode),  # type: ignore[arg-type]
    )
    assert report.complete
    left, right = reasoner_of(old), reasoner_of(new)
    if not report.equivalent:
        assert_separates(left, right, report)
        return
    assert_agree_up_to(left, right, 3)
