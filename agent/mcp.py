"""Tools from MCP servers: each tool a server lists becomes an agent ``Tool``, gated like any
other.

    async with mcp_tools(StdioServer("python", ["server.py"]), HTTPServer(url)) as tools:
        agent = RequirementAgent(llm, tools, requirements)
        output = await agent.run("...")

``mcp_tools`` connects to every server (a stdio server is started as a subprocess), lists its
tools once, and gives one ``MCPTool`` per tool: the server's name (with the spec's ``prefix``),
description and input schema, which the tool carries as it is (``input_schema``; the model is
offered exactly that schema, and the gate checks the model's arguments against it). The
servers stay connected until the block ends.

A call the server answers with a tool error (``isError``) or a JSON-RPC error is the tool's
error: the step ends with status ``error`` and the server's text. A server that dies (its
process exits, its endpoint goes away) fails the call in flight, and ends the block, and with
it the run inside: ``mcp_tools`` raises ``MCPServerError`` naming the server when the block
ends, and the tools of a block that ended refuse to run.

Needs the MCP SDK, the optional extra (``pip install 'ruleengine[mcp]'``): importing this
module without it raises ``ruleengine.mcp.MCPUnavailableError``, an ``ImportError`` naming it.
"""

from __future__ import annotations

# First: without the MCP SDK (the extra), this raises `MCPUnavailableError`, naming the extra.
from ruleengine.mcp import MCPServerError

# isort: split
import copy
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from mcp import MCPError, types
from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from agent.tools import Tool
from ruleengine import FINAL_ANSWER, AgentError, PolicyError, validate
from ruleengine.mcp.connection import (
    ServerConnection,
    connect_http,
    connect_stdio,
    describe_exception,
)
from ruleengine.mcp.content import result_output, result_text

__all__ = [
    "HTTPServer",
    "MCPServerError",
    "MCPTool",
    "MCPToolError",
    "StdioServer",
    "mcp_tools",
]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_PROBLEMS = 3


