"""The enforcing MCP proxy end to end: the SDK's client against the proxy, the proxy in front of
a real upstream MCP server (``mcp_upstream.py``, a subprocess over stdio).

Clients reach the proxy in-process over the SDK's memory streams (each connection a session of
its own), over streamable HTTP on 127.0.0.1 (a port the system chooses), and over stdio through
``serve``, the command line's entry, in a subprocess. Nothing sleeps: every step awaits the
answer it checks (the client that never answers a question waits on nothing but the proxy's
deadline).
"""

from __future__ import annotations

import logging
import re
import socket
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the `mcp` extra) is not installed")

from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.shared.memory import create_client_server_memory_streams
from mcp_upstream import lookup_result

from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    Policy,
    PolicyError,
)
from ruleengine.mcp import (
    EnforcingProxy,
    MCPServerError,
    ServerConnection,
    connect_stdio,
    enforcing_proxy,
)

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
UPSTREAM = [str(HERE / "mcp_upstream.py")]
TOOLS = ["lookup", "send", "fail", "reject", "busy", "crash"]


def policy(*requirements: Any) -> Policy:
    """The tests' policy: every upstream tool but `extra`, `send` only after `lookup`."""
    return Policy(TOOLS, [ConditionalRequirement("send", only_after=["lookup"]), *requirements])


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: the upstream below lives across the module's tests


@pytest.fixture(scope="module")
async def upstream() -> AsyncIterator[ServerConnection]:
    """One upstream for the module: the proxies of the tests share it (it keeps no state; the
    sessions' histories are the proxies'). The tests that stop theirs start their own."""
    async with connect_stdio(sys.executable, UPSTREAM) as connection:
        yield connection


