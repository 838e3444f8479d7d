"""Static-check time: complete verdicts on generated policy families, one process per policy.

Each policy of ``_policies.FAMILIES`` is written to a JSON policy file and checked by a fresh
``python -m ruleengine check FILE --format json`` process, timed from start to exit (so the
interpreter's start-up and every import count, as they do on a CI runner). The package's
modules are byte-compiled first, as installing it does (see ``compile_package``). Each
policy is checked ``--runs`` times (3 by default), one process after another, and its time
is the median of those runs: on a shared machine one run can take half as long again as the
next, and one sample per policy made the p95 (with ten seeds, the slowest policy) the
noisiest figure of the table. The runs must give the same report (its ``seconds`` aside). The
table gives, per family and size, the p50 and p95 of the policies' times, the reachable
states, how many verdicts were complete, and how many policies had findings.

    python -m benchmarks.static             # every family at 20/40 and 50/100, the
                                            # conditionals and tallies also at 200/400
    python -m benchmarks.static --runs 1    # one process per policy
    python -m benchmarks.static --families tallies --sizes 50/100,200/400 --seeds 30
    python -m benchmarks.static --quick     # 10/20, 3 seeds, one run: a smoke test
    python -m benchmarks.static --families indep-chains,indep-forced --runs 1
                                            # an independent generator's (``_independent``)

Targets: p95 ≤ 1 s at 20 tools / 40 requirements, ≤ 10 s at 50 / 100, ≤ 60 s at 200 / 400.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from benchmarks import _independent
from benchmarks._policies import FAMILIES, make_policy, policy_file
from benchmarks._report import Column, format_table, met

__all__ = [
    "StaticRow",
    "check_runs",
    "compile_package",
    "main",
    "measure",
    "policy_entries",
    "speed",
]

_N = TypeVar("_N", int, float)

TARGETS = {(20, 40): 1.0, (50, 100): 10.0, (200, 400): 60.0}
"""p95 seconds per size."""

SIZES = ((20, 40), (50, 100))
"""Every family's sizes by default."""

LARGE = {"conditionals": ((200, 400),), "tallies": ((200, 400),)}
"""The families also measured at a larger size by default."""

KNOWN = [*FAMILIES, *_independent.SHAPES]
"""Every family ``--families`` may name: ``_policies``' (the default plan's) and the
independent generator's (``_independent``: named ``indep-…``, measured when named)."""


def policy_entries(family: str, tools: int, reqs: int, seed: int) -> dict[str, object]:
    """The keys of the policy file of ``family`` at a size and seed (deterministic);
    ``ValueError`` for a family not in ``KNOWN`` or fewer than 4 tools or 1 requirement."""
    if family not in KNOWN:
        raise ValueError(f"unknown family `{family}` (known: {', '.join(KNOWN)})")
    counts = all(type(n) is int for n in (tools, reqs))
    if not (counts and tools >= 4 and reqs >= 1):
        raise ValueError(
            f"a size is whole numbers, at least 4 tools and 1 requirement, not {tools!r}/{reqs!r}"
        )
    if family in _independent.SHAPES:
        return _independent.make(family, tools, reqs, seed)
    return policy_file(make_policy(family, tools, reqs, seed))


