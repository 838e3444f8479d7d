"""Records are checked, cached and looked up by value; the record tables and the solver session
stay bounded (past their limits they start over, and no answer changes)."""

from __future__ import annotations

import pytest

from ruleengine import ConflictError, PolicyError, Reasoner, Rule, allowed, at_most
from ruleengine import aggregate as aggregate_module
from ruleengine.rules import Emitted


def test_new_formulas_every_step_do_not_grow_the_session_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aggregate_module, "_LITERAL_LIMIT", 30)
    tools = ["a", "b", "c"]
    r = Reasoner(tools, cache_size=0)
    checks = []
    for n in range(120):
        # A formula never seen before (its repetition count differs), so a new guard literal.
        formula = at_most(n + 1, *([allowed("a")] * (n + 1)), allowed("b"))
        p = r.resolve([Emitted(formula, "growing", 10), Emitted(~allowed("c"), "fixed", 10)])
        fresh = Reasoner(tools).resolve([Emitted(formula, "growing", 10)])
        assert p.allowed == tuple(t for t in fresh.allowed if t != "c")
        checks.append(r.solver_checks)
        assert r._aggregator._session.size <= 30 + 4
    assert checks == sorted(checks)  # cumulative across resets
    assert checks[-1] >= 120


def _sets(tools: list[str]) -> list[list[Emitted]]:
    """Distinct small emitted sets over ``tools``, each built from fresh objects."""
    sets = []
    for n in range(60):
        denied = [t for i, t in enumerate(tools) if n >> i & 1]
        records = [
            Emitted(Rule(t, allowed=False, reason=f"r{n % 3}"), f"req{n % 4}", 1 + n % 5)
            for t in denied
        ]
        records.append(Emitted(Rule(tools[n % len(tools)], forced=True), "force", 1 + n % 7))
        sets.append(records)
    return sets


def _answer(r: Reasoner, s: list[Emitted]) -> object:
    try:
        p = r.resolve(s)
    except ConflictError as e:
        return ("conflict", [c.rule for c in e.core])
    return (p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, dict(p.reasons))


@pytest.mark.parametrize("limit", [1, 3, 7])
def test_full_record_tables_start_over_and_every_answer_stays_right(
    monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    tools = ["a", "b", "c", "d"]
    sets = _sets(tools)
    expected = [_answer(Reasoner(tools), s) for s in sets]
    monkeypatch.setattr(aggregate_module, "_COMPILED_LIMIT", limit)
    r = Reasoner(tools, cache_size=0)
    # Twice over, with equal but distinct objects the second time: the record tables (and
    # the solver session) start over many times in between, and no answer changes.
    for round_sets in (sets, _sets(tools)):
        assert [_answer(r, s) for s in round_sets] == expected
    assert len(r._aggregator._word_of) <= limit + 5


def test_equal_records_from_distinct_objects_share_one_cache_entry() -> None:
    r = Reasoner(["a", "b"])
    first = r.resolve([Emitted(Rule("a", allowed=False, reason="x"), "req", 3)])
    again = r.resolve([Emitted(Rule("a", allowed=False, reason="x"), "req", 3)])
    assert again is first
    assert (r.hits, r.misses) == (1, 1)
    other = r.resolve([Emitted(Rule("a", allowed=False, reason="x"), "req", 4)])
    assert other is not first
    assert r.misses == 2


def test_a_plain_tuple_equal_to_a_known_record_is_still_rejected() -> None:
    r = Reasoner(["a", "b"])
    record = Emitted(Rule("a", allowed=False), "req", 3)
    r.resolve([record])
    # Not a cached set, so it is decided, and its records checked, although an equal record
    # was seen before.
    with pytest.raises(PolicyError, match="is not an `Emitted"):
        r.resolve([tuple(record), Emitted(Rule("b", forced=True), "req", 3)])  # type: ignore[list-item]


def test_resolve_reads_an_iterator_of_records_once() -> None:
    records = [Emitted(Rule("a", allowed=False), "req", 3), Emitted(Rule("b", forced=True), "f", 2)]
    from_list = Reasoner(["a", "b", "c"]).resolve(records)
    from_iterator = Reasoner(["a", "b", "c"]).resolve(iter(records))
    assert from_iterator.allowed == from_list.allowed == ("b", "final_answer")
    assert from_iterator.forced == "b"


@pytest.mark.parametrize("mode", ["strict", "priority"])
def test_a_literal_conflict_gets_its_core_from_the_masks_on_the_fast_path(mode: str) -> None:
    tools = ["a", "b", "c"]
    records = [
        Emitted(Rule("a", allowed=False), "no-a", 5),
        Emitted(Rule("b", allowed=False, reason="later"), "no-b", 5),
        Emitted(Rule("b", allowed=False), "no-b-either", 3),
        Emitted(Rule("final_answer", allowed=False), "keep-going", 5),
        Emitted(Rule("c", hidden=True), "hide-c", 5),
    ]
    cores = []
    for fast_path in (True, False):
        r = Reasoner(tools, mode=mode, fast_path=fast_path)  # type: ignore[arg-type]
        with pytest.raises(ConflictError) as info:
            r.resolve(records)
        cores.append([(c.requirement, c.rule) for c in info.value.core])
        if fast_path:
            assert r.solver_checks == 0
        else:
            assert r.solver_checks > 1
    assert cores[0] == cores[1]
    assert len(cores[0]) == 4  # one item per tool: `b`'s highest-priority denial is cited
    assert ("no-b-either", "Rule('b', allowed=False)") not in cores[0]
