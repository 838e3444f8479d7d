"""Smoke test of the ``benchmarks`` package: ``--quick`` prints every row of the tables and
writes them as JSON, the end-to-end mixes are what the README says, and the peer run is
skipped cleanly without beeai-framework.

No wall-clock thresholds here: timings on a shared machine are not a test. Whether the engine
agrees with the benchmark's yardstick, and its fast path with its solver path, on the
benchmark's workloads is tested in ``test_benchmark_agreement.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import benchmarks
from benchmarks import aggregation
from benchmarks._config import SEED, Config
from benchmarks._mixes import E2E_SIZES, build_requirements, draw_traces, make_mix
from benchmarks.end_to_end import make_e2e_workload
from benchmarks.peer import PEER_MISSING, run_peer
from ruleengine import FINAL_ANSWER

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


def test_quick_run_prints_every_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert aggregation.main(["--quick", "--no-peer", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    for label in [*EXPECTED_ROWS, *E2E_ROWS]:
        assert any(line.startswith(f"{label}  ") for line in lines), f"no row `{label}`"
    assert "peer run skipped: --no-peer" in lines
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(data) == {"meta", "rows", "end_to_end", "peer", "latency"}
    latency = {row["case"]: row for row in data["latency"]}
    assert any(case.startswith("hard step, timeout_ms=200") for case in latency)
    assert any("first read of the explanation" in case for case in latency)
    for row in latency.values():
        # The hard step fails closed; the others are decided (the pigeonhole as a conflict).
        hard = row["case"].startswith("hard step")
        assert row["outcome"].startswith("SolverError") == hard, row
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


def test_end_to_end_mixes_are_valid_deterministic_and_varied() -> None:
    for tools, requirements in E2E_SIZES:
        mix = make_mix(tools, requirements, seed=SEED)
        assert mix == make_mix(tools, requirements, seed=SEED)
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
        assert len(build_requirements(mix)) == requirements
        statuses = {s.status for t in draw_traces(mix, 50, 5, seed=1) for s in t}
        assert statuses == {"ok", "error", "denied"}


def test_peer_run_is_skipped_without_beeai(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate an environment without beeai-framework, whether or not this one has it (and
    # whether or not something imported it, or the adapter, already).
    for name in [n for n in sys.modules if n.partition(".")[0] == "beeai_framework"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "beeai_framework", None)
    monkeypatch.delitem(sys.modules, "benchmarks.peer_beeai", raising=False)
    monkeypatch.delattr(benchmarks, "peer_beeai", raising=False)
    config = Config.quick()
    report = run_peer(make_e2e_workload(config), config, log=print)
    assert report.rows == [] and report.version is None
    assert report.skipped == PEER_MISSING
    assert "beeai-framework is not installed" in report.skipped
    assert "pip install -e '.[peer]'" in report.skipped