@asynccontextmanager
async def session(
    proxy: EnforcingProxy, elicit: ElicitationFnT | None = None
) -> AsyncIterator[Client]:
    """A client session with ``proxy`` over memory streams (``elicit``: the client can be
    asked; without it, the client does not declare elicitation)."""
    streams = create_client_server_memory_streams()
    async with streams as (client_side, server_side), anyio.create_task_group() as tasks:
        tasks.start_soon(proxy.serve_streams, *server_side)

        @asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            yield client_side

        async with Client(transport(), elicitation_callback=elicit) as client:
            yield client
        await client_side[1].aclose()  # end of input: the proxy's session ends


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Answers:
    """An elicitation callback that answers from a list and records what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        return self.answers.pop(0)


ACCEPT = types.ElicitResult(action="accept", content={"approve": True})
DECLINE = types.ElicitResult(action="decline")


async def test_a_forbidden_call_is_refused_with_the_reason_and_an_allowed_one_passes_unchanged(
    upstream: ServerConnection,
) -> None:
    proxy = EnforcingProxy(policy(), upstream)
    async with session(proxy) as client:
        listed = await client.list_tools()
        # Listed unchanged, the undeclared tool included (the list is stable).
        assert [t.name for t in listed.tools] == [*TOOLS, "extra"]
        assert listed.tools == list(proxy.upstream.tools)

        refused = await client.call_tool("send", {"to": "bob"})
        assert refused.is_error
        assert text_of(refused) == (
            "`send` did not run: it is not allowed at this step (needs `lookup` first);"
            " allowed now: `lookup`, `fail`, `reject`, `busy`, `crash`"
        )

        found = await client.call_tool("lookup", {"query": "cats"})
        expected = lookup_result("cats")
        assert (found.content, found.structured_content, found.is_error) == (
            expected.content,
            expected.structured_content,
            False,
        )

        # The history of this session has `lookup` now: `send` runs.
        sent = await client.call_tool("send", {"to": "bob"})
        assert (sent.is_error, text_of(sent)) == (False, "sent to bob")


async def test_each_session_has_its_own_history(upstream: ServerConnection) -> None:
    proxy = EnforcingProxy(policy(), upstream)
    async with session(proxy) as first, session(proxy) as second:
        assert not (await first.call_tool("lookup", {"query": "x"})).is_error
        assert not (await first.call_tool("send", {"to": "a"})).is_error
        # `lookup` ran in the first session only.
        refused = await second.call_tool("send", {"to": "b"})
        assert refused.is_error and "needs `lookup` first" in text_of(refused)
    async with session(proxy) as third:  # a new connection starts from nothing
        assert (await third.call_tool("send", {"to": "c"})).is_error


async def test_tool_errors_and_json_rpc_errors_come_back_as_the_upstream_sent_them(
    upstream: ServerConnection,
) -> None:
    async with session(EnforcingProxy(policy(), upstream)) as client:
        failed = await client.call_tool("fail", {})
        assert (failed.is_error, text_of(failed)) == (True, "the disk is full")
        with pytest.raises(MCPError) as raised:
            await client.call_tool("reject", {})
        assert (raised.value.code, raised.value.message) == (types.INVALID_PARAMS, "no such record")
        # The code the SDK also gives a closed connection: the upstream is alive all the same.
        with pytest.raises(MCPError, match="busy, try later"):
            await client.call_tool("busy", {})
        assert text_of(await client.call_tool("lookup", {"query": "x"})) == "found x"


async def test_undeclared_tools_and_final_answer_are_refused(upstream: ServerConnection) -> None:
    async with session(EnforcingProxy(policy(), upstream)) as client:
        extra = await client.call_tool("extra", {})
        assert extra.is_error
        assert text_of(extra) == (
            "`extra` did not run: the policy <python> does not declare it, and the proxy"
            " refuses the tools its policy does not name"
        )
        final = await client.call_tool("final_answer", {"response": "done"})
        assert final.is_error and "not an MCP tool" in text_of(final)


async def test_startup_warns_about_tools_the_policy_and_the_upstream_disagree_on(
    upstream: ServerConnection, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ruleengine.mcp")
    proxy = EnforcingProxy(Policy([*TOOLS, "ghost"]), upstream)
    assert (proxy.undeclared, proxy.missing) == (("extra",), ("ghost",))
    proxy.warn()  # what `enforcing_proxy` does at startup
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "does not declare: `extra`; their calls will be refused" in warnings[0]
    assert "declares tools the upstream MCP server" in warnings[1]
    assert warnings[1].endswith("does not have: `ghost`")


async def test_permission_is_asked_with_an_elicitation_accepted(
    upstream: ServerConnection,
) -> None:
    answers = Answers(ACCEPT)
    proxy = EnforcingProxy(policy(AskPermissionRequirement(include=["send"])), upstream)
    async with session(proxy, answers) as client:
        await client.call_tool("lookup", {"query": "x"})
        sent = await client.call_tool("send", {"to": "bob"})
    assert (sent.is_error, text_of(sent)) == (False, "sent to bob")
    assert answers.asked == [
        'The policy asks before `send` runs. Allow this call?\nArguments: {"to": "bob"}'
    ]


async def test_a_declined_elicitation_is_a_denied_step_that_requirements_read(
    upstream: ServerConnection,
) -> None:
    answers = Answers(DECLINE)
    ask = AskPermissionRequirement(include=["send"], remember_choices=True)
    async with session(EnforcingProxy(policy(ask), upstream), answers) as client:
        await client.call_tool("lookup", {"query": "x"})
        declined = await client.call_tool("send", {"to": "bob"})
        assert (declined.is_error, text_of(declined)) == (
            True,
            "`send` did not run: the user refused `send`",
        )
        # Remembered from the `denied` step: refused by the pass now, without asking.
        again = await client.call_tool("send", {"to": "bob"})
        assert again.is_error and "(the user refused `send`)" in text_of(again)
    assert len(answers.asked) == 1


async def test_a_client_without_elicitation_is_refused_with_a_reason_saying_so(
    upstream: ServerConnection,
) -> None:
    proxy = EnforcingProxy(policy(AskPermissionRequirement(include=["send"])), upstream)
    async with session(proxy) as client:  # no elicitation callback: not declared
        await client.call_tool("lookup", {"query": "x"})
        refused = await client.call_tool("send", {"to": "bob"})
    assert refused.is_error
    assert text_of(refused) == (
        "`send` did not run: the policy asks the user before `send` runs, and this client"
        " cannot be asked (it did not declare the MCP elicitation capability)"
    )


async def test_a_crashing_upstream_fails_the_call_in_flight_and_every_later_one() -> None:
    proxy_of = enforcing_proxy(policy(), sys.executable, UPSTREAM)  # an upstream of its own
    async with proxy_of as proxy, session(proxy) as client:
        crashed = await client.call_tool("crash", {})
        label = proxy.upstream.label
        assert crashed.is_error
        assert text_of(crashed) == (
            f"`crash` did not run to the end: the MCP server `{label}` closed the connection"
            " (it exited or crashed)"
        )
        later = await client.call_tool("lookup", {"query": "x"})
        assert later.is_error
        assert text_of(later) == (
            f"`lookup` did not run: the MCP server `{label}` closed the connection"
            " (it exited or crashed)"
        )
        # The proxy itself still answers.
        assert len((await client.list_tools()).tools) == len(TOOLS) + 1


async def test_an_upstream_that_does_not_start_is_an_error_naming_it(tmp_path: Path):
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit(5)\n", encoding="utf-8")
    with pytest.raises(
        MCPServerError, match=re.escape("broken.py` did not start: it closed")
    ) as raised:
        async with enforcing_proxy(policy(), sys.executable, [str(script)]):
            pass
    assert raised.value.server.endswith("broken.py")


async def test_streamable_http_sessions_on_a_free_port(upstream: ServerConnection) -> None:
    answers = Answers(ACCEPT)
    proxy = EnforcingProxy(policy(AskPermissionRequirement(include=["send"])), upstream)
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(proxy.serve_http)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, elicitation_callback=answers) as first, Client(url) as second:
            # The SDK's client negotiates: the proxy speaks the era with sessions.
            assert first.protocol_version == second.protocol_version == "2025-11-25"
            refused = await first.call_tool("send", {"to": "bob"})
            assert refused.is_error and "needs `lookup` first" in text_of(refused)
            await first.call_tool("lookup", {"query": "x"})
            sent = await first.call_tool("send", {"to": "bob"})  # asked, accepted
            assert (sent.is_error, text_of(sent)) == (False, "sent to bob")
            # The other HTTP session has its own history.
            assert (await second.call_tool("send", {"to": "bob"})).is_error
        tasks.cancel_scope.cancel()
    assert len(answers.asked) == 1


async def test_a_port_that_cannot_be_bound_is_a_clear_error(upstream: ServerConnection) -> None:
    proxy = EnforcingProxy(policy(), upstream)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PolicyError, match=f"cannot serve on 127.0.0.1:{port}: "):
            await proxy.serve_http(port)
    with pytest.raises(PolicyError, match="must be a port number"):
        await proxy.serve_http(70000)


async def test_serve_runs_the_proxy_over_stdio_with_a_policy_file(tmp_path: Path):
    """``serve``, the command line's entry, in a subprocess: the client's stdio is the proxy's,
    and the proxy's upstream is a subprocess of it."""
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(
        textwrap.dedent(
            f"""\
            tools = {TOOLS!r}

            [[requirements]]
            type = "conditional"
            target = "send"
            only_after = ["lookup"]
            """
        ).replace("'", '"'),
        encoding="utf-8",
    )
    code = (
        "import sys; from ruleengine.mcp.proxy import serve;"
        " sys.exit(serve(sys.argv[1], sys.executable, sys.argv[2:]))"
    )
    command = StdioServerParameters(
        command=sys.executable, args=["-c", code, str(policy_file), *UPSTREAM]
    )
    async with Client(command) as client:
        refused = await client.call_tool("send", {"to": "bob"})
        assert refused.is_error and "needs `lookup` first" in text_of(refused)
        assert text_of(await client.call_tool("lookup", {"query": "x"})) == "found x"
        assert text_of(await client.call_tool("send", {"to": "bob"})) == "sent to bob"


