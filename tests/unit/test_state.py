"""``RunState`` and ``Step``: building from traces, counting helpers, immutability."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ruleengine import PolicyError, RunState, Step

TRACE = ["search", ("think", "error"), "search", ("send", "denied"), ("think", "ok")]


def test_from_trace_reads_names_and_pairs() -> None:
    state = RunState.from_trace(TRACE)
    assert [(s.tool, s.status) for s in state.steps] == [
        ("search", "ok"),
        ("think", "error"),
        ("search", "ok"),
        ("send", "denied"),
        ("think", "ok"),
    ]
    assert state.step_number == 6
    assert state.iteration == 0 and state.input is None


def test_from_trace_accepts_steps_and_mappings_and_keywords() -> None:
    step = Step(tool="fetch", arguments={"url": "x"}, output="page")
    state = RunState.from_trace(
        [step, {"tool": "think", "status": "error", "error": "boom"}], iteration=4, input="q"
    )
    assert state.steps[0] is step
    assert (state.steps[1].tool, state.steps[1].status, state.steps[1].error) == (
        "think",
        "error",
        "boom",
    )
    assert (state.iteration, state.input) == (4, "q")


def test_from_trace_takes_any_iterable() -> None:
    state = RunState.from_trace(iter(["a", "b"]))
    assert [s.tool for s in state.steps] == ["a", "b"]


def test_an_empty_run() -> None:
    state = RunState()
    assert state.steps == ()
    assert state.step_number == 1
    assert state.last_tool() is None
    assert not state.called("a")
    assert state.count("a", only_success=False) == 0


def test_called_and_count_look_at_successful_steps_by_default() -> None:
    state = RunState.from_trace(TRACE)
    assert state.called("search") and state.called("think")
    assert not state.called("send")
    assert state.called("send", only_success=False)
    assert state.count("search") == 2
    assert state.count("think") == 1
    assert state.count("think", only_success=False) == 2
    assert state.count("send") == 0
    assert state.count("send", only_success=False) == 1


def test_last_tool_with_and_without_only_success() -> None:
    state = RunState.from_trace(["search", ("think", "error")])
    assert state.last_tool() == "search"
    assert state.last_tool(only_success=False) == "think"
    state = RunState.from_trace([("think", "denied")])
    assert state.last_tool() is None
    assert state.last_tool(only_success=False) == "think"


def test_counted_filters_steps() -> None:
    state = RunState.from_trace(TRACE)
    assert [s.tool for s in state.counted()] == ["search", "search", "think"]
    assert state.counted(only_success=False) == state.steps


def test_with_step_returns_a_new_state() -> None:
    state = RunState.from_trace(["a"], iteration=2, input="q")
    longer = state.with_step(Step(tool="b", status="error"))
    assert [s.tool for s in state.steps] == ["a"]
    assert [s.tool for s in longer.steps] == ["a", "b"]
    assert (longer.iteration, longer.input) == (2, "q")
    assert longer.step_number == 3


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["ok", "error", "denied"])),
        max_size=12,
    ),
    st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_a_state_grown_step_by_step_summarises_as_one_built_whole(
    trace: list[tuple[str, str]], read: list[bool]
) -> None:
    # `with_step` carries the summaries a state computed one step on: they must be the ones
    # the longer history gives, whichever were computed along the way.
    state = RunState(input="q", memory=("m",))
    for n, (tool, status) in enumerate(trace):
        if read[n]:
            state.summary(only_success=n % 2 == 0)
        state = state.with_step(Step(tool=tool, status=status))  # type: ignore[arg-type]
    whole = RunState.from_trace(trace, input="q")
    assert state == whole and state.memory == ("m",)
    for only_success in (True, False):
        assert state.summary(only_success=only_success) == whole.summary(only_success=only_success)
    with pytest.raises(PolicyError, match="is not a `Step`"):
        state.with_step("a")  # type: ignore[arg-type]


def test_states_and_steps_are_frozen() -> None:
    state = RunState.from_trace(["a"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.steps = ()  # type: ignore[misc]
    with pytest.raises(ValidationError):
        state.steps[0].tool = "b"  # type: ignore[misc]


def test_states_compare_by_steps_not_memory() -> None:
    assert RunState.from_trace(["a"]) == RunState.from_trace(["a"])
    assert RunState.from_trace(["a"], memory=(1,)) == RunState.from_trace(["a"], memory=(2,))
    assert RunState.from_trace(["a"]) != RunState.from_trace([("a", "error")])


@pytest.mark.parametrize("status", ["failed", "OK", "", None])
def test_a_bad_status_names_the_entry(status: object) -> None:
    with pytest.raises(PolicyError) as info:
        RunState.from_trace(["a", ("think", status)])
    assert info.value.message.startswith("trace entry 2:")
    assert "`think`" in info.value.message


@pytest.mark.parametrize("entry", [3, None, ("a",), ("a", "ok", "x"), (1, "ok"), ["a", "ok"], b"a"])
def test_an_entry_that_is_not_a_step_is_rejected(entry: object) -> None:
    with pytest.raises(PolicyError) as info:
        RunState.from_trace(["a", "b", entry])  # type: ignore[list-item]
    assert info.value.message.startswith("trace entry 3:")


def test_a_bad_mapping_entry_is_rejected_without_a_pydantic_traceback() -> None:
    with pytest.raises(PolicyError) as info:
        RunState.from_trace([{"tool": "a", "status": "maybe"}])
    assert info.value.message.startswith("trace entry 1: not a valid step: `status`")
    assert info.value.__cause__ is None
    with pytest.raises(PolicyError):
        RunState.from_trace([{"tool": "a", "colour": "red"}])


def test_step_validates_its_fields() -> None:
    assert Step(tool="a").status == "ok"
    with pytest.raises(PolicyError, match="not a valid step: `status`") as info:
        Step(tool="a", status="weird")  # type: ignore[arg-type]
    assert info.value.__cause__ is None
    with pytest.raises(PolicyError, match="not a valid step: `extra`"):
        Step(tool="a", extra=1)  # type: ignore[call-arg]
    with pytest.raises(PolicyError, match="`tool` must not be empty"):
        Step(tool="")
    with pytest.raises(PolicyError, match="not a valid step: `tool`"):
        Step(tool=5)  # type: ignore[arg-type]
