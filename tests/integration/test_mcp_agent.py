"""Tools from MCP servers (``agent.mcp``) in a ``RequirementAgent`` run: a real MCP server
(``mcp_upstream.py``, over stdio), a scripted model, the gate refusing and admitting calls.

Over streamable HTTP, the server is the enforcing proxy (in front of the same upstream): its
refusals are tool errors, which the agent records as ``error`` steps. Nothing sleeps.
"""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the `mcp` extra) is not installed")

from agent import RequirementAgent
from agent.mcp import (
    HTTPServer,
    MCPServerError,
    MCPTool,
    MCPToolError,
    StdioServer,
    mcp_tools,
)
from backends import ScriptedChatModel, ToolResultMessage
from ruleengine import FINAL_ANSWER, ConditionalRequirement, Policy, PolicyError
from ruleengine.mcp import enforcing_proxy

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
UPSTREAM = [str(HERE / "mcp_upstream.py")]
LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look up"}},
    "required": ["query"],
}
SEND_FIRST = ConditionalRequirement("send", only_after=["lookup"])


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


ANSWER = call(FINAL_ANSWER, response="done")


def server(**options: Any) -> StdioServer:
    return StdioServer(sys.executable, UPSTREAM, name="up", **options)


def results(messages: Any) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolResultMessage)]


async def test_a_run_with_a_servers_tools_refused_and_admitted_calls_and_their_errors():
    async with mcp_tools(server(tools=["lookup", "send", "fail", "reject"])) as tools:
        assert [t.name for t in tools] == ["lookup", "send", "fail", "reject"]
        lookup = tools[0]
        assert isinstance(lookup, MCPTool)
        assert (lookup.server, lookup.remote_name, lookup.description) == (
            "up",
            "lookup",
            "Look a query up.",
        )
        # The server's schema, as it is: what the model is offered.
        assert lookup.input_schema == lookup.definition.parameters == LOOKUP_SCHEMA

        llm = ScriptedChatModel(
            [
                call("send", to="bob"),  # refused by the gate: `lookup` first
                call("lookup", query=5),  # refused by the gate: not the schema's type
                call("lookup", query="cats"),
                call("send", to="bob"),
                call("fail"),  # the server's tool error
                call("reject"),  # the server's JSON-RPC error
                ANSWER,
            ]
        )
        agent = RequirementAgent(llm, tools, [SEND_FIRST])
        out = await agent.run("go")

    assert [(s.tool, s.status) for s in out.steps] == [
        ("lookup", "ok"),
        ("send", "ok"),
        ("fail", "error"),
        ("reject", "error"),
        (FINAL_ANSWER, "ok"),
    ]
    assert out.steps[0].output == {"query": "cats", "hits": 2}  # the structured content
    assert out.steps[1].output == "sent to bob"  # no structured content: the text
    assert out.steps[2].error == "`fail` failed: MCPToolError: the disk is full"
    assert out.steps[3].error == (
        "`reject` failed: MCPToolError: the MCP server `up` answered with an error:"
        " no such record (JSON-RPC error -32602)"
    )
    said = results(out.messages)
    assert said[0].startswith("`send` did not run: it is not allowed at this step (needs")
    assert said[1] == (
        "`lookup` did not run: invalid arguments for `lookup`: `arguments`: `query`: 5 is not"
        " of type 'string'"
    )
    assert said[2] == '{"query": "cats", "hits": 2}'


async def test_a_server_that_dies_during_a_call_ends_the_run_with_an_error_naming_it():
    finished = []
    with pytest.raises(MCPServerError) as raised:
        async with mcp_tools(server(tools=["lookup", "crash"])) as tools:
            llm = ScriptedChatModel([call("crash"), call("lookup", query="x"), ANSWER])
            await RequirementAgent(llm, tools).run("go")
            finished.append(True)
    assert raised.value.server == "up"
    assert (
        raised.value.message == "the MCP server `up` closed the connection (it exited or crashed)"
    )
    assert not finished
    # The tools of a block that ended refuse to run.
    with pytest.raises(MCPToolError, match="is closed: use its tools inside"):
        await tools[0].run(tools[0].validate({"query": "x"}))


async def test_tools_over_streamable_http_from_the_enforcing_proxy():
    policy = Policy(["lookup", "send"], [SEND_FIRST])
    proxy_of = enforcing_proxy(policy, sys.executable, UPSTREAM)
    async with proxy_of as proxy, anyio.create_task_group() as tasks:
        url = f"http://127.0.0.1:{await tasks.start(proxy.serve_http)}/mcp"
        chosen = ["lookup", "send"]
        async with mcp_tools(HTTPServer(url, name="proxy", tools=chosen)) as tools:
            # No requirement in the agent: the proxy's policy refuses `send` first.
            replies = [call("send", to="bob"), call("lookup", query="x"), call("send", to="bob")]
            llm = ScriptedChatModel([*replies, ANSWER])
            out = await RequirementAgent(llm, tools).run("go")
        assert [(s.tool, s.status) for s in out.steps] == [
            ("send", "error"),
            ("lookup", "ok"),
            ("send", "ok"),
            (FINAL_ANSWER, "ok"),
        ]
        assert out.steps[0].error is not None
        assert "`send` did not run: it is not allowed at this step" in out.steps[0].error

        # Two servers may not offer one name; a prefix tells them apart.
        twice = [HTTPServer(url, tools=["lookup"]), HTTPServer(url, tools=["lookup"])]
        with pytest.raises(PolicyError, match="two MCP servers have a tool `lookup`"):
            async with mcp_tools(*twice):
                pass
        again = HTTPServer(url, tools=["lookup"], prefix="again_")
        async with mcp_tools(twice[0], again) as tools:
            assert [t.name for t in tools] == ["lookup", "again_lookup"]
            assert tools[1].remote_name == "lookup"
            output = await tools[1].run(tools[1].validate({"query": "y"}))
            assert output == {"query": "y", "hits": 2}
        with pytest.raises(PolicyError, match="has no tool `nope`"):
            async with mcp_tools(HTTPServer(url, tools=["nope"])):
                pass
        # What the block raises comes out as it was raised (not in the SDK's task groups).
        with pytest.raises(ValueError, match=r"^the block's own$"):
            async with mcp_tools(HTTPServer(url, tools=["lookup"])):
                raise ValueError("the block's own")
        tasks.cancel_scope.cancel()


async def test_a_server_that_does_not_start_or_cannot_be_reached_is_named(tmp_path: Path):
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit(5)\n", encoding="utf-8")
    with pytest.raises(MCPServerError, match="`broken` did not start: it closed the connection"):
        async with mcp_tools(StdioServer(sys.executable, [str(script)], name="broken")):
            pass
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/mcp"
    with pytest.raises(MCPServerError, match=re.escape(f"`{url}` could not be reached")):
        async with mcp_tools(HTTPServer(url)):
            pass


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ((object(),), "is not a server"),
        ((StdioServer(""),), "command must not be empty"),
        ((StdioServer("python", "server.py"),), "args=`'server.py'` must be a list of strings"),
        ((HTTPServer("ftp://example.com"),), "is not an http\\(s\\) URL"),
        ((HTTPServer("http://x", timeout=0),), "timeout=`0` must be positive"),
    ],
)
async def test_bad_server_specs_are_refused_before_connecting(
    servers: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(PolicyError, match=message):
        async with mcp_tools(*servers):
            pass
