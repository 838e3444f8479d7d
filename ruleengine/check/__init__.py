"""Static checking (SPEC §8): prove, for histories of any length, that a policy never
deadlocks, never demands a forced tool it forbids, leaves no tool or requirement dead, and
always leaves a way to finish — or give the shortest history that breaks it.

``check(tools, requirements, ...)`` returns a ``Report``; ``Policy.check`` calls it.
"""

from ruleengine.check.diff import diff, diff_policies
from ruleengine.check.report import (
    FINDING_IDS,
    DiffReport,
    Finding,
    PassView,
    Report,
    Stats,
    TraceStep,
)
from ruleengine.check.run import CheckTarget, check, check_policy
from ruleengine.check.trace import confirm, replay

__all__ = [
    "FINDING_IDS",
    "CheckTarget",
    "DiffReport",
    "Finding",
    "PassView",
    "Report",
    "Stats",
    "TraceStep",
    "check",
    "check_policy",
    "confirm",
    "diff",
    "diff_policies",
    "replay",
]
