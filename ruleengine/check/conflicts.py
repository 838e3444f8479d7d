"""How a finding is put together, and the findings a witness's last state explains (SPEC §8).

``_finding`` builds a ``Finding`` from its id, message, witness and core (``_steps`` and
``_after`` word its messages). A deadlock's and a forced conflict's core come from the
runtime's reasoner at the witness's last state (``forced_core`` keeps the violated force in
it); a forced tie's core is the tied forcing rules. The findings whose core is a set of
requirements are ``properties``'.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruleengine.check.analysis import Witness
from ruleengine.check.report import SEVERITY, Finding, FindingId, TraceStep
from ruleengine.check.system import Checked
from ruleengine.errors import ConflictError
from ruleengine.ir import Forced
from ruleengine.passes import CoreEntry
from ruleengine.rules import Emitted

__all__ = ["forced_core"]


def _finding(
    finding_id: FindingId,
    message: str,
    *,
    witness: Witness | None = None,
    core: Sequence[CoreEntry] = (),
    tool: str | None = None,
    requirement: str | None = None,
    min_steps: int | None = None,
) -> Finding:
    # Opaque checks branch both ways, so the explored states include every history any check
    # functions allow: "never" verdicts (dead-tool, dead-requirement, budget, and no-finish's
    # "cannot finish from here") hold whatever the checks answer. Only reaching a state, or a
    # state's verdict, can need particular check values: that is the witness's to say.
    trace = tuple(TraceStep(tool=t, status=s) for t, s in witness.trace) if witness else ()
    return Finding(
        id=finding_id,
        severity=SEVERITY[finding_id],
        tool=tool,
        requirement=requirement,
        message=message,
        trace=trace,
        core=tuple(core),
        depends_on_custom_checks=witness is not None and witness.depends_on_checks,
        min_steps=min_steps,
    )


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def _after(witness: Witness) -> str:
    n = witness.calls
    return "at the first step" if n == 0 else f"after {_steps(n)}"


def _deadlock(system: Checked, witness: Witness) -> Finding:
    exc = _conflict_of(system, witness.records)
    core = exc.core
    names = sorted({f"`{c.requirement}`" for c in core})
    who = ", ".join(names) + (" leave" if len(names) > 1 else " leaves")
    return _finding(
        "deadlock",
        f"{_after(witness)} no tool is allowed: {who} nothing to call",
        witness=witness,
        core=core,
    )


def _forced_conflict(system: Checked, tool: str, witness: Witness) -> Finding:
    core = forced_core(system, witness.records, tool)
    return _finding(
        "forced-conflict",
        f"{_after(witness)} the hard force on `{tool}` cannot be honoured",
        witness=witness,
        core=core,
        tool=tool,
    )


def _tie(system: Checked, witness: Witness) -> Finding:
    outcome = system.reasoner.resolve(witness.records)
    tie = outcome.forced_tie
    # INVARIANT: the engine reported a tie at this state.
    assert tie is not None
    tools = " and ".join(f"`{t}`" for t in tie.tools)
    return _finding(
        "forced-tie",
        f"{_after(witness)} {tools} are forced at the same priority {tie.priority}: "
        f"`{tie.tools[0]}` wins by declared order",
        witness=witness,
        core=tie.rules,
    )


def _conflict_of(system: Checked, records: tuple[Emitted, ...]) -> ConflictError:
    try:
        system.reasoner.resolve(records)
    except ConflictError as exc:
        # Kept as a value: drop the traceback, whose frames would tie the caller's locals
        # (BDD nodes and their manager among them) into a reference cycle.
        return exc.with_traceback(None)
    raise AssertionError("the engine's witness state does not conflict")  # pragma: no cover


def forced_core(system: Checked, records: tuple[Emitted, ...], tool: str) -> tuple[CoreEntry, ...]:
    """A minimal core at a forced-conflict state that contains the violated force on ``tool``.

    Either ``tool`` cannot be honoured against the other rules (the core of the rules with
    no other hard force), or it clashes only with another hard force: then the two forces
    are a core on their own (two hard forces on different tools never hold together).
    """
    forces = [e for e in records if isinstance(e.item, Forced)]
    others = [e for e in forces if e.item.tool != tool]  # type: ignore[union-attr]
    alone = tuple(e for e in records if e not in others)
    try:
        system.reasoner.resolve(alone)
    except ConflictError as exc:
        return tuple(exc.core)
    own = next(e for e in forces if e.item.tool == tool)  # type: ignore[union-attr]
    # In priority mode a lower-priority force is overridden, not clashing: pair the force
    # with the first other force (highest priority, then tool order) it really clashes with.
    order = sorted(others, key=lambda e: (-e.priority, system.tools.index(e.item.tool)))  # type: ignore[union-attr]
    for other in order:
        try:
            system.reasoner.resolve((own, other))
        except ConflictError as exc:
            return tuple(exc.core)
    return tuple(_conflict_of(system, records).core)  # pragma: no cover - a pair always clashes
