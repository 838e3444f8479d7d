"""The ``ruleengine`` command: ``check``, ``explain``, ``diff``, ``schema`` and ``bench``.

Arguments and exit codes only: the checker lives in ``ruleengine.check``, the renderers in
``ruleengine.check.render``, the bench loop in ``ruleengine.check.bench``. Exit codes: 0
clean (or equivalent), 1 findings at or above ``--fail-on`` (policies that differ, a trace
the runtime refuses), 2 bad input (one line on stderr, ``ruleengine: <message>``, and a
``  hint:`` line when there is one), 3 an internal error (a bug: the traceback follows),
4 the output could not be written (one line on stderr), 130 interrupted, 141 the reader of
stdout went away.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn

from ruleengine.check import TraceStep, check_policy, diff_policies, replay
from ruleengine.check.bench import MAX_STEPS, MAX_WALKS, bench
from ruleengine.check.render import (
    Progress,
    sarif_log,
    text_bench,
    text_diff,
    text_explain,
    text_report,
)
from ruleengine.errors import PolicyError, RuleEngineError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.policy import Policy
from ruleengine.state import STATUSES

__all__ = ["main", "run"]

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE, as shells say
PROGRESS_AFTER = "RULEENGINE_PROGRESS_AFTER"
"""Environment variable: seconds before the progress line appears on a terminal (default 1)."""


class UsageError(Exception):
    """Bad arguments: reported as one line, exit 2."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class OutputError(Exception):
    """stdout refused what a command wrote (a full disk, a failing device): one line, exit 4.
    The output is incomplete, so no command's own exit code stands."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.message = f"cannot write the output: {error.strerror or error}"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as ``UsageError`` (one line, our exit code) instead of a
    usage dump and ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("ruleengine").strip()
        where = f"{command}: " if command else ""
        raise UsageError(f"{where}{message}", hint=f"see `{self.prog} --help`")


def run() -> NoReturn:
    """The ``ruleengine`` command (the console script, and ``python -m ruleengine``): ``main``
    in a process of its own, exiting with its code.

    What the imports built (modules, classes, pydantic's schemas) lives as long as the
    process; ``gc.freeze`` takes it out of the cyclic collector's sight first, so the
    collections a check sets off do not go through it again and again (0.1 s of a check of
    20 tools that takes one second in all). Only here: ``main`` called in a longer-lived
    program leaves its collector as it is.

    Once ``main`` has returned, the process leaves without the interpreter's teardown
    (``_leave``): freeing every object a check built, and the BDD manager's shutdown, cost
    up to a fifth of a second that nobody waits for."""
    gc.freeze()
    _leave(main())


def _leave(code: int) -> NoReturn:
    """Flush stdout and stderr and end the process with ``code`` at once: no ``atexit``
    handlers (the command registers none; a check's forked children are reaped before
    ``main`` returns), no finalizers, no freeing of memory the system takes back anyway.
    A reader of stdout gone by the flush makes it exit 141 quietly, as ``main`` does; a
    stdout that refuses the rest (a full disk) makes it exit 4 with one line on stderr, as
    ``main`` does for a write that fails earlier; a stream the process started without
    (``None``: its descriptor was closed) is skipped."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError as exc:
        code = _output_failed(OutputError(exc))
    with contextlib.suppress(OSError):
        if sys.stderr is not None:
            sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    try:
        args = _parser().parse_args(argv)
        if args.command is None:
            raise UsageError(
                "give a command: `check`, `explain`, `diff`, `schema` or `bench`",
                hint="see `ruleengine --help`",
            )
        code: int = args.run(args)
        return code
    except UsageError as exc:
        return _fail(exc.message, exc.hint)
    except RuleEngineError as exc:
        return _fail(exc.message, exc.hint)
    except OutputError as exc:
        return _output_failed(exc)
    except KeyboardInterrupt:
        print("ruleengine: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`ruleengine schema | head`): stop quietly. Python's flush of
        # stdout at exit would fail again, so stdout now points at /dev/null (the recipe of
        # the `signal` module's documentation).
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        traceback.print_exc()
        print(f"ruleengine: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in ruleengine; please report it", file=sys.stderr)
        return EXIT_INTERNAL


def _drop_stdout() -> None:
    """Point stdout's descriptor at /dev/null: what it still buffers, and anything written
    later, goes nowhere instead of failing again at the flush on the way out."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)


def _output_failed(exc: OutputError) -> int:
    """Report an output that could not be written (what stdout still buffers is dropped)."""
    _drop_stdout()
    with contextlib.suppress(OSError):
        print(f"ruleengine: {exc.message}", file=sys.stderr)
    return EXIT_OUTPUT


def _fail(message: str, hint: str | None) -> int:
    print(f"ruleengine: {message}", file=sys.stderr)
    if hint:
        print(f"  hint: {hint}", file=sys.stderr)
    return EXIT_BAD_INPUT


# -- commands ----------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    policies = _load_all(args.policies)
    checked = []
    for policy in policies:
        with Progress(f"checking {policy.source}", after=_progress_after()):
            report = check_policy(
                policy,
                max_iterations=args.max_iterations,
                timeout=args.timeout,
                max_states=args.max_states,
                engine=args.engine,
            )
        checked.append((report, policy))
        if args.format == "json":
            _print_json(report.model_dump(mode="json"), compact=len(policies) > 1)
        elif args.format == "text":
            _write(text_report(report, policy) + ("\n" if policy is not policies[-1] else ""))
    if args.format == "sarif":
        _print_json(sarif_log(checked), compact=False)
    failing = any(report.at_or_above(args.fail_on) for report, _ in checked)
    return EXIT_FINDINGS if failing else EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    policy = _load(args.policy)
    trace, finish = _trace(args.trace, policy)
    text, runs = text_explain(policy, trace, replay(policy.reasoner(), trace), finish=finish)
    _write(text)
    return EXIT_OK if runs else EXIT_FINDINGS


def _diff(args: argparse.Namespace) -> int:
    old, new = _load_all([args.old, args.new])
    with Progress(f"comparing {old.source} and {new.source}", after=_progress_after()):
        report = diff_policies(old, new, timeout=args.timeout, max_states=args.max_states)
    if args.format == "json":
        _print_json(report.model_dump(mode="json"), compact=False)
    else:
        _write(text_diff(report))
    return EXIT_OK if report.equivalent else EXIT_FINDINGS


def _schema(args: argparse.Namespace) -> int:
    _print_json(Policy.json_schema(), compact=False)
    return EXIT_OK


def _bench(args: argparse.Namespace) -> int:
    policy = _load(args.policy)
    with Progress(f"benchmarking {policy.source}", after=_progress_after()):
        result = bench(policy, walks=args.walks, steps=args.steps, seed=args.seed)
    if args.format == "json":
        _print_json(result.as_json(), compact=False)
    else:
        _write(text_bench(result))
    return EXIT_OK


# -- helpers -----------------------------------------------------------------------------------


def _load(source: str) -> Policy:
    """The policy ``source`` names; ``module:attr`` imports with the current directory on the
    import path, as ``python -m`` has it (a console script's path starts at its own dir)."""
    if ":" in source and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    return Policy.load(source)


def _load_all(sources: Sequence[str]) -> list[Policy]:
    """Every policy, or the first load error (every source is tried, each error reported)."""
    policies: list[Policy] = []
    failed: PolicyError | None = None
    for source in sources:
        try:
            policies.append(_load(source))
        except PolicyError as exc:
            if failed is not None:
                _fail(failed.message, failed.hint)
            failed = exc
    if failed is not None:
        raise failed
    return policies


def _trace(text: str, policy: Policy) -> tuple[list[TraceStep], bool]:
    """``--trace a,b:error,c`` as trace steps, and whether it ends with ``final_answer``."""
    entries = [] if not text.strip() else [e.strip() for e in text.split(",")]
    steps: list[TraceStep] = []
    finish = False
    for n, entry in enumerate(entries, 1):
        tool, _, status = entry.partition(":")
        tool, status = tool.strip(), status.strip() or "ok"
        if not tool:
            raise UsageError(f"--trace: entry {n} is empty", hint=_TRACE_HINT)
        if tool == FINAL_ANSWER:
            if n != len(entries) or status != "ok":
                raise UsageError(
                    f"--trace: `{entry}`: `final_answer` ends the run: only a plain "
                    "`final_answer` as the last entry",
                    hint=_TRACE_HINT,
                )
            finish = True
            continue
        if tool not in policy.tools:
            close = difflib.get_close_matches(tool, policy.tools, n=1)
            maybe = f"did you mean `{close[0]}`? " if close else ""
            raise UsageError(
                f"--trace: unknown tool `{tool}` (entry {n})",
                hint=f"{maybe}the tools of {policy.source}: "
                + ", ".join(f"`{t}`" for t in policy.tools),
            )
        if status not in STATUSES:
            raise UsageError(
                f"--trace: unknown status `{status}` for `{tool}` (entry {n})",
                hint="a status is `ok` (the default), `error` or `denied`",
            )
        steps.append(TraceStep(tool=tool, status=status))
    return steps, finish


_TRACE_HINT = "write the steps as `tool` or `tool:status`, separated by commas: `a,b:error,c`"


def _print_json(data: object, *, compact: bool) -> None:
    if compact:
        _write(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    else:
        _write(json.dumps(data, ensure_ascii=False, indent=2))


def _write(text: str) -> None:
    """``text`` and a newline on stdout; a failing write is an ``OutputError`` (a reader gone
    away stays a ``BrokenPipeError``)."""
    try:
        print(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError(exc) from exc


def _progress_after() -> float:
    value = os.environ.get(PROGRESS_AFTER, "")
    try:
        seconds = float(value)
    except ValueError:
        return 1.0
    return seconds if math.isfinite(seconds) and seconds >= 0 else 1.0


# -- argument types ----------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"`{text}` must be at least 1")
    return value


def _at_most(most: int) -> Callable[[str], int]:
    """A positive integer no larger than ``most``."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"`{text}` must be at most {most:,}")
        return value

    return parse


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a whole number") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"`{text}` must be a finite number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"`{text}` must be a positive number of seconds")
    return value


# -- the parser --------------------------------------------------------------------------------


def _parser() -> _Parser:
    parser = _Parser(
        prog="ruleengine",
        description="Statically check tool-use policies of LLM agents, and inspect them.",
    )
    parser.add_argument("--version", action="version", version=f"ruleengine {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add(
        commands,
        "check",
        _check,
        "prove policies free of deadlocks and dead rules, or print the shortest trace that "
        "breaks them",
        _check_arguments,
    )
    _add(commands, "explain", _explain, "the pass at each step of a trace", _explain_arguments)
    _add(
        commands,
        "diff",
        _diff,
        "a shortest history after which two policies' passes differ, or a proof they never do",
        _diff_arguments,
    )
    _add(commands, "schema", _schema, "print the JSON Schema of policy files", lambda p: None)
    _add(
        commands,
        "bench",
        _bench,
        "measure a policy's per-step decision cost on random walks",
        _bench_arguments,
    )
    return parser


def _add(
    commands: argparse._SubParsersAction[_Parser],
    name: str,
    run: Callable[[argparse.Namespace], int],
    summary: str,
    arguments: Callable[[_Parser], None],
) -> None:
    sub = commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:])
    arguments(sub)
    sub.set_defaults(run=run)


def _check_arguments(p: _Parser) -> None:
    p.add_argument(
        "policies",
        nargs="+",
        metavar="POLICY",
        help="a .toml, .yaml, .yml or .json policy file, or module:attr naming a Python Policy",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text for people (default), json (one object per policy), sarif (one log)",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="exit 1 on findings of this severity or worse (default: error)",
    )
    p.add_argument(
        "--max-iterations",
        type=_positive_int,
        metavar="N",
        help="the budget to check against (default: the policy's max_iterations)",
    )
    _limits(p)
    p.add_argument(
        "--engine",
        choices=("auto", "explicit", "symbolic"),
        default="auto",
        help="auto (default): symbolic when the policy allows it, else explicit",
    )


def _explain_arguments(p: _Parser) -> None:
    p.add_argument("policy", metavar="POLICY", help="a policy file or module:attr")
    p.add_argument(
        "--trace",
        default="",
        metavar="STEPS",
        help="the steps, comma-separated, each `tool` or `tool:status` (ok, error, denied); "
        "may end with final_answer (default: the empty run)",
    )


def _diff_arguments(p: _Parser) -> None:
    p.add_argument("old", metavar="OLD", help="a policy file or module:attr")
    p.add_argument("new", metavar="NEW", help="a policy file or module:attr")
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    _limits(p)


def _bench_arguments(p: _Parser) -> None:
    p.add_argument("policy", metavar="POLICY", help="a policy file or module:attr")
    p.add_argument(
        "--walks", type=_at_most(MAX_WALKS), default=100, metavar="N", help="default: 100"
    )
    p.add_argument(
        "--steps",
        type=_at_most(MAX_STEPS),
        metavar="N",
        help="the most steps of a walk (default: the policy's max_iterations)",
    )
    p.add_argument("--seed", type=_int, default=0, metavar="N", help="default: 0")
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")


def _limits(p: _Parser) -> None:
    p.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="stop the search after S seconds (the result then says it is incomplete)",
    )
    p.add_argument(
        "--max-states",
        type=_positive_int,
        metavar="N",
        help="stop the search after N states (the result then says it is incomplete)",
    )


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ruleengine")
    except metadata.PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "0+unknown"
