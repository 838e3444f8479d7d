"""The ``ruleengine`` command end to end, through a subprocess (``python -m ruleengine``).

Every command runs in its own process, as a user or a CI job runs it. To keep the file fast,
the commands of ``COMMANDS`` are started together, a few at a time, before the first test
(``run`` then answers from that cache); a test may still run any other command.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ruleengine.check.report import FINDING_IDS, SEVERITY

ROOT = Path(__file__).resolve().parents[2]
EX = "examples/policies"
CLEAN = f"{EX}/research.toml"
DEADLOCK = f"{EX}/ticket_triage.toml"
WARNINGS = f"{EX}/newsroom.json"
BUDGET = f"{EX}/batch_report.yaml"
DEAD_REQUIREMENT = f"{EX}/email_assistant.yaml"
NO_FINISH = f"{EX}/data_pipeline.toml"
FORCED = f"{EX}/ci_fixer.yaml"
SCRATCH = Path(tempfile.gettempdir()) / f"ruleengine-cli-{os.getpid()}"  # made by `_warm`
BAD = str(SCRATCH / "bad.toml")


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


_CACHE: dict[tuple[str, ...], Ran] = {}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEENGINE_")}
    env.update(extra)
    return env


def _spawn(args: tuple[str, ...]) -> Ran:
    done = subprocess.run(
        [sys.executable, "-m", "ruleengine", *args],
        cwd=ROOT,
        env=_env(RULEENGINE_PROGRESS_AFTER="0"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def run(*args: str) -> Ran:
    """``ruleengine ARGS…`` from the repository root (progress line due at once, were stderr
    a terminal: it is a pipe here, so none may appear)."""
    if args not in _CACHE:
        _CACHE[args] = _spawn(args)
    return _CACHE[args]


BAD_INPUT: list[tuple[tuple[str, ...], str]] = [
    ((), "give a command"),
    (("check",), "POLICY"),
    (("frobnicate",), "frobnicate"),
    (("check", CLEAN, "--format", "xml"), "--format"),
    (("check", CLEAN, "--fail-on", "info"), "--fail-on"),
    (("check", CLEAN, "--max-states", "0"), "--max-states"),
    (("check", CLEAN, "--max-states", "many"), "`many`"),
    (("check", CLEAN, "--timeout", "nan"), "--timeout"),
    (("check", CLEAN, "--max-iterations", "-3"), "--max-iterations"),
    (("check", "policy.ini"), "unknown policy file extension"),
    (("check", CLEAN, "missing.json"), "missing.json"),
    (("check", "no_such_module:policy"), "no_such_module"),
    (("diff", CLEAN), "NEW"),
    (("diff", CLEAN, "missing.yaml"), "missing.yaml"),
    (("diff", CLEAN, CLEAN, "--timeout", "-2"), "--timeout"),
    (("check", CLEAN, "--max-memory", "-1"), "--max-memory"),
    (("diff", CLEAN, CLEAN, "--max-memory", "lots"), "`lots`"),
    (("explain", CLEAN, "--trace", "think,,search"), "entry 2 is empty"),
    (("explain", CLEAN, "--trace", "final_answer,think"), "final_answer"),
    (("explain", "missing.toml"), "missing.toml"),
    (("bench", CLEAN, "--walks", "-1"), "--walks"),
    (("bench", CLEAN, "--seed", "x"), "--seed"),
    (("bench", CLEAN, "--steps", str(10**20)), "at most 10,000"),
    (("check", CLEAN, "--timeout", "1e400"), "finite"),
    (("schema", "extra"), "extra"),
    (("check", CLEAN, "--time-out", "5"), "unknown option `--time-out`"),
    (("check", "--time-out", "5", CLEAN), "unknown option `--time-out`"),
    (("explain", CLEAN, "--fail-on", "error"), "unknown option `--fail-on`"),
    (("explain", CLEAN, CLEAN), "unexpected argument"),
    (("--verison",), "unknown option `--verison`"),
    (("chekc", CLEAN), "unknown command `chekc`"),
    (("check", "-"), "`-`: a policy read from stdin needs `--stdin-format`"),
    (("check", "-", "--stdin-format", "xml"), "--stdin-format"),
    (("check", CLEAN, "--stdin-format", "toml"), "--stdin-format: no POLICY is `-`"),
    (("check", "-", "-", "--stdin-format", "toml"), "`-` is given twice"),
    (("diff", "-", CLEAN), "--stdin-format"),
    (("check", EX + "/no_such_dir/"), "no such file or directory"),
    (("explain", EX), "is a directory, not a policy file"),
    (("explain", CLEAN, "--trace", "[1]"), "--trace: entry 1 is `1`, not a step"),
    (("explain", CLEAN, "--trace", '["think",'), "--trace: invalid JSON"),
    (("explain", CLEAN, "--trace", '["think:ok"]'), "unknown tool `think:ok`"),
    (("explain", CLEAN, "--trace-file", "missing.json"), "--trace-file: missing.json: no such"),
    (("explain", CLEAN, "--trace-file", EX), "is a directory"),
    (("explain", CLEAN, "--trace", "think", "--trace-file", "t.json"), "not both"),
]

COMMANDS: list[tuple[str, ...]] = [
    ("check", CLEAN),
    ("check", DEADLOCK),
    ("check", WARNINGS),
    ("check", WARNINGS, "--fail-on", "warning"),
    ("check", DEADLOCK, "--format", "json"),
    ("check", CLEAN, BUDGET, DEAD_REQUIREMENT, "--format", "json"),
    ("check", DEADLOCK, WARNINGS, BUDGET, DEAD_REQUIREMENT, FORCED, "--format", "sarif"),
    ("check", f"{EX}/business_hours.py:policy", "--format", "sarif"),
    ("check", CLEAN, "--max-states", "2"),
    ("check", CLEAN, "--max-states", str(10**40), "--timeout", "300"),
    ("check", CLEAN, "--engine", "explicit", "--max-iterations", "3"),
    ("check", "missing.toml"),
    ("check", BAD),
    ("check", CLEAN, "--timeout", "-1"),
    ("explain", CLEAN, "--trace", "think,search,fetch,cite,final_answer"),
    ("explain", CLEAN, "--trace", "think,cite"),
    ("explain", CLEAN, "--trace", "think,final_answer"),
    ("explain", CLEAN),
    ("explain", DEADLOCK, "--trace", "classify:error"),
    ("explain", CLEAN, "--trace", "think,serach"),
    ("explain", CLEAN, "--trace", "think:maybe"),
    ("diff", CLEAN, f"{EX}/research.yaml"),
    ("diff", CLEAN, f"{EX}/research.json", "--format", "json"),
    ("diff", CLEAN, f"{EX}/react_loop.json", "--format", "json"),
    ("diff", CLEAN, f"{EX}/research.yaml", "--max-states", "2"),
    ("schema",),
    ("bench", CLEAN, "--walks", "20", "--steps", "6", "--format", "json"),
    ("bench", DEADLOCK, "--walks", "10"),
    ("check", EX),
    ("check", EX + "/", "--format", "json"),
    ("check", EX, "--format", "sarif"),
    ("diff", CLEAN, f"{EX}/react_loop.json"),
    ("explain", DEAD_REQUIREMENT, "--trace", "read_inbox,draft_reply,send_email,send_email"),
    ("explain", DEAD_REQUIREMENT, "--trace", "read_inbox,draft_reply,send_email:denied,send_email"),
    *(args for args, _ in BAD_INPUT),
]


@pytest.fixture(scope="module", autouse=True)
def _warm() -> Any:
    SCRATCH.mkdir(exist_ok=True)
    Path(BAD).write_text('tools = ["a"]\n\n[[requirements]]\ntype = "conditional"\ntaget = "a"\n')
    try:
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            for args, ran in zip(COMMANDS, pool.map(_spawn, COMMANDS), strict=True):
                _CACHE[args] = ran
        yield
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)


# -- check: exit codes and text --------------------------------------------------------------


def test_check_clean_exits_0_with_a_summary() -> None:
    ran = run("check", CLEAN)
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0] == CLEAN
    assert "no findings · complete: holds for histories of any length" in ran.out
    assert ran.err == ""


def test_check_errors_exit_1_with_trace_core_and_positions() -> None:
    ran = run("check", DEADLOCK)
    assert ran.code == 1
    out = ran.out
    assert "  error deadlock: after 1 step no tool is allowed" in out
    assert "      1. classify (error)" in out
    assert f"- classify-once (priority 10) at {DEADLOCK}:9: Rule('classify'" in out
    assert f"- escalate-after-classify (priority 10) at {DEADLOCK}:16:" in out
    assert "depends on custom checks: no" in out
    assert "1 error, 0 warnings · complete" in out


def test_warnings_alone_exit_0_unless_fail_on_warning() -> None:
    assert run("check", WARNINGS).code == 0
    assert "0 errors, 2 warnings" in run("check", WARNINGS).out
    assert run("check", WARNINGS, "--fail-on", "warning").code == 1


def test_an_incomplete_check_says_it_is_not_a_proof() -> None:
    ran = run("check", CLEAN, "--max-states", "2")
    assert ran.code == 0
    assert "incomplete (the state limit (2) was reached): not a proof" in ran.out


def test_limits_and_engines_are_passed_through() -> None:
    huge = run("check", CLEAN, "--max-states", str(10**40), "--timeout", "300")
    assert huge.code == 0 and "complete: holds" in huge.out
    short = run("check", CLEAN, "--engine", "explicit", "--max-iterations", "3")
    assert short.code == 1
    assert "error budget" in short.out and "max_iterations=3" in short.out


# -- check: JSON ------------------------------------------------------------------------------

REPORT_KEYS = {"policy", "complete", "findings", "stats"}
FINDING_KEYS = {
    "id",
    "severity",
    "tool",
    "requirement",
    "message",
    "trace",
    "core",
    "depends_on_custom_checks",
}


def check_report_shape(report: dict[str, Any]) -> None:
    assert set(report) == REPORT_KEYS | ({"reason"} if not report["complete"] else set())
    assert set(report["stats"]) == {"states", "seconds"}
    for finding in report["findings"]:
        extra = {"min_steps"} if finding["id"] == "budget" else set()
        assert set(finding) == FINDING_KEYS | extra
        assert finding["severity"] == SEVERITY[finding["id"]]
        for step in finding["trace"]:
            assert set(step) == {"tool", "status"}
        for entry in finding["core"]:
            assert set(entry) == {"requirement", "priority", "rule"}


def test_json_one_policy_is_exactly_one_object() -> None:
    ran = run("check", DEADLOCK, "--format", "json")
    assert ran.code == 1
    report = ran.json()
    check_report_shape(report)
    assert report["policy"] == DEADLOCK and report["complete"] is True
    (finding,) = report["findings"]
    assert finding["id"] == "deadlock" and finding["requirement"] is None
    assert finding["trace"] == [{"tool": "classify", "status": "error"}]


def test_json_several_policies_one_object_per_line() -> None:
    ran = run("check", CLEAN, BUDGET, DEAD_REQUIREMENT, "--format", "json")
    assert ran.code == 1
    reports = [json.loads(line) for line in ran.out.splitlines()]
    assert [r["policy"] for r in reports] == [CLEAN, BUDGET, DEAD_REQUIREMENT]
    for report in reports:
        check_report_shape(report)
    (budget,) = reports[1]["findings"]
    assert budget["id"] == "budget" and budget["min_steps"] == 4 and budget["trace"] == []
    (dead,) = reports[2]["findings"]
    assert dead["requirement"] == "draft-after-reading"


# -- check: SARIF -----------------------------------------------------------------------------


SARIF_SCHEMA: dict[str, Any] = json.loads(
    (ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
"""The official SARIF 2.1.0 JSON Schema (OASIS, draft-04), vendored: see tests/data/README.md."""


def check_sarif(log: dict[str, Any]) -> list[dict[str, Any]]:
    """The log validated against the SARIF 2.1.0 schema, then what the schema cannot say:
    the rules are the findings, results point at their rules, every result has a location
    with a text message, location ids are unique; the results."""
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["$schema"] == SARIF_SCHEMA["id"]
    (run_,) = log["runs"]
    driver = run_["tool"]["driver"]
    for key in ("version", "informationUri"):
        assert driver[key]
    assert ":" in driver["informationUri"]
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(FINDING_IDS)
    for rule in rules:
        assert rule["defaultConfiguration"]["level"] == SEVERITY[rule["id"]]
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
    for result in run_["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
        assert result["locations"]
        ids = set()
        for where in result["locations"] + result.get("relatedLocations", []):
            assert where["physicalLocation"]["region"]["startLine"]
            if "id" in where:
                assert where["id"] not in ids
                ids.add(where["id"])
        assert isinstance(result["properties"]["trace"], list)
    return list(run_["results"])


def test_sarif_shape_locations_and_traces() -> None:
    ran = run("check", DEADLOCK, WARNINGS, BUDGET, DEAD_REQUIREMENT, FORCED, "--format", "sarif")
    assert ran.code == 1
    results = check_sarif(ran.json())
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert set(by_rule) == {
        "deadlock",
        "dead-tool",
        "budget",
        "dead-requirement",
        "forced-conflict",
    }
    (deadlock,) = by_rule["deadlock"]
    assert deadlock["level"] == "error"
    primary = deadlock["locations"][0]["physicalLocation"]
    assert primary["artifactLocation"]["uri"] == DEADLOCK
    assert primary["region"]["startLine"] == 9  # the entry of `classify-once`, first in the core
    (related,) = deadlock["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 16
    assert deadlock["properties"]["trace"] == [{"tool": "classify", "status": "error"}]
    assert {r["level"] for r in by_rule["dead-tool"]} == {"warning"}
    (dead,) = by_rule["dead-requirement"]
    assert dead["properties"]["requirement"] == "draft-after-reading"
    where = dead["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == DEAD_REQUIREMENT


def test_sarif_for_a_python_policy_points_at_its_file() -> None:
    ran = run("check", f"{EX}/business_hours.py:policy", "--format", "sarif")
    assert ran.code == 1
    (result,) = check_sarif(ran.json())
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == f"{EX}/business_hours.py"
    assert physical["region"] == {"startLine": 1}
    assert result["properties"]["depends_on_custom_checks"] is True


# -- bad input --------------------------------------------------------------------------------


def assert_one_line_error(ran: Ran, *needles: str) -> None:
    assert ran.code == 2, (ran.out, ran.err)
    assert ran.out == ""
    assert "Traceback" not in ran.err
    lines = ran.err.splitlines()
    assert lines[0].startswith("ruleengine: ")
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  hint: "))
    for needle in needles:
        assert needle in lines[0]


def test_a_missing_file_names_it() -> None:
    assert_one_line_error(run("check", "missing.toml"), "missing.toml", "no such file")


def test_a_malformed_policy_names_file_line_and_key() -> None:
    assert_one_line_error(run("check", BAD), f"{BAD}:5", "taget")


@pytest.mark.parametrize("timeout", [0.01, 0.5, 1.0, 4.0, 10.0, 60.0, 600.0, 1e9])
def test_the_work_keeps_a_limit_ahead_of_the_commands(timeout: float) -> None:
    # The worker's own limit leaves the command time to take its report, end the worker
    # and write the output within a second of `--timeout`: never more than a second
    # ahead, a quarter second at least where the limit allows it, a tenth in between.
    from ruleengine.cli import _ahead

    ahead = _ahead(timeout)
    assert ahead is not None and 0 < ahead < timeout
    margin = timeout - ahead
    assert margin <= 1.0 + 1e-9
    assert margin >= min(0.25, timeout / 4) - 1e-9
    assert margin >= min(1.0, timeout / 10) - 1e-9
    assert _ahead(None) is None


def test_a_negative_timeout_is_refused() -> None:
    assert_one_line_error(run("check", CLEAN, "--timeout", "-1"), "--timeout", "`-1`")


@pytest.mark.parametrize(("args", "needle"), BAD_INPUT)
def test_bad_input_exits_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    assert_one_line_error(run(*args), needle)


def test_an_empty_policy_file_is_bad_input(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert_one_line_error(run("check", str(empty)), "empty.yaml:1", "empty")


def test_help_and_version() -> None:
    assert run("--version").out.startswith("ruleengine ")
    ran = run("check", "--help")
    assert ran.code == 0 and "--fail-on" in ran.out


# -- explain ----------------------------------------------------------------------------------


def test_explain_a_trace_that_runs_through() -> None:
    ran = run("explain", CLEAN, "--trace", "think,search,fetch,cite,final_answer")
    assert ran.code == 0, ran.err
    out = ran.out
    assert "before step 1 (no calls yet)" in out
    assert "  forced: think · can stop: no · tool_choice: think" in out
    assert f"- think-first (priority 10) at {CLEAN}:7: forced('think')" in out
    assert "step 4: cite: allowed" in out
    assert "final_answer: allowed: the run ends" in out
    assert out.rstrip().endswith("result: every step was allowed")


def test_explain_a_refused_step_exits_1() -> None:
    ran = run("explain", CLEAN, "--trace", "think,cite")
    assert ran.code == 1
    assert "step 2: cite: REFUSED: `cite` is not allowed here (needs `fetch` first)" in ran.out
    assert "the runtime would refuse this call" in ran.out


def test_explain_a_final_answer_the_policy_prevents_exits_1() -> None:
    ran = run("explain", CLEAN, "--trace", "think,final_answer")
    assert ran.code == 1
    assert "final_answer: REFUSED: the agent may not stop here (prevented by `cite-sources`)" in (
        ran.out
    )


def test_explain_without_a_trace_shows_the_first_pass() -> None:
    ran = run("explain", CLEAN)
    assert ran.code == 0
    assert ran.out.startswith(f"{CLEAN}: the empty run\nbefore step 1 (no calls yet)\n")


def test_explain_a_conflict_shows_its_core() -> None:
    ran = run("explain", DEADLOCK, "--trace", "classify:error")
    assert ran.code == 1
    assert "conflict (deadlock)" in ran.out
    assert f"- classify-once (priority 10) at {DEADLOCK}:9" in ran.out


def test_explain_unknown_tool_or_status_is_bad_input() -> None:
    assert_one_line_error(run("explain", CLEAN, "--trace", "think,serach"), "`serach`")
    assert "did you mean `search`?" in run("explain", CLEAN, "--trace", "think,serach").err
    assert_one_line_error(run("explain", CLEAN, "--trace", "think:maybe"), "`maybe`")


# -- diff -------------------------------------------------------------------------------------

DIFF_KEYS = {"old", "new", "equivalent", "complete", "trace", "difference", "stats"}


def test_diff_equivalent_policies_exit_0_with_a_proof() -> None:
    ran = run("diff", CLEAN, f"{EX}/research.yaml")
    assert ran.code == 0
    assert "are equivalent" in ran.out and "complete: this is a proof" in ran.out
    data = run("diff", CLEAN, f"{EX}/research.json", "--format", "json").json()
    assert set(data) == DIFF_KEYS
    assert data["equivalent"] is True and data["complete"] is True
    assert data["difference"] is None and data["trace"] == []


def test_diff_different_policies_exit_1_with_both_passes() -> None:
    ran = run("diff", CLEAN, f"{EX}/react_loop.json", "--format", "json")
    assert ran.code == 1
    data = ran.json()
    assert set(data) == DIFF_KEYS | {"budget"}  # 20 and 15 iterations
    assert data["equivalent"] is False and data["complete"] is True
    assert set(data["difference"]) == {"old", "new"}
    for side in data["difference"].values():
        assert side["conflict"] is True or set(side) == {
            "conflict",
            "allowed",
            "hidden",
            "forced",
            "can_stop",
        }


def test_diff_cut_short_is_not_a_proof() -> None:
    ran = run("diff", CLEAN, f"{EX}/research.yaml", "--max-states", "2")
    assert ran.code == 0
    assert "no difference found" in ran.out and "not a proof" in ran.out


# -- check: directories -----------------------------------------------------------------------


def test_check_a_directory_checks_each_policy_file_in_it() -> None:
    ran = run("check", EX)
    assert ran.code == 1, ran.err  # the worst over the files: some have errors
    headers = [line for line in ran.out.splitlines() if line.startswith(EX)]
    files = sorted(
        p.name for p in (ROOT / EX).iterdir() if p.suffix in (".toml", ".yaml", ".yml", ".json")
    )
    assert headers == [f"{EX}/{name}" for name in files]
    assert "business_hours" not in ran.out and "README" not in ran.out
    assert ran.err == ""


def test_check_a_directory_prints_json_lines_and_one_sarif_log() -> None:
    ran = run("check", EX + "/", "--format", "json")
    assert ran.code == 1
    reports = [json.loads(line) for line in ran.out.splitlines()]
    assert [r["policy"] for r in reports][:2] == [f"{EX}/batch_report.yaml", f"{EX}/ci_fixer.yaml"]
    for report in reports:
        check_report_shape(report)
    sarif = run("check", EX, "--format", "sarif")
    assert sarif.code == 1
    results = check_sarif(sarif.json())
    assert {r["properties"]["policy"] for r in results} >= {DEADLOCK, BUDGET, FORCED}
    assert len(sarif.json()["runs"][0]["properties"]["checks"]) == len(reports)


def test_a_directory_of_one_policy_still_prints_json_lines(tmp_path: Path) -> None:
    shutil.copy(ROOT / DEADLOCK, tmp_path / "triage.toml")
    (tmp_path / "README.md").write_text("# policies\n")
    (tmp_path / "policy.schema.json").write_text(run("schema").out)
    (tmp_path / "nested").mkdir()
    shutil.copy(ROOT / CLEAN, tmp_path / "nested" / "research.toml")
    ran = run("check", str(tmp_path), "--format", "json")
    assert ran.code == 1, ran.err
    (line,) = ran.out.splitlines()  # one compact object, on one line
    assert json.loads(line)["policy"] == str(tmp_path / "triage.toml")


def test_a_directory_without_policies_or_with_a_bad_one_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n")
    assert_one_line_error(run("check", str(tmp_path)), str(tmp_path), "no policy file")
    (tmp_path / "bad.toml").write_text('tools = ["a"]\n\n[[requirements]]\ntype = "x"\n')
    shutil.copy(ROOT / CLEAN, tmp_path / "good.toml")
    ran = _spawn(("check", str(tmp_path)))  # the same command line, a new directory
    assert_one_line_error(ran, f"{tmp_path / 'bad.toml'}:4")


# -- a policy on stdin ------------------------------------------------------------------------


def run_with_stdin(text: str, *args: str) -> Ran:
    done = subprocess.run(
        [sys.executable, "-m", "ruleengine", *args],
        cwd=ROOT,
        env=_env(),
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def test_check_dash_reads_the_policy_from_stdin() -> None:
    ran = run_with_stdin((ROOT / DEADLOCK).read_text(), "check", "-", "--stdin-format", "toml")
    assert ran.code == 1, ran.err
    assert ran.out.splitlines()[0] == "<stdin>"
    assert "- classify-once (priority 10) at <stdin>:9:" in ran.out
    data = run_with_stdin(
        (ROOT / f"{EX}/research.yaml").read_text(),
        *("check", "-", CLEAN, "--stdin-format", "yaml", "--format", "json"),
    )
    assert data.code == 0, data.err
    assert [json.loads(line)["policy"] for line in data.out.splitlines()] == ["<stdin>", CLEAN]


def test_every_command_that_takes_a_policy_takes_dash() -> None:
    research = (ROOT / CLEAN).read_text()
    diff = run_with_stdin(research, "diff", "-", f"{EX}/research.yaml", "--stdin-format", "toml")
    assert (
        diff.code == 0 and "<stdin> and examples/policies/research.yaml are equivalent" in diff.out
    )
    explain = run_with_stdin(research, "explain", "-", "--stdin-format", "toml", "--trace", "think")
    assert explain.code == 0 and explain.out.startswith("<stdin>: think\n")
    bench = run_with_stdin(research, "bench", "-", "--stdin-format", "toml", "--walks", "2")
    assert bench.code == 0 and bench.out.startswith("<stdin>: 2 walks")


@pytest.mark.parametrize(
    ("text", "fmt", "needles"),
    [
        ("", "toml", ("<stdin>:1", "the input is empty")),
        ('tools: ["a"]\n', "toml", ("<stdin>:1", "invalid TOML")),
        (
            'tools = ["a"]\n[[requirements]]\ntype = "conditional"\ntaget = "a"\n',
            "toml",
            ("<stdin>:4", "taget"),
        ),
        ("tools: []\n", "yaml", ("<stdin>:1", "tools: the policy declares no tool")),
    ],
)
def test_a_bad_policy_on_stdin_is_named_stdin(text: str, fmt: str, needles: tuple[str]) -> None:
    assert_one_line_error(run_with_stdin(text, "check", "-", "--stdin-format", fmt), *needles)


# -- mistyped options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ("check", CLEAN, "--time-out", "5"),
            "did you mean `--timeout`? see `ruleengine check --help`",
        ),
        (
            ("check", "--time-out", "5", CLEAN),
            "did you mean `--timeout`? see `ruleengine check --help`",
        ),
        (
            ("explain", CLEAN, "--fail-on", "error"),
            "`--fail-on` is an option of `check`; see `ruleengine explain --help`",
        ),
        (("explain", CLEAN, CLEAN), "see `ruleengine explain --help`"),
        (("--verison",), "did you mean `--version`? see `ruleengine --help`"),
        (
            ("chekc", CLEAN),
            "did you mean `check`? the commands are `check`, `explain`, `diff`, `test`, "
            "`schema`, `mcp-proxy`, `bench`: see `ruleengine --help`",
        ),
    ],
)
def test_a_mistyped_option_gets_the_right_one_and_the_help(
    args: tuple[str, ...], hint: str
) -> None:
    ran = run(*args)
    assert_one_line_error(ran)
    assert ran.err.splitlines()[1] == f"  hint: {hint}"
    assert "usage:" not in ran.err


# -- big state counts, empty tool lists -------------------------------------------------------


def test_a_state_count_above_a_million_is_rounded_in_text_and_exact_in_json(
    tmp_path: Path,
) -> None:
    lines = ["tools = [" + ", ".join(f'"t{i}"' for i in range(14)) + "]"]
    for i in range(14):  # 14 independent counters: 3**14 states
        lines += ["[[requirements]]", 'type = "conditional"', f'target = "t{i}"']
        lines += ["max_invocations = 2"]
    policy = tmp_path / "counters.toml"
    policy.write_text("\n".join(lines) + "\n")
    # The symbolic engine alone counts every reachable state; `auto` races it with the
    # verdicts decided one by one, which count the states of their probe, and the first
    # complete report wins.
    data = run("check", str(policy), "--format", "json", "--engine", "symbolic").json()
    states = data["stats"]["states"]
    assert isinstance(states, int) and states > 10**6
    text = run("check", str(policy), "--engine", "symbolic")
    assert text.code == 0, text.err
    mantissa, exponent = f"{states:.1e}".split("e")
    assert f" · ~{mantissa}e{int(exponent)} states · " in text.out
    assert str(states) not in text.out


def test_an_empty_tool_list_is_bad_input_naming_file_line_and_key(tmp_path: Path) -> None:
    policy = tmp_path / "empty.toml"
    policy.write_text("max_iterations = 3\ntools = []\n")
    ran = run("check", str(policy))
    assert_one_line_error(ran, f"{policy}:2: tools: the policy declares no tool")


# -- explain: JSON traces, permissions -------------------------------------------------------


def test_explain_a_json_trace_names_tools_with_colons_and_commas(tmp_path: Path) -> None:
    policy = tmp_path / "mcp.yaml"
    policy.write_text(
        'tools: ["github:search", "notes,draft"]\n'
        "requirements:\n"
        '  - {type: conditional, target: "notes,draft", only_after: ["github:search"]}\n'
    )
    trace = '["github:search", ["notes,draft", "error"], "final_answer"]'
    ran = run("explain", str(policy), "--trace", trace)
    assert ran.code == 0, ran.err
    assert "step 1: github:search: allowed" in ran.out
    assert "step 2: notes,draft (error): allowed" in ran.out
    assert "final_answer: allowed: the run ends" in ran.out
    plain = run("explain", str(policy), "--trace", "github:search")
    assert_one_line_error(plain, "unknown tool `github`")
    assert '`["github:search"]`' in plain.err


def test_explain_reads_a_trace_file_as_check_prints_traces(tmp_path: Path) -> None:
    (finding,) = run("check", DEADLOCK, "--format", "json").json()["findings"]
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(json.dumps(finding["trace"]))
    ran = run("explain", DEADLOCK, "--trace-file", str(trace_file))
    assert ran.code == 1
    assert "conflict (deadlock)" in ran.out
    trace_file.write_text("think,search")
    assert_one_line_error(
        run("explain", CLEAN, "--trace-file", str(trace_file)), f"--trace-file: {trace_file}: "
    )


def test_explain_names_the_permission_requirements_covering_each_step() -> None:
    ran = run(
        "explain", DEAD_REQUIREMENT, "--trace", "read_inbox,draft_reply,send_email,send_email"
    )
    assert ran.code == 0, ran.err
    lines = ran.out.splitlines()
    where = f"user-approves-sends (priority 30) at {DEAD_REQUIREMENT}:26"
    step3 = lines.index("step 3: send_email: allowed")
    assert lines[step3 + 1] == f"  permission: {where}: asks before the call runs"
    step4 = lines.index("step 4: send_email: allowed")
    assert lines[step4 + 1] == (
        f"  permission: {where}: approves without asking: the answer to step 3 is remembered"
    )
    assert not lines[lines.index("step 1: read_inbox: allowed") + 1].startswith("  permission")
    refused = run(
        "explain",
        DEAD_REQUIREMENT,
        "--trace",
        "read_inbox,draft_reply,send_email:denied,send_email",
    )
    assert refused.code == 1  # the remembered refusal hides `send_email`
    assert f"  permission: {where}: asks before the call runs" in refused.out
    assert "step 4: send_email: REFUSED" in refused.out


# -- diff: budgets ----------------------------------------------------------------------------


def test_diff_reports_different_budgets_even_with_equivalent_passes(tmp_path: Path) -> None:
    short = tmp_path / "short.toml"
    short.write_text(
        (ROOT / CLEAN).read_text().replace("max_iterations = 20", "max_iterations = 10")
    )
    ran = run("diff", CLEAN, str(short))
    assert ran.code == 1
    assert ran.out.splitlines()[:2] == [
        f"{CLEAN} and {short} differ only in their budgets: no history of any length gives "
        "them different passes",
        "  budget: max_iterations 20 (old), 10 (new)",
    ]
    data = run("diff", CLEAN, str(short), "--format", "json")
    assert data.code == 1
    report = data.json()
    assert set(report) == DIFF_KEYS | {"budget"}
    assert report["budget"] == {"old": 20, "new": 10}
    assert report["equivalent"] is True and report["complete"] is True


def test_diff_reports_the_budgets_beside_a_difference_in_passes() -> None:
    ran = run("diff", CLEAN, f"{EX}/react_loop.json")
    assert ran.code == 1
    assert "  budget: max_iterations 20 (old), 15 (new)" in ran.out.splitlines()
    data = run("diff", CLEAN, f"{EX}/react_loop.json", "--format", "json").json()
    assert data["budget"] == {"old": 20, "new": 15}


# -- diff: conditions on arguments ------------------------------------------------------------

ASKS_ABOVE = """max_iterations = 5

