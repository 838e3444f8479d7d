"""``Reasoner``: runs the requirements on a state and signs the step's pass (SPEC §4).

``decide(state)`` runs every enabled requirement (in name order), wraps what each returns as
``Emitted`` records, and asks the aggregator. Identical emitted sets (compared as sets, so the
order of requirements and rules never matters) are answered from a bounded LRU cache. Each
reasoner owns its own ``z3.Context``; a lock keeps two threads from touching it at once.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from ruleengine._solver import DEFAULT_RLIMIT
from ruleengine.aggregate import Aggregator, Clash, Mode
from ruleengine.encode import Vocabulary
from ruleengine.errors import ConflictError, PolicyError, RequirementError, RuleEngineError
from ruleengine.explain import core_entry
from ruleengine.ir import FINAL_ANSWER, Expr, tool_name
from ruleengine.passes import Pass
from ruleengine.requirements.base import Requirement, validate_priority
from ruleengine.rules import Emitted, Rule, check_record, describe
from ruleengine.state import RunState

__all__ = ["Reasoner"]

DEFAULT_CACHE_SIZE = 4096

_WrapEntry = tuple[object, Requirement, tuple[str, int], tuple[Emitted, ...]]


class Reasoner:
    """Decides each step's ``Pass`` for a fixed tool list and set of requirements.

    ``tools`` are names or tool objects, in declared order; ``final_answer`` is added last if
    absent. ``mode`` is ``"strict"`` (deny wins; the default) or ``"priority"`` (every rule soft
    at its priority; see docs/semantics.md). With ``fast_path`` (the default), steps (or, in
    priority mode, tier checks) whose items are all literals (plain rules, ``~allowed(t)``,
    hard forces) are decided from bit masks without a solver call; ``fast_path=False`` sends
    every cache miss to Z3.
    Both paths give identical passes and cores (a tested law): on the fast path, the minimal
    core of a conflict among literal items is also found from the masks.
    """

    def __init__(
        self,
        tools: Iterable[object],
        requirements: Iterable[Requirement] = (),
        *,
        mode: Mode = "strict",
        final_answer_as_tool: bool = True,
        cache_size: int = DEFAULT_CACHE_SIZE,
        rlimit: int = DEFAULT_RLIMIT,
        timeout_ms: int = 0,
        fast_path: bool = True,
    ) -> None:
        if mode not in ("strict", "priority"):
            raise PolicyError(f"mode=`{mode}` must be `strict` or `priority`")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise PolicyError(f"cache_size=`{cache_size!r}` must be a non-negative integer")
        declared = list(tools) if not isinstance(tools, str) else tools
        self.tools = _declared_tools(declared)
        """The declared tools, ``final_answer`` last."""
        self.requirements = _validated_requirements(
            req.bind(declared) if isinstance(req, Requirement) else req for req in requirements
        )
        """The requirements, bound to the tools, in name order."""
        self._yielding = frozenset(r.name for r in self.requirements if r.yielding)
        self._wraps: dict[int, _WrapEntry] = {}
        self.mode: Mode = mode
        self._aggregator = Aggregator(
            Vocabulary(self.tools, rlimit=rlimit, timeout_ms=timeout_ms),
            mode=mode,
            final_answer_as_tool=final_answer_as_tool,
            fast_path=fast_path,
        )
        self._cache: OrderedDict[frozenset[Emitted], Pass | Clash] = OrderedDict()
        self._cache_size = cache_size
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

    def emit(self, state: RunState) -> list[Emitted]:
        """Run every enabled requirement on ``state`` (sync ones only; else use ``aemit``)."""
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
            emitted += self._wrapped(req, out)
        return emitted

    async def aemit(self, state: RunState) -> list[Emitted]:
        """Run every enabled requirement on ``state``, awaiting async ones."""
        emitted: list[Emitted] = []
        for req in self.requirements:
            if not req.enabled:
                continue
            out = _call(req, state)
            if inspect.isawaitable(out):
                out = await _awaited(req, out)
            emitted += self._wrapped(req, out)
        return emitted

    def _wrapped(self, req: Requirement, out: object) -> Sequence[Emitted]:
        """``out`` validated and wrapped as ``Emitted`` records.

        Tuples are immutable (and built-ins return memoised ones), so the wrapping of a tuple
        already seen from the same requirement, at the same name and priority, is reused.
        """
        if type(out) is not tuple:
            return _wrap(req, out)
        entry = self._wraps.get(id(out))
        if (
            entry is not None
            and entry[0] is out
            and entry[1] is req
            and entry[2] == (req.name, req.priority)
        ):
            return entry[3]
        wrapped = tuple(_wrap(req, out))
        if len(self._wraps) >= DEFAULT_CACHE_SIZE:
            self._wraps.clear()
        # The entry keeps `out` alive, so its id cannot be reused while the entry exists.
        self._wraps[id(out)] = (out, req, (req.name, req.priority), wrapped)
        return wrapped

    # -- deciding -------------------------------------------------------------------------

    def decide(self, state: RunState | None = None) -> Pass:
        """The pass for the step after ``state``; raises ``ConflictError`` if there is none."""
        state = state if state is not None else RunState()
        return self.resolve(self.emit(state), step=state.step_number)

    async def adecide(self, state: RunState | None = None) -> Pass:
        """Like ``decide``, awaiting async requirements."""
        state = state if state is not None else RunState()
        return self.resolve(await self.aemit(state), step=state.step_number)

    def resolve(self, emitted: Sequence[Emitted], *, step: int | None = None) -> Pass:
        """The pass for an already emitted set of rules and constraints."""
        if type(emitted) is not list and type(emitted) is not tuple:
            emitted = list(emitted)  # read twice below: an iterator would be used up
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
                # Every record is checked when first decided (equal records: found by value).
                result = self._aggregator.aggregate(emitted)
                if isinstance(result, Clash) and self._yielding:
                    result = self._yield(emitted, result)
                if self._cache_size:
                    cache[key] = result
                    if len(cache) > self._cache_size:
                        cache.popitem(last=False)
        if isinstance(result, Clash):
            raise _conflict(result, step)
        return result

    def _yield(self, emitted: Sequence[Emitted], clash: Clash) -> Pass | Clash:
        """Drop yielding requirements' items while they take part in the clash."""
        yielded: list[Emitted] = []
        result: Pass | Clash = clash
        while isinstance(result, Clash):
            giving_way = {e.requirement for e in result.core if e.requirement in self._yielding}
            if not giving_way:
                return result
            yielded.extend(e for e in emitted if e.requirement in giving_way)
            emitted = [e for e in emitted if e.requirement not in giving_way]
            result = self._aggregator.aggregate(emitted, yielded=yielded)
        return result


