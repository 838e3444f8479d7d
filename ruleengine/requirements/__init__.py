"""Requirements: the base class, the decorator, the built-ins, and their monitors."""

from ruleengine.requirements.arguments import ArgumentsRequirement, parameters_of
from ruleengine.requirements.base import FunctionRequirement, Requirement, requirement
from ruleengine.requirements.conditional import ConditionalMonitor, ConditionalRequirement
from ruleengine.requirements.cycle import CycleGuard, CycleMonitor, canonical_arguments
from ruleengine.requirements.monitor import Counter, Monitor, replay
from ruleengine.requirements.permission import AskPermissionRequirement, PermissionMonitor

__all__ = [
    "ArgumentsRequirement",
    "AskPermissionRequirement",
    "ConditionalMonitor",
    "ConditionalRequirement",
    "Counter",
    "CycleGuard",
    "CycleMonitor",
    "FunctionRequirement",
    "Monitor",
    "PermissionMonitor",
    "Requirement",
    "canonical_arguments",
    "parameters_of",
    "replay",
    "requirement",
]
