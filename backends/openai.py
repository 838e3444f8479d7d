"""``OpenAIChatModel``: chat completions on any OpenAI-compatible server, through the openai SDK.

This is the only module that imports ``openai``, and only when a model is built, so that
``import backends`` and ``ScriptedChatModel`` work without it. The SDK sends requests and
decodes server-sent events; the body is built and the reply parsed by ``_wire``, retries follow
our ``RetryPolicy`` (the SDK's own retries are off), and every failure becomes a
``BackendError`` with the SDK's exception as ``__cause__``. The API key never appears in a
message, a log line or a repr: any text that could carry it is scrubbed first.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import anyio

from backends._retry import RetryPolicy, parse_retry_after
from backends._wire import (
    StreamAssembler,
    chunk_not_json,
    decode_body,
    parse_completion,
    request_body,
    status_error,
)
from backends.base import (
    Capabilities,
    ChatRequest,
    ChatResponse,
    StreamEnd,
    StreamEvent,
)
from backends.errors import (
    BackendConnectionError,
    BackendError,
    BackendTimeoutError,
)
from backends.model import BaseChatModel
from ruleengine.errors import PolicyError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIChatModel"]

_log = logging.getLogger("backends.openai")
_T = TypeVar("_T")

# The HTTP client libraries whose errors, escaping a stream unwrapped, mean the body broke off.
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2", "h11"})
# Local servers ignore the key, but the SDK insists on one.
_NO_KEY = "no-key"
_SECRET_WINDOW = 8  # a fragment of the key this long is masked too (servers echo parts)


def _import_openai() -> ModuleType:
    try:
        import openai
    except ImportError as error:
        raise BackendError(
            "the `openai` package is not installed: `OpenAIChatModel` needs it",
            hint="install it (`pip install openai`); `ScriptedChatModel` works without it",
        ) from error
    return openai


class OpenAIChatModel(BaseChatModel):
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``;
    without a key, a custom ``base_url`` (a local server) gets a placeholder. ``timeout`` is
    in seconds per request. ``retry`` says how 429, 5xx and connection errors are retried;
    ``sleep`` is awaited between retries (inject one to test without waiting).
    ``capabilities`` declares what the server honours (see docs/backends.md).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        timeout: float | None = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None] | None] | None = None,
        default_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(capabilities=capabilities)
        if not isinstance(model, str) or not model.strip():
            raise PolicyError(f"`model` must be a non-empty model name: got `{model!r:.80}`")
        self.model = model
        """The model name sent with every request."""
        self.base_url = _check_url(
            base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL")
        )
        """The API root (``None``: OpenAI's), without credentials."""
        self._secret = _check_key(api_key, self.base_url)
        self.timeout = _check_timeout(timeout)
        """Seconds to wait for each request (``None``: no limit)."""
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise PolicyError(f"`retry` must be a RetryPolicy: got `{retry!r:.80}`")
        self.retry = retry if retry is not None else RetryPolicy()
        """How failed requests are retried."""
        if sleep is not None and not callable(sleep):
            raise PolicyError(f"`sleep` must be an async function of seconds: got `{sleep!r:.80}`")
        self._sleep = sleep if sleep is not None else anyio.sleep
        self._headers = _check_mapping(default_headers, "default_headers")
        self._extra_body = _check_mapping(extra_body, "extra_body")
        self._openai = _import_openai()
        # One SDK client per event loop (its connections belong to the loop that opened
        # them), keyed by the loop's id; the loop is kept to drop the client once it closes.
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, AsyncOpenAI]] = {}
        self._shared: AsyncOpenAI | None = None
        self._clients_lock = threading.Lock()

    def __repr__(self) -> str:
        where = "" if self.base_url is None else f", base_url={self.base_url!r}"
        return f"OpenAIChatModel({self.model!r}{where})"

    # -- the two backend methods ----------------------------------------------------------

    async def send(self, request: ChatRequest) -> ChatResponse:
        """One ``POST /chat/completions``; the reply body is parsed by ``_wire``."""
        body = self._body(request, stream=False)
        client = self._client()
        raw = await self._with_retries(
            lambda: client.chat.completions.with_raw_response.create(
                **body, extra_body=self._extra_body or None
            )
        )
        return parse_completion(decode_body(raw.http_response.text))

    async def send_stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """One streamed ``POST /chat/completions`` (``stream_options.include_usage`` on)."""
        body = self._body(request, stream=True)
        client = self._client()
        stream = await self._with_retries(
            lambda: client.chat.completions.create(**body, extra_body=self._extra_body or None)
        )
        assembler = StreamAssembler()
        try:
            async with stream:
                async for chunk in stream:
                    data = (
                        chunk.to_dict(warnings=False)
                        if isinstance(chunk, self._openai.BaseModel)
                        else chunk
                    )
                    for event in assembler.feed(data):
                        yield event
        except json.JSONDecodeError as error:
            raise chunk_not_json(self._scrub(error.doc)) from error
        except self._openai.APIConnectionError as error:  # the body broke off mid-stream
            raise self._broken_off(error) from error
        except self._openai.OpenAIError as error:
            raise self._translate(error, retries=0) from error
        except Exception as error:
            # Older SDKs let the HTTP client's own errors out of a stream unwrapped.
            if type(error).__module__.split(".")[0] not in _TRANSPORT_MODULES:
                raise
            raise self._broken_off(error) from error
        yield StreamEnd(assembler.finish())

    # -- helpers ---------------------------------------------------------------------------

    def _body(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        send_auto = "auto" in self.declared_capabilities.tool_choice
        return request_body(request, model=self.model, stream=stream, send_auto=send_auto)

    def _client(self) -> AsyncOpenAI:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another async library (trio): one client for all
            if self._shared is None:
                self._shared = self._new_client()
            return self._shared
        with self._clients_lock:
            for key, (old, _) in list(self._clients.items()):
                if old.is_closed():  # its connections died with it
                    del self._clients[key]
            found = self._clients.get(id(loop))
            if found is None:
                found = self._clients[id(loop)] = (loop, self._new_client())
        return found[1]

    def _new_client(self) -> AsyncOpenAI:
        client: AsyncOpenAI = self._openai.AsyncOpenAI(
            api_key=self._secret,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # retries are ours: see _with_retries
            default_headers=self._headers or None,
            # Our own HTTP client: the SDK's default one closes itself on garbage collection
            # by scheduling a task on whatever loop runs then, which fails for a loop's leftovers.
            http_client=self._openai.DefaultAsyncHttpxClient(),
        )
        return client

    async def aclose(self) -> None:
        """Close the connections this model opened in the running event loop."""
        client: AsyncOpenAI | None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            client, self._shared = self._shared, None
        else:
            with self._clients_lock:
                found = self._clients.pop(id(loop), None)
            client = found[1] if found is not None else None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _with_retries(self, call: Callable[[], Awaitable[_T]]) -> _T:
        openai = self._openai
        retries = 0
        while True:
            try:
                return await call()
            except (openai.APIStatusError, openai.APIConnectionError) as error:
                delay = self._delay(error, retries)
                if delay is None:
                    raise self._translate(error, retries) from error
                _log.info("%r: retry %d in %.3f s: %s", self, retries + 1, delay, self._why(error))
                waited = self._sleep(delay)
                if inspect.isawaitable(waited):  # a plain function is accepted too
                    await waited
                retries += 1
            except openai.OpenAIError as error:
                raise self._translate(error, retries) from error

    def _delay(self, error: Exception, retries: int) -> float | None:
        if isinstance(error, self._openai.APIStatusError):
            if not RetryPolicy.retryable(error.status_code):
                return None
            return self.retry.delay(retries, parse_retry_after(error.response.headers))
        return self.retry.delay(retries)

    def _why(self, error: Exception) -> str:
        if isinstance(error, self._openai.APIStatusError):
            return f"status {error.status_code}"
        return "timeout" if isinstance(error, self._openai.APITimeoutError) else "connection error"

    def _translate(self, error: Exception, retries: int) -> BackendError:
        """Our error for an SDK exception, scrubbed of the key (the SDK's one too)."""
        openai = self._openai
        self._scrub_exception(error)
        after = f" (after {retries} {'retry' if retries == 1 else 'retries'})" if retries else ""
        where = self.base_url or "the OpenAI API"
        translated: BackendError
        if isinstance(error, openai.APITimeoutError):
            limit = f"within {self.timeout:g} s" if self.timeout is not None else "in time"
            translated = BackendTimeoutError(
                f"no answer from `{where}` {limit}{after}",
                hint="raise `timeout`, or check that the server is up and not overloaded",
            )
        elif isinstance(error, openai.APIConnectionError):
            reason = str(error.__cause__ or error).strip().rstrip(".") or "connection error"
            translated = BackendConnectionError(
                f"could not reach `{where}`{after}: `{self._scrub(reason):.200}`",
                hint="check `base_url` and that the server is running",
            )
        elif isinstance(error, openai.APIStatusError):
            body = error.body if error.body is not None else error.message
            translated = status_error(
                error.status_code, body, retry_after=parse_retry_after(error.response.headers)
            )
            translated.message += after
        elif isinstance(error, openai.APIError):
            translated = BackendError(
                f"the server reported an error: `{self._scrub(error.message):.200}`"
            )
        else:
            translated = BackendError(
                f"the openai client failed: {type(error).__name__}: {self._scrub(str(error)):.200}"
            )
        translated.message = self._scrub(translated.message)
        translated.args = (translated.message,)
        return translated

    def _broken_off(self, error: Exception) -> BackendConnectionError:
        """The error for a stream that broke off after it started. It is not retried: what
        was passed on cannot be taken back."""
        self._scrub_exception(error)
        cause = error.__cause__ if isinstance(error.__cause__, Exception) else error
        where = self.base_url or "the OpenAI API"
        hint = "the reply is incomplete and was not used: retry the request"
        timed_out = (
            isinstance(error, self._openai.APITimeoutError) or "Timeout" in type(cause).__name__
        )
        if timed_out:
            limit = f" for {self.timeout:g} s" if self.timeout is not None else ""
            return BackendTimeoutError(
                f"`{where}` stopped sending mid-stream{limit}: the reply is incomplete", hint=hint
            )
        reason = " ".join(str(cause).split()).rstrip(".") or type(cause).__name__
        return BackendConnectionError(
            f"the stream from `{where}` broke off before the reply ended:"
            f" `{self._scrub(reason):.200}`",
            hint=hint,
        )

    def _scrub(self, text: str) -> str:
        """``text`` with the API key, and any long enough piece of it, masked."""
        return _mask(text, self._secret)

    def _scrub_exception(self, error: Exception) -> None:
        """Mask the key in the SDK's exception too: it stays reachable as ``__cause__``."""
        error.args = tuple(self._scrub(a) if isinstance(a, str) else a for a in error.args)
        if isinstance(getattr(error, "message", None), str):
            error.message = self._scrub(error.message)  # type: ignore[attr-defined]
        body = getattr(error, "body", None)
        if body is not None and self._scrub(repr(body)) != repr(body):
            error.body = self._scrub(json.dumps(body, default=str))  # type: ignore[attr-defined]


def _mask(text: str, secret: str) -> str:
    if not secret or secret == _NO_KEY or not text:
        return text
    text = text.replace(secret, "***")
    if len(secret) < _SECRET_WINDOW:
        return text
    pieces = {secret[i : i + _SECRET_WINDOW] for i in range(len(secret) - _SECRET_WINDOW + 1)}
    hidden = [False] * len(text)
    for i in range(len(text) - _SECRET_WINDOW + 1):
        if text[i : i + _SECRET_WINDOW] in pieces:
            hidden[i : i + _SECRET_WINDOW] = [True] * _SECRET_WINDOW
    if not any(hidden):
        return text
    out, previous = [], False
    for char, masked in zip(text, hidden, strict=True):
        if masked and not previous:
            out.append("***")
        elif not masked:
            out.append(char)
        previous = masked
    return "".join(out)


def _check_url(url: object) -> str | None:
    if url is None or url == "":
        return None
    if not isinstance(url, str):
        raise PolicyError(f"`base_url` must be a URL: got `{url!r:.80}`")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PolicyError(
            f"`base_url` must be an http(s) URL: got `{_without_credentials(url):.80}`",
            hint="e.g. `http://localhost:8000/v1` for vLLM",
        )
    if parts.username or parts.password:
        raise PolicyError(
            "`base_url` must not carry credentials", hint="pass the key as `api_key=` instead"
        )
    if parts.path.rstrip("/").endswith("/chat/completions"):
        raise PolicyError(
            f"`base_url` is the endpoint, not the API root: `{url:.80}`",
            hint="leave out `/chat/completions`, e.g. `http://localhost:8000/v1`",
        )
    return url.strip().rstrip("/")


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    return (
        url
        if not (parts.username or parts.password)
        else url.replace(parts.netloc, parts.hostname or "")
    )


def _check_key(api_key: object, base_url: str | None) -> str:
    if api_key is None:
        api_key = os.environ.get("OPENAI_API_KEY") or None
        if api_key is None:
            if base_url is None:
                raise PolicyError(
                    "no API key for the OpenAI API",
                    hint="pass `api_key=`, set `OPENAI_API_KEY`, or set `base_url` to your server",
                )
            return _NO_KEY
    if not isinstance(api_key, str) or not api_key.strip():
        raise PolicyError("`api_key` must be non-empty text")
    if any(char < " " or char == "\x7f" for char in api_key):
        raise PolicyError("`api_key` contains a line break or another control character")
    return api_key


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < float("inf")
    ):
        raise PolicyError(f"`timeout` must be a positive number of seconds: got `{timeout!r:.80}`")
    return float(timeout)


def _check_mapping(value: object, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise PolicyError(f"`{name}` must be a dict with text keys: got `{value!r:.80}`")
    return dict(value)
