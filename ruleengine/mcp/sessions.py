"""The enforcing proxy's client sessions: each one's history, and, over streamable HTTP, which
session a request belongs to and when its history is dropped."""

from __future__ import annotations

import time
from typing import Any, TypeAlias

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ruleengine.state import RunState, Step

__all__ = ["SESSION_HEADER", "HTTPSessions", "Session"]

Context: TypeAlias = ServerRequestContext[Any, Any]

SESSION_HEADER = "mcp-session-id"
"""The HTTP header naming a streamable HTTP session."""

_SESSION_HEADER_BYTES = SESSION_HEADER.encode("ascii")

_FORGET_AFTER = DEFAULT_SESSION_IDLE_TIMEOUT + 60.0
"""Seconds without a request after which an HTTP session's history is dropped: the SDK's
session manager has ended the session by then (it ends one idle for its idle timeout)."""


class Session:
    """One client session: its history, the lock that runs its calls one at a time, and (over
    HTTP) how many requests of it are in flight and since when it has had none."""

    def __init__(self) -> None:
        self.state = RunState()
        self.lock = anyio.Lock()
        self.in_flight = 0
        self.idle_since = time.monotonic()

    def record(self, step: Step) -> None:
        steps = (*self.state.steps, step)
        # Each call is a round of its own: the iteration counter counts the recorded calls.
        self.state = RunState(steps=steps, iteration=len(steps))


class HTTPSessions:
    """The HTTP sessions' histories, by session id, dropped when a session ends.

    ``track`` wraps the app to see every request of a session: a history is dropped when the
    client ends the session (``DELETE``), or once the session has had no request in flight for
    longer than the SDK's session manager keeps an idle session.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def of(self, ctx: Context) -> Session | None:
        headers = getattr(ctx.request, "headers", None)
        key = headers.get(SESSION_HEADER) if headers is not None else None
        if not isinstance(key, str) or not key:
            return None
        return self._get(key)

    def _get(self, key: str) -> Session:
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = Session()
        return session

    def _prune(self) -> None:
        now = time.monotonic()
        stale = [
            key
            for key, session in self._sessions.items()
            if session.in_flight == 0 and now - session.idle_since > _FORGET_AFTER
        ]
        for key in stale:
            del self._sessions[key]

    def track(self, app: ASGIApp) -> ASGIApp:
        async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
            key = _session_id(scope)
            if key is None:
                await app(scope, receive, send)
                return
            self._prune()
            session = self._get(key)
            session.in_flight += 1
            status: list[int] = []

            async def watch(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status.append(int(message["status"]))
                await send(message)

            try:
                await app(scope, receive, watch)
            finally:
                session.in_flight -= 1
                session.idle_since = time.monotonic()
                ended = scope.get("method") == "DELETE" and status and status[0] < 300
                if ended or (status and status[0] == 404):
                    # Ended by the client, or unknown to the session manager: no history.
                    self._sessions.pop(key, None)

        return tracked


def _session_id(scope: Scope) -> str | None:
    if scope.get("type") != "http":
        return None
    for header, value in scope.get("headers", ()):
        if header == _SESSION_HEADER_BYTES:
            text: str = value.decode("latin-1")
            return text or None
    return None
