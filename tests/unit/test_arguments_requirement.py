"""The arguments requirement end to end in the runtime: typed against the declared tools at
bind time, bound to the run's values each step, a tool no arguments can pass is not allowed
(and takes part in conflicts), ``Pass.conditions`` says what a call must meet,
``Pass.admits`` decides one call, the agent's gate admits exactly what ``admits`` admits, and
policy files declare parameters and arguments requirements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from agent import Admitted, Gate, Refused, tool
from agent.tools import FinalAnswerTool
from backends import ToolCall
from ruleengine import (
    ArgumentsRequirement,
    ConditionalRequirement,
    ConflictError,
    Policy,
    PolicyError,
    Reasoner,
    RunState,
)
from ruleengine.conditions import arg, last
from ruleengine.conditions.types import ToolSpec, parameters_from_spec

LOOKUP = ToolSpec("lookup_order", None, parameters_from_spec({"order_id": "string"}, owner="t"))
REFUND = ToolSpec(
    "refund", None, parameters_from_spec({"order_id": "string", "amount": "number"}, owner="t")
)
LIMIT = ArgumentsRequirement(
    "refund",
    allow_if=[
        arg.amount <= last("lookup_order").output.price,
        "arg.order_id == last('lookup_order').arguments.order_id",
    ],
    reason="refund at most the price of the order you looked up",
    name="refund-limit",
)
LOOKED_UP = RunState.from_trace(
    [{"tool": "lookup_order", "arguments": {"order_id": "o1"}, "output": {"price": 80}}]
)


def test_a_tool_whose_run_values_are_missing_is_not_allowed_and_says_why() -> None:
    p = Reasoner([LOOKUP, REFUND], [LIMIT]).decide()
    assert "refund" not in p.allowed
    assert p.reasons["refund"] == "refund at most the price of the order you looked up"
    assert p.admits("refund", {"order_id": "o1", "amount": 1}).ok is False


def test_the_pass_states_the_residual_and_admits_calls_on_their_arguments() -> None:
    p = Reasoner([LOOKUP, REFUND], [LIMIT]).decide(LOOKED_UP)
    assert "refund" in p.allowed
    assert p.conditions == {"refund": "arg.amount <= 80 and arg.order_id == 'o1'"}
    assert p.admits("refund", {"order_id": "o1", "amount": 80}).ok
    refused = p.admits("refund", {"order_id": "o1", "amount": 80.5})
    assert not refused.ok and [v.why for v in refused.core] == ["fails"]
    assert refused.reason is not None and refused.reason.startswith("refund at most")
    missing = p.admits("refund", {"order_id": "o1"})
    assert not missing.ok and "`arg.amount` is missing from the call" in str(missing.core[0])
    assert p.admits("lookup_order", {"order_id": "x"}).ok  # no conditions on it
    with pytest.raises(PolicyError, match="must be a mapping"):
        p.admits("refund", "amount=1")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="must be a tool name"):
        p.admits(3, {})  # type: ignore[arg-type]


def test_conditions_on_the_only_remaining_tool_that_clash_are_a_conflict() -> None:
    pay = ToolSpec("pay", None, parameters_from_spec({"amount": "number"}, owner="t"))
    reqs = [
        ArgumentsRequirement("pay", allow_if="arg.amount > 100", name="over"),
        ArgumentsRequirement("pay", allow_if="arg.amount < 50", name="under"),
        ConditionalRequirement("final_answer", only_after="pay", name="pay-first"),
    ]
    with pytest.raises(ConflictError) as caught:
        Reasoner([pay], reqs).decide()
    assert "no tool is left allowed" in caught.value.message
    # Without the clash partner, the tool is allowed with its condition.
    p = Reasoner([pay], [reqs[0], reqs[2]]).decide()
    assert p.allowed == ("pay",) and p.conditions == {"pay": "arg.amount > 100"}


def test_in_priority_mode_conditions_are_never_overridden() -> None:
    pay = ToolSpec("pay", None, parameters_from_spec({"amount": "number"}, owner="t"))
    from ruleengine import Rule, requirement

    @requirement(priority=99)
    def insist(state: RunState) -> list[Rule]:
        return [Rule("pay")]

    reqs = [
        ArgumentsRequirement("pay", allow_if="arg.amount > 100", name="over", priority=1),
        ArgumentsRequirement("pay", allow_if="arg.amount < 50", name="under", priority=1),
        insist,
    ]
    p = Reasoner([pay], reqs, mode="priority").decide()
    assert "pay" not in p.allowed
    assert "no arguments satisfy" in p.reasons["pay"]


def test_deny_if_and_ask_if() -> None:
    reqs = [
        ArgumentsRequirement("refund", deny_if="arg.amount > 1000", ask_if="arg.amount > 100"),
    ]
    p = Reasoner([LOOKUP, REFUND], reqs).decide()
    assert p.conditions == {"refund": "not (arg.amount > 1000)"}
    assert p.admits("refund", {"order_id": "o", "amount": 50}).ask == ()
    assert p.admits("refund", {"order_id": "o", "amount": 500}).ask == ("arguments(refund)",)
    assert not p.admits("refund", {"order_id": "o", "amount": 5000}).ok


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give at least one of `allow_if`, `deny_if`, `ask_if`"),
        ({"allow_if": 3}, "allow_if=`3` is not a condition"),
        ({"allow_if": ["arg.amount > 1", 3]}, "allow_if holds `3`, not a condition"),
        ({"deny_if": "arg.amount >"}, "not valid syntax"),
    ],
)
def test_bad_construction_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match="requirement `") as caught:
        ArgumentsRequirement("refund", **kwargs)
    assert message in caught.value.message


def test_binding_types_the_conditions_against_the_declared_tools() -> None:
    with pytest.raises(PolicyError, match="`refund` has no parameter `amout`"):
        Reasoner([LOOKUP, REFUND], [ArgumentsRequirement("refund", allow_if="arg.amout < 1")])
    with pytest.raises(PolicyError, match="declares no parameters"):
        Reasoner(["refund"], [ArgumentsRequirement("refund", allow_if="arg.amount < 1")])
    with pytest.raises(PolicyError, match="unknown tool `lookup`"):
        Reasoner(
            [REFUND], [ArgumentsRequirement("refund", allow_if="last('lookup').output.x == 1")]
        )
    unbound = ArgumentsRequirement("refund", allow_if="arg.amount < 1")
    with pytest.raises(PolicyError, match="is not bound to its tools"):
        unbound.run(RunState())


def test_a_tool_with_an_input_model_declares_its_parameters() -> None:
    @tool
    def transfer(iban: str, amount: float) -> str:
        """Send money."""
        return "sent"

    req = ArgumentsRequirement(transfer, allow_if="arg.iban.startswith('CH')", name="swiss")
    p = Reasoner([transfer], [req]).decide()
    assert p.conditions == {"transfer": "arg.iban.startswith('CH')"}
    gate = Gate({"transfer": transfer, "final_answer": FinalAnswerTool()}, None)
    ok = gate.admit(ToolCall("1", "transfer", {"iban": "CH93", "amount": 5}), p, RunState())
    assert isinstance(ok, Admitted)
    no = gate.admit(ToolCall("2", "transfer", {"iban": "DE89", "amount": 5}), p, RunState())
    assert isinstance(no, Refused)
    assert "allow_if `arg.iban.startswith('CH')` of `swiss` fails" in no.reason


amounts = st.one_of(
    st.integers(-1000, 1000), st.floats(-1000, 1000, allow_nan=False).map(lambda f: round(f, 2))
)


@given(amounts, st.sampled_from(["o1", "o2"]), st.integers(0, 200))
def test_the_gate_admits_exactly_what_admits_admits(amount: float, order: str, price: int) -> None:
    @tool
    def refund(order_id: str, amount: float) -> str:
        """Refund."""
        return "ok"

    @tool
    def lookup_order(order_id: str) -> dict[str, int]:
        """Look up."""
        return {"price": price}

    state = RunState.from_trace(
        [{"tool": "lookup_order", "arguments": {"order_id": "o1"}, "output": {"price": price}}]
    )
    p = Reasoner([lookup_order, refund], [LIMIT]).decide(state)
    gate = Gate(
        {"refund": refund, "lookup_order": lookup_order, "final_answer": FinalAnswerTool()}, None
    )
    verdict = gate.admit(ToolCall("1", "refund", {"order_id": order, "amount": amount}), p, state)
    expected = p.admits("refund", {"order_id": order, "amount": amount}).ok
    assert isinstance(verdict, Admitted) == expected
    assert expected == (order == "o1" and amount <= price)


def test_a_policy_file_declares_parameters_and_arguments_requirements(tmp_path: Path) -> None:
    path = tmp_path / "refunds.toml"
    path.write_text(
        """
