"""Run-time failures of the agent loop, under ``ruleengine.AgentError``.

    AgentError                   (ruleengine.errors) run-time failures of the agent loop
    ├── BackendError             (backends.errors) a chat model call failed
    ├── MaxIterationsError       the run did not finish within ``max_iterations`` model rounds
    ├── RetryLimitError          the model kept answering unusably: a retry budget ran out
    ├── ListenerError            a blocking event listener raised (outside a tool's start)
    └── ToolArgumentsError       the model's arguments fail a tool's input model (a denied step)

A ``ConflictError`` (the requirements contradict each other at some step) ends a run as it is:
it is not wrapped, so its ``core`` is read as everywhere else. Usage mistakes (a bad argument
to a constructor or to ``run``) raise ``ruleengine.PolicyError``.
"""

from __future__ import annotations

from ruleengine.errors import AgentError

__all__ = ["ListenerError", "MaxIterationsError", "RetryLimitError", "ToolArgumentsError"]


class MaxIterationsError(AgentError):
    """The run made ``max_iterations`` model rounds without running ``final_answer``."""

    def __init__(self, message: str, *, max_iterations: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.max_iterations = max_iterations
        """The limit that was reached."""


class RetryLimitError(AgentError):
    """A retry budget ran out: the model kept replying with nothing the run could use.

    ``scope`` is ``"step"`` (``max_retries_per_step``) or ``"run"`` (``total_max_retries``);
    ``last`` is why the last reply could not be used.
    """

    def __init__(self, message: str, *, scope: str, last: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.scope = scope
        """Which budget ran out: ``"step"`` or ``"run"``."""
        self.last = last
        """Why the last unusable reply could not be used."""


class ListenerError(AgentError):
    """A blocking listener raised; the original exception is ``__cause__``."""


class ToolArgumentsError(AgentError):
    """The model's arguments do not validate against the tool's input model.

    The gate turns it into a ``denied`` step whose message tells the model what was wrong.
    """

    def __init__(self, message: str, *, tool: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.tool = tool
        """The tool whose arguments were invalid."""
