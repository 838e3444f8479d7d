"""``benchmarks.thresholds``: its policies load, and the checker counts every state of a
counter's threshold while visiting a few."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.thresholds import SHAPES, THRESHOLDS, policy_text
from ruleengine import Policy


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_a_policy_checked_with_every_count(shape: str, tmp_path: Path) -> None:
    ids = set()
    for n in THRESHOLDS:
        path = tmp_path / f"{shape}-{n}.toml"
        path.write_text(policy_text(shape, n, seed=1), encoding="utf-8")
        report = Policy.load(str(path)).check()
        assert report.complete
        if shape != "several":
            assert report.stats.states == n + 1
        found = {f.id for f in report.findings}
        ids.add(frozenset(found))
        if shape == "deadlock":
            deadlock = next(f for f in report.findings if f.id == "deadlock")
            assert len(deadlock.trace) == n
    if shape not in ("gated", "several"):  # they need N/2 calls: within the budget at 10
        assert len(ids) == 1  # the same findings at every threshold


def test_an_unknown_shape_is_named() -> None:
    with pytest.raises(ValueError, match="unknown shape `ring`"):
        policy_text("ring", 10, 0)
