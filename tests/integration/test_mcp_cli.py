"""``ruleengine mcp-proxy`` on the command line: options may follow the policy, everything after
``--`` is the upstream server's command line, and each mistake is one line on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP proxy needs the `mcp` extra")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--http", "99999", "--", "python", "x.py"], "`99999` is not a port (0 to 65535)"),
        ([], "name the upstream server's command after `--`"),
        (["extra", "--", "x"], "unexpected argument `extra`"),
        (["--", "/nonexistent/cmd", "-v", "--flag"], "`/nonexistent/cmd -v --flag` did not start"),
    ],
)
def test_the_command_line_reads_options_then_the_upstream_after_the_double_dash(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Options may follow the policy; everything after `--`, options included, is the
    upstream server's command line; each mistake is one line, never a traceback."""
    from ruleengine.cli import main

    policy = str(Path(__file__).resolve().parents[2] / "examples/policies/support_refunds.toml")
    assert main(["mcp-proxy", policy, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
