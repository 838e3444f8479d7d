"""``check``: pick an engine, analyse, and turn the verdicts into a ``Report``.

Engines: ``explicit`` (breadth-first over the monitors' product, every state decided by the
runtime reasoner; any policy whose requirements have monitors) and ``symbolic`` (binary
decision diagrams over the same tabulated monitors; policies whose rules are literals,
which covers every built-in, in either mode). ``auto`` takes the symbolic engine when it applies,
except for the analysis of a whole policy with at most ``SMALL_STATES`` reachable states:
a breadth-first search that finds so few settles it with the explicit engine (the engines
agree; on so few states deciding each costs a fraction of building the BDD relations).
Policies with requirements that have no monitor get a bounded search of concrete histories,
reported as incomplete.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ruleengine import _validate
from ruleengine.check.analysis import Analysis, listed, named
from ruleengine.check.concrete import ConcreteSystem, analyse_concrete
from ruleengine.check.examples import with_examples
from ruleengine.check.explicit import analyse
from ruleengine.check.progress import note as note_progress
from ruleengine.check.properties import findings
from ruleengine.check.report import Finding, Report, Stats
from ruleengine.check.skipping import Impure, expand
from ruleengine.check.supervise import memory_share
from ruleengine.check.system import Checked, System, Unexplorable, symbolic_problem
from ruleengine.errors import PolicyError
from ruleengine.passes import Mode
from ruleengine.requirements.base import Requirement

if TYPE_CHECKING:
    from ruleengine.check.lanes import Aside

__all__ = ["CheckTarget", "EngineName", "check", "check_policy", "target"]

EngineName = Literal["auto", "explicit", "symbolic"]


class CheckTarget(Protocol):
    """What ``check_policy`` reads of a policy (``ruleengine.Policy`` has it all)."""

    @property
    def tools(self) -> Sequence[str]: ...

    @property
    def requirements(self) -> Sequence[Requirement]: ...

    @property
    def max_iterations(self) -> int: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def source(self) -> str: ...


def check_policy(
    policy: CheckTarget,
    *,
    max_iterations: int | None = None,
    timeout: float | None = None,
    max_states: int | None = None,
    engine: EngineName = "auto",
) -> Report:
    """``check`` on a policy's tools, requirements, mode and budget."""
    policy = target(policy, "check_policy")
    return check(
        policy.tools,
        policy.requirements,
        mode=policy.mode,
        max_iterations=policy.max_iterations if max_iterations is None else max_iterations,
        name=policy.source,
        timeout=timeout,
        max_states=max_states,
        engine=engine,
    )


_TARGET_FIELDS = ("tools", "requirements", "max_iterations", "mode", "source")


def target(policy: object, where: str) -> CheckTarget:
    """``policy`` if it has what a check reads of a policy (``CheckTarget``), else a
    ``PolicyError`` saying what ``where`` was given instead."""
    missing = next((f for f in _TARGET_FIELDS if not hasattr(policy, f)), None)
    if missing is not None:
        raise PolicyError(
            f"{where}: expected a `Policy`, got `{type(policy).__name__}` (it has no `{missing}`)",
            hint="load one with `Policy.load(path)`, or build `Policy(tools, requirements)`",
        )
    return policy  # type: ignore[return-value]  # checked just above, field by field


def check(
    tools: Sequence[object],
    requirements: Sequence[Requirement],
    *,
    mode: Mode = "strict",
    max_iterations: int = 20,
    name: str = "<python>",
    timeout: float | None = None,
    max_states: int | None = None,
    engine: EngineName = "auto",
) -> Report:
    """Every finding of SPEC §8 for these tools and requirements, each with its core and a
    shortest trace. ``complete`` is true when the verdicts hold for histories of any length;
    ``timeout`` (seconds) and ``max_states`` stop the search early, and the report says so."""
    _validate.integer(max_iterations, name="max_iterations", least=1)
    _validate.text(name, name="name")
    if timeout is not None:
        _validate.number(timeout, name="timeout")
    if max_states is not None:
        _validate.integer(max_states, name="max_states", least=1)
    _validate.one_of(engine, ("auto", "explicit", "symbolic"), name="engine")
    started = time.monotonic()
    deadline = started + timeout if timeout is not None else None
    clock = _Clock(deadline)
    system: Checked
    run: Callable[[Any, str | None], Analysis]
    try:
        # Counters past ``SKIP_FROM`` are tabulated band by band (``check/skipping.py``),
        # which only the explicit engine weighs: not when the symbolic one is asked for.
        system = System(tools, requirements, mode=mode, skipping=engine != "symbolic")
    except Unexplorable as exc:
        system = ConcreteSystem(tools, requirements, mode)
        why = str(exc)

        def concrete(sub: Any, focus: str | None = None) -> Analysis:
            found = analyse_concrete(
                sub.reasoner, depth=max_iterations, max_states=max_states, deadline=deadline
            )
            found.reason = f"{why}: {found.reason}"
            return found

        run = concrete

    else:
        if engine == "auto" and system.skips and not _narrow_enough(system, deadline):
            # Skipping through counts takes the explicit engine, which a wide space defeats:
            # the symbolic engine then, every count visited (one image per count).
            system = System(tools, requirements, mode=mode)
        run = _engine(system, engine, max_states=max_states, clock=clock, budget=max_iterations - 1)
    options = _Options(engine, timeout, deadline, clock, max_states, max_iterations)
    try:
        analysis, found, cut = _checked(system, run, options)
    except Impure:
        # A counter's calls inside a band move another requirement's view somewhere: every
        # count is visited instead (the time spent counts against the limit).
        system = System(tools, requirements, mode=mode)
        clock.deadline = deadline
        run = _engine(system, engine, max_states=max_states, clock=clock, budget=max_iterations - 1)
        analysis, found, cut = _checked(system, run, options)
    complete = analysis.complete and not cut
    reason = analysis.reason
    if analysis.complete and cut:
        reason = f"{cut[0]} while computing cores: the cores may not be minimal"
    elif cut:
        reason = f"{reason}; and the cores may not be minimal"
    return Report(
        policy=name,
        complete=complete,
        findings=tuple(found),
        stats=Stats(states=analysis.states, seconds=round(time.monotonic() - started, 3)),
        reason=None if complete else reason,
        undecided=() if complete else tuple(named(k) for k in analysis.undecided),
    )


