"""Hypothesis strategies for small policy files with conditions on arguments: three tools
(``lookup`` returns an output conditions read, ``pay`` takes an integer amount, ``note`` takes
nothing), a few conditional requirements, and arguments requirements whose conditions are
integer bounds, comparisons with a lookup's output or arguments, membership in its outputs, or
a test of the run's input. Each case is TOML text, loaded with ``Policy.load``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from ruleengine import Policy

TOOLS = """
max_iterations = 4

[[tools]]
name = "lookup"
parameters = { id = "string" }

[[tools]]
name = "pay"
parameters = { amount = "integer", id = "string" }

[[tools]]
name = "note"
"""

bounds = st.integers(-2, 3)

PAY_CONDITIONS = st.one_of(
    st.builds("arg.amount <= {}".format, bounds),
    st.builds("arg.amount >= {}".format, bounds),
    st.builds("arg.amount == {}".format, bounds),
    st.sampled_from(
        [
            "arg.amount <= last('lookup').output.price",
            "arg.amount > last('lookup').output.price",
            "arg.amount == last('lookup').output.price + 1",
            "arg.id == last('lookup').arguments.id",
            "arg.id != last('lookup').arguments.id",
            "arg.amount in outputs('lookup')",
            "arg.id in input",
        ]
    ),
)
LOOKUP_CONDITIONS = st.one_of(
    st.builds("len(arg.id) <= {}".format, bounds),
    st.sampled_from(["arg.id == 'a'", "arg.id != 'a'", "arg.id in input", "arg.id == input"]),
)


@st.composite
def arguments_requirement(draw: st.DrawFn, n: int) -> str:
    target = draw(st.sampled_from(["pay", "lookup"]))
    pool = PAY_CONDITIONS if target == "pay" else LOOKUP_CONDITIONS
    lines = [f'[[requirements]]\ntype = "arguments"\nname = "args{n}"\ntarget = "{target}"']
    for kind in ("allow_if", "deny_if", "ask_if"):
        chosen = draw(st.lists(pool, max_size=2 if kind != "ask_if" else 1, unique=True))
        if chosen:
            lines.append(f"{kind} = {json.dumps(chosen)}")
    if len(lines) == 1:
        lines.append(f"allow_if = {json.dumps([draw(pool)])}")
    return "\n".join(lines)


@st.composite
def conditional_requirement(draw: st.DrawFn, n: int) -> str:
    target = draw(st.sampled_from(["lookup", "pay", "note"]))
    other = draw(st.sampled_from([t for t in ("lookup", "pay", "note") if t != target]))
    rule = draw(
        st.sampled_from(
            [
                f"force_at_step = {draw(st.integers(1, 3))}",
                f"force_at_step = {draw(st.integers(1, 3))}",
                f'only_after = ["{other}"]',
                f'force_after = "{other}"',
                f"max_invocations = {draw(st.integers(1, 2))}",
            ]
        )
    )
    return f'[[requirements]]\ntype = "conditional"\nname = "cond{n}"\ntarget = "{target}"\n{rule}'


@st.composite
def condition_policies(draw: st.DrawFn) -> str:
    """A policy file's text."""
    parts = [TOOLS]
    for n in range(draw(st.integers(0, 3))):
        parts.append(draw(conditional_requirement(n)))
    for n in range(draw(st.integers(1, 3))):
        parts.append(draw(arguments_requirement(n)))
    return "\n\n".join(parts) + "\n"


def load(text: str) -> Policy:
    """The policy ``text`` says, loaded from a file as a user's would be."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.toml"
        path.write_text(text, encoding="utf-8")
        return Policy.load(str(path))
