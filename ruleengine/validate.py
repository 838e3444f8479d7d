"""Parameter checks in ruleengine's message style, for code built on the engine.

The engine's constructors check their parameters with these (they live in ``_validate.py``,
with the checks only the engine uses); the agent runtime, and any package that wants its
mistakes to read like the engine's, calls them from here. Each returns the value it was given
(as the type it checks for) or raises a ``PolicyError`` naming the parameter;
``validate.integer(0, name="max_iterations", owner="run", least=1)`` raises::

    run: max_iterations=`0` must be at least 1

``owner`` names what the parameter belongs to (``tool `search```), ``None`` for none. A
``bool`` is never accepted as a number, nor a float as an integer.
"""

from __future__ import annotations

from ruleengine._tags import tag_names
from ruleengine._validate import flag, integer, number, optional_text, sequence, text

__all__ = ["flag", "integer", "number", "optional_text", "sequence", "tag_names", "text"]
