"""agent.tools: ``Tool``, ``@tool`` from a signature and docstring, ``final_answer``."""

from __future__ import annotations

import threading
from typing import Literal

import anyio
import pytest
from pydantic import BaseModel

from agent import FinalAnswerTool, Tool, ToolArgumentsError, tool
from agent.tools import call_function, parse_docstring, render_output
from ruleengine import PolicyError


@tool
def search(query: str, limit: int = 5) -> str:
    """Search the web for pages.

    Args:
        query: what to look for,
            in a few words
        limit (int): how many results
    """
    return f"{query}:{limit}"


@tool(name="lookup", description="Look an order up.")
async def lookup_order(order_id: str, *, verbose: bool = False) -> dict[str, object]:
    """Ignored docstring."""
    return {"order_id": order_id, "verbose": verbose}


def test_name_description_and_model_come_from_the_function():
    assert search.name == "search"
    assert search.description == "Search the web for pages."
    schema = search.definition.parameters
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["query"]["description"] == "what to look for, in a few words"
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["limit"]["description"] == "how many results"
    assert schema["additionalProperties"] is False


def test_explicit_overrides_win():
    assert lookup_order.name == "lookup"
    assert lookup_order.description == "Look an order up."
    assert set(lookup_order.definition.parameters["properties"]) == {"order_id", "verbose"}


def test_sphinx_docstrings_are_read():
    summary, params = parse_docstring("Do it.\n\n:param x: the x\n    more\n:returns: y")
    assert summary == "Do it."
    assert params == {"x": "the x more"}


def test_validate_and_run_sync_and_async_tools():
    arguments = search.validate({"query": "z3"})
    assert anyio.run(search.run, arguments) == "z3:5"
    out = anyio.run(lookup_order.run, lookup_order.validate({"order_id": "7"}))
    assert out == {"order_id": "7", "verbose": False}


def test_sync_tools_run_in_a_worker_thread():
    seen = []

    @tool
    def where() -> str:
        """Where am I."""
        seen.append(threading.current_thread() is threading.main_thread())
        return "here"

    assert anyio.run(where.run, where.validate({})) == "here"
    assert seen == [False]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "`query`: field required"),
        ({"query": 3}, "`query`: input should be a valid string"),
        ({"query": "x", "extra": 1}, "`extra`: extra inputs are not permitted"),
        ({"query": "x", "limit": "many"}, "`limit`: input should be a valid integer"),
    ],
)
def test_invalid_arguments_say_what_is_wrong(arguments, expected):
    with pytest.raises(ToolArgumentsError) as info:
        search.validate(arguments)
    assert expected in info.value.message
    assert info.value.tool == "search"


def test_a_tool_with_an_explicit_model_and_function():
    class Input(BaseModel):
        a: int
        b: int

    add = Tool("add", "Add two numbers.", Input, lambda a, b: a + b)
    assert anyio.run(add.run, add.validate({"a": 1, "b": 2})) == 3


def test_a_subclass_may_override_run():
    class Echo(Tool):
        def __init__(self) -> None:
            super().__init__("echo", "Echo.")

        async def run(self, input: BaseModel) -> str:
            return "echo"

    echo = Echo()
    assert anyio.run(echo.run, echo.validate({})) == "echo"
    with pytest.raises(ToolArgumentsError):
        echo.validate({"x": 1})


def test_literal_and_nested_annotations_make_schemas():
    @tool
    def pick(color: Literal["red", "blue"], tags: list[str] | None = None) -> str:
        """Pick a color."""
        return color

    schema = pick.definition.parameters
    assert schema["properties"]["color"]["enum"] == ["red", "blue"]
    with pytest.raises(ToolArgumentsError):
        pick.validate({"color": "green"})


def test_final_answer_takes_a_response_or_the_expected_model():
    plain = FinalAnswerTool()
    assert plain.name == "final_answer"
    assert plain.definition.parameters["required"] == ["response"]
    assert anyio.run(plain.run, plain.validate({"response": "42"})) == "42"

    class Verdict(BaseModel):
        approved: bool
        amount: float

    typed = FinalAnswerTool(Verdict)
    answer = anyio.run(typed.run, typed.validate({"approved": True, "amount": 30}))
    assert answer == Verdict(approved=True, amount=30.0)
    assert set(typed.definition.parameters["properties"]) == {"approved", "amount"}


def test_render_output():
    class M(BaseModel):
        x: int

    assert render_output("text") == "text"
    assert render_output(M(x=1)) == '{"x":1}'
    assert render_output({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert render_output(None) == "(no output)"
    assert render_output({1, 2}) == "{1, 2}"
    assert render_output(2.5) == "2.5"


def test_call_function_awaits_what_a_sync_function_returns():
    async def inner() -> int:
        return 7

    assert anyio.run(call_function, lambda: inner(), {}) == 7


# -- bad input ---------------------------------------------------------------------------------


def bad_args(*args):
    return len(args)


def bad_kwargs(**kwargs):
    return len(kwargs)


def bad_positional(x, /):
    return x


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: tool(lambda x: x), "cannot name a tool"),
        (lambda: tool(bad_args), "`args`"),
        (lambda: tool(bad_kwargs), "`kwargs`"),
        (lambda: tool(bad_positional), "`x`"),
        (lambda: tool(name="final_answer")(bad_args), "built in"),
        (lambda: tool(name="has space")(lambda: 1), "not a valid tool name"),
        (lambda: tool(3), "needs a function"),  # type: ignore[call-overload]
        (lambda: tool(int), "needs a function"),
        (lambda: Tool("t", "d", dict, lambda: 1), "input_model"),  # type: ignore[arg-type]
        (lambda: Tool("t", "d", None, 3), "function"),  # type: ignore[arg-type]
        (lambda: Tool("t", "d"), "nothing to run"),
        (lambda: Tool("", "d", None, lambda: 1), "name"),
        (lambda: Tool("t", 3, None, lambda: 1), "description"),  # type: ignore[arg-type]
        (lambda: Tool("t", "d", None, lambda: 1, timeout=0), "timeout"),
    ],
)
def test_bad_tools_raise_policy_errors(make, fragment):
    with pytest.raises(PolicyError) as info:
        make()
    assert fragment in str(info.value)


def test_an_unresolvable_annotation_is_named():
    def f(x: Undefined) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(PolicyError, match="annotations"):
        tool(f)
