"""``check/relaxed.py``: the tools the relaxed product counts callable, and the fewest
components that keep a tool closed there (the dead-tool core guesses).

The laws (a superset of what the explicit engine finds allowed; every closing set is a real
dead-tool set and minimal in the relaxed product) are in
tests/property/test_check_relaxed_laws.py."""

from __future__ import annotations

import pytest

from ruleengine import FINAL_ANSWER
from ruleengine.check import check
from ruleengine.check import properties as props
from ruleengine.check.explicit import analyse
from ruleengine.check.relaxed import Relaxed
from ruleengine.check.system import System
from ruleengine.requirements import ConditionalRequirement as C
from ruleengine.requirements import CycleGuard


@pytest.fixture(autouse=True)
def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check here runs its lanes in this process: the spies below count calls made
    here, and a lane that ran in a forked child would be missed (when it does depends on
    the machine's load)."""
    monkeypatch.setenv("RULEENGINE_LANES", "1")


def _relaxed(tools: list[str], reqs: list[C]) -> tuple[System, Relaxed]:
    system = System(tools, reqs)
    return system, Relaxed(system.components, system.tools)


def _names(system: System, indices: list[int] | None) -> list[str] | None:
    if indices is None:
        return None
    return sorted(system.components[i].requirement.name for i in indices)


def test_a_cycle_of_only_afters_closes_both_tools_and_only_the_cycle_is_named() -> None:
    reqs = [
        C("a", only_after=["b"], name="A"),
        C("b", only_after=["a"], name="B"),
        C("c", max_invocations=2, name="cap"),
        C("d", only_after=["c"], name="D"),
    ]
    system, relaxed = _relaxed(["a", "b", "c", "d"], reqs)
    assert relaxed.callable() == {"c", "d"}
    assert _names(system, relaxed.closing("a")) == ["A", "B"]
    assert _names(system, relaxed.closing("b")) == ["A", "B"]
    assert relaxed.closing("c") is None
    assert relaxed.closing("d") is None
    assert analyse(system).allowed_tools == {"c", "d", FINAL_ANSWER}


def test_a_prerequisite_capped_at_zero_closes_what_needs_it() -> None:
    reqs = [C("a", max_invocations=0, name="never-a"), C("b", only_after=["a"], name="B")]
    system, relaxed = _relaxed(["a", "b", "c"], reqs)
    assert relaxed.callable() == {"c"}
    earlier: list[list[int]] = []
    assert _names(system, relaxed.closing("b", earlier)) == ["B", "never-a"]
    assert [_names(system, found) for found in earlier] == [["B", "never-a"]]
    # Searched inside the set found for `b`, which closes `a` too.
    assert _names(system, relaxed.closing("a", earlier)) == ["never-a"]
    assert [_names(system, found) for found in earlier] == [["B", "never-a"], ["never-a"]]
    # Without earlier sets the answer is the same (QuickXplain in index order) and nothing
    # is remembered: a call depends on its arguments alone.
    assert _names(system, relaxed.closing("a")) == ["never-a"]
    assert _names(system, relaxed.closing("b")) == ["B", "never-a"]


def test_two_hard_forces_at_one_step_end_every_run_and_the_layers_see_it() -> None:
    # Both force at the same step: every run is stuck there, so `d`, which needs three
    # calls before it, is never callable, though each component alone would let it be.
    # (Counting every step: see the next test for counters of successful steps only.)
    reqs = [
        C("x", force_at_step=2, only_success_invocations=False, name="X"),
        C("y", force_at_step=2, only_success_invocations=False, name="Y"),
        C("d", only_after=["a", "b", "c"], name="D"),
    ]
    tools = ["a", "b", "c", "d", "x", "y"]
    system, relaxed = _relaxed(tools, reqs)
    assert "d" not in analyse(system).allowed_tools  # the real system agrees
    assert "d" not in relaxed.callable()
    assert _names(system, relaxed.closing("d")) == ["D", "X", "Y"]
    # Without either force the runs go on, and the relaxed product opens `d` again.
    for kept in ("X", "Y"):
        sub = System(tools, [r for r in reqs if r.name in (kept, "D")])
        assert "d" in Relaxed(sub.components, sub.tools).callable()
        assert "d" in analyse(sub).allowed_tools


def test_counters_of_successful_steps_are_not_tied_to_the_rest() -> None:
    # Counting successful steps only, a component may stay put on a failed call while
    # another moves on it: the relaxation does not tie them, so it misses this horizon
    # (the core search then finds the core without the guess).
    reqs = [
        C("x", force_at_step=2, name="X"),
        C("y", force_at_step=2, name="Y"),
        C("d", only_after=["a", "b", "c"], name="D"),
    ]
    system, relaxed = _relaxed(["a", "b", "c", "d", "x", "y"], reqs)
    assert "d" not in analyse(system).allowed_tools
    assert "d" in relaxed.callable()
    assert relaxed.closing("d") is None
    report = check(["a", "b", "c", "d", "x", "y"], reqs)
    (dead,) = [f for f in report.findings if f.id == "dead-tool" and f.tool == "d"]
    assert sorted(c.requirement for c in dead.core) == ["D", "X", "Y"]


def test_yielding_requirements_close_nothing() -> None:
    reqs = [CycleGuard(max_strike_length=1, window_size=2, max_total_occurrences=1)]
    _, relaxed = _relaxed(["a", "b"], reqs)
    assert relaxed.callable() == {"a", "b"}
    assert relaxed.closing("a") is None


def test_unknown_tools_and_final_answer_are_never_closed() -> None:
    _, relaxed = _relaxed(["a"], [C("a", max_invocations=0)])
    assert relaxed.closing("nope") is None
    assert relaxed.closing(FINAL_ANSWER) is None
    assert relaxed.closing("a") == [0]


def test_the_dead_tool_core_follows_the_relaxed_guess_and_asks_less(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cycle hidden among requirements that all mention the dead tools: the guess names it
    # at once, and the core search only confirms it (a few questions on tiny subsystems).
    tools = [f"t{i}" for i in range(8)]
    reqs = [C("t0", only_after=["t1"], name="A"), C("t1", only_after=["t0"], name="B")]
    reqs += [C(t, max_invocations=3, name=f"cap-{t}") for t in tools]
    reqs += [C("t2", only_after=["t0"], name="after-t0")]
    questions: list[int] = []
    real = props._holds

    def counting(*args: object, **kwargs: object) -> object:
        questions.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(props, "_holds", counting)
    with_guess = check(tools, reqs)
    asked = len(questions)
    questions.clear()
    monkeypatch.setattr(props.Relaxed, "closing", lambda self, tool, earlier=None, **_: None)
    without = check(tools, reqs)
    assert with_guess.model_dump() | {"stats": None} == without.model_dump() | {"stats": None}
    dead = {
        f.tool: sorted(c.requirement for c in f.core)
        for f in with_guess.findings
        if f.id == "dead-tool"
    }
    assert dead == {"t0": ["A", "B"], "t1": ["A", "B"], "t2": ["A", "B", "after-t0"]}
    assert asked < len(questions)


def test_a_rule_implied_by_a_chain_of_only_afters_is_guessed_from_the_chain() -> None:
    tools = ["a", "b", "c", "d", "e"]
    chain = [
        C("b", only_after=["a"], name="b-after-a"),
        C("c", only_after=["b"], name="c-after-b"),
        C("d", only_after=["c"], name="d-after-c"),
    ]
    implied = C("d", only_after=["a"], name="d-after-a")
    noise = [C(t, max_invocations=2, name=f"cap-{t}") for t in tools]
    system, relaxed = _relaxed(tools, [*chain, implied, *noise])
    mine = [i for i, c in enumerate(system.components) if c.requirement.name == "d-after-a"]
    closing = relaxed.closed_until("d", "a", mine, succeeded=True)
    assert closing is not None
    assert _names(system, closing) == ["b-after-a", "c-after-b", "d-after-c"]
    # Nothing else keeps `d` closed until `a` runs.
    assert relaxed.closed_until("d", "a", [*mine, *closing], succeeded=True) is None
    assert relaxed.closed_until("a", "d", mine, succeeded=True) is None
    assert relaxed.closed_until("d", "d", mine, succeeded=True) is None
    report = check(tools, [*chain, implied, *noise])
    (dead,) = [f for f in report.findings if f.id == "dead-requirement"]
    assert dead.requirement == "d-after-a"
    assert sorted(c.requirement for c in dead.core) == [
        "b-after-a",
        "c-after-b",
        "d-after-a",
        "d-after-c",
    ]


def test_until_it_succeeds_and_until_it_is_called_differ() -> None:
    # `b` waits for a successful `a`; a failed `a` opens nothing, but it is a call.
    reqs = [C("b", only_after=["a"], name="B")]
    system, relaxed = _relaxed(["a", "b"], reqs)
    assert _names(system, relaxed.closed_until("b", "a", (), succeeded=True)) == ["B"]
    counting_any = [C("b", only_after=["a"], only_success_invocations=False, name="B")]
    system, relaxed = _relaxed(["a", "b"], counting_any)
    assert relaxed.closed_until("b", "a", (), succeeded=True) is None
    assert _names(system, relaxed.closed_until("b", "a", (), succeeded=False)) == ["B"]


def test_a_table_remembers_its_steps_and_open_tools_and_forgets_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ruleengine.check import relaxed as module

    _, relaxed = _relaxed(
        ["a", "b", "c"], [C("a", max_invocations=2, name="cap"), C("b", only_after=["a"])]
    )
    table = next(iter(relaxed._tables.values()))
    every = 0b111
    views = frozenset({0})
    first = table.step(views, every)
    assert first == table._step(views, every)  # what the layers would compute afresh
    assert table.step(frozenset({0}), every) is first  # an equal key: remembered
    assert table.step(views, 0b010) == table._step(views, 0b010)  # another mask: its own
    assert table.open_in(first) == table.open_in(frozenset(first))
    monkeypatch.setattr(module, "OPENED_MEMO", 2)
    table.step(frozenset({1}), every)  # a third entry: the memo starts again
    assert len(table._steps) == 1
    # Whatever the memo holds, the answers are those of the unremembered step.
    for mask in range(8):
        for start in ({0}, {1}, {0, 1}):
            assert table.step(frozenset(start), mask) == table._step(frozenset(start), mask)


def test_a_closing_set_is_not_searched_past_the_deadline() -> None:
    import time

    system = System(
        ["a", "b"], [C("a", only_after=["b"], name="A"), C("b", only_after=["a"], name="B")]
    )
    relaxed = Relaxed(system.components, system.tools)
    assert _names(system, relaxed.closing("a")) == ["A", "B"]
    assert relaxed.closing("a", deadline=time.monotonic() - 1) is None  # a guess: given up


def test_a_set_closed_until_another_tool_is_not_searched_past_the_deadline() -> None:
    import time

    tools = ["a", "b", "c"]
    system, relaxed = _relaxed(
        tools, [C("b", only_after=["a"], name="b-after-a"), C("c", only_after=["b"], name="C")]
    )
    assert _names(system, relaxed.closed_until("c", "a", (), succeeded=True)) == [
        "C",
        "b-after-a",
    ]
    past = time.monotonic() - 1
    assert relaxed.closed_until("c", "a", (), succeeded=True, deadline=past) is None