[[tools]]
name = "refund"
parameters = { amount = "number" }

[[requirements]]
type = "arguments"
name = "approve"
target = "refund"
ask_if = "arg.amount > LIMIT"
"""


def test_diff_gives_a_call_only_one_policy_asks_about(tmp_path: Path) -> None:
    old, new = tmp_path / "old.toml", tmp_path / "new.toml"
    old.write_text(ASKS_ABOVE.replace("LIMIT", "50"))
    new.write_text(ASKS_ABOVE.replace("LIMIT", "100"))
    ran = run("diff", str(old), str(new))
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert lines[:2] == [
        f"{old} and {new} differ at the first step",
        "  trace: none, at the first step",
    ]
    assert lines[2].startswith('  call: refund {"amount": ')
    assert lines[3:5] == [
        "  old: admits it after asking: `approve`",
        "  new: admits it without asking",
    ]
    data = run("diff", str(old), str(new), "--format", "json")
    assert data.code == 1
    report = data.json()
    assert set(report) == DIFF_KEYS | {"call"}
    assert report["equivalent"] is False and report["complete"] is True
    assert report["difference"]["old"] == report["difference"]["new"]
    call = report["call"]
    assert call["tool"] == "refund" and 50 < call["arguments"]["amount"] <= 100
    assert call["old"] == {"admitted": True, "reason": None, "ask": ["approve"]}
    assert call["new"] == {"admitted": True, "reason": None}
    same = run("diff", str(old), str(old), "--format", "json")
    assert same.code == 0 and set(same.json()) == DIFF_KEYS


# -- schema and bench -------------------------------------------------------------------------


def test_schema_prints_the_policy_schema() -> None:
    ran = run("schema")
    assert ran.code == 0
    schema = ran.json()
    assert schema["title"] == "ruleengine policy" and "tools" in schema["properties"]
    assert ran.out.startswith("{\n  ")  # indented


def test_bench_measures_decisions() -> None:
    ran = run("bench", CLEAN, "--walks", "20", "--steps", "6", "--format", "json")
    assert ran.code == 0, ran.err
    data = ran.json()
    assert data["walks"] == 20 and data["steps"] == 6 and data["decisions"] >= 20
    assert 0 < data["p50_us"] <= data["p99_us"] <= data["max_us"]
    assert 0 <= data["cache_hit_rate"] <= 1 and data["solver_checks_per_decision"] >= 0
    assert sum(data["ended"].values()) == 20
    text = run("bench", DEADLOCK, "--walks", "10")
    assert text.code == 0
    assert "decision time: p50" in text.out and "cache hit rate" in text.out


# -- progress ---------------------------------------------------------------------------------


def test_no_progress_line_when_stderr_is_not_a_terminal() -> None:
    # Every run above had the progress line due at once; stderr was a pipe.
    for args in (("check", CLEAN), ("diff", CLEAN, f"{EX}/research.yaml")):
        assert "\r" not in run(*args).err and "checking" not in run(*args).err


SHOWN_FIRST = """
import os, select, sys
from ruleengine import cli