@dataclass(frozen=True, slots=True)
class _Options:
    engine: EngineName
    timeout: float | None
    deadline: float | None
    clock: _Clock
    max_states: int | None
    max_iterations: int


def _checked(
    system: Checked, run: Callable[[Any, str | None], Analysis], options: _Options
) -> tuple[Analysis, list[Finding], list[str]]:
    """The analysis of ``system``, its findings (traces written out, with example values)
    and the answers the limits cut short."""
    engine, deadline, clock = options.engine, options.deadline, options.clock
    max_states, max_iterations = options.max_states, options.max_iterations
    note_progress(phase="exploring states")
    analysis = probe = None
    if engine == "auto" and isinstance(system, System):
        analysis, probe = _whole_if_small(system, max_states=max_states, deadline=deadline)
        if analysis is not None and analysis.states > SMALL_STATES:
            # Narrow and deep: its subsystems are too, so the core questions go to the
            # explicit engine as well.
            run = _engine(
                system,
                "explicit",
                max_states=max_states,
                clock=clock,
                budget=max_iterations - 1,
            )
    if analysis is None and engine == "auto" and isinstance(system, System):
        raced = _raced(system, run, options, probe)
        if raced is not None:
            return raced
    return _engine_path(system, run, options, analysis, probe)


def _engine_path(
    system: Checked,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    analysis: Analysis | None,
    probe: Analysis | None,
    analysed: Callable[[Analysis], None] | None = None,
) -> tuple[Analysis, list[Finding], list[str]]:
    """``_checked`` past the choice of an engine: its analysis (unless ``analysis`` is
    given), then the findings; ``analysed`` (if given) is told the analysis (``_light``)
    before the findings' cores are sought."""
    engine, timeout, deadline, clock = (
        options.engine,
        options.timeout,
        options.deadline,
        options.clock,
    )
    max_states = options.max_states
    if analysis is None:
        # With a time limit, `auto` keeps a share of it (``RESERVE``) for a breadth-first
        # search of the first steps, should the engine stop before a verdict of its own,
        # and for the cores of what either found.
        reserve = 0.0
        if engine == "auto" and timeout is not None and isinstance(system, System):
            reserve = _reserve(timeout)
        clock.deadline = None if deadline is None else deadline - reserve
        analysis = run(system, None)
        clock.deadline = deadline
        if not analysis.complete and reserve and isinstance(system, System):
            assert deadline is not None
            late = analyse(
                system, max_states=max_states, deadline=deadline - reserve / 2, live=False
            )
            if probe is None or late.states > probe.states:
                probe = late
        if probe is not None and not analysis.complete:
            analysis = with_probe(analysis, probe)
    if analysed is not None:
        analysed(_light(analysis))
    return analysis, *_found(system, analysis, run, options)


def _found(
    system: Checked,
    analysis: Analysis,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    *,
    known: Sequence[Finding] = (),
    reported: Callable[[list[Finding]], None] | None = None,
) -> tuple[list[Finding], list[str]]:
    """The findings of ``analysis`` (their traces written out, with example values) and
    the answers the limits cut short; ``known`` and ``reported`` as ``findings`` takes
    them (cores found before, and a hook for those found so far)."""
    cut: list[str] = []

    def core_question(sub: Any, focus: str | None = None) -> Analysis:
        # A core question the limits cut short answers "the finding does not hold", which
        # keeps the requirement in the core: the core stays right but may not be minimal.
        answer = run(sub, focus)
        exact = (
            focus is not None
            and focus.startswith("finish:")
            and answer.depth_done >= int(focus[7:])
        )  # a budget question is answered once the search got that deep
        if not answer.complete and not exact:
            cut.append(answer.reason or "the search stopped early")
        return answer

    note_progress(phase="finding cores", states=analysis.states)
    # The core questions end a little ahead of the limit: one step of an engine (one image
    # of a large subsystem) can outlast its deadline, and a check stopped from outside
    # claims nothing at all.
    deadline, clock = options.deadline, options.clock
    if deadline is not None and options.timeout is not None:
        deadline -= _core_margin(options.timeout)
    kept, clock.deadline = clock.deadline, deadline
    try:
        found = findings(
            system,
            analysis,
            max_iterations=options.max_iterations,
            engine=core_question,
            deadline=deadline,
            cut=cut,
            known=known,
            reported=reported,
        )
    finally:
        clock.deadline = kept
    if isinstance(system, System) and system.skips:
        found = expand(system, found)  # a band's calls written out, as the runtime replays
    # Traces through conditions on arguments carry example values that replay.
    return with_examples(system.reasoner, found), cut


