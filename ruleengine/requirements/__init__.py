"""Requirements: the base class, the decorator, and the built-ins."""

from ruleengine.requirements.base import FunctionRequirement, Requirement, requirement

__all__ = ["FunctionRequirement", "Requirement", "requirement"]
