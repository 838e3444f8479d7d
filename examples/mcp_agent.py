"""An agent whose tools come from an MCP server, under a policy the solver enforces.

The server (examples/mcp_docs_server.py) is started over stdio; its two tools become agent
tools with the server's own schemas. The policy: ``send_email`` only after ``search_docs``,
and only to our own domain (a condition on the call's arguments). A scripted model plays a
hasty agent, so this runs offline:

    python examples/mcp_agent.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from agent import RequirementAgent
from agent.mcp import StdioServer, mcp_tools
from backends import ScriptedChatModel
from ruleengine import ArgumentsRequirement, ConditionalRequirement

SERVER = Path(__file__).with_name("mcp_docs_server.py")


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPT = [
    call("send_email", to="customer@example.com", body="Refunds take 14 days."),
    call("search_docs", query="refunds policy"),
    call("send_email", to="customer@elsewhere.net", body="Refunds take 14 days."),
    call("send_email", to="customer@example.com", body="Refunds take 14 days."),
    call("final_answer", response="I e-mailed the customer our refund policy."),
]

REQUIREMENTS = [
    ConditionalRequirement("send_email", only_after="search_docs", name="search-first"),
    ArgumentsRequirement(
        "send_email",
        allow_if="arg.to.endswith('@example.com')",
        reason="we only e-mail our own customers' addresses",
        name="own-domain",
    ),
]


async def main() -> None:
    async with mcp_tools(StdioServer(sys.executable, [str(SERVER)])) as tools:
        print("tools from the MCP server:", ", ".join(t.name for t in tools))
        agent = RequirementAgent(ScriptedChatModel(SCRIPT), tools, REQUIREMENTS)
        agent.emitter.on("tool.refused", lambda e: print(f"  refused {e.tool}: {e.reason}"))
        agent.emitter.on("tool.success", lambda e: print(f"  ran {e.step.tool}"))
        out = await agent.run("Tell the customer about refunds.")
    print("answer:", out.answer)


if __name__ == "__main__":
    anyio.run(main)