def _core_margin(timeout: float) -> float:
    """The seconds of a time limit by which the core searches end ahead of it."""
    return min(CORE_MARGIN_MOST, CORE_MARGIN * timeout)


def _reserve(timeout: float) -> float:
    """The seconds of a time limit ``auto`` keeps from its engine."""
    return min(RESERVE_MOST, RESERVE * timeout)


_Answer = tuple[Analysis, list[Finding], list[str]]
"""A race's answer: an analysis (what a report takes of it), its findings, and the answers
the limits cut short."""


def _raced(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    probe: Analysis | None,
) -> tuple[Analysis, list[Finding], list[str]] | None:
    """``auto`` on a wide policy the symbolic engine takes: the engine's
    whole path (``_engine_path``) runs in a forked child (``lanes.Aside``) and, after
    ``ASIDE_GRACE`` of the limit, the verdicts decided one at a time (``_one_by_one``) in a
    second one; this process only waits on both. The first complete report is the answer
    (both give the same verdicts, traces and cores). Where neither is complete by the limit
    less the reserve, the engine's incomplete report if it came (``_fuller``: the other's
    where that came too and holds every finding it does), else the engine's child is
    killed there, however deep in one BDD operation it is, and the other's report, whose
    cores it computes in the reserve, is the answer; should that one not come by the
    limit either (a step that does not stop when told), it is killed too, and the answer
    is the analysis it last sent, with cores the limit cuts short (``_kept``). Without a
    limit, both run until one is complete, or both have answered (the engine's answer
    then). None where this does not apply (a state limit, which bounds the engine's search alone,
    the symbolic engine does not apply, no fork here, or the engine's child failed: the
    caller then runs the engine path itself, which repeats its error). Where the second
    child cannot start or fails, this process decides the verdicts itself
    (``_decided_here``)."""
    deadline, timeout = options.deadline, options.timeout
    if symbolic_problem(system) is not None:
        return None
    if options.max_states is not None:
        return None  # a bound on the engine's search, which the other does not keep
    from ruleengine.check.lanes import Aside

    def job(send: Callable[[object], None]) -> tuple[Analysis, list[Finding], list[str]]:
        analysis, found, cut = _engine_path(system, run, options, None, probe, send)
        return _light(analysis), found, cut

    child = Aside.reporting(job)
    if child is None:
        return None
    # Without a limit, both run until one is complete (or both have answered).
    stop = None
    if deadline is not None and timeout is not None:
        stop = deadline - _reserve(timeout) - _core_margin(timeout)
    side: Aside[_Answer] | None = None
    try:
        if child.wait(_sooner(stop, ASIDE_GRACE * (timeout or 0.0))):
            return _taken(child)
        note_progress(phase="deciding verdicts one by one")

        def beside(send: Callable[[object], None]) -> tuple[Analysis, list[Finding], list[str]]:
            # Behind the engine for the CPUs: it takes what the engine leaves idle.
            with contextlib.suppress(OSError):
                os.nice(SIDE_NICE)
            return _one_by_one(system, run, options, stop, send)

        side = Aside.reporting(beside)
        if side is not None:
            engine: _Answer | None = None
            dropped = False  # the engine's child stopped: the other's verdicts are all in
            crowd = _Crowd()
            while True:
                waiting = [a for a in (child, side) if not a.ready()]
                if waiting and not Aside.either(waiting, _sooner(stop, LOOK_SECONDS)):
                    if stop is not None and time.monotonic() >= stop:
                        break  # the limit less the reserve
                    share = crowd.share()
                    if dropped and share >= SIDE_MEMORY:
                        # Near the memory limit with the engine's child gone: what the
                        # other sent so far is the answer, before the supervisor stops all.
                        return _kept(system, run, options, side, probe, crowd.why())
                    settled = _settled(side.latest())
                    crowded = not dropped and not settled and share >= ENGINE_MEMORY
                    done = not dropped and not settled and _settled(child.latest())
                    if done:
                        # The engine's analysis complete: only its cores are left, which
                        # take the CPU and the memory the other child would hold
                        # (`indep-mixes-20-40-3`: complete at 17 s, its cores' lanes
                        # crowded at 21 s, and the engine was stopped). It gives way.
                        return _side_gave_way(
                            system, run, options, (child, side), probe, stop, (crowd, crowded)
                        )
                    if not dropped and (settled or share >= ENGINE_MEMORY):
                        # Every verdict decided one by one: only their cores are left,
                        # which take the CPU the engine's child would hold. Or the two
                        # near the memory limit, the engine's analysis not complete: it
                        # has nothing to report before its search ends, and gives way to
                        # the one that reports as it goes, whichever holds more (stopping
                        # that one instead, where it held more, left 58 verdicts of
                        # `indep-mixes-50-100-4` undecided and the engine no nearer its
                        # end; now 17).
                        child.stop()
                        dropped = True
                        crowd.dropped = share >= ENGINE_MEMORY
                    continue
                if child.ready() and not dropped:
                    engine = _taken(child)
                    if engine is None or engine[0].complete:
                        return engine  # None: failed, the caller repeats its error
                if side.ready():
                    ok, theirs = side.result()
                    if not ok or theirs is None:  # failed: decided here instead
                        if dropped:  # no engine to ask after: on our own
                            mine = _decided(system, run, options, stop)
                            return mine, *_found(system, mine, run, options)
                        return _decided_here(system, run, options, child, stop)
                    if theirs[0].complete:
                        return theirs
                if not waiting:
                    # Both in, neither complete. (Each answer is looked at above first:
                    # the other's may come while this process looks at what it sent, and
                    # be read only by ``ready`` at the top of the loop.)
                    break
            if engine is not None:
                return _fuller(engine, side)  # both incomplete
            if deadline is not None and timeout is not None:  # the limit ended the wait
                child.stop()  # the other's cores come next, in the reserve
                if not side.wait(deadline - _core_margin(timeout) / 2):
                    # Deep in one step that does not stop when told (a BDD operation,
                    # CUDD's reordering): the limit is kept with what it last sent.
                    return crowd.noted(_kept(system, run, options, side, probe))
                ok, theirs = side.result()
                if ok and theirs is not None:
                    return crowd.noted(theirs)
        return _decided_here(system, run, options, child, stop)
    finally:
        child.stop()
        if side is not None:
            side.stop()


