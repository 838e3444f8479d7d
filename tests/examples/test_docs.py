"""Runs every ```python block of README.md and docs/*.md, and the offline demo.

The blocks of one file run in order in one shared namespace, so a later block may use what an
earlier one defined. A block fenced as ```python no-run is skipped. Lines of the form ``#> text``
(or ``# > text``, as ruff formats them) state what the block prints: when a block has any, its
standard output must equal them, line for line (``#>`` alone stands for an empty line).
"""

from __future__ import annotations

import re
import runpy
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