async def test_the_command_line_runs_the_proxy(tmp_path: Path) -> None:
    """``ruleengine mcp-proxy POLICY -- CMD ARGS``: the command the docs show."""
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(
        f'tools = {list(TOOLS)!r}\n\n[[requirements]]\ntype = "conditional"\n'
        'target = "send"\nonly_after = ["lookup"]\n'.replace("'", '"'),
        encoding="utf-8",
    )
    cli = ["-m", "ruleengine", "mcp-proxy", str(policy_file), "--", sys.executable, *UPSTREAM]
    async with Client(StdioServerParameters(command=sys.executable, args=cli)) as client:
        refused = await client.call_tool("send", {"to": "bob"})
        assert refused.is_error and "needs `lookup` first" in text_of(refused)
        assert text_of(await client.call_tool("lookup", {"query": "x"})) == "found x"
        assert text_of(await client.call_tool("send", {"to": "bob"})) == "sent to bob"


async def test_conditions_on_arguments_are_enforced_per_call(upstream: ServerConnection) -> None:
    """The proxy admits exactly what the pass admits: a call whose arguments fail an
    ``allow_if`` is refused naming the condition, one that meets it passes through."""
    from ruleengine import ArgumentsRequirement
    from ruleengine.conditions.types import ToolSpec, parameters_from_spec

    send = ToolSpec("send", None, parameters_from_spec({"to": "string"}, owner="tool `send`"))
    tools = [send if t == "send" else t for t in TOOLS]
    only_ours = ArgumentsRequirement("send", allow_if="arg.to.endswith('@ours.com')", name="ours")
    enforced = Policy(tools, [ConditionalRequirement("send", only_after=["lookup"]), only_ours])
    async with session(EnforcingProxy(enforced, upstream)) as client:
        await client.call_tool("lookup", {"query": "x"})
        refused = await client.call_tool("send", {"to": "eve@evil.com"})
        assert refused.is_error
        assert "allow_if `arg.to.endswith('@ours.com')` of `ours` fails" in text_of(refused)
        sent = await client.call_tool("send", {"to": "bob@ours.com"})
        assert (sent.is_error, text_of(sent)) == (False, "sent to bob@ours.com")


