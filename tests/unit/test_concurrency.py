"""Many reasoners at once, in threads and in anyio tasks (SPEC §9).

A reasoner of its own, deciding the same steps in the same order, must give exactly the answers
computed sequentially. A reasoner shared by several threads or tasks sees its steps in an
unpredictable order; its answers must still be the sequential ones, cores included (a core is
a function of the emitted set, and a minimal one: see
``test_the_core_does_not_depend_on_earlier_decisions`` in test_reasoner_semantics.py).
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import anyio
import anyio.lowlevel
import pytest

from ruleengine import (
    FINAL_ANSWER,
    ConflictError,
    Pass,
    Reasoner,
    Requirement,
    RequirementError,
    Rule,
    RunState,
    allowed,
    at_least,
    at_most,
    can_stop,
    exactly,
    forced,
    hidden,
    implies,
    requirement,
)
from ruleengine.rules import Emitted, Item

TOOLS = ("a", "b", "c", "d")
POOL: list[Item] = [
    Rule("a", allowed=False, reason="no a"),
    Rule("b", hidden=True),
    Rule("c", forced=True, reason="c please"),
    Rule("d", forced=True),
    Rule("a", prevent_stop=True),
    Rule(FINAL_ANSWER, allowed=False),
    Rule("b", reason="b is fine"),
    at_most(1, allowed("a"), allowed("b"), allowed("c")),
    implies(allowed("c"), ~can_stop),
    exactly(2, allowed("b"), allowed("c"), allowed("d")),
    at_least(2, ~allowed("a"), hidden("b"), ~allowed("d")),
    hidden("a") | hidden("c"),
    forced("b"),
    forced("d"),
    ~allowed("d"),
]
PRIORITY = {"x": 30, "y": 20, "z": 10}
STEPS = 50
THREADS = 8
HANG = 60
"""Seconds after which a run that waits for another task fails instead of hanging: only a
bound on a hang, never an assertion on how long anything took."""
Table = list[list[Emitted]]
Answer = tuple[object, ...]


def script(seed: int) -> Table:
    """For each step, what requirements ``x``, ``y``, ``z`` emit (fixed by ``seed``)."""
    rng = random.Random(seed)
    table = []
    for _ in range(STEPS):
        names = [rng.choice("xyz") for _ in range(rng.randint(0, 5))]
        table.append([Emitted(rng.choice(POOL), n, PRIORITY[n]) for n in names])
    return table


def requirements(table: Table, *, asynchronous: bool = False) -> list[Requirement]:
    """The requirements of ``table``: each reads the step number off the state."""
    reqs = []
    for name, priority in PRIORITY.items():

        def items_for(state: RunState, name: str = name) -> list[Item]:
            return [e.item for e in table[len(state.steps)] if e.requirement == name]

        async def later(state: RunState, items_for=items_for) -> list[Item]:  # type: ignore[no-untyped-def]
            await anyio.sleep(0)
            return items_for(state)

        function = later if asynchronous else items_for
        reqs.append(requirement(name=name, priority=priority)(function))
    return reqs


def state_at(step: int) -> RunState:
    return RunState.from_trace(["a"] * step)


def seen(p: Pass) -> Answer:
    return (p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, dict(p.reasons))


def seen_conflict(exc: ConflictError) -> Answer:
    return ("conflict", exc.step, frozenset((c.requirement, c.rule) for c in exc.core))


def answer(r: Reasoner, step: int) -> Answer:
    try:
        return seen(r.decide(state_at(step)))
    except ConflictError as exc:
        return seen_conflict(exc)


async def aanswer(r: Reasoner, step: int) -> Answer:
    try:
        return seen(await r.adecide(state_at(step)))
    except ConflictError as exc:
        return seen_conflict(exc)


def reasoner(seed: int, mode: str, *, asynchronous: bool = False, **kwargs: object) -> Reasoner:
    reqs = requirements(script(seed), asynchronous=asynchronous)
    return Reasoner(TOOLS, reqs, mode=mode, **kwargs)  # type: ignore[arg-type]


JOBS = [(seed, mode) for seed in range(THREADS // 2) for mode in ("strict", "priority")]
SHARED = (1, "strict")


@pytest.fixture(scope="module")
def expected() -> dict[tuple[int, str], list[Answer]]:
    out = {}
    for seed, mode in JOBS:
        r = reasoner(seed, mode)
        out[(seed, mode)] = [answer(r, step) for step in range(STEPS)]
    return out


@pytest.fixture(scope="module")
def minimal_cores() -> list[set[frozenset[tuple[str, str]]]]:
    """Per step of the shared script, every minimal conflicting subset (strict mode)."""
    seed, mode = SHARED
    checker = Reasoner(TOOLS, mode=mode)  # type: ignore[arg-type]

    def clashes(subset: tuple[Emitted, ...]) -> bool:
        try:
            checker.resolve(list(subset))
        except ConflictError:
            return True
        return False

    cores = []
    for emitted in script(seed):
        found: list[set[Emitted]] = []
        items = list(dict.fromkeys(emitted))
        for size in range(1, len(items) + 1):
            for subset in combinations(items, size):
                if not any(f <= set(subset) for f in found) and clashes(subset):
                    found.append(set(subset))
        cores.append({frozenset((e.requirement, repr(e.item)) for e in f) for f in found})
    return cores


def check_shared(
    step: int,
    got: Answer,
    expected: dict[tuple[int, str], list[Answer]],
    minimal_cores: list[set[frozenset[tuple[str, str]]]],
) -> None:
    # The core is a function of the emitted set, whatever the shared solver saw before.
    want = expected[SHARED][step]
    assert got == want, step
    if want[0] == "conflict":
        assert got[2] in minimal_cores[step], step


def test_the_scripts_exercise_passes_forces_and_conflicts(
    expected: dict[tuple[int, str], list[Answer]],
    minimal_cores: list[set[frozenset[tuple[str, str]]]],
) -> None:
    answers = [a for results in expected.values() for a in results]
    assert any(a[0] == "conflict" for a in answers)
    assert any(a[0] != "conflict" and a[2] is not None for a in answers)
    assert any(a[0] != "conflict" and a[2] is None for a in answers)
    assert any(len(cores) > 1 for cores in minimal_cores), "some step has several cores"


def test_many_reasoners_in_threads(expected: dict[tuple[int, str], list[Answer]]) -> None:
    start = threading.Barrier(len(JOBS))

    def work(job: tuple[int, str]) -> list[Answer]:
        r = reasoner(*job, cache_size=0)
        start.wait()
        return [answer(r, step) for step in range(STEPS)]

    with ThreadPoolExecutor(max_workers=len(JOBS)) as pool:
        results = dict(zip(JOBS, pool.map(work, JOBS), strict=True))
    for job in JOBS:
        assert results[job] == expected[job], job


@pytest.mark.parametrize("cache_size", [0, 8])
def test_one_reasoner_shared_by_threads(
    expected: dict[tuple[int, str], list[Answer]],
    minimal_cores: list[set[frozenset[tuple[str, str]]]],
    cache_size: int,
) -> None:
    shared = reasoner(*SHARED, cache_size=cache_size)
    start = threading.Barrier(THREADS)

    def work(worker: int) -> list[tuple[int, Answer]]:
        order = list(range(STEPS))
        random.Random(worker).shuffle(order)
        start.wait()
        return [(step, answer(shared, step)) for step in order]

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for answers in pool.map(work, range(THREADS)):
            for step, got in answers:
                check_shared(step, got, expected, minimal_cores)
    assert shared.hits + shared.misses == THREADS * STEPS
    if cache_size == 0:
        assert shared.hits == 0


@pytest.mark.anyio
async def test_many_reasoners_in_anyio_tasks(
    expected: dict[tuple[int, str], list[Answer]],
    minimal_cores: list[set[frozenset[tuple[str, str]]]],
) -> None:
    results: dict[tuple[int, str], list[Answer]] = {}
    shared = reasoner(*SHARED, asynchronous=True, cache_size=0)
    shared_answers: list[tuple[int, Answer]] = []

    async def work(job: tuple[int, str]) -> None:
        r = reasoner(*job, asynchronous=True)
        got = []
        for step in range(STEPS):
            got.append(await aanswer(r, step))
            shared_answers.append((step, await aanswer(shared, STEPS - 1 - step)))
        results[job] = got

    async with anyio.create_task_group() as tg:
        for job in JOBS:
            tg.start_soon(work, job)
    assert results == {job: expected[job] for job in JOBS}
    assert len(shared_answers) == len(JOBS) * STEPS
    for step, got in shared_answers:
        check_shared(STEPS - 1 - step, got, expected, minimal_cores)


def test_async_requirements_in_worker_threads(
    expected: dict[tuple[int, str], list[Answer]],
) -> None:
    # Each thread runs its own event loop.
    def work(job: tuple[int, str]) -> list[Answer]:
        r = reasoner(*job, asynchronous=True)

        async def main() -> list[Answer]:
            return [await aanswer(r, step) for step in range(STEPS)]

        return anyio.run(main)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(JOBS, pool.map(work, JOBS), strict=True))
    for job in JOBS:
        assert results[job] == expected[job], job


# -- async requirements run concurrently within one decision -------------------------------------


def test_async_requirements_of_one_step_run_concurrently() -> None:
    # `early` waits for `late` to have started: awaited one after another, this step would
    # never finish (the fail_after turns that into a failure, not a hang).
    started = anyio.Event()

    @requirement(name="early")
    async def early(state: RunState) -> list[Item]:
        await started.wait()
        return [Rule("a", allowed=False)]

    @requirement(name="late")
    async def late(state: RunState) -> list[Item]:
        started.set()
        return [Rule("b", reason="b is fine")]

    async def main() -> None:
        with anyio.fail_after(HANG):
            p = await Reasoner(["a", "b"], [late, early]).adecide()
        assert p.allowed == ("b", "final_answer")
        assert dict(p.reasons) == {"b": "b is fine"}

    anyio.run(main)


def test_async_records_come_in_requirement_order_whatever_finishes_first() -> None:
    # `first` finishes once `second` has (awaited one after another, the run would never
    # end: the fail_after turns that into a failure, not a hang).
    order = []
    second_done = anyio.Event()

    @requirement(name="first")
    async def first(state: RunState) -> list[Item]:
        await second_done.wait()
        order.append("first")
        return [Rule("a", reason="first")]

    @requirement(name="second")
    async def second(state: RunState) -> list[Item]:
        order.append("second")
        second_done.set()
        return [Rule("a", reason="second")]

    async def main() -> list[Emitted]:
        with anyio.fail_after(HANG):
            return await Reasoner(["a"], [first, second]).aemit(RunState())

    emitted = anyio.run(main)
    assert order == ["second", "first"]
    assert [e.requirement for e in emitted] == ["first", "second"]


def test_the_first_failing_async_requirement_in_order_is_reported() -> None:
    # `b-fails-early` fails before `a-fails-late` does, whatever the machine runs first.
    b_failed = anyio.Event()

    @requirement(name="a-fails-late")
    async def a_fails_late(state: RunState) -> list[Item]:
        await b_failed.wait()
        raise ValueError("late")

    @requirement(name="b-fails-early")
    async def b_fails_early(state: RunState) -> list[Item]:
        b_failed.set()
        raise ValueError("early")

    async def main() -> None:
        with anyio.fail_after(HANG):
            await Reasoner(["a"], [b_fails_early, a_fails_late]).adecide()

    with pytest.raises(RequirementError) as info:
        anyio.run(main)
    assert info.value.requirement == "a-fails-late"
    assert isinstance(info.value.__cause__, ValueError)


def test_a_failing_sync_requirement_waits_for_the_async_ones_and_order_decides() -> None:
    finished = []

    @requirement(name="a-async")
    async def a_async(state: RunState) -> list[Item]:
        await anyio.lowlevel.checkpoint()  # suspends: the sync failure is known meanwhile
        finished.append("a-async")
        raise ValueError("first in name order")

    @requirement(name="b-sync")
    def b_sync(state: RunState) -> list[Item]:
        raise ValueError("second in name order")

    async def main() -> None:
        await Reasoner(["a"], [b_sync, a_async]).adecide()

    with pytest.raises(RequirementError) as info:
        anyio.run(main)
    assert info.value.requirement == "a-async"
    assert finished == ["a-async"]  # awaited, not abandoned


def test_a_yielding_retry_shares_the_decision_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    from ruleengine import CycleGuard, Step
    from ruleengine.aggregate import Aggregator

    began = []
    original = Aggregator.begin

    def counting(self: Aggregator) -> None:
        began.append(1)
        original(self)

    monkeypatch.setattr(Aggregator, "begin", counting)
    no_b = requirement(name="no-b")(lambda state: [Rule("b", allowed=False)])
    keep_going = requirement(name="keep-going")(
        lambda state: [Rule("final_answer", prevent_stop=True)]
    )
    steps = tuple(Step(tool="a", arguments={"q": 1}) for _ in range(3))
    r = Reasoner(["a", "b"], [CycleGuard(), no_b, keep_going])
    p = r.decide(RunState(steps=steps))  # the guard yields: denying `a` would leave nothing
    assert p.allowed == ("a",)
    assert p.explanation.yielded
    assert began == [1]
