"""ruleengine.check.progress: notes reach the sink of the check being watched, throttled but
never losing a change of phase; without a watch they cost nothing and go nowhere."""

from __future__ import annotations

import threading

from ruleengine import ConditionalRequirement, Policy
from ruleengine.check import check_policy
from ruleengine.check.progress import Status, Watch, current, note, watching


def test_notes_outside_a_watch_go_nowhere() -> None:
    note(phase="exploring states", states=5)
    assert current() is None


def test_a_watch_keeps_the_largest_state_count_and_the_latest_of_the_rest() -> None:
    seen: list[Status] = []
    with watching(seen.append) as watch:
        note(phase="exploring states", states=10, layers=2, engine="explicit")
        note(states=4, layers=1)  # a smaller search (a core question) counts less
        note(phase="finding cores", findings=3)
    assert watch.status == Status("finding cores", 10, 1, 3, "explicit")
    assert [s.phase for s in seen] == ["exploring states", "finding cores"]  # throttled


def test_the_sink_is_throttled_but_every_change_of_phase_gets_through() -> None:
    seen: list[Status] = []
    Watch.every, saved = 3600.0, Watch.every
    try:
        with watching(seen.append):
            for n in range(1000):
                note(states=n)
            note(phase="finding cores")
    finally:
        Watch.every = saved
    assert [s.phase for s in seen] == ["starting", "finding cores"]
    assert seen[-1].states == 999


def test_a_check_notes_its_phases() -> None:
    seen: list[Status] = []
    policy = Policy(["a", "b"], [ConditionalRequirement("b", only_after=["a"])])
    with watching(seen.append):
        check_policy(policy)
    phases = [s.phase for s in seen]
    assert phases[0] == "exploring states" and "finding cores" in phases


def test_watches_in_two_threads_keep_apart() -> None:
    statuses: dict[str, Status] = {}

    def watch(name: str, states: int) -> None:
        with watching() as w:
            note(phase=name, states=states)
            statuses[name] = w.status

    threads = [threading.Thread(target=watch, args=(n, s)) for n, s in (("x", 1), ("y", 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == {"x": Status("x", 1), "y": Status("y", 2)}


def test_counts_read_as_words() -> None:
    assert Status("exploring states", 1, 1, 1, "symbolic").line() == (
        "exploring states · 1 state · 1 layer of the symbolic search · 1 finding"
    )
    assert Status("p", 3 * 10**144).counts() == ["~3.0e144 states"]


def test_a_sink_must_be_callable() -> None:
    import pytest

    from ruleengine import PolicyError

    with pytest.raises(PolicyError, match="sink=`3` is not callable"), watching(3):  # type: ignore[arg-type]
        pass
