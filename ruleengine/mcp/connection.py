"""A client connection to one MCP server, as the proxy (its upstream) and the agent's MCP tools
use it: started as a subprocess over stdio, or reached over streamable HTTP; its tools listed
once, when it connects; each call answered, or failed clearly.

A call fails in one of three ways, each its own exception:

- the server answered with a JSON-RPC error: the SDK's ``MCPError``, as it came;
- the connection is gone (the server exited, crashed, or its HTTP endpoint went away): an
  ``MCPServerError`` naming the server, raised by that call and by every later one. The
  connection knows it is gone because the transport's read stream ended, not from an error
  code (a server may answer with the same code on purpose);
- anything else the server sent that is not a tool result (a malformed result, a request for
  input from the user) is turned into a tool error result (``isError``), so it reads as the
  tool's failure.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

import anyio
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from pydantic import TypeAdapter, ValidationError

from ruleengine.errors import AgentError

__all__ = [
    "MCPServerError",
    "ServerConnection",
    "connect_http",
    "connect_stdio",
    "describe_exception",
    "error_result",
    "sole_exception",
]

_MAX_PAGES = 1000
"""Pages of ``tools/list`` read at most (a server whose cursor never ends cannot hang us)."""

_CALL_RESULT: TypeAdapter[types.CallToolResult | types.InputRequiredResult] = TypeAdapter(
    types.CallToolResult | types.InputRequiredResult
)

_Item: TypeAlias = SessionMessage | Exception


class MCPServerError(AgentError):
    """An MCP server could not be started or reached, or its connection was lost: a run-time
    failure (an ``AgentError``), of the agent's MCP tools or of the proxy's upstream.

    ``server`` names it as the messages do: its command line or URL, or the name it was given.
    """

    __module__ = "ruleengine.mcp"

    def __init__(self, message: str, *, server: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.server = server
        """The server, as the message names it."""


@dataclass(eq=False)
class ServerConnection:
    """One connected MCP server: its tools, and ``call``."""

    label: str
    """How messages name the server: its command line or URL, or the name it was given."""
    client: Client
    """The SDK's client, connected."""
    tools: tuple[types.Tool, ...]
    """The server's tools, as it listed them when it connected."""
    ended: anyio.Event = field(repr=False)
    """Set when the server's side of the connection ended (it exited, or went away)."""
    lost: MCPServerError | None = None
    """Why the connection is gone, once a call found it gone."""

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
        """Call tool ``name``: its result, as the server sent it.

        Raises ``MCPServerError`` when the connection is gone, and the SDK's ``MCPError`` when
        the server answered with a JSON-RPC error.
        """
        if self.lost is not None:
            raise self._gone()
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=name, arguments=dict(arguments) if arguments is not None else None
            )
        )
        try:
            result = await self.client.session.send_request(request, _CALL_RESULT)
        except MCPError:
            if self.ended.is_set():
                raise self._gone() from None
            raise
        except ValidationError as error:
            return error_result(
                f"the MCP server `{self.label}` sent something that is not a tool result:"
                f" {describe_exception(error)}"
            )
        if isinstance(result, types.InputRequiredResult):
            return error_result(
                f"`{name}` asked for input from the user (an MCP elicitation or sampling"
                " request), which is not supported here"
            )
        return result

    def _gone(self) -> MCPServerError:
        """The error that says the connection is gone (a new one each time it is raised)."""
        message = f"the MCP server `{self.label}` closed the connection (it exited or crashed)"
        if self.lost is None:
            self.lost = MCPServerError(message, server=self.label)
        return MCPServerError(message, server=self.label)


def error_result(text: str) -> types.CallToolResult:
    """A tool error result (``isError``) whose one text block is ``text``."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def describe_exception(error: BaseException) -> str:
    """One line for ``error``: the first leaf of an exception group, its type and text."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return f"{error.message} (JSON-RPC error {error.code})"
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def command_label(command: str, args: Sequence[str]) -> str:
    """A command line as messages show it: past 80 characters, its middle is left out (the
    end, a script's name say, is what tells servers apart)."""
    text = shlex.join([command, *args])
    return text if len(text) <= 80 else text[:30] + "…" + text[-49:]


@asynccontextmanager
async def connect_stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    label: str | None = None,
) -> AsyncIterator[ServerConnection]:
    """Start ``command args`` and connect to it over its stdin and stdout.

    ``env`` is merged over the SDK's default environment for servers (``HOME``, ``PATH`` and a
    few more); pass ``dict(os.environ)`` to hand the server everything. The server's stderr is
    ours. The process is stopped when the block ends.
    """
    parameters = StdioServerParameters(
        command=command,
        args=list(args),
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    name = label or command_label(command, args)
    async with _connect(stdio_client(parameters), name, "did not start") as connection:
        yield connection


@asynccontextmanager
async def connect_http(
    url: str, *, headers: Mapping[str, str] | None = None, label: str | None = None
) -> AsyncIterator[ServerConnection]:
    """Connect to the streamable HTTP endpoint ``url`` (``headers`` go with every request)."""
    async with AsyncExitStack() as stack:
        http_client = None
        if headers:
            import httpx2

            http_client = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(headers), timeout=httpx2.Timeout(30.0, read=300.0))
            )
        transport = streamable_http_client(url, http_client=http_client)
        async with _connect(transport, label or url, "could not be reached") as connection:
            yield connection


@asynccontextmanager
async def _connect(
    transport: AbstractAsyncContextManager[tuple[Any, Any]], label: str, failed: str
) -> AsyncIterator[ServerConnection]:
    ended = anyio.Event()
    client = Client(_Watched(transport, ended), cache=None)
    try:
        async with AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(client)
                tools = await _list_tools(client)
            except Exception as error:
                # Connecting failed: the SDK's own error names no server, ours does.
                why = (
                    "it closed the connection before answering (it exited or crashed)"
                    if ended.is_set()
                    else describe_exception(error)
                )
                raise MCPServerError(
                    f"the MCP server `{label}` {failed}: {why}", server=label
                ) from error
            yield ServerConnection(label, client, tools, ended)
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap whatever crosses them, the block's own errors included:
        # give back the one error that was raised.
        raised = sole_exception(group)
        if raised is group:
            raise
        raise raised from raised.__cause__


def sole_exception(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one error inside nested groups of one member each, or the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


async def _list_tools(client: Client) -> tuple[types.Tool, ...]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


class _Watched:
    """A transport whose read stream sets ``ended`` when the server's side ends.

    The SDK's transports end the read stream when the server goes away (a stdio server's
    stdout closes; an HTTP request fails): that, not an error code, is what says a failed call
    found the connection gone.
    """

    def __init__(
        self, inner: AbstractAsyncContextManager[tuple[Any, Any]], ended: anyio.Event
    ) -> None:
        self._inner = inner
        self._ended = ended

    async def __aenter__(self) -> tuple[_EndWatch, Any]:
        read_stream, write_stream = await self._inner.__aenter__()
        return _EndWatch(read_stream, self._ended), write_stream

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


class _EndWatch:
    """A read stream that sets an event when it ends (the peer closed it)."""

    def __init__(self, inner: Any, ended: anyio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> Any:
        # The SDK's dispatcher reads the sender's context off context-aware streams.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> _Item:
        try:
            item: _Item = await self._inner.receive()
        except anyio.EndOfStream:
            self._ended.set()
            raise
        return item

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> _Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _EndWatch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None
