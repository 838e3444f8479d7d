"""The ``ruleengine`` command: ``check``, ``explain``, ``diff``, ``test``, ``schema``, ``bench``.

Arguments and exit codes only: the checker lives in ``ruleengine.check``, the renderers in
``ruleengine.check.render`` (text) and ``ruleengine.check.formats`` (JSON, SARIF, concise,
GitHub), policy test cases in ``ruleengine.check.cases``, the bench loop in
``ruleengine.check.bench``. Exit codes: 0 clean (or equivalent, every case passed), 1
findings at or above ``--fail-on`` (policies that differ, a trace the runtime refuses, a
case that failed), 2 bad input (one line on stderr, ``ruleengine: <message>``, and a
``  hint:`` line when there is one), 3 an internal error (a bug: the traceback follows),
4 the output could not be written (one line on stderr), 130 interrupted, 141 the reader of
stdout went away.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NoReturn

from ruleengine.check import TraceStep, check_policy, diff_policies, replay
from ruleengine.check.bench import MAX_STEPS, MAX_WALKS, bench
from ruleengine.check.cases import json_results, load_cases, run_cases, text_results
from ruleengine.check.formats import FORMATS, CheckOutput, Unchecked, json_explain, json_text
from ruleengine.check.render import Progress, text_bench, text_diff, text_explain
from ruleengine.check.report import DiffReport, Report
from ruleengine.check.sources import STDIN, is_directory, load_each
from ruleengine.check.supervise import stopped_check, stopped_diff, supervised
from ruleengine.check.trace import parse_trace, permissions
from ruleengine.errors import PolicyError, RuleEngineError
from ruleengine.policy import Policy
from ruleengine.policy.load import FORMATS as POLICY_FORMATS
from ruleengine.policy.load import read_bounded

__all__ = ["main", "run"]

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE, as shells say
PROGRESS_AFTER = "RULEENGINE_PROGRESS_AFTER"
"""Environment variable: seconds before the progress line appears on a terminal (default 1)."""
MAX_TRACE_BYTES = 1024 * 1024
"""``--trace-file`` files larger than this are refused (1 MB)."""


class UsageError(Exception):
    """Bad arguments: reported as one line, exit 2."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class Reported(Exception):
    """Bad input already reported on stderr (each policy that did not load has its line):
    exit 2 with nothing more to say."""


