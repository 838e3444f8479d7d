"""Laws of the condition language on random conditions and values:

- a condition prints as text that parses back to it;
- the concrete evaluation (what the gate runs on every call) and Z3 (what decides whether
  any arguments are admissible) agree on every condition and every call, calls that leave
  arguments out included (read left to right, ``arg.NAME is None`` tests among them);
- ``satisfiable``'s example arguments satisfy the conditions concretely, and ``False`` means
  no tried call does;
- a guessed call (the conditions' own values, tried before Z3) passes, and Z3 agrees;
- a ``clash`` is unsatisfiable and minimal.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

import z3
from hypothesis import given
from hypothesis import strategies as st

from ruleengine import ArgumentsRequirement, Pass, Reasoner, RunState
from ruleengine.conditions import _z3, check, parse, text
from ruleengine.conditions.evaluate import holds
from ruleengine.conditions.regex import parse_pattern
from ruleengine.conditions.terms import (
    Affix,
    All,
    AnyOf,
    Arg,
    Arith,
    Cmp,
    Const,
    IsNone,
    Item,
    Len,
    ListConst,
    Matches,
    Member,
    Negation,
    Quantified,
    Scale,
    Term,
    walk,
)
from ruleengine.conditions.typecheck import Scope
from ruleengine.conditions.types import ParamType, ToolSpec, parameters_from_spec
from ruleengine.conditions.witness import guess

PARAMS = {
    "n": ParamType("integer"),
    "m": ParamType("integer"),
    "x": ParamType("number"),
    "s": ParamType("string"),
    "t": ParamType("string"),
    "b": ParamType("boolean"),
    "tags": ParamType("strings"),
    "kind": ParamType("string", ("a", "bc")),
}
SCOPE = Scope("tool", PARAMS, {"tool": PARAMS})
ALPHABET = "ab.@-"

small_ints = st.integers(-6, 6)
fractions = st.builds(Fraction, st.integers(-12, 12), st.sampled_from([1, 2, 3, 4]))
strings = st.text(ALPHABET, max_size=4)


def integer_terms() -> st.SearchStrategy[Term]:
    base = st.one_of(
        st.builds(Const, small_ints),
        st.sampled_from([Arg("n"), Arg("m")]),
        st.builds(Len, st.sampled_from([Arg("s"), Arg("t"), Arg("tags")])),
    )
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.builds(Arith, st.sampled_from(["+", "-"]), inner, inner),
            st.builds(Scale, st.builds(Fraction, small_ints), inner),
        ),
        max_leaves=4,
    )


def number_terms() -> st.SearchStrategy[Term]:
    base = st.one_of(st.builds(Const, fractions), st.just(Arg("x")), integer_terms())
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.builds(Arith, st.sampled_from(["+", "-"]), inner, inner),
            st.builds(Scale, fractions, inner),
        ),
        max_leaves=4,
    )


string_terms = st.one_of(
    st.builds(Const, strings), st.sampled_from([Arg("s"), Arg("t"), Arg("kind")])
)
patterns = st.sampled_from(
    ["a*", "[ab]+@b", "(a|b)?.", "[^@]*@[a-b]{1,2}", "\\.+", "a{0,2}b?", "", "[\\w-]*", "..."]
)
ORDER = ["==", "!=", "<", "<=", ">", ">="]


def atoms() -> st.SearchStrategy[Term]:
    return st.one_of(
        st.builds(Cmp, st.sampled_from(ORDER), number_terms(), number_terms()),
        st.builds(Cmp, st.sampled_from(["==", "!="]), string_terms, string_terms),
        st.builds(
            Cmp, st.sampled_from(["==", "!="]), st.just(Arg("b")), st.builds(Const, st.booleans())
        ),
        st.just(Arg("b")),
        st.builds(
            Member,
            string_terms,
            st.builds(ListConst, st.lists(strings, max_size=3).map(tuple)),
            st.booleans(),
        ),
        st.builds(
            Member,
            st.sampled_from([Arg("n"), Arg("x")]),
            st.builds(ListConst, st.lists(st.one_of(small_ints, fractions), max_size=3).map(tuple)),
            st.booleans(),
        ),
        st.builds(IsNone, st.sampled_from([Arg(name) for name in PARAMS]), st.booleans()),
        st.builds(
            Quantified,
            st.booleans(),
            st.just("r"),
            st.just(Arg("tags")),
            st.builds(
                Member,
                st.just(Item("r")),
                st.builds(ListConst, st.lists(strings, max_size=3).map(tuple)),
                st.booleans(),
            ),
        ),
        st.builds(Member, string_terms, st.sampled_from([Arg("s"), Arg("t")]), st.booleans()),
        st.builds(Member, st.builds(Const, strings), st.just(Arg("tags")), st.booleans()),
        st.builds(Affix, st.sampled_from(["startswith", "endswith"]), string_terms, string_terms),
        st.builds(
            Matches,
            st.sampled_from([Arg("s"), Arg("t")]),
            patterns.map(lambda p: parse_pattern(p, where="test")),
        ),
    )


conditions = st.recursive(
    atoms(),
    lambda inner: st.one_of(
        st.builds(All, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(AnyOf, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(Negation, inner),
    ),
    max_leaves=6,
)

calls = st.fixed_dictionaries(
    {
        "n": small_ints,
        "m": small_ints,
        "x": fractions,
        "s": strings,
        "t": strings,
        "b": st.booleans(),
        "tags": st.lists(strings, max_size=3),
        "kind": st.sampled_from(["a", "bc"]),
    }
)


@st.composite
def partial_calls(draw: st.DrawFn) -> dict[str, Any]:
    """A call that leaves some arguments out, or gives them as ``None``."""
    call = draw(calls)
    for name in sorted(call):
        how = draw(st.sampled_from(["given", "given", "left out", "None"]))
        if how == "left out":
            del call[name]
        elif how == "None":
            call[name] = None
    return call


def _fix(solver: z3.Solver, enc: _z3._Encoder, call: dict[str, Any]) -> None:
    """Fix the encoder's variables to the call's values (those it gives), with the domain."""
    for name, var in enc.vars.items():
        if call.get(name) is not None:
            solver.add(var == enc.literal(call[name]))
    for name, (length, held) in enc.lists.items():
        if call.get(name) is not None:
            solver.add(length == len(call[name]))
            for literal, has in held.items():
                solver.add(has == (literal in call[name]))
            if name in enc.stray:
                solver.add(enc.stray[name] == any(i not in held for i in call[name]))
    solver.add(*enc.domain())


def _z3_holds(term: Term, call: dict[str, Any]) -> bool:
    """Z3's answer: the condition with every argument fixed to the call's value."""
    ctx = z3.Context()
    enc = _z3._Encoder(PARAMS, ctx)
    formula = enc.condition(term)
    solver = z3.Solver(ctx=ctx)
    _fix(solver, enc, call)
    solver.add(formula)
    answer = solver.check()
    assert answer != z3.unknown, text(term)
    return answer == z3.sat


@given(conditions)
def test_a_condition_prints_as_text_that_parses_back_to_it(term: Term) -> None:
    typed = check(term, SCOPE, where="law")
    assert check(parse(text(typed), where="law"), SCOPE, where="law") == typed


@given(conditions, calls)
def test_concrete_evaluation_agrees_with_z3(term: Term, call: dict[str, Any]) -> None:
    typed = check(term, SCOPE, where="law")
    concrete = holds(typed, call, PARAMS)
    assert isinstance(concrete, bool)
    assert concrete == _z3_holds(typed, call), text(typed)


@given(conditions, partial_calls())
def test_a_call_that_leaves_arguments_out_is_decided_as_z3_decides(
    term: Term, call: dict[str, Any]
) -> None:
    """With every argument's presence a Z3 variable: the concrete answer (True, False, or
    undefined: it read a missing argument) is the one Z3 finds for the call's values."""
    typed = check(term, SCOPE, where="law")
    concrete = holds(typed, call, PARAMS)
    ctx = z3.Context()
    enc = _z3._Encoder(PARAMS, ctx)
    enc.given = {name: z3.Bool(f"given {name}", ctx) for name in PARAMS}
    value = enc.condition(typed)
    defined = enc.defined(typed)
    if defined is None:  # reads no argument
        defined = z3.BoolVal(True, ctx)
    solver = z3.Solver(ctx=ctx)
    for name, given_ in enc.given.items():
        solver.add(given_ == (call.get(name) is not None))
    _fix(solver, enc, call)

    def possible(*formula: z3.BoolRef) -> bool:
        answer = solver.check(*formula)
        assert answer != z3.unknown, text(typed)
        return bool(answer == z3.sat)

    if concrete is True:
        assert possible(defined, value) and not possible(defined, z3.Not(value)), text(typed)
    elif concrete is False:
        assert possible(defined, z3.Not(value)) and not possible(defined, value), text(typed)
    else:
        assert not possible(defined), (text(typed), concrete)


