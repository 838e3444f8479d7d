"""``ruleengine check --format sarif`` against the official SARIF 2.1.0 JSON Schema.

The schema is vendored in ``tests/data/sarif-schema-2.1.0.json`` (OASIS, errata 01: the
document its ``id`` names, unchanged; see ``tests/data/README.md``), so the tests run offline.
It is a draft-04 schema, validated with ``jsonschema``'s Draft 4 validator. The logs come from
the real command (``ruleengine.cli.main``) on example policies covering every finding, a clean
policy, a Python policy, and policies that do not load.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ruleengine.check.report import FINDING_IDS
from ruleengine.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "policies"
SCHEMA_FILE = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)

# Example policies that, together, have every finding, and one clean policy.
FINDINGS = [
    "ticket_triage.toml",
    "react_tie.yaml",
    "batch_report.yaml",
    "ci_fixer.yaml",
    "data_pipeline.toml",
    "email_assistant.yaml",
    "newsroom.json",
    "payments_limits.toml",
]
CLEAN = "research.toml"
BROKEN = 'tools = ["search"]\n\n[[requirements]]\ntype = "conditional"\ntarget = "serch"\n'


def errors(log: object) -> list[str]:
    """What ``log`` breaks of the SARIF schema, one line each."""
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message[:200]}"
        for error in VALIDATOR.iter_errors(log)
    ]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch directory, made the current one, with the example policies and a broken one."""
    for name in [*FINDINGS, CLEAN]:
        shutil.copy(EXAMPLES / name, tmp_path / name)
    (tmp_path / "broken.toml").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RULEENGINE_PROGRESS_AFTER", "0")
    return tmp_path


def sarif(capsys: pytest.CaptureFixture[str], *policies: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *policies, "--format", "sarif"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    log: dict[str, Any] = json.loads(out)
    return code, log


def test_the_vendored_schema_is_the_one_logs_name() -> None:
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest()
    assert digest == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    assert SCHEMA["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    assert type(VALIDATOR) is jsonschema.Draft4Validator
    jsonschema.Draft4Validator.check_schema(SCHEMA)


def test_every_finding_makes_a_valid_log(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, log = sarif(capsys, *FINDINGS)
    assert code == 1
    assert errors(log) == []
    assert log["$schema"] == SCHEMA["id"]
    (run,) = log["runs"]
    assert {result["ruleId"] for result in run["results"]} == set(FINDING_IDS)
    assert any(result.get("relatedLocations") for result in run["results"])


@pytest.mark.parametrize(
    ("policies", "code"),
    [
        ([CLEAN], 0),
        ([str(EXAMPLES / "business_hours.py") + ":policy"], 1),
        (["broken.toml", "ticket_triage.toml"], 2),
        (["missing.toml", CLEAN], 2),
    ],
    ids=["clean", "python-policy", "load-error", "missing-file"],
)
def test_other_logs_are_valid(
    here: Path, capsys: pytest.CaptureFixture[str], policies: list[str], code: int
) -> None:
    got, log = sarif(capsys, *policies)
    assert got == code
    assert errors(log) == []


def test_a_policy_that_does_not_load_is_a_result_and_a_notification(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, log = sarif(capsys, "broken.toml")
    assert errors(log) == []
    (run,) = log["runs"]
    assert run["results"] and run["invocations"][0]["toolExecutionNotifications"]


@pytest.mark.parametrize(
    ("spoil", "fragment"),
    [
        (lambda log: log.pop("version"), "'version' is a required property"),
        (lambda log: log.update(version="2.0"), "'2.0' is not one of ['2.1.0']"),
        (lambda log: log["runs"][0]["tool"]["driver"].pop("name"), "'name' is a required"),
        (lambda log: log["runs"][0]["results"][0].update(level="fatal"), "'fatal' is not one of"),
        (lambda log: log["runs"][0]["results"][0].update(message={}), "is not valid under any"),
        (
            lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"][
                "region"
            ].update(startLine=0),
            "0 is less than the minimum of 1",
        ),
        (
            lambda log: log["runs"][0]["results"][0].update(rule_id="x"),
            "Additional properties are not allowed ('rule_id' was unexpected)",
        ),
    ],
    ids=[
        "no-version",
        "old-version",
        "no-driver-name",
        "bad-level",
        "empty-message",
        "line-zero",
        "unknown-key",
    ],
)
def test_the_schema_catches_broken_logs(
    here: Path,
    capsys: pytest.CaptureFixture[str],
    spoil: Callable[[dict[str, Any]], None],
    fragment: str,
) -> None:
    _, log = sarif(capsys, "ticket_triage.toml")
    assert errors(log) == []
    spoiled = copy.deepcopy(log)
    spoil(spoiled)
    found = errors(spoiled)
    assert any(fragment in line for line in found), found
