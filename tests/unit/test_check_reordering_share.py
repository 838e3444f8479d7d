"""Dynamic reordering kept to its share of an encoding's time (``mind_reordering``), and
``_bdd.reordering_seconds``, which reads the time it took."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from ruleengine import ConditionalRequirement as C
from ruleengine.check import _bdd, symbolic_encoding
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import System

SIX = [f"t{i}" for i in range(6)]


def _reordering() -> Encoding:
    """An encoding with dynamic reordering on (many bits of global views), or a skip
    where the backend has none."""
    reqs = [C(t, max_invocations=3, name=f"cap-{t}") for t in SIX]
    reqs += [C(t, consecutive_allowed=False, name=f"apart-{t}") for t in SIX]
    reqs += [C(t, force_at_step=i + 3, name=f"at-{t}") for i, t in enumerate(SIX)]
    enc = Encoding(System(SIX, reqs))
    if not enc.reordering:
        pytest.skip("this platform's dd has no CUDD backend: nothing reorders")
    return enc


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


def _spent(monkeypatch: pytest.MonkeyPatch, seconds: list[float]) -> list[int]:
    """Make the encoding read ``seconds[0]`` as the time reordering took; returns a list
    that counts the reads."""
    reads: list[int] = []

    def fake(bdd: Any) -> float:
        reads.append(1)
        return seconds[0]

    monkeypatch.setattr(symbolic_encoding, "reordering_seconds", fake)
    return reads


def test_reordering_stays_on_within_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = _reordering()
    clock = _Clock(enc._born + 100.0)
    monkeypatch.setattr(symbolic_encoding, "time", clock)
    # 29 s of 100: within the share.
    _spent(monkeypatch, [symbolic_encoding.REORDER_SHARE * 100.0 - 1.0])
    enc.mind_reordering()
    assert enc.reordering
    assert enc.bdd.configure()["reordering"]


def test_reordering_goes_off_for_good_past_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = _reordering()
    clock = _Clock(enc._born + 10.0)
    monkeypatch.setattr(symbolic_encoding, "time", clock)
    reads = _spent(monkeypatch, [symbolic_encoding.REORDER_SHARE * 10.0 + 0.5])
    enc.mind_reordering()
    assert not enc.reordering
    assert not enc.bdd.configure()["reordering"]
    # Off for good: nothing turns it on again, and it is not looked at any more.
    enc.set_reordering(True)
    assert not enc.bdd.configure()["reordering"]
    clock.now += 60.0
    enc.mind_reordering()
    assert len(reads) == 1


def test_a_short_check_keeps_reordering_below_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    # Most of a second spent reordering in the first second is no reason to stop: small
    # policies reorder early and cheaply, and the order pays for the rest.
    enc = _reordering()
    monkeypatch.setattr(symbolic_encoding, "time", _Clock(enc._born + 1.0))
    _spent(monkeypatch, [symbolic_encoding.REORDER_FLOOR * 0.99])
    enc.mind_reordering()
    assert enc.reordering


def test_the_time_is_looked_at_now_and_then(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = _reordering()
    clock = _Clock(enc._born + 100.0)
    monkeypatch.setattr(symbolic_encoding, "time", clock)
    spent = [0.0]
    reads = _spent(monkeypatch, spent)
    enc.mind_reordering()
    enc.mind_reordering()
    assert len(reads) == 1
    spent[0] = 99.0  # past the share, but not looked at before the interval
    clock.now += symbolic_encoding.REORDER_LOOK / 2
    enc.mind_reordering()
    assert enc.reordering
    clock.now += symbolic_encoding.REORDER_LOOK
    enc.mind_reordering()
    assert len(reads) == 2
    assert not enc.reordering


def test_an_encoding_that_does_not_reorder_never_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = Encoding(System(SIX, [C(t, max_invocations=2, name=f"cap-{t}") for t in SIX]))
    assert not enc.reordering
    reads = _spent(monkeypatch, [1e9])
    monkeypatch.setattr(symbolic_encoding, "time", _Clock(enc._born + 1e6))
    enc.mind_reordering()
    assert reads == []


def test_reordering_seconds_reads_cudds_clock_without_its_warning() -> None:
    bdd = _bdd.dd.BDD()
    if not hasattr(bdd, "statistics"):
        pytest.skip("a BDD package without statistics")
    bdd.declare(*[f"v{i}" for i in range(12)])
    u = bdd.false
    for i in range(0, 12, 2):
        u |= bdd.var(f"v{i}") & bdd.var(f"v{i + 1}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning passed on fails the test
        before = _bdd.reordering_seconds(bdd)
        if hasattr(_bdd.dd, "reorder"):
            _bdd.dd.reorder(bdd)  # one sifting now: the clock moves, or stays at 0
        after = _bdd.reordering_seconds(bdd)
    assert isinstance(before, float)
    assert 0.0 <= before <= after


class _Says:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def statistics(self) -> object:
        return self.answer


@pytest.mark.parametrize(
    "bdd",
    [object(), _Says(None), _Says({}), _Says({"reordering_time": "soon"}), _Says([1, 2])],
    ids=["no statistics", "None", "no entry", "not a number", "not a dict"],
)
def test_a_backend_that_does_not_say_has_spent_nothing(bdd: object) -> None:
    assert _bdd.reordering_seconds(bdd) == 0.0


def test_a_backend_that_says_is_read() -> None:
    assert _bdd.reordering_seconds(_Says({"reordering_time": 2})) == 2.0
    assert _bdd.reordering_seconds(_Says({"reordering_time": 0.25})) == 0.25


def test_a_slow_look_is_taken_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading CUDD's statistics scans its tables: where one read took a second, the next
    # waits twenty, so reading never takes more than a twentieth of the time.
    enc = _reordering()
    clock = _Clock(enc._born + 100.0)
    monkeypatch.setattr(symbolic_encoding, "time", clock)
    reads: list[float] = []

    def slow(bdd: Any) -> float:
        reads.append(clock.now)
        clock.now += 1.0
        return 0.0

    monkeypatch.setattr(symbolic_encoding, "reordering_seconds", slow)
    enc.mind_reordering()
    clock.now += 19.5
    enc.mind_reordering()
    assert len(reads) == 1
    clock.now += 1.0
    enc.mind_reordering()
    assert len(reads) == 2