@given(conditions, conditions, st.lists(calls, min_size=1, max_size=5))
def test_satisfiable_examples_satisfy_and_refutations_refute(
    required: Term, forbidden: Term, tried: list[dict[str, Any]]
) -> None:
    req, forb = check(required, SCOPE, where="law"), check(forbidden, SCOPE, where="law")
    answer = _z3.satisfiable([req], [forb], PARAMS)
    if answer is None:
        return  # Z3 could not tell within its resource limit: nothing is claimed
    if answer is False:
        for call in tried:
            assert not (holds(req, call, PARAMS) is True and holds(forb, call, PARAMS) is False)
        return
    assert isinstance(answer, dict)
    # An argument tested with `is None` that the example leaves out stays out.
    tested = {t.of.name for c in (req, forb) for t in walk(c) if isinstance(t, IsNone)}
    example = {k: v for k, v in tried[0].items() if k not in tested} | answer
    assert holds(req, example, PARAMS) is True, (text(req), example)
    assert holds(forb, example, PARAMS) is False, (text(forb), example)


@given(st.lists(conditions, max_size=3), st.lists(conditions, max_size=3))
def test_a_guessed_call_passes_and_z3_agrees_that_some_call_does(
    required: list[Term], forbidden: list[Term]
) -> None:
    req = [check(t, SCOPE, where="law") for t in required]
    forb = [check(t, SCOPE, where="law") for t in forbidden]
    call = guess(req, forb, PARAMS)
    if call is None:
        return  # a guess that finds nothing proves nothing
    assert all(holds(t, call, PARAMS) is True for t in req)
    assert all(holds(t, call, PARAMS) is False for t in forb)
    assert _z3.satisfiable(req, forb, PARAMS) is not False, [text(t) for t in req + forb]


