"""AskPermissionRequirement (SPEC §5, §11): coverage, asking a handler (sync, async, raising,
slow), always_allow, final_answer, and remembered choices read from the run's steps."""

from __future__ import annotations

import time

import anyio
import pytest

from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    PolicyError,
    Reasoner,
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


def ask(req: AskPermissionRequirement, tool: str, arguments=None, state=None) -> bool:
    return anyio.run(req.ask, tool, arguments or {}, state or RunState())


def fields(rule: Rule) -> tuple:
    return (rule.target, rule.allowed, rule.hidden, rule.forced, rule.prevent_stop)


# -- coverage ----------------------------------------------------------------------------------


def test_default_include_covers_every_tool_but_final_answer():
    req = AskPermissionRequirement(handler=Recorder()).bind(TOOLS)
    assert [t for t in (*TOOLS, FINAL_ANSWER) if req.covers(t)] == TOOLS
    assert req.monitor().covered == tuple(TOOLS)


def test_default_include_unbound_covers_any_tool_but_final_answer():
    req = AskPermissionRequirement(handler=Recorder())
    assert req.covers("anything")
    assert not req.covers(FINAL_ANSWER)


def test_include_limits_coverage():
    req = AskPermissionRequirement(include=["send_email"], handler=Recorder())
    assert req.covers("send_email")
    assert not req.covers("search")
    assert not req.covers(FINAL_ANSWER)
    bound = req.bind(TOOLS)
    assert bound.covers("send_email")
    assert not bound.covers("think")


def test_exclude_removes_from_the_default():
    req = AskPermissionRequirement(exclude="think", handler=Recorder())
    assert not req.covers("think")
    assert req.covers("search")
    bound = req.bind(TOOLS)
    assert [t for t in TOOLS if bound.covers(t)] == ["search", "send_email"]


def test_exclude_removes_from_include():
    req = AskPermissionRequirement(include=["search", "send_email"], exclude=["search"])
    assert [t for t in TOOLS if req.covers(t)] == ["send_email"]
    assert [t for t in TOOLS if req.bind(TOOLS).covers(t)] == ["send_email"]


def test_final_answer_is_never_covered_even_when_included():
    req = AskPermissionRequirement(include=["search", FINAL_ANSWER], handler=Recorder())
    assert not req.covers(FINAL_ANSWER)
    assert not req.bind(TOOLS).covers(FINAL_ANSWER)


class MailTool:
    def __init__(self) -> None:
        self.name = "send_email"


def test_include_by_tool_object_and_class():
    mail = MailTool()
    assert AskPermissionRequirement(include=mail).covers("send_email")
    req = AskPermissionRequirement(include=MailTool, handler=Recorder())
    bound = req.bind(["search", mail])
    assert bound.covers("send_email")
    assert not bound.covers("search")


def test_unbound_coverage_respects_include_when_exclude_is_a_class():
    req = AskPermissionRequirement(include=["send_email"], exclude=[MailTool])
    assert not req.covers("search")


def test_unknown_included_tool_fails_when_bound():
    req = AskPermissionRequirement(include=["telepathy"], name="ask")
    with pytest.raises(PolicyError) as info:
        Reasoner(TOOLS, [req])
    assert "telepathy" in str(info.value)
    assert "include" in str(info.value)


def test_unknown_excluded_tool_fails_when_bound():
    req = AskPermissionRequirement(exclude=["telepathy"], name="ask")
    with pytest.raises(PolicyError) as info:
        Reasoner(TOOLS, [req])
    assert "telepathy" in str(info.value)
    assert "exclude" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "parameter", "value"),
    [
        ({"handler": 3}, "handler", "`3`"),
        ({"remember_choices": "yes"}, "remember_choices", "`'yes'`"),
        ({"hide_disallowed": 1}, "hide_disallowed", "`1`"),
        ({"always_allow": None}, "always_allow", "`None`"),
        ({"timeout": 0}, "timeout", "`0`"),
        ({"timeout": -1.5}, "timeout", "`-1.5`"),
        ({"timeout": True}, "timeout", "`True`"),
        ({"timeout": "1"}, "timeout", "`'1'`"),
        ({"priority": 0}, "priority", "`0`"),
    ],
)
def test_invalid_parameters_name_parameter_and_value(kwargs, parameter, value):
    with pytest.raises(PolicyError) as info:
        AskPermissionRequirement(**kwargs)
    assert parameter in str(info.value)
    assert value in str(info.value)


