"""The example policies: each loads, its check says what examples/policies/README.md says, and
every finding's trace replays through the runtime to the same finding."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from ruleengine import Policy
from ruleengine.check import FINDING_IDS, Report, confirm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "policies"
README = EXAMPLES / "README.md"
FINDING = re.compile(r"`(" + "|".join(FINDING_IDS) + r")`(?: \(`([^`]+)`\))?")


def readme_table() -> dict[str, list[tuple[str, str | None]]]:
    """Per policy named in the README's table, the findings it promises (id, subject)."""
    table: dict[str, list[tuple[str, str | None]]] = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        says = [(m[1], m[2]) for m in FINDING.finditer(cells[2])]
        assert says or cells[2] == "clean", f"README: cannot read {cells[2]!r}"
        for name in re.findall(r"`([^`]+)`", cells[0]):
            table[name] = says
    return table


TABLE = readme_table()


def source(name: str) -> str:
    return str(EXAMPLES / name)


@cache
def checked(name: str) -> tuple[Policy, Report]:
    policy = Policy.load(source(name))
    return policy, policy.check()


def test_the_readme_lists_every_example() -> None:
    files = {
        p.name
        for p in EXAMPLES.iterdir()
        if p.suffix in (".toml", ".yaml", ".yml", ".json", ".py") and p.name != "__init__.py"
    }
    listed = {name.partition(":")[0] for name in TABLE}
    assert listed == files
    assert len(TABLE) >= 12


def test_the_examples_cover_every_format_and_finding() -> None:
    suffixes = {Path(name.partition(":")[0]).suffix for name in TABLE}
    assert suffixes >= {".toml", ".yaml", ".json", ".py"}
    found = {finding_id for says in TABLE.values() for finding_id, _ in says}
    assert found == set(FINDING_IDS)
    assert sum(1 for says in TABLE.values() if not says) >= 5


@pytest.mark.parametrize("name", sorted(TABLE))
def test_example_check_says_what_the_readme_says(name: str) -> None:
    _, report = checked(name)
    assert report.complete, report.reason
    got = [(f.id, f.tool or f.requirement) for f in report.findings]
    assert got == TABLE[name]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_example_traces_replay(name: str) -> None:
    policy, report = checked(name)
    for finding in report.findings:
        if finding.depends_on_custom_checks:
            continue  # the replay would need the custom check's answer at that moment
        assert confirm(policy.reasoner(), finding) is None, finding


def test_the_three_research_files_are_one_policy() -> None:
    reports = [checked(f"research.{suffix}") for suffix in ("toml", "yaml", "json")]
    policies = [policy for policy, _ in reports]
    assert policies[0] == policies[1] == policies[2]
    dumps = [r.model_dump(mode="json", exclude={"policy", "stats"}) for _, r in reports]
    assert dumps[0] == dumps[1] == dumps[2]


def test_the_python_example_depends_on_its_custom_check() -> None:
    _, report = checked("business_hours.py:policy")
    (deadlock,) = report.findings
    assert deadlock.depends_on_custom_checks
    assert [str(s) for s in deadlock.trace] == ["lookup_order"]
