"""Permission at the gate (SPEC §5): asking a handler (sync, async, raising, slow, odd answers),
always_allow, final_answer, remembered choices — first through ``agent.permission.ask`` (moved
here from ruleengine with the asking), then end to end through a run: granted, refused,
remembered, timed out, handler crashing, hidden after a refusal, cancelled."""

from __future__ import annotations

import functools
import threading

import anyio
import pytest

from agent import Deny, RequirementAgent, ToolDeniedEvent, permission, tool
from agent.permission import check_permission, terminal_handler
from backends import ScriptedChatModel
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    PolicyError,
    Rule,
    RunState,
)

TOOLS = ["search", "send_email", "think"]


class Recorder:
    """A sync handler that records its calls and answers from a table (default: approve)."""

    def __init__(self, answers: dict | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.answers = answers or {}

    def __call__(self, tool, arguments):
        self.calls.append((tool, dict(arguments)))
        return self.answers.get(tool, True)


def fields(rule: Rule) -> tuple:
    return (rule.target, rule.allowed, rule.hidden, rule.forced, rule.prevent_stop)


# -- asking ------------------------------------------------------------------------------------


def ask(req: AskPermissionRequirement, tool: str, arguments=None, state=None) -> bool:
    return anyio.run(permission.ask, req, tool, arguments or {}, state or RunState())


def test_ask_with_a_sync_handler():
    handler = Recorder({"send_email": False})
    req = AskPermissionRequirement(handler=handler)
    assert ask(req, "search", {"q": "x"}) is True
    assert ask(req, "send_email", {"to": "bob"}) is False
    assert handler.calls == [("search", {"q": "x"}), ("send_email", {"to": "bob"})]


def test_ask_with_an_async_handler():
    calls = []

    async def handler(tool, arguments):
        await anyio.sleep(0)
        calls.append(tool)
        return tool != "send_email"

    req = AskPermissionRequirement(handler=handler)
    assert ask(req, "search") is True
    assert ask(req, "send_email") is False
    assert calls == ["search", "send_email"]


def test_ask_with_a_sync_handler_returning_an_awaitable():
    async def answer():
        return True

    req = AskPermissionRequirement(handler=lambda tool, arguments: answer())
    assert ask(req, "search") is True


def test_a_raising_handler_is_a_denial():
    def handler(tool, arguments):
        raise RuntimeError("the human went home")

    assert ask(AskPermissionRequirement(handler=handler), "search") is False


def test_a_raising_async_handler_is_a_denial():
    async def handler(tool, arguments):
        raise RuntimeError("nope")

    assert ask(AskPermissionRequirement(handler=handler), "search") is False


@pytest.mark.parametrize("answer", [1, "yes", None, [True]])
def test_a_non_bool_answer_is_a_denial(answer):
    req = AskPermissionRequirement(handler=lambda tool, arguments: answer)
    assert ask(req, "search") is False


def test_a_slow_async_handler_times_out_as_a_denial():
    finished = []

    async def handler(tool, arguments):
        await anyio.sleep(30)
        finished.append(tool)
        return True

    req = AskPermissionRequirement(handler=handler, timeout=0.05)
    assert ask(req, "search") is False
    assert finished == []


def test_a_fast_async_handler_within_its_timeout_is_answered():
    async def handler(tool, arguments):
        await anyio.sleep(0)
        return True

    # The timeout only stops a hang: the answer needs no hurry.
    assert ask(AskPermissionRequirement(handler=handler, timeout=60), "search") is True


def test_a_slow_sync_handler_times_out_as_a_denial():
    release = threading.Event()

    def handler(tool, arguments):
        release.wait(60)  # abandoned in its worker thread when the timeout fires
        return True

    req = AskPermissionRequirement(handler=handler, timeout=0.02)
    try:
        assert ask(req, "search") is False
    finally:
        release.set()


def test_always_allow_approves_without_calling_the_handler():
    handler = Recorder({"search": False})
    req = AskPermissionRequirement(handler=handler, always_allow=True)
    assert ask(req, "search") is True
    assert handler.calls == []


def test_final_answer_is_never_asked_about():
    handler = Recorder({FINAL_ANSWER: False})
    req = AskPermissionRequirement(include=["search", FINAL_ANSWER], handler=handler)
    assert ask(req, FINAL_ANSWER, {"answer": "42"}) is True
    assert ask(req.bind(TOOLS), FINAL_ANSWER) is True
    assert handler.calls == []


def test_an_uncovered_tool_is_not_asked_about():
    handler = Recorder({"search": False})
    req = AskPermissionRequirement(include="send_email", handler=handler)
    assert ask(req, "search") is True
    assert handler.calls == []


def test_without_remember_choices_every_call_is_asked():
    handler = Recorder({"search": True})
    req = AskPermissionRequirement(handler=handler)
    state = RunState.from_trace([("search", "denied"), "search"])
    assert ask(req, "search", state=state) is True
    assert ask(req, "search", state=state) is True
    assert len(handler.calls) == 2
    assert req.remembered("search", state) is None
    assert tuple(req.bind(TOOLS).run(state)) == ()


@pytest.mark.parametrize(
    ("trace", "remembered"),
    [
        ([], None),
        (["think"], None),
        ([("search", "denied")], False),
        ([("search", "ok")], True),
        ([("search", "error")], True),
        ([("search", "denied"), "search"], False),
        (["search", ("search", "denied")], True),
        ([("think", "denied"), ("search", "error"), ("search", "denied")], True),
    ],
)
def test_the_first_step_of_a_covered_tool_decides(trace, remembered):
    handler = Recorder({"search": True})
    req = AskPermissionRequirement(handler=handler, remember_choices=True)
    state = RunState.from_trace(trace)
    assert req.remembered("search", state) is remembered
    answer = ask(req, "search", state=state)
    if remembered is None:
        assert answer is True
        assert handler.calls == [("search", {})]
    else:
        assert answer is remembered
        assert handler.calls == []


def test_remembered_answers_come_from_each_state():
    handler = Recorder({"search": True, "send_email": True})
    req = AskPermissionRequirement(handler=handler, remember_choices=True).bind(TOOLS)
    refused = RunState.from_trace([("search", "denied")])
    approved = RunState.from_trace([("search", "ok"), ("send_email", "denied")])
    fresh = RunState()

    assert ask(req, "search", state=refused) is False
    assert ask(req, "search", state=approved) is True
    assert ask(req, "send_email", state=approved) is False
    assert ask(req, "send_email", state=refused) is True  # asked: undecided in that run
    assert ask(req, "search", state=fresh) is True  # asked
    assert handler.calls == [("send_email", {}), ("search", {})]

    assert [fields(r) for r in req.run(refused)] == [("search", False, False, False, False)]
    assert [fields(r) for r in req.run(approved)] == [
        ("search", True, False, False, False),
        ("send_email", False, False, False, False),
    ]
    assert tuple(req.run(fresh)) == ()
    # asking never wrote anything to the requirement: the first state still decides alone
    assert ask(req, "search", state=refused) is False


def test_ask_checks_its_arguments():
    req = AskPermissionRequirement(handler=Recorder())
    for args in [("nope", "search"), (req, ""), (req, "search", "x"), (req, "search", {}, 3)]:
        with pytest.raises(PolicyError):
            anyio.run(permission.ask, *args)


def test_the_terminal_handler_reads_yes(monkeypatch):
    answers = iter(["y", "no", "YES "])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert [terminal_handler("t", {}) for _ in range(3)] == [True, False, True]

    def closed(prompt):
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    assert terminal_handler("t", {}) is False


def test_the_default_handler_is_the_terminal_prompt(monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    denied = anyio.run(check_permission, AskPermissionRequirement(), "search", {}, RunState())
    assert denied == Deny("the user refused `search`")


def test_a_disabled_requirement_does_not_ask():
    handler = Recorder({"search": False})
    req = AskPermissionRequirement(handler=handler, enabled=False)
    assert ask(req, "search") is True
    assert handler.calls == []


# -- through a run -----------------------------------------------------------------------------

refunded: list[str] = []


@tool
def refund(order: str) -> str:
    """Refund an order."""
    refunded.append(order)
    return f"refunded {order}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR"


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def reply(*calls: dict) -> dict:
    return {"tool_calls": list(calls)}


def answer(text: str = "done") -> dict:
    return reply(call(FINAL_ANSWER, response=text))


def run(agent, prompt: str = "refund order 7", **kwargs):
    return anyio.run(functools.partial(agent.run, prompt, **kwargs))


def make_agent(script, handler, **kwargs):
    req = AskPermissionRequirement(include=[refund], handler=handler, **kwargs)
    return RequirementAgent(ScriptedChatModel(script), [lookup, refund], [req])


@pytest.fixture(autouse=True)
def _clear_refunds():
    refunded.clear()


def test_granted_the_tool_runs():
    handler = Recorder()
    agent = make_agent([reply(call("refund", order="7")), answer()], handler)
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [("refund", "ok"), (FINAL_ANSWER, "ok")]
    assert handler.calls == [("refund", {"order": "7"})]
    assert refunded == ["7"]


def test_refused_the_tool_does_not_run_and_the_model_is_told():
    llm = ScriptedChatModel([reply(call("refund", order="7")), answer("sorry")])
    req = AskPermissionRequirement(include=[refund], handler=lambda t, a: False)
    agent = RequirementAgent(llm, [lookup, refund], [req])
    denied = []
    agent.emitter.on("tool.denied", denied.append)
    out = run(agent)
    step = out.steps[0]
    assert (step.tool, step.status) == ("refund", "denied")
    assert step.error == "`refund` did not run: the user refused `refund`"
    assert refunded == []
    assert isinstance(denied[0], ToolDeniedEvent) and denied[0].step == step
    tool_message = llm.requests[1].messages[-2]
    assert tool_message.content == step.error


def test_uncovered_tools_and_final_answer_are_not_asked_about():
    handler = Recorder()
    agent = make_agent([reply(call("lookup", order="7")), answer()], handler)
    run(agent)
    assert handler.calls == []


def test_remembered_approval_asks_once():
    handler = Recorder()
    script = [reply(call("refund", order="1")), reply(call("refund", order="2")), answer()]
    out = run(make_agent(script, handler, remember_choices=True))
    assert [s.status for s in out.steps] == ["ok", "ok", "ok"]
    assert handler.calls == [("refund", {"order": "1"})]
    assert refunded == ["1", "2"]


def test_remembered_refusal_denies_at_the_gate_and_can_hide_the_tool():
    handler = Recorder({"refund": False})
    llm = ScriptedChatModel(
        [
            reply(call("refund", order="1")),
            # a call the pass no longer offers, in a batch the backend lets through
            reply(call("refund", order="2"), call(FINAL_ANSWER, response="done")),
        ]
    )
    req = AskPermissionRequirement(
        include=[refund], handler=handler, remember_choices=True, hide_disallowed=True
    )
    agent = RequirementAgent(llm, [lookup, refund], [req])
    refused = []
    agent.emitter.on("tool.refused", refused.append)
    out = run(agent)
    # The human's refusal is a step; the gate's refusal of the hidden tool is not.
    assert [s.status for s in out.steps] == ["denied", "ok"]
    assert handler.calls == [("refund", {"order": "1"})]  # the second refusal is the gate's
    assert [(e.by, e.reason) for e in refused] == [
        ("gate", "there is no tool `refund`: the tools are `lookup`, `final_answer`")
    ]
    # hidden after the refusal: absent from the tools and from the system prompt
    later = llm.requests[1]
    assert later.tools == ("lookup", FINAL_ANSWER)
    assert "refund" not in later.messages[0].content
    assert refunded == []


def test_a_handler_that_times_out_fails_closed():
    async def slow(tool, arguments):
        await anyio.sleep(30)
        return True

    out = run(make_agent([reply(call("refund", order="7")), answer()], slow, timeout=0.02))
    assert out.steps[0].status == "denied"
    assert "no answer about `refund` within 0.02 s" in out.steps[0].error
    assert refunded == []


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_a_handler_that_raises_timeout_error_itself_is_a_failing_handler(timeout):
    # The handler's own `TimeoutError` is not our deadline (there may be none): it is named.
    def gives_up(tool, arguments):
        raise TimeoutError("the approval service timed out")

    out = run(make_agent([reply(call("refund", order="7")), answer()], gives_up, timeout=timeout))
    assert out.steps[0].status == "denied"
    assert out.steps[0].error == (
        "`refund` did not run: asking about `refund` failed"
        " (TimeoutError: the approval service timed out), so it was refused"
    )
    assert refunded == []


def test_a_crashing_handler_fails_closed():
    def crash(tool, arguments):
        raise RuntimeError("the human went home")

    out = run(make_agent([reply(call("refund", order="7")), answer()], crash))
    assert out.steps[0].status == "denied"
    assert "RuntimeError: the human went home" in out.steps[0].error
    assert refunded == []


def test_always_allow_runs_without_asking():
    handler = Recorder({"refund": False})
    out = run(make_agent([reply(call("refund", order="7")), answer()], handler, always_allow=True))
    assert out.steps[0].status == "ok"
    assert handler.calls == []


def test_cancelling_the_run_cancels_the_question():
    asked = anyio.Event()

    async def wait_forever(tool, arguments):
        asked.set()
        await anyio.sleep_forever()

    agent = make_agent([reply(call("refund", order="7")), answer()], wait_forever)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(agent.run, "refund order 7")
            await asked.wait()
            group.cancel_scope.cancel()

    anyio.run(main)
    assert refunded == []


def test_one_requirement_object_serves_concurrent_runs():
    answers = {"1": True, "2": False, "3": True}

    async def handler(tool, arguments):
        await anyio.sleep(0)
        return answers[arguments["order"]]

    req = AskPermissionRequirement(include=[refund], handler=handler, remember_choices=True)

    def script(request):
        first = request.messages[1].content
        order = first.split()[-1]
        if len(request.messages) <= 3:
            return reply(call("refund", order=order))
        return answer(order)

    agent = RequirementAgent(ScriptedChatModel(script), [lookup, refund], [req])
    results: dict[str, str] = {}

    async def one(order: str) -> None:
        out = await agent.run(f"refund order {order}")
        results[order] = out.steps[0].status

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for order in answers:
                group.start_soon(one, order)

    anyio.run(main)
    assert results == {"1": "ok", "2": "denied", "3": "ok"}
    assert sorted(refunded) == ["1", "3"]


# -- ask_if: permission for some arguments ----------------------------------------------------


@tool
def pay(order: str, amount: float) -> str:
    """Pay an order back."""
    refunded.append(f"{order}:{amount:g}")
    return "paid"


def test_ask_if_asks_only_for_the_calls_whose_arguments_meet_it():
    from ruleengine import ArgumentsRequirement

    handler = Recorder({"pay": False})
    big = ArgumentsRequirement("pay", ask_if="arg.amount > 100", handler=handler, name="big")
    script = [
        reply(call("pay", order="1", amount=50)),
        reply(call("pay", order="2", amount=500)),
        answer(),
    ]
    agent = RequirementAgent(ScriptedChatModel(script), [lookup, pay], [big])
    out = run(agent)
    assert [(s.tool, s.status) for s in out.steps] == [
        ("pay", "ok"),
        ("pay", "denied"),
        (FINAL_ANSWER, "ok"),
    ]
    assert handler.calls == [("pay", {"order": "2", "amount": 500.0})]
    assert out.steps[1].error == "`pay` did not run: the user refused `pay`"
    assert refunded == ["1:50"]


def test_ask_if_approved_runs_and_a_failing_allow_if_never_asks():
    from ruleengine import ArgumentsRequirement

    handler = Recorder()
    reqs = [
        ArgumentsRequirement("pay", ask_if="arg.amount > 100", handler=handler, name="big"),
        ArgumentsRequirement("pay", allow_if="arg.amount <= 1000", name="cap"),
    ]
    script = [
        reply(call("pay", order="1", amount=5000)),
        reply(call("pay", order="2", amount=500)),
        answer(),
    ]
    out = run(RequirementAgent(ScriptedChatModel(script), [lookup, pay], reqs))
    # The refused call is not a step (the gate refused it); the asked one ran.
    assert [(s.tool, s.status) for s in out.steps] == [("pay", "ok"), (FINAL_ANSWER, "ok")]
    assert handler.calls == [("pay", {"order": "2", "amount": 500.0})]
    assert refunded == ["2:500"]


def test_a_permission_listener_takes_only_permission_requirements():
    from agent.permission import PermissionListener

    with pytest.raises(PolicyError, match="is not an `AskPermissionRequirement` nor"):
        PermissionListener("pay")  # type: ignore[arg-type]


def test_ask_if_judges_the_arguments_the_gate_admitted():
    """The listener reads the validated arguments, not the model's raw ones: a number sent
    as text, or an optional argument left out, cannot slip past an ask_if."""
    from ruleengine import ArgumentsRequirement

    @tool
    def pay_note(order: str, amount: float, note: str = "") -> str:
        """Pay, with a note."""
        refunded.append(f"{order}:{amount:g}")
        return "paid"

    handler = Recorder({"pay_note": False})
    asks = ArgumentsRequirement(
        "pay_note", ask_if="arg.amount > 100 or 'urgent' in arg.note", handler=handler
    )
    script = [
        reply(call("pay_note", order="1", amount="500")),
        reply(call("pay_note", order="2", amount=500)),
        answer(),
    ]
    out = run(RequirementAgent(ScriptedChatModel(script), [lookup, pay_note], [asks]))
    assert [(s.tool, s.status) for s in out.steps][:2] == [
        ("pay_note", "denied"),
        ("pay_note", "denied"),
    ]
    assert out.steps[0].arguments == {"order": "1", "amount": 500.0, "note": ""}
    assert len(handler.calls) == 2 and refunded == []
