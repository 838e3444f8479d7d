"""examples/support_agent.py runs offline (what `make demo` shows): the gate refuses the hasty
refunds and the one above the order's price (its arguments fail the refund limit), the manager
approves the one that may run, and the agent answers."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support_agent.py"


def test_the_support_agent_runs_offline(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("offline: a scripted model plays a hasty support agent")
    assert out.count("  refused: `issue_refund` did not run") == 4  # the log lines
    assert (
        "allow_if `arg.amount <= last('lookup_order').output.price` of `refund-limit` fails" in out
    )
    assert "manager: refund 80.00 EUR? approved" in out
    assert "ok issue_refund: refunded 80.00 EUR for order 1042" in out
    assert "answer: Sorry about the espresso machine!" in out
    assert out.rstrip().endswith("4 steps; calls refused by the gate: 4, by the manager: 0")


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "", "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "answer:" in done.stdout
