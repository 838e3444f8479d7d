"""The MCP demo (examples/mcp_agent.py, run by `make demo`): an agent whose tools come from an
MCP server over stdio, under a policy with an order and a condition on arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP demo needs the `mcp` extra")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent.py"


def test_the_mcp_demo_refuses_what_the_policy_refuses_and_answers() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "tools from the MCP server: search_docs, send_email"
    assert "(needs `search_docs` first)" in lines[1]
    assert lines[2] == "  ran search_docs"
    assert "allow_if `arg.to.endswith('@example.com')` of `own-domain` fails" in lines[3]
    assert lines[4:] == [
        "  ran send_email",
        "  ran final_answer",
        "answer: I e-mailed the customer our refund policy.",
    ]
