"""The BDD package behind the symbolic engine, imported without its optional graph library.

``dd`` imports ``networkx`` when it can, for drawing and graph export that the checker never
uses; that import is two thirds of ``dd``'s and a sixth of a ``ruleengine check`` process's
start-up. ``dd`` already runs without it (its ``_utils`` catches the ``ImportError``), so
while ``dd`` is first imported here the name ``networkx`` is held unimportable, and put back
as it was straight after.

The one effect outside the checker: in a process that imports ``dd`` first through here,
``dd``'s own graph export (``dd._utils.import_module("networkx")``) raises ``ImportError``.
A program that wants it imports ``networkx`` (or ``dd``) before the checker: then nothing
is held back and ``dd`` is imported as it always is. (Another thread that imports
``networkx`` during those few milliseconds would get the ``ImportError`` too; importing it
first avoids that as well.)
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["Renaming", "and_exists", "dd", "nodes_held", "pick", "reordering_seconds", "restricted"]

_OPTIONAL = "networkx"


def _import_without_graphs() -> tuple[ModuleType, Callable[[Any, Any, Iterable[str]], Any] | None]:
    """The ``dd`` backend (CUDD where the platform's wheel has it, else the pure-Python one)
    and its fused conjunction-and-quantification (None: the backend has none)."""
    hold = _OPTIONAL not in sys.modules and "dd" not in sys.modules
    if hold:
        # A ``None`` entry makes ``import networkx`` raise ImportError (the import system's
        # documented way to block a module); removed again below whatever happens.
        sys.modules[_OPTIONAL] = None  # type: ignore[assignment]
    try:
        try:  # pragma: no cover - which one depends on the platform's wheels
            import dd.cudd

            return dd.cudd, dd.cudd.and_exists
        except ImportError:  # pragma: no cover
            import dd.autoref

            return dd.autoref, None
    finally:
        if hold and sys.modules.get(_OPTIONAL, "") is None:
            del sys.modules[_OPTIONAL]


dd, and_exists = _import_without_graphs()


def restricted(u: Any, care: Any) -> Any:
    """A set that agrees with ``u`` on the states of ``care`` and is free elsewhere, as
    small a diagram as CUDD's *restrict* (Coudert and Madre) makes it: for an argument whose
    states outside ``care`` cannot matter (a preimage whose source states all step into
    ``care``). A diagram of 86,000 nodes came out with 3 (the layers of
    `indep-mixes-20-40-3`, whose witnesses' preimages took 3 s each, 0.4 s after). Where
    the backend has no *restrict*, ``u`` itself, which agrees everywhere."""
    restrict = getattr(dd, "restrict", None)
    return u if restrict is None else restrict(u, care)


class Renaming:
    """Each variable named by a key of ``names`` replaced by the one its value names, in
    sets of ``bdd`` that depend on none of the values (the checker's images and preimages:
    a set over next-state bits renamed to the current ones the quantification removed, or
    the other way). Built once per set of bits a step moves, and called for every set.

    The renaming is one conjunction-and-quantification: ``∃ keys. u ∧ (key ⇔ value, each
    pair)``. CUDD's recursion for it ends at the first node below every key (the set
    there is the same after the renaming) and keeps its results in the manager's cache,
    which later calls on shared parts hit. Its exchange of variables
    (``Cudd_bddSwapVariables``) rebuilds every node of the set on each call, down to the
    constants, and its vector composition (``BDD.let``) every node above the deepest
    renamed bit, each with a cache of its own that ends with the call: on
    `indep-chains-20-40-7` the exchange took 1.37 s for 4,807 renamings (five times the
    images' relational products), ``let`` 0.73 s, this 0.22 s. Where the backend has no
    fused conjunction-and-quantification, ``BDD.let``, which gives the same function."""

    __slots__ = ("_bdd", "_equal", "_sources", "names")

    def __init__(self, bdd: Any, names: dict[str, str]) -> None:
        self._bdd = bdd
        self.names = dict(names)
        """Each renamed variable and its new name (never changed)."""
        self._sources = list(self.names)
        self._equal: Any = None

    def __call__(self, u: Any) -> Any:
        if not self.names:
            return u
        if and_exists is None:  # pragma: no cover - dd's pure-Python backend
            return self._bdd.let(self.names, u)
        equal = self._equal
        if equal is None:
            bdd = self._bdd
            equal = bdd.true
            for old, new in self.names.items():
                equal &= bdd.apply("<=>", bdd.var(old), bdd.var(new))
            self._equal = equal
        return and_exists(u, equal, self._sources)


def pick(bdd: Any, u: Any) -> dict[str, bool] | None:
    """``bdd.pick(u)`` (one assignment that satisfies ``u``, None when none does), with
    dynamic reordering left as it was. CUDD's ``pick_iter`` turns reordering off while it
    runs and on again only when it runs to its end; ``pick`` takes its first assignment
    and stops, so reordering stays off for the rest of the manager's life (dd 0.6), and
    every later image and preimage pays for the order it had then (measured: the states
    that can finish on conditionals-50-100-1, 1.3 s with reordering, 49 s without)."""
    configure = getattr(bdd, "configure", None)
    reordering = bool(configure().get("reordering", False)) if configure is not None else False
    try:
        found: dict[str, bool] | None = bdd.pick(u)
    finally:
        if reordering:
            bdd.configure(reordering=True)
    return found


def nodes_held(bdd: Any) -> int:
    """The live nodes ``bdd``'s manager holds, as a bound on its size: CUDD's count of the
    nodes in its unique table less the dead ones (``statistics(exact_node_count=False)``).
    That reads two counters and, for the other statistics, the table's and the cache's
    used slots: about 2 ms at 790,000 nodes. ``len(bdd)`` on ``dd.cudd`` visits every node
    instead (``Cudd_CheckZeroRef``): 0.13 s there, 0.5 s at 3 million (2.5 s of one profiled
    run of the verdicts one by one, `indep-counters-50-100-3`). ``len(bdd)`` where the
    backend has no statistics (``dd.autoref``)."""
    found = _statistics(bdd, exact_node_count=False)
    nodes = found.get("n_nodes") if found is not None else None
    return int(nodes) if isinstance(nodes, int) else len(bdd)


def reordering_seconds(bdd: Any) -> float:
    """The seconds CUDD's dynamic reordering has taken in ``bdd`` so far (its
    ``reordering_time`` statistic); 0.0 for a backend that does not say (``dd.autoref``
    does not reorder)."""
    found = _statistics(bdd)
    seconds = found.get("reordering_time", 0.0) if found is not None else 0.0
    return float(seconds) if isinstance(seconds, int | float) else 0.0


def _statistics(bdd: Any, **options: bool) -> dict[str, Any] | None:
    """``bdd``'s statistics (``dd.cudd``'s ``statistics(**options)``), or None where the
    backend has none or gives no dict. ``dd.cudd`` warns, on every call, that one entry
    (``mem``) changed units in ``dd`` 0.5.7; that warning is not passed on."""
    statistics = getattr(bdd, "statistics", None)
    if statistics is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        found = statistics(**options)
    return found if isinstance(found, dict) else None
