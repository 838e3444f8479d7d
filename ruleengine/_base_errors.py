"""The root of ruleengine's exception tree and the usage mistake: ``RuleEngineError`` and
``PolicyError``.

They sit below everything of ours: the result models (``_model.py``) raise ``PolicyError``,
and ``errors.py``, which needs those models for ``ConflictError.core``, sits above them.
``ruleengine.errors`` is their public home, and the name tracebacks and pickles give them.
"""

from __future__ import annotations

__all__ = ["PolicyError", "RuleEngineError"]


class RuleEngineError(Exception):
    """Base class of every error raised on purpose by ruleengine."""

    __module__ = "ruleengine.errors"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        """What happened, in one line."""
        self.hint = hint
        """What to do about it, when we can tell."""

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class PolicyError(RuleEngineError):
    """A usage mistake, raised at load or construction time (or when a rule is first seen)."""

    __module__ = "ruleengine.errors"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        parameter: str | None = None,
        location: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.parameter = parameter
        """The parameter at fault, when one is (policy files map it to a key)."""
        self.location = location
        """Where the mistake is in a policy file (``file:line``), when it comes from one."""