class MCPToolError(AgentError):
    """An MCP server answered a call with an error: a tool error result (``isError``) or a
    JSON-RPC error. The message is the server's text; the step is an ``error`` step."""

    def __init__(self, message: str, *, tool: str, server: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.tool = tool
        """The tool, as the agent names it."""
        self.server = server
        """The server, as messages name it."""


@dataclass(frozen=True, slots=True)
class StdioServer:
    """An MCP server started as a subprocess (``command args``), spoken to over its stdio.

    ``env`` is merged over the SDK's default environment for servers (``HOME``, ``PATH`` and a
    few more; pass ``dict(os.environ)`` to hand it everything); ``cwd`` is its working
    directory.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | Path | None = None
    name: str | None = None
    """How messages name the server (default: its command line)."""
    prefix: str = ""
    """Put before each of its tools' names, for the agent (the server is called by its own)."""
    tools: Sequence[str] | None = None
    """Only these of its tools, by the server's names (default: all it lists)."""
    timeout: float | None = None
    """The longest one call may take, in seconds (``None``: no limit)."""

    def connect(self) -> AbstractAsyncContextManager[ServerConnection]:
        """Start the server and connect (what ``mcp_tools`` does with it)."""
        return connect_stdio(
            self.command, tuple(self.args), env=self.env, cwd=self.cwd, label=self.name
        )


@dataclass(frozen=True, slots=True)
class HTTPServer:
    """An MCP server at a streamable HTTP endpoint (``url``); ``headers`` go with every
    request (an ``Authorization`` header, say)."""

    url: str
    headers: Mapping[str, str] | None = None
    name: str | None = None
    """How messages name the server (default: its URL)."""
    prefix: str = ""
    """Put before each of its tools' names, for the agent (the server is called by its own)."""
    tools: Sequence[str] | None = None
    """Only these of its tools, by the server's names (default: all it lists)."""
    timeout: float | None = None
    """The longest one call may take, in seconds (``None``: no limit)."""

    def connect(self) -> AbstractAsyncContextManager[ServerConnection]:
        """Connect to the endpoint (what ``mcp_tools`` does with it)."""
        return connect_http(self.url, headers=self.headers, label=self.name)


class _Block:
    """What the tools of one ``mcp_tools`` block share: the scope a dead server cancels, the
    first server that died, and whether the block has ended."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.failure: MCPServerError | None = None
        self.ended = False

    def fail(self, error: MCPServerError) -> None:
        if self.failure is None:
            self.failure = error
        if self.scope is not None:
            self.scope.cancel()


class MCPTool(Tool):
    """One tool of an MCP server, as an agent tool: calling it calls the server.

    Its input model is the server's input schema as it is (``input_schema``): the model is
    offered that schema, and arguments that do not conform are refused by the gate.
    """

    def __init__(
        self,
        connection: ServerConnection,
        listed: types.Tool,
        *,
        name: str,
        timeout: float | None,
        block: _Block,
    ) -> None:
        schema = _object_schema(listed, connection.label)
        description = listed.description or listed.title or ""
        super().__init__(name, description, _arguments_model(name, schema), timeout=timeout)
        self.server = connection.label
        """The server, as messages name it."""
        self.remote_name = listed.name
        """The tool's name on the server."""
        self.input_schema: dict[str, Any] = schema
        """The JSON Schema of the arguments, as the server listed it."""
        self.output_schema: dict[str, Any] | None = listed.output_schema
        """The JSON Schema of the structured output, if the server gave one."""
        self.annotations = listed.annotations
        """The server's hints about the tool (read-only, destructive, …), if any."""
        self._connection = connection
        self._block = block

    async def run(self, input: BaseModel) -> Any:
        """Call the tool on the server: the structured content if it sent one, else the text."""
        if self._block.ended:
            raise MCPToolError(
                f"the connection to the MCP server `{self.server}` is closed: use its tools"
                " inside the `mcp_tools` block",
                tool=self.name,
                server=self.server,
            )
        if self._block.failure is not None:
            # A server of this block died: the block is cancelled, and this lets it land.
            await anyio.lowlevel.checkpoint()
        arguments = dict(input.model_extra or {})
        try:
            result = await self._connection.call(self.remote_name, arguments)
        except MCPServerError as error:
            self._block.fail(error)
            raise
        except MCPError as error:
            raise MCPToolError(
                f"the MCP server `{self.server}` answered with an error:"
                f" {describe_exception(error)}",
                tool=self.name,
                server=self.server,
            ) from None
        if result.is_error:
            text = " ".join(result_text(result).split()) or "the tool reported an error"
            raise MCPToolError(text, tool=self.name, server=self.server)
        return result_output(result)

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server!r})"


@asynccontextmanager
async def mcp_tools(*servers: StdioServer | HTTPServer) -> AsyncIterator[list[MCPTool]]:
    """Connect to ``servers`` and give their tools, in order (each server's as it lists them).

    Raises ``MCPServerError`` when a server does not start or cannot be reached (naming it),
    ``PolicyError`` for a bad spec, a tool name two servers share (give one a ``prefix``), a
    name the model cannot call, or a ``tools`` entry the server does not have. When a server
    dies inside the block, the block is cancelled and ``MCPServerError`` is raised as it ends.
    """
    for spec in servers:
        _check_spec(spec)
    block = _Block()
    async with AsyncExitStack() as stack:
        tools: list[MCPTool] = []
        owners: dict[str, str] = {}
        for spec in servers:
            connection = await stack.enter_async_context(spec.connect())
            for listed in _chosen(spec, connection):
                name = spec.prefix + listed.name
                _check_name(name, listed.name, connection.label, owners)
                owners[name] = connection.label
                tool = MCPTool(connection, listed, name=name, timeout=spec.timeout, block=block)
                tools.append(tool)
        try:
            with anyio.CancelScope() as scope:
                block.scope = scope
                yield tools
        finally:
            block.scope = None
            block.ended = True
    # Raised once every connection is closed (inside, their task groups would wrap it).
    if block.failure is not None:
        failure = block.failure
        raise MCPServerError(failure.message, server=failure.server, hint=failure.hint)


