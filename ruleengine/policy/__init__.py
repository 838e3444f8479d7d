"""Policy files and Python policies: ``Policy`` and the ``Location`` of what a file says."""

from ruleengine.policy._places import Location
from ruleengine.policy.model import Policy

__all__ = ["Location", "Policy"]
