"""The symbolic engine leaves no BDD node behind once a check returns.

Conflicts are kept as values (``Clash`` objects; ``ConflictError`` ones for a finding's
core): a traceback kept with them would tie the engine's frames, and their BDD nodes, into
reference cycles, which the BDD library then reports (or trips over) when the process ends.
"""

from __future__ import annotations

import gc

from ruleengine import ConditionalRequirement as C
from ruleengine.check import check


def _from_dd(o: object) -> bool:
    module = getattr(type(o), "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "dd"


def _bdd_objects() -> list[object]:
    return [o for o in gc.get_objects() if _from_dd(o)]


def test_no_bdd_object_outlives_a_symbolic_check() -> None:
    gc.collect()
    before = len(_bdd_objects())
    reqs = [
        C("a", max_invocations=1, name="cap"),
        C("b", only_after=["c"], name="b-after-c"),
        C("c", max_invocations=0, name="no-c"),
        C("final_answer", max_invocations=0, name="no-stop"),
    ]
    report = check(["a", "b", "c"], reqs, engine="symbolic")
    assert {f.id for f in report.findings} >= {"deadlock", "dead-tool"}
    gc.collect()
    assert len(_bdd_objects()) == before
    assert not [o for o in gc.garbage if _from_dd(o)]
