"""The symbolic engine's independent groups (``ruleengine.check.symbolic_groups``): which
systems split, and that depths, witnesses and no-finish from the groups are the layers'."""

from __future__ import annotations

from typing import Any

import pytest

import ruleengine.check.symbolic_groups as symbolic_groups
from ruleengine import ConditionalRequirement, Policy
from ruleengine.check import check_policy
from ruleengine.check.symbolic import Encoding, _Symbolic
from ruleengine.check.symbolic_verdicts import Verdicts
from ruleengine.check.system import System

C = ConditionalRequirement


def tallies(n: int) -> Policy:
    """Per-tool caps counting every call, a success required of each: the run can fail
    every call of every tool and deadlock, ``3 * n`` steps deep."""
    tools = [f"t{i}" for i in range(n)]
    reqs: list[Any] = []
    for t in tools:
        reqs.append(C(t, max_invocations=3, only_success_invocations=False, name=f"cap-{t}"))
        reqs.append(C(t, min_invocations=1, name=f"need-{t}"))
    return Policy(tools, reqs)


def analysed(policy: Policy) -> _Symbolic:
    system = System(list(policy.tools), list(policy.requirements))
    analysis = _Symbolic(system, Encoding(system), None, None, None)
    assert analysis.run().complete
    return analysis


def report(policy: Policy, **options: Any) -> dict[str, Any]:
    out = check_policy(policy, engine="symbolic", **options).model_dump(mode="json")
    out["stats"].pop("seconds")
    return out


def test_per_tool_counters_split_into_one_group_per_tool() -> None:
    groups = analysed(tallies(4))._split()
    assert groups is not None
    assert sorted(len(m) for m in groups.members) == [2, 2, 2, 2]


def test_a_link_between_two_tools_joins_their_groups() -> None:
    policy = tallies(3)
    linked = Policy(policy.tools, [*policy.requirements, C("t2", only_after="t0", name="t2-after")])
    groups = analysed(linked)._split()
    assert groups is not None
    assert sorted(len(m) for m in groups.members) == [2, 5]


def test_a_view_every_tool_moves_leaves_one_group() -> None:
    policy = tallies(3)
    # Not twice in a row: its view is the last tool called, which every call moves.
    glued = Policy(policy.tools, [*policy.requirements, C("t1", consecutive_allowed=False)])
    assert analysed(glued)._split() is None


def test_the_deadlock_is_found_as_deep_as_the_layers_find_it() -> None:
    analysis = analysed(tallies(3))
    groups = analysis._split()
    assert groups is not None
    p = analysis.pass_
    deadlock = analysis.some(~p.consistent & p.stuck)
    assert groups.distance(deadlock, analysis.system.initial) == 9
    assert analysis._first_layer(deadlock) == 9


def test_the_report_is_the_layers_report(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = tallies(4)
    grouped = report(policy)
    assert [f["id"] for f in grouped["findings"]][:2] == ["deadlock", "no-finish"]
    assert len(grouped["findings"][0]["trace"]) == 12
    monkeypatch.setattr(Verdicts, "_groups_found", lambda self: None)
    assert report(policy) == grouped


def test_a_target_too_complex_for_the_groups_falls_back_to_the_layers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = tallies(4)
    grouped = report(policy)
    monkeypatch.setattr(symbolic_groups, "COFACTORS", 0)
    assert report(policy) == grouped


def test_a_search_cut_short_takes_no_depth_from_the_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the state limit only the layers explored are known: depths and witnesses come
    # from them, not from the groups (which know every reachable state).
    asked: list[bool] = []
    real = symbolic_groups.Groups.distance

    def spy(self: Any, *args: Any) -> Any:
        asked.append(True)
        return real(self, *args)

    monkeypatch.setattr(symbolic_groups.Groups, "distance", spy)
    assert not check_policy(tallies(4), engine="symbolic", max_states=50).complete
    assert not asked


def test_the_reachable_set_is_the_one_chaining_finds() -> None:
    analysis = analysed(tallies(3))
    grouped = analysis.reach
    analysis._independent = None  # no groups: chaining in the same manager
    assert analysis._reach() == grouped
    # Per tool: 0-3 calls, and whether one succeeded (the minimum counts up to one).
    assert analysis._count(grouped) == 7**3
