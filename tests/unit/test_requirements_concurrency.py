"""Requirement objects hold no per-run state (SPEC §3, §9): one ConditionalRequirement or
AskPermissionRequirement object serves many runs at once, in threads and in anyio tasks, and
every run gets exactly the answers it gets when the runs are made one after another."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import anyio

from agent import permission
from ruleengine import (
    FINAL_ANSWER,
    AskPermissionRequirement,
    ConditionalRequirement,
    ConflictError,
    Reasoner,
    RunState,
    Step,
)

TOOLS = ["search", "think", "weather", "send_email"]
RUNS = 120
THREADS = 8


def trace_for(run: int) -> list[tuple[str, str]]:
    rng = random.Random(run)
    return [
        (rng.choice(TOOLS), rng.choice(("ok", "ok", "error", "denied")))
        for _ in range(rng.randrange(0, 11))
    ]


def every_fifth_step_blocked(state: RunState) -> bool:
    return len(state.steps) % 5 != 4


def conditionals() -> list[ConditionalRequirement]:
    return [
        ConditionalRequirement(
            "search",
            only_after="weather",
            min_invocations=1,
            max_invocations=2,
            custom_checks=[every_fifth_step_blocked],
            reason="weather first",
        ),
        ConditionalRequirement(
            "think",
            force_after=["search", "weather"],
            consecutive_allowed=False,
            only_success_invocations=False,
        ),
        ConditionalRequirement("send_email", force_at_step=4, only_before="think", priority=3),
    ]


def outcome(reasoner: Reasoner, state: RunState) -> tuple:
    try:
        p = reasoner.decide(state)
    except ConflictError as e:
        return ("conflict", tuple(sorted(c.requirement for c in e.core)))
    return (p.allowed, p.hidden, p.forced, p.can_stop, p.tool_choice, dict(p.reasons))


def in_threads(work, jobs: list) -> list:
    """Run ``work(job)`` for every job on THREADS threads that start together."""
    barrier = threading.Barrier(THREADS)
    chunks = [jobs[i::THREADS] for i in range(THREADS)]

    def worker(chunk: list) -> list:
        barrier.wait(timeout=60)
        return [(job, work(job)) for job in chunk]

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        done = list(pool.map(worker, chunks))
    return [pair for chunk in done for pair in chunk]


# -- ConditionalRequirement ----------------------------------------------------------------------


def test_one_conditional_object_serves_many_threads():
    reqs = [r.bind(TOOLS) for r in conditionals()]

    def rules(run: int) -> list[tuple]:
        state = RunState.from_trace(trace_for(run))
        return [tuple(r.run(state)) for r in reqs]

    sequential = {run: rules(run) for run in range(RUNS)}
    for run, got in in_threads(rules, list(range(RUNS)) * 3):
        assert got == sequential[run], run


def test_one_state_read_by_many_threads_at_once():
    reqs = [r.bind(TOOLS) for r in conditionals()]
    states = [RunState.from_trace(trace_for(run)) for run in range(RUNS)]
    sequential = {
        run: [tuple(r.run(RunState.from_trace(trace_for(run)))) for r in reqs]
        for run in range(RUNS)
    }

    def rules(run: int) -> list[tuple]:
        return [tuple(r.run(states[run])) for r in reqs]

    for run, got in in_threads(rules, list(range(RUNS)) * THREADS):
        assert got == sequential[run], run


def test_shared_requirements_in_per_thread_and_shared_reasoners():
    reqs = conditionals()
    shared = Reasoner(TOOLS, reqs)
    reference = Reasoner(TOOLS, reqs)
    sequential = {run: outcome(reference, RunState.from_trace(trace_for(run))) for run in range(60)}
    local = threading.local()

    def decide(run: int) -> tuple:
        if not hasattr(local, "reasoner"):
            local.reasoner = Reasoner(TOOLS, reqs)
        state = RunState.from_trace(trace_for(run))
        return (outcome(local.reasoner, state), outcome(shared, state))

    for run, (own, common) in in_threads(decide, list(range(60)) * 2):
        assert own == sequential[run], run
        assert common == sequential[run], run


def test_one_conditional_object_serves_many_anyio_tasks():
    reqs = conditionals()
    reasoner = Reasoner(TOOLS, reqs)
    bound = list(reasoner.requirements)
    reference = Reasoner(TOOLS, reqs)
    sequential = {
        run: (
            [tuple(r.run(RunState.from_trace(trace_for(run)))) for r in bound],
            outcome(reference, RunState.from_trace(trace_for(run))),
        )
        for run in range(RUNS)
    }

    async def one_run(run: int, results: dict) -> None:
        state = RunState()
        for tool, status in trace_for(run):
            await anyio.sleep(0)  # let the other runs interleave between steps
            state = state.with_step(Step(tool=tool, status=status))
        await anyio.sleep(0)
        rules = [tuple(r.run(state)) for r in bound]
        await anyio.sleep(0)
        results[run] = (rules, outcome(reasoner, state))

    async def main() -> dict:
        results: dict = {}
        async with anyio.create_task_group() as tg:
            for run in range(RUNS):
                tg.start_soon(one_run, run, results)
        return results

    assert anyio.run(main) == sequential


# -- AskPermissionRequirement --------------------------------------------------------------------


def verdict(tool: str, run: int, attempt: int) -> bool:
    """The human's answer in run ``run`` at attempt ``attempt``: the same whatever the timing."""
    return (run * 7 + attempt * 3 + TOOLS.index(tool)) % 4 != 0


