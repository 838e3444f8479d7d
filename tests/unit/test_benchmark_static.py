"""The static-check benchmark's command line and table (``benchmarks/static.py``): it times,
so these tests check only that it runs, reports a stopped check instead of failing, and
refuses bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ruleengine
from benchmarks import _independent, static
from benchmarks._policies import FAMILIES, make_policy, policy_file


def test_every_family_is_checked_once_per_seed() -> None:
    rows = static.measure([(4, 4)], 1)
    assert [r.family for r in rows] == list(FAMILIES)
    for row in rows:
        assert len(row.seconds) == 1 and row.seconds[0] > 0
        assert row.complete == 1 and row.timed_out == 0
    table = static.format_static_table(rows)
    assert all(family in table for family in FAMILIES)


def test_a_check_past_its_time_limit_is_stopped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(policy_file(make_policy("chain", 4, 4, 0))), encoding="utf-8")
    # No interpreter starts in a millisecond.
    seconds, report = static.check_once(str(path), 0.001)
    assert report is None and seconds == 0.001


def _scripted(
    monkeypatch: pytest.MonkeyPatch, results: list[tuple[float, dict[str, object] | None]]
) -> list[str]:
    """``check_once`` answering ``results`` in turn; returns the paths it was asked for."""
    asked: list[str] = []
    left = list(results)

    def once(
        path: str, timeout: float, *, own_limit: bool = False
    ) -> tuple[float, dict[str, object] | None]:
        asked.append(path)
        return left.pop(0)

    monkeypatch.setattr(static, "check_once", once)
    return asked


def _report(seconds: float, findings: int = 0) -> dict[str, object]:
    return {
        "complete": True,
        "findings": [{}] * findings,
        "stats": {"states": 7, "seconds": seconds},
    }


def test_a_policy_takes_the_median_of_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _scripted(monkeypatch, [(1.0, _report(0.9)), (3.0, _report(2.9)), (2.0, _report(1.8))])
    seconds, report = static.check_runs("p.json", 60.0, 3)
    assert seconds == 2.0 and asked == ["p.json"] * 3
    assert report == _report(0.9)  # the first run's: the runs differ only in their seconds


def test_a_stopped_run_counts_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [(60.0, None), (1.0, _report(0.9)), (60.0, None)])
    assert static.check_runs("p.json", 60.0, 3) == (60.0, _report(0.9))
    _scripted(monkeypatch, [(60.0, None)] * 3)
    assert static.check_runs("p.json", 60.0, 3) == (60.0, None)


def test_a_policy_most_of_whose_runs_stopped_counts_as_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _scripted(monkeypatch, [(5.0, None), (1.0, _report(0.9)), (5.0, None)] * len(FAMILIES))
    rows = static.measure([(4, 4)], 1, timeout=5.0, runs=3)
    for row in rows:
        assert row.seconds == [5.0] and row.timed_out == 1
        assert row.states == [7] and row.complete == 1  # what the finished run reported
    line = static.format_static_table(rows).splitlines()[2]
    assert "> 5" in line


def test_runs_that_report_differently_stop_the_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, [(1.0, _report(0.9)), (1.0, _report(0.9, findings=1))])
    with pytest.raises(RuntimeError, match="different reports"):
        static.check_runs("p.json", 60.0, 2)


def test_complete_runs_are_compared_without_their_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine and the verdicts one by one count states differently: the same report.
    other = {**_report(1.2), "stats": {"states": 4096, "seconds": 1.2}}
    _scripted(monkeypatch, [(1.0, _report(0.9)), (1.3, other)])
    assert static.check_runs("p.json", 60.0, 2) == (1.15, _report(0.9))
    # Incomplete reports say what each run decided in its time: not compared.
    cut = {**_report(59.0), "complete": False}
    _scripted(monkeypatch, [(60.0, cut), (60.0, {**cut, "findings": [{}]})])
    assert static.check_runs("p.json", 60.0, 2) == (60.0, cut)
    # A complete report against an incomplete one is not a difference either.
    _scripted(monkeypatch, [(60.0, cut), (2.0, _report(1.9, findings=1))])
    assert static.check_runs("p.json", 60.0, 2) == (31.0, cut)


def test_every_run_is_a_real_check(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(policy_file(make_policy("counters", 4, 4, 0))), encoding="utf-8")
    seconds, report = static.check_runs(str(path), 120.0, 2)
    assert seconds > 0 and report is not None and report["complete"] is True


def test_a_stopped_check_shows_as_over_the_limit() -> None:
    row = static.StaticRow("chain", 20, 40, [0.5, 0.5, 120.0], [1, 1, 0], 2, 2, 1, 120.0)
    line = next(r for r in static.format_static_table([row]).splitlines() if r.startswith("chain"))
    assert "> 120" in line and "0.50" in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "0"], "`0` must be a finite number above zero"),
        (["--seeds", "1.5"], "`1.5` is not a whole number"),
        (["--runs", "0"], "`0` must be a finite number above zero"),
        (["--runs", "two"], "`two` is not a whole number"),
        (["--timeout", "-1"], "`-1` must be a finite number above zero"),
        (["--timeout", "inf"], "`inf` must be a finite number above zero"),
        (["--timeout", "soon"], "`soon` is not a number"),
    ],
)
def test_bad_arguments_exit_2_naming_the_value(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        static.main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_package_is_byte_compiled_before_anything_is_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As an install does: otherwise, where PYTHONDONTWRITEBYTECODE is set, every check
    # process compiles every module again.
    compiled: list[str] = []
    monkeypatch.setattr(
        "compileall.compile_dir", lambda path, **kwargs: compiled.append(path) or True
    )
    order: list[str] = []
    real_check = static.check_once

    def timed(
        path: str, timeout: float, *, own_limit: bool = False
    ) -> tuple[float, dict[str, object] | None]:
        order.append("check" if compiled else "check before compiling")
        return real_check(path, timeout, own_limit=own_limit)

    monkeypatch.setattr(static, "check_once", timed)
    static.measure([(4, 4)], 1)
    assert compiled == [str(Path(ruleengine.__file__).parent)]
    assert order and set(order) == {"check"}


def test_the_machine_speed_is_the_median_time_of_a_loop_in_fresh_interpreters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a fresh interpreter prints is its loop's time: the median of the samples is the
    # speed (stubbed times: comparing two real timings would depend on the machine's load).
    printed = iter(["0.5\n", "0.2\n", "0.9\n"])
    commands: list[list[str]] = []

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=next(printed))

    monkeypatch.setattr(static.subprocess, "run", run)
    assert static.speed(3, 10**4) == 0.5
    assert [c[0] for c in commands] == [sys.executable] * 3
    assert all("10000" in c[-1] for c in commands)


def test_the_machine_speed_loop_prints_a_time() -> None:
    assert static.speed(1, 10) >= 0  # a real fresh interpreter answers with a number


@pytest.mark.parametrize(
    ("samples", "additions"), [(0, 10), (1.5, 10), ("3", 10), (True, 10), (1, 0), (1, 10**30)]
)
def test_the_machine_speed_refuses_counts_out_of_range(samples: object, additions: object) -> None:
    with pytest.raises(ValueError, match="must be a whole number"):
        static.speed(samples, additions)  # type: ignore[arg-type]


def _shape(family: str, seed: int) -> frozenset[tuple[object, ...]]:
    """What a generated policy declares, names aside: its budget and the kinds of its
    requirements' parameters, with their values where they are numbers."""
    entries = static.policy_entries(family, 20, 40, seed)
    out: set[tuple[object, ...]] = {("budget", entries["max_iterations"])}
    requirements = entries["requirements"]
    assert isinstance(requirements, list)
    for entry in requirements:
        for key, value in entry.items():
            if key in ("name", "target", "type"):
                continue
            out.add((key, len(value) if isinstance(value, list) else value))
    return frozenset(out)


