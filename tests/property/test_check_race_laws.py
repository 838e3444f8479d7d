"""``auto`` with a time limit races its engine, in one forked child, against the verdicts
decided one by one in another (``check/run._raced``), and takes the first complete report.
Laws on random policies the symbolic engine takes (the race applies to no other), with the
policy treated as wide (``_whole_if_small`` gives up at once, so the race runs however small
it is): (1) the raced report, complete, with a limit or without one, is the report of the
same check where no child can be forked, which does not race, ``stats`` aside; (2) with
the engine's child stuck, the one-by-one report is that same report, or an incomplete one
whose findings are among it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from policy_strategies import PolicyCase, policies, symbolic_system

from ruleengine.check import check, compositional, lanes
from ruleengine.check import run as run_module
from ruleengine.check.lanes import forking_allowed
from ruleengine.check.report import Report

pytestmark = pytest.mark.skipif(not forking_allowed(), reason="the race's children are forked")


def _shape(report: Report) -> dict[str, Any]:
    out: dict[str, Any] = report.model_dump(mode="json", exclude={"stats"})
    return out


@contextmanager
def _wide() -> Iterator[list[object]]:
    """Every policy raced: the small-policy shortcut finds nothing, and the second child
    starts with the engine's. Yields the children started (none: the race did not run)."""
    started: list[object] = []
    real = lanes.Aside.reporting  # every child starts by it

    def reporting(job: Any) -> Any:
        child = real(job)
        if child is not None:
            started.append(child)
        return child

    with (
        mock.patch.object(run_module, "_whole_if_small", lambda *a, **k: (None, None)),
        mock.patch.object(run_module, "ASIDE_GRACE", 0.0),
        mock.patch.object(lanes.Aside, "reporting", reporting),
    ):
        yield started


@contextmanager
def _engine_stuck() -> Iterator[None]:
    """The engine's whole path never ends in its forked child."""
    parent, real = os.getpid(), run_module._engine_path

    def path(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            time.sleep(600)
        return real(*args, **kwargs)

    with mock.patch.object(run_module, "_engine_path", path):
        yield


def _checked(case: PolicyCase, **limits: Any) -> Report:
    return check(list(case.tools), case.requirements(), **case.kwargs(), **limits)


def _alone(case: PolicyCase) -> Report:
    """The check in this process alone: no child can be forked, so nothing races."""
    with mock.patch.object(lanes, "forking_allowed", lambda: False):
        return _checked(case)


@given(case=policies(priority=False), timeout=st.sampled_from([None, 600]))
def test_a_complete_raced_report_is_the_unraced_one(
    case: PolicyCase, timeout: float | None
) -> None:
    symbolic_system(case)
    with _wide() as started:
        alone = _alone(case)
        assert not started  # no child, no race
        raced = _checked(case, timeout=timeout)
        assert started  # the engine's child at least
    note(f"alone: {alone}\nraced: {raced}")
    assert raced.complete == alone.complete
    assert _shape(raced) == _shape(alone)


@given(case=policies(priority=False), probe=st.sampled_from([1, 4, 4096]))
def test_the_verdicts_one_by_one_claim_only_the_engines_findings(
    case: PolicyCase, probe: int
) -> None:
    # A probe of a state or four leaves the one-by-one analysis to its other means, which
    # may not decide everything: its report then waits for the limit, and is incomplete.
    symbolic_system(case)
    with _wide() as started:
        alone = _alone(case)
        with _engine_stuck(), mock.patch.object(compositional, "PROBE_STATES", probe):
            raced = _checked(case, timeout=5)
        assert len(started) == 2  # the engine's child, stuck, and the other
    note(f"alone: {alone}\nraced: {raced}")
    if raced.complete:
        assert _shape(raced) == _shape(alone)
    else:
        assert alone.complete
        assert raced.undecided
        for finding in raced.findings:
            assert finding in alone.findings
