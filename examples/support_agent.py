"""A customer-support agent that may issue refunds, under requirements and a refund limit.

The limit is a condition on the refund's arguments, decided by the engine (no Python
handler): refund the order that was looked up, a positive amount, at most its price; a
manager is asked only about refunds above 50 EUR.

Offline (the default, what `make demo` runs): a scripted model plays a hasty support agent —
it tries to refund before looking the order up, then before checking the policy, then types
800 for 80, and refunds twice — and the run log shows what the gate let through, what it
refused and why, and the manager approving the refund.

Against any OpenAI-compatible server, give a model name (the server and key come from
OPENAI_BASE_URL and OPENAI_API_KEY)::

    OPENAI_BASE_URL=http://localhost:11434/v1 python examples/support_agent.py --model qwen2.5:7b

``--ask`` asks you on the terminal instead of the scripted manager; ``--prompt`` changes the
customer's message.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio

from agent import RequirementAgent, TrajectoryLogger, tool
from backends import ChatModel, OpenAIChatModel, ScriptedChatModel
from ruleengine import ArgumentsRequirement, ConditionalRequirement
from ruleengine.conditions import arg, last

ORDERS = {
    "1042": {"item": "espresso machine", "price": 80.0, "status": "delivered, damaged in transit"},
    "1043": {"item": "coffee beans", "price": 12.5, "status": "in transit"},
}
PROMPT = "My order 1042 arrived broken. I want my money back."


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up: the item, its price, and where it is.

    Args:
        order_id: the order number, e.g. "1042"
    """
    order = ORDERS.get(order_id)
    if order is None:
        raise KeyError(f"no order {order_id}")
    return {"order_id": order_id, **order}


@tool
def refund_policy(order_id: str) -> str:
    """Check whether an order may be refunded, and how much.

    Args:
        order_id: the order number
    """
    order = ORDERS[order_id]
    if "damaged" in str(order["status"]):
        return f"refundable in full: {order['price']:.2f} EUR (damaged in transit)"
    return "not refundable yet: the order has not been delivered"


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount to the customer's card.

    Args:
        order_id: the order number
        amount: the amount in EUR
    """
    return f"refunded {amount:.2f} EUR for order {order_id}"


REQUIREMENTS = [
    # Look the order up before anything else.
    ConditionalRequirement(lookup_order, force_at_step=1),
    # Refund only after looking the order up and checking the policy, and only once.
    ConditionalRequirement(
        issue_refund,
        only_after=[lookup_order, refund_policy],
        max_invocations=1,
        reason="look the order up and check the policy first; refund once",
    ),
    # Do not answer before the policy was checked.
    ConditionalRequirement(refund_policy, min_invocations=1, reason="check the policy first"),
    # The refund limit, on the call's arguments and the looked-up order: the engine allows
    # `issue_refund` only while some refund passes these, and the gate tests each call.
    ArgumentsRequirement(
        issue_refund,
        allow_if=[
            arg.order_id == last(lookup_order).arguments.order_id,
            arg.amount <= last(lookup_order).output.price,
        ],
        deny_if=arg.amount <= 0,
        reason="refund a positive amount, at most the price of the order you looked up",
        name="refund-limit",
    ),
]

APPROVAL_ABOVE = 50
"""Refunds above this many EUR need the manager's approval."""


def manager(tool_name: str, arguments: Mapping[str, Any]) -> bool:
    """The scripted manager, asked only about refunds above ``APPROVAL_ABOVE``: approves."""
    print(f"  manager: refund {float(arguments['amount']):.2f} EUR? approved")
    return True


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT = [
    # Hasty: refunds before looking anything up (in the same reply as the lookup).
    {
        "tool_calls": [
            call("issue_refund", order_id="1042", amount=80),
            call("lookup_order", order_id="1042"),
        ]
    },
    # Still hasty: refunds before checking the policy.
    {
        "tool_calls": [
            call("issue_refund", order_id="1042", amount=80),
            call("refund_policy", order_id="1042"),
        ]
    },
    # A typo: 800 for 80, more than the order's price.
    {"tool_calls": [call("issue_refund", order_id="1042", amount=800)]},
    {"tool_calls": [call("issue_refund", order_id="1042", amount=80)]},
    # Refunds twice, then answers.
    {
        "tool_calls": [
            call("issue_refund", order_id="1042", amount=80),
            call(
                "final_answer",
                response="Sorry about the espresso machine! I refunded 80.00 EUR for order"
                " 1042; it will show on your card within 5 days.",
            ),
        ]
    },
]


def build(llm: ChatModel, *, ask_on_terminal: bool) -> RequirementAgent[str]:
    # Asks only about the calls whose arguments meet `ask_if` (the terminal with --ask).
    approval = ArgumentsRequirement(
        issue_refund,
        ask_if=arg.amount > APPROVAL_ABOVE,
        handler=None if ask_on_terminal else manager,
        name="manager-approves-large-refunds",
    )
    return RequirementAgent(
        llm,
        [lookup_order, refund_policy, issue_refund],
        [*REQUIREMENTS, approval],
        role="You are a friendly support agent for an online coffee shop.",
        instructions=[
            "Look the order up, check the refund policy, then refund when the policy allows.",
            "Answer the customer briefly, with what you did.",
        ],
        name="support",
    )


async def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL"), help="online model")
    parser.add_argument("--prompt", default=PROMPT, help="the customer's message")
    parser.add_argument("--ask", action="store_true", help="approve large refunds yourself")
    args = parser.parse_args(argv)
    if args.model:
        llm: ChatModel = OpenAIChatModel(args.model)
        print(f"online: {args.model} at {os.environ.get('OPENAI_BASE_URL', 'the default API')}")
    else:
        llm = ScriptedChatModel(SCRIPT)
        print("offline: a scripted model plays a hasty support agent")
    agent = build(llm, ask_on_terminal=args.ask)
    TrajectoryLogger().attach(agent)
    refused: list[object] = []  # calls refused before they ran: events, not steps
    agent.emitter.on("tool.refused", refused.append)
    out = await agent.run(args.prompt, max_iterations=10)
    print()
    print("answer:", out.answer)
    denied = sum(1 for s in out.steps if s.status == "denied")
    counts = f"calls refused by the gate: {len(refused)}, by the manager: {denied}"
    print(f"{len(out.steps)} steps; {counts}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
