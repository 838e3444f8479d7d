"""Tools: ``Tool``, the ``@tool`` decorator, and the built-in ``final_answer`` tool.

A tool is a name, a description, a pydantic input model and a callable, sync or async. The
model's arguments are validated against the input model before anything runs (the gate does
it, ``Tool.validate``); the callable then gets the validated fields as keyword arguments.
Sync callables run in a worker thread (``anyio.to_thread``), so a slow tool never stalls the
other runs of the event loop: whether to await or to hand off is decided in one place,
``call_function``.

``final_answer`` is a tool like any other: the run stops exactly when it runs. Its input is
``{"response": str}``, or the ``expected_output`` model's fields when the answer is typed.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, overload

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agent.errors import ToolArgumentsError
from backends import ToolDefinition
from ruleengine import FINAL_ANSWER, PolicyError, validate

__all__ = [
    "FINAL_ANSWER",
    "FinalAnswerInput",
    "FinalAnswerTool",
    "Tool",
    "call_function",
    "render_output",
    "tool",
]

_NO_ARGUMENTS_CONFIG = ConfigDict(extra="forbid")


class NoArguments(BaseModel):
    """The input model of a tool that takes no arguments."""

    model_config = _NO_ARGUMENTS_CONFIG


class Tool:
    """A tool the model may call: name, description, input model, and what runs.

    ``function`` receives the validated input's fields as keyword arguments and may be sync
    or async. Subclasses may instead override ``run(input)``. ``timeout`` (seconds) bounds one
    call; a call that runs out is an ``error`` step.
    """

    def __init__(
        self,
        name: str,
        description: str = "",
        input_model: type[BaseModel] | None = None,
        function: Callable[..., Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        owner = f"tool `{name}`" if isinstance(name, str) and name else "tool"
        validate.text(name, name="name", owner="tool")
        validate.text(description, name="description", owner=owner, empty=True)
        if input_model is not None and not (
            isinstance(input_model, type) and issubclass(input_model, BaseModel)
        ):
            raise PolicyError(
                f"{owner}: input_model=`{input_model!r}` is not a pydantic model class",
                hint="pass a subclass of `pydantic.BaseModel`, or nothing for no arguments",
                parameter="input_model",
            )
        if function is not None and not callable(function):
            raise PolicyError(
                f"{owner}: function=`{function!r}` is not callable", parameter="function"
            )
        if function is None and type(self).run is Tool.run:
            raise PolicyError(
                f"{owner}: nothing to run",
                hint="pass `function=`, or subclass `Tool` and override `run`",
                parameter="function",
            )
        self.timeout = (
            None if timeout is None else validate.number(timeout, name="timeout", owner=owner)
        )
        """The longest a call may take, in seconds (``None``: no limit)."""
        self.name = name
        """The tool's name, as the model calls it."""
        self.description = description
        """What the tool does, for the model."""
        self.input_model: type[BaseModel] = input_model or NoArguments
        """The pydantic model the arguments must validate against."""
        self.function = function
        """The callable that runs (``None`` when a subclass overrides ``run``)."""
        # Builds the JSON schema once and checks the name (1-64 letters, digits, `_`, `-`).
        self.definition = ToolDefinition(name, description, self.input_model)
        """The tool as the model sees it."""

    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        """The arguments validated against the input model; ``ToolArgumentsError`` if not."""
        try:
            return self.input_model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolArgumentsError(
                f"invalid arguments for `{self.name}`: {describe_validation(exc)}",
                tool=self.name,
            ) from None

    async def run(self, input: BaseModel) -> Any:
        """Run the tool on validated input (the function gets its fields as keywords)."""
        # INVARIANT: __init__ refuses a Tool with neither a function nor an overridden run
        assert self.function is not None
        kwargs = {name: getattr(input, name) for name in type(input).model_fields}
        return await call_function(self.function, kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


class FinalAnswerInput(BaseModel):
    """The default input of ``final_answer``."""

    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="The answer for the user, complete and self-contained.")
    """The answer for the user."""


class FinalAnswerTool(Tool):
    """``final_answer``: gives the answer and ends the run.

    Its input is ``{"response": str}`` (the answer is that text), or ``expected_output``'s
    fields (the answer is the validated model).
    """

    def __init__(self, expected_output: type[BaseModel] | None = None) -> None:
        typed = expected_output is not None
        description = (
            "Give the final answer to the user and finish. Call it once you have everything"
            " you need; it is the only way to finish."
        )
        if typed:
            description += " Its arguments are the answer, as their schema describes."
        super().__init__(FINAL_ANSWER, description, expected_output or FinalAnswerInput)
        self.expected_output = expected_output
        """The typed answer's model, or ``None`` for a text answer."""

    async def run(self, input: BaseModel) -> Any:
        """The answer: the validated model, or the response text."""
        if self.expected_output is not None:
            return input
        assert isinstance(input, FinalAnswerInput)
        return input.response


