"""backends/_retry.py: which failures are retried, and the computed back-off delays."""

from __future__ import annotations

from email.utils import formatdate
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends import RetryPolicy
from backends._retry import parse_retry_after
from ruleengine import PolicyError


def test_delays_grow_exponentially_within_the_jitter_band() -> None:
    low = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=10.0, jitter=lambda: 0.0)
    high = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=10.0, jitter=lambda: 0.999999)
    assert [low.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 5.0]
    assert [round(high.delay(n) or 0, 3) for n in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_no_delay_after_the_last_retry() -> None:
    policy = RetryPolicy(max_retries=2, jitter=lambda: 0.5)
    assert policy.delay(1) is not None
    assert policy.delay(2) is None
    assert RetryPolicy(max_retries=0).delay(0) is None


def test_retry_after_is_honoured_up_to_max_delay() -> None:
    policy = RetryPolicy(max_retries=3, base_delay=0.1, max_delay=5.0, jitter=lambda: 0.0)
    assert policy.delay(0, retry_after=2.0) == 2.0
    assert policy.delay(0, retry_after=0.0) == 0.0
    assert policy.delay(0, retry_after=6.0) is None  # the server asks for longer than we wait


def test_a_jitter_that_gives_no_number_is_a_clear_error() -> None:
    with pytest.raises(PolicyError, match="`jitter` must give a number"):
        RetryPolicy(jitter=lambda: "half").delay(0)  # type: ignore[arg-type, return-value]


def test_jitter_out_of_range_is_clamped() -> None:
    assert RetryPolicy(base_delay=1.0, jitter=lambda: 7.0).delay(0) == 1.0
    assert RetryPolicy(base_delay=1.0, jitter=lambda: -3.0).delay(0) == 0.5


@given(st.integers(0, 99), st.floats(0, 1, exclude_max=True))
def test_delays_stay_within_bounds(retry: int, share: float) -> None:
    policy = RetryPolicy(max_retries=100, base_delay=0.5, max_delay=30.0, jitter=lambda: share)
    delay = policy.delay(retry)
    assert delay is not None
    ceiling = min(30.0, 0.5 * 2.0**retry)
    assert ceiling / 2 <= delay <= ceiling


@pytest.mark.parametrize(
    ("status", "retried"),
    [
        (400, False),
        (401, False),
        (404, False),
        (408, False),
        (422, False),
        (429, True),
        (500, True),
        (503, True),
    ],
)
def test_which_statuses_are_retried(status: int, retried: bool) -> None:
    assert RetryPolicy.retryable(status) is retried


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-4"}, 0.0),
        ({"Retry-After": "inf"}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_as_an_http_date() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"Retry-After": formatdate(now + 20, usegmt=True)}, now=now) == 20.0
    assert parse_retry_after({"Retry-After": formatdate(now - 20, usegmt=True)}, now=now) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_retries": -1}, "`max_retries`"),
        ({"max_retries": 1.5}, "`max_retries`"),
        ({"max_retries": 1000}, "`max_retries`"),
        ({"base_delay": -1}, "`base_delay`"),
        ({"max_delay": float("inf")}, "`max_delay`"),
        ({"base_delay": 10, "max_delay": 1}, "over `max_delay`"),
        ({"jitter": 0.5}, "`jitter`"),
    ],
)
def test_bad_policies_are_refused(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(PolicyError) as caught:
        RetryPolicy(**kwargs)
    assert fragment in caught.value.message