@given(st.lists(conditions, min_size=1, max_size=4), st.lists(conditions, max_size=3))
def test_a_clash_is_unsatisfiable_and_minimal(required: list[Term], forbidden: list[Term]) -> None:
    req = [check(t, SCOPE, where="law") for t in required]
    forb = [check(t, SCOPE, where="law") for t in forbidden]
    found = _z3.clash(req, forb, PARAMS)
    if _z3.satisfiable(req, forb, PARAMS) is not False:
        assert found is None
        return
    assert found is not None
    kept_req, kept_forb = found
    core_req = [req[i] for i in kept_req]
    core_forb = [forb[i] for i in kept_forb]
    assert _z3.satisfiable(core_req, core_forb, PARAMS) is False
    for i in range(len(core_req)):
        assert _z3.satisfiable(core_req[:i] + core_req[i + 1 :], core_forb, PARAMS) is not False
    for i in range(len(core_forb)):
        assert _z3.satisfiable(core_req, core_forb[:i] + core_forb[i + 1 :], PARAMS) is not False


# -- the checker's view of an arguments requirement ---------------------------------------

_LOOKUP = ToolSpec("lookup", None, parameters_from_spec({"id": "string"}, owner="t"))
_PAY = ToolSpec("pay", None, parameters_from_spec({"id": "string", "amount": "number"}, owner="t"))
_REQUIREMENTS = [
    ArgumentsRequirement(
        "pay",
        allow_if=[
            "arg.amount <= last('lookup').output.price",
            "arg.id == last('lookup').arguments.id",
        ],
        name="limit",
    ),
    ArgumentsRequirement(
        "pay", allow_if="arg.amount > 10", deny_if="arg.amount > 1000", name="band"
    ),
    ArgumentsRequirement("pay", ask_if="arg.amount > 100", name="big"),
]
_steps = st.one_of(
    st.builds(
        lambda price, key, ok: {
            "tool": "lookup",
            "arguments": {"id": key},
            "output": {"price": price} if ok else None,
            "status": "ok" if ok else "error",
        },
        st.one_of(st.integers(0, 2000), st.just("n/a")),
        st.sampled_from(["a", "b"]),
        st.booleans(),
    ),
    st.builds(lambda a: {"tool": "pay", "arguments": {"id": "a", "amount": a}}, st.integers(0, 50)),
)


