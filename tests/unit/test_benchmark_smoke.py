"""Smoke test of ``benchmarks/aggregation.py``: quick mode prints every row of both tables, its
yardstick (a plain-Python deny-wins aggregator) agrees with strict mode on plain rules, and the
fast path agrees with the solver path on everything the benchmark decides.

No wall-clock thresholds here: timings on a shared machine are not a test. The peer run
(beeai-framework) is never needed: the quick run skips it, and its absence is simulated.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ruleengine import FINAL_ANSWER, Rule
from ruleengine.rules import Emitted

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "aggregation.py"

SIZES = ("10/20", "50/100", "100/200")
EVERY_SIZE = (
    "reference deny-wins (no solver)",
    "miss, solver path",
    "miss, fast path",
    "hit",
    "conflict: no tool left",
)
SMALL_ONLY = (
    "miss, cold items",
    "miss, general constraints",
    "miss, priority mode",
    "conflict: hard force vs deny",
)
EXPECTED_ROWS = [
    *(f"{size} {kind}" for size in SIZES for kind in EVERY_SIZE),
    *(f"10/20 {kind}" for kind in SMALL_ONLY),
]
TARGET_ROWS = {
    "10/20 miss, solver path",
    "50/100 miss, solver path",
    "10/20 hit",
    "100/200 miss, solver path",
}
E2E_ROWS = [
    f"{size} {steps} steps{path}"
    for size in ("10/20", "50/100")
    for steps in (0, 10, 50)
    for path in ("", ", solver path")
]


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_benchmark_aggregation", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_quick_run_prints_every_row(
    harness: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert harness.main(["--quick", "--no-peer", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    for label in [*EXPECTED_ROWS, *E2E_ROWS]:
        assert any(line.startswith(f"{label}  ") for line in lines), f"no row `{label}`"
    assert "peer run skipped: --no-peer" in lines
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["label"]: row for row in data["rows"]}
    assert sorted(rows) == sorted(EXPECTED_ROWS)
    for label, row in rows.items():
        assert row["decisions"] > 0 and row["median_us"] > 0
        assert (row["met"] is not None) == (label in TARGET_ROWS)
    # Solver calls are counted, not timed: one per decision on the solver path, none on the
    # fast path (these sets are literal-only and satisfiable).
    for size in SIZES:
        assert rows[f"{size} miss, solver path"]["checks_per_decision"] == 1.0
        assert rows[f"{size} miss, fast path"]["checks_per_decision"] == 0.0
    for size, check in data["cross_check"].items():
        assert check["compared"] > 0 and check["mismatches"] == [], size
    assert set(data["path_check"]) == {*SIZES, "10/20 end-to-end", "50/100 end-to-end"}
    for size, check in data["path_check"].items():
        assert check["compared"] > 0 and check["mismatches"] == [], size
    e2e = {row["label"]: row for row in data["end_to_end"]}
    assert sorted(e2e) == sorted(E2E_ROWS)
    for label, row in e2e.items():
        assert row["decisions"] > 0 and row["median_us"] > 0, label
        assert row["met"] in (True, False) and 0 <= row["hit_rate"] <= 1, label
        assert row["original_us"] == {"10/20": 4900, "50/100": 25000}[row["size"]]
        if row["path"] == "fast":
            assert row["checks_per_decision"] == 0.0, label  # no conflicts in these states
    assert e2e["10/20 0 steps"]["hit_rate"] > 0  # the empty state repeats: a cache hit
    assert data["peer"] == {"skipped": "peer run skipped: --no-peer", "version": None, "rows": []}


@pytest.mark.parametrize(
    ("tools", "rules", "count"),
    [(10, 20, 400), (50, 100, 100), (100, 200, 40), (5, 20, 400)],
)
def test_strict_mode_agrees_with_the_reference(
    harness: ModuleType, tools: int, rules: int, count: int
) -> None:
    workload = harness.make_workload(tools, rules)
    sets = harness.draw_sets(workload, count, seed=7)
    clashes = harness.conflict_sets(workload, 2, seed=7)
    result = harness.cross_check(workload, [*sets, *clashes])
    assert result.mismatches == []
    assert result.conflicts >= 2  # the conflict sets conflict on both sides
    # Not a vacuous check: the sets exercise forcing, hiding and prevent_stop.
    assert result.forced > 0 and result.hidden > 0 and result.no_stop > 0


def test_unfiltered_dense_sets_agree_including_conflicts_and_ties(harness: ModuleType) -> None:
    # Few tools, many rules: sets are drawn without filtering, so conflicts and forced ties
    # come from the draw itself and both sides must detect them.
    workload = harness.make_workload(4, 12)
    sets = harness.draw_sets(workload, 400, seed=3, keep=lambda s: True)
    result = harness.cross_check(workload, sets)
    assert result.mismatches == []
    assert result.conflicts > 0 and result.ties > 0 and result.forced > 0


def test_reference_aggregator_follows_deny_wins(harness: ModuleType) -> None:
    tools = ("search", "think", "send", FINAL_ANSWER)
    emitted = [
        Emitted(Rule("search", allowed=False, reason="high"), "a", 20),
        Emitted(Rule("search", reason="low"), "b", 5),
        Emitted(Rule("think", forced=True), "c", 10),
        Emitted(Rule("send", forced=True), "d", 30),
        Emitted(Rule("send", hidden=True), "e", 1),
        Emitted(Rule("think", prevent_stop=True), "f", 10),
    ]
    p = harness.reference_aggregate(emitted, tools)
    # `send` has the higher force but is hidden, so `think` is forced; stopping is prevented.
    assert (p.allowed, p.forced, p.can_stop, p.tool_choice) == (("think",), "think", False, "think")
    assert p.hidden == ("send",)
    assert p.reasons == {"search": "low"}  # the last reason of the loop: the lowest priority
    with pytest.raises(harness.ReferenceConflict):
        harness.reference_aggregate(
            [Emitted(Rule(t, allowed=False), "x", 10) for t in tools], tools
        )


def _path_sets(harness: ModuleType, tools: int, rules: int, count: int) -> list[list[Emitted]]:
    workload = harness.make_workload(tools, rules)
    plain = harness.draw_sets(workload, count, seed=11)
    clashes = harness.conflict_sets(workload, 3, seed=11)
    forces = harness.force_conflict_sets(workload, plain[:5], seed=11)
    return [*plain, *clashes, *forces]


@pytest.mark.parametrize(
    ("tools", "rules", "count"),
    [(10, 20, 300), (50, 100, 60), (100, 200, 20), (4, 12, 300)],
)
def test_fast_path_and_solver_path_agree(
    harness: ModuleType, tools: int, rules: int, count: int
) -> None:
    # Same sets, two reasoners: allowed, hidden, forced, can_stop, tool_choice and reasons
    # must be equal, and conflicts must have the same core.
    sets = _path_sets(harness, tools, rules, count)
    result = harness.path_check(harness.make_workload(tools, rules).tools, sets)
    assert result.mismatches == []
    assert result.compared == len(sets)
    # Not vacuous: forcing, hiding, prevent_stop, conflicts (incl. hard force vs deny) occur,
    # and the fast path really skipped the solver where the solver path used it.
    assert result.forced > 0 and result.hidden > 0 and result.no_stop > 0
    assert result.conflicts >= 3
    assert result.fast_checks < result.solver_checks


def test_paths_agree_with_formulas_and_in_priority_mode(harness: ModuleType) -> None:
    general = harness.make_workload(10, 20, general=True)
    sets = harness.draw_sets(general, 200, seed=5, keep=lambda s: True)
    result = harness.path_check(general.tools, sets)
    assert result.mismatches == [] and result.conflicts > 0 and result.forced > 0
    plain = harness.make_workload(10, 20)
    result = harness.path_check(plain.tools, _path_sets(harness, 10, 20, 100), mode="priority")
    # Priority mode decides literal-only tiers from masks too: fewer solver calls, same answers.
    assert result.mismatches == [] and result.fast_checks < result.solver_checks


def test_end_to_end_paths_agree_on_run_states(harness: ModuleType) -> None:
    e2e = harness.e2e
    for tools, requirements in e2e.E2E_SIZES:
        mix = e2e.make_mix(tools, requirements, seed=harness.SEED)
        states = [
            e2e.to_steps(trace)
            for length in (0, 1, 3, 10, 50)
            for trace in e2e.draw_traces(mix, length, 40, seed=9)
        ]
        result = harness.e2e_path_check(mix, states)
        assert result.mismatches == [], mix.label
        assert result.forced > 0 and result.no_stop > 0
        assert result.fast_checks == 0 and result.solver_checks > 0


def test_end_to_end_mixes_are_valid_deterministic_and_varied(harness: ModuleType) -> None:
    e2e = harness.e2e
    for tools, requirements in e2e.E2E_SIZES:
        mix = e2e.make_mix(tools, requirements, seed=harness.SEED)
        assert mix == e2e.make_mix(tools, requirements, seed=harness.SEED)
        assert (len(mix.tools), len(mix.specs)) == (tools, requirements)
        assert mix.tools[-1] == FINAL_ANSWER
        assert len({spec["name"] for spec in mix.specs}) == requirements
        used = {key for spec in mix.specs for key in spec}
        for parameter in (
            "only_after",
            "only_before",
            "max_invocations",
            "min_invocations",
            "force_after",
            "consecutive_allowed",
            "force_at_step",
        ):
            assert parameter in used, (mix.label, parameter)
        forced_at = [spec["force_at_step"] for spec in mix.specs if "force_at_step" in spec]
        assert 1 <= len(forced_at) == len(set(forced_at)) <= 4
        assert len(e2e.build_requirements(mix)) == requirements
        statuses = {s.status for t in e2e.draw_traces(mix, 50, 5, seed=1) for s in t}
        assert statuses == {"ok", "error", "denied"}


def test_peer_run_is_skipped_without_beeai(
    harness: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Simulate an environment without beeai-framework, whether or not this one has it (and
    # whether or not something imported it already).
    for name in [n for n in sys.modules if n.partition(".")[0] == "beeai_framework"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "beeai_framework", None)
    monkeypatch.delitem(sys.modules, "peer_beeai", raising=False)
    config = harness.Config.quick()
    report = harness.run_peer(harness.make_e2e_workload(config), config, log=print)
    assert report.rows == [] and report.version is None
    assert report.skipped == harness.PEER_MISSING
    assert "beeai-framework is not installed" in report.skipped
    assert "pip install -e '.[peer]'" in report.skipped