def _fuller(engine: _Answer, side: Aside[_Answer]) -> _Answer:
    """Of ``_raced``'s two incomplete answers, the engine's and the verdicts
    decided one by one (if theirs came): theirs where it reports every finding the
    engine's does (by subject), for it also names the verdicts it left undecided, all the
    others decided, where an engine's incomplete report decides none; else the
    engine's."""
    if not side.ready():
        return engine
    ok, theirs = side.result()
    if not ok or theirs is None:
        return engine
    subjects = {(f.id, f.tool, f.requirement) for f in theirs[1]}
    if all((f.id, f.tool, f.requirement) in subjects for f in engine[1]):
        return theirs
    return engine


def _side_gave_way(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    children: tuple[Aside[_Answer], Aside[_Answer]],
    probe: Analysis | None,
    stop: float | None,
    memory: tuple[_Crowd, bool],
) -> _Answer | None:
    """``_raced`` where the engine's analysis is complete (only its cores are left;
    ``memory``: the race's ``_Crowd``, and whether it was near the memory limit then):
    the second child is stopped, and the engine's answer is the answer where it comes
    complete by ``stop`` (with a complete analysis, by the limit: its cores stop there);
    else the analysis the second child last sent, with its cores (``_kept``), or where it
    sent none, the engine's incomplete answer if it came (None: the engine's child failed,
    and the caller repeats its error). The engine's child alone at ``SIDE_MEMORY`` is
    stopped too, and what the other sent is the answer: past the limit the supervisor would
    stop the check with a report that claims nothing."""
    child, side = children
    crowd, crowded = memory
    side.stop()  # what it sent stays (``Aside.latest``)
    if _settled(child.latest()) and options.deadline is not None:
        stop = options.deadline
    engine = None
    why = crowd.why() if crowded else None
    while not child.wait(_sooner(stop, LOOK_SECONDS)):
        if stop is not None and time.monotonic() >= stop:
            break
        if crowd.share() >= SIDE_MEMORY:
            why = crowd.why(engine_after=True)
            break
    else:
        engine = _taken(child)
        if engine is None or engine[0].complete:
            return engine
    child.stop()
    if engine is not None and not isinstance(side.latest(), Analysis | _Cored):
        return engine
    return _kept(system, run, options, side, probe, why)


def _sooner(stop: float | None, seconds: float) -> float:
    """The ``time.monotonic()`` value ``seconds`` from now, or ``stop`` if that is sooner."""
    then = time.monotonic() + seconds
    return then if stop is None else min(stop, then)


LOOK_SECONDS = 0.25
"""How often ``_raced`` looks at what the verdicts one by one last sent."""

MEMORY_LOOK = 0.5
"""How often, at most, ``_raced`` looks at the memory its processes hold."""

ENGINE_MEMORY = 0.6
"""The share of the supervisor's memory limit at which ``_raced`` stops the engine's child
while the verdicts decided one by one go on: the engine's diagrams grow in bursts (on
`indep-counters-50-100-5` its process came near a gigabyte within the minute), and with the
other process the two passed the 2 GiB limit, so the supervisor stopped the check with a
report that claimed nothing."""

SIDE_MEMORY = 0.85
"""The share at which, the engine's child gone, the verdicts decided one by one are stopped
too, and what they sent so far is the answer (``_kept``)."""


def _settled(sent: object) -> bool:
    """Whether what the verdicts one by one last sent is their whole analysis, complete
    (sent before they seek the cores, and again with each core they find)."""
    if isinstance(sent, _Cored):
        sent = sent.analysis
    return isinstance(sent, Analysis) and sent.complete