class OutputError(Exception):
    """stdout refused what a command wrote (a full disk, a failing device): one line, exit 4.
    The output is incomplete, so no command's own exit code stands."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.message = f"cannot write the output: {error.strerror or error}"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as ``UsageError`` (one line, our exit code) instead of a
    usage dump and ``SystemExit``; ``commands`` holds the parser of each subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, _Parser] = {}

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.where}{message}", hint=f"see `{self.prog} --help`")

    @property
    def where(self) -> str:
        """How messages start: the subcommand (``check: ``), or nothing at the top."""
        command = self.prog.removeprefix("ruleengine").strip()
        return f"{command}: " if command else ""

    def unexpected(self, extras: Sequence[str], commands: dict[str, _Parser]) -> UsageError:
        """What argparse left over (it would say "unrecognized arguments" and show the top
        level's usage): the first unknown option, with the closest known one (or the
        ``commands`` that have it), or the first argument too many; either way pointing at
        this (sub)command's help."""
        see = f"see `{self.prog} --help`"
        option = next((e for e in extras if e.startswith("-") and e != STDIN), None)
        if option is None:
            return UsageError(f"{self.where}unexpected argument `{extras[0]}`", hint=see)
        name = option.split("=", 1)[0]
        close = difflib.get_close_matches(name, self.options, n=1, cutoff=0.75)
        elsewhere = [c for c, p in commands.items() if p is not self and name in p.options]
        if close:
            see = f"did you mean `{close[0]}`? {see}"
        elif elsewhere:
            names = ", ".join(f"`{c}`" for c in elsewhere)
            see = f"`{name}` is an option of {names}; {see}"
        return UsageError(f"{self.where}unknown option `{name}`", hint=see)

    @property
    def options(self) -> list[str]:
        return [s for action in self._actions for s in action.option_strings]


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
        given = sys.argv[1:] if argv is None else list(argv)
        upstream: list[str] = []
        if given[:1] == ["mcp-proxy"] and "--" in given:
            # Everything after `--` is the upstream server's command line, options included.
            cut = given.index("--")
            given, upstream = given[:cut], given[cut + 1 :]
        args = _parse(_parser(), given)
        args.upstream = upstream
        if args.command is None:
            raise UsageError(
                "give a command: `check`, `explain`, `diff`, `test`, `schema`, `mcp-proxy` or "
                "`bench`",
                hint="see `ruleengine --help`",
            )
        code: int = args.run(args)
        return code
    except Reported:
        return EXIT_BAD_INPUT
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
    """Every policy checked, each reported in ``--format``. In text, a policy that does not
    load stops the command before any check (each one gets its line on stderr); in the
    machine formats it is reported in the output too, and the others are still checked."""
    text = args.format == "text"
    loaded = _load_each(args.policies, args.stdin_format, directories=True)
    if text and any(isinstance(policy, PolicyError) for _, policy in loaded):
        raise Reported
    # Several policies (or a directory, however many files it holds): one line each.
    several = len(loaded) > 1 or any(is_directory(s) for s in args.policies)
    output = CheckOutput(args.format, _write, several=several)
    failing = False
    for source, policy in loaded:
        if isinstance(policy, PolicyError):
            output.failed(Unchecked.of(source, policy))
            continue
        try:
            report = _check_one(policy, args)
        except RuleEngineError as exc:
            if text:
                raise
            _fail(exc.message, exc.hint)
            output.failed(Unchecked.of(source, exc, policy))
            continue
        output.report(report, policy)
        failing = failing or bool(report.at_or_above(args.fail_on))
    output.close()
    if output.unchecked:
        return EXIT_BAD_INPUT
    return EXIT_FINDINGS if failing else EXIT_OK


def _check_one(policy: Policy, args: argparse.Namespace) -> Report:
    with Progress(f"checking {policy.source}", after=_progress_after()) as progress:
        return supervised(
            partial(
                check_policy,
                policy,
                max_iterations=args.max_iterations,
                timeout=_ahead(args.timeout),
                max_states=args.max_states,
                engine=args.engine,
            ),
            model=Report,
            stopped=stopped_check(policy.source),
            timeout=args.timeout,
            max_memory=args.max_memory,
            on_status=progress.update,
        )


def _explain(args: argparse.Namespace) -> int:
    if args.trace is not None and args.trace_file is not None:
        raise UsageError(
            "explain: give the steps with `--trace` or `--trace-file`, not both",
            hint="see `ruleengine explain --help`",
        )
    (policy,) = _load_all([args.policy], args.stdin_format)
    trace, finish = _trace(args, policy)
    outcomes = replay(policy.reasoner(), trace)
    asking = permissions(policy.requirements, trace)
    if args.format == "json":
        data, runs = json_explain(policy, trace, outcomes, finish=finish, asking=asking)
        _print_json(data, compact=False)
    else:
        text, runs = text_explain(policy, trace, outcomes, finish=finish, asking=asking)
        _write(text)
    return EXIT_OK if runs else EXIT_FINDINGS


def _diff(args: argparse.Namespace) -> int:
    old, new = _load_all([args.old, args.new], args.stdin_format)
    with Progress(f"comparing {old.source} and {new.source}", after=_progress_after()) as progress:
        report = supervised(
            partial(
                diff_policies, old, new, timeout=_ahead(args.timeout), max_states=args.max_states
            ),
            model=DiffReport,
            stopped=stopped_diff(old.source, new.source),
            timeout=args.timeout,
            max_memory=args.max_memory,
            on_status=progress.update,
        )
    if args.format == "json":
        _print_json(report.model_dump(mode="json"), compact=False)
    else:
        _write(text_diff(report))
    # Equal passes with different budgets still differ: a run of one stops sooner.
    return EXIT_OK if report.equivalent and report.budget is None else EXIT_FINDINGS