# The check runs in a worker process forked from this one: the progress line's thread, here,
# tells it through a pipe the worker inherits.
told, tell = os.pipe()


class Terminal:
    # stderr as it is, telling once the progress line has been written out on it.
    def __init__(self, stream):
        self.stream = stream
        self.line = False
        self.sent = False

    def write(self, text):
        self.line = self.line or "ruleengine: checking" in text
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()
        if self.line and not self.sent:
            self.sent = True
            os.write(tell, b"x")

    def __getattr__(self, name):
        return getattr(self.stream, name)


def once_shown(*args, **kwargs):
    if not select.select([told], [], [], 60)[0]:
        raise SystemExit("no progress line in 60 s")
    return check_policy(*args, **kwargs)


check_policy = cli.check_policy
cli.check_policy = once_shown
sys.stderr = Terminal(sys.stderr)
sys.argv[0] = "ruleengine"
cli.run()
"""
"""``python -m ruleengine``, but each check starts once the progress line is on the terminal.
The line is written by a thread of its own, due at once here; a check of a few milliseconds
could end first on a loaded machine, and then rightly no line is shown."""


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_progress_line_on_a_terminal_is_erased_at_the_end() -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", SHOWN_FIRST, "check", CLEAN],
            cwd=ROOT,
            env=_env(RULEENGINE_PROGRESS_AFTER="0"),
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
    seen = b""
    try:
        while chunk := os.read(leader, 4096):
            seen += chunk
    except OSError:
        pass  # the terminal closed
    finally:
        os.close(leader)
    assert done.returncode == 0
    text = seen.decode()
    assert f"ruleengine: checking {CLEAN}" in text
    assert text.endswith("\r\x1b[K")


def test_the_console_entry_freezes_the_imported_heap_and_exits_with_the_code_of_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ruleengine import cli

    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(sys, "argv", ["ruleengine", "check", str(ROOT / DEADLOCK)])

    def leave(code: int) -> None:  # the process's end, as an exception pytest can catch
        raise SystemExit(code)

    monkeypatch.setattr(cli.os, "_exit", leave)
    try:
        with pytest.raises(SystemExit) as exited:
            cli.run()
        assert exited.value.code == 1  # findings, as `main` says
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert "deadlock" in capsys.readouterr().out


def _spawn_into(
    args: tuple[str, ...], stdout: Any, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``ruleengine ARGS…`` writing its output into ``stdout`` (a descriptor or file)."""
    return subprocess.run(
        [sys.executable, "-m", "ruleengine", *args],
        cwd=ROOT,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("schema",),  # more than stdout's buffer: the write inside `main` fails
        ("check", CLEAN),  # a few lines: the flush on the way out fails
    ],
)
def test_a_reader_gone_before_any_output_gets_exit_141_and_no_traceback(
    args: tuple[str, ...],
) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # nobody will read: every write to the pipe fails
    env = _env()
    env.pop("PYTHONUNBUFFERED", None)  # stdout buffered, as usual: written at the flush
    try:
        done = _spawn_into(args, writer, env)
    finally:
        os.close(writer)
    assert done.returncode == 141
    assert done.stderr == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("unbuffered", [True, False])