class _Crowd:
    """How near the supervisor's memory limit (``supervise.memory_share``) ``_raced``'s
    processes are, looked at every ``MEMORY_LOOK`` seconds at most."""

    def __init__(self) -> None:
        self.last = 0.0
        self.held = 0.0
        self.looked = -MEMORY_LOOK
        self.dropped = False
        """Whether the engine's child was stopped for the memory it held."""

    def share(self) -> float:
        """The share of the memory limit held now (0 without a limit)."""
        now = time.monotonic()
        if now - self.looked >= MEMORY_LOOK:
            self.looked = now
            self.last = memory_share() or 0.0
            self.held = max(self.held, self.last)
        return self.last

    def why(self, engine_after: bool = False) -> str:
        """Why an answer was taken early for memory (``engine_after``: the verdicts one by
        one were stopped first, and the engine's process after them)."""
        engine = " (the engine's process stopped first)" if self.dropped else ""
        then = ", and the engine's process after them" if engine_after else ""
        return (
            f"the check's processes came to {self.held:.0%} of the memory limit{engine}; "
            f"the verdicts decided one by one were stopped there{then}"
        )

    def noted(self, answer: _Answer) -> _Answer:
        """``answer`` (the verdicts decided one by one), its reason saying that the engine
        was stopped for memory, not time, where it was and the answer is incomplete."""
        analysis = answer[0]
        reason = analysis.reason
        if not self.dropped or analysis.complete or not reason:
            return answer
        engine = f"the engine was stopped at {self.held:.0%} of the memory limit"
        reason = _instead(engine, reason)
        return replace(analysis, reason=reason), answer[1], answer[2]


def _kept(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    side: Aside[_Answer],
    probe: Analysis | None,
    why: str | None = None,
) -> tuple[Analysis, list[Finding], list[str]]:
    """The answer of a race whose second child is still at work at the limit (or near the
    memory limit: ``why`` says so, in the reason of an analysis it cut short): that child
    stopped, the analysis it last sent (``_one_by_one``) with its findings: the cores it
    sent are kept, the others the limit cuts short (each keeps every requirement it might
    need); else what this process's probe decided (``_lost``)."""
    if side.ready():  # it answered just now, or failed
        ok, theirs = side.result()
        if ok and theirs is not None:
            return theirs
    sent = side.latest()  # with what it sent that this process had not read yet
    side.stop()
    known: list[Finding] = []
    if isinstance(sent, _Cored):
        known = sent.findings  # the cores it found are kept
        sent = sent.analysis
    if not isinstance(sent, Analysis):
        sent = _lost(system, probe, why)
    elif why is not None and not sent.complete:
        sent = replace(sent, reason=_instead(why, sent.reason or ""))
    return sent, *_found(system, sent, run, options, known=known)


def _lost(system: System, probe: Analysis | None, why: str | None = None) -> Analysis:
    """The analysis of a race whose children both outlasted the limit (or came near the
    memory limit: ``why`` says so), the second before it sent anything (starved of the
    CPUs behind its niceness, or stuck in one step): what this process's own probe
    (``_whole_if_small``) decided, the other verdicts named undecided; without a probe,
    nothing decided."""
    if why is None:
        why = (
            "the time limit ran out with the engine and the verdicts decided one by one both "
            "still at work"
        )
    if probe is not None:
        from ruleengine.check.compositional import decided_by_probe

        kept = decided_by_probe(system, probe)
        n = len(kept.undecided)
        kept.reason = (
            f"{why}: only what the first {probe.states:,} states showed is decided; "
            f"{n} verdict{'' if n == 1 else 's'} left undecided: {listed(kept.undecided)}"
        )
        return kept
    return Analysis(states=0, complete=False, reason=f"{why}: nothing is decided")


def _one_by_one(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    stop: float | None,
    send: Callable[[object], None] | None = None,
) -> tuple[Analysis, list[Finding], list[str]]:
    """The verdicts decided one at a time until ``stop`` (``_decided``), with their
    findings and cores, as ``_raced``'s second child reports them; ``send`` (if given) is
    sent what is decided as the analysis goes on, the whole analysis before its cores are
    sought, and then again with each core found (``_Cored``), for a parent that cannot
    wait for the end."""
    mine = _decided(system, run, options, stop, progress=send)
    if send is None:
        return _light(mine), *_found(system, mine, run, options)
    send(mine)

    def reported(found: list[Finding]) -> None:
        send(_Cored(mine, found))

    return _light(mine), *_found(system, mine, run, options, reported=reported)


@dataclass(frozen=True)
class _Cored:
    """What the verdicts one by one send each time they find a core: the analysis, and the
    findings with the cores found so far (``findings``' ``reported``), which ``_kept`` keeps
    should the rest not come in time."""

    analysis: Analysis
    findings: list[Finding]


def _decided(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    stop: float | None,
    interrupt: Callable[[], bool] | None = None,
    progress: Callable[[Analysis], None] | None = None,
) -> Analysis:
    """``compositional.analyse_compositional`` until ``stop`` (or until ``interrupt`` says
    to), its reason saying that the engine did not finish where it is incomplete (as do
    the analyses given to ``progress`` as it goes)."""
    from ruleengine.check.compositional import analyse_compositional

    given = None if progress is None else (lambda analysis: progress(_unfinished(analysis)))
    return _unfinished(
        analyse_compositional(
            system,
            _encoding_of(system, run),
            budget=options.max_iterations - 1,
            deadline=stop,
            interrupt=interrupt,
            progress=given,
        )
    )


UNFINISHED = "the engine did not finish within the time limit"
"""How the reason of an incomplete one-by-one analysis begins (``_unfinished``)."""