def asking_policy(*requirements: Any, timeout: float | None = None) -> Policy:
    """The tests' policy with `send` typed, and a question before a send outside `@ours.com`."""
    from ruleengine import ArgumentsRequirement
    from ruleengine.conditions.types import ToolSpec, parameters_from_spec

    send = ToolSpec("send", None, parameters_from_spec({"to": "string"}, owner="tool `send`"))
    tools = [send if t == "send" else t for t in TOOLS]
    outside = ArgumentsRequirement(
        "send", ask_if="not arg.to.endswith('@ours.com')", timeout=timeout, name="outside"
    )
    return Policy(
        tools, [ConditionalRequirement("send", only_after=["lookup"]), outside, *requirements]
    )


OUTSIDE = "ask_if `not arg.to.endswith('@ours.com')` of `outside` holds"


class Forwarded:
    """Records the calls the proxy forwards to the upstream (which still runs them)."""

    def __init__(self, upstream: ServerConnection, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        call = upstream.call

        async def recorded(name: str, arguments: Any) -> types.CallToolResult:
            self.names.append(name)
            return await call(name, arguments)

        monkeypatch.setattr(upstream, "call", recorded)


async def test_a_call_meeting_an_ask_if_is_asked_about_and_runs_when_accepted(
    upstream: ServerConnection,
) -> None:
    answers = Answers(ACCEPT)
    async with session(EnforcingProxy(asking_policy(), upstream), answers) as client:
        await client.call_tool("lookup", {"query": "x"})
        # The condition does not hold: no question.
        assert text_of(await client.call_tool("send", {"to": "bob@ours.com"})) == (
            "sent to bob@ours.com"
        )
        assert answers.asked == []
        sent = await client.call_tool("send", {"to": "eve@evil.com"})
    assert (sent.is_error, text_of(sent)) == (False, "sent to eve@evil.com")
    assert answers.asked == [
        f"The policy asks before `send` runs with these arguments ({OUTSIDE}). Allow this call?"
        '\nArguments: {"to": "eve@evil.com"}'
    ]


async def test_a_declined_ask_if_question_is_a_denied_step_and_nothing_runs(
    upstream: ServerConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = Answers(DECLINE)
    forwarded = Forwarded(upstream, monkeypatch)
    # `remember_choices` reads the `denied` step: a later `send` is refused by the pass.
    remember = AskPermissionRequirement(include=["send"], remember_choices=True)
    async with session(EnforcingProxy(asking_policy(remember), upstream), answers) as client:
        await client.call_tool("lookup", {"query": "x"})
        declined = await client.call_tool("send", {"to": "eve@evil.com"})
        assert (declined.is_error, text_of(declined)) == (
            True,
            "`send` did not run: the user refused `send`",
        )
        again = await client.call_tool("send", {"to": "bob@ours.com"})
        assert again.is_error and "(the user refused `send`)" in text_of(again)
    assert forwarded.names == ["lookup"]
    assert len(answers.asked) == 1 and OUTSIDE in answers.asked[0]


async def test_an_accepted_ask_if_question_still_goes_through_ask_permission(
    upstream: ServerConnection,
) -> None:
    answers = Answers(ACCEPT, DECLINE)
    ask = AskPermissionRequirement(include=["send"])
    async with session(EnforcingProxy(asking_policy(ask), upstream), answers) as client:
        await client.call_tool("lookup", {"query": "x"})
        refused = await client.call_tool("send", {"to": "eve@evil.com"})
    assert (refused.is_error, text_of(refused)) == (
        True,
        "`send` did not run: the user refused `send`",
    )
    assert [OUTSIDE in asked for asked in answers.asked] == [True, False]


async def test_a_client_without_elicitation_is_told_it_cannot_be_asked_about_arguments(
    upstream: ServerConnection,
) -> None:
    remember = AskPermissionRequirement(include=["send"], remember_choices=True)
    async with session(EnforcingProxy(asking_policy(remember), upstream)) as client:
        await client.call_tool("lookup", {"query": "x"})
        refused = await client.call_tool("send", {"to": "eve@evil.com"})
        assert (refused.is_error, text_of(refused)) == (
            True,
            f"`send` did not run: the policy asks the user before `send` runs with these"
            f" arguments ({OUTSIDE}), and this client cannot be asked (it did not declare the"
            " MCP elicitation capability)",
        )
        # No step: the next call is not refused as remembered, but for the same reason.
        again = await client.call_tool("send", {"to": "bob@ours.com"})
        assert text_of(again).startswith(
            "`send` did not run: the policy asks the user before `send` runs, and this client"
        )


async def test_no_answer_to_an_ask_if_question_within_its_timeout_is_a_refusal(
    upstream: ServerConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client never answers, so the outcome does not depend on how long anything takes:
    only the requirement's deadline ends the question."""

    async def never(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    forwarded = Forwarded(upstream, monkeypatch)
    remember = AskPermissionRequirement(include=["send"], remember_choices=True)
    proxy = EnforcingProxy(asking_policy(remember, timeout=0.001), upstream)
    async with session(proxy, never) as client:
        await client.call_tool("lookup", {"query": "x"})
        refused = await client.call_tool("send", {"to": "eve@evil.com"})
        assert (refused.is_error, text_of(refused)) == (
            True,
            "`send` did not run: no answer about `send` within 0.001 s, so it was refused",
        )
        again = await client.call_tool("send", {"to": "bob@ours.com"})
        assert again.is_error and "(the user refused `send`)" in text_of(again)
    assert forwarded.names == ["lookup"]
