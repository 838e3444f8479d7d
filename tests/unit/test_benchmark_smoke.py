"""Smoke test of ``benchmarks/aggregation.py``: quick mode prints every row, and its yardstick
(a plain-Python deny-wins aggregator) agrees with strict mode on plain rules.

No wall-clock thresholds here: timings on a shared machine are not a test.
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
EVERY_SIZE = ("reference deny-wins (no solver)", "miss", "hit", "conflict: no tool left")
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
TARGET_ROWS = {"10/20 miss", "50/100 miss", "10/20 hit", "100/200 miss"}


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
    assert harness.main(["--quick", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    for label in EXPECTED_ROWS:
        assert any(line.startswith(f"{label}  ") for line in lines), f"no row `{label}`"
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["label"]: row for row in data["rows"]}
    assert sorted(rows) == sorted(EXPECTED_ROWS)
    for label, row in rows.items():
        assert row["decisions"] > 0 and row["median_us"] > 0
        assert (row["met"] is not None) == (label in TARGET_ROWS)
    for size, check in data["cross_check"].items():
        assert check["compared"] > 0 and check["mismatches"] == [], size


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
