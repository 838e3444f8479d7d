"""When to retry a failed call to a server, and how long to wait first.

Retries are ours, not the openai SDK's (it is built with ``max_retries=0``), so the policy is
written down once and tested: 429, 5xx and connection errors are retried with exponential
back-off and jitter, honouring the server's ``Retry-After``; other 4xx are not retried.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ruleengine.errors import PolicyError

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential back-off with jitter: retry ``n`` (from 0) waits a random time in
    ``[c/2, c]`` where ``c = min(max_delay, base_delay * 2**n)``, or what the server asked.
    """

    max_retries: int = 3
    """Retries after the first attempt; 0 turns retrying off."""
    base_delay: float = 0.5
    """Seconds of the first back-off ceiling."""
    max_delay: float = 30.0
    """The longest wait; a server asking for more (``Retry-After``) is not retried."""
    jitter: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """A source of numbers in ``[0, 1)``; inject a constant to make delays predictable."""

    def __post_init__(self) -> None:
        retries = self.max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
            raise PolicyError(
                f"`max_retries` must be a whole number from 0 to 100: got `{retries!r:.80}`"
            )
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value < math.inf
            ):
                raise PolicyError(f"`{name}` must be a number of seconds ≥ 0: got `{value!r:.80}`")
        if self.base_delay > self.max_delay:
            raise PolicyError(
                f"`base_delay` ({self.base_delay:g} s) is over `max_delay` ({self.max_delay:g} s)"
            )
        if not callable(self.jitter):
            raise PolicyError(
                f"`jitter` must be a function giving numbers in [0, 1): got `{self.jitter!r:.80}`"
            )

    @staticmethod
    def retryable(status: int) -> bool:
        """Whether an HTTP status is worth retrying: 429 and every 5xx."""
        return status == 429 or status >= 500

    def delay(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry ``retry`` (from 0), or ``None`` to stop retrying."""
        if retry >= self.max_retries:
            return None
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.max_delay else None
        ceiling = min(self.max_delay, self.base_delay * 2.0**retry)
        value = self.jitter()
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise PolicyError(f"`jitter` must give a number in [0, 1): it gave `{value!r:.80}`")
        share = min(max(float(value), 0.0), 1.0)
        return ceiling / 2 + share * ceiling / 2


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, or ``Retry-After`` in seconds or as
    an HTTP date; ``None`` when absent or unreadable."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        text = lowered.get(name)
        if text is None:
            continue
        seconds: float | None
        try:
            seconds = float(text) * scale
        except ValueError:
            seconds = _from_date(text, now)
        if seconds is not None and math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _from_date(text: str, now: float | None) -> float | None:
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return moment.timestamp() - (time.time() if now is None else now)
