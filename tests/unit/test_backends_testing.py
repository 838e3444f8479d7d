"""backends/testing.py: the test server, spoken to with the standard library's HTTP client."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from backends.testing import OpenAICompatibleServer
from ruleengine import PolicyError

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def post(
    server: OpenAICompatibleServer,
    body: object,
    path: str = "/chat/completions",
    *,
    timeout: float = 5,
    **headers: str,
) -> tuple[int, dict[str, str], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(server.base_url + path, data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_a_scripted_reply_as_json() -> None:
    with OpenAICompatibleServer(["hello"]) as server:
        status, headers, text = post(server, BODY)
    assert status == 200 and headers["Content-Type"] == "application/json"
    reply = json.loads(text)
    assert reply["object"] == "chat.completion" and reply["model"] == "m"
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"]["total_tokens"] == 0
    assert server.requests == [BODY]


def test_both_paths_and_the_models_list() -> None:
    with OpenAICompatibleServer(["a", "b"], model="served") as server:
        assert post(server, BODY)[0] == 200
        root = server.base_url.removesuffix("/v1")
        request = urllib.request.Request(
            root + "/chat/completions", data=json.dumps(BODY).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.loads(answer.read())["model"] == "served"
        with urllib.request.urlopen(server.base_url + "/models", timeout=5) as answer:
            assert json.loads(answer.read())["data"][0]["id"] == "served"
        assert post(server, BODY, path="/embeddings")[0] == 404
    assert [r.path for r in server.received] == [
        "/v1/chat/completions",
        "/chat/completions",
        "/v1/models",
        "/v1/embeddings",
    ]


def test_a_scripted_reply_as_server_sent_events() -> None:
    entry = {"text": "streamed text", "tool_calls": [{"name": "search", "arguments": {"q": "x"}}]}
    with OpenAICompatibleServer([entry]) as server:
        status, headers, text = post(server, {**BODY, "stream": True})
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    payloads = [line.removeprefix("data: ") for line in text.splitlines() if line]
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert content == "streamed text"
    assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]


def test_errors_with_retry_after() -> None:
    with OpenAICompatibleServer(
        [{"error": {"status": 429, "message": "slow down", "retry_after": 1.5}}]
    ) as server:
        status, headers, text = post(server, BODY)
    assert status == 429 and headers["Retry-After"] == "1.5"
    assert json.loads(text)["error"]["message"] == "slow down"


@pytest.mark.parametrize(
    ("options", "body", "param"),
    [
        ({"reject_tool_choice": True}, {"tool_choice": "required"}, "tool_choice"),
        (
            {"reject_tool_choice": True},
            {"tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice",
        ),
        (
            {"reject_tool_choice": ["allowed_tools"]},
            {"tool_choice": {"type": "allowed_tools"}},
            "tool_choice",
        ),
        (
            {"reject_response_format": True},
            {"response_format": {"type": "json_schema"}},
            "response_format",
        ),
        (
            {"reject_parallel_tool_calls": True},
            {"parallel_tool_calls": False},
            "parallel_tool_calls",
        ),
    ],
)
def test_rejections_use_no_entry(options: dict[str, Any], body: dict[str, Any], param: str) -> None:
    with OpenAICompatibleServer(["kept"], **options) as server:
        status, _, text = post(server, {**BODY, **body})
        assert status == 400 and param in json.loads(text)["error"]["code"]
        assert post(server, BODY)[0] == 200
    assert server.remaining == 0


def test_accepted_tool_choices_pass() -> None:
    with OpenAICompatibleServer(["a", "b"], reject_tool_choice=True) as server:
        assert post(server, {**BODY, "tool_choice": "auto"})[0] == 200
        assert post(server, {**BODY, "tool_choice": "none"})[0] == 200


def test_ignored_tool_choice_is_hidden_from_a_function_script() -> None:
    seen: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> str:
        seen.append(body)
        return "ok"

    with OpenAICompatibleServer(reply, ignore_tool_choice=True) as server:
        post(server, {**BODY, "tool_choice": "required"})
    assert "tool_choice" not in seen[0]
    assert server.requests[0]["tool_choice"] == "required"  # but it was received


def test_the_api_key_is_checked_and_masked() -> None:
    with OpenAICompatibleServer(["a"], api_key="right") as server:
        status, _, text = post(server, BODY, Authorization="Bearer wrong")
        assert status == 401 and "wrong" not in text
        assert post(server, BODY, Authorization="Bearer right")[0] == 200
    assert all(r.headers["authorization"] == "Bearer ***" for r in server.received)
    assert "right" not in repr(server.received)


def test_bad_requests_get_400() -> None:
    with OpenAICompatibleServer(["a"]) as server:
        assert post(server, b"{not json")[0] == 400
        assert post(server, {"model": "m"})[0] == 400
    assert server.remaining == 1


def test_a_script_that_runs_out_answers_410() -> None:
    with OpenAICompatibleServer(["only"]) as server:
        post(server, BODY)
        status, _, text = post(server, BODY)
    assert status == 410
    assert (
        "the test server's script has no reply for request 2"
        in json.loads(text)["error"]["message"]
    )


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        ("not_json", lambda t: t.startswith("<html>")),
        ("bad_json", lambda t: t.endswith('"mess')),
        ("not_object", lambda t: json.loads(t) == ["not", "a", "completion"]),
        ("no_choices", lambda t: "choices" not in json.loads(t)),
        ("empty_choices", lambda t: json.loads(t)["choices"] == []),
        ("no_message", lambda t: "message" not in json.loads(t)["choices"][0]),
    ],
)
def test_malformed_bodies(kind: str, check: Any) -> None:
    with OpenAICompatibleServer([{"malformed": kind}]) as server:
        status, _, text = post(server, BODY)
    assert status == 200 and check(text)


def test_a_verbatim_body() -> None:
    with OpenAICompatibleServer([{"body": {"anything": [1, 2]}}]) as server:
        assert json.loads(post(server, BODY)[2]) == {"anything": [1, 2]}


def test_disconnect_and_delay() -> None:
    # Each request's entry is chosen by what it asks, not by when the server reads it.
    entries = {
        "drop": {"disconnect": True},
        "hold": {"delay": 30, "text": "held"},
        "wait": {"delay": 0.05, "text": "late"},
    }
    taken = {content: threading.Event() for content in entries}

    def script(body: dict[str, Any]) -> object:
        content = body["messages"][0]["content"]
        taken[content].set()
        return entries[content]

    with OpenAICompatibleServer(script) as server:
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            post(server, asking("drop"))
        # A delay holds the answer back: a client that waits less gets none (30 s is far
        # past its wait on any machine; the server wakes the handler when it stops).
        with pytest.raises((urllib.error.URLError, TimeoutError)):
            post(server, asking("hold"), timeout=0.2)
        assert taken["hold"].wait(60)  # the server did have the request
        # Once the delay is over, the answer comes.
        assert json.loads(post(server, asking("wait"))[2])["choices"][0]["message"] == {
            "role": "assistant",
            "content": "late",
        }


def asking(content: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_stop_wakes_a_waiting_request_and_frees_the_port() -> None:
    waiting = threading.Event()

    def hold(body: dict[str, Any]) -> object:
        waiting.set()  # the handler has the request and waits next
        return {"delay": 30, "text": "never"}

    server = OpenAICompatibleServer(hold).start()
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    connection = socket.create_connection(("127.0.0.1", port))
    connection.settimeout(60)  # only a bound on a hang: the answer is the connection's end
    try:
        body = json.dumps(BODY).encode()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
        connection.sendall(head.encode() + body)
        assert waiting.wait(60)
        server.stop()
        # Woken and dropped: the connection ends without an answer (unwoken, the handler
        # would answer `never` after 30 s; a stop that waited for it would take as long).
        assert connection.recv(1024) == b""
    finally:
        connection.close()
        server.stop()
    # No one listens on the port any more: it can be listened on again.
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
        again.listen()
    assert "stopped" in repr(server)
    with pytest.raises(PolicyError, match="not running"):
        server.base_url  # noqa: B018


def test_bad_options_are_refused() -> None:
    with pytest.raises(PolicyError, match="unknown form `sometimes`"):
        OpenAICompatibleServer(reject_tool_choice=["sometimes"])
    with pytest.raises(PolicyError, match="`reject_tool_choice` must be true, false or a list"):
        OpenAICompatibleServer(reject_tool_choice=5)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="exception cannot be sent over HTTP"):
        OpenAICompatibleServer([ValueError("x")])
    with pytest.raises(PolicyError, match="script entry 0: unknown key"):
        OpenAICompatibleServer([{"txt": "x"}])
    with pytest.raises(PolicyError, match="`model` must be non-empty text"):
        OpenAICompatibleServer(model="")
    with pytest.raises(PolicyError, match="a list of entries or a function"):
        OpenAICompatibleServer(5)  # type: ignore[arg-type]


def test_a_stream_cut_short() -> None:
    entries = [
        {"text": "streamed text cut short", "drop_after": 2},
        {"text": "streamed text cut short", "end_after": 2},
        {"text": "not streamed", "drop_after": 2},
    ]
    with OpenAICompatibleServer(entries) as server:
        # dropped: the chunked body never ends
        request = urllib.request.Request(
            server.base_url + "/chat/completions",
            data=json.dumps({**BODY, "stream": True}).encode(),
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.headers["Transfer-Encoding"] == "chunked"
            with pytest.raises(http.client.IncompleteRead) as caught:
                answer.read()
        assert caught.value.partial.decode().count("data: ") == 2
        # ended: a complete body, two payloads and nothing else (no finish, no `[DONE]`)
        status, _, text = post(server, {**BODY, "stream": True})
        payloads = [line for line in text.splitlines() if line]
        assert status == 200 and len(payloads) == 2 and "[DONE]" not in text
        assert all(json.loads(p.removeprefix("data: "))["choices"] for p in payloads)
        # a request that is not streamed gets no answer
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            post(server, BODY)
