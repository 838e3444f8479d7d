"""ruleengine: per-step tool permits for LLM agents, decided by Z3, with minimal conflict cores."""

from ruleengine._tags import Tags, tags
from ruleengine.conditions.admission import Admission, ArgCheck, Violation
from ruleengine.errors import (
    AgentError,
    ConflictError,
    PolicyError,
    RequirementError,
    RuleEngineError,
    SolverError,
)
from ruleengine.ir import (
    FINAL_ANSWER,
    Expr,
    all_of,
    allowed,
    any_of,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
)
from ruleengine.passes import CoreEntry, Explanation, ForcedTie, Pass, ToolDecision
from ruleengine.policy import Policy
from ruleengine.reasoner import Reasoner
from ruleengine.requirements import (
    ArgumentsRequirement,
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    FunctionRequirement,
    Monitor,
    Requirement,
    requirement,
)
from ruleengine.rules import Emitted, Rule
from ruleengine.state import RunState, Step

__all__ = [
    "Admission",
    "AgentError",
    "ArgCheck",
    "ArgumentsRequirement",
    "AskPermissionRequirement",
    "ConditionalRequirement",
    "ConflictError",
    "CoreEntry",
    "CycleGuard",
    "Emitted",
    "Explanation",
    "Expr",
    "FINAL_ANSWER",
    "ForcedTie",
    "FunctionRequirement",
    "Monitor",
    "Pass",
    "Policy",
    "PolicyError",
    "Reasoner",
    "Requirement",
    "RequirementError",
    "Rule",
    "RuleEngineError",
    "RunState",
    "SolverError",
    "Step",
    "Tags",
    "ToolDecision",
    "Violation",
    "all_of",
    "allowed",
    "any_of",
    "at_least",
    "at_most",
    "can_stop",
    "exactly",
    "forced",
    "hidden",
    "implies",
    "requirement",
    "tags",
]
