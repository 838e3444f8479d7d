"""BROKEN (deadlock that depends on a custom check): a Python policy, loaded as
``examples/policies/business_hours.py:policy``.

Refunds may only run during business hours (a custom check, a Python function a policy file
cannot hold), and the agent must refund before it finishes. Outside business hours, after the
one allowed lookup, nothing can be called and the agent may not stop. The checker cannot see
inside ``business_hours``: it explores both answers, and says the deadlock depends on it.
"""

from __future__ import annotations

from datetime import datetime

from ruleengine import ConditionalRequirement, Policy, RunState


def business_hours(state: RunState) -> bool:
    """Whether refunds are open now (Monday to Friday, 9:00 to 17:00)."""
    now = datetime.now()
    return now.weekday() < 5 and 9 <= now.hour < 17


policy = Policy(
    [
        ("lookup_order", "Look an order up: item, price, delivery status."),
        ("refund", "Refund an order."),
    ],
    [
        ConditionalRequirement("lookup_order", max_invocations=1, name="one-lookup"),
        ConditionalRequirement(
            "refund",
            only_after="lookup_order",
            custom_checks=business_hours,
            min_invocations=1,
            name="refund-in-business-hours",
        ),
    ],
    max_iterations=8,
)