[[tools]]
name = "lookup_order"
parameters = { order_id = "string" }

[[tools]]
name = "refund"
[tools.input_schema]
type = "object"
required = ["order_id", "amount"]
properties.order_id.type = "string"
properties.amount.type = "number"

[[requirements]]
type = "arguments"
name = "refund-limit"
target = "refund"
allow_if = "arg.amount <= last('lookup_order').output.price"
deny_if = ["arg.amount <= 0"]
""",
        encoding="utf-8",
    )
    policy = Policy.load(str(path))
    p = policy.reasoner().decide(LOOKED_UP)
    assert p.conditions == {"refund": "arg.amount <= 80 and not (arg.amount <= 0)"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[[tools]]\nname = "r"\nparameters = { a = "float" }\n',
            "p.toml:3: tools[0].parameters: tool `r`: parameter `a`: type `float` is not one of",
        ),
        (
            '[[tools]]\nname = "r"\nparameters = { a = "string" }\n'
            '[[requirements]]\ntype = "arguments"\ntarget = "r"\nallow_if = "arg.b == 1"\n',
            "`r` has no parameter `b`",
        ),
        (
            '[[tools]]\nname = "r"\nparameters = { a = "string" }\n'
            '[[requirements]]\ntype = "arguments"\ntarget = "r"\nallow_if = "eval(arg.a)"\n',
            "`eval(...)` is not part of the language",
        ),
    ],
)
def test_policy_file_mistakes_are_located(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        Policy.load(str(path))
    shown = str(caught.value)
    assert message in shown and "p.toml:" in shown


def test_the_checker_proves_policies_with_conditions_for_every_value_of_the_outputs() -> None:
    """Conditions reading run values are opaque checks to the checker: a proof holds for
    every value the outputs could have, and a finding that needs some values says it
    depends on them; conditions on arguments alone are decided exactly."""
    from ruleengine.check import check_policy

    forced = ConditionalRequirement("refund", force_after="lookup_order", name="refund-next")
    proved = check_policy(Policy([LOOKUP, REFUND], [forced, LIMIT]), timeout=30)
    assert proved.complete and proved.findings == ()

    # Forced (hard) right after the lookup: whether the refund may run then depends on the
    # price the lookup returned.
    second = ConditionalRequirement("refund", force_at_step=2, name="refund-second")
    lookup_first = ConditionalRequirement("lookup_order", force_at_step=1, name="lookup-first")
    hinging = check_policy(Policy([LOOKUP, REFUND], [lookup_first, second, LIMIT]), timeout=30)
    conflict = [f for f in hinging.findings if f.id == "forced-conflict"]
    assert hinging.complete and conflict and conflict[0].depends_on_tool_outputs
    assert not conflict[0].depends_on_custom_checks  # the policy has no custom check

    never = ArgumentsRequirement("refund", allow_if="arg.amount < 0 and arg.amount > 0")
    first = ConditionalRequirement("refund", force_at_step=1, name="refund-first")
    real = check_policy(Policy([LOOKUP, REFUND], [first, never]), timeout=30)
    found = [f for f in real.findings if f.id == "forced-conflict"]
    assert real.complete and found and not found[0].depends_on_tool_outputs


def test_final_answer_takes_the_answer_text_unless_declared_otherwise() -> None:
    quiet = ArgumentsRequirement(
        "final_answer", deny_if="'secret' in arg.response", name="no-secret-in-answer"
    )
    reasoner = Policy([LOOKUP], [quiet]).reasoner()
    step = reasoner.decide(RunState())
    assert step.admits("final_answer", {"response": "all done"}).ok
    assert not step.admits("final_answer", {"response": "the secret is 42"}).ok
    # an agent with a typed answer gives its own `final_answer`: its fields are the parameters
    with pytest.raises(PolicyError, match="response"):
        quiet.bind([LOOKUP, FinalAnswerTool(_Typed)])


def test_a_policy_file_may_declare_final_answers_parameters(tmp_path: Path) -> None:
    path = tmp_path / "typed.toml"
    path.write_text(
        """
