"""Runs every ```python block of README.md and docs/*.md, every shell transcript, and the
offline demo.

The blocks of one file run in order in one shared namespace, so a later block may use what an
earlier one defined. A block fenced as ```python no-run is skipped. Lines of the form ``#> text``
(or ``# > text``, as ruff formats them) state what the block prints: when a block has any, its
standard output must equal them, line for line (``#>`` alone stands for an empty line).

A ```sh block with ``$ command`` lines is a transcript: each command runs in ``bash`` (where
``ruleengine`` is this checkout's, run by this interpreter), in a scratch directory where
``examples/`` is the repository's, shared by the blocks of one file in order; what it prints,
stdout and stderr together, must be the lines below it up to the next ``$``. A line ``…``
stands for any number of lines; times (``0.14 s``, ``"seconds": 0.099``, ``7.9 µs``) match any
time. A command may carry a here-document (``cat > policy.toml <<'EOF'`` … ``EOF``). A block
fenced as ```sh no-run, or without a ``$`` line, is skipped.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
import textwrap
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python(?P<info>[^\n]*)\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
EXPECTED = re.compile(r"^[ \t]*# ?>(?: (?P<text>.*))?$", re.MULTILINE)


def python_blocks(path: Path) -> list[tuple[int, str, str]]:
    """The ``(first line, info string, code)`` of each ```python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        first_line = text.count("\n", 0, match.start("code")) + 1
        code = textwrap.dedent(match["code"])  # a block may sit indented in a list item
        blocks.append((first_line, match["info"].strip(), code))
    return blocks


def expected_output(code: str) -> list[str] | None:
    """The lines a block says it prints, or ``None`` when it says nothing."""
    lines = [m["text"] or "" for m in EXPECTED.finditer(code)]
    return lines or None


def run_block(path: Path, first_line: int, code: str, namespace: dict[str, object]) -> None:
    # Pad with blank lines so tracebacks point at the line in the Markdown file.
    compiled = compile("\n" * (first_line - 1) + code, str(path), "exec")
    out = StringIO()
    with redirect_stdout(out):
        exec(compiled, namespace)
    expected = expected_output(code)
    if expected is not None:
        printed = [line.rstrip() for line in out.getvalue().splitlines()]
        assert printed == [line.rstrip() for line in expected], (
            f"{path.name}:{first_line}: the block printed something else than its #> lines"
        )


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doc_code_blocks_run(path: Path) -> None:
    blocks = python_blocks(path)
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    for first_line, info, code in blocks:
        if "no-run" in info.split():
            continue
        run_block(path, first_line, code, namespace)


def test_fences_are_found(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(
        "text\n```python\nprint(1)\n#> 1\n```\n"
        "- item\n\n  ```python no-run\n  raise SystemExit\n  ```\n"
        "```sh\nmake demo\n```\n",
        encoding="utf-8",
    )
    assert python_blocks(sample) == [
        (3, "", "print(1)\n#> 1\n"),
        (9, "no-run", "raise SystemExit\n"),
    ]
    assert expected_output("print(1)\n#> 1\n#>\n# > 2\n") == ["1", "", "2"]
    assert expected_output("print(2)\n") is None


def test_demo_prints_a_conflict(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "demo.py"), run_name="__main__")
    assert "CONFLICT" in capsys.readouterr().out


# -- shell transcripts -------------------------------------------------------------------------