def test_default_priority_and_name():
    req = AskPermissionRequirement()
    assert req.priority == 10
    assert req.name == "ask-permission"


# -- asking ------------------------------------------------------------------------------------


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

    assert ask(AskPermissionRequirement(handler=handler, timeout=5), "search") is True


def test_a_slow_sync_handler_times_out_as_a_denial():
    def handler(tool, arguments):
        time.sleep(0.2)
        return True

    req = AskPermissionRequirement(handler=handler, timeout=0.05)
    assert ask(req, "search") is False


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


def test_without_remember_choices_no_rules_even_unbound():
    req = AskPermissionRequirement(handler=Recorder())
    assert tuple(req.run(RunState.from_trace([("search", "denied")]))) == ()


# -- remember_choices --------------------------------------------------------------------------


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


def test_remembered_refusal_and_approval_become_rules():
    req = AskPermissionRequirement(remember_choices=True, handler=Recorder()).bind(TOOLS)
    state = RunState.from_trace([("send_email", "denied"), ("search", "error"), "send_email"])
    out = tuple(req.run(state))
    assert [fields(r) for r in out] == [
        ("search", True, False, False, False),
        ("send_email", False, False, False, False),
    ]
    refusal = out[1]
    assert refusal.reason is not None
    assert "send_email" in refusal.reason


def test_hide_disallowed_hides_remembered_refusals():
    req = AskPermissionRequirement(
        remember_choices=True, hide_disallowed=True, handler=Recorder()
    ).bind(TOOLS)
    out = tuple(req.run(RunState.from_trace([("send_email", "denied")])))
    assert [fields(r) for r in out] == [("send_email", False, True, False, False)]
    p = Reasoner(TOOLS, [req]).decide(RunState.from_trace([("send_email", "denied")]))
    assert p.hidden == ("send_email",)
    assert p.allowed == ("search", "think", FINAL_ANSWER)


def test_remembered_refusal_in_the_pass_without_hiding():
    req = AskPermissionRequirement(remember_choices=True, handler=Recorder())
    r = Reasoner(TOOLS, [req])
    p = r.decide(RunState.from_trace([("send_email", "denied")]))
    assert p.allowed == ("search", "think", FINAL_ANSWER)
    assert p.hidden == ()
    assert "send_email" in p.reasons
    p = r.decide(RunState.from_trace([("send_email", "error")]))
    assert p.allowed == ("search", "send_email", "think", FINAL_ANSWER)


def test_uncovered_tools_give_no_remembered_rules():
    req = AskPermissionRequirement(include="send_email", remember_choices=True).bind(TOOLS)
    assert tuple(req.run(RunState.from_trace([("search", "denied")]))) == ()
    assert req.remembered("search", RunState.from_trace([("search", "denied")])) is None


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


def test_bound_copy_keeps_the_handler_and_flags():
    handler = Recorder()
    req = AskPermissionRequirement(
        handler=handler, remember_choices=True, hide_disallowed=True, timeout=3, priority=4
    )
    bound = req.bind(TOOLS)
    assert bound.handler is handler
    assert (bound.remember_choices, bound.hide_disallowed, bound.timeout, bound.priority) == (
        True,
        True,
        3,
        4,
    )
    assert bound.name == req.name


def test_unbound_default_include_with_remember_needs_binding_for_rules():
    req = AskPermissionRequirement(remember_choices=True, handler=Recorder())
    with pytest.raises(PolicyError, match="bind"):
        req.run(RunState())


def test_a_non_remembering_monitor_emits_nothing():
    m = AskPermissionRequirement(include=["search"], handler=Recorder()).bind(TOOLS).monitor()
    assert tuple(m.emit(m.initial())) == ()
    assert tuple(m.emit(m.advance(m.initial(), "search", "denied"))) == ()
