"""`ruleengine test POLICY CASES` (check/cases.py): named traces replayed through the
policy's runtime, as `explain` replays them, and compared with the passes they expect; every
mistake in a cases file one line naming the file, line, case, step and key. Runs the real
command in this process (``ruleengine.cli.main``)."""

from __future__ import annotations

import importlib
import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from ruleengine.check.cases import MAX_CASES_BYTES, load_cases, run_cases
from ruleengine.cli import main

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples" / "policies"
EXAMPLE_CASES = EX / "cases" / "support_refunds.cases.toml"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory, made the current one, holding `refunds.toml` (the support
    policy: lookup first, refund once after the refund policy, reply before finishing) and
    `triage.toml` (a deadlock after a failed `classify`)."""
    shutil.copy(EX / "support_refunds.toml", tmp_path / "refunds.toml")
    shutil.copy(EX / "ticket_triage.toml", tmp_path / "triage.toml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def outcome(
    capsys: pytest.CaptureFixture[str], *args: str, policy: str = "refunds.toml"
) -> tuple[int, str, str]:
    code = main(["test", policy, *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def write(here: Path, name: str, text: str) -> str:
    (here / name).write_text(text, encoding="utf-8")
    return name


# -- passing -------------------------------------------------------------------------------------


def test_the_example_cases_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["test", str(EX / "support_refunds.toml"), str(EXAMPLE_CASES)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{EXAMPLE_CASES}: 4 cases against {EX / 'support_refunds.toml'}: 4 passed, 0 failed"
    ]


def test_every_kind_of_expectation_met(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write(
        here,
        "all.cases.yaml",
        """\
cases:
  - name: first pass
    trace: [lookup_order]
    expect:
      - {step: 1, allowed: [lookup_order], forced: lookup_order, can_stop: false}
      - {step: end, conflict: false, allowed: {includes: [lookup_order], excludes: [refund]}}
  - name: a string trace and nothing forced
    trace: "lookup_order,refund_policy,refund:error"
    expect:
      - {step: 2, forced: null, refused: false}
      - {step: 4, allowed: {includes: [refund, reply]}}
  - name: the run ends
    trace: [lookup_order, {tool: reply}, final_answer]
    expect:
      - {step: end, can_stop: true, refused: false}
  - name: only runs through
    trace: [lookup_order, [reply, denied]]
""",
    )
    code, out, err = outcome(capsys, cases)
    assert (code, err) == (0, "")
    assert out == f"{cases}: 4 cases against refunds.toml: 4 passed, 0 failed\n"


def test_a_toml_false_is_nothing_forced(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write(
        here,
        "f.cases.toml",
        '[[cases]]\nname = "n"\ntrace = ["lookup_order"]\n\n'
        "[[cases.expect]]\nstep = 2\nforced = false\n",
    )
    assert outcome(capsys, cases)[0] == 0


def test_an_expected_refusal_and_an_expected_conflict(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refunds = write(
        here,
        "r.cases.json",
        json.dumps(
            {
                "cases": [
                    {
                        "name": "refund too soon",
                        "trace": ["lookup_order", "refund"],
                        "expect": [{"step": 2, "refused": True}],
                    },
                    {
                        "name": "no stopping before the reply",
                        "trace": ["lookup_order", "final_answer"],
                        "expect": [{"step": "end", "refused": True, "can_stop": False}],
                    },
                ]
            }
        ),
    )
    assert outcome(capsys, refunds)[0] == 0
    triage = write(
        here,
        "t.cases.toml",
        '[[cases]]\nname = "stuck"\ntrace = [["classify", "error"]]\n'
        'expect = [{ step = "end", conflict = true }]\n',
    )
    assert outcome(capsys, triage, policy="triage.toml")[0] == 0


# -- failing -------------------------------------------------------------------------------------


FAILING = """\
cases:
  - name: exact set
    trace: [lookup_order]
    expect:
      - step: 2
        allowed: [lookup_order, refund]
        forced: refund_policy
        can_stop: true
  - name: includes and excludes
    trace: [lookup_order]
    expect:
      - {step: end, allowed: {includes: [refund], excludes: [reply]}}
  - name: refused on the way
    trace: [lookup_order, refund, reply]
    expect:
      - {step: 3, can_stop: false}
  - name: runs though refused was expected
    trace: [lookup_order, reply]
    expect:
      - {step: 2, refused: true}
  - name: may not stop
    trace: [lookup_order, final_answer]
  - name: a pass where a conflict was expected
    trace: [lookup_order]
    expect:
      - {step: end, conflict: true}
  - name: fine
    trace: [lookup_order]
