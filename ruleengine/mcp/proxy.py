"""The enforcing MCP proxy: an MCP server that fronts an upstream MCP server and lets through only
the tool calls a policy allows.

The upstream is started as a subprocess (``CMD ARGS``, over stdio). Clients connect to the proxy
over stdio (one client: the proxy's own stdin and stdout) or over streamable HTTP on
127.0.0.1. Each client session has its own history: a ``RunState`` whose steps are the calls
that ran in that session, and every ``tools/call`` is decided against the pass of that state,
with the policy's one ``Reasoner``:

- a tool the policy does not declare, a call the pass does not allow (not allowed, hidden, or
  another tool forced), a conflict or a failure to decide: a tool error result
  (``isError: true``) whose text says why; nothing runs and nothing is recorded;
- a call that meets an ``ask_if`` condition of an arguments requirement (``Admission.ask``),
  then a tool an ask-permission requirement covers: the client is asked with an MCP
  elicitation (a form with one yes/no field, naming the tool, its arguments and, for an
  ``ask_if``, the conditions that hold), when it declared the capability; a refusal, a
  dismissal, a failed question or no answer within the requirement's ``timeout`` is a
  ``denied`` step (as in the agent; an ``ask_if`` answer is not remembered); a client that
  cannot be asked gets a tool error saying so, and no step;
- an allowed call is forwarded, and the upstream's result comes back unchanged: a step with
  status ``ok``, or ``error`` when the result is a tool error. A JSON-RPC error from the
  upstream comes back as the same error (an ``error`` step);
- once the upstream has exited, the call in flight and every later one get a tool error
  naming it.

Calls of one session are decided and run one at a time, in the order they arrive, so each is
decided against every call before it. ``tools/list`` lists the upstream's tools unchanged (as
it listed them at startup). ``final_answer`` is not an MCP tool: when a session ends is the
client's business. The proxy speaks the protocol era with sessions (the initialize handshake):
its enforcement is per session, and the stateless 2026-07-28 era has none; clients that
negotiate (as the SDK's do by default) fall back to it.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from mcp import MCPError, types
from mcp.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from starlette.types import ASGIApp

from ruleengine.errors import ConflictError, PolicyError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.mcp.asking import asking_conditions, can_elicit, cannot_ask, denied, elicit
from ruleengine.mcp.connection import (
    MCPServerError,
    ServerConnection,
    connect_stdio,
    describe_exception,
    error_result,
    sole_exception,
)
from ruleengine.mcp.content import result_output, result_text
from ruleengine.mcp.sessions import Context, HTTPSessions, Session
from ruleengine.passes import Pass
from ruleengine.policy import Policy
from ruleengine.requirements import ArgumentsRequirement, AskPermissionRequirement
from ruleengine.state import Step

__all__ = ["EnforcingProxy", "enforcing_proxy", "refusal", "serve"]

_log = logging.getLogger("ruleengine.mcp")

_SHUTDOWN_WAIT = 10.0
"""Seconds the HTTP server gets to shut down gracefully before it is forced to."""


class EnforcingProxy:
    """Enforces ``policy`` on the tool calls of every client session, in front of ``upstream``.

    Build it with ``enforcing_proxy`` (which starts the upstream), then serve clients with
    ``serve_stdio``, ``serve_http``, ``serve_streams`` (one session over a pair of SDK
    streams) or ``http_app`` (the ASGI app, to run under a server of your choice).
    """

    def __init__(self, policy: Policy, upstream: ServerConnection) -> None:
        if not isinstance(policy, Policy):
            raise PolicyError(
                f"EnforcingProxy: policy=`{policy!r:.60}` is not a `Policy`",
                hint="load one with `Policy.load(path)`, or use `enforcing_proxy`",
                parameter="policy",
            )
        self.policy = policy
        """The policy enforced."""
        self.upstream = upstream
        """The connection to the upstream server."""
        self.reasoner = policy.reasoner()
        """Decides every session's passes (one reasoner; each session has its own state)."""
        self.permissions = tuple(
            r for r in self.reasoner.requirements if isinstance(r, AskPermissionRequirement)
        )
        """The ask-permission requirements: asked through MCP elicitation."""
        self.arguments_asking = {
            r.name: r
            for r in self.reasoner.requirements
            if isinstance(r, ArgumentsRequirement) and r.asks
        }
        """The arguments requirements with ``ask_if`` conditions, by name: a call that meets
        one is asked about through MCP elicitation."""
        names = [t.name for t in upstream.tools]
        declared = set(policy.tools)
        self.undeclared: tuple[str, ...] = tuple(n for n in names if n not in declared)
        """Upstream tools the policy does not declare: their calls are refused."""
        self.missing: tuple[str, ...] = tuple(t for t in policy.tools if t not in set(names))
        """Tools the policy declares that the upstream does not have."""
        self._upstream_tools = frozenset(names)

    def __repr__(self) -> str:
        return f"EnforcingProxy(policy={self.policy.source!r}, upstream={self.upstream.label!r})"

    def warn(self) -> None:
        """Log (``ruleengine.mcp``, warning) what the policy and the upstream disagree on."""
        if self.undeclared:
            _log.warning(
                "the upstream MCP server `%s` has tools the policy %s does not declare: %s;"
                " their calls will be refused",
                self.upstream.label,
                self.policy.source,
                ", ".join(f"`{n}`" for n in self.undeclared),
            )
        if self.missing:
            _log.warning(
                "the policy %s declares tools the upstream MCP server `%s` does not have: %s",
                self.policy.source,
                self.upstream.label,
                ", ".join(f"`{n}`" for n in self.missing),
            )

    # -- serving ------------------------------------------------------------------------------

    async def serve_streams(self, read_stream: Any, write_stream: Any) -> None:
        """Serve one client session over a pair of SDK streams until the client leaves.

        ``read_stream`` and ``write_stream`` are what an SDK transport gives a server (as
        ``mcp.server.stdio.stdio_server`` does), or the server's ends of a pair of memory
        streams. Every call of this method is a session of its own.
        """
        session = Session()
        server = self._server(lambda ctx: session)
        await serve_loop(
            server,
            read_stream,
            write_stream,
            lifespan_state={},
            init_options=server.create_initialization_options(),
        )

    async def serve_stdio(self) -> None:
        """Serve the one client on our stdin and stdout, until it closes stdin."""
        async with stdio_server() as (read_stream, write_stream):
            await self.serve_streams(read_stream, write_stream)

    def http_app(self) -> ASGIApp:
        """The streamable HTTP app (endpoint ``/mcp``): each HTTP session is a session.

        Its lifespan runs the SDK's session manager: run it under an ASGI server that runs
        lifespans. It accepts only requests addressed to 127.0.0.1 or localhost.
        """
        sessions = HTTPSessions()
        server = self._server(sessions.of)
        app = server.streamable_http_app(host="127.0.0.1")
        return sessions.track(app)

    async def serve_http(
        self,
        port: int = 0,
        *,
        task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve streamable HTTP on ``http://127.0.0.1:PORT/mcp`` until cancelled.

        ``port`` 0 lets the system choose a free one. The port is bound before anything else
        happens, and reported through ``task_status`` (``port = await tg.start(proxy.serve_http)``):
        from then on, clients may connect. A port that cannot be bound is a ``PolicyError``.
        """
        import uvicorn

        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise PolicyError(
                f"port=`{port!r:.20}` must be a port number from 0 to 65535 (0: a free one)",
                parameter="port",
            )
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(128)
            listener.setblocking(False)
        except OSError as error:
            listener.close()
            raise PolicyError(
                f"cannot serve on 127.0.0.1:{port}: {error.strerror or error}",
                hint="choose another port, or 0 for a free one",
                parameter="port",
            ) from None
        bound: int = listener.getsockname()[1]
        config = uvicorn.Config(
            self.http_app(),
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        done = anyio.Event()

        async def run() -> None:
            try:
                # Shielded: cancelling us asks uvicorn to stop (below), so that its shutdown
                # (the session manager's included) runs instead of being cut short.
                with anyio.CancelScope(shield=True):
                    await server.serve(sockets=[listener])
            finally:
                listener.close()
                done.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            task_status.started(bound)
            try:
                await done.wait()
            finally:
                server.should_exit = True
                with anyio.CancelScope(shield=True):
                    with anyio.move_on_after(_SHUTDOWN_WAIT):
                        await done.wait()
                    server.force_exit = True
                    await done.wait()

    # -- one call -----------------------------------------------------------------------------

    def _server(self, session_of: Callable[[Context], Session | None]) -> Server[Any]:
        """An SDK server whose ``tools/call`` runs in the session ``session_of`` finds."""
        tools = list(self.upstream.tools)

        async def list_tools(
            ctx: Context, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        async def call_tool(
            ctx: Context, params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            session = session_of(ctx)
            if session is None:
                return error_result(
                    f"`{params.name}` did not run: the proxy keeps each session's history, and"
                    " this request belongs to no session; connect with the initialize handshake"
                )
            return await self._call(session, params.name, params.arguments or {}, ctx)

        server: Server[Any] = Server(
            "ruleengine-mcp-proxy",
            version=_version(),
            instructions=self.upstream.client.instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        # The sessionless 2026-07-28 era starts with `server/discover`: not offering it makes
        # clients that negotiate fall back to the initialize handshake, which has sessions.
        server.add_request_handler("server/discover", types.RequestParams, _no_discover)
        return server

    async def _call(
        self, session: Session, name: str, arguments: Mapping[str, Any], ctx: Context
    ) -> types.CallToolResult:
        """Decide, maybe ask about, forward and record one call of ``session``."""
        async with session.lock:
            refused = self._precheck(name)
            if refused is not None:
                return error_result(refused)
            try:
                pass_ = await self.reasoner.adecide(session.state)
            except ConflictError as error:
                return error_result(
                    f"`{name}` did not run: the policy's requirements conflict: {error.message}"
                )
            except RuleEngineError as error:
                return error_result(
                    f"`{name}` did not run: the policy could not decide: {error.message}"
                )
            if name not in pass_.allowed:
                _log.info("refused `%s`: %s", name, pass_.reasons.get(name, "not allowed"))
                return error_result(refusal(name, pass_, offered=self._upstream_tools))
            admission = pass_.admits(name, arguments)
            if not admission.ok:
                _log.info("refused `%s`: %s", name, admission.reason)
                return error_result(f"`{name}` did not run: {admission.reason}")
            if admission.ask:
                denied = await self._ask_arguments(
                    session, name, arguments, pass_, admission.ask, ctx
                )
                if denied is not None:
                    return error_result(denied)
            denied = await self._ask(session, name, arguments, ctx)
            if denied is not None:
                return error_result(denied)
            return await self._forward(session, name, arguments)

    def _precheck(self, name: str) -> str | None:
        """Why a call of ``name`` is refused before any decision, if it is."""
        lost = self.upstream.lost
        if lost is not None:
            return f"`{name}` did not run: {lost.message}"
        if name == FINAL_ANSWER:
            return (
                f"`{FINAL_ANSWER}` is not an MCP tool: the session ends when the client stops"
                " calling tools"
            )
        if name not in self._upstream_tools:
            return f"`{name}` did not run: the upstream MCP server has no tool `{name}`"
        if name not in self.policy.tools:
            return (
                f"`{name}` did not run: the policy {self.policy.source} does not declare it,"
                " and the proxy refuses the tools its policy does not name"
            )
        return None

    async def _ask(
        self, session: Session, name: str, arguments: Mapping[str, Any], ctx: Context
    ) -> str | None:
        """``None`` when no ask-permission requirement stops the call, else why it did not run
        (a refusal is recorded as a ``denied`` step; a client that cannot be asked is not)."""
        for requirement in self.permissions:
            if not requirement.enabled or requirement.always_allow:
                continue
            if not requirement.covers(name):
                continue
            remembered = requirement.remembered(name, session.state)
            if remembered is True:
                continue
            if remembered is False:
                reason: str | None = f"the user refused `{name}`"
            elif not can_elicit(ctx):
                return cannot_ask(name, "runs")
            else:
                question = f"The policy asks before `{name}` runs. Allow this call?"
                reason = await elicit(question, name, arguments, requirement.timeout, ctx)
            if reason is not None:
                return denied(session, name, arguments, reason)
        return None

    async def _ask_arguments(
        self,
        session: Session,
        name: str,
        arguments: Mapping[str, Any],
        pass_: Pass,
        asking: Sequence[str],
        ctx: Context,
    ) -> str | None:
        """``None`` when the user allows a call whose arguments meet ``ask_if`` conditions
        (``asking``: their requirements, ``Admission.ask``), else why it did not run, as
        ``_ask`` says it. One question covers every requirement asking, within the shortest
        of their ``timeout``s; as in the agent, the answer is not remembered."""
        shown = asking_conditions(pass_, name, arguments, asking, self.arguments_asking)
        if not can_elicit(ctx):
            return cannot_ask(name, f"runs with these arguments ({shown})")
        timeouts = [
            r.timeout
            for n in asking
            if (r := self.arguments_asking.get(n)) is not None and r.timeout is not None
        ]
        question = (
            f"The policy asks before `{name}` runs with these arguments ({shown}). Allow this call?"
        )
        reason = await elicit(question, name, arguments, min(timeouts, default=None), ctx)
        if reason is None:
            return None
        return denied(session, name, arguments, reason)

    async def _forward(
        self, session: Session, name: str, arguments: Mapping[str, Any]
    ) -> types.CallToolResult:
        """Run the call upstream, record it, and give its result back unchanged."""
        try:
            result = await self.upstream.call(name, arguments)
        except MCPServerError as error:
            _log.error("%s", error.message)
            session.record(
                Step(tool=name, arguments=dict(arguments), status="error", error=error.message)
            )
            return error_result(f"`{name}` did not run to the end: {error.message}")
        except MCPError as error:
            session.record(
                Step(
                    tool=name,
                    arguments=dict(arguments),
                    status="error",
                    error=f"`{name}` failed: {describe_exception(error)}",
                )
            )
            raise
        except anyio.get_cancelled_exc_class():
            # The client gave up on the call: it may have run upstream. It counts as an attempt.
            session.record(
                Step(
                    tool=name,
                    arguments=dict(arguments),
                    status="error",
                    error=f"`{name}` was cancelled while it ran",
                )
            )
            raise
        if result.is_error:
            text = result_text(result) or f"`{name}` failed"
            session.record(Step(tool=name, arguments=dict(arguments), status="error", error=text))
        else:
            session.record(Step(tool=name, arguments=dict(arguments), output=result_output(result)))
        return result


def refusal(name: str, pass_: Pass, *, offered: Collection[str] | None = None) -> str:
    """Why ``pass_`` does not let ``name`` run, as the client reads it: the pass's reason, and
    what may be called instead (among ``offered``, when given: the tools that exist)."""
    text = f"`{name}` did not run: it is not allowed at this step"
    reason = pass_.reasons.get(name)
    if reason:
        text += f" ({reason})"
    if pass_.forced == FINAL_ANSWER:
        return text + "; the policy allows no more tool calls in this session"
    if pass_.forced is not None and pass_.forced != name:
        return f"{text}; call `{pass_.forced}` now"
    others = [
        t
        for t in pass_.allowed
        if t not in (name, FINAL_ANSWER) and (offered is None or t in offered)
    ]
    if others:
        return text + "; allowed now: " + ", ".join(f"`{t}`" for t in others)
    return text + "; no tool may be called now in this session"


async def _no_discover(ctx: Context, params: types.RequestParams) -> types.DiscoverResult:
    raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data="server/discover")


def _version() -> str:
    try:
        return metadata.version("ruleengine")
    except metadata.PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "0"


@asynccontextmanager
async def enforcing_proxy(
    policy: Policy | str | os.PathLike[str],
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> AsyncIterator[EnforcingProxy]:
    """Load ``policy`` (a ``Policy`` or a file), start the upstream ``command args`` over stdio,
    and give the proxy; the upstream is stopped when the block ends.

    The upstream inherits our environment, with ``env`` over it, and our stderr. What the
    policy and the upstream disagree on is logged as warnings (``ruleengine.mcp``). Raises
    ``PolicyError`` for a policy that does not load, ``MCPServerError`` for an upstream that
    does not start.
    """
    loaded = Policy.load(policy)
    environment = {**os.environ, **(env or {})}
    async with connect_stdio(command, args, env=environment, cwd=cwd) as upstream:
        proxy = EnforcingProxy(loaded, upstream)
        proxy.warn()
        yield proxy


def serve(
    policy: Policy | str | os.PathLike[str],
    command: str,
    args: Sequence[str] = (),
    *,
    http_port: int | None = None,
) -> int:
    """Run the proxy: ``policy`` enforced in front of ``command args``; the exit code.

    Without ``http_port`` it serves one client on stdin and stdout until the client closes
    stdin; with one, streamable HTTP on ``http://127.0.0.1:PORT/mcp`` (0: a free port) until
    interrupted, announcing the URL on stderr. Raises ``PolicyError`` (the policy does not
    load, or the port cannot be bound) or ``MCPServerError`` (the upstream does not start): bad
    input for the command line.
    """
    _announce_warnings()

    async def main() -> None:
        async with enforcing_proxy(policy, command, args) as proxy:
            if http_port is None:
                await proxy.serve_stdio()
                return
            async with anyio.create_task_group() as tasks:
                port = await tasks.start(proxy.serve_http, http_port)
                print(f"ruleengine mcp-proxy: serving http://127.0.0.1:{port}/mcp", file=sys.stderr)

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        error = sole_exception(group)
        if error is group:
            raise
        raise error from error.__cause__
    return 0


def _announce_warnings() -> None:
    """Make sure the proxy's warnings reach stderr (stdout may be the MCP channel)."""
    if not _log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("ruleengine mcp-proxy: %(levelname)s: %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.WARNING)