SH_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```sh(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
HEREDOC = re.compile(r"<<-?\s*'?(?P<word>\w+)'?")
TIMES = [
    (re.compile(r"\b\d+\.\d+ s\b"), "<t> s"),
    (re.compile(r"\b\d+(\.\d+)? µs\b"), "<t> µs"),
    (re.compile(r'"seconds": ?\d+(\.\d+)?'), '"seconds": <t>'),
]
MARK = "\x1e"  # the record separator: no command prints it


def transcripts(path: Path) -> list[tuple[int, list[tuple[str, list[str]]]]]:
    """The ``(first line, [(command, expected lines)])`` of each transcript of ``path``."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in SH_FENCE.finditer(text):
        if "no-run" in match["info"].split():
            continue
        lines = textwrap.dedent(match["body"]).splitlines()
        steps: list[tuple[str, list[str]]] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.startswith("$ "):
                if steps:
                    steps[-1][1].append(line)
                continue
            command = line[2:]
            heredoc = HEREDOC.search(command)
            if heredoc:
                while i < len(lines):
                    command += "\n" + lines[i]
                    i += 1
                    if lines[i - 1].strip() == heredoc["word"]:
                        break
            steps.append((command, []))
        if steps:
            found.append((text.count("\n", 0, match.start("body")) + 1, steps))
    return found


def _normal(line: str) -> str:
    for pattern, replacement in TIMES:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def printed_as_shown(expected: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is ``expected``, a ``…`` line standing for any number of lines."""
    want = [_normal(line) for line in expected]
    got = [_normal(line) for line in printed]
    # reach[j]: the first j printed lines match the expected lines so far
    reach = [True] + [False] * len(got)
    for line in want:
        if line == "…":
            for j in range(1, len(got) + 1):
                reach[j] = reach[j] or reach[j - 1]
            continue
        reach = [False] + [reach[j] and got[j] == line for j in range(len(got))]
    return reach[-1]


def run_transcript(commands: list[str], where: Path) -> list[list[str]]:
    """What each command prints, stdout and stderr together, run one after another in one
    ``bash`` (so ``echo $?`` sees the command before it). ``ruleengine`` is this checkout's,
    run by this interpreter, whatever the environment has installed."""
    script = [
        "exec 2>&1",
        f'ruleengine() {{ "{sys.executable}" -m ruleengine "$@"; }}',
        "__rc=0",
    ]
    for n, command in enumerate(commands):
        script.append(f"printf '{MARK}%s\\n' {n}; (exit $__rc)")
        script.append(command)
        script.append("__rc=$?")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEENGINE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr in the order they were written
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=where,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        timeout=600,
        check=False,
    )
    parts = done.stdout.split(MARK)[1:]
    return [part.split("\n", 1)[1].splitlines() if "\n" in part else [] for part in parts]


TRANSCRIPT_FILES = [p for p in DOC_FILES if transcripts(p)]


@pytest.mark.parametrize("path", TRANSCRIPT_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doc_transcripts_print_what_the_tool_prints(path: Path, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for first_line, steps in transcripts(path):
        commands = [command for command, _ in steps]
        outputs = run_transcript(commands, tmp_path)
        assert len(outputs) == len(steps), f"{path.name}:{first_line}: the block stopped early"
        for (command, expected), printed in zip(steps, outputs, strict=True):
            assert printed_as_shown(expected, printed), (
                f"{path.name}:{first_line}: `$ {command}` printed:\n" + "\n".join(printed)
            )


def test_transcripts_are_found_and_matched(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(
        "```sh\n$ echo a; echo b\na\nb\n$ cat > x <<'EOF'\nhi\nEOF\n$ cat x\nhi\n```\n"
        "```sh no-run\n$ false\n```\n"
        "```sh\nmake demo\n```\n",
        encoding="utf-8",
    )
    assert transcripts(sample) == [
        (2, [("echo a; echo b", ["a", "b"]), ("cat > x <<'EOF'\nhi\nEOF", []), ("cat x", ["hi"])])
    ]
    outputs = run_transcript(["echo a; echo b", "cat > x <<'EOF'\nhi\nEOF", "cat x"], tmp_path)
    assert outputs == [["a", "b"], [], ["hi"]]
    assert run_transcript(["false", "echo $?"], tmp_path) == [[], ["1"]]
    assert printed_as_shown(["a", "…", "d"], ["a", "b", "c", "d"])
    assert printed_as_shown(["a", "…", "b"], ["a", "b"])
    assert printed_as_shown(["done in 0.14 s"], ["done in 2.03 s"])
    assert not printed_as_shown(["a", "…", "d"], ["a", "b"])
    assert not printed_as_shown(["3 states"], ["32 states"])