@dataclass(frozen=True, slots=True)
class StaticRow:
    """One family at one size."""

    family: str
    tools: int
    requirements: int
    seconds: list[float]
    states: list[int]
    complete: int
    with_findings: int
    timed_out: int = 0
    """Policies whose check was stopped at the time limit (counted at that limit)."""
    limit: float = 0.0
    undecided: list[int] = field(default_factory=list)
    """Per policy whose report came back, the verdicts it left undecided (``--own-limit``:
    a check the command stopped at its limit decides what it can one by one)."""

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds)

    @property
    def p95(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def check_once(
    path: str, timeout: float, *, own_limit: bool = False
) -> tuple[float, dict[str, object] | None]:
    """Seconds for one ``ruleengine check`` process, and its JSON report (None: the
    process was stopped after ``timeout`` seconds). With ``own_limit`` the command gets
    ``--timeout`` itself and ends with its own (incomplete) report; it is stopped only 10 s
    after the limit."""
    start = time.perf_counter()
    limit = f"{timeout:g}" if own_limit else "0"
    try:
        done = subprocess.run(
            # No limits of the command's own unless asked: this benchmark stops a check
            # itself, at `timeout`, and counts it as stopped (the command's default would
            # stop it at 60 s with an incomplete report).
            [
                sys.executable,
                "-m",
                "ruleengine",
                "check",
                path,
                "--format",
                "json",
                "--timeout",
                limit,
                "--max-memory",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=timeout + 10 if own_limit else timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return timeout, None
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"ruleengine check {path} failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


def check_runs(
    path: str, timeout: float, runs: int, *, own_limit: bool = False
) -> tuple[float, dict[str, object] | None]:
    """The median seconds of ``runs`` checks of ``path`` (``check_once``; a stopped one counts
    at ``timeout``), and the report of the first that finished (None: every run was
    stopped). Raises ``RuntimeError`` when two complete runs report differently (their
    ``stats`` aside: with its own limit a check's report may come from its engine or from
    the verdicts decided one by one, which count the states they explored differently): a
    complete check is deterministic. Incomplete ones say what they decided in their time."""
    times: list[float] = []
    first: dict[str, object] | None = None
    for _ in range(runs):
        took, report = check_once(path, timeout, own_limit=own_limit)
        times.append(took)
        if report is None:
            continue
        if first is None:
            first = report
        elif (
            report.get("complete")
            and first.get("complete")
            and _without_stats(report) != _without_stats(first)
        ):
            raise RuntimeError(f"two checks of {path} gave different reports")
    return statistics.median(times), first


def _without_stats(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k != "stats"}


def compile_package() -> None:
    """Write the bytecode of every ``ruleengine`` module, as installing the package does.

    An editable install run where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machine the
    README's tables come from) otherwise compiles every module again in every process: about
    0.2 s of each check's start-up that an installed ``ruleengine`` command does not pay.
    ``py_compile`` writes the files whatever that variable says; Python reads them either way.
    """
    import compileall

    import ruleengine

    compileall.compile_dir(os.path.dirname(ruleengine.__file__), quiet=1)


def startup(samples: int = 5) -> float:
    """The median seconds of ``python -m ruleengine --help``: the interpreter's start-up and
    the command's imports, which every check in the table pays. A yardstick of the machine:
    compare tables from different machines by it."""
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ruleengine", "--help"], capture_output=True, check=True
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


_LOOP = (
    "import time\nt = time.perf_counter()\ns = 0\n"
    "for i in range({n}): s += i\nprint(time.perf_counter() - t)"
)
"""A fresh interpreter's loop of ``n`` additions, printing its seconds (``speed``)."""


MAX_ADDITIONS = 10**9
"""The most additions ``speed`` times."""


def speed(samples: int = 3, additions: int = 10**7) -> float:
    """The median seconds a fresh interpreter takes for ``additions`` integer additions in a
    Python loop: the machine's speed for pure Python at that moment. Measured before and
    after a run, it shows how much the machine (a shared VM) changed during it. Raises
    ``ValueError`` for a count that is not a whole number in range (at most ``MAX_ADDITIONS``
    additions: a few minutes of a slow machine)."""
    for name, value, most in (("samples", samples, 100), ("additions", additions, MAX_ADDITIONS)):
        if type(value) is not int or not 1 <= value <= most:
            raise ValueError(
                f"speed: `{name}` must be a whole number from 1 to {most}, not {value!r}"
            )
    times = []
    for _ in range(samples):
        done = subprocess.run(
            [sys.executable, "-c", _LOOP.format(n=additions)],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(done.stdout))
    return statistics.median(times)


def default_plan() -> list[tuple[int, int, str]]:
    """(tools, requirements, family) as ``python -m benchmarks.static`` measures them:
    every family at ``SIZES``, then the ``LARGE`` ones."""
    plan = [(tools, reqs, family) for tools, reqs in SIZES for family in FAMILIES]
    for family, sizes in LARGE.items():
        plan += [(tools, reqs, family) for tools, reqs in sizes]
    return plan


def measure(
    sizes: Sequence[tuple[int, int]] | None,
    seeds: int,
    *,
    timeout: float = 120.0,
    runs: int = 1,
    families: Sequence[str] | None = None,
    own_limit: bool = False,
) -> list[StaticRow]:
    """``families`` (default: all) at every size, or ``default_plan()`` when ``sizes`` is
    None; ``seeds`` policies each, each timed as the median of ``runs`` processes
    (``check_runs``; ``own_limit``: the command keeps the limit itself)."""
    chosen = list(FAMILIES) if families is None else list(families)
    unknown = [f for f in chosen if f not in KNOWN]
    if unknown:
        raise ValueError(f"unknown family `{unknown[0]}` (known: {', '.join(KNOWN)})")
    plan = (
        default_plan()
        if sizes is None
        else [(tools, reqs, family) for tools, reqs in sizes for family in chosen]
    )
    compile_package()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tools, reqs, family in plan:
            seconds, states, undecided = [], [], []
            complete = with_findings = timed_out = 0
            for seed in range(seeds):
                path = os.path.join(tmp, f"{family}-{tools}-{reqs}-{seed}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(policy_entries(family, tools, reqs, seed), f)
                took, report = check_runs(path, timeout, runs, own_limit=own_limit)
                seconds.append(took)
                if report is None or (took >= timeout and not own_limit):
                    # Every run stopped, or most of them (the median is the limit).
                    timed_out += 1
                    print(f"  {family} {tools}/{reqs} seed {seed}: stopped", file=sys.stderr)
                if report is None:
                    states.append(0)
                    continue
                stats = report["stats"]
                assert isinstance(stats, dict)
                states.append(int(stats["states"]))
                complete += bool(report["complete"])
                with_findings += bool(report["findings"])
                left = report.get("undecided", [])
                undecided.append(len(left) if isinstance(left, list) else 0)
            rows.append(
                StaticRow(
                    family,
                    tools,
                    reqs,
                    seconds,
                    states,
                    complete,
                    with_findings,
                    timed_out,
                    timeout,
                    undecided,
                )
            )
            slowest = max(range(seeds), key=seconds.__getitem__)
            print(
                f"  {family} {tools}/{reqs}: p95 {rows[-1].p95:.2f} s "
                f"(slowest: seed {slowest}, {seconds[slowest]:.2f} s)",
                file=sys.stderr,
            )
    return rows


def format_static_table(rows: Sequence[StaticRow]) -> str:
    columns: list[Column] = [
        ("family", 10, "<"),
        ("tools/reqs", 10, "<"),
        ("p50 s", 7, ">"),
        ("p95 s", 7, ">"),
        ("target", 8, ">"),
        ("met?", 4, "<"),
        ("states p50", 24, ">"),
        ("states max", 26, ">"),
        ("complete", 8, ">"),
        ("findings", 8, ">"),
        ("stopped", 7, ">"),
        ("undecided p50/max", 17, ">"),
    ]
    cells = []
    for r in rows:
        target = TARGETS.get((r.tools, r.requirements))
        cells.append(
            (
                r.family,
                f"{r.tools}/{r.requirements}",
                _seconds(r.p50, r),
                _seconds(r.p95, r),
                f"≤ {target:g}" if target else "—",
                met(_within(r, target) if target else None),
                f"{int(statistics.median(r.states)):,}",
                f"{max(r.states):,}",
                f"{r.complete}/{len(r.seconds)}",
                f"{r.with_findings}/{len(r.seconds)}",
                f"{r.timed_out}",
                (
                    f"{int(statistics.median(r.undecided))}/{max(r.undecided)}"
                    if r.undecided and max(r.undecided)
                    else "—"
                ),
            )
        )
    return format_table(columns, cells)


def _positive(kind: Callable[[str], _N]) -> Callable[[str], _N]:
    """An argparse type: a number of ``kind`` above zero."""

    def parse(text: str) -> _N:
        try:
            value = kind(text)
        except ValueError:
            expected = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"`{text}` is not {expected}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"`{text}` must be a finite number above zero")
        return value

    return parse


def _families(text: str) -> list[str]:
    """An argparse type: comma-separated family names."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in KNOWN]
    if not names or unknown:
        culprit = f"unknown family `{unknown[0]}`" if unknown else "no family named"
        raise argparse.ArgumentTypeError(f"{culprit} (known: {', '.join(KNOWN)})")
    return names


def _sizes(text: str) -> list[tuple[int, int]]:
    """An argparse type: comma-separated TOOLS/REQUIREMENTS pairs, each at least 4/1."""
    sizes = []
    for part in text.split(","):
        tools, _, reqs = part.strip().partition("/")
        if not (tools.isdigit() and reqs.isdigit() and int(tools) >= 4 and int(reqs) >= 1):
            raise argparse.ArgumentTypeError(
                f"`{part.strip()}` is not TOOLS/REQUIREMENTS with at least 4 tools and 1 "
                "requirement (e.g. 50/100)"
            )
        sizes.append((int(tools), int(reqs)))
    return sizes


def _within(row: StaticRow, target: float) -> bool:
    """Whether the row's p95 meets ``target``: a stopped check never does, even when the
    limit it was stopped at equals the target."""
    stopped = row.timed_out and row.p95 >= row.limit
    return row.p95 <= target and not stopped


def _seconds(value: float, row: StaticRow) -> str:
    """A time, or "> limit" for a check stopped at the time limit."""
    if row.timed_out and value >= row.limit:
        return f"> {row.limit:g}"
    return f"{value:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10/20, 3 seeds: a smoke test")
    parser.add_argument(
        "--seeds", type=_positive(int), default=10, help="policies per family and size"
    )
    parser.add_argument(
        "--runs",
        type=_positive(int),
        default=3,
        help="processes per policy; its time is their median (--quick: 1)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=120.0,
        help="seconds before one check is stopped",
    )
    parser.add_argument(
        "--own-limit",
        action="store_true",
        help="give the command --timeout itself: a check past it ends in its own incomplete "
        "report, which decides what it can one verdict at a time (see `undecided`)",
    )
    parser.add_argument(
        "--families",
        type=_families,
        default=None,
        help=f"comma-separated, of {', '.join(KNOWN)} (default: all but the indep- ones)",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="comma-separated TOOLS/REQUIREMENTS, e.g. 50/100,200/400 (default: every "
        "family at 20/40 and 50/100, the conditionals and tallies also at 200/400)",
    )
    args = parser.parse_args(argv)
    sizes: list[tuple[int, int]] | None = [(10, 20)] if args.quick else args.sizes
    if sizes is None and args.families is not None:
        sizes = list(SIZES)
    seeds = 3 if args.quick else args.seeds
    runs = 1 if args.quick else args.runs
    started = time.perf_counter()
    speed_before = speed()
    rows = measure(
        sizes,
        seeds,
        timeout=args.timeout,
        runs=runs,
        families=args.families,
        own_limit=args.own_limit,
    )
    per_policy = (
        "one `python -m ruleengine check FILE --format json` process per policy"
        if runs == 1
        else f"the median of {runs} `python -m ruleengine check FILE --format json` "
        "processes per policy"
    )
    print(f"Static check: {per_policy}, start-up included; {seeds} seeds per family and size.")
    print()
    print(format_static_table(rows))
    print()
    print(
        f"total {time.perf_counter() - started:.1f} s on {os.cpu_count()} CPUs; start-up "
        f"(`python -m ruleengine --help`, median of 5): {startup():.2f} s; 10⁷ additions "
        f"in a Python loop (median of 3): {speed_before:.2f} s before, {speed():.2f} s after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
