"""Conditions on a call's arguments and the run's values, decided exactly.

A condition is an expression in Python syntax, parsed (never evaluated) into a term:
``arg.amount <= last("lookup_order").output.price``. ``terms`` holds the terms, ``parse``
reads them from text and ``handles`` builds them in Python; ``typecheck`` types them against a
tool's parameters (``types``). ``bind`` substitutes the run's values and ``evaluate`` tests a
call's arguments (import those two from their modules: they read run states, and this package
stays importable below them); ``admission`` is what a step's checks mean for a tool, ``_z3``
whether any arguments satisfy a tool's conditions and which clash; ``regex`` is the pattern
subset both sides read alike.
"""

from __future__ import annotations

from ruleengine.conditions.handles import (
    Handle,
    arg,
    input_text,
    last,
    length,
    matches,
    outputs,
)
from ruleengine.conditions.parse import parse
from ruleengine.conditions.terms import Term, text
from ruleengine.conditions.typecheck import Scope, check
from ruleengine.conditions.types import (
    Parameters,
    ParamType,
    parameters_from_model,
    parameters_from_schema,
    parameters_from_spec,
)

__all__ = [
    "Handle",
    "ParamType",
    "Parameters",
    "Scope",
    "Term",
    "arg",
    "check",
    "input_text",
    "last",
    "length",
    "matches",
    "outputs",
    "parameters_from_model",
    "parameters_from_schema",
    "parameters_from_spec",
    "parse",
    "text",
]
