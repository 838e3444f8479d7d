"""The offline demo behind `make demo`: a small policy, its passes step by step, and a conflict.

Runs with no network and no model: it shows what the engine decides at each step of a short
history, why, and what a clash of requirements looks like.
"""

from __future__ import annotations

from ruleengine import (
    ConflictError,
    Reasoner,
    Requirement,
    Rule,
    RunState,
    can_stop,
    forced,
    hidden,
    requirement,
)
from ruleengine.state import TraceEntry

TOOLS = ["think", "search", "send_email"]


@requirement(name="think-first", priority=20)
def think_first(state: RunState) -> list[object]:
    """Force `think` at the first step."""
    return [forced("think")] if not state.steps else []


class EmailAfterSearch(Requirement):
    """`send_email` only after a successful `search`."""

    def run(self, state: RunState) -> list[Rule]:
        searched = state.called("search")
        return [
            Rule("send_email", allowed=searched, reason=None if searched else "search first"),
            Rule("final_answer", prevent_stop=not state.called("send_email")),
        ]


@requirement(name="no-email-late")
def no_email_late(state: RunState) -> list[object]:
    """After four steps, sending e-mail is only allowed together with the right to stop."""
    from ruleengine import allowed

    return [~allowed("send_email") | can_stop] if len(state.steps) > 4 else []


def show(reasoner: Reasoner, trace: list[TraceEntry]) -> None:
    state = RunState.from_trace(trace)
    label = " → ".join(t if isinstance(t, str) else f"{t[0]}({t[1]})" for t in trace) or "(start)"
    try:
        p = reasoner.decide(state)
    except ConflictError as exc:
        print(f"{label:40} CONFLICT\n  {exc}")
        for entry in exc.core:
            print(f"    core: {entry}")
        return
    print(
        f"{label:40} allowed={list(p.allowed)} forced={p.forced} "
        f"can_stop={p.can_stop} tool_choice={p.tool_choice!r}"
    )
    for tool, reason in p.reasons.items():
        print(f"  reason for {tool}: {reason}")


def main() -> None:
    reasoner = Reasoner(TOOLS, [think_first, EmailAfterSearch(), no_email_late])
    print("Policy: think first; send_email only after search; no stopping before send_email.\n")
    for trace in (
        [],
        ["think"],
        ["think", ("search", "error")],
        ["think", "search"],
        ["think", "search", "send_email"],
    ):
        show(reasoner, trace)

    print("\nA clash: a requirement that hides `think` at the step where it is forced.\n")

    @requirement(name="no-think", priority=30)
    def no_think(state: RunState) -> list[object]:
        return [hidden("think")]

    show(Reasoner(TOOLS, [think_first, EmailAfterSearch(), no_think]), [])


if __name__ == "__main__":
    main()