@pytest.mark.parametrize(
    "args",
    [
        ("schema",),  # more than stdout's buffer: a write inside `main` fails
        ("check", CLEAN),  # a few lines: buffered, only the flush on the way out fails
    ],
)
def test_an_output_that_cannot_be_written_exits_4_with_one_line(
    args: tuple[str, ...], unbuffered: bool
) -> None:
    env = _env()
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"  # every print writes at once, inside `main`
    with open("/dev/full", "w") as full:  # every write fails: no space left on device
        done = _spawn_into(args, full, env)
    assert done.returncode == 4
    message = "ruleengine: cannot write the output: No space left on device"
    assert done.stderr.splitlines() == [message]


def test_the_whole_output_reaches_a_pipe_before_the_process_ends() -> None:
    # The command leaves without the interpreter's teardown: what it wrote is flushed first.
    done = _spawn(("schema",))
    assert done.code == 0
    assert json.loads(done.out)["title"]
    many = _spawn(("check", *[f"{EX}/{name}" for name in ("research.toml", "research.yaml")]))
    assert many.code == 0
    assert many.out.count("research") >= 2


def test_a_process_started_without_stdout_exits_with_the_code_of_the_check() -> None:
    # fd 1 closed before Python starts: `sys.stdout` is None, and the flush on the way out
    # must not trip over it.
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m ruleengine check "$1" >&-', sys.executable, DEADLOCK],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1  # the policy's findings, as with stdout open
    assert done.stderr == ""


