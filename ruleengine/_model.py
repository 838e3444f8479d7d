"""The base of the public result models (passes, explanations, checker reports)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ruleengine._base_errors import PolicyError

__all__ = ["FROZEN", "ResultModel"]

FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class ResultModel(BaseModel):
    """A frozen result: built by the engine, and by users only in tests and tools, whose
    mistakes get a ``PolicyError`` rather than pydantic's traceback."""

    model_config = FROZEN

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error.get("loc", ())) or "value"
            raise PolicyError(
                f"not a valid `{type(self).__name__}`: `{where}`: {error.get('msg', '').lower()}"
            ) from None