"""


def test_each_failure_is_a_line_with_what_was_expected_and_got(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write(here, "failing.cases.yaml", FAILING)
    code, out, err = outcome(capsys, cases)
    assert (code, err) == (1, "")
    at = f"{cases}:"
    assert out.splitlines() == [
        f"{at}6: case `exact set` step 2: expected allowed = [lookup_order, refund], got "
        "[lookup_order, refund_policy, reply] (not expected: refund_policy, reply; missing: "
        "refund)",
        f"{at}7: case `exact set` step 2: expected forced = refund_policy, got none",
        f"{at}8: case `exact set` step 2: expected can_stop = true, got false (prevented by "
        "`reply-before-finishing`)",
        f"{at}12: case `includes and excludes` step 2: expected allowed to include [refund], "
        "got [lookup_order, refund_policy, reply] (missing: refund)",
        f"{at}12: case `includes and excludes` step 2: expected allowed to exclude [reply], "
        "got [lookup_order, refund_policy, reply] (allowed: reply)",
        f"{at}14: case `refused on the way` step 2: expected `refund` to run, got it refused: "
        "`refund` is not allowed here (needs `refund_policy` first)",
        f"{at}20: case `runs though refused was expected` step 2: expected `reply` to be "
        "refused, got it allowed",
        f"{at}22: case `may not stop` step 2: expected `final_answer` to run, got it refused: "
        "the agent may not stop here (prevented by `reply-before-finishing`)",
        f"{at}26: case `a pass where a conflict was expected` step 2: expected conflict = "
        "true, got a pass (allowed [lookup_order, refund_policy, reply])",
        f"{cases}: 7 cases against refunds.toml: 1 passed, 6 failed",
    ]


def test_an_unexpected_conflict_fails_the_case(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write(
        here,
        "t.cases.toml",
        '[[cases]]\nname = "stuck on the way"\ntrace = [["classify", "error"], "escalate"]\n'
        '\n[[cases]]\nname = "stuck at the end"\ntrace = "classify:error"\n'
        "expect = [{ step = 2, conflict = false }]\n",
    )
    code, out, _ = outcome(capsys, cases, policy="triage.toml")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        f"{cases}:3: case `stuck on the way` step 2: expected a pass, got a conflict (deadlock): "
    )
    assert lines[1].startswith(
        f"{cases}:8: case `stuck at the end` step 2: expected a pass, got a conflict (deadlock): "
    )
    assert lines[2] == f"{cases}: 2 cases against triage.toml: 0 passed, 2 failed"


def test_json_gives_every_case_and_failure(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write(here, "failing.cases.yaml", FAILING)
    code, out, _ = outcome(capsys, cases, "--format", "json")
    assert code == 1
    data: dict[str, Any] = json.loads(out)
    assert {k: data[k] for k in ("policy", "cases_file", "passed", "failed")} == {
        "policy": "refunds.toml",
        "cases_file": cases,
        "passed": 1,
        "failed": 6,
    }
    by_name = {case["name"]: case for case in data["cases"]}
    assert list(by_name) == [
        "exact set",
        "includes and excludes",
        "refused on the way",
        "runs though refused was expected",
        "may not stop",
        "a pass where a conflict was expected",
        "fine",
    ]
    assert by_name["fine"] == {"name": "fine", "line": 27, "passed": True, "failures": []}
    exact = by_name["exact set"]
    assert exact["line"] == 2 and exact["passed"] is False
    assert [(f["key"], f["expected"], f["got"]) for f in exact["failures"]] == [
        ("allowed", ["lookup_order", "refund"], ["lookup_order", "refund_policy", "reply"]),
        ("forced", "refund_policy", None),
        ("can_stop", True, False),
    ]
    assert [f["line"] for f in exact["failures"]] == [6, 7, 8]
    assert all(f["step"] == 2 for f in exact["failures"])
    (include, exclude) = by_name["includes and excludes"]["failures"]
    assert include["expected"] == {"includes": ["refund"]}
    assert exclude["expected"] == {"excludes": ["reply"]}
    (refused,) = by_name["refused on the way"]["failures"]
    assert (refused["key"], refused["expected"], refused["got"]) == ("refused", False, True)
    assert refused["message"].startswith("expected `refund` to run, got it refused: ")


def test_the_passes_are_the_runtimes_decided_now(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Python requirement runs for real on each state: what it answers now decides.
    (here / "hours_policy.py").write_text(
        "from ruleengine import Policy, Rule, requirement\n\n"
        "OPEN = {'now': False}\n\n"
        "@requirement\n"
        "def closed(state):\n"
        "    return [] if OPEN['now'] else [Rule('refund', allowed=False, reason='closed')]\n\n"
        "policy = Policy(['lookup', 'refund'], [closed])\n"
    )
    cases = write(
        here,
        "h.cases.toml",
        '[[cases]]\nname = "closed"\ntrace = []\n'
        'expect = [{ step = 1, allowed = { excludes = ["refund"] } }]\n',
    )
    assert outcome(capsys, cases, policy="hours_policy:policy")[0] == 0
    monkeypatch.syspath_prepend(str(here))
    hours = importlib.import_module("hours_policy")
    loaded = load_cases(cases, hours.policy)
    assert run_cases(hours.policy, loaded).failed == 0
    monkeypatch.setitem(hours.OPEN, "now", True)
    (result,) = run_cases(hours.policy, loaded).results
    (failure,) = result.failures
    assert failure.message.startswith("expected allowed to exclude [refund], got [lookup, refund")


def test_the_policy_may_come_from_stdin(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO((here / "refunds.toml").read_bytes()))
    )
    cases = write(here, "s.cases.json", '{"cases": [{"name": "n", "trace": ["lookup_order"]}]}')
    code, out, _ = outcome(capsys, cases, "--stdin-format", "toml", policy="-")
    assert code == 0
    assert out == f"{cases}: 1 case against <stdin>: 1 passed, 0 failed\n"


# -- bad input -----------------------------------------------------------------------------------

CASE = '[[cases]]\nname = "c"\ntrace = ["lookup_order"]\n'
"""A TOML case, to which a test adds its expectation (`expect = [...]` at line 4)."""

BAD_TOML: list[tuple[str, str, str | None]] = [
    ("", "x.cases.toml:1: the file is empty", "a cases file lists its `cases`"),
    ("   \n\n", "x.cases.toml:1: the file is empty", "a cases file lists its `cases`"),
    ("cases = [\n", "x.cases.toml:2: invalid TOML: ", None),
    ("case = []\n", "x.cases.toml:1: unknown key `case`", "did you mean `cases`?"),
    ("title = 'x'\n", "x.cases.toml:1: unknown key `title`", "a cases file has `cases`"),
    ("cases = []\n", "x.cases.toml:1: `cases` is empty", "write at least one case"),
    ("cases = 3\n", "x.cases.toml:1: `cases` is `3`, not a list of cases", None),
    ("cases = [1]\n", "x.cases.toml:1: case 1 (`cases[0]`) is `1`, not a mapping", None),
    ("[[cases]]\ntrace = []\n", "x.cases.toml:1: case 1 (`cases[0]`): missing key `name`", None),
    (
        '[[cases]]\nname = "c"\ntrace = []\ntrac = 1\n',
        "x.cases.toml:4: case 1 (`cases[0]`): unknown key `trac`",
        "did you mean `trace`? a case has `name`, `trace`, `expect`",
    ),
    ('[[cases]]\nname = "c"\n', "x.cases.toml:1: case `c`: missing key `trace`", "a trace is"),
    (
        "[[cases]]\nname = 5\ntrace = []\n",
        "x.cases.toml:2: case 1 (`cases[0]`): `name` is a number (`5`), not a string",
        None,
    ),
    (
        '[[cases]]\nname = " "\ntrace = []\n',
        "x.cases.toml:2: case 1 (`cases[0]`): `name` is empty",
        None,
    ),
    (
        '[[cases]]\nname = "c"\ntrace = 4\n',
        "x.cases.toml:3: case `c`: `trace` is `4`, not a list of steps",
        "a trace is a list of steps",
    ),
    (
        '[[cases]]\nname = "c"\ntrace = ["lookup_order", "refnd"]\n',
        "x.cases.toml:3: case `c`: trace: unknown tool `refnd` (entry 2)",
        "did you mean `refund`? the tools of refunds.toml:",
    ),
    (
        '[[cases]]\nname = "c"\ntrace = "lookup_order:broken"\n',
        "x.cases.toml:3: case `c`: trace: unknown status `broken` for `lookup_order` (entry 1)",
        None,
    ),
    (
        '[[cases]]\nname = "c"\ntrace = [["lookup_order"]]\n',
        'x.cases.toml:3: case `c`: trace: entry 1 is `["lookup_order"]`, not a step',
        None,
    ),
    (
        '[[cases]]\nname = "c"\ntrace = ["final_answer", "reply"]\n',
        'x.cases.toml:3: case `c`: trace: `"final_answer"`: `final_answer` ends the run',
        None,
    ),
    (
        CASE + 'expect = "soon"\n',
        'x.cases.toml:4: case `c`: `expect` is `"soon"`, not a list of expectations',
        None,
    ),
    (
        CASE + "expect = [3]\n",
        "x.cases.toml:4: case `c`: an expectation is `3`, not a mapping",
        None,
    ),
    (
        CASE + "expect = [{ can_stop = true }]\n",
        "x.cases.toml:4: case `c`: missing key `step`",
        "`step` is a number from 1",
    ),
    (
        CASE + "expect = [{ step = 2 }]\n",
        "x.cases.toml:4: case `c`, step 2: expects nothing",
        "add one of `allowed`, `refused`, `forced`, `can_stop`, `conflict`",
    ),
    (
        CASE + "expect = [{ step = 2, alowed = [] }]\n",
        "x.cases.toml:4: case `c`, step 2: unknown key `alowed`",
        "did you mean `allowed`?",
    ),
    (
        CASE + "expect = [{ step = 0, can_stop = true }]\n",
        "x.cases.toml:4: case `c`: `step` is `0`, not a step number",
        None,
    ),
    (
        CASE + 'expect = [{ step = "last", can_stop = true }]\n',
        'x.cases.toml:4: case `c`: `step` is `"last"`, not a step number',
        None,
    ),
    (
        CASE + "expect = [{ step = true, can_stop = true }]\n",
        "x.cases.toml:4: case `c`: `step` is `true`, not a step number",
        None,
    ),
    (
        CASE + "expect = [{ step = 1.5, can_stop = true }]\n",
        "x.cases.toml:4: case `c`: `step` is `1.5`, not a step number",
        None,
    ),
    (
        CASE + "expect = [{ step = 3, can_stop = true }]\n",
        "x.cases.toml:4: case `c`, step 3: `step` 3 is past the end: the trace has 1 step",
        "step 2 (or `end`) is the pass after its last call",
    ),
    (
        CASE + 'expect = [{ step = 1, can_stop = "no" }]\n',
        'x.cases.toml:4: case `c`, step 1: `can_stop` is `"no"`, not true or false',
        None,
    ),
    (
        CASE + "expect = [{ step = 1, conflict = 0 }]\n",
        "x.cases.toml:4: case `c`, step 1: `conflict` is `0`, not true or false",
        None,
    ),
    (
        CASE + 'expect = [{ step = 1, refused = "yes" }]\n',
        'x.cases.toml:4: case `c`, step 1: `refused` is `"yes"`, not true or false',
        None,
    ),
    (
        CASE + "expect = [{ step = 1, forced = true }]\n",
        "x.cases.toml:4: case `c`, step 1: `forced` is `true`, not a tool",
        "or false (null in YAML and JSON) for none",
    ),
    (
        CASE + 'expect = [{ step = 1, forced = "lookup" }]\n',
        "x.cases.toml:4: case `c`, step 1: `forced`: unknown tool `lookup`",
        "did you mean `lookup_order`?",
    ),
    (
        CASE + 'expect = [{ step = 1, allowed = "reply" }]\n',
        'x.cases.toml:4: case `c`, step 1: `allowed` is `"reply"`, not a list of tools',
        "`includes` and/or `excludes`",
    ),
    (
        CASE + "expect = [{ step = 1, allowed = [1] }]\n",
        "x.cases.toml:4: case `c`, step 1: `allowed`: `1` is not a tool name",
        None,
    ),
    (
        CASE + 'expect = [{ step = 1, allowed = ["replly"] }]\n',
        "x.cases.toml:4: case `c`, step 1: `allowed`: unknown tool `replly`",
        "did you mean `reply`?",
    ),
    (
        CASE + 'expect = [{ step = 1, allowed = { include = ["reply"] } }]\n',
        "x.cases.toml:4: case `c`, step 1: unknown key `include`",
        "did you mean `includes`? `allowed` has `includes`, `excludes`",
    ),
    (
        CASE + "expect = [{ step = 1, allowed = {} }]\n",
        "x.cases.toml:4: case `c`, step 1: `allowed` is empty: give `includes` or `excludes`",
        None,
    ),
    (
        CASE + 'expect = [{ step = 1, allowed = { excludes = "reply" } }]\n',
        'x.cases.toml:4: case `c`, step 1: `allowed.excludes` is `"reply"`, not a list of tools',
        None,
    ),
    (
        CASE + "expect = [{ step = 1, can_stop = false }, { step = 1, forced = false }]\n",
        "x.cases.toml:4: case `c`: step 1 is expected twice (first at line 4)",
        None,
    ),
    (
        CASE + "expect = [{ step = 2, refused = true }]\n",
        "x.cases.toml:4: case `c`, step 2: `refused`: the trace makes no call at this step",
        "the trace makes 1 call; step 2 is the pass after its last call",
    ),
    (
        '[[cases]]\nname = "c"\ntrace = ["lookup_order", "reply"]\n'
        "expect = [{ step = 1, refused = true }]\n",
        "x.cases.toml:4: case `c`, step 1: `refused = true`: a refused call ends the run, so it "
        "must be the trace's last (its step 2)",
        None,
    ),
    (
        CASE + "expect = [{ step = 1, refused = true }, { step = 2, can_stop = false }]\n",
        "x.cases.toml:4: case `c`, step 1: `refused = true`: no step follows a refused call",
        None,
    ),
    (
        CASE + "expect = [{ step = 1, conflict = true }]\n",
        "x.cases.toml:4: case `c`, step 1: `conflict = true`: a state with no pass ends the "
        "run, so only the end of the trace (step 2, without `final_answer`) can have it",
        None,
    ),
    (
        CASE + "expect = [{ step = 2, conflict = true, can_stop = false }]\n",
        "x.cases.toml:4: case `c`, step 2: `conflict = true` leaves no pass to expect anything "
        "else of",
        None,
    ),
    (
        '[[cases]]\nname = "c"\ntrace = []\n\n[[cases]]\nname = "c"\ntrace = []\n',
        "x.cases.toml:6: case `c` is named twice (first at line 1)",
        "give every case a name of its own",
    ),
]


@pytest.mark.parametrize(("text", "message", "hint"), BAD_TOML)
def test_a_mistake_is_one_line_naming_file_line_case_step_and_key(
    here: Path, capsys: pytest.CaptureFixture[str], text: str, message: str, hint: str | None
) -> None:
    cases = write(here, "x.cases.toml", text)
    code, out, err = outcome(capsys, cases)
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0].startswith(f"ruleengine: {message}"), lines
    assert len(lines) <= 2
    if hint is not None:
        assert lines[1].startswith("  hint: ") and hint in lines[1], lines


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "y.cases.yaml",
            "- a\n",
            'y.cases.yaml:1: the top level is `["a"]`, not a mapping of keys',
        ),
        ("y.cases.yaml", "cases: [\n", "y.cases.yaml:2: invalid YAML"),
        (
            "y.cases.yaml",
            "cases:\n  - name: 2024-01-01\n    trace: []\n",
            "y.cases.yaml:2: case 1 (`cases[0]`): `name` is a date (`2024-01-01`), not a string",
        ),
        ("j.cases.json", '{"cases": [', "j.cases.json:1: invalid JSON"),
        ("j.cases.json", "null", "j.cases.json:1: the top level is `null`, not a mapping of keys"),
        (
            "j.cases.json",
            '{"cases": [{"name": "c", "trace": [], "expect": [{"step": 1, "forced": ["a"]}]}]}',
            'j.cases.json:1: case `c`, step 1: `forced` is `["a"]`, not a tool',
        ),
        ("notes.txt", "cases = []", "notes.txt: unknown cases file extension `.txt`"),
    ],
)
def test_yaml_json_and_other_files_get_the_same_care(
    here: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    write(here, name, text)
    code, out, err = outcome(capsys, name)
    assert (code, out) == (2, "")
    assert err.splitlines()[0].startswith(f"ruleengine: {message}"), err


def test_files_that_cannot_be_read_are_bad_input(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "dir.cases.toml").mkdir()
    (here / "bin.cases.toml").write_bytes(b'cases = "\xff"\n')
    (here / "deep.cases.json").write_text('{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    expected = {
        "missing.cases.toml": "ruleengine: missing.cases.toml: no such file",
        "dir.cases.toml": "ruleengine: dir.cases.toml: is a directory, not a cases file",
        "bin.cases.toml": "ruleengine: bin.cases.toml:1: the file is not UTF-8: byte `0xff` at "
        "offset 9",
        "deep.cases.json": "ruleengine: deep.cases.json:1: the file nests too deeply",
    }
    for name, message in expected.items():
        code, out, err = outcome(capsys, name)
        assert (code, out) == (2, "")
        assert err.splitlines()[0] == message


def test_a_file_over_the_limit_is_refused_before_it_is_parsed(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(here / "huge.cases.toml", "wb") as handle:
        handle.write(b"#" * (MAX_CASES_BYTES + 1))
    code, out, err = outcome(capsys, "huge.cases.toml")
    assert (code, out) == (2, "")
    assert err == "ruleengine: huge.cases.toml: the file is larger than 10 MB\n"


def test_cases_are_read_from_a_file_not_stdin(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = outcome(capsys, "-")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "ruleengine: test: CASES: `-`: the cases are read from a file",
        "  hint: name the cases file",
    ]


def test_a_policy_that_does_not_load_is_bad_input(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = write(here, "c.cases.toml", CASE)
    code, out, err = outcome(capsys, cases, policy="nowhere.toml")
    assert (code, out) == (2, "")
    assert err == "ruleengine: nowhere.toml: no such file\n"


def test_missing_arguments_are_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", "refunds.toml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ruleengine: test: the following arguments are required: CASES")
