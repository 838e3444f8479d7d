"""The policies a command line names: files, directories, ``-`` (stdin) and ``module:attr``.

``load_each`` loads every source, and keeps going past one that does not load (``check``
reports it in its machine formats, and checks the others); a directory stands for the policy
files in it (``policy_files``), leaving out the cases files of ``ruleengine test``
(``*.cases.toml`` and the like) that may sit beside them. Every mistake is a ``PolicyError``
(one line and a hint: the command's exit code 2).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence

from ruleengine.check.cases import is_cases_file
from ruleengine.errors import PolicyError
from ruleengine.policy import Policy
from ruleengine.policy.load import MAX_BYTES, load_bytes, policy_files

__all__ = ["STDIN", "STDIN_SOURCE", "check_stdin", "is_directory", "load_each", "load_source"]

STDIN = "-"
"""The ``POLICY`` that reads the policy from stdin (in the format ``--stdin-format`` names)."""
STDIN_SOURCE = "<stdin>"
"""How reports and errors name the policy read from stdin."""


def load_each(
    sources: Sequence[str],
    stdin_format: str | None,
    *,
    directories: bool = False,
    on_error: Callable[[PolicyError], object] = lambda error: None,
) -> list[tuple[str, Policy | PolicyError]]:
    """Each source and its policy, or the error it gave (handed to ``on_error`` at once).
    ``-`` is stdin, read in ``stdin_format``; with ``directories``, a directory stands for
    the policy files in it (``policy_files``, without cases files)."""
    check_stdin(sources, stdin_format)
    loaded: list[tuple[str, Policy | PolicyError]] = []
    for source, error in _expanded(sources, directories):
        try:
            if error is not None:
                raise error
            loaded.append(
                (source, _stdin(stdin_format) if source == STDIN else load_source(source))
            )
        except PolicyError as exc:
            on_error(exc)
            loaded.append((source, exc))
    return loaded


def load_source(source: str) -> Policy:
    """The policy ``source`` names; ``module:attr`` imports with the current directory on the
    import path, as ``python -m`` has it (a console script's path starts at its own dir)."""
    if ":" in source and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    return Policy.load(source)


def _expanded(
    sources: Sequence[str], directories: bool
) -> Iterator[tuple[str, PolicyError | None]]:
    """The sources, each directory (with ``directories``) replaced by its policy files (not
    its cases files), or by the error listing it gave."""
    for source in sources:
        if not (directories and is_directory(source)):
            yield source, None
            continue
        try:
            files = [f for f in policy_files(source) if not is_cases_file(f)]
        except PolicyError as exc:
            yield source, exc
            continue
        if not files:
            error = PolicyError(
                f"{source}: no policy file in the directory, only cases files",
                hint="`ruleengine test POLICY CASES` runs a cases file against its policy",
                location=source,
            )
            yield source, error
        yield from ((f, None) for f in files)


def is_directory(source: str) -> bool:
    return source != STDIN and os.path.isdir(source)


def check_stdin(sources: Sequence[str], stdin_format: str | None) -> None:
    """``-`` at most once, and ``--stdin-format`` exactly when it is there."""
    count = sum(1 for s in sources if s == STDIN)
    if count > 1:
        raise PolicyError("`-` is given twice: stdin holds one policy")
    if count == 1 and stdin_format is None:
        raise PolicyError(
            "`-`: a policy read from stdin needs `--stdin-format`",
            hint="add `--stdin-format toml` (or `yaml`, `json`)",
        )
    if count == 0 and stdin_format is not None:
        raise PolicyError(
            "--stdin-format: no POLICY is `-`",
            hint="`--stdin-format` says how to read the policy given as `-` (stdin)",
        )


def _stdin(stdin_format: str | None) -> Policy:
    """The policy on stdin, in ``stdin_format`` (bytes: the loader decodes UTF-8 itself)."""
    # INVARIANT: `check_stdin` refused a `-` without its format
    assert stdin_format is not None
    stream = sys.stdin
    if stream is None:
        raise PolicyError("`-`: stdin is closed", hint="pipe the policy in, or name its file")
    try:
        buffer = getattr(stream, "buffer", None)
        data = (
            buffer.read(MAX_BYTES + 1)
            if buffer is not None
            else stream.read(MAX_BYTES + 1).encode("utf-8")
        )
    except OSError as exc:
        raise PolicyError(f"`-`: cannot read stdin: {exc.strerror or exc}") from None
    return load_bytes(data, format=stdin_format, source=STDIN_SOURCE, policy_class=Policy)
