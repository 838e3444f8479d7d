"""``diff`` on conditions on arguments that differ in ``ask_if`` (``check/diff_calls``): a
witness call both policies admit and only one asks about, replayed through the runtime
(``Pass.admits``: the two ``Admission.ask`` differ), or a proof when no admitted call tells
them apart; the shortest history comes first, and at equal length a call one policy refuses."""

from __future__ import annotations

from typing import Any

from ruleengine import ArgumentsRequirement, Policy, Reasoner, RunState
from ruleengine.check import DiffReport, diff_policies
from ruleengine.check.render import text_diff
from ruleengine.conditions.admission import some_arguments
from ruleengine.conditions.evaluate import Undefined
from ruleengine.conditions.terms import AnyOf
from ruleengine.conditions.types import ToolSpec, parameters_from_spec

LOOKUP = ToolSpec("lookup", None, parameters_from_spec({"id": "string"}, owner="t"))
PAY = ToolSpec("pay", None, parameters_from_spec({"amount": "integer"}, owner="t"))


def policy(**conditions: Any) -> Policy:
    return Policy([LOOKUP, PAY], [ArgumentsRequirement("pay", name="approve", **conditions)])


def replayed(old: Policy, new: Policy, report: DiffReport) -> tuple[Any, Any]:
    """The two runtime admissions of the report's witness call, after its trace (each step
    allowed and admitted by both)."""
    assert report.call is not None
    steps = [s.entry() for s in report.trace]
    admissions = []
    for p in (old, new):
        reasoner = p.reasoner()
        for n, step in enumerate(steps):
            before = reasoner.decide(RunState.from_trace(steps[:n], input=report.input))
            assert before.admits(step["tool"], step.get("arguments")).ok
        after = reasoner.decide(RunState.from_trace(steps, input=report.input))
        admissions.append(after.admits(report.call.tool, report.call.arguments))
    return admissions[0], admissions[1]


def test_a_difference_in_ask_if_alone_gets_a_call_one_asks_about_and_the_other_not() -> None:
    old, new = policy(ask_if="arg.amount > 50"), policy(ask_if="arg.amount > 100")
    report = diff_policies(old, new)
    assert not report.equivalent and report.complete and report.call is not None
    call = report.call
    assert call.tool == "pay" and 50 < call.arguments["amount"] <= 100
    assert call.old.admitted and call.new.admitted
    assert call.old.ask == ("approve",) and call.new.ask == ()
    a, b = replayed(old, new, report)
    assert a.ok and b.ok and a.ask == call.old.ask and b.ask == call.new.ask
    data = report.model_dump(mode="json")
    assert data["call"]["old"] == {"admitted": True, "reason": None, "ask": ["approve"]}
    assert data["call"]["new"] == {"admitted": True, "reason": None}  # no `ask`: none asks
    assert data["difference"]["old"] == data["difference"]["new"]
    text = text_diff(report).splitlines()
    assert "  old: admits it after asking: `approve`" in text
    assert "  new: admits it without asking" in text


def test_the_policy_that_asks_may_be_the_new_one_or_lack_the_requirement() -> None:
    # (`arg.amount >= 3` alone would refuse a call without `amount`: an admission witness)
    old = Policy([LOOKUP, PAY], [])
    new = policy(ask_if="arg.amount is not None and arg.amount >= 3")
    report = diff_policies(old, new)
    assert report.call is not None and not report.equivalent and report.complete
    assert report.call.old.ask == () and report.call.new.ask == ("approve",)
    a, b = replayed(old, new, report)
    assert a.ok and b.ok and not a.ask and b.ask


def test_asking_about_calls_that_are_denied_anyway_is_no_difference() -> None:
    old = policy(ask_if="arg.amount > 50", deny_if="arg.amount > 40")
    new = policy(ask_if="arg.amount > 100", deny_if="arg.amount > 40")
    report = diff_policies(old, new)
    assert report.equivalent and report.complete and report.call is None


