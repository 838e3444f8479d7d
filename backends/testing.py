"""``OpenAICompatibleServer``: a real OpenAI-compatible HTTP server for tests, on 127.0.0.1.

It answers ``POST /v1/chat/completions`` (and ``/chat/completions``) from a script, like
``ScriptedChatModel`` and with the same entries, in JSON or as server-sent events; it can
answer HTTP errors with ``Retry-After``, send malformed bodies, wait, drop the connection
(before an answer, or in the middle of a stream), cut a stream short, and act as a server
that rejects ``tool_choice`` or ``response_format`` with a 400 or ignores ``tool_choice``.
It records every request it received. The real ``openai`` client talks to it through
``base_url``: nothing is patched.

It is built on the standard library's ``http.server`` (no dependency to install for users'
tests) and serves from a background thread::

    with OpenAICompatibleServer(["hello"]) as server:
        llm = OpenAIChatModel("test-model", base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from backends._script import Reply, Script, ScriptedError, error_body, render_body, render_chunks
from backends.errors import ScriptExhaustedError
from ruleengine.errors import PolicyError

__all__ = ["OpenAICompatibleServer", "ReceivedRequest"]

_PATHS = ("/v1/chat/completions", "/chat/completions")
_TOOL_CHOICE_FORMS = frozenset({"none", "auto", "required", "function", "allowed_tools"})
_FORCING_FORMS = frozenset({"required", "function", "allowed_tools"})


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One HTTP request the server received."""

    method: str
    """``GET`` or ``POST``."""
    path: str
    """The path, without the query."""
    headers: Mapping[str, str] = field(repr=False)
    """The headers, names in lowercase; ``authorization`` is masked."""
    body: object
    """The decoded JSON body (``None`` when there was none or it was not JSON)."""


