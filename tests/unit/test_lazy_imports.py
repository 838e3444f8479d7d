"""What is imported only when needed: Z3 at a solver session's first check (a reasoner whose
steps the fast path decides never imports it, and what was declared before the start means
the same after), PyYAML for a YAML policy file.

The import cases run in a fresh interpreter (in this one, other tests have imported both)."""

from __future__ import annotations

import pytest
import z3
from fresh import run_fresh

from ruleengine import ConditionalRequirement as C
from ruleengine import Reasoner, RunState, encode, requirement
from ruleengine._solver import Session
from ruleengine.encode import Vocabulary
from ruleengine.ir import Expr, allowed, any_of, hidden


def test_literal_steps_and_a_static_check_never_import_z3() -> None:
    out = run_fresh(
        """
        import sys
        from ruleengine import Policy, Reasoner
        from ruleengine.requirements import ConditionalRequirement as C
        reqs = [C("b", only_after=["a"]), C("a", max_invocations=1), C("c", force_at_step=2)]
        reasoner = Reasoner(["a", "b", "c"], reqs)
        first = reasoner.decide([])
        second = reasoner.decide([("a", "ok")])
        report = Policy(["a", "b", "c"], reqs).check()
        print(first.allowed, second.forced, report.complete, "z3" in sys.modules)
        """
    )
    assert out == "('a', 'c', 'final_answer') c True False"


def test_a_general_formula_starts_the_solver_with_every_earlier_declaration() -> None:
    out = run_fresh(
        """
        import sys
        from ruleengine import Reasoner, requirement
        from ruleengine.ir import allowed, any_of

        @requirement
        def one_of(state):
            return [any_of(allowed("a"), allowed("b"))] if state.steps else []

        reasoner = Reasoner(["a", "b"], [one_of])
        print(reasoner.decide([]).allowed, "z3" in sys.modules)
        print(reasoner.decide([("a", "ok")]).allowed, "z3" in sys.modules)
        """
    )
    assert out.splitlines() == [
        "('a', 'b', 'final_answer') False",
        "('a', 'b', 'final_answer') True",
    ]


def test_assumptions_and_axioms_given_before_and_after_the_start_are_one_session() -> None:
    session = Session()
    session.name("x", lambda ctx: z3.Bool("x", ctx))
    session.add(lambda ctx: z3.Not(z3.Bool("x", ctx), ctx))
    session.interrupt()  # nothing to stop yet
    assert session.ctx is None and session.checks == 0
    assert session.size == 1 and session.knows("x") and not session.knows("y")
    assert not session.check_mask(session.slot("x"))  # starts here: x is refuted
    assert session.ctx is not None
    session.name("y", lambda ctx: z3.Bool("y", ctx))  # built at once now
    assert session.slot("y") == 2 and session.check_mask(session.slot("y"))
    session.add(lambda ctx: z3.Not(z3.Bool("y", ctx), ctx))
    assert not session.check_mask(session.slot("y"))
    assert session.checks == 3


def test_hidden_atoms_inside_a_formula_are_declared_before_its_guard() -> None:
    # The formula mentions `hidden(b)` before any literal did: its axiom (hidden ⇒ not
    # allowed) must be there when the formula is built at the start.
    @requirement
    def hide_b_unless_a(state: RunState) -> list[Expr]:
        return [any_of(hidden("b"), allowed("a"))]

    reasoner = Reasoner(["a", "b"], [C("a", max_invocations=0), hide_b_unless_a])
    got = reasoner.decide([])
    assert "b" in got.hidden and got.allowed == ("final_answer",)


def test_json_and_toml_policies_load_without_the_yaml_parser() -> None:
    out = run_fresh(
        """
        import sys
        from ruleengine import Policy
        json_policy = Policy.load("examples/policies/research.json")
        toml_policy = Policy.load("examples/policies/research.toml")
        before = "yaml" in sys.modules
        yaml_policy = Policy.load("examples/policies/research.yaml")
        same = json_policy == toml_policy == yaml_policy
        print(before, "yaml" in sys.modules, same)
        """
    )
    assert out == "False True True"


def test_a_declaration_that_fails_to_build_leaves_no_half_built_solver() -> None:
    def broken(ctx: object) -> object:
        raise RuntimeError("cannot build this term")

    session = Session()
    session.name("x", lambda ctx: z3.Bool("x", ctx))
    session.add(broken)
    for _ in range(2):  # every check tries to start again, and fails the same way
        with pytest.raises(RuntimeError, match="cannot build"):
            session.check_mask(session.slot("x"))
        assert session.ctx is None and session.checks == 0
    # After the start, a literal that fails to build gets no slot, an axiom is not added.
    started = Session()
    started.name("x", lambda ctx: z3.Bool("x", ctx))
    assert started.check_mask(started.slot("x"))
    with pytest.raises(RuntimeError):
        started.name("y", broken)
    with pytest.raises(RuntimeError):
        started.add(broken)
    assert not started.knows("y") and started.size == 1
    assert started.check_mask(started.slot("x"))


def test_a_declaration_whose_build_failed_is_made_again_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vocabulary = Vocabulary(("a", "b", "final_answer"))
    vocabulary.session.start()  # from now on each declaration is built at once
    real = encode._force_axiom
    failures: list[str] = []

    def fails_once(tool: str, ctx: object) -> object:
        if not failures:
            failures.append(tool)
            raise RuntimeError("cannot build this term")
        return real(tool, ctx)

    monkeypatch.setattr(encode, "_force_axiom", fails_once)
    with pytest.raises(RuntimeError):
        vocabulary.ensure(("force", "a"))
    assert not vocabulary.session.knows(("force", "a"))
    vocabulary.ensure(("force", "a"))
    vocabulary.ensure(("force", "b"))
    session = vocabulary.session
    force_a, force_b = session.slot(("force", "a")), session.slot(("force", "b"))
    assert session.check_mask(force_a) and session.check_mask(force_b)
    assert not session.check_mask(force_a | force_b)  # two hard forces never hold together