def test_a_call_one_policy_refuses_comes_before_one_only_asked_about() -> None:
    old = policy(ask_if="arg.amount > 50", allow_if="arg.amount <= 100")
    new = policy(ask_if="arg.amount > 60", allow_if="arg.amount <= 200")
    report = diff_policies(old, new)
    assert report.call is not None and 100 < report.call.arguments["amount"] <= 200
    assert not report.call.old.admitted and report.call.new.admitted
    # The admitting side asks first, and says so.
    assert report.call.new.ask == ("approve",)
    assert "  new: admits it after asking: `approve`" in text_diff(report).splitlines()
    a, b = replayed(old, new, report)
    assert not a.ok and b.ok and b.ask


def test_the_shortest_history_comes_first_even_for_a_witness_of_asking() -> None:
    # At the first step both admit every amount and only the ask threshold differs; after a
    # lookup that returned 3, the old policy also refuses 3 (a longer history).
    old = policy(ask_if="arg.amount > 50", deny_if="arg.amount in outputs('lookup')")
    new = policy(ask_if="arg.amount > 60")
    report = diff_policies(old, new)
    assert report.call is not None and report.trace == ()
    assert report.call.old.admitted and report.call.new.admitted
    assert report.call.old.ask == ("approve",) and 50 < report.call.arguments["amount"] <= 60
    a, b = replayed(old, new, report)
    assert a.ok and b.ok and a.ask and not b.ask
    # With the same threshold, the refusal after the lookup is the difference.
    same = diff_policies(old, policy(ask_if="arg.amount > 50"))
    assert same.call is not None and len(same.trace) == 1
    assert not same.call.old.admitted and same.call.new.admitted


def test_an_ask_if_that_reads_a_missing_argument_is_not_a_witness_of_asking() -> None:
    # `amount` left out: the first ask_if holds, and the second reads the missing argument,
    # which refuses the call. Asking Z3 for some ask_if to hold, all of them readable, gives
    # `amount`, above 50.
    asks = ArgumentsRequirement("pay", ask_if=["arg.amount is None", "arg.amount > 50"])
    checks = Reasoner([PAY], [asks]).decide().argument_checks("pay")
    asking = [c.residual for c in checks if not isinstance(c.residual, Undefined)]
    some = AnyOf(tuple(asking))
    params = dict(checks[0].parameters)
    found = some_arguments([some], [], params, readable=asking)
    assert isinstance(found, dict) and found["amount"] > 50
    # `amount` left out makes `arg.amount is None` hold, and `arg.amount > 50` unreadable.
    assert some_arguments([asking[0]], [], params) == {}
    assert some_arguments([asking[0]], [], params, readable=asking) is False
    old, new = Policy([PAY], [asks]), Policy([PAY], [])
    report = diff_policies(old, new)
    assert report.call is not None
    a, b = replayed(old, new, report)
    assert a.ok != b.ok or bool(a.ask) != bool(b.ask)


# -- differences that need values of the run ---------------------------------------------------

LIMIT = "arg.amount <= last('lookup').output.price"


def test_a_difference_that_needs_a_value_of_the_run_gets_a_history_that_holds_it() -> None:
    # Both refuse a payment above the looked-up price; they ask (or refuse) from different
    # amounts: only a lookup whose price lies between tells them apart, and diff finds one.
    base = policy(allow_if=LIMIT, ask_if="arg.amount > 50")
    for other in (
        policy(allow_if=LIMIT, ask_if="arg.amount > 80"),
        policy(allow_if=LIMIT, ask_if="arg.amount > 50", deny_if="arg.amount > 80"),
    ):
        report = diff_policies(base, other)
        assert not report.equivalent and report.complete and report.call is not None
        assert [s.tool for s in report.trace] == ["lookup"]
        old, new = replayed(base, other, report)
        assert (old.ok, bool(old.ask)) != (new.ok, bool(new.ask))
        price = report.trace[0].output["price"]
        assert price > 50 and 50 < report.call.arguments["amount"] <= price