class OpenAICompatibleServer:
    """A scripted chat completions server on 127.0.0.1 and a free port, in a thread.

    ``script`` is a list of entries (see ``ScriptedChatModel``; exceptions aside) or a
    function of the request body (a dict) returning one. Options:

    - ``model``: the model name the replies carry (default: the one requested);
    - ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get a 401;
    - ``reject_tool_choice``: answer 400 to ``tool_choice`` — ``True`` for the forcing forms
      (``required``, a named ``function``, ``allowed_tools``), or a set of forms among
      ``none``, ``auto``, ``required``, ``function``, ``allowed_tools``;
    - ``ignore_tool_choice``: accept ``tool_choice`` but hide it from a function script,
      as servers that drop the field do (a list script ignores it anyway);
    - ``reject_response_format``, ``reject_parallel_tool_calls``: answer 400 to those.

    Rejected requests use no script entry. A request beyond the script gets a 410.
    """

    def __init__(
        self,
        script: Sequence[object] | Callable[[dict[str, Any]], object] = (),
        *,
        model: str | None = None,
        api_key: str | None = None,
        reject_tool_choice: bool | Iterable[str] = False,
        ignore_tool_choice: bool = False,
        reject_response_format: bool = False,
        reject_parallel_tool_calls: bool = False,
    ) -> None:
        self._script = Script(script, exceptions=False, owner="OpenAICompatibleServer")
        for name, value in (("model", model), ("api_key", api_key)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise PolicyError(f"`{name}` must be non-empty text or None: got `{value!r:.80}`")
        self._model = model
        self._api_key = api_key
        self._reject_forms = _forms(reject_tool_choice)
        self._ignore_tool_choice = bool(ignore_tool_choice)
        self._reject_response_format = bool(reject_response_format)
        self._reject_parallel = bool(reject_parallel_tool_calls)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.received: list[ReceivedRequest] = []
        """Every HTTP request received, oldest first."""

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completion requests received, oldest first."""
        return [r.body for r in self.received if r.path in _PATHS and isinstance(r.body, dict)]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, to give the client as ``base_url``."""
        if self._httpd is None:
            raise PolicyError(
                "the server is not running", hint="use `with OpenAICompatibleServer(...)`"
            )
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def remaining(self) -> int | None:
        """Script entries not used yet (``None`` for a function script)."""
        return self._script.remaining

    def start(self) -> OpenAICompatibleServer:
        """Listen on 127.0.0.1 and a free port, serving from a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; waiting requests are woken and dropped."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        self._stopping.set()
        if httpd is not None:
            try:
                httpd.shutdown()
            finally:
                httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._httpd is not None else "stopped"
        return f"OpenAICompatibleServer(<{where}>, {len(self.received)} requests received)"

    # -- handling, called from the handler thread ---------------------------------------------

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.received.append(request)

    def _refusal(self, body: dict[str, Any], headers: Mapping[str, str]) -> ScriptedError | None:
        """The error a real server would answer before generating, if any."""
        if self._api_key is not None and headers.get("authorization") != f"Bearer {self._api_key}":
            return ScriptedError(
                401, "invalid API key", type="invalid_request_error", code="invalid_api_key"
            )
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            return _bad("a chat completion request needs `model` and `messages`", "messages")
        choice = body.get("tool_choice")
        form = choice.get("type") if isinstance(choice, dict) else choice
        if form is not None and form in self._reject_forms:
            return _bad(f"tool_choice `{form}` is not supported by this server", "tool_choice")
        if self._reject_response_format and "response_format" in body:
            return _bad("response_format is not supported by this server", "response_format")
        if self._reject_parallel and "parallel_tool_calls" in body:
            return _bad(
                "parallel_tool_calls is not supported by this server", "parallel_tool_calls"
            )
        return None

    def _reply(self, body: dict[str, Any]) -> Reply:
        shown = body
        if self._ignore_tool_choice:
            shown = {key: value for key, value in body.items() if key != "tool_choice"}
        try:
            number, entry = self._script.take(shown)
        except ScriptExhaustedError as error:
            message = error.message.replace("the script", "the test server's script", 1)
            return Reply(error=ScriptedError(410, message))
        return entry if isinstance(entry, Reply) else self._script.read(number, entry)

    def _model_for(self, body: dict[str, Any]) -> str:
        return self._model or str(body.get("model") or "test-model")


def _forms(value: bool | Iterable[str]) -> frozenset[str]:
    if value is True:
        return _FORCING_FORMS
    if value is False:
        return frozenset()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        raise PolicyError(
            f"`reject_tool_choice` must be true, false or a list of forms: got `{value!r:.80}`"
        )
    forms = frozenset(value)
    unknown = sorted(forms - _TOOL_CHOICE_FORMS)
    if unknown:
        raise PolicyError(
            f"`reject_tool_choice`: unknown form `{unknown[0]}`",
            hint=f"use some of `{', '.join(sorted(_TOOL_CHOICE_FORMS))}`",
        )
    return forms


def _bad(message: str, param: str) -> ScriptedError:
    return ScriptedError(
        400, message, type="invalid_request_error", code=f"unsupported_{param}", param=param
    )


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], owner: OpenAICompatibleServer
    ) -> None:
        super().__init__(address, handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a timeout, a test that ended) is not an error here."""


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``received`` instead of a log."""

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        owner._record(ReceivedRequest("GET", path, self._headers(), None))
        if path in ("/v1/models", "/models"):
            model = owner._model or "test-model"
            self._json(
                200,
                {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "test"}]},
            )
        else:
            self._json(
                404, error_body(ScriptedError(404, f"no route for GET {path}", type="not_found"))
            )

    def do_POST(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        headers = self._headers()
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body: object = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner._record(ReceivedRequest("POST", path, headers, body))
        if path not in _PATHS:
            self._json(
                404, error_body(ScriptedError(404, f"no route for POST {path}", type="not_found"))
            )
            return
        if not isinstance(body, dict):
            self._json(400, error_body(_bad("the request body must be a JSON object", "body")))
            return
        refusal = owner._refusal(body, self._auth_headers())
        if refusal is not None:
            self._json(refusal.status, error_body(refusal))
            return
        self._answer(owner._reply(body), body)

    def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
        owner = self.server.owner
        if reply.delay and owner._stopping.wait(reply.delay):
            self.close_connection = True
            return
        streaming = body.get("stream") is True
        if reply.disconnect or (reply.cut is not None and not streaming):
            self.close_connection = True
            return
        if reply.error is not None:
            extra = {}
            if reply.error.retry_after is not None:
                extra["Retry-After"] = f"{reply.error.retry_after:g}"
            self._json(reply.error.status, error_body(reply.error), extra)
            return
        model = owner._model_for(body)
        if streaming:
            self._stream(render_chunks(reply, model=model, ids=owner._ids), reply.cut)
            return
        content_type, text = render_body(reply, model=model, ids=owner._ids)
        self._send(200, content_type, text.encode())

    def _stream(self, payloads: list[str], cut: tuple[int, str] | None) -> None:
        """Server-sent events in a chunked body, as servers send them; ``cut``: after how many
        payloads the stream stops early, and whether the connection drops (the body never
        ends) or the body ends cleanly without the rest."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = [*payloads, "[DONE]"] if cut is None else payloads[: cut[0]]
        for payload in sent:
            data = f"data: {payload}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if cut is None or cut[1] == "end":
            self.wfile.write(b"0\r\n\r\n")  # the body's end
            self.wfile.flush()

    def _json(self, status: int, value: object, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, "application/json", json.dumps(value).encode(), headers)

    def _send(
        self, status: int, content_type: str, data: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _auth_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _headers(self) -> dict[str, str]:
        headers = self._auth_headers()
        if "authorization" in headers:
            headers["authorization"] = "Bearer ***"
        return headers
