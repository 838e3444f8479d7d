"""Policies whose requirements outlast any limit (for the command line's limit tests)."""

from __future__ import annotations

import time
from typing import Any

from ruleengine import Policy, requirement


@requirement(name="never-returns")
def never_returns(state: Any) -> list[Any]:
    time.sleep(3600)  # one step no deadline check can interrupt
    return []


_kept: list[bytearray] = []


@requirement(name="hoards-memory")
def hoards_memory(state: Any) -> list[Any]:
    _kept.extend(bytearray(1 << 20) for _ in range(300))  # 300 MiB, touched
    time.sleep(3600)
    return []


stuck = Policy(["a"], [never_returns])
hoarding = Policy(["a"], [hoards_memory])
