"""The errors a chat model raises at run time, all under ``ruleengine.AgentError``.

    AgentError                      (ruleengine.errors) run-time failures of the agent loop
    └── BackendError                a chat model call failed; an SDK exception is ``__cause__``
        ├── BackendConnectionError  the server could not be reached, after every retry
        │   └── BackendTimeoutError no answer within the timeout, after every retry
        ├── BackendStatusError      the server answered an HTTP error status (``status_code``)
        ├── BadResponseError        the server's reply is malformed: not JSON, no choices, …
        ├── CapabilityError         the server could not do what was asked (force a tool, …)
        ├── ArgumentsError          tool-call arguments are not a JSON object, even repaired
        └── ScriptExhaustedError    a ``ScriptedChatModel`` has no reply left for a request

Usage mistakes (a bad argument, a ``tool_choice`` naming a tool that is not offered) are not
run-time failures: they raise ``ruleengine.PolicyError`` when the object is built.

Messages follow the shape of every ruleengine error: lowercase, one line, user input in
backticks, what to do in ``hint``. No message ever carries an API key.
"""

from __future__ import annotations

from ruleengine.errors import AgentError

__all__ = [
    "ArgumentsError",
    "BackendConnectionError",
    "BackendError",
    "BackendStatusError",
    "BackendTimeoutError",
    "BadResponseError",
    "CapabilityError",
    "ScriptExhaustedError",
]


class BackendError(AgentError):
    """A chat model call failed; when an SDK raised, its exception is ``__cause__``."""


class BackendConnectionError(BackendError):
    """The server could not be reached (refused, reset, DNS), after every retry."""


class BackendTimeoutError(BackendConnectionError):
    """The server did not answer within the timeout, after every retry."""


class BackendStatusError(BackendError):
    """The server answered with an HTTP error status (after every retry, for 429 and 5xx)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        retry_after: float | None = None,
        parameter: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status_code = status_code
        """The HTTP status the server answered, e.g. 400, 429 or 503."""
        self.retry_after = retry_after
        """The seconds the server asked to wait (``Retry-After``), when it said."""
        self.parameter = parameter
        """The request parameter the server's error names (``tool_choice``,
        ``response_format``, …: its ``param`` field, or one its message or code names), when
        it names one. Only such an error teaches the forcing layer that a feature is lacking."""


class BadResponseError(BackendError):
    """The server answered 200 with something that is not a usable chat completion."""


class CapabilityError(BackendError):
    """The server could not do what the request asked, even through every fallback."""


class ArgumentsError(BackendError):
    """Tool-call arguments are not one JSON object, even after the bounded repair.

    The agent shows ``message`` to the model so that it can send the call again.
    """


class ScriptExhaustedError(BackendError):
    """A ``ScriptedChatModel`` was asked for more replies than its script holds."""
