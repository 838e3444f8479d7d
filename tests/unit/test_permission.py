"""AskPermissionRequirement (SPEC §5, §11): coverage, parameters, and remembered choices read
from the run's steps. The asking itself lives in the agent: tests/unit/test_agent_permission.py."""

from __future__ import annotations

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


def test_the_default_handler_is_left_to_the_agent():
    assert AskPermissionRequirement().handler is None


def test_without_remember_choices_no_rules_even_unbound():
    req = AskPermissionRequirement(handler=Recorder())
    assert tuple(req.run(RunState.from_trace([("search", "denied")]))) == ()


# -- remember_choices --------------------------------------------------------------------------


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