[[tools]]
name = "search"
[[tools]]
name = "final_answer"
parameters = { city = "string" }
[[requirements]]
type = "arguments"
target = "final_answer"
deny_if = "arg.city == 'Paris'"
""",
        encoding="utf-8",
    )
    step = Policy.load(str(path)).reasoner().decide(RunState())
    assert step.admits("final_answer", {"city": "Rome"}).ok
    assert not step.admits("final_answer", {"city": "Paris"}).ok


class _Typed(BaseModel):
    city: str


def test_many_conditions_on_run_values_are_one_check_for_the_checker() -> None:
    """However many conditions of one requirement read run values, together they either
    admit some arguments or refuse the target: the checker explores one opaque check, not
    2**n valuations (past 12 it gave up)."""
    from ruleengine.check import check_policy

    names = [f"hotel {i}" for i in range(20)]
    answer = ArgumentsRequirement(
        "final_answer",
        deny_if=[f"'{n}' in arg.response and '{n}' not in outputs('lookup_order')" for n in names],
        ask_if="'refund' in input",
        name="answer-names-what-was-looked-up",
    )
    monitor = answer.bind([LOOKUP, REFUND]).monitor()
    assert monitor is not None and monitor.checks == 1
    report = check_policy(Policy([LOOKUP, REFUND], [answer]), timeout=30)
    assert report.complete and report.findings == ()
    # the runtime refuses what the conditions refuse, and says which condition
    looked = RunState.from_trace(
        [{"tool": "lookup_order", "arguments": {"order_id": "o"}, "output": {"hotel 3": 1}}],
        input="find me a hotel",
    )
    step = Policy([LOOKUP, REFUND], [answer]).reasoner().decide(looked)
    assert step.admits("final_answer", {"response": "book hotel 3"}).ok
    refused = step.admits("final_answer", {"response": "book hotel 4"})
    assert not refused.ok and "hotel 4" in (refused.reason or "")


def test_the_bounded_search_reports_nothing_that_hinges_on_values_it_does_not_have() -> None:
    """Without a monitor (a custom requirement emitting its own checks), the checker's
    bounded search cannot hold run values: it leaves such conditions out and reports nothing
    that could hinge on them."""
    from ruleengine import Requirement
    from ruleengine.check import check_policy
    from ruleengine.conditions.admission import ArgCheck
    from ruleengine.conditions.bind import bind
    from ruleengine.conditions.parse import parse
    from ruleengine.conditions.typecheck import Scope, check

    params = dict(REFUND.parameters or {})
    scope = Scope("refund", params, {"refund": params, "lookup_order": None})
    term = check(
        parse("arg.amount <= last('lookup_order').output.price", where="w"), scope, where="w"
    )

    class Limit(Requirement):
        def run(self, state: RunState) -> list[ArgCheck]:
            residual = bind(term, state)
            return [ArgCheck("refund", "allow_if", "limit", residual, tuple(params.items()))]

    forced = ConditionalRequirement("refund", force_after="lookup_order", name="refund-next")
    report = check_policy(Policy([LOOKUP, REFUND], [forced, Limit(name="limit")]), timeout=30)
    assert not report.complete
    assert [f.id for f in report.findings if f.severity == "error"] == []
    assert "conditions that read tool outputs" in (report.reason or "")


def test_the_new_seams_refuse_bad_input_by_name() -> None:
    from ruleengine.conditions.narrow import narrowed

    p = Reasoner([LOOKUP, REFUND], [LIMIT]).decide(LOOKED_UP)
    with pytest.raises(PolicyError, match="argument_checks: tool=`3` must be a tool name"):
        p.argument_checks(3)  # type: ignore[arg-type]
    assert p.argument_checks("lookup_order") == ()
    with pytest.raises(PolicyError, match="is not a JSON schema"):
        narrowed(3, [])  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="is not an `ArgCheck`"):
        narrowed({"type": "object"}, [3])  # type: ignore[list-item]
    with pytest.raises(PolicyError, match="timeout=`-1` must be positive"):
        ArgumentsRequirement("refund", ask_if="arg.amount > 1", timeout=-1)
    with pytest.raises(PolicyError, match="handler=`3` is not callable"):
        ArgumentsRequirement("refund", ask_if="arg.amount > 1", handler=3)  # type: ignore[arg-type]


def test_unsatisfiable_and_shadowed_conditions_are_found_from_the_conditions_alone() -> None:
    from ruleengine.check import check_policy

    pay = ToolSpec("pay", None, parameters_from_spec({"amount": "number"}, owner="t"))
    reqs = [
        ArgumentsRequirement("pay", allow_if="arg.amount > 100", name="over"),
        ArgumentsRequirement("pay", allow_if="arg.amount > 0", name="positive"),
        ArgumentsRequirement("pay", allow_if="arg.amount < 50", name="under"),
    ]
    report = check_policy(Policy([pay, "log"], reqs), timeout=30)
    (finding,) = [f for f in report.findings if f.id == "unsatisfiable-condition"]
    assert finding.severity == "error" and finding.tool == "pay"
    assert [c.requirement for c in finding.core] == ["over", "under"]  # minimal
    assert "dead-tool" not in [f.id for f in report.findings]  # the error says it

    shadowing = [
        ArgumentsRequirement("pay", allow_if="arg.amount <= 100", name="cap"),
        ArgumentsRequirement("pay", allow_if="arg.amount <= 500", name="loose"),
        ArgumentsRequirement(
            "pay", deny_if="arg.amount > last('log').output.max", name="reads-a-value"
        ),
    ]
    report = check_policy(Policy([pay, "log"], shadowing), timeout=30)
    shadowed = [(f.id, f.requirement) for f in report.findings]
    assert shadowed == [("shadowed-condition", "loose")]  # conditions on run values aside


def test_the_checker_reads_the_outputs_of_a_tool_that_never_ran_as_empty() -> None:
    """`outputs("T")` before `T` succeeded is the empty list, at run time and to the checker:
    no finding hinges on values that cannot exist yet."""
    from ruleengine.check import check_policy

    first = ConditionalRequirement("refund", force_at_step=1, name="refund-first")
    fresh = ArgumentsRequirement("refund", deny_if="arg.order_id in outputs('lookup_order')")
    report = check_policy(Policy([LOOKUP, REFUND], [first, fresh]), timeout=30)
    assert report.complete and not [f for f in report.findings if f.id == "forced-conflict"]
    # and where the outputs are empty no argument passes, the finding is exact
    none = ArgumentsRequirement("refund", allow_if="arg.order_id in outputs('lookup_order')")
    report = check_policy(Policy([LOOKUP, REFUND], [first, none]), timeout=30)
    found = [f for f in report.findings if f.id == "forced-conflict"]
    assert found and not found[0].depends_on_tool_outputs


def test_checks_first_met_late_in_a_reasoners_life_are_decided() -> None:
    """The reasoner looks for argument checks only once it has met one: a requirement that
    emits its first one after many plain steps still gets it decided, at that very step."""
    from ruleengine import requirement

    @requirement(name="late")
    def late(state: RunState) -> list[object]:
        return list(LIMIT.bind([LOOKUP, REFUND]).run(state)) if state.steps else []

    reasoner = Reasoner([LOOKUP, REFUND], [late])
    assert "refund" in reasoner.decide(RunState()).allowed  # no checks yet
    broke = RunState.from_trace([{"tool": "lookup_order", "arguments": {}, "output": {}}])
    p = reasoner.decide(broke)
    assert "refund" not in p.allowed and p.reasons["refund"].startswith("refund at most")
    assert reasoner.decide(LOOKED_UP).conditions == {
        "refund": "arg.amount <= 80 and arg.order_id == 'o1'"
    }


def test_diff_compares_conditions_with_a_witness_call_or_a_proof() -> None:
    from ruleengine.check import diff_policies

    def policy(condition: str) -> Policy:
        return Policy([LOOKUP, REFUND], [ArgumentsRequirement("refund", allow_if=condition)])

    differ = diff_policies(policy("arg.amount <= 100"), policy("arg.amount <= 200"))
    assert not differ.equivalent and differ.complete and differ.call is not None
    call = differ.call
    assert call.tool == "refund" and 100 < call.arguments["amount"] <= 200
    assert not call.old.admitted and call.new.admitted and "fails" in (call.old.reason or "")
    assert differ.model_dump(mode="json")["call"]["new"] == {"admitted": True, "reason": None}
    same = diff_policies(
        policy("arg.amount <= 100"), policy("arg.amount < 100 or arg.amount == 100")
    )
    assert same.equivalent and same.complete
    assert "call" not in same.model_dump(mode="json")
    # Equivalent for every price a lookup returns, proved with the price an unknown.
    reads = diff_policies(
        policy("arg.amount <= last('lookup_order').output.price"),
        Policy(
            [LOOKUP, REFUND],
            [
                ArgumentsRequirement(
                    "refund", deny_if="last('lookup_order').output.price < arg.amount"
                )
            ],
        ),
    )
    assert reads.equivalent and reads.complete


# -- arguments a call may leave out -------------------------------------------------------

UPDATE = ToolSpec(
    "update",
    None,
    parameters_from_spec({"id": "integer", "recipient": "string", "amount": "number"}, owner="t"),
)


def test_an_optional_argument_is_tested_only_when_the_call_gives_it() -> None:
    known = ArgumentsRequirement(
        "update",
        allow_if="arg.recipient is None or arg.recipient in ['A', 'B']",
        deny_if=arg.amount.is_not_none() & (arg.amount > 100),
        name="known",
    )
    p = Reasoner([UPDATE], [known]).decide()
    assert p.conditions["update"] == (
        "(arg.recipient is None or arg.recipient in ['A', 'B'])"
        " and not (arg.amount is not None and arg.amount > 100)"
    )
    admitted = [
        p.admits("update", call).ok
        for call in (
            {"id": 1},
            {"id": 1, "recipient": None, "amount": None},
            {"id": 1, "recipient": "A", "amount": 100},
            {"id": 1, "recipient": "C"},
            {"id": 1, "amount": 101},
        )
    ]
    assert admitted == [True, True, True, False, False]


def test_a_missing_argument_read_without_a_test_still_refuses_the_call() -> None:
    p = Reasoner([UPDATE], [ArgumentsRequirement("update", allow_if="arg.amount <= 100")]).decide()
    admission = p.admits("update", {"id": 1})
    assert not admission.ok
    assert admission.core[0].why == "`arg.amount` is missing from the call"
    # read left to right: the missing argument is read only when the first part holds
    q = Reasoner(
        [UPDATE], [ArgumentsRequirement("update", deny_if="arg.id == 1 and arg.amount > 5")]
    )
    assert q.decide().admits("update", {"id": 2}).ok
    assert not q.decide().admits("update", {"id": 1}).ok


def test_z3_knows_a_call_that_must_leave_an_argument_out_and_give_it_is_impossible() -> None:
    both = ArgumentsRequirement(
        "update", allow_if="arg.recipient is None", deny_if="arg.recipient is None", name="both"
    )
    p = Reasoner([UPDATE], [both]).decide()
    assert "update" not in p.allowed
    assert "no arguments satisfy" in p.reasons["update"]
    # an allow_if that needs the argument left out, and a deny_if that reads it: also none
    reads = ArgumentsRequirement(
        "update", allow_if="arg.recipient is None", deny_if="arg.recipient == 'x'"
    )
    assert "update" not in Reasoner([UPDATE], [reads]).decide().allowed


def test_is_none_outside_an_argument_is_a_located_error() -> None:
    with pytest.raises(PolicyError, match="only an argument can be left out"):
        Reasoner([UPDATE], [ArgumentsRequirement("update", allow_if="input is None")])
    with pytest.raises(PolicyError, match="only an argument can be left out"):
        last("update").output.is_none()
    with pytest.raises(PolicyError, match="has no parameter `nope`"):
        Reasoner([UPDATE], [ArgumentsRequirement("update", allow_if="arg.nope is not None")])


# -- all / any over a list argument -------------------------------------------------------

MAIL = ToolSpec(
    "mail",
    None,
    parameters_from_spec({"to": ["string"], "cc": ["string"], "body": "string"}, owner="t"),
)


def test_every_item_of_a_list_argument_is_tested() -> None:
    known = ArgumentsRequirement(
        "mail",
        allow_if=[
            "len(arg.to) >= 1",
            "all(r in ['ana@x.com', 'ben@x.com'] or r in input for r in arg.to)",
            "arg.cc is None or all(c.endswith('@x.com') for c in arg.cc)",
        ],
        name="known",
    )
    p = Reasoner([MAIL], [known]).decide(RunState(input="write to eve@y.com"))
    calls = [
        {"to": ["ana@x.com"]},
        {"to": ["ana@x.com", "eve@y.com"], "cc": ["zed@x.com"]},
        {"to": []},
        {"to": ["ana@x.com", "mallory@z.com"]},
        {"to": ["ben@x.com"], "cc": ["mallory@z.com"]},
    ]
    assert [p.admits("mail", c).ok for c in calls] == [True, True, False, False, False]


def test_z3_decides_all_and_any_over_literals() -> None:
    clash = ArgumentsRequirement(
        "mail", allow_if=["all(r in ['a'] for r in arg.to)", "any(r == 'b' for r in arg.to)"]
    )
    # `r == 'b'` has no Z3 form: the tool counts as admissible, each call still tested
    p = Reasoner([MAIL], [clash]).decide()
    assert "mail" in p.allowed and not p.admits("mail", {"to": ["a"]}).ok
    exact = ArgumentsRequirement(
        "mail", allow_if=["all(r in ['a'] for r in arg.to)", "any(r in ['b'] for r in arg.to)"]
    )
    assert "no arguments satisfy" in Reasoner([MAIL], [exact]).decide().reasons["mail"]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("all(r in ['a'] for r in arg.body)", "goes over a list of strings"),
        ("all(r for r in arg.to if r)", "one name, no `if`"),
        ("any(r == 'a' for r in ['a'])", "goes over a list argument"),
        ("all(r in ['a'] for r in arg.to) and r == 'a'", "unknown name `r`"),
        ("all(any(s == r for s in arg.cc) for r in arg.to)", "inside another one"),
    ],
)
def test_all_and_any_outside_their_form_are_located_errors(condition: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Reasoner([MAIL], [ArgumentsRequirement("mail", allow_if=condition)])
