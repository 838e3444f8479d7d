"""The exception tree of ruleengine.

    RuleEngineError             every error this library raises on purpose
    ├── PolicyError             a usage mistake: bad file, bad parameter, unknown tool,
    │   │                       a requirement that returns something that is not a rule
    ├── RequirementError        a requirement's own code raised (the original is ``__cause__``)
    ├── ConflictError           the requirements contradict each other in a state; ``.core``
    │                           holds the minimal list of clashing rules (``CoreEntry``)
    ├── SolverError             Z3 answered *unknown* (resource limit, timeout): we fail closed
    └── AgentError              run-time failures of the agent loop (defined in ``agent``)

Messages follow one shape: lowercase start, one line, user input in backticks, parts joined
by colons; what to do about it goes in ``hint``.

``RuleEngineError`` and ``PolicyError`` are defined in ``_base_errors.py``, below the result
models that raise ``PolicyError`` (``_model.py``), since ``ConflictError`` holds one of those
models (``CoreEntry``); this module is their public home.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ruleengine._base_errors import PolicyError, RuleEngineError

if TYPE_CHECKING:
    from ruleengine.passes import CoreEntry

__all__ = [
    "AgentError",
    "ConflictError",
    "PolicyError",
    "RequirementError",
    "RuleEngineError",
    "SolverError",
]


class RequirementError(RuleEngineError):
    """A requirement's ``run`` raised; the original exception is kept as ``__cause__``."""

    def __init__(self, message: str, *, requirement: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.requirement = requirement
        """The name of the requirement that failed."""


class ConflictError(RuleEngineError):
    """The emitted rules and constraints cannot all hold: no pass exists for this state.

    ``core`` is a minimal unsatisfiable subset of what was emitted: the listed rules clash
    together, and dropping any one of them removes the clash. ``kind`` says what sort of
    conflict it is (SPEC §11), ``forced`` which hard forces cannot be honoured; read these
    fields, not the message, to act on a conflict.
    """

    def __init__(
        self,
        message: str,
        *,
        core: list[CoreEntry],
        kind: Literal["deadlock", "forced-conflict"] = "deadlock",
        forced: tuple[str, ...] = (),
        step: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.core = core
        """The minimal list of clashing rules, each with its requirement and priority."""
        self.kind: Literal["deadlock", "forced-conflict"] = kind
        """``"deadlock"``: the rules clash even without their hard forces (no tool can be
        allowed); ``"forced-conflict"``: a hard force (``forced(t)``, ``force_at_step``)
        cannot be honoured, the rest being satisfiable."""
        self.forced = forced
        """The hard-forced tools that cannot be honoured, in declared order: one tool whose
        force contradicts the other rules, or every tool when hard forces on different
        tools clash. Empty for a deadlock."""
        self.step = step
        """The step number (1-based) whose pass could not be decided, when known."""


class SolverError(RuleEngineError):
    """Z3 could not decide (it answered *unknown*); the step fails closed."""


class AgentError(RuleEngineError):
    """Base class of run-time failures of the agent loop."""