async def call_function(function: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """Call ``function(**kwargs)``: awaited if async, in a worker thread if sync.

    The one place where sync-or-async is resolved for tools. A sync function that returns an
    awaitable has it awaited too.
    """
    if is_async_callable(function):
        return await function(**kwargs)
    result = await anyio.to_thread.run_sync(
        functools.partial(function, **kwargs), abandon_on_cancel=True
    )
    if inspect.isawaitable(result):
        return await result
    return result


def is_async_callable(function: object) -> bool:
    """Whether calling ``function`` gives a coroutine (functions, partials, callable objects)."""
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def render_output(output: object) -> str:
    """A tool's output as the text of its tool message."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    if output is None:
        return "(no output)"
    if isinstance(output, dict | list | tuple | int | float | bool):
        try:
            return json.dumps(output, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            pass
    return str(output)


def describe_validation(exc: ValidationError) -> str:
    """A pydantic error as one line: ``query``: field required; ``limit``: …"""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "arguments"
        message = str(error.get("msg", "invalid")).lower()
        parts.append(f"`{where}`: {message}")
    more = exc.error_count() - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


# -- @tool -------------------------------------------------------------------------------------


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` of a function: ``@tool`` or ``@tool(name=..., description=...)``.

    The name is the function's, the description its docstring's text before an ``Args:``
    section, and the input model is built from the signature: one field per parameter, with
    its annotation, its default, and its description from the docstring (Google ``Args:``,
    or Sphinx ``:param x:``). Every one of them may be given explicitly instead.
    """

    def make(fn: Callable[..., Any]) -> Tool:
        if not callable(fn) or isinstance(fn, type):
            raise PolicyError(f"@tool needs a function: got `{fn!r}`")
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if name is None and not (isinstance(tool_name, str) and tool_name.isidentifier()):
            raise PolicyError(
                f"@tool: cannot name a tool after `{fn!r}`", hint="pass `@tool(name=...)`"
            )
        if tool_name == FINAL_ANSWER:
            raise PolicyError(
                f"@tool: `{FINAL_ANSWER}` is built in",
                hint="use `expected_output=` on the agent to shape the final answer",
            )
        summary, params = parse_docstring(inspect.getdoc(fn) or "")
        model = input_model or input_model_from_signature(fn, tool_name, params)
        text = description if description is not None else summary
        return Tool(tool_name, text, model, fn, timeout=timeout)

    if function is not None:
        return make(function)
    return make


def input_model_from_signature(
    function: Callable[..., Any], tool_name: str, descriptions: Mapping[str, str] | None = None
) -> type[BaseModel]:
    """A pydantic model with one field per parameter of ``function``."""
    owner = f"tool `{tool_name}`"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"{owner}: cannot read the signature: {exc}") from None
    try:
        hints = _type_hints(function)
    except Exception as exc:
        raise PolicyError(
            f"{owner}: cannot resolve the annotations: {type(exc).__name__}: {exc}",
            hint="import the annotated types at module level",
        ) from None
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise PolicyError(
                f"{owner}: parameter `{param.name}` cannot be filled from named arguments",
                hint="tools take plain named parameters (no `*args`, `**kwargs` or `/`)",
            )
        if param.name.startswith("_"):
            raise PolicyError(
                f"{owner}: parameter `{param.name}` starts with `_`",
                hint="pydantic cannot make a field of it: rename the parameter",
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        about = (descriptions or {}).get(param.name)
        fields[param.name] = (annotation, Field(default, description=about))
    model_name = "".join(part.capitalize() for part in re.split(r"[_\-]", tool_name)) + "Input"
    try:
        model: type[BaseModel] = create_model(
            model_name, __config__=ConfigDict(extra="forbid"), **fields
        )
        model.model_json_schema()
    except Exception as exc:
        raise PolicyError(
            f"{owner}: cannot build an input model from the signature: {exc}",
            hint="annotate every parameter with a JSON-serialisable type",
        ) from None
    return model


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    import typing

    target = function
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(target, "__call__", target)  # noqa: B004
    hints = typing.get_type_hints(target, include_extras=True)
    hints.pop("return", None)
    return hints


_SECTION = re.compile(r"^(\w+(?: \w+)?)\s*:$")
_ARGS_SECTIONS = frozenset({"args", "arguments", "parameters", "params", "keyword args"})
_SPHINX = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_GOOGLE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (the text before any section) and per-parameter descriptions.

    Reads Google style (an ``Args:`` section of ``name: text`` or ``name (type): text``
    entries, continued on deeper-indented lines) and Sphinx style (``:param name: text``).
    """
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None  # None: still the description
    entry_indent: int | None = None
    current: str | None = None
    for raw in doc.splitlines():
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        sphinx = _SPHINX.match(line)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            continue
        heading = _SECTION.match(line)
        if heading and indent == 0:
            section = "args" if heading.group(1).lower() in _ARGS_SECTIONS else "other"
            entry_indent, current = None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if not line:
            continue
        if section == "args":
            entry_indent = indent if entry_indent is None else entry_indent
            google = _GOOGLE.match(line)
            if indent <= entry_indent and google:
                current = google.group(1)
                params[current] = google.group(2).strip()
                continue
        elif section == "sphinx" and line.startswith(":"):
            current = None
        elif section != "sphinx":
            continue
        if current is not None:
            params[current] = f"{params[current]} {line}".strip()
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(summary).strip())
    return text, {k: v for k, v in params.items() if v}
