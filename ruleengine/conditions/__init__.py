"""Conditions on a call's arguments and the run's values, decided exactly.

A condition is an expression in Python syntax, parsed (never evaluated) into a term:
``arg.amount <= last("lookup_order").output.price``. ``terms`` holds the terms, ``parse``
reads them from text and ``handles`` builds them in Python; ``typecheck`` types them against a
tool's parameters (``types``); ``evaluate`` binds the run's values and tests a call's
arguments; ``_z3`` decides whether any arguments satisfy a tool's conditions and which clash;
``regex`` is the pattern subset both sides read alike.
"""

from __future__ import annotations

from ruleengine.conditions.evaluate import Undefined, bind, holds
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
    "Undefined",
    "arg",
    "bind",
    "check",
    "holds",
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
