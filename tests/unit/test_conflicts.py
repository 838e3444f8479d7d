"""Conflicts as data (SPEC §11): ``ConflictError.kind`` and ``.forced``, forced ties as a field of
the explanation, the messages of both modes, and long cores summarised."""

from __future__ import annotations

from typing import Any

import pytest

from ruleengine import (
    ConditionalRequirement,
    ConflictError,
    CycleGuard,
    Reasoner,
    Rule,
    RunState,
    allowed,
    at_most,
    forced,
    requirement,
)
from ruleengine._resolve import Resolver
from ruleengine.aggregate import Clash
from ruleengine.rules import Emitted


def conflict(tools: list[str], records: list[Emitted], mode: str = "strict") -> ConflictError:
    with pytest.raises(ConflictError) as info:
        Reasoner(tools, mode=mode).resolve(records)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize("mode", ["strict", "priority"])
def test_no_tool_left_is_a_deadlock(mode: str) -> None:
    e = conflict(
        ["a"],
        [
            Emitted(Rule("a", allowed=False), "no-a", 10),
            Emitted(Rule("final_answer", prevent_stop=True), "keep-going", 10),
        ],
        mode,
    )
    assert (e.kind, e.forced) == ("deadlock", ())
    assert "no tool is left allowed" in e.message


@pytest.mark.parametrize("mode", ["strict", "priority"])
def test_a_force_on_a_denied_tool_is_a_forced_conflict(mode: str) -> None:
    e = conflict(
        ["a", "b"],
        [Emitted(Rule("a", allowed=False), "no-a", 10), Emitted(forced("a"), "force-a", 10)],
        mode,
    )
    assert (e.kind, e.forced) == ("forced-conflict", ("a",))
    assert {c.requirement for c in e.core} == {"no-a", "force-a"}
    assert "the hard force on `a` cannot be honoured" in e.message


@pytest.mark.parametrize("mode", ["strict", "priority"])
def test_two_hard_forces_on_different_tools_name_both(mode: str) -> None:
    e = conflict(
        ["a", "b", "c"],
        [Emitted(forced("b"), "force-b", 10), Emitted(forced("a"), "force-a", 10)],
        mode,
    )
    assert (e.kind, e.forced) == ("forced-conflict", ("a", "b"))  # declared order
    assert "hard forces on `a`, `b` cannot all be honoured" in e.message


def test_a_deadlock_with_a_hard_force_among_the_items_is_still_a_deadlock() -> None:
    # Without the force the rules already leave nothing allowed: SPEC §11 calls that a
    # deadlock, and its core is found among the other items only.
    e = conflict(
        ["a"],
        [
            Emitted(Rule("a", allowed=False), "no-a", 10),
            Emitted(Rule("final_answer", prevent_stop=True), "keep-going", 10),
            Emitted(forced("a"), "force-a", 20),
        ],
    )
    assert (e.kind, e.forced) == ("deadlock", ())
    assert "force-a" not in {c.requirement for c in e.core}


def test_a_formula_clash_is_a_deadlock_that_says_so() -> None:
    e = conflict(
        ["a", "b"],
        [
            Emitted(allowed("a") | allowed("b"), "one-of", 10),
            Emitted(~allowed("a") & ~allowed("b"), "neither", 10),
        ],
    )
    assert e.kind == "deadlock"
    assert "the requirements contradict each other" in e.message


def test_hard_force_on_a_target_its_own_requirement_denies_is_a_forced_conflict() -> None:
    # The case of the engine-seams issue: `c2` hard-forces `t0` at step 3 while its own
    # `only_before` denies it. A denied target is not forced, so `c2` adds no prevent_stop,
    # and the conflict is `c2`'s deny against its force, not "no tool left".
    c0 = ConditionalRequirement(
        "t1",
        only_after="t0",
        min_invocations=2,
        consecutive_allowed=False,
        only_success_invocations=False,
        name="c0",
    )
    c2 = ConditionalRequirement("t0", force_at_step=3, only_before=["t1"], name="c2")
    c3 = ConditionalRequirement("t1", force_at_step=2, only_before=["t0"], name="c3")
    state = RunState.from_trace(["t0", ("t0", "error"), "t1", ("t0", "error"), ("t1", "error")])
    with pytest.raises(ConflictError) as info:
        Reasoner(["t0", "t1"], [c0, c2, c3]).decide(state)
    e = info.value
    assert (e.kind, e.forced) == ("forced-conflict", ("t0",))
    assert [(c.requirement, c.rule) for c in e.core] == [
        ("c2", "Rule('t0', allowed=False, reason='`t0` only runs before `t1`')"),
        ("c2", "forced('t0')"),
    ]
    rule = c2.run(state)[0]
    assert isinstance(rule, Rule)
    assert (rule.allowed, rule.prevent_stop) == (False, False)


def test_a_hard_force_on_an_allowed_target_still_prevents_stopping() -> None:
    req = ConditionalRequirement("think", force_at_step=1)
    rule = req.run(RunState())[0]
    assert isinstance(rule, Rule)
    assert rule.allowed and rule.prevent_stop


