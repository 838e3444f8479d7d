"""`ruleengine check --format concise|github`, and policies that do not load in every format:
what editors, CI runners and code-scanning services read. Runs the real command in this
process (``ruleengine.cli.main``), in a scratch directory holding the policies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ruleengine import Policy
from ruleengine.check.cases import is_cases_file
from ruleengine.check.formats import POLICY_ERROR, Unchecked, github_command
from ruleengine.check.report import FINDING_IDS
from ruleengine.cli import main
from ruleengine.errors import PolicyError, RequirementError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "policies"

TRIAGE_LINE = (
    "triage.toml:9:1: error: after 1 step no tool is allowed: `classify-once`, "
    "`escalate-after-classify` leave nothing to call (trace: classify (error)) [deadlock]"
)
BROKEN = 'tools = ["search"]\n\n[[requirements]]\ntype = "conditional"\ntarget = "serch"\n'
"""A policy file with a mistake at line 5: its target is no tool."""


def broken(here: Path) -> tuple[str, str]:
    """``broken.toml`` written in ``here``, and what the loader says of it: the problem
    (the message after ``broken.toml:5: ``) and the hint."""
    (here / "broken.toml").write_text(BROKEN)
    with pytest.raises(PolicyError) as info:
        Policy.load("broken.toml")
    message, hint = info.value.message, info.value.hint
    assert message.startswith("broken.toml:5: ") and hint
    return message.removeprefix("broken.toml:5: "), hint


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory, made the current one, with three policies: a clean one, one
    with a deadlock, one with two dead tools (warnings)."""
    shutil.copy(EXAMPLES / "research.toml", tmp_path / "clean.toml")
    shutil.copy(EXAMPLES / "ticket_triage.toml", tmp_path / "triage.toml")
    shutil.copy(EXAMPLES / "newsroom.json", tmp_path / "newsroom.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RULEENGINE_PROGRESS_AFTER", "0")
    return tmp_path