def _instead(why: str, reason: str) -> str:
    """``reason`` (an incomplete one-by-one analysis's) led by ``why`` in place of its
    ``UNFINISHED`` (the engine stopped for memory, not time), or before it."""
    if reason.startswith(UNFINISHED):
        reason = reason[len(UNFINISHED) :].removeprefix("; ")
    return f"{why}; {reason}" if reason else why


def _unfinished(analysis: Analysis) -> Analysis:
    """A compositional analysis, its reason saying that the engine did not finish where it
    is incomplete."""
    if not analysis.complete:
        analysis.reason = f"{UNFINISHED}; {analysis.reason}"
    return analysis


def _decided_here(
    system: System,
    run: Callable[[Any, str | None], Analysis],
    options: _Options,
    child: Aside[_Answer],
    stop: float | None,
) -> tuple[Analysis, list[Finding], list[str]] | None:
    """``_raced`` without its second child: this process decides the verdicts one by one,
    asking the engine's child between steps, and computes the cores of its own report once
    that child is stopped. A fault here must not cost the engine's answer: it is waited for,
    and the fault raised only if it does not come."""
    try:
        mine = _decided(system, run, options, stop, child.ready)
    except Exception:
        if child.wait(stop):
            answer = _taken(child)
            if answer is not None:
                return answer
        raise
    if child.ready() or (not mine.complete and child.wait(stop)):
        return _taken(child)
    child.stop()
    return mine, *_found(system, mine, run, options)


def _light(analysis: Analysis) -> Analysis:
    """What a report takes from an analysis (``check``), to send back from a child."""
    return Analysis(
        states=analysis.states,
        complete=analysis.complete,
        reason=analysis.reason,
        undecided=analysis.undecided,
    )


def _taken(
    child: Aside[_Answer],
) -> tuple[Analysis, list[Finding], list[str]] | None:
    ok, answer = child.result()
    return answer if ok else None


def _encoding_of(system: System, run: Callable[[Any, str | None], Analysis]) -> Any:
    """The symbolic engine's encoding of ``system`` (built now; shared with ``run`` when it
    is the symbolic engine, whose core questions then reuse it)."""
    from ruleengine.check.symbolic import Encoding

    if isinstance(run, _SymbolicEngine):
        if run.encoding is None:
            run.encoding = Encoding(system)
        return run.encoding
    return Encoding(system)


ASIDE_GRACE = 0.0
"""The share of a time limit ``auto`` waits for its engine alone before deciding verdicts
one by one beside it (``_raced``). None: the second child runs niced (``SIDE_NICE``), so it
takes the CPU the engine leaves idle, and the engine's processes barely notice it. Measured
on 10 seeds each at 50 tools with the default 60 s limit, against a quarter of the limit
with the one-by-one analysis in this process: ReAct p50 1.91 → 1.42 s, p95 19.7 → 16.7 s;
approvals 1.21 → 1.01 s, 14.6 → 4.0 s (complete one-by-one reports before the engine's);
chains 1.11 → 0.75 s, 4.5 → 3.0 s."""


SIDE_NICE = 19
"""The niceness of ``_raced``'s second child: the scheduler gives the engine's processes a
CPU first, and the verdicts one by one the rest."""


RESERVE = 0.1
"""The share of a time limit ``auto`` keeps from its engine (see ``check``)."""

RESERVE_MOST = 3.0
"""The most seconds it keeps."""

CORE_MARGIN = 0.05
"""The share of a time limit by which the core searches end ahead of it (``_found``), and
by which ``_raced`` stops deciding verdicts earlier to leave them their time: what follows
them must fit too. Measured at 200 tools with a 60 s limit: one image of a core question's
subsystem outlasted its deadline by 0.6 s; writing the traces out and the report took
0.8 s more; 171 findings whose cores the limit cut (each then names every requirement it
could not drop) made 5.8 MB of JSON, 0.75 s to send to the supervisor and 0.6 s to read
and print. The supervisor stops a check half a second past the limit, and a stopped
check claims nothing."""

CORE_MARGIN_MOST = 3.0
"""The most seconds of that margin."""

SMALL_STATES = 256
"""Reachable states up to which ``auto`` analyses a whole policy with the explicit engine."""

NARROW_STATES = 4096
"""Reachable states up to which ``auto`` analyses a *narrow* policy with the explicit engine."""

NARROW_WIDTH = 4
"""States per layer (step from the start) at most, on average, in a narrow policy."""


def _whole_if_small(
    system: System, *, max_states: int | None, deadline: float | None
) -> tuple[Analysis | None, Analysis]:
    """The explicit engine's analysis of ``system`` when a breadth-first search without
    liveness (the costly part: a decision per requirement and state) finds every reachable
    state within ``SMALL_STATES``, or within ``NARROW_STATES`` with at most ``NARROW_WIDTH``
    states per layer on average (and within the state limit); else None. Second, that
    search itself (``with_probe`` keeps what it found when the other engine stops early).

    Narrow and deep spaces (a chain of steps, a forced sequence) are the symbolic engine's
    worst case: its cost grows with the layers times the steps, the explicit one's with the
    states (300 tools chained by `only_after`: 301 states, 300 layers; 0.9 s explicit
    against 10 s symbolic). Wide ones are its best (ReAct at 20 tools: 3,452 states in 45
    layers, 0.06 s symbolic against 0.9 s explicit). The search costs a few milliseconds
    where it gives up (a wide space is given up past ``NARROW_WIDTH`` states per layer), and
    its decisions are cached for the analysis."""
    limit = SMALL_STATES if max_states is None else min(SMALL_STATES, max_states)
    probe = analyse(system, max_states=limit, deadline=deadline, live=False)
    if not probe.complete:
        limit = NARROW_STATES if max_states is None else min(NARROW_STATES, max_states)
        if probe.states < limit:
            narrow = analyse(
                system, max_states=limit, deadline=deadline, live=False, width=NARROW_WIDTH
            )
            # A wide space gives the narrow search up early: the first one saw more.
            if narrow.complete or narrow.states >= probe.states:
                probe = narrow
    if not probe.complete:
        return None, probe
    return analyse(system, max_states=max_states, deadline=deadline, live=True), probe


