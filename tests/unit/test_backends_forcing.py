"""backends/_forcing.py: the ladder's rungs for each capability set, and reading replies."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from backends import (
    AssistantMessage,
    Capabilities,
    ChatRequest,
    ChatResponse,
    InvalidToolCall,
    ResponseFormat,
    ToolCall,
    ToolChoiceAllowed,
    ToolChoiceAuto,
    ToolChoiceRequired,
    ToolChoiceTool,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from backends._forcing import interpret, must_call, plan, union_schema


class Address(BaseModel):
    city: str


class Send(BaseModel):
    to: Address


class Place(BaseModel):
    code: int


class Visit(BaseModel):
    place: Place


SEARCH = ToolDefinition("search", "search the web", Send)
THINK = ToolDefinition("think", "think it over")
SAVE = ToolDefinition("save")
TOOLS = (SEARCH, THINK, SAVE)
FULL = Capabilities()
ONLY_AUTO = Capabilities(tool_choice=frozenset({"auto"}))


def request(choice: Any = "auto", **kwargs: Any) -> ChatRequest:
    return ChatRequest([UserMessage("go")], tools=TOOLS, tool_choice=choice, **kwargs)


def caps(*kinds: str, response_format: bool = True) -> Capabilities:
    return Capabilities(tool_choice=frozenset(kinds), response_format=response_format)  # type: ignore[arg-type]


def test_what_must_be_called() -> None:
    assert must_call(request("auto")) is None
    assert must_call(request("none")) is None
    assert must_call(request("think")) == ("think",)
    assert must_call(request("required")) == ("search", "think", "save")
    assert must_call(request(ToolChoiceAllowed(("think", "save"), "required"))) == ("think", "save")
    assert must_call(request(ToolChoiceAllowed(("think", "save")))) is None


def test_full_capabilities_send_the_request_as_asked() -> None:
    asked = request(ToolChoiceAllowed(("think", "save"), "required"), parallel_tool_calls=False)
    attempt = plan(asked, FULL)
    assert attempt.route == "native"
    assert attempt.wire == asked
    assert attempt.features == ("allowed", "parallel_tool_calls")


@pytest.mark.parametrize(
    ("choice", "capabilities", "tools", "sent"),
    [
        # an allowed subset becomes the subset alone
        (
            ToolChoiceAllowed(("think", "save")),
            caps("auto", "required", "tool"),
            ("think", "save"),
            ToolChoiceAuto(),
        ),
        (
            ToolChoiceAllowed(("think", "save"), "required"),
            caps("auto", "required"),
            ("think", "save"),
            ToolChoiceRequired(),
        ),
        (
            ToolChoiceAllowed(("save",), "required"),
            caps("auto", "tool"),
            ("save",),
            ToolChoiceTool("save"),
        ),
        (
            ToolChoiceAllowed(("save",), "required"),
            caps("auto", "required"),
            ("save",),
            ToolChoiceRequired(),
        ),
        # a named tool without named support: that tool alone, required
        ("think", caps("auto", "required"), ("think",), ToolChoiceRequired()),
        # required over one tool, with named support only
        (
            ToolChoiceAllowed(("think",), "required"),
            caps("auto", "tool"),
            ("think",),
            ToolChoiceTool("think"),
        ),
        # none without support: no tools at all
        ("none", caps("auto"), (), ToolChoiceAuto()),
    ],
)
def test_narrowing_keeps_the_meaning(
    choice: Any, capabilities: Capabilities, tools: tuple[str, ...], sent: Any
) -> None:
    attempt = plan(request(choice), capabilities)
    assert attempt.route == "native"
    assert tuple(t.name for t in attempt.wire.tools) == tools
    assert attempt.wire.tool_choice == sent


def test_a_forced_tool_falls_back_to_structured_output() -> None:
    attempt = plan(request("search"), ONLY_AUTO)
    assert attempt.route == "structured"
    assert attempt.wire.tools == ()
    assert attempt.wire.response_format == ResponseFormat("arguments", SEARCH.parameters)
    assert attempt.must_call == ("search",)
    assert attempt.features == ("response_format",)
    instruction = attempt.wire.messages[-1]
    assert isinstance(instruction, UserMessage)
    assert instruction.content.startswith(
        "go\n\nYou must now call the tool `search` (search the web)"
    )
    assert "schema" not in instruction.content


def test_required_falls_back_to_a_union_of_the_tools() -> None:
    attempt = plan(request("required"), ONLY_AUTO)
    assert attempt.route == "structured"
    schema = attempt.wire.response_format.schema  # type: ignore[union-attr]
    names = [variant["properties"]["name"]["const"] for variant in schema["anyOf"]]
    assert names == ["search", "think", "save"]
    assert "`search`, `think`, `save`" in attempt.wire.messages[-1].content  # type: ignore[union-attr]


def test_without_response_format_the_prompt_spells_the_schema() -> None:
    attempt = plan(request("search"), caps("auto", response_format=False))
    assert attempt.route == "prompt"
    assert attempt.wire.response_format is None
    assert attempt.features == ()
    text = attempt.wire.messages[-1].content  # type: ignore[union-attr]
    assert "matching this JSON schema" in text and '"city"' in text


def test_the_instruction_follows_a_tool_result_as_a_new_turn() -> None:
    call = ToolCall("c1", "think", {})
    history = [
        UserMessage("go"),
        AssistantMessage(tool_calls=[call]),
        ToolResultMessage("c1", "ok"),
    ]
    attempt = plan(ChatRequest(history, tools=TOOLS, tool_choice="save"), ONLY_AUTO)
    assert attempt.wire.messages[:3] == tuple(history)
    assert isinstance(attempt.wire.messages[3], UserMessage)


def test_a_text_format_without_support_is_asked_in_words() -> None:
    fmt = ResponseFormat("answer", {"type": "object", "properties": {"x": {"type": "integer"}}})
    attempt = plan(
        ChatRequest([UserMessage("go")], response_format=fmt), caps("auto", response_format=False)
    )
    assert attempt.route == "prompt"
    assert attempt.must_call is None
    assert attempt.wire.response_format is None
    assert '"x"' in attempt.wire.messages[-1].content  # type: ignore[union-attr]


def test_options_the_server_lacks_are_not_sent() -> None:
    asked = request("auto", parallel_tool_calls=True)
    attempt = plan(asked, Capabilities(parallel_tool_calls=False))
    assert attempt.wire.parallel_tool_calls is None
    assert attempt.features == ()


def test_union_schema_lifts_and_renames_definitions() -> None:
    clash = ToolDefinition("visit", input_model=Visit)
    other = ToolDefinition("send", input_model=Send)
    # Both models define nothing called alike, so no renames here…
    schema = union_schema([other, clash])
    assert set(schema["$defs"]) == {"Address", "Place"}
    # …but two different models under one name are kept apart.

    class Address(BaseModel):  # a different Address
        street: str

    class Letter(BaseModel):
        to: Address

    letter = ToolDefinition("letter", input_model=Letter)
    schema = union_schema([other, letter])
    assert set(schema["$defs"]) == {"Address", "letter__Address"}
    letter_args = schema["anyOf"][1]["properties"]["arguments"]
    assert letter_args["properties"]["to"]["$ref"] == "#/$defs/letter__Address"
    send_args = schema["anyOf"][0]["properties"]["arguments"]
    assert send_args["properties"]["to"]["$ref"] == "#/$defs/Address"


# -- reading replies -------------------------------------------------------------------------


def test_a_native_reply_is_the_models_own_whatever_it_chose() -> None:
    attempt = plan(request("think"), FULL)
    called = ChatResponse(tool_calls=(ToolCall("c1", "think", {}),))
    assert interpret(attempt, called) is called
    broken = ChatResponse(tool_calls=(InvalidToolCall("c1", "think", "{", "bad"),))
    assert interpret(attempt, broken) is broken  # the call was made; the agent reports the JSON
    # Another tool, or text: the model's choice, for the gate (or the text rescue) to judge.
    text = ChatResponse(text="I'd rather not")
    assert interpret(attempt, text) is text
    other = ChatResponse(tool_calls=(ToolCall("c1", "save", {}),))
    assert interpret(attempt, other) is other
    refusal = ChatResponse(refusal="I can't")
    assert interpret(attempt, refusal) is refusal


def test_a_structured_reply_becomes_the_call() -> None:
    attempt = plan(request("search"), ONLY_AUTO)
    got = interpret(attempt, ChatResponse(text='{"to": {"city": "Oslo"}}'))
    assert got is not None and got.route == "structured" and got.text is None
    (call,) = got.tool_calls
    assert isinstance(call, ToolCall)
    assert (call.name, call.arguments) == ("search", {"to": {"city": "Oslo"}})
    wrapped = interpret(attempt, ChatResponse(text='{"name": "search", "arguments": {"to": {}}}'))
    assert wrapped is not None and wrapped.tool_calls[0].name == "search"
    # A call of another tool is the call the model made: the gate refuses it.
    other = interpret(attempt, ChatResponse(text='{"name": "save", "arguments": {}}'))
    assert [(c.name, c.arguments) for c in other.tool_calls] == [("save", {})]  # type: ignore[union-attr]
    # Text that spells no call stays text (the agent rescues it, or asks again).
    for said in ("", "no idea"):
        reply = ChatResponse(text=said)
        assert interpret(attempt, reply) is reply


def test_a_union_reply_becomes_the_call_it_names() -> None:
    attempt = plan(
        request(ToolChoiceAllowed(("think", "save"), "required")),
        caps("auto", response_format=False),
    )
    got = interpret(attempt, ChatResponse(text='Sure: {"name": "save", "arguments": {}} done'))
    assert got is not None and got.tool_calls[0].name == "save" and got.route == "prompt"
    outside = interpret(attempt, ChatResponse(text='{"name": "search", "arguments": {}}'))
    assert [c.name for c in outside.tool_calls] == ["search"]  # the gate's to refuse
    for said in ('{"save": {}}', '{"name": "", "arguments": {}}', '{"name": 3, "arguments": {}}'):
        reply = ChatResponse(text=said)  # no tool named, and several could be meant
        assert interpret(attempt, reply) is reply
    native_call = ChatResponse(tool_calls=(ToolCall("c1", "think", {}),))
    assert interpret(attempt, native_call) is native_call