# -- forced ties -------------------------------------------------------------------------------


def test_a_forced_tie_is_a_field_of_the_explanation() -> None:
    records = [
        Emitted(Rule("b", forced=True), "force-b", 20),
        Emitted(Rule("a", forced=True), "force-a", 20),
        Emitted(Rule("c", forced=True), "force-c", 5),
    ]
    p = Reasoner(["a", "b", "c"]).resolve(records)
    assert p.forced == "a"
    tie = p.explanation.forced_tie
    assert tie is not None
    assert (tie.priority, tie.tools) == (20, ("a", "b"))
    assert [(c.requirement, c.rule) for c in tie.rules] == [
        ("force-a", "Rule('a', forced=True)"),
        ("force-b", "Rule('b', forced=True)"),
    ]
    assert p.explanation.model_dump()["forced_tie"]["tools"] == ("a", "b")


def test_no_tie_when_one_force_is_higher_or_a_hard_force_decides() -> None:
    higher = Reasoner(["a", "b"]).resolve(
        [Emitted(Rule("a", forced=True), "x", 20), Emitted(Rule("b", forced=True), "y", 10)]
    )
    assert higher.explanation.forced_tie is None
    hard = Reasoner(["a", "b", "c"]).resolve(
        [
            Emitted(Rule("a", forced=True), "x", 20),
            Emitted(Rule("b", forced=True), "y", 20),
            Emitted(forced("c"), "z", 1),
        ]
    )
    assert hard.forced == "c"
    assert hard.explanation.forced_tie is None


def test_a_tie_among_a_denied_tool_is_no_tie() -> None:
    p = Reasoner(["a", "b"]).resolve(
        [
            Emitted(Rule("a", forced=True), "x", 20),
            Emitted(Rule("b", forced=True), "y", 20),
            Emitted(Rule("b", allowed=False), "no-b", 1),
        ]
    )
    assert p.forced == "a"
    assert p.explanation.forced_tie is None


# -- messages ----------------------------------------------------------------------------------


def test_priority_mode_names_the_clashing_part_of_a_rule() -> None:
    # At priority 10 the permitting tier asserts `allowed(a)` (from `keep-a`, whose other part
    # prevents stopping) and `allowed(b)`: each fits `one`'s at_most above, together they
    # do not. The core cites `keep-a`'s permitting part only; `allow-b` has one part.
    e = conflict(
        ["a", "b", "c"],
        [
            Emitted(at_most(1, allowed("a"), allowed("b")), "one", 10),
            Emitted(Rule("a", prevent_stop=True), "keep-a", 10),
            Emitted(Rule("b"), "allow-b", 10),
        ],
        mode="priority",
    )
    assert e.kind == "deadlock"
    assert {c.requirement: c.rule for c in e.core} == {
        "one": "at_most(1, allowed('a'), allowed('b'))",
        "keep-a": "Rule('a', prevent_stop=True) (permitting part)",
        "allow-b": "Rule('b')",
    }
    assert "prevents stopping (permitting part)" not in e.message
    assert "(permitting part)" in e.message
    assert "hard force" not in e.message
    assert e.hint is not None and "priority mode" in e.hint


def test_priority_mode_names_a_clashing_restricting_part() -> None:
    # Preventing the stop and denying `a` leave no tool: the restricting parts clash.
    e = conflict(
        ["a"],
        [
            Emitted(Rule("a", prevent_stop=True), "keep-a", 10),
            Emitted(Rule("a", allowed=False), "no-a", 10),
        ],
        mode="priority",
    )
    assert {c.requirement: c.rule for c in e.core} == {
        "keep-a": "Rule('a', prevent_stop=True) (restricting part)",
        "no-a": "Rule('a', allowed=False)",
    }
    assert e.message.startswith("no tool is left allowed: ")


def test_strict_mode_cites_rules_whole() -> None:
    e = conflict(
        ["a"],
        [
            Emitted(Rule("a", allowed=False, prevent_stop=True), "no-a", 10),
        ],
    )
    assert [c.rule for c in e.core] == ["Rule('a', allowed=False, prevent_stop=True)"]
    assert "part)" not in e.message


def test_a_long_core_is_summarised_in_the_message_and_complete_in_core() -> None:
    tools = [f"t{i}" for i in range(40)]
    reqs = [requirement(name=f"no-{t}")(lambda state, t=t: [Rule(t, allowed=False)]) for t in tools]
    reqs.append(
        requirement(name="keep-going")(lambda state: [Rule("final_answer", prevent_stop=True)])
    )
    with pytest.raises(ConflictError) as info:
        Reasoner(tools, reqs).decide()
    e = info.value
    assert len(e.core) == 41
    assert e.message.count("(priority 10)") == 10  # the first ten items, then a count
    assert "… and 31 more (every item is in `.core`)" in e.message
    assert e.hint is not None and "41 items" in e.hint


# -- `Reasoner.settle`: the clash as a value, its core found when first read ------------------