SKIP_PROBE_STATES = 20_000
"""States up to which ``auto`` lets the explicit engine check a policy with counters it
skips through (past them the space is too wide for it: ``_narrow_enough``)."""


def _narrow_enough(system: System, deadline: float | None) -> bool:
    """Whether a search without liveness of ``system`` (which skips through counts) ends
    within ``SKIP_PROBE_STATES`` states: then the explicit engine checks it, counts taken by
    bands; else the symbolic engine does, count by count. (A counter of 100,000 calls costs
    the symbolic engine one image per count; a wide space costs the explicit engine a
    decision per state: 20 tools of approvals with one large cap, 58 s explicit against
    0.1 s symbolic.) False too where the search meets a skip another requirement sees."""
    # Not cut by `max_states`: the check itself stops there; this only chooses the engine.
    try:
        return analyse(system, max_states=SKIP_PROBE_STATES, deadline=deadline, live=False).complete
    except Impure:
        return False  # another requirement sees the skipped calls: count by count anyway


def with_probe(analysis: Analysis, probe: Analysis) -> Analysis:
    """``analysis`` (incomplete) with the witnesses a shorter search (``probe``, of the same
    system) found and it did not: each is a real shortest history, so a report that stops
    early still shows what the first steps hold (a symbolic search that runs out of time
    before its first verdict reports nothing of its own). Verdicts that need a whole search
    (dead tools, no-finish) are not taken from an incomplete probe."""
    return replace(
        analysis,
        deadlock=analysis.deadlock or probe.deadlock,
        tie=analysis.tie or probe.tie,
        forced_conflicts={**probe.forced_conflicts, **analysis.forced_conflicts},
        allowed_tools=analysis.allowed_tools | probe.allowed_tools,
        firsts={**probe.firsts, **analysis.firsts},
        finish_depth=probe.finish_depth if analysis.finish_depth is None else analysis.finish_depth,
        finishes_within=analysis.finishes_within or probe.finish_depth,
        depth_done=max(analysis.depth_done, probe.depth_done),
    )