@pytest.mark.parametrize("family", static.KNOWN)
def test_every_family_draws_its_knobs_per_seed(family: str) -> None:
    # Ten seeds of a family are not one shape reshuffled: their parameters differ.
    assert len({_shape(family, seed) for seed in range(10)}) >= 3


@pytest.mark.parametrize("family", static.KNOWN)
def test_every_family_is_deterministic_and_sized(family: str) -> None:
    first = static.policy_entries(family, 20, 40, 7)
    assert static.policy_entries(family, 20, 40, 7) == first
    requirements = first["requirements"]
    assert isinstance(requirements, list) and 1 <= len(requirements) <= 40


@pytest.mark.parametrize(
    ("family", "tools", "reqs", "match"),
    [
        ("nope", 20, 40, "unknown family `nope`"),
        ("indep-chains", 1, 40, "at least 4 tools and 1 requirement, not 1/40"),
        ("chain", 20, 0, "not 20/0"),
    ],
)
def test_a_policy_of_an_unknown_family_or_size_is_refused(
    family: str, tools: int, reqs: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        static.policy_entries(family, tools, reqs, 0)


@pytest.mark.parametrize("family", sorted(_independent.SHAPES))
def test_the_independent_families_are_policy_files_that_load(family: str, tmp_path: Path) -> None:
    # Written as a user would write them, from the documentation: every seed loads, with
    # the requirements asked for, and the command checks the first one.
    for seed in range(5):
        path = tmp_path / f"{family}-{seed}.json"
        path.write_text(json.dumps(static.policy_entries(family, 12, 24, seed)), "utf-8")
        policy = ruleengine.Policy.load(path)
        assert len(policy.requirements) == 24 and len(policy.tools) == 12
    took, report = static.check_runs(str(tmp_path / f"{family}-0.json"), 60.0, 1)
    assert report is not None and took > 0


def test_the_default_plan_measures_the_new_families_large_too() -> None:
    plan = static.default_plan()
    assert {(t, r) for t, r, _ in plan} == {(20, 40), (50, 100), (200, 400)}
    assert {f for t, _, f in plan if t == 200} == {"conditionals", "tallies"}
    assert {f for t, _, f in plan if t == 50} == set(FAMILIES)


def test_families_and_sizes_choose_what_is_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _scripted(monkeypatch, [(1.0, _report(0.9))] * 4)
    rows = static.measure([(4, 4), (5, 6)], 1, families=["tallies", "chain"])
    assert [(r.family, r.tools, r.requirements) for r in rows] == [
        ("tallies", 4, 4),
        ("chain", 4, 4),
        ("tallies", 5, 6),
        ("chain", 5, 6),
    ]
    assert len(asked) == 4
    with pytest.raises(ValueError, match="unknown family `nope`"):
        static.measure([(4, 4)], 1, families=["nope"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--families", "chain,nope"], "unknown family `nope`"),
        (["--families", ","], "no family named"),
        (["--sizes", "50"], "`50` is not TOOLS/REQUIREMENTS"),
        (["--sizes", "3/10"], "at least 4 tools"),
        (["--sizes", "50/x"], "`50/x` is not"),
    ],
)
def test_bad_families_and_sizes_are_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        static.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_row_stopped_at_a_limit_equal_to_its_target_does_not_meet_it() -> None:
    stopped = static.StaticRow("tallies", 200, 400, [60.0] * 4, [0] * 4, 0, 0, 4, 60.0)
    line = static.format_static_table([stopped]).splitlines()[2]
    assert "> 60" in line and " no " in f" {line} "
    fast = static.StaticRow("tallies", 200, 400, [5.0] * 4, [1] * 4, 4, 4, 0, 60.0)
    assert " yes " in f" {static.format_static_table([fast]).splitlines()[2]} "


def test_with_its_own_limit_the_command_ends_with_its_own_report(tmp_path: Path) -> None:
    # A policy the command checks whole: its own limit changes nothing but the flag.
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"tools": ["a"], "requirements": []}))
    _, report = static.check_once(str(path), 60.0, own_limit=True)
    assert report is not None and report["complete"] is True and "undecided" not in report


def test_the_table_counts_the_undecided_verdicts_of_reports_at_the_limit() -> None:
    row = static.StaticRow(
        "conditionals", 50, 100, [60.0, 60.0, 3.0], [1, 1, 1], 1, 3, 0, 60.0, [4, 9, 0]
    )
    line = next(r for r in static.format_static_table([row]).splitlines() if r.startswith("cond"))
    assert line.rstrip().endswith("4/9")
    plain = static.StaticRow("chain", 20, 40, [0.5], [1], 1, 1, 0, 60.0, [0])
    chain = next(
        r for r in static.format_static_table([plain]).splitlines() if r.startswith("chain")
    )
    assert chain.rstrip().endswith("—")
