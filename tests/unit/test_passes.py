"""``passes``: the trusted constructor builds what pydantic would, and falls back when it cannot."""

from __future__ import annotations

import pytest

from ruleengine import Pass, Reasoner, Rule
from ruleengine import passes as passes_module
from ruleengine.rules import Emitted


def _build(**overrides: object) -> Pass:
    values: dict[str, object] = {
        "allowed": ("a", "final_answer"),
        "hidden": ("b",),
        "forced": None,
        "can_stop": True,
        "tool_choice": "required",
        "reasons": {"b": "hidden for now"},
    }
    values.update(overrides)
    return Pass._trusted(**values, explain=lambda: None)  # type: ignore[arg-type, return-value]


def test_trusted_passes_are_what_model_construct_builds() -> None:
    assert passes_module._TRUSTED_LAYOUT
    trusted = _build()
    constructed = Pass.model_construct(
        allowed=("a", "final_answer"),
        hidden=("b",),
        forced=None,
        can_stop=True,
        tool_choice="required",
        reasons={"b": "hidden for now"},
        conditions={},
    )
    assert trusted == constructed
    assert trusted.model_fields_set == constructed.model_fields_set == set(Pass.model_fields)
    assert trusted.model_extra is None
    assert trusted.model_dump(exclude={"explanation"}) == constructed.model_dump(
        exclude={"explanation"}
    )
    assert Pass.model_validate(trusted.model_dump(exclude={"explanation"})) == trusted


def test_when_the_layout_check_fails_model_construct_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = [
        Emitted(Rule("a", allowed=False, reason="not now"), "no-a", 10),
        Emitted(Rule("b", forced=True), "b-first", 5),
    ]
    expected = Reasoner(["a", "b"]).resolve(records)
    monkeypatch.setattr(passes_module, "_TRUSTED_LAYOUT", False)
    fallback = Reasoner(["a", "b"]).resolve(records)
    assert fallback == expected
    assert fallback.explanation == expected.explanation
    assert dict(fallback.reasons) == {"a": "not now"}


def test_passes_are_read_only() -> None:
    p = Reasoner(["a"]).decide()
    with pytest.raises(TypeError):
        p.reasons["a"] = "x"  # type: ignore[index]