def _test(args: argparse.Namespace) -> int:
    if args.cases == STDIN:
        raise UsageError(
            "test: CASES: `-`: the cases are read from a file", hint="name the cases file"
        )
    (policy,) = _load_all([args.policy], args.stdin_format)
    results = run_cases(policy, load_cases(args.cases, policy))
    if args.format == "json":
        _print_json(json_results(results), compact=False)
    else:
        _write(text_results(results))
    return EXIT_FINDINGS if results.failed else EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    _print_json(Policy.json_schema(), compact=False)
    return EXIT_OK


def _mcp_proxy(args: argparse.Namespace) -> int:
    upstream = list(args.upstream)
    if not upstream:
        raise UsageError(
            "mcp-proxy: name the upstream server's command after `--`",
            "e.g. ruleengine mcp-proxy policy.toml -- python server.py",
        )
    # Imported here: the command line works without the `mcp` extra.
    from ruleengine.mcp.proxy import serve

    return serve(args.policy, upstream[0], upstream[1:], http_port=args.http)


def _bench(args: argparse.Namespace) -> int:
    (policy,) = _load_all([args.policy], args.stdin_format)
    with Progress(f"benchmarking {policy.source}", after=_progress_after()):
        result = bench(policy, walks=args.walks, steps=args.steps, seed=args.seed)
    if args.format == "json":
        _print_json(result.as_json(), compact=False)
    else:
        _write(text_bench(result))
    return EXIT_OK


# -- helpers -----------------------------------------------------------------------------------


def _parse(parser: _Parser, argv: list[str]) -> argparse.Namespace:
    """The arguments, or a ``UsageError``: an unknown command or option gets the closest
    known one and the help to read."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is not None and first not in parser.commands:
        close = difflib.get_close_matches(first, list(parser.commands), n=1)
        maybe = f"did you mean `{close[0]}`? " if close else ""
        commands = ", ".join(f"`{c}`" for c in parser.commands)
        raise UsageError(
            f"unknown command `{first}`",
            hint=f"{maybe}the commands are {commands}: see `ruleengine --help`",
        )
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = parser.commands.get(getattr(args, "command", None) or "", parser)
        raise command.unexpected(extras, parser.commands)
    return args


def _load_all(sources: Sequence[str], stdin_format: str | None) -> list[Policy]:
    """Every policy, or ``Reported`` when some did not load (each has had its line)."""
    loaded = _load_each(sources, stdin_format)
    policies = [p for _, p in loaded if isinstance(p, Policy)]
    if len(policies) < len(loaded):
        raise Reported
    return policies


def _load_each(
    sources: Sequence[str], stdin_format: str | None, *, directories: bool = False
) -> list[tuple[str, Policy | PolicyError]]:
    """Each source's policy, or its error (on stderr at once, one line each)."""
    return load_each(
        sources,
        stdin_format,
        directories=directories,
        on_error=lambda error: _fail(error.message, error.hint),
    )


def _trace(args: argparse.Namespace, policy: Policy) -> tuple[list[TraceStep], bool]:
    """The steps of ``--trace`` (comma-separated, or a JSON list) or ``--trace-file`` (a
    JSON list), and whether they end with ``final_answer``."""
    if args.trace_file is not None:
        text = _read_trace_file(args.trace_file)
        return parse_trace(
            text,
            policy.tools,
            where=f"--trace-file: {args.trace_file}",
            source=policy.source,
            json_only=True,
        )
    return parse_trace(args.trace or "", policy.tools, where="--trace", source=policy.source)


def _read_trace_file(path: str) -> str:
    def fail(problem: str) -> UsageError:
        return UsageError(f"--trace-file: {path}: {problem}")

    data = read_bounded(path, MAX_TRACE_BYTES, fail)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(f"the file is not UTF-8: byte `0x{data[exc.start]:02x}`") from None


def _print_json(data: object, *, compact: bool) -> None:
    _write(json_text(data, compact=compact))


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


