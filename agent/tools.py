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
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, overload

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from agent.errors import ToolArgumentsError
from agent.run_context import context_parameter, current_context
from backends import ToolDefinition
from ruleengine import FINAL_ANSWER, PolicyError, validate

if TYPE_CHECKING:
    from docstring_parser import Docstring
    from docstring_parser.google import GoogleParser

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
    call; a call that runs out is an ``error`` step. ``tags`` let requirements name groups of
    tools (``tags("read")``). A function whose first parameter is annotated ``RunContext[T]``
    gets the run's context there (``agent/run_context.py``); it is not an argument.
    """

    def __init__(
        self,
        name: str,
        description: str = "",
        input_model: type[BaseModel] | None = None,
        function: Callable[..., Any] | None = None,
        *,
        timeout: float | None = None,
        tags: str | Sequence[str] | None = None,
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
        self.tags: tuple[str, ...] = validate.tag_names(tags, owner=owner)
        """The tool's tags: requirements name every tool carrying one (``tags("read")``)."""
        self.context_parameter = (
            None if function is None else context_parameter(function, owner=owner)
        )
        """The function's first parameter when it asks for the ``RunContext``, else ``None``."""

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
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = current_context(self.name)
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
    tags: str | Sequence[str] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    timeout: float | None = None,
    tags: str | Sequence[str] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` of a function: ``@tool`` or ``@tool(name=..., description=...)``.

    The name is the function's, the description its docstring's text before its first
    section, and the input model is built from the signature: one field per parameter, with
    its annotation, its default, and its description from the docstring (Google ``Args:``,
    NumPy ``Parameters``, or Sphinx ``:param x:``; see ``parse_docstring``). A pydantic
    ``Field(description=...)`` in the signature wins over the docstring's text. Every one of
    them may be given explicitly instead.
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
        return Tool(tool_name, text, model, fn, timeout=timeout, tags=tags)

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
    context = context_parameter(function, owner=owner)  # not an argument: the run gives it
    for param in signature.parameters.values():
        if param.name == context:
            continue
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
        fields[param.name] = described_field(annotation, default, about)
    unknown = [name for name in descriptions or {} if name not in signature.parameters]
    if unknown:
        warn_documented_but_absent(function, owner, unknown)
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


def described_field(annotation: Any, default: Any, about: str | None) -> tuple[Any, Any]:
    """A parameter's field, ``(annotation, default)``, described by the docstring's ``about``.

    A description declared in the signature, ``Annotated[T, Field(description=...)]`` or
    ``x: T = Field(description=...)``, wins: the docstring's text is then left out. A
    ``Field(...)`` default is the field itself (its default, factory and constraints).
    """
    if about and _declared_description(annotation, default) is None:
        annotation = Annotated[annotation, Field(description=about)]
    return annotation, default


def _declared_description(annotation: Any, default: Any) -> str | None:
    try:
        return FieldInfo.from_annotated_attribute(annotation, default).description
    except Exception:  # an annotation pydantic refuses: `create_model` says why, later
        return None


def warn_documented_but_absent(
    function: Callable[..., Any], owner: str, names: Sequence[str]
) -> None:
    """Warn that the docstring documents ``names``, which are not parameters of ``function``.

    Likely a typo or a renamed parameter; the text is left out of the schema. The warning
    points at the function's definition when it has one.
    """
    listed = ", ".join(f"`{name}`" for name in names)
    message = (
        f"{owner}: the docstring documents {listed}, which the function does not take;"
        " the text is left out (hint: rename the docstring entry or the parameter)"
    )
    code = getattr(function, "__code__", None)
    if code is None:
        warnings.warn(message, UserWarning, stacklevel=3)
        return
    module = getattr(function, "__module__", None)
    warnings.warn_explicit(
        message,
        UserWarning,
        code.co_filename,
        code.co_firstlineno,
        module=module if isinstance(module, str) else None,
    )


# -- docstrings --------------------------------------------------------------------------------

# Google-style titles beyond docstring_parser's own: the other parameter sections, and the
# titles that end the description as every section does (Napoleon's list).
_GOOGLE_PARAMETER_TITLES = ("Keyword Args", "Keyword Arguments", "Other Parameters")
_GOOGLE_OTHER_TITLES = (
    "Attention",
    "Caution",
    "Danger",
    "Error",
    "Hint",
    "Important",
    "Methods",
    "Note",
    "Notes",
    "References",
    "Return",
    "See Also",
    "Tip",
    "Todo",
    "Warning",
    "Warnings",
    "Warns",
    "Yield",
)


@functools.cache
def _google_parser() -> GoogleParser:
    from docstring_parser.google import DEFAULT_SECTIONS, GoogleParser, Section, SectionType

    sections = [
        *DEFAULT_SECTIONS,
        *(Section(title, "param", SectionType.MULTIPLE) for title in _GOOGLE_PARAMETER_TITLES),
        *(
            Section(title, title.lower().replace(" ", "_"), SectionType.SINGULAR)
            for title in _GOOGLE_OTHER_TITLES
        ),
    ]
    return GoogleParser(sections)


def _readings(doc: str) -> list[Docstring]:
    """The docstring read as Google, NumPy and Sphinx style, in that order; a style whose
    parser refuses the text is left out."""
    from docstring_parser import DocstringStyle, parse

    readers: list[Callable[[], Docstring]] = [
        # The leading newline keeps a docstring that opens with its `Args:` title in one
        # piece: the parser dedents every line but the first, which would cut the entries off.
        lambda: _google_parser().parse("\n" + doc),
        lambda: parse(doc, DocstringStyle.NUMPYDOC),
        lambda: parse(doc, DocstringStyle.REST),
    ]
    readings = []
    for read in readers:
        try:
            readings.append(read())
        except Exception:  # ParseError, or anything else: this style does not read the text
            continue
    return readings


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's description and per-parameter texts, in Google, NumPy or Sphinx style.

    Read with ``docstring_parser``. The description is the text before the first section
    (the summary line and the paragraphs after it): no section is part of it, neither the
    parameters, returns and raises nor notes and examples. Each parameter's text is one line
    (its lines joined by spaces); names documented together (NumPy's ``x, y : int``) share
    it, and leading ``*`` are dropped. The docstring is read in each style and the reading
    that finds the most parameters wins, then the one with the most sections, then Google,
    NumPy and Sphinx in that order; a docstring no style reads is all description. Names
    the function does not take are the caller's to check (``@tool`` warns about them).
    """
    readings = _readings(doc)
    if not readings:
        return _tidy(doc), {}
    # `max` keeps the first of equals: the order of `_readings` breaks ties.
    best = max(readings, key=lambda reading: (len(reading.params), len(reading.meta)))
    gap = "\n\n" if best.blank_after_short_description else "\n"
    parts = (best.short_description, best.long_description)
    text = _tidy(gap.join(part for part in parts if part))
    params: dict[str, str] = {}
    for param in best.params:
        about = " ".join((param.description or "").split())
        for name in param.arg_name.split(","):
            name = name.strip().lstrip("*")
            if name and about:
                params[name] = about
    return text, params


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text.strip())
