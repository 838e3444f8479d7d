"""``diff`` on policies whose conditions on arguments differ (issue 31, item 6): it never
claims a proof that is not one, and every witness replays. On random pairs of small policies
(integer bounds on one parameter, and comparisons with a lookup's output), a brute check
decides sampled calls after sampled histories with both runtimes: whenever ``diff`` says
equivalent and complete, no sampled call (or pass) differs; whenever it gives a witness, the
witness's history runs in both runtimes (every step allowed and its call admitted) and ends
where the passes, or the witness call's admissions, differ as reported. Pairs that differ in
``ask_if`` alone are held to the same law, asking counting as a difference (a call both
admit and only one asks about); a difference the brute check finds at the first step, on a
well-typed call, is one ``diff`` reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st

from ruleengine import ArgumentsRequirement, ConflictError, Pass, Policy, Reasoner, RunState
from ruleengine.check import DiffReport, diff_policies
from ruleengine.conditions.types import ToolSpec, parameters_from_spec

LOOKUP = ToolSpec("lookup", None, parameters_from_spec({"id": "string"}, owner="t"))
PAY = ToolSpec("pay", None, parameters_from_spec({"amount": "integer"}, owner="t"))

bounds = st.integers(-2, 3)
conditions = st.one_of(
    st.builds("arg.amount <= {}".format, bounds),
    st.builds("arg.amount >= {}".format, bounds),
    st.builds("arg.amount < {}".format, bounds),
    st.builds("arg.amount == {}".format, bounds),
    st.builds("arg.amount != {}".format, bounds),
    st.sampled_from(
        [
            "arg.amount <= last('lookup').output.price",
            "arg.amount < last('lookup').output.price + 1",
            "arg.amount > last('lookup').output.price",
        ]
    ),
)


@st.composite
def policies(draw: st.DrawFn) -> list[tuple[list[str], list[str]]]:
    """Each arguments requirement on ``pay`` as its ``allow_if`` and ``deny_if`` lists."""
    out = []
    for _ in range(draw(st.integers(1, 2))):
        allow = draw(st.lists(conditions, max_size=2, unique=True))
        deny = draw(st.lists(conditions, max_size=1))
        out.append((allow, deny) if allow or deny else ([draw(conditions)], []))
    return out


def build(spec: list[tuple[list[str], list[str]]], asks: Sequence[str] = ()) -> Policy:
    reqs = [
        ArgumentsRequirement("pay", allow_if=a or None, deny_if=d or None, name=f"r{i}")
        for i, (a, d) in enumerate(spec)
    ]
    if asks:
        reqs.append(ArgumentsRequirement("pay", ask_if=list(asks), name="approve"))
    return Policy([LOOKUP, PAY], reqs)


def decide(reasoner: Reasoner, steps: list[dict[str, Any]], text: str | None) -> Any:
    try:
        return reasoner.decide(RunState.from_trace(steps, input=text))
    except ConflictError as exc:
        return exc


def view(outcome: Any) -> Any:
    if isinstance(outcome, ConflictError):
        return "conflict"
    return (frozenset(outcome.allowed), frozenset(outcome.hidden), outcome.forced, outcome.can_stop)


HISTORIES: list[list[dict[str, Any]]] = [
    [],
    [{"tool": "lookup", "status": "error"}],
    [{"tool": "lookup", "arguments": {"id": "x"}, "output": {}}],
    *[[{"tool": "lookup", "arguments": {"id": "x"}, "output": {"price": p}}] for p in range(-3, 5)],
]
CALLS: list[dict[str, Any]] = [{}, {"amount": "1"}, *({"amount": n} for n in range(-4, 6))]


def assert_replays(old: Reasoner, new: Reasoner, report: DiffReport) -> None:
    steps = [s.model_dump(mode="json") for s in report.trace]
    for n, step in enumerate(steps):
        for reasoner in (old, new):
            before = decide(reasoner, steps[:n], report.input)
            assert isinstance(before, Pass) and step["tool"] in before.allowed
            assert before.admits(step["tool"], step.get("arguments")).ok
    a, b = decide(old, steps, report.input), decide(new, steps, report.input)
    call = report.call
    if call is None:
        assert view(a) != view(b)
        return
    assert view(a) == view(b)
    said = (a.admits(call.tool, call.arguments), b.admits(call.tool, call.arguments))
    assert [(s.ok, s.ask) for s in said] == [
        (call.old.admitted, call.old.ask),
        (call.new.admitted, call.new.ask),
    ]
    if call.old.admitted == call.new.admitted:  # both admit it: only one asks first
        assert call.old.admitted and bool(call.old.ask) != bool(call.new.ask)


def said(p: Pass, call: dict[str, Any]) -> tuple[bool, bool]:
    """Whether ``p`` admits ``call``, and whether it asks first."""
    admission = p.admits("pay", call)
    return admission.ok, bool(admission.ask)


@settings(max_examples=30)
@given(policies(), policies())
def test_diff_on_conditions_claims_only_proofs_and_witnesses_that_replay(
    old_spec: list[tuple[list[str], list[str]]], new_spec: list[tuple[list[str], list[str]]]
) -> None:
    note(f"old: {old_spec}\nnew: {new_spec}")
    report = diff_policies(build(old_spec), build(new_spec))
    old, new = build(old_spec).reasoner(), build(new_spec).reasoner()
    assert_claims_hold(report, old, new, lambda p, call: p.admits("pay", call).ok)


def assert_claims_hold(
    report: DiffReport, old: Reasoner, new: Reasoner, decided: Callable[[Pass, Any], object]
) -> None:
    """A difference replays; a proof agrees with the runtime on every sampled history and
    call (what ``decided`` reads of a pass and a call)."""
    if not report.equivalent:
        assert report.complete
        assert_replays(old, new, report)
        return
    if not report.complete:
        assert report.reason
        return
    for history in HISTORIES:
        a, b = decide(old, history, None), decide(new, history, None)
        assert view(a) == view(b), history
        if isinstance(a, Pass):
            assert isinstance(b, Pass)
            for call in CALLS:
                assert decided(a, call) == decided(b, call), (history, call)


@settings(max_examples=30)
@given(
    policies(),
    st.lists(conditions, max_size=2, unique=True),
    st.lists(conditions, max_size=2, unique=True),
)
def test_diff_on_ask_if_alone_claims_only_proofs_and_witnesses_that_replay(
    spec: list[tuple[list[str], list[str]]], old_asks: list[str], new_asks: list[str]
) -> None:
    note(f"spec: {spec}\nold ask_if: {old_asks}\nnew ask_if: {new_asks}")
    report = diff_policies(build(spec, old_asks), build(spec, new_asks))
    old, new = build(spec, old_asks).reasoner(), build(spec, new_asks).reasoner()
    first = decide(old, [], None), decide(new, [], None)
    if isinstance(first[0], Pass) and isinstance(first[1], Pass):
        # At the first step run values are undefined or empty: Z3 sees every integer call.
        typed = [c for c in CALLS if isinstance(c.get("amount"), int)]
        if any(said(first[0], c) != said(first[1], c) for c in typed):
            assert not report.equivalent
    assert_claims_hold(report, old, new, said)
