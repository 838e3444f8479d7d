"""A small MCP server for the MCP demo (examples/mcp_agent.py): a documentation search and a
mailer, written with the MCP SDK and served over stdio (``python mcp_docs_server.py``)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("docs")

PAGES = {
    "refunds": "Refunds are issued within 14 days of purchase.",
    "shipping": "Orders ship within 2 business days.",
}
SENT: list[str] = []


@server.tool()
def search_docs(query: str) -> str:
    """Search the documentation."""
    hits = [text for topic, text in PAGES.items() if topic in query.lower()]
    return " ".join(hits) or "no page matches"


@server.tool()
def send_email(to: str, body: str) -> str:
    """Send an e-mail."""
    SENT.append(to)
    return f"sent to {to}"


if __name__ == "__main__":
    server.run("stdio")