class _Clock:
    """The deadline the engines keep, read at each question (``check`` moves it)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline


def _engine(
    system: System,
    name: EngineName,
    *,
    max_states: int | None,
    clock: _Clock,
    budget: int,
) -> Callable[[Any, str | None], Analysis]:
    """The engine ``name`` picks for ``system``, as a function of a (sub)system and a focus."""
    problem = symbolic_problem(system)
    if name == "symbolic" and problem is not None:
        raise PolicyError(
            f"the symbolic engine cannot check this policy: {problem}", hint=_EXPLICIT_HINT
        )

    def explicit(sub: Any, focus: str | None = None) -> Analysis:
        live: bool | str = focus is None
        if focus is not None and focus.startswith("live:"):
            live = focus[5:]
        return analyse(sub, max_states=max_states, deadline=clock.deadline, live=live)

    if name == "explicit" or problem is not None:
        return explicit
    return _SymbolicEngine(
        system,
        max_states=max_states,
        clock=clock,
        budget=budget,
        fallback=None if name == "symbolic" else explicit,
    )


_EXPLICIT_HINT = "the default engine (`auto`) checks it with the explicit engine"

SYMBOLIC_FIRST = 5.0
"""Seconds a core question whether a tool is ever allowed, a requirement ever live, or the
run may stop within N steps goes to the symbolic engine first; unanswered by then, the
verdicts one by one answer it, then the symbolic engine has the time left
(``_SymbolicEngine``)."""

SYMBOLIC_AGAIN = 1.0
"""``SYMBOLIC_FIRST`` for a question the symbolic engine already left open on another
subsystem: a core search asks one question of subsystems of every size in turn, the small
ones answered by the symbolic engine in a fraction of a second, the large ones not in the
time it has. (`conditionals-50-100-2`: whether a requirement is ever live, of 75, 74, 72
and 69 of the 100 requirements, the symbolic engine had no answer in 5 s, the verdicts one
by one one in 3 s each.)"""


class _SymbolicEngine:
    """The symbolic engine for a system and its subsystems, sharing one encoding. The BDD
    package is imported, and the encoding built, at the first question: a policy whose
    analyses all end in a short explicit search (``SMALL_STATES``, the quick searches of
    the core questions) never pays for either."""

    def __init__(
        self,
        system: System,
        *,
        max_states: int | None,
        clock: _Clock,
        budget: int,
        fallback: Callable[[Any, str | None], Analysis] | None,
    ) -> None:
        self.system = system
        self.fallback = fallback
        """The explicit engine, for a (sub)system whose steps the encoding cannot decide
        (``symbolic_priority.Ambiguous``); None where the symbolic engine was asked for."""
        self.max_states = max_states
        self.clock = clock
        self.budget = budget
        self.encoding: Any = None
        self.unanswered: dict[str, list[frozenset[str]]] = {}
        """Per question "ever allowed, ever live, a stop within N steps?" (``tool:T``,
        ``live:R``, ``finish:N``), the requirements of the subsystems where bounded model
        checking answered nothing."""
        self.symbolic_cut: set[str] = set()
        """The questions (``tool:T``, ``live:R``, ``finish:N``) the symbolic engine left open
        on some subsystem after its first try: asked again, of another, it has
        ``SYMBOLIC_AGAIN``."""

    def __call__(self, sub: Any, focus: str | None = None) -> Analysis:
        from ruleengine.check.symbolic import Encoding, analyse_symbolic
        from ruleengine.check.symbolic_priority import Ambiguous

        if self.encoding is None:
            self.encoding = Encoding(self.system)
        asked = focus is not None and focus.startswith(("tool:", "live:", "finish:"))
        names = frozenset(c.requirement.name for c in sub.components) if asked else frozenset()
        # A subsystem with the requirements of one where bounded model checking answered
        # nothing, and more, has no more histories (in strict mode, the symbolic engine's,
        # a requirement only takes steps away): the reachable set or the layers answer at
        # once. (`indep-chains-50-100-1`: a dead requirement's core search asked about 50,
        # 75, 87, ..., 99 of its 100 requirements in turn, each with Z3 held for 1-2 s
        # before the reachable set showed the requirement live.)
        tried = asked and any(n <= names for n in self.unanswered.get(str(focus), ()))

        def unanswered() -> None:
            self.unanswered.setdefault(str(focus), []).append(names)

        def symbolic(deadline: float | None) -> Analysis:
            return analyse_symbolic(
                sub,
                max_states=self.max_states,
                deadline=deadline,
                encoding=self.encoding,
                focus=focus,
                budget=self.budget,
                unrolled=not tried,
                unanswered=unanswered if asked else None,
            )

        deadline = self.clock.deadline
        try:
            if not self._one_by_one_may(sub, focus):
                return symbolic(deadline)
            cut = focus in self.symbolic_cut
            first = time.monotonic() + (SYMBOLIC_AGAIN if cut else SYMBOLIC_FIRST)
            answer = symbolic(first if deadline is None else min(first, deadline))
            if answer.complete or (deadline is not None and time.monotonic() >= deadline):
                return answer
            self.symbolic_cut.add(str(focus))
            decided = self._one_by_one(sub, str(focus), deadline)
            if decided is not None:
                return decided
            return symbolic(deadline)
        except Ambiguous as exc:
            if self.fallback is None:
                raise PolicyError(
                    f"the symbolic engine cannot check this policy: {exc}", hint=_EXPLICIT_HINT
                ) from None
            return self.fallback(sub, focus)

    def _one_by_one_may(self, sub: Any, focus: str | None) -> bool:
        """Whether a question the symbolic engine does not answer within ``SYMBOLIC_FIRST``
        goes to the verdicts one by one: whether a tool is ever allowed, a requirement ever
        live, or the run may stop within a number of steps, of a policy's subsystem, without
        a limit on the states. (A core search of `indep-mixes-50-100-9`, in priority mode,
        asked whether one of 8 requirements is ever live: the symbolic engine's reachable
        set, past 10²⁵ states, was not done in 37 s; the verdicts one by one decided every
        verdict of that subsystem in 1.3 s. The budget's core of
        `indep-conditionals-50-100-8` asked whether 81 of the 100 requirements let the run
        stop within 37 steps: the symbolic engine's layers had no answer in 40 s.)"""
        return (
            focus is not None
            and focus.startswith(("tool:", "live:", "finish:"))
            and isinstance(sub, System)
            and self.max_states is None
        )

    def _one_by_one(self, sub: System, focus: str, deadline: float | None) -> Analysis | None:
        """The answer to ``focus`` (``tool:T``, ``live:R`` or ``finish:N``) of the verdicts
        one by one on ``sub`` until ``deadline``, as the symbolic engine gives a focused one
        (``partial``); None where they did not answer it (``answered``)."""
        from ruleengine.check.compositional import (
            analyse_compositional,
            answered,
            shortest_finish,
        )

        kind, name = focus.split(":", 1)
        budget = int(name) if kind == "finish" else self.budget
        found = analyse_compositional(
            sub, self.encoding, budget=budget, deadline=deadline, until=focus
        )
        if not answered(found, focus):
            return None
        answer = Analysis(states=found.states, depth_done=found.depth_done, partial=True)
        if kind == "finish":
            # Within N steps or not: the least steps known where they are at most N, with
            # the history where it is that short; else none within N.
            known = shortest_finish(found)
            if known is not None and known <= budget:
                answer.finishes_within = known
                example = found.firsts.get("finish")
                if example is not None and len(example) <= budget:
                    answer.example = example
            return answer
        if kind == "live" and name in found.live:
            answer.live.add(name)
        if kind == "tool" and name in found.allowed_tools:
            answer.allowed_tools.add(name)
        if answer.live or answer.allowed_tools:
            answer.example = found.firsts.get(focus)  # its history there, where it kept one
        return answer