def _mcp_proxy_arguments(p: _Parser) -> None:
    p.usage = "ruleengine mcp-proxy [-h] [--http PORT] policy -- CMD [ARGS...]"
    p.add_argument("policy", help="the policy file to enforce")
    p.add_argument(
        "--http",
        type=_port,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port)",
    )


# -- argument types ----------------------------------------------------------------------------


def _port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"`{text}` is not a port (0 to 65535)")
    return value


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


def _ahead(timeout: float | None) -> float | None:
    """The time limit the work keeps itself: a little ahead of ``timeout``, so that its own
    report (what it proved, how far it went) is sent before the supervisor would stop it,
    and the command, its start-up and output included, ends within a second of the limit:
    a tenth of it (a quarter of a second at least, a second at most), as the worker's exit
    (freeing a gigabyte of diagrams) and the output of a few hundred findings take half a
    second each at 200 tools."""
    if timeout is None:
        return None
    return timeout - min(1.0, max(timeout / 10, min(0.25, timeout / 4)))


def _seconds_or_none(text: str) -> float | None:
    """Seconds, or ``None`` for ``0`` (no limit)."""
    try:
        if float(text) == 0:
            return None
    except ValueError:
        pass
    return _seconds(text)


def _mebibytes_or_none(text: str) -> int | None:
    """Bytes from a number of MiB, or ``None`` for ``0`` (no limit)."""
    value = _int(text)
    if value == 0:
        return None
    if value < 0:
        raise argparse.ArgumentTypeError(f"`{text}` must be a number of MiB (0 for no limit)")
    return value * 2**20


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
    _add(
        commands,
        "test",
        _test,
        "run a policy's test cases: traces, and the passes expected along them",
        _test_arguments,
    )
    _add(commands, "schema", _schema, "print the JSON Schema of policy files", lambda p: None)
    _add(
        commands,
        "mcp-proxy",
        _mcp_proxy,
        "serve an MCP server's tools with a policy enforced on every call; the upstream "
        "server's command line follows `--`",
        _mcp_proxy_arguments,
    )
    _add(
        commands,
        "bench",
        _bench,
        "measure a policy's per-step decision cost on random walks",
        _bench_arguments,
    )
    parser.commands = dict(commands.choices)
    return parser


def _add(
    commands: argparse._SubParsersAction[_Parser],
    name: str,
    run: Callable[[argparse.Namespace], int],
    summary: str,
    arguments: Callable[[_Parser], None],
) -> None:
    sub = commands.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:],
        epilog=_epilog(name),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments(sub)
    sub.set_defaults(run=run)


_EXITS = {
    "check": (
        "no finding at or above --fail-on, in any policy",
        "a finding at or above --fail-on, in some policy",
        "bad input, or a policy that does not load (all but text check the others)",
    ),
    "explain": ("every step was allowed", "a step the runtime would refuse, or no pass", None),
    "diff": ("equivalent passes and equal budgets", "the passes or the budgets differ", None),
    "test": ("every case passed", "a case failed", "bad input: in the policy or the cases file"),
    "schema": ("done", None, None),
    "mcp-proxy": ("the client closed the session", None, "bad input, or the upstream failed"),
    "bench": ("done", None, None),
}
_EXAMPLES = {
    "check": "ruleengine check policies/ --format github\n"
    "ruleengine check policy.toml --format sarif > ruleengine.sarif",
    "explain": "ruleengine explain policy.toml --trace search,fetch:error,final_answer\n"
    "ruleengine explain policy.toml --trace-file trace.json --format json",
    "diff": "ruleengine diff old.toml new.toml --format json\n"
    "git show main:policy.toml | ruleengine diff - policy.toml --stdin-format toml",
    "test": "ruleengine test policy.toml policy.cases.toml\n"
    "ruleengine test policy.yaml policy.cases.yaml --format json",
    "schema": "ruleengine schema > policy.schema.json\nruleengine schema | head -3",
    "mcp-proxy": "ruleengine mcp-proxy policy.toml -- python server.py\n"
    "ruleengine mcp-proxy policy.toml --http 8765 -- npx some-mcp-server",
    "bench": "ruleengine bench policy.toml --walks 200\n"
    "ruleengine bench policy.toml --seed 7 --format json",
}
"""Two command lines per command, one a line."""