def _declared_tools(tools: Iterable[object]) -> tuple[str, ...]:
    if isinstance(tools, str):
        raise PolicyError("tools must be a list of tool names or tools, not a single string")
    names: list[str] = []
    for t in tools:
        name = tool_name(t)
        if name in names:
            raise PolicyError(f"tool `{name}` is declared twice")
        names.append(name)
    if FINAL_ANSWER in names:
        names.remove(FINAL_ANSWER)
    return (*names, FINAL_ANSWER)


def _validated_requirements(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    seen: dict[str, Requirement] = {}
    for req in requirements:
        if not isinstance(req, Requirement):
            raise PolicyError(
                f"`{req!r}` is not a requirement",
                hint="subclass `Requirement` or decorate a function with `@requirement`",
            )
        name = req.name
        if not isinstance(name, str) or not name:
            raise PolicyError(f"requirement `{req!r}` has no name")
        validate_priority(req.priority, owner=name)
        if name in seen:
            raise PolicyError(
                f"two requirements are named `{name}`",
                hint="cores and explanations cite requirements by name: give each a unique one",
            )
        seen[name] = req
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


def _wrap(req: Requirement, out: object) -> list[Emitted]:
    validate_priority(req.priority, owner=req.name)  # it may have been changed since
    if isinstance(out, Rule | Expr):
        raise PolicyError(
            f"requirement `{req.name}` returned a single item `{out!r}`: expected a list",
            hint="wrap it in a list: `return [rule]`",
        )
    if not isinstance(out, list | tuple):
        raise PolicyError(
            f"requirement `{req.name}` returned `{out!r}`: expected a list of rules and formulas"
        )
    name, priority = req.name, req.priority
    wrapped: list[Emitted] = []
    for item in out:
        if not isinstance(item, Rule | Expr):
            raise PolicyError(
                f"requirement `{req.name}` returned `{item!r}`: not a `Rule` nor a formula",
                hint="return `Rule(...)` objects and formulas like `~allowed('t') | can_stop`",
            )
        wrapped.append(Emitted(item, name, priority))
    return wrapped


def _conflict(clash: Clash, step: int | None) -> ConflictError:
    where = f"step {step}: " if step is not None else ""
    parts = "; ".join(
        f"`{e.requirement}` (priority {e.priority}) {describe(e.item)}" for e in clash.core
    )
    if clash.hard_force:
        what = "a hard force cannot be honoured"
    elif all(isinstance(e.item, Rule) for e in clash.core):
        what = "no tool is left allowed"
    else:
        what = "the requirements contradict each other"
    if len(clash.core) == 1:
        hint = "this item can never hold on its own: fix or disable its requirement"
    else:
        hint = (
            f"these {len(clash.core)} items clash together; dropping or relaxing any one of "
            "them unlocks the step"
        )
    return ConflictError(
        f"{where}{what}: {parts}",
        core=[core_entry(e) for e in clash.core],
        step=step,
        hint=hint,
    )