# -- limits: kept whatever runs past them -------------------------------------------------------

STUCK = ROOT / "tests" / "integration" / "stuck_policy.py"


def test_a_check_that_outlasts_its_time_limit_is_stopped_and_says_where(tmp_path: Path) -> None:
    # A requirement that never returns (a step no deadline check can interrupt): the check
    # is stopped at its limit, and the report claims nothing. Asserts what it says, not how
    # long it took.
    ran = _spawn(("check", f"{STUCK}:stuck", "--timeout", "0.5", "--format", "json"))
    report = ran.json()
    assert ran.code == 0 and report["complete"] is False and report["findings"] == []
    assert report["reason"].startswith("the time limit (0.5 s) ran out in a single step while ")
    assert "it was stopped there, and claims nothing" in report["reason"]


def test_a_check_past_its_memory_limit_is_stopped(tmp_path: Path) -> None:
    ran = _spawn(("check", f"{STUCK}:hoarding", "--max-memory", "150", "--timeout", "0"))
    assert ran.code == 0, ran.err
    assert "the memory limit (150 MiB) was reached while " in ran.out


def test_no_limits_with_zero() -> None:
    ran = run("check", CLEAN, "--timeout", "0", "--max-memory", "0", "--format", "json")
    assert ran.code == 0 and ran.json()["complete"] is True


def test_a_diff_that_outlasts_its_time_limit_claims_no_proof() -> None:
    ran = _spawn(
        ("diff", f"{STUCK}:stuck", f"{STUCK}:stuck", "--timeout", "0.5", "--format", "json")
    )
    report = ran.json()
    assert ran.code == 0 and report["equivalent"] is True and report["complete"] is False
    assert report["reason"].startswith("the time limit (0.5 s) ran out in a single step while ")