def _epilog(name: str) -> str:
    """The exit codes of command ``name``, and two examples."""
    ok, found, bad = _EXITS[name]
    codes = [
        ("0", ok),
        *([("1", found)] if found else []),
        ("2", bad or "bad input"),
        ("3", "an internal error: a bug in ruleengine (the traceback is printed)"),
        ("4", "the output could not be written"),
        ("130", "interrupted"),
        ("141", "the reader of stdout went away"),
    ]
    lines = ["exit codes:", *(f"  {code:<4} {meaning}" for code, meaning in codes)]
    lines += ["", "examples:", *(f"  {e}" for e in _EXAMPLES[name].splitlines())]
    return "\n".join(lines)


def _check_arguments(p: _Parser) -> None:
    p.add_argument(
        "policies",
        nargs="+",
        metavar="POLICY",
        help="a .toml, .yaml, .yml or .json policy file, a directory (its policy files, not "
        "its subdirectories), - (stdin, with --stdin-format), or module:attr naming a "
        "Python Policy",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text for people (default), json (one object per policy: one line each for "
        "several policies or a directory), sarif (one log), concise (PATH:LINE:COL: SEVERITY:"
        " MESSAGE [ID] per finding, for editors), github (workflow annotations)",
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
    _stdin_format(p)


def _explain_arguments(p: _Parser) -> None:
    p.add_argument("policy", metavar="POLICY", help=_ONE_POLICY)
    p.add_argument(
        "--trace",
        metavar="STEPS",
        help="the steps, comma-separated, each `tool` or `tool:status` (ok, error, denied), "
        'or a JSON list of tool names and [tool, status] pairs (`["a:b", ["c", "error"]]`); '
        "may end with final_answer (default: the empty run)",
    )
    p.add_argument(
        "--trace-file",
        metavar="PATH",
        help="read the steps from a file holding a JSON list, as --trace takes it",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    _stdin_format(p)


def _test_arguments(p: _Parser) -> None:
    p.add_argument("policy", metavar="POLICY", help=_ONE_POLICY)
    p.add_argument(
        "cases",
        metavar="CASES",
        help="a .toml, .yaml, .yml or .json file of named cases: a trace each, and the "
        "passes expected at chosen steps",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    _stdin_format(p)


def _diff_arguments(p: _Parser) -> None:
    p.add_argument("old", metavar="OLD", help=_ONE_POLICY)
    p.add_argument("new", metavar="NEW", help=_ONE_POLICY)
    p.add_argument("--format", choices=("text", "json"), default="text", help="default: text")
    _limits(p)
    _stdin_format(p)


def _bench_arguments(p: _Parser) -> None:
    p.add_argument("policy", metavar="POLICY", help=_ONE_POLICY)
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
    _stdin_format(p)


_ONE_POLICY = "a policy file, - (stdin, with --stdin-format), or module:attr"


def _stdin_format(p: _Parser) -> None:
    p.add_argument(
        "--stdin-format",
        choices=tuple(POLICY_FORMATS),
        help="the format of the policy given as - (read from stdin): toml, yaml or json",
    )


DEFAULT_TIMEOUT = 60.0
"""``--timeout``'s default, in seconds (``0``: none)."""
DEFAULT_MAX_MEMORY = 2048
"""``--max-memory``'s default, in MiB (``0``: none)."""


def _limits(p: _Parser) -> None:
    p.add_argument(
        "--timeout",
        type=_seconds_or_none,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"stop after S seconds, {DEFAULT_TIMEOUT:g} by default; 0 for no limit (the result"
        " then says it is incomplete)",
    )
    p.add_argument(
        "--max-memory",
        type=_mebibytes_or_none,
        default=DEFAULT_MAX_MEMORY * 2**20,
        metavar="MIB",
        help=f"stop when the check's processes hold more than MIB MiB, {DEFAULT_MAX_MEMORY} by"
        " default; 0 for no limit (the result then says it is incomplete)",
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
