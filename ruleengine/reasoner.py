"""``Reasoner``: runs the requirements on a state and signs the step's pass (SPEC §4).

``decide(state)`` runs every enabled requirement (in name order), wraps what each returns as
``Emitted`` records (``wrap``), and decides the set (``resolve``). Identical emitted sets
(compared as sets, so the order of requirements and rules never matters) are answered from a
bounded LRU cache. Each reasoner owns its own ``z3.Context``; a lock keeps two threads from
touching it at once.

This module is the one error boundary between requirements and the engine: what a
requirement's code raises is blamed on that requirement (``_call``, ``_awaited``), and what
a caller passes in is checked here, before any requirement runs.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

import anyio

from ruleengine import _validate
from ruleengine._solver import DEFAULT_RLIMIT, DEFAULT_TIMEOUT_MS, MAX_LIMIT
from ruleengine.aggregate import Aggregator, Clash, Mode
from ruleengine.conditions.admission import ArgCheck, admissible, conditions_text
from ruleengine.encode import Vocabulary
from ruleengine.errors import ConflictError, PolicyError, RequirementError, RuleEngineError
from ruleengine.explain import core_entry
from ruleengine.ir import FINAL_ANSWER, Expr, tool_name
from ruleengine.passes import Pass
from ruleengine.requirements.base import Requirement
from ruleengine.rules import Emitted, Rule, check_record, describe
from ruleengine.state import RunState, TraceEntry

__all__ = ["Reasoner"]

DEFAULT_CACHE_SIZE = 4096

CORE_LISTED = 10
"""How many core items a conflict message lists before summarising (``.core`` has them all)."""

_WrapEntry = tuple[object, Requirement, tuple[str, int], tuple[Emitted, ...]]


class Reasoner:
    """Decides each step's ``Pass`` for a fixed tool list and set of requirements.

    ``tools`` are names or tool objects, in declared order; ``final_answer`` is added last if
    absent. ``requirements`` is a list of requirements (one requirement alone is accepted).
    ``mode`` is ``"strict"`` (deny wins; the default) or ``"priority"`` (every rule soft at its
    priority; see docs/semantics.md). With ``fast_path`` (the default), steps (or, in
    priority mode, tier checks) whose items are all literals (plain rules, ``~allowed(t)``,
    hard forces) are decided from bit masks without a solver call; ``fast_path=False`` sends
    every cache miss to Z3. Both paths give identical passes and cores (a tested law).

    Every solver check is bounded by ``rlimit`` Z3 resource units (deterministic), and every
    decision by ``timeout_ms`` of wall clock (``0``: no wall-clock bound); a step that runs
    out fails closed with ``SolverError``.
    """

    def __init__(
        self,
        tools: Iterable[object],
        requirements: Iterable[Requirement] | Requirement | None = (),
        *,
        mode: Mode = "strict",
        final_answer_as_tool: bool = True,
        cache_size: int = DEFAULT_CACHE_SIZE,
        rlimit: int = DEFAULT_RLIMIT,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        fast_path: bool = True,
    ) -> None:
        self.mode: Mode = _validate.one_of(mode, ("strict", "priority"), name="mode")
        final_answer_as_tool = _validate.flag(final_answer_as_tool, name="final_answer_as_tool")
        fast_path = _validate.flag(fast_path, name="fast_path")
        self._cache_size = _validate.integer(cache_size, name="cache_size")
        rlimit = _validate.integer(rlimit, name="rlimit", least=1, most=MAX_LIMIT)
        timeout_ms = _validate.integer(timeout_ms, name="timeout_ms", most=MAX_LIMIT)
        declared = _validate.sequence(tools, name="tools")
        self.tools = _declared_tools(declared)
        """The declared tools, ``final_answer`` last."""
        self.requirements = _validated_requirements(_as_requirements(requirements), declared)
        """The requirements, bound to the tools, in name order."""
        self._yielding = frozenset(r.name for r in self.requirements if r.yielding)
        self._wraps: dict[int, _WrapEntry] = {}
        self._aggregator = Aggregator(
            Vocabulary(self.tools, rlimit=rlimit, timeout_ms=timeout_ms),
            mode=self.mode,
            final_answer_as_tool=final_answer_as_tool,
            fast_path=fast_path,
        )
        self._cache: OrderedDict[frozenset[Emitted], Pass | Clash] = OrderedDict()
        self._argument_checks = False
        """Whether some record decided so far held an ``ArgCheck`` (see ``_decided``)."""
        self._lock = threading.Lock()
        self.hits = 0
        """How many decisions came from the cache."""
        self.misses = 0
        """How many decisions were not in the cache (decided by the fast path or the solver)."""

    @property
    def solver_checks(self) -> int:
        """How many solver checks this reasoner has made."""
        return self._aggregator.solver_checks

    # -- running requirements -----------------------------------------------------------

    def emit(self, state: RunState | Sequence[TraceEntry] | None = None) -> list[Emitted]:
        """Run every enabled requirement on ``state`` (sync ones only; else use ``aemit``)."""
        state = _state(state)
        emitted: list[Emitted] = []
        for req in self.requirements:
            if not req.enabled:
                continue
            out = _call(req, state)
            if type(out) is not tuple and type(out) is not list and inspect.isawaitable(out):
                _close(out)
                raise PolicyError(
                    f"requirement `{req.name}` is async: call `adecide` instead of `decide`"
                )
            emitted += self.wrap(req, out)
        return emitted

    async def aemit(self, state: RunState | Sequence[TraceEntry] | None = None) -> list[Emitted]:
        """Run every enabled requirement on ``state``, async ones concurrently.

        The records come out in requirement order whatever order the async ones finish in;
        when several fail (sync or async), the error of the first failing requirement in name
        order is raised, after every async one has finished (none is left un-awaited).
        """
        state = _state(state)
        enabled = [req for req in self.requirements if req.enabled]
        outputs: list[object] = [None] * len(enabled)
        failures: dict[int, RuleEngineError] = {}
        pending: list[tuple[int, Requirement, Awaitable[Any]]] = []
        for i, req in enumerate(enabled):
            try:
                out = _call(req, state)
            except RuleEngineError as exc:
                failures[i] = exc
                continue
            if inspect.isawaitable(out):
                pending.append((i, req, out))
            else:
                outputs[i] = out
        if len(pending) == 1 and not failures:
            i, req, awaitable = pending[0]
            outputs[i] = await _awaited(req, awaitable)
        elif pending:
            await _await_all(pending, outputs, failures)
        if failures:
            raise failures[min(failures)]
        emitted: list[Emitted] = []
        for req, out in zip(enabled, outputs, strict=True):
            emitted += self.wrap(req, out)
        return emitted

    def wrap(self, requirement: Requirement, output: object) -> Sequence[Emitted]:
        """What ``requirement`` returned, validated and wrapped as ``Emitted`` records.

        ``output`` must be a list or tuple of ``Rule`` objects and formulas; each becomes
        ``Emitted(item, requirement.name, requirement.priority)``. This is the seam the static
        checker uses for rules it computes from a requirement's monitor. Tuples are immutable
        (and built-ins return memoised ones), so the wrapping of a tuple already seen from the
        same requirement, at the same name and priority, is reused.
        """
        if not isinstance(requirement, Requirement):
            raise PolicyError(f"wrap: `{requirement!r}` is not a requirement")
        if type(output) is not tuple:
            return _wrap(requirement, output)
        entry = self._wraps.get(id(output))
        if (
            entry is not None
            and entry[0] is output
            and entry[1] is requirement
            and entry[2] == (requirement.name, requirement.priority)
        ):
            return entry[3]
        wrapped = tuple(_wrap(requirement, output))
        if len(self._wraps) >= DEFAULT_CACHE_SIZE:
            self._wraps.clear()
        # The entry keeps `output` alive, so its id cannot be reused while the entry exists.
        self._wraps[id(output)] = (
            output,
            requirement,
            (requirement.name, requirement.priority),
            wrapped,
        )
        return wrapped

    # -- deciding -------------------------------------------------------------------------

    def decide(self, state: RunState | Sequence[TraceEntry] | None = None) -> Pass:
        """The pass for the step after ``state``; raises ``ConflictError`` if there is none.

        ``state`` is a ``RunState``, or a trace as ``RunState.from_trace`` takes it (tool names
        and ``(name, status)`` pairs); ``None`` is the empty run.
        """
        state = _state(state)
        return self.resolve(self.emit(state), step=state.step_number)

    async def adecide(self, state: RunState | Sequence[TraceEntry] | None = None) -> Pass:
        """Like ``decide``, awaiting async requirements (concurrently)."""
        state = _state(state)
        return self.resolve(await self.aemit(state), step=state.step_number)

    def resolve(self, emitted: Iterable[Emitted], *, step: int | None = None) -> Pass:
        """The pass for an already emitted set of records (``wrap``'s output, or your own).

        The records are decided as a set: their order never matters, and a set decided before
        is answered from the cache. ``step`` (1-based) only labels a conflict's message.
        """
        if type(emitted) is not list and type(emitted) is not tuple:
            emitted = list(_validate.sequence(emitted, name="emitted"))
        if step is not None:
            _validate.integer(step, name="step", least=1)
        result = self.settle(emitted)
        if isinstance(result, Clash):
            raise _conflict(result, step, self.mode)
        return result

    def settle(self, emitted: Iterable[Emitted]) -> Pass | Clash:
        """``resolve``'s decision, a conflict returned rather than raised: the ``Clash``
        holds its kind and hard-forced tools, and finds its minimal core when first read.

        For callers that decide many sets of records and read few of their conflicts' cores
        (the static checker): building a ``ConflictError`` reads the core, and its message
        renders every clashing item. Shares ``resolve``'s cache and its validation.
        """
        if type(emitted) is not list and type(emitted) is not tuple:
            emitted = list(_validate.sequence(emitted, name="emitted"))
        try:
            key = frozenset(emitted)
        except TypeError:
            for e in emitted:
                check_record(e)
            raise
        with self._lock:
            cache = self._cache
            result = cache.get(key)
            if result is not None:
                self.hits += 1
                cache.move_to_end(key)
            else:
                self.misses += 1
                # One decision, one clock (a yielding retry below shares it).
                self._aggregator.begin()
                # Every record is checked when first decided (equal records: found by value).
                result = self._decided(emitted)
                if self._cache_size:
                    cache[key] = result
                    if len(cache) > self._cache_size:
                        cache.popitem(last=False)
        return result

    def unmoved(self, emitted: Iterable[Emitted], names: Iterable[str]) -> frozenset[str]:
        """Those of ``names`` (requirement names) whose records in ``emitted`` provably leave
        its decision as it is: ``settle`` on the records without theirs gives the same
        allowed, hidden and forced tools and the same ``can_stop`` (reasons aside), or the
        same kind of outcome, a pass or a clash. A sufficient test, from the records'
        compiled units (``Aggregator.unmoved``): a name left out may or may not change it.
        Where records check a call's arguments, or yielding requirements' records clash,
        nothing is returned. Cost: a lookup per record (new records are checked and
        compiled, as ``settle`` would), in priority mode one pass over the tiers (about a
        decision's), and one decision without the cache where yielding requirements have
        records. The static checker asks it before deciding a step
        without a requirement (its liveness)."""
        if type(emitted) is not list and type(emitted) is not tuple:
            emitted = list(_validate.sequence(emitted, name="emitted"))
        wanted = frozenset(
            _validate.text(name, name="names") for name in _validate.sequence(names, name="names")
        )
        if not wanted:
            return frozenset()
        records = self._records(emitted)
        with self._lock:
            if self._argument_checks or any(type(e.item) is ArgCheck for e in records):
                return frozenset()
            aggregator = self._aggregator
            if self._yielding and any(e.requirement in self._yielding for e in records):
                # Requirements give way only where the records clash: where they do not,
                # neither do they without a requirement the aggregate leaves as it is.
                aggregator.begin()
                if isinstance(aggregator.aggregate(records), Clash):
                    return frozenset()
            return frozenset(aggregator.unmoved(records, wanted))

    def word(self, emitted: Iterable[Emitted]) -> int | None:
        """A fingerprint of ``emitted`` as part of a step's records: two sets with the same
        word, each joined with the same other records, aggregate alike (the same allowed,
        hidden and forced tools and ``can_stop``, or both a clash; reasons and cores
        aside), and so ``settle`` decides them alike unless yielding requirements give way
        (``yields``: which of them give way depends on whose records a clash holds); the
        word of a union of sets is the or of their words. None where no such word is known:
        where a record soft-forces, is a general formula or checks a call's arguments. A
        word stays the same for the reasoner's life (in strict mode it is the or of the
        records' tool masks; in priority mode a bit per distinct unit a tier reads). Cost:
        a lookup per record (new records are checked and compiled, as ``settle`` would).
        The static checker asks it to decide one set of records for all the check values
        that emit alike (``System.deciding``)."""
        records = self._records(emitted)
        with self._lock:
            if self._argument_checks or any(type(e.item) is ArgCheck for e in records):
                return None
            return self._aggregator.word(records)

    def yields(self, emitted: Iterable[Emitted]) -> bool:
        """Whether ``settle`` on ``emitted`` lets a yielding requirement give way: some
        record comes from one, and the records clash as they are. Cost: one decision
        without the cache where a yielding requirement has a record, else a lookup per
        record (new records are checked and compiled, as ``settle`` would)."""
        records = self._records(emitted)
        with self._lock:
            self._aggregator.word(records)  # checks and compiles new records, as settle would
            if not self._yielding or not any(e.requirement in self._yielding for e in records):
                return False
            self._aggregator.begin()
            return isinstance(self._aggregator.aggregate(records), Clash)

    @staticmethod
    def _records(emitted: Iterable[Emitted]) -> tuple[Emitted, ...]:
        """``emitted`` as a tuple of checked records (``PolicyError`` naming a bad one)."""
        if type(emitted) is not list and type(emitted) is not tuple:
            emitted = list(_validate.sequence(emitted, name="emitted"))
        records = tuple(emitted)
        if not set(map(type, records)) <= {Emitted}:
            for e in records:
                check_record(e)
        return records

    def _decided(self, emitted: Sequence[Emitted]) -> Pass | Clash:
        """The decision on a set of records not in the cache (checks of a call's arguments,
        ``ArgCheck``, decided apart: ``_with_checks``)."""
        if not self._argument_checks:
            # No record so far held an ArgCheck: decide without looking for any (a scan of
            # the records would cost a tenth of a literal step). The compiler notes the first
            # one it meets (compiled to nothing): then this decision is made again below,
            # and every later one goes there.
            result = self._aggregator.aggregate(emitted)
            if not self._aggregator.saw_argument_checks:
                return self._yielded(emitted, result)
            self._argument_checks = True
        checks = [e for e in emitted if type(e.item) is ArgCheck]
        if not checks:
            return self._yielded(emitted, self._aggregator.aggregate(emitted))
        return self._with_checks(emitted, checks)

    def _with_checks(self, emitted: Sequence[Emitted], checks: list[Emitted]) -> Pass | Clash:
        """A tool no arguments can pass becomes a denial by the requirements whose checks
        refuse it together (never overridden: in priority mode above every priority); an
        allowed tool's checks go with the pass."""
        by_tool: dict[str, list[tuple[str, ArgCheck]]] = {}
        for e in checks:
            check = e.item
            assert isinstance(check, ArgCheck)
            if check.tool not in self.tools:
                raise PolicyError(
                    f"requirement `{e.requirement}` checks the arguments of `{check.tool}`, "
                    "which is not a declared tool"
                )
            by_tool.setdefault(check.tool, []).append((e.requirement, check))
        top = max(e.priority for e in emitted) + 1
        priorities = {e.requirement: e.priority for e in checks}
        records = [e for e in emitted if type(e.item) is not ArgCheck]
        for tool, found in by_tool.items():
            verdict = admissible([c for _, c in found], [r for r, _ in found])
            for i in verdict.core if not verdict.ok else ():
                requirement, check = found[i]
                denial = Rule(tool, allowed=False, reason=check.reason or verdict.reason)
                priority = top if self.mode == "priority" else priorities[requirement]
                records.append(Emitted(denial, requirement, priority))
        result = self._yielded(records, self._aggregator.aggregate(records))
        if isinstance(result, Clash):
            return result
        allowed = {tool: tuple(found) for tool, found in by_tool.items() if tool in result.allowed}
        texts = {tool: conditions_text([c for _, c in found]) for tool, found in allowed.items()}
        return result._conditioned({t: text for t, text in texts.items() if text}, allowed)

    def _yielded(self, records: Sequence[Emitted], result: Pass | Clash) -> Pass | Clash:
        """``result``, or with yielding requirements given way where they clash."""
        if isinstance(result, Clash) and self._yielding:
            return self._yield(records, result)
        return result

    def _yield(self, emitted: Sequence[Emitted], clash: Clash) -> Pass | Clash:
        """Drop yielding requirements' items while they take part in the clash."""
        yielded: list[Emitted] = []
        result: Pass | Clash = clash
        while isinstance(result, Clash):
            if not any(e.requirement in self._yielding for e in emitted):
                return result  # nothing left to give way: the core need not be read
            giving_way = {e.requirement for e in result.core if e.requirement in self._yielding}
            if not giving_way:
                return result
            yielded.extend(e for e in emitted if e.requirement in giving_way)
            emitted = [e for e in emitted if e.requirement not in giving_way]
            result = self._aggregator.aggregate(emitted, yielded=yielded)
        return result


def _state(state: object) -> RunState:
    """The run state a caller means: a ``RunState``, a trace, or ``None`` (the empty run)."""
    if state is None:
        return RunState()
    if isinstance(state, RunState):
        return state
    if isinstance(state, list | tuple):
        return RunState.from_trace(state)
    raise PolicyError(
        f"state=`{state!r}` is not a run state",
        hint="pass a `RunState`, a trace like `['search', ('think', 'error')]`, or nothing",
    )


def _as_requirements(requirements: object) -> Iterable[object]:
    if requirements is None:
        return ()
    if isinstance(requirements, Requirement):
        return (requirements,)
    return _validate.sequence(requirements, name="requirements")


def _declared_tools(tools: Iterable[object]) -> tuple[str, ...]:
    names: list[str] = []
    for t in tools:
        name = tool_name(t)
        if name in names:
            raise PolicyError(f"tool `{name}` is declared twice")
        names.append(name)
    if FINAL_ANSWER in names:
        names.remove(FINAL_ANSWER)
    return (*names, FINAL_ANSWER)


def _validated_requirements(
    requirements: Iterable[object], declared: Sequence[object]
) -> tuple[Requirement, ...]:
    seen: dict[str, Requirement] = {}
    for req in requirements:
        if not isinstance(req, Requirement):
            raise PolicyError(
                f"`{req!r}` is not a requirement",
                hint="subclass `Requirement` or decorate a function with `@requirement`",
            )
        name = _validate.text(getattr(req, "name", None), name="a requirement's name")
        _validate.priority(req.priority, owner=_validate.owner_of(name))
        if name in seen:
            raise PolicyError(
                f"two requirements are named `{name}`",
                hint="cores and explanations cite requirements by name: give each a unique one",
            )
        seen[name] = req.bind(declared)
    return tuple(seen[n] for n in sorted(seen))


# `_call` and `_awaited` blame a requirement for what its code raises: usage mistakes get its
# name, crashes are wrapped. Plain try/except on purpose: a context manager here costs more
# than a built-in requirement's whole run, and this is on every step's path.


def _call(req: Requirement, state: RunState) -> Any:
    try:
        return req.run(state)
    except PolicyError as exc:
        raise _prefixed(req, exc) from None
    except RuleEngineError:
        raise
    except Exception as exc:
        raise _raised(req, exc) from exc


async def _awaited(req: Requirement, awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except PolicyError as exc:
        raise _prefixed(req, exc) from None
    except RuleEngineError:
        raise
    except Exception as exc:
        raise _raised(req, exc) from exc


async def _await_all(
    pending: list[tuple[int, Requirement, Awaitable[Any]]],
    outputs: list[object],
    failures: dict[int, RuleEngineError],
) -> None:
    """Await every pending requirement concurrently; their failures go to ``failures``."""

    async def collect(i: int, req: Requirement, awaitable: Awaitable[Any]) -> None:
        try:
            outputs[i] = await _awaited(req, awaitable)
        except RuleEngineError as exc:
            failures[i] = exc

    async with anyio.create_task_group() as group:
        for i, req, awaitable in pending:
            group.start_soon(collect, i, req, awaitable)


def _prefixed(req: Requirement, exc: PolicyError) -> PolicyError:
    if exc.message.startswith(f"requirement `{req.name}`"):
        return exc
    return PolicyError(f"requirement `{req.name}`: {exc.message}", hint=exc.hint)


def _raised(req: Requirement, exc: BaseException) -> RequirementError:
    return RequirementError(
        f"requirement `{req.name}` raised `{type(exc).__name__}`: {exc}",
        requirement=req.name,
        hint="fix the requirement's code, or disable it",
    )


def _close(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


_ITEM_TYPES = (Rule, Expr, ArgCheck)
"""What a requirement may emit (a tuple: ``isinstance`` with it is cheaper than with a union
built in the loop, and this is on every step's path)."""


def _wrap(req: Requirement, out: object) -> list[Emitted]:
    name = req.name
    priority = _validate.priority(req.priority, owner=_validate.owner_of(name))  # may have changed
    if isinstance(out, Rule | Expr):
        raise PolicyError(
            f"requirement `{name}` returned a single item `{out!r}`: expected a list",
            hint="wrap it in a list: `return [rule]`",
        )
    if not isinstance(out, list | tuple):
        raise PolicyError(
            f"requirement `{name}` returned `{out!r}`: expected a list of rules and formulas"
        )
    wrapped: list[Emitted] = []
    for item in out:
        if not isinstance(item, _ITEM_TYPES):
            raise PolicyError(
                f"requirement `{name}` returned `{item!r}`: not a `Rule` nor a formula",
                hint="return `Rule(...)` objects and formulas like `~allowed('t') | can_stop`",
            )
        wrapped.append(Emitted(item, name, priority))
    return wrapped


# -- conflicts --------------------------------------------------------------------------------


def _conflict(clash: Clash, step: int | None, mode: Mode) -> ConflictError:
    where = f"step {step}: " if step is not None else ""
    if clash.kind == "forced-conflict":
        listed = ", ".join(f"`{t}`" for t in clash.forced)
        what = (
            f"the hard force on {listed} cannot be honoured"
            if len(clash.forced) == 1
            else f"hard forces on {listed} cannot all be honoured"
        )
    elif all(isinstance(e.item, Rule) for e in clash.core):
        what = "no tool is left allowed"
    else:
        what = "the requirements contradict each other"
    parts = [
        f"`{e.requirement}` (priority {e.priority}) {describe(e.item, part)}"
        + (f" ({part} part)" if part else "")
        for e, part in zip(clash.core, clash.parts, strict=True)
    ]
    if len(parts) > CORE_LISTED + 2:
        more = len(parts) - CORE_LISTED
        parts = [*parts[:CORE_LISTED], f"… and {more} more (every item is in `.core`)"]
    return ConflictError(
        f"{where}{what}: {'; '.join(parts)}",
        core=[core_entry(e, part) for e, part in zip(clash.core, clash.parts, strict=True)],
        kind=clash.kind,
        forced=clash.forced,
        step=step,
        hint=_conflict_hint(clash, mode),
    )


def _conflict_hint(clash: Clash, mode: Mode) -> str:
    if len(clash.core) == 1:
        return "this item can never hold on its own: fix or disable its requirement"
    hint = (
        f"these {len(clash.core)} items clash together; dropping or relaxing any one of "
        "them unlocks the step"
    )
    if mode == "priority":
        hint += (
            " (priority mode: each fits what higher priorities kept, but together they clash"
            " at their own priority, so none is overridden)"
        )
    return hint
