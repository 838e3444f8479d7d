"""Running a snippet in a fresh interpreter, for tests about what a process imports (in the
test process, other tests have imported everything already)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_fresh(code: str) -> str:
    """The stdout of ``code`` (dedented) run by a new interpreter in the repository's root;
    the test fails with its stderr when it exits non-zero."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
