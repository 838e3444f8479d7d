"""Laws of the reasoner, checked on random small instances (STYLE §7, SPEC §4).

(a) it agrees with an exhaustive brute-force reference, in both modes; (b) no order of emitted
items or requirements changes the pass or the core; (c) strict mode is monotone; (d) the pass is
internally consistent; (e) every core is a minimal unsat subset of what was emitted; (f) the Z3
encoding agrees with ``evaluate`` on every concrete assignment.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from brute_force import Clash, Expected, Reference
from hypothesis import given, note
from hypothesis import strategies as st
from strategies import (
    REQUIREMENT_NAMES,
    Instance,
    Spec,
    assignments,
    build_item,
    formulas,
    instances,
    requirements_of,
    truth,
)

from ruleengine import (
    FINAL_ANSWER,
    ConflictError,
    Pass,
    Reasoner,
    Rule,
    all_of,
    allowed,
    forced,
    hidden,
)
from ruleengine.evaluate import evaluate
from ruleengine.rules import Emitted

MODES = ("strict", "priority")


@cache
def reference(tools: tuple[str, ...]) -> Reference:
    return Reference(tools)


def reasoner(instance: Instance, mode: str, **kwargs: Any) -> Reasoner:
    return Reasoner(
        instance.declared,
        mode=mode,  # type: ignore[arg-type]
        final_answer_as_tool=instance.final_answer_as_tool,
        **kwargs,
    )


def outcome(r: Reasoner, emitted: list[Emitted]) -> Pass | ConflictError:
    try:
        return r.resolve(emitted)
    except ConflictError as exc:
        return exc


def core_of(exc: ConflictError) -> list[Emitted]:
    return [Emitted(c.item, c.requirement, c.priority) for c in exc.core]


def signature(result: Pass | ConflictError) -> tuple[Any, ...]:
    """Everything an observer sees of a decision (messages aside)."""
    if isinstance(result, ConflictError):
        return ("conflict", [(c.requirement, c.priority, c.rule) for c in result.core])
    ex = result.explanation
    return (
        "pass",
        result.allowed,
        result.hidden,
        result.forced,
        result.can_stop,
        result.tool_choice,
        dict(result.reasons),
        [(c.requirement, c.priority, c.rule) for c in ex.overridden],
        ex.notes,
    )


def check_against_reference(
    instance: Instance, mode: str, result: Pass | ConflictError, expected: Expected | Clash
) -> None:
    note(f"tools={instance.tools} mode={mode} fa_as_tool={instance.final_answer_as_tool}")
    for s in instance.specs:
        note(f"  {s.requirement}@{s.priority}: {s.item!r}   ast={s.ast}")
    note(f"engine: {result!r}")
    note(f"reference: {expected!r}")
    ref = reference(instance.tools)
    if isinstance(expected, Clash):
        assert isinstance(result, ConflictError), "the reference finds no pass"
        assert (result.kind, result.forced) == (expected.kind, expected.forced)
        problem = ref.core_problem(expected, core_of(result))
        assert problem is None, problem
        return
    assert isinstance(result, Pass), f"the reference finds a pass: {result}"
    got = {
        "allowed": result.allowed,
        "hidden": result.hidden,
        "forced": result.forced,
        "can_stop": result.can_stop,
        "tool_choice": result.tool_choice,
        "reasons": dict(result.reasons),
    }
    want = {
        "allowed": expected.allowed,
        "hidden": expected.hidden,
        "forced": expected.forced,
        "can_stop": expected.can_stop,
        "tool_choice": expected.tool_choice,
        "reasons": expected.reasons,
    }
    assert got == want
    ex = result.explanation
    overridden = {Emitted(c.item, c.requirement, c.priority) for c in ex.overridden}
    assert overridden == set(expected.overridden)
    tie = ex.forced_tie
    if expected.tie:
        assert tie is not None
        assert tie.tools == expected.tie
        assert tie.tools[0] == result.forced
        assert {c.item.target for c in tie.rules} == set(tie.tools)
        assert {c.priority for c in tie.rules} == {tie.priority}
    else:
        assert tie is None


# -- (a) agreement with the brute-force reference ----------------------------------------


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances())
def test_agrees_with_brute_force(mode: str, instance: Instance) -> None:
    result = outcome(reasoner(instance, mode), instance.emitted)
    expected = reference(instance.tools).decide(instance, mode)
    check_against_reference(instance, mode, result, expected)


@pytest.mark.parametrize(
    ("mode", "fast_path"),
    [("strict", True), ("strict", False), ("priority", True), ("priority", False)],
)
@given(instance=instances(max_items=4, with_formulas=False))
def test_agrees_with_brute_force_on_plain_rules(
    mode: str, fast_path: bool, instance: Instance
) -> None:
    # Plain rules take the literal fast path in strict mode: check both paths on their own.
    result = outcome(reasoner(instance, mode, fast_path=fast_path), instance.emitted)
    expected = reference(instance.tools).decide(instance, mode)
    check_against_reference(instance, mode, result, expected)


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances(max_items=6, with_formulas=False, force_bias=True))
def test_agrees_with_brute_force_on_soft_forces(mode: str, instance: Instance) -> None:
    # Mostly allowing, forcing rules at two priorities: forced ties and their notes.
    result = outcome(reasoner(instance, mode), instance.emitted)
    expected = reference(instance.tools).decide(instance, mode)
    check_against_reference(instance, mode, result, expected)


@given(instance=instances(), data=st.data())
def test_one_reasoner_agrees_with_brute_force_across_many_steps(
    instance: Instance, data: st.DataObject
) -> None:
    # A reasoner keeps its solver, compiled items and hidden atoms from step to step: decide a
    # few random sub-steps with one reasoner and check each against the reference.
    mode = data.draw(st.sampled_from(MODES))
    r = reasoner(instance, mode, cache_size=0)
    ref = reference(instance.tools)
    for _ in range(3):
        specs = (
            data.draw(st.lists(st.sampled_from(instance.specs), max_size=6))
            if (instance.specs)
            else []
        )
        step = Instance(instance.declared, tuple(specs), instance.final_answer_as_tool)
        check_against_reference(step, mode, outcome(r, step.emitted), ref.decide(step, mode))


# -- (b) order independence ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances(), data=st.data())
def test_order_of_items_never_matters(mode: str, instance: Instance, data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(instance.specs))
    note(f"shuffled: {[s.item for s in shuffled]}")
    first = signature(outcome(reasoner(instance, mode), instance.emitted))
    fresh = signature(outcome(reasoner(instance, mode), [s.emitted for s in shuffled]))
    assert fresh == first
    # The same reasoner without a cache answers from a solver that has seen other queries.
    shared = reasoner(instance, mode, cache_size=0)
    history = (
        data.draw(st.lists(st.sampled_from(instance.specs), max_size=4)) if (instance.specs) else []
    )
    outcome(shared, [s.emitted for s in history])
    assert signature(outcome(shared, [s.emitted for s in shuffled])) == first


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances(), data=st.data())
def test_order_of_requirements_never_matters(
    mode: str, instance: Instance, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(instance.specs))
    reqs = data.draw(st.permutations(requirements_of(shuffled)))
    first = signature(outcome(reasoner(instance, mode), instance.emitted))
    r = Reasoner(
        instance.declared,
        reqs,
        mode=mode,  # type: ignore[arg-type]
        final_answer_as_tool=instance.final_answer_as_tool,
    )
    try:
        result: Pass | ConflictError = r.decide()
    except ConflictError as exc:
        result = exc
    assert signature(result) == first


# -- (c) monotonicity of strict mode --------------------------------------------------------


def restrictions(tools: tuple[str, ...]) -> st.SearchStrategy[Rule]:
    return st.builds(
        Rule,
        target=st.sampled_from(tools),
        allowed=st.just(False),
        hidden=st.booleans(),
        reason=st.sampled_from((None, "no")),
    ) | st.builds(Rule, target=st.sampled_from(tools), hidden=st.just(True))


def with_extra(instance: Instance, rule: Rule, name: str) -> Instance:
    extra = Spec("rule", Emitted(rule, name, 5))
    return Instance(instance.declared, (*instance.specs, extra), instance.final_answer_as_tool)


@given(instance=instances(with_formulas=False, with_forces=False), data=st.data())
def test_strict_a_deny_or_hide_never_enlarges_allowed_with_plain_rules(
    instance: Instance, data: st.DataObject
) -> None:
    rule = data.draw(restrictions(instance.tools))
    bigger = with_extra(instance, rule, data.draw(st.sampled_from(REQUIREMENT_NAMES)))
    before = outcome(reasoner(instance, "strict"), instance.emitted)
    after = outcome(reasoner(bigger, "strict"), bigger.emitted)
    if isinstance(before, ConflictError):
        assert isinstance(after, ConflictError)
        return
    if isinstance(after, Pass):
        assert set(after.allowed) <= set(before.allowed)
        assert rule.target not in after.allowed
        assert set(before.hidden) <= set(after.hidden)


@given(instance=instances(with_forces=False), data=st.data())
def test_strict_a_deny_or_hide_never_raises_the_allowed_vector(
    instance: Instance, data: st.DataObject
) -> None:
    # With general constraints the allowed *set* may change shape (at_most(1, a, b) lets `b` in
    # once `a` is denied), but the lexicographic allowed vector can only go down.
    rule = data.draw(restrictions(instance.tools))
    bigger = with_extra(instance, rule, data.draw(st.sampled_from(REQUIREMENT_NAMES)))
    before = outcome(reasoner(instance, "strict"), instance.emitted)
    after = outcome(reasoner(bigger, "strict"), bigger.emitted)
    if isinstance(before, ConflictError):
        assert isinstance(after, ConflictError)
        return
    if isinstance(after, Pass):
        vector = [(t in after.allowed, t in before.allowed) for t in instance.tools]
        assert [a for a, _ in vector] <= [b for _, b in vector]
        assert rule.target not in after.allowed


# -- (d) the pass is consistent with itself -------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances())
def test_pass_invariants(mode: str, instance: Instance) -> None:
    result = outcome(reasoner(instance, mode), instance.emitted)
    if isinstance(result, ConflictError):
        assert result.core, "a conflict cites at least one item"
        return
    tools = instance.tools
    assert not set(result.hidden) & set(result.allowed)
    assert result.allowed, "some tool is always allowed"
    assert list(result.hidden) == [t for t in tools if t in result.hidden]
    assert result.can_stop == (FINAL_ANSWER in result.allowed)
    assert set(result.reasons) <= set(tools)
    if result.forced is not None:
        assert result.forced in result.allowed
        assert set(result.allowed) <= {result.forced, FINAL_ANSWER}
        assert result.allowed[0] == result.forced
        assert result.tool_choice == result.forced
    else:
        assert list(result.allowed) == [t for t in tools if t in result.allowed]
        assert result.tool_choice in (*result.allowed, "auto", "required")
    if result.tool_choice == "auto":
        assert result.can_stop and not instance.final_answer_as_tool


# -- (e) cores are minimal ---------------------------------------------------------------


@st.composite
def conflict_prone(draw: st.DrawFn) -> Instance:
    """An instance plus denials of most tools, so that many draws have no pass."""
    instance = draw(instances(max_items=5))
    specs = list(instance.specs)
    for t in instance.tools:
        if draw(st.integers(0, 3)):
            name = draw(st.sampled_from(REQUIREMENT_NAMES))
            priority = next((s.priority for s in specs if s.requirement == name), 2)
            specs.append(Spec("rule", Emitted(Rule(t, allowed=False), name, priority)))
    order = draw(st.permutations(specs))
    return Instance(instance.declared, tuple(order), instance.final_answer_as_tool)


@pytest.mark.parametrize("mode", MODES)
@given(instance=conflict_prone())
def test_every_core_is_minimal_and_emitted(mode: str, instance: Instance) -> None:
    result = outcome(reasoner(instance, mode), instance.emitted)
    expected = reference(instance.tools).decide(instance, mode)
    if isinstance(result, ConflictError):
        assert set(core_of(result)) <= set(instance.emitted)
        # Priority mode names the part of a two-part rule that clashes, as overridden
        # entries do; strict mode asserts rules whole.
        parts = ("",) if mode == "strict" else ("", " (restricting part)", " (permitting part)")
        assert all(c.rule in {repr(c.item) + p for p in parts} for c in result.core)
    check_against_reference(instance, mode, result, expected)


@pytest.mark.parametrize("mode", MODES)
@given(instance=conflict_prone())
def test_settle_gives_the_decision_resolve_gives(mode: str, instance: Instance) -> None:
    # `settle` returns the clash `resolve` raises as a `ConflictError`, its core found when
    # first read (from the masks) or at once (by the solver): the same core either way, and
    # the same however many other sets the reasoner decided in between.
    r = reasoner(instance, mode)
    settled = r.settle(instance.emitted)
    for other in (instance.emitted[:k] for k in range(len(instance.emitted))):
        r.settle(other)  # fills the cache, and reads no core
    result = outcome(reasoner(instance, mode), instance.emitted)
    if isinstance(result, Pass):
        assert settled == result
        return
    assert not isinstance(settled, Pass)
    assert (settled.kind, settled.forced) == (result.kind, result.forced)
    assert list(settled.core) == core_of(result)
    cited = [
        repr(e.item) + (f" ({part} part)" if part else "")
        for e, part in zip(settled.core, settled.parts, strict=True)
    ]
    assert cited == [c.rule for c in result.core]


# -- (f) the encoding agrees with evaluate ----------------------------------------------------


@given(data=st.data())
def test_encoding_agrees_with_evaluate(data: st.DataObject) -> None:
    instance = data.draw(instances(max_items=0))
    tools = instance.tools
    ast = data.draw(formulas(tools))
    phi = build_item(ast)
    allowed_set, hidden_set = data.draw(assignments(tools))
    want = truth(ast, allowed_set, hidden_set)
    assert evaluate(phi, allowed_set, hidden_set) is want
    # Pin every atom of the assignment with literal items, then ask whether φ fits.
    pins = [allowed(t) if t in allowed_set else ~allowed(t) for t in tools]
    pins += [hidden(t) if t in hidden_set else ~hidden(t) for t in tools]
    if data.draw(st.booleans()):
        pins = [all_of(*pins)]
    items = data.draw(st.permutations([phi, *pins]))
    note(f"phi={phi!r} allowed={sorted(allowed_set)} hidden={sorted(hidden_set)}")
    result = outcome(Reasoner(instance.declared), [Emitted(i, "pin", 10) for i in items])
    if want:
        assert isinstance(result, Pass)
        assert set(result.allowed) == allowed_set
        assert set(result.hidden) == hidden_set
    else:
        assert isinstance(result, ConflictError)
        assert Emitted(phi, "pin", 10) in core_of(result)


@given(data=st.data())
def test_evaluate_reads_hard_forces(data: st.DataObject) -> None:
    tools = data.draw(instances(max_items=0)).tools
    allowed_set, hidden_set = data.draw(assignments(tools))
    target = data.draw(st.sampled_from(tools))
    chosen = data.draw(st.sampled_from((None, *tools)))
    got = evaluate(forced(target), allowed_set, hidden_set, forced=chosen)
    assert got is (target in allowed_set and chosen == target)


# -- law 2: the fast path and the solver path give identical passes ----------------------------


@pytest.mark.parametrize("mode", MODES)
@given(instance=instances())
def test_fast_path_and_solver_path_agree(mode: str, instance: Instance) -> None:
    fast = outcome(reasoner(instance, mode), instance.emitted)
    slow_reasoner = reasoner(instance, mode, fast_path=False)
    slow = outcome(slow_reasoner, instance.emitted)
    assert signature(fast) == signature(slow)
    if not isinstance(slow, ConflictError):
        # INVARIANT of the solver path: every cache miss asked Z3 at least once.
        assert slow_reasoner.solver_checks >= 1


@given(instance=instances(max_items=8, with_formulas=False))
def test_fast_path_needs_no_solver_for_plain_rules(instance: Instance) -> None:
    # A pass is read off the masks; so is a conflict's minimal core, every question of its
    # search being about plain rules too (the law above: the same core as the solver's).
    for mode in ("strict", "priority"):
        r = reasoner(instance, mode)
        outcome(r, instance.emitted)
        assert r.solver_checks == 0
