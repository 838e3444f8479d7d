"""A small MCP server over stdio, written with the SDK's low-level server: the upstream of the
proxy tests and the server of the agent's MCP tool tests (``python mcp_upstream.py``).

Its tools:

- ``lookup(query)``: a text block, an image block and structured content (a result with a
  bit of everything, to check that the proxy passes it on unchanged);
- ``send(to)``: one text block;
- ``fail()``: a tool error result (``isError``) saying ``the disk is full``;
- ``reject()``: a JSON-RPC error (code -32602, ``no such record``);
- ``busy()``: a JSON-RPC error whose code (-32000) is also the SDK's for a closed connection;
- ``crash()``: the process exits in the middle of the call (exit code 3);
- ``extra()``: a tool the tests' policies do not declare.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import MCPError, types
from mcp.server import Server
from mcp.server.stdio import stdio_server

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

TOOLS = [
    types.Tool(
        name="lookup",
        description="Look a query up.",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up"}},
            "required": ["query"],
        },
    ),
    types.Tool(
        name="send",
        description="Send a message.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}},
            "required": ["to"],
        },
    ),
    types.Tool(name="fail", description="Fails, as a tool error.", input_schema=NO_ARGUMENTS),
    types.Tool(name="reject", description="Fails, as a JSON-RPC error.", input_schema=NO_ARGUMENTS),
    types.Tool(name="busy", description="Fails, as error -32000.", input_schema=NO_ARGUMENTS),
    types.Tool(name="crash", description="Exits the server.", input_schema=NO_ARGUMENTS),
    types.Tool(name="extra", description="Not in the policies.", input_schema=NO_ARGUMENTS),
]


def lookup_result(query: str) -> types.CallToolResult:
    """What ``lookup`` answers (the tests compare the proxy's answer with it)."""
    return types.CallToolResult(
        content=[
            types.TextContent(text=f"found {query}"),
            types.ImageContent(data="aGk=", mime_type="image/png"),
        ],
        structured_content={"query": query, "hits": 2},
    )


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "lookup":
        return lookup_result(str(arguments["query"]))
    if params.name == "send":
        return types.CallToolResult(content=[types.TextContent(text=f"sent to {arguments['to']}")])
    if params.name == "fail":
        return types.CallToolResult(
            content=[types.TextContent(text="the disk is full")], is_error=True
        )
    if params.name == "reject":
        raise MCPError(code=types.INVALID_PARAMS, message="no such record")
    if params.name == "busy":
        raise MCPError(code=types.CONNECTION_CLOSED, message="busy, try later")
    if params.name == "crash":
        sys.stdout.flush()
        os._exit(3)
    if params.name == "extra":
        return types.CallToolResult(content=[types.TextContent(text="extra ran")])
    raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name}")


async def main() -> None:
    server: Server[Any] = Server("upstream", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