@given(st.lists(_steps, max_size=4))
def test_every_runtime_pass_is_one_the_checker_considers(trace: list[dict[str, Any]]) -> None:
    """The arguments monitor over-approximates the runtime: at every state, the pass the
    runtime decides (with the real outputs) is the pass of the monitor's rules under some
    value of its opaque checks."""
    reasoner = Reasoner([_LOOKUP, _PAY], _REQUIREMENTS)
    for n in range(len(trace) + 1):
        state = RunState.from_trace(trace[:n])
        runtime = reasoner.decide(state)
        seen = set()
        monitors = [(req, req.monitor()) for req in reasoner.requirements]
        options = []
        for req, monitor in monitors:
            assert monitor is not None
            view = monitor.view_of(state)
            options.append(
                [
                    reasoner.wrap(req, monitor.emit(view, values))
                    for values in product([True, False], repeat=monitor.checks)
                ]
            )
        for choice in product(*options):
            decided = reasoner.settle([e for records in choice for e in records])
            if not isinstance(decided, type(runtime)):
                continue
            seen.add((decided.allowed, decided.forced, decided.can_stop))
        assert (runtime.allowed, runtime.forced, runtime.can_stop) in seen, (trace[:n], seen)


def test_a_guess_past_many_named_values_still_tries_the_neutral_ones() -> None:
    # twenty names an answer may not mention: the empty answer passes, and is tried although
    # the conditions name more values than one parameter gets
    params = {"response": ParamType("string")}
    scope = Scope("final_answer", params, {"final_answer": params})
    forbidden = [
        check(parse(f"'hotel {i}' in arg.response", where="w"), scope, where="w") for i in range(20)
    ]
    assert guess([], forbidden, params) == {"response": ""}


_TOOL = ToolSpec("tool", None, PARAMS)


@given(
    st.lists(conditions, max_size=2),
    st.lists(conditions, max_size=2),
    conditions,
    st.lists(calls, min_size=1, max_size=3),
)
def test_a_deny_if_more_admits_no_call_and_allows_no_tool_that_was_refused(
    allow: list[Term], deny: list[Term], extra: Term, tried: list[dict[str, Any]]
) -> None:
    """``admits`` is monotone in added ``deny_if`` conditions: a call refused before is
    refused after, and a tool not allowed stays not allowed."""

    def decided(denied: list[Term]) -> Pass:
        requirement = ArgumentsRequirement(
            "tool",
            allow_if=[text(t) for t in allow] or "True",
            deny_if=[text(t) for t in denied] or None,
            name="conditions",
        )
        return Reasoner([_TOOL, "other"], [requirement]).decide(RunState())

    before, after = decided(deny), decided([*deny, extra])
    if "tool" not in before.allowed:
        assert "tool" not in after.allowed
    for call in tried:
        if not before.admits("tool", call).ok:
            assert not after.admits("tool", call).ok, call
        if after.admits("tool", call).ok:
            assert "tool" in after.allowed  # an admitted call means the tool is allowed
