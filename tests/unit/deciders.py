"""The verdicts one by one (``compositional._Decider``) set up for a test: shared by the
tests of its quick steps and of its step counters."""

from __future__ import annotations

import time

from ruleengine.check.compositional import _Decider
from ruleengine.check.explicit import _Explorer
from ruleengine.check.symbolic import Encoding
from ruleengine.check.system import System


def first_state_only(system: System) -> _Decider:
    """The analysis of ``system`` with a probe of its first state alone (budget 30, a
    deadline ten minutes away)."""
    explorer = _Explorer(system, 1, None, True)
    probe = explorer.run()
    return _Decider(system, Encoding(system), explorer, probe, 30, time.monotonic() + 600)