_CLASHING: list[tuple[str, list[str], list[Emitted]]] = [
    (
        "strict",
        ["a", "b"],
        [
            Emitted(Rule("a", allowed=False), "no-a", 10),
            Emitted(forced("a"), "force-a", 10),
            Emitted(Rule("b", allowed=False), "no-b", 5),
        ],
    ),
    (
        "strict",
        ["a", "b", "c"],
        [Emitted(forced("b"), "force-b", 10), Emitted(forced("a"), "force-a", 10)],
    ),
    (
        "priority",
        ["a", "b", "c"],
        [
            Emitted(at_most(1, allowed("a"), allowed("b")), "one", 10),
            Emitted(Rule("a", prevent_stop=True), "keep-a", 10),
            Emitted(Rule("b"), "allow-b", 10),
        ],
    ),
    (
        "priority",
        ["a"],
        [
            Emitted(Rule("a", prevent_stop=True), "keep-a", 10),
            Emitted(Rule("a", allowed=False), "no-a", 10),
        ],
    ),
]


@pytest.mark.parametrize(("mode", "tools", "records"), _CLASHING)
def test_settle_returns_the_clash_that_resolve_raises(
    mode: str, tools: list[str], records: list[Emitted]
) -> None:
    clash = Reasoner(tools, mode=mode).settle(records)  # type: ignore[arg-type]
    assert isinstance(clash, Clash)
    e = conflict(tools, records, mode)
    assert (clash.kind, clash.forced) == (e.kind, e.forced)
    assert [r.requirement for r in clash.core] == [c.requirement for c in e.core]
    cited = [
        f"{r.item!r} ({part} part)" if part else repr(r.item)
        for r, part in zip(clash.core, clash.parts, strict=True)
    ]
    assert cited == [c.rule for c in e.core]


def test_settle_answers_a_pass_like_resolve() -> None:
    records = [Emitted(Rule("a", allowed=False), "no-a", 10)]
    reasoner = Reasoner(["a", "b"])
    settled = reasoner.settle(records)
    assert settled == reasoner.resolve(records)
    assert reasoner.hits == 1  # one cache for both


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = Resolver._minimal

    def counted(self: Resolver, *args: Any) -> Any:
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(Resolver, "_minimal", counted)
    return calls


def test_a_clash_of_literal_rules_finds_its_core_when_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    tools, records = _CLASHING[0][1], _CLASHING[0][2]
    reasoner = Reasoner(tools)
    clash = reasoner.settle(records)
    assert isinstance(clash, Clash)
    assert (clash.kind, clash.forced) == ("forced-conflict", ("a",))
    assert calls == []  # deciding that the step has no pass took no core search
    assert {r.requirement for r in clash.core} == {"no-a", "force-a"}
    assert calls == [1]
    assert clash.parts == ("", "")
    assert reasoner.settle(records) is clash  # cached, core and all
    with pytest.raises(ConflictError):
        reasoner.resolve(records)
    assert calls == [1]


def test_a_clash_the_solver_decides_finds_its_core_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A general formula: QuickXplain's questions go to the solver, inside the decision's
    # session and clock, so the core is not left for later.
    calls = _counting(monkeypatch)
    clash = Reasoner(["a", "b"]).settle(
        [
            Emitted(allowed("a") | allowed("b"), "one-of", 10),
            Emitted(~allowed("a") & ~allowed("b"), "neither", 10),
            Emitted(Rule("b", allowed=False), "no-b", 5),
        ]
    )
    assert isinstance(clash, Clash) and clash.kind == "deadlock"
    assert calls == [1]
    assert {r.requirement for r in clash.core} == {"one-of", "neither"}
    assert calls == [1]


@pytest.mark.parametrize(("mode", "tools", "records"), _CLASHING)
def test_a_core_read_after_the_solver_session_starts_over_is_the_same(
    mode: str, tools: list[str], records: list[Emitted]
) -> None:
    # The session (and the compiled units) start over when its tables fill up, between
    # decisions: a core read later is found from what the clash captured when decided.
    reasoner = Reasoner(tools, mode=mode)  # type: ignore[arg-type]
    clash = reasoner.settle(records)
    assert isinstance(clash, Clash)
    reasoner._aggregator._reset()  # what a full table does
    fresh = Reasoner(tools, mode=mode).settle(records)  # type: ignore[arg-type]
    assert isinstance(fresh, Clash)
    assert (clash.core, clash.parts) == (fresh.core, fresh.parts)


def test_a_clash_without_a_yielding_requirements_records_is_not_explained_to_yield(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A yielding requirement gives way when its records are in the core: a clash without
    # any of its records needs no core to know that nothing gives way.
    calls = _counting(monkeypatch)
    tools, records = _CLASHING[0][1], _CLASHING[0][2]
    guard = CycleGuard(max_strike_length=1)
    reasoner = Reasoner(tools, [guard])
    assert guard.yielding
    clash = reasoner.settle(records)
    assert isinstance(clash, Clash) and calls == []
    own = Emitted(Rule("b", allowed=False), guard.name, guard.priority)
    clash = reasoner.settle([*records, own])
    assert isinstance(clash, Clash)  # its record was not in the core: nothing gave way
    assert calls == [1]
    assert guard.name not in {e.requirement for e in clash.core}
