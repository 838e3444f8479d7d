"""Policy files and Python policies: ``Policy`` and the ``Location`` of what a file says."""

from ruleengine.policy.model import Location, Policy

__all__ = ["Location", "Policy"]