class AsyncHuman:
    """An async handler that yields to other tasks while thinking; counts calls per run."""

    def __init__(self) -> None:
        self.calls: dict[int, int] = {}
        self._lock = threading.Lock()

    async def __call__(self, tool, arguments) -> bool:
        for _ in range(3):
            await anyio.sleep(0)
        run, attempt = arguments["run"], arguments["attempt"]
        with self._lock:
            self.calls[run] = self.calls.get(run, 0) + 1
        return verdict(tool, run, attempt)


class SyncHuman(AsyncHuman):
    def __call__(self, tool, arguments) -> bool:  # type: ignore[override]
        run, attempt = arguments["run"], arguments["attempt"]
        with self._lock:
            self.calls[run] = self.calls.get(run, 0) + 1
        return verdict(tool, run, attempt)


def plan(run: int) -> list[str]:
    rng = random.Random(1000 + run)
    return [rng.choice([*TOOLS, FINAL_ANSWER]) for _ in range(8)]


async def permission_run(req: AskPermissionRequirement, run: int, yields: bool = True) -> tuple:
    """Ask before each planned call, record it `ok` or `denied`; answer the trace and rules."""
    state = RunState()
    answers = []
    for attempt, tool in enumerate(plan(run)):
        if yields:
            await anyio.sleep(0)
        ok = await permission.ask(req, tool, {"run": run, "attempt": attempt}, state)
        answers.append(ok)
        state = state.with_step(Step(tool=tool, status="ok" if ok else "denied"))
    return answers, [(s.tool, s.status) for s in state.steps], tuple(req.run(state))


def sequential_permission(make_handler, **kwargs) -> tuple[dict, dict]:
    handler = make_handler()
    req = AskPermissionRequirement(handler=handler, **kwargs).bind(TOOLS)
    results = {run: anyio.run(permission_run, req, run) for run in range(RUNS)}
    return results, dict(handler.calls)


def test_one_permission_object_serves_many_anyio_tasks():
    expected, expected_calls = sequential_permission(
        AsyncHuman, remember_choices=True, hide_disallowed=True
    )
    handler = AsyncHuman()
    req = AskPermissionRequirement(
        handler=handler, remember_choices=True, hide_disallowed=True
    ).bind(TOOLS)

    async def main() -> dict:
        results: dict = {}

        async def one(run: int) -> None:
            results[run] = await permission_run(req, run)

        async with anyio.create_task_group() as tg:
            for run in range(RUNS):
                tg.start_soon(one, run)
        return results

    assert anyio.run(main) == expected
    assert handler.calls == expected_calls
    # remembering means at most one question per covered tool and run
    assert all(n <= len(TOOLS) for n in handler.calls.values())
    assert any(rules for _, _, rules in expected.values())


def test_one_permission_object_serves_many_threads():
    for make_handler in (AsyncHuman, SyncHuman):
        expected, expected_calls = sequential_permission(make_handler, remember_choices=True)
        handler = make_handler()
        req = AskPermissionRequirement(handler=handler, remember_choices=True).bind(TOOLS)

        def one(run: int, req=req) -> tuple:
            return anyio.run(permission_run, req, run)

        for run, got in in_threads(one, list(range(RUNS))):
            assert got == expected[run], run
        assert handler.calls == expected_calls


def test_without_remembering_every_call_is_asked_in_every_run():
    expected, expected_calls = sequential_permission(AsyncHuman)
    handler = AsyncHuman()
    req = AskPermissionRequirement(handler=handler).bind(TOOLS)

    async def main() -> dict:
        results: dict = {}

        async def one(run: int) -> None:
            results[run] = await permission_run(req, run)

        async with anyio.create_task_group() as tg:
            for run in range(RUNS):
                tg.start_soon(one, run)
        return results

    assert anyio.run(main) == expected
    assert handler.calls == expected_calls
    for run in range(RUNS):
        asked = sum(1 for tool in plan(run) if tool != FINAL_ANSWER)
        assert handler.calls.get(run, 0) == asked