def _check_spec(spec: object) -> None:
    if isinstance(spec, StdioServer):
        validate.text(spec.command, name="command", owner="StdioServer")
        if isinstance(spec.args, str) or not all(isinstance(a, str) for a in spec.args):
            raise PolicyError(
                f"StdioServer: args=`{spec.args!r:.60}` must be a list of strings",
                parameter="args",
            )
    elif isinstance(spec, HTTPServer):
        validate.text(spec.url, name="url", owner="HTTPServer")
        if not spec.url.startswith(("http://", "https://")):
            raise PolicyError(f"HTTPServer: url=`{spec.url:.80}` is not an http(s) URL")
    else:
        raise PolicyError(
            f"mcp_tools: `{spec!r:.60}` is not a server",
            hint="pass `StdioServer(command, args)` or `HTTPServer(url)` objects",
        )
    owner = type(spec).__name__
    if not isinstance(spec.prefix, str):
        raise PolicyError(f"{owner}: prefix=`{spec.prefix!r:.60}` must be text")
    if spec.name is not None:
        validate.text(spec.name, name="name", owner=owner)
    if spec.timeout is not None:
        validate.number(spec.timeout, name="timeout", owner=owner)
    if spec.tools is not None and (
        isinstance(spec.tools, str) or not all(isinstance(t, str) for t in spec.tools)
    ):
        raise PolicyError(f"{owner}: tools=`{spec.tools!r:.60}` must be a list of tool names")


def _chosen(spec: StdioServer | HTTPServer, connection: ServerConnection) -> list[types.Tool]:
    listed = list(connection.tools)
    if spec.tools is None:
        return listed
    by_name = {t.name: t for t in listed}
    unknown = [n for n in spec.tools if n not in by_name]
    if unknown:
        raise PolicyError(
            f"the MCP server `{connection.label}` has no tool "
            + ", ".join(f"`{n}`" for n in unknown),
            hint="its tools are " + (", ".join(f"`{n}`" for n in by_name) or "none"),
            parameter="tools",
        )
    return [by_name[n] for n in dict.fromkeys(spec.tools)]


def _check_name(name: str, remote: str, server: str, owners: Mapping[str, str]) -> None:
    if not _TOOL_NAME.match(name):
        raise PolicyError(
            f"the MCP server `{server}`: tool `{remote:.80}` cannot be offered to the model as"
            f" `{name:.80}` (a tool name is 1 to 64 letters, digits, `_` or `-`)",
            hint="leave it out with `tools=[...]`",
        )
    if name == FINAL_ANSWER:
        raise PolicyError(
            f"the MCP server `{server}` has a tool `{remote}`, a name the agent keeps for its"
            " own answer",
            hint="give the server a `prefix`, or leave the tool out with `tools=[...]`",
        )
    if name in owners:
        raise PolicyError(
            f"two MCP servers have a tool `{name}`: `{owners[name]}` and `{server}`",
            hint="give one of them a `prefix`",
        )


def _object_schema(listed: types.Tool, server: str) -> dict[str, Any]:
    schema = copy.deepcopy(listed.input_schema)
    kind = schema.setdefault("type", "object")
    if kind != "object":
        raise MCPServerError(
            f"the MCP server `{server}`: tool `{listed.name}` takes `{kind}`, not an object of"
            " named arguments",
            server=server,
        )
    return schema


def _arguments_model(tool_name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A model that checks arguments against ``schema`` and whose JSON Schema is ``schema``."""
    checker = _checker(schema)

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _conforms(cls, data: Any) -> Any:
            if checker is not None:
                problems = _problems(checker, data)
                if problems:
                    raise PydanticCustomError("json_schema", "{problems}", {"problems": problems})
            return data

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    label = "".join(part.capitalize() for part in re.split(r"[_\-]", tool_name)) + "Input"
    Arguments.__name__ = Arguments.__qualname__ = label
    return Arguments


def _checker(schema: dict[str, Any]) -> Any:
    """A JSON Schema validator for ``schema``, or ``None`` when the schema is not valid (the
    server checks the arguments then)."""
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None
    return cls(schema)


def _problems(checker: Any, data: object) -> str:
    errors = sorted(checker.iter_errors(data), key=lambda e: list(e.absolute_path))
    shown = []
    for error in errors[:_MAX_PROBLEMS]:
        where = ".".join(str(p) for p in error.absolute_path)
        shown.append(f"`{where}`: {error.message}" if where else str(error.message))
    more = len(errors) - len(shown)
    if more > 0:
        shown.append(f"and {more} more")
    return "; ".join(shown)
