"""Static-check time against a counter's threshold: the same policy with thresholds of 10,
1,000 and 100,000, one ``python -m ruleengine check FILE --format json`` process each (the
median of ``--runs``), and the ratio of each time to the time at 10.

A counter's calls inside a band the rules cannot tell apart are taken at once
(``ruleengine/check/skipping.py``), so a threshold should cost about what 10 costs. Shapes,
each drawn per seed (how many other tools, which statuses count):

- ``cap``: one tool capped at N among free tools;
- ``gated``: a tool needed N/2 times and capped at N, another allowed only after it;
- ``stuck``: a tool capped at N and needed N+1 times (the run can never finish);
- ``deadlock``: the same, where the other tools run only before it (a deadlock after N
  calls, whose trace the report writes out call by call);
- ``several``: caps of N, N/10 and N/100 on three tools, the first also needed N/2 times.

    python -m benchmarks.thresholds            # every shape, 3 seeds, 3 runs each
    python -m benchmarks.thresholds --runs 1 --seeds 1

Target: at 100,000, each policy within twice its time at 10; but ``deadlock``, whose
report holds a trace of N steps (its time at 100,000 is writing those out).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from collections.abc import Sequence

from benchmarks.static import check_runs, compile_package

__all__ = ["SHAPES", "THRESHOLDS", "main", "policy_text"]

THRESHOLDS = (10, 1_000, 100_000)

SHAPES = ("cap", "gated", "stuck", "deadlock", "several")

OUTPUT_BOUND = ("deadlock",)
"""Shapes whose report grows with N (a trace of N steps): outside the target."""


def policy_text(shape: str, n: int, seed: int) -> str:
    """The TOML policy of ``shape`` at threshold ``n`` (its other knobs drawn from ``seed``)."""
    rng = random.Random(seed)
    free = [f"t{i}" for i in range(rng.randint(1, 6))]
    counted = "false" if rng.random() < 0.5 else "true"
    tools = ["a", "b", "c", *free]
    lines = ["max_iterations = 20"]

    def conditional(target: str, **params: object) -> None:
        lines.append("[[requirements]]")
        lines.append('type = "conditional"')
        lines.append(f'name = "r{sum(line == "[[requirements]]" for line in lines)}-{target}"')
        lines.append(f'target = "{target}"')
        lines.append(f"only_success_invocations = {counted}")
        for key, value in params.items():
            lines.append(f"{key} = {value!r}".replace("'", '"'))

    if shape == "cap":
        conditional("a", max_invocations=n)
    elif shape == "gated":
        conditional("a", min_invocations=n // 2, max_invocations=n)
        conditional("b", only_after=["a"])
    elif shape == "stuck":
        conditional("a", max_invocations=n)
        conditional("a", min_invocations=n + 1)
    elif shape == "deadlock":
        del tools[3:]  # no free tool: once `a` is used up, nothing is left
        conditional("a", max_invocations=n)
        conditional("a", min_invocations=n + 1)
        conditional("b", only_before=["a"])
        conditional("c", only_before=["a"])
    elif shape == "several":
        conditional("a", min_invocations=n // 2, max_invocations=n)
        conditional("b", max_invocations=max(1, n // 10))
        conditional("c", max_invocations=max(1, n // 100))
    else:
        raise ValueError(f"unknown shape `{shape}` (known: {', '.join(SHAPES)})")
    lines.insert(0, f"tools = {tools!r}".replace("'", '"'))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.thresholds",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("--seeds", type=int, default=3, help="policies per shape")
    parser.add_argument("--runs", type=int, default=3, help="processes per policy (median)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per check")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.runs < 1 or not args.timeout > 0:
        parser.error("--seeds and --runs must be at least 1, --timeout above 0")
    compile_package()
    print("| shape | seed | threshold | seconds | × the time at 10 | states | findings |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            for seed in range(args.seeds):
                base = None
                for n in THRESHOLDS:
                    path = os.path.join(tmp, f"{shape}-{seed}-{n}.toml")
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(policy_text(shape, n, seed))
                    took, report = check_runs(path, args.timeout, args.runs)
                    if report is None:
                        print(f"| {shape} | {seed} | {n:,} | stopped | | | |")
                        worst = float("inf")
                        continue
                    base = took if base is None else base
                    ratio = took / base
                    if n == THRESHOLDS[-1] and shape not in OUTPUT_BOUND:
                        worst = max(worst, ratio)
                    stats = report["stats"]
                    assert isinstance(stats, dict)
                    findings = report["findings"]
                    assert isinstance(findings, list)
                    ids = sorted({str(f["id"]) for f in findings}) or ["none"]
                    print(
                        f"| {shape} | {seed} | {n:,} | {took:.2f} | {ratio:.2f} | "
                        f"{int(stats['states']):,} | {', '.join(ids)} |"
                    )
    print()
    print(
        f"worst ratio at {THRESHOLDS[-1]:,}: {worst:.2f} (target ≤ 2; "
        f"{', '.join(OUTPUT_BOUND)} aside: its report holds N steps); "
        f"median of {args.runs} processes per policy on {os.cpu_count()} CPUs"
    )
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