def ran(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# -- concise -------------------------------------------------------------------------------------


def test_concise_is_one_line_per_finding_at_its_requirement(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = ran(capsys, "check", "triage.toml", "newsroom.json", "--format", "concise")
    assert code == 1 and err == ""
    assert out.splitlines() == [
        TRIAGE_LINE,
        "newsroom.json:11:5: warning: `fact_check` is allowed in no reachable state [dead-tool]",
        "newsroom.json:11:5: warning: `publish` is allowed in no reachable state [dead-tool]",
    ]


def test_concise_says_nothing_of_a_clean_policy_and_keeps_fail_on(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ran(capsys, "check", "clean.toml", "--format", "concise") == (0, "", "")
    code, out, _ = ran(capsys, "check", "newsroom.json", "--format", "concise")
    assert code == 0 and len(out.splitlines()) == 2  # warnings alone pass by default
    code, _, _ = ran(
        capsys, "check", "newsroom.json", "--format", "concise", "--fail-on", "warning"
    )
    assert code == 1


def test_concise_puts_a_dead_requirement_at_its_own_line(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(EXAMPLES / "email_assistant.yaml", here / "email.yaml")
    code, out, _ = ran(capsys, "check", "email.yaml", "--format", "concise")
    assert code == 0
    (line,) = out.splitlines()
    # `draft-after-reading` is the requirements' second entry: line 17, column 5 (YAML)
    assert line == (
        "email.yaml:17:5: warning: `draft-after-reading` changes the pass in no reachable "
        "state [dead-requirement]"
    )


def test_concise_notes_an_incomplete_check(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = ran(capsys, "check", "clean.toml", "--format", "concise", "--max-states", "3")
    assert code == 0
    assert out.splitlines() == [
        "clean.toml:1:1: note: the check is incomplete (the state limit (3) was reached): "
        "not a proof [incomplete]"
    ]


def test_concise_names_a_python_policy_by_its_file(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    policy = "examples/policies/business_hours.py:policy"
    code, out, _ = ran(capsys, "check", policy, "--format", "concise")
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith("examples/policies/business_hours.py:1:1: error: ")
    assert line.endswith(" [deadlock]")


# -- GitHub annotations ---------------------------------------------------------------------------


def test_github_annotations_carry_file_line_column_and_id(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ran(capsys, "check", "triage.toml", "newsroom.json", "--format", "github")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=triage.toml,line=9,col=1,title=deadlock::after 1 step no tool is "
        "allowed: `classify-once`, `escalate-after-classify` leave nothing to call (trace: "
        "classify (error))"
    )
    assert lines[1].startswith("::warning file=newsroom.json,line=11,col=5,title=dead-tool::")
    assert len(lines) == 3


def test_github_marks_an_incomplete_check_as_a_notice(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = ran(capsys, "check", "clean.toml", "--format", "github", "--max-states", "3")
    assert out.splitlines() == [
        "::notice file=clean.toml,line=1,col=1,title=incomplete::the check is incomplete "
        "(the state limit (3) was reached): not a proof"
    ]


def test_github_escapes_data_and_properties_as_the_runner_reads_them() -> None:
    line = github_command(
        "error",
        "100% sure,\r\nreally: yes",
        file="dir,a/b:c%.toml",
        line=3,
        column=7,
        title="dead-tool",
    )
    assert line == (
        "::error file=dir%2Ca/b%3Ac%25.toml,line=3,col=7,title=dead-tool::"
        "100%25 sure,%0D%0Areally: yes"
    )


def test_tool_names_with_commas_colons_and_percents_are_escaped(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "odd.toml").write_text(
        'tools = ["a,b:c", "x%y"]\n\n[[requirements]]\ntype = "conditional"\n'
        'target = "a,b:c"\nonly_after = ["x%y"]\n\n[[requirements]]\ntype = "conditional"\n'
        'target = "x%y"\nonly_after = ["a,b:c"]\n'
    )
    code, out, _ = ran(capsys, "check", "odd.toml", "--format", "github", "--fail-on", "warning")
    assert code == 1
    lines = out.splitlines()
    assert lines and all(line.startswith("::warning file=odd.toml,") for line in lines)
    assert any("`a,b:c` is allowed" in line for line in lines)
    assert any("`x%25y` is allowed" in line for line in lines)  # `%` escaped in the message


# -- policies that do not load -------------------------------------------------------------------


def test_text_still_checks_nothing_when_a_policy_does_not_load(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem, hint = broken(here)
    code, out, err = ran(capsys, "check", "broken.toml", "clean.toml")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"ruleengine: broken.toml:5: {problem}",
        f"  hint: {hint}",
    ]


def test_json_reports_the_error_in_place_and_checks_the_others(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem, hint = broken(here)
    code, out, err = ran(
        capsys, "check", "broken.toml", "triage.toml", "missing.yaml", "--format", "json"
    )
    assert code == 2  # bad input wins over findings
    first, second, third = (json.loads(line) for line in out.splitlines())
    assert first == {
        "policy": "broken.toml",
        "error": {
            "message": f"broken.toml:5: {problem}",
            "hint": hint,
            "file": "broken.toml",
            "line": 5,
            "column": None,
        },
    }
    assert second["policy"] == "triage.toml" and second["findings"][0]["id"] == "deadlock"
    assert third == {
        "policy": "missing.yaml",
        "error": {
            "message": "missing.yaml: no such file",
            "hint": None,
            "file": "missing.yaml",
            "line": None,
            "column": None,
        },
    }
    # stderr still has each one's line, for people reading the log
    assert err.splitlines()[0] == f"ruleengine: broken.toml:5: {problem}"
    assert "ruleengine: missing.yaml: no such file" in err.splitlines()


def test_json_of_one_policy_that_does_not_load_is_one_indented_object(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "empty.yaml").write_text("")
    code, out, _ = ran(capsys, "check", "empty.yaml", "--format", "json")
    assert code == 2
    assert out.startswith("{\n")
    data = json.loads(out)
    assert data["policy"] == "empty.yaml"
    assert data["error"]["line"] == 1 and "empty" in data["error"]["message"]


def test_sarif_makes_a_policy_error_result_and_a_notification(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem, hint = broken(here)
    code, out, _ = ran(capsys, "check", "broken.toml", "triage.toml", "--format", "sarif")
    assert code == 2
    (run,) = json.loads(out)["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert rules == [*FINDING_IDS, POLICY_ERROR]
    by_rule = {result["ruleId"]: result for result in run["results"]}
    assert set(by_rule) == {"deadlock", POLICY_ERROR}
    error = by_rule[POLICY_ERROR]
    assert rules[error["ruleIndex"]] == POLICY_ERROR
    assert error["level"] == "error"
    assert error["message"]["text"] == f"{problem} (hint: {hint})"
    physical = error["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": "broken.toml"}, "region": {"startLine": 5}}
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and note["descriptor"] == {"id": POLICY_ERROR}
    assert note["message"]["text"] == f"not checked: broken.toml:5: {problem}"
    assert note["locations"] == error["locations"]
    assert len(run["properties"]["checks"]) == 1  # only the policy that was checked


def test_sarif_of_loaded_policies_keeps_only_the_finding_rules(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ran(capsys, "check", "triage.toml", "--format", "sarif")
    assert code == 1
    (run,) = json.loads(out)["runs"]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == list(FINDING_IDS)
    assert "toolExecutionNotifications" not in run["invocations"][0]


@pytest.mark.parametrize("fmt", ["concise", "github"])
def test_concise_and_github_give_the_load_error_its_line(
    here: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    problem, hint = broken(here)
    code, out, _ = ran(
        capsys, "check", "broken.toml", "missing.toml", "triage.toml", "--format", fmt
    )
    assert code == 2
    lines = out.splitlines()
    if fmt == "concise":
        assert lines == [
            f"broken.toml:5:1: error: {problem} (hint: {hint}) [policy-error]",
            "missing.toml:1:1: error: no such file [policy-error]",
            TRIAGE_LINE,
        ]
    else:
        assert lines[0] == (
            f"::error file=broken.toml,line=5,col=1,title=policy-error::{problem} (hint: {hint})"
        )
        assert lines[1] == "::error file=missing.toml,line=1,col=1,title=policy-error::no such file"
        assert lines[2].startswith("::error file=triage.toml,line=9,col=1,title=deadlock::")


def test_a_python_policy_that_does_not_import_is_named_by_its_file(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ran(
        capsys, "check", "no_such_module:policy", "./gone.py:policy", "--format", "concise"
    )
    assert code == 2
    assert out.splitlines() == [
        "no_such_module:policy:1:1: error: no module named `no_such_module` (hint: check that "
        "the module is importable from here (`sys.path`), or name its file: "
        "`path/to/policy.py:attr`) [policy-error]",
        "gone.py:1:1: error: no such file `./gone.py` [policy-error]",
    ]


def test_a_directory_with_a_bad_policy_still_checks_the_rest_in_json(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = here / "policies"
    folder.mkdir()
    (folder / "a_bad.toml").write_text("tools = []\n")
    shutil.copy(EXAMPLES / "ticket_triage.toml", folder / "b_triage.toml")
    code, out, _ = ran(capsys, "check", "policies", "--format", "json")
    assert code == 2
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["policy"] == "policies/a_bad.toml" and first["error"]["line"] == 1
    assert second["policy"] == "policies/b_triage.toml" and second["complete"] is True


def test_a_requirement_that_raises_is_a_policy_error_at_its_entry(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "raising.py").write_text(
        "from ruleengine import Policy, requirement\n\n"
        "@requirement\n"
        "def boom(state):\n"
        "    raise RuntimeError('no')\n\n"
        "policy = Policy(['a'], [boom])\n"
    )
    code, out, err = ran(capsys, "check", "raising.py:policy", "clean.toml", "--format", "json")
    assert code == 2
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["policy"] == "raising.py:policy"
    assert "boom" in first["error"]["message"]
    assert first["error"]["file"] == "raising.py"
    assert second["policy"] == "clean.toml" and second["findings"] == []
    assert err.startswith("ruleengine: ")


# -- directories and cases files ------------------------------------------------------------------


def test_a_directory_leaves_cases_files_out(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = here / "policies"
    folder.mkdir()
    shutil.copy(EXAMPLES / "research.toml", folder / "research.toml")
    for name in ("research.cases.toml", "research.cases.yaml", "x.CASES.json", "y.cases.yml"):
        (folder / name).write_text("not a policy at all: [")
    code, out, err = ran(capsys, "check", "policies", "--format", "json")
    assert (code, err) == (0, "")
    assert [json.loads(line)["policy"] for line in out.splitlines()] == ["policies/research.toml"]


def test_a_directory_of_cases_files_only_is_bad_input(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = here / "cases"
    folder.mkdir()
    (folder / "a.cases.toml").write_text("")
    code, out, err = ran(capsys, "check", "cases")
    assert (code, out) == (2, "")
    assert (
        err.splitlines()[0]
        == "ruleengine: cases: no policy file in the directory, only cases files"
    )


@pytest.mark.parametrize(
    ("name", "cases"),
    [
        ("a.cases.toml", True),
        ("dir/A.Cases.YAML", True),
        ("a.cases.yml", True),
        ("a.cases.json", True),
        ("cases.toml", False),
        ("a.cases.txt", False),
        ("a.toml", False),
    ],
)
def test_cases_files_are_told_by_their_suffix(name: str, cases: bool) -> None:
    assert is_cases_file(name) is cases


# -- where an error points ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "where"),
    [
        ("p.toml:5", ("p.toml", 5, None)),
        ("p.toml:5:7", ("p.toml", 5, 7)),
        ("p.toml", ("p.toml", None, None)),
        ("pkg.module:policy", ("pkg.module:policy", None, None)),
        ("C:dir/p.toml:12", ("C:dir/p.toml", 12, None)),
        ("<stdin>:3", ("<stdin>", 3, None)),
    ],
)
def test_an_error_location_gives_file_line_and_column(
    location: str, where: tuple[Any, ...]
) -> None:
    failed = Unchecked.of("given", PolicyError("x", location=location))
    assert (failed.file, failed.line, failed.column) == where


def test_an_error_without_a_location_points_at_the_policy() -> None:
    failed = Unchecked.of("dir/p.yaml", PolicyError("dir/p.yaml: boom", hint="do this"))
    assert (failed.file, failed.line, failed.column) == ("dir/p.yaml", None, None)
    assert failed.problem == "boom (hint: do this)"
    error = RequirementError("`r` raised", requirement="r")
    assert Unchecked.of("m:policy", error).file == "m:policy"


# -- help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "explain", "diff", "test", "schema", "bench"])
def test_each_command_help_lists_its_exit_codes_and_two_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    codes = out[out.index("exit codes:") : out.index("examples:")]
    listed = [line.split()[0] for line in codes.splitlines()[1:] if line.strip()]
    expected = ["0", "1", "2", "3", "4", "130", "141"]
    if command in ("schema", "bench"):
        expected.remove("1")
    assert listed == expected
    examples = [line for line in out[out.index("examples:") :].splitlines()[1:] if line.strip()]
    assert len(examples) == 2
    assert all(f"ruleengine {command}" in example for example in examples)
