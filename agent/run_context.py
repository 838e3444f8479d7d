"""``RunContext``: what a tool may ask to know of the run it runs in — the run's ``deps``.

A tool function whose first parameter is annotated ``RunContext[T]`` receives one with every
call: the ``deps`` given to ``agent.run(prompt, deps=...)`` (a database handle, the user's
id, an HTTP client: whatever the tools need and the model must not see), the run's id and
path, its prompt, the run state the call was admitted under, and the call itself. That
parameter is not part of the tool's input model: the model never sees it, nor fills it.

The loop sets the context while a tool runs (``entered``); ``Tool.run`` reads it
(``current_context``), and so may a ``Tool`` subclass, with ``RunContext.current()``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ruleengine import PolicyError, RunState

__all__ = ["RunContext", "context_parameter", "current_context", "entered"]

DepsT = TypeVar("DepsT")

_ANNOTATION = re.compile(r"(?:\w+\.)*RunContext(?:\[.*\])?")


@dataclass(frozen=True, slots=True)
class RunContext(Generic[DepsT]):
    """The run a tool call runs in, for tools that ask for it (a first parameter annotated
    ``RunContext[T]``)."""

    deps: DepsT
    """What ``run(prompt, deps=...)`` was given (``None`` when nothing was)."""
    run_id: str
    """The run's id, as its events carry it."""
    path: tuple[str, ...]
    """The agents the run is nested in, outermost first, this run's agent last."""
    prompt: str
    """The run's prompt."""
    state: RunState
    """The run state the call was admitted under (the steps before it)."""
    iteration: int
    """The model round the call was made in (1 for the first)."""
    tool: str
    """The tool being called."""
    call_id: str
    """The id of the call, as its events carry it."""

    @staticmethod
    def current() -> RunContext[Any]:
        """The context of the tool call running now (for ``Tool`` subclasses); a
        ``PolicyError`` outside a tool call of a run."""
        found = _CURRENT.get()
        if found is None:
            raise PolicyError(
                "RunContext.current(): no tool call of an agent run is running here",
                hint="read the context from inside a tool that an agent runs",
            )
        return found


_CURRENT: ContextVar[RunContext[Any] | None] = ContextVar("agent_run_context", default=None)


@contextlib.contextmanager
def entered(context: RunContext[Any]) -> Iterator[None]:
    """``context`` is the current one while the block runs (the loop, around a tool call)."""
    token = _CURRENT.set(context)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_context(tool: str) -> RunContext[Any]:
    """The context of the call of ``tool`` running now; a ``PolicyError`` naming the tool
    when it is run outside an agent run."""
    found = _CURRENT.get()
    if found is None:
        raise PolicyError(
            f"tool `{tool}` takes a `RunContext`, so it runs only as a tool of an agent run",
            hint="let an agent call it (`agent.run(prompt, deps=...)`), or call its function"
            " yourself with a `RunContext`",
        )
    return found


def context_parameter(function: Callable[..., Any], *, owner: str) -> str | None:
    """The name of ``function``'s first parameter when it is annotated ``RunContext`` (or
    ``RunContext[T]``), else ``None``. A ``RunContext`` parameter that is not the first, or
    that cannot be passed by name, is a ``PolicyError`` (``owner`` names the tool)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    hints = _hints(function)
    found = [p for p in params if _is_context(hints.get(p.name, p.annotation))]
    if not found:
        return None
    first = found[0]
    if first is not params[0] or len(found) > 1:
        bad = found[-1] if first is params[0] else first
        raise PolicyError(
            f"{owner}: parameter `{bad.name}` is a `RunContext`, but only the first parameter"
            " may be",
            hint="put the `RunContext` parameter first, once",
        )
    if first.kind not in (first.POSITIONAL_OR_KEYWORD, first.KEYWORD_ONLY):
        raise PolicyError(
            f"{owner}: the `RunContext` parameter `{first.name}` cannot be passed by name",
            hint="make it a plain parameter (not `*args`, `**kwargs`, or before `/`)",
        )
    return first.name


def _is_context(annotation: object) -> bool:
    if annotation is RunContext or typing.get_origin(annotation) is RunContext:
        return True
    # An annotation that could not be resolved stays text: read its name.
    return isinstance(annotation, str) and _ANNOTATION.fullmatch(annotation.strip()) is not None


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    target: Any = function
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(target, "__call__", target)  # noqa: B004
    try:
        return typing.get_type_hints(target)
    except Exception:
        return {}
