"""The symbolic engine imports ``dd`` without ``networkx`` (start-up), and leaves the name
importable afterwards; a process that imported either first gets ``dd`` as it always is.

Each case runs in a fresh interpreter: what is imported first is the point."""

from __future__ import annotations

import pytest
from fresh import run_fresh


def test_the_checker_imports_dd_without_networkx_and_leaves_it_importable() -> None:
    pytest.importorskip("networkx")
    out = run_fresh(
        """
        import sys
        from ruleengine import Policy
        from ruleengine.requirements import ConditionalRequirement as C
        report = Policy(["a", "b"], [C("b", only_after=["a"])]).check(engine="symbolic")
        print(report.complete, "dd" in sys.modules, "networkx" in sys.modules)
        import networkx  # the name was put back: a later import works
        print(type(networkx).__name__)
        """
    )
    assert out.splitlines() == ["True True False", "module"]


def test_a_process_that_imported_networkx_first_keeps_it_and_dd_uses_it() -> None:
    pytest.importorskip("networkx")
    out = run_fresh(
        """
        import networkx
        import sys
        import ruleengine.check.symbolic
        import dd._utils
        print(sys.modules["networkx"] is networkx, dd._utils.import_module("networkx") is networkx)
        """
    )
    assert out == "True True"


def test_a_process_that_imported_dd_first_is_left_alone() -> None:
    out = run_fresh(
        """
        import dd
        import sys
        had = "networkx" in sys.modules
        import ruleengine.check.symbolic
        print(had == ("networkx" in sys.modules))
        """
    )
    assert out == "True"


def test_a_policy_settled_by_short_explicit_searches_never_imports_the_bdd_package() -> None:
    # Few reachable states: the whole analysis and every core question end in a short
    # explicit search, so the symbolic engine is never asked (nor imported); a policy with
    # many states, checked by it here, imports it.
    out = run_fresh(
        """
        import sys
        from ruleengine import Policy
        from ruleengine.requirements import ConditionalRequirement as C
        report = Policy(
            ["a", "b", "c"], [C("b", only_after=["a"]), C("a", max_invocations=0)]
        ).check()
        print(report.complete, [f.id for f in report.findings], "dd" in sys.modules)
        tools = [f"t{i}" for i in range(12)]
        big = Policy(tools, [C(t, max_invocations=3) for t in tools])
        print(big.check(engine="symbolic").complete, "dd" in sys.modules)
        """
    )
    assert out.splitlines() == ["True ['dead-tool', 'dead-tool'] False", "True True"]
