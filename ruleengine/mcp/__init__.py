"""MCP support: the enforcing proxy (``ruleengine.mcp.proxy``) and what it shares with the agent's
MCP tools (``agent.mcp``): how a tool result reads as text (``ruleengine.mcp.content``).

Everything here needs the MCP SDK, the optional extra ``mcp`` (``pip install 'ruleengine[mcp]'``).
``import ruleengine`` and ``import agent`` never import this package; importing it without the
SDK raises ``MCPUnavailableError``, which is both an ``ImportError`` and a ``RuleEngineError``
and names the extra.
"""

from __future__ import annotations

from importlib import metadata

from ruleengine.errors import RuleEngineError

MIN_SDK = (2, 3)
"""The oldest MCP SDK (``mcp``) release this package is written for."""

_EXTRA_HINT = "install the extra: pip install 'ruleengine[mcp]'"


class MCPUnavailableError(RuleEngineError, ImportError):
    """The MCP SDK is not installed, or is too old: MCP support needs the extra ``mcp``."""

    __module__ = "ruleengine.mcp"


def _check_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as error:
        raise MCPUnavailableError(
            "MCP support needs the MCP SDK (`mcp`), an optional extra that is not installed",
            hint=_EXTRA_HINT,
        ) from error
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:  # pragma: no cover - an importable mcp without metadata
        return
    parts = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if parts < MIN_SDK:
        wanted = ".".join(str(p) for p in MIN_SDK)
        raise MCPUnavailableError(
            f"MCP support needs the MCP SDK `mcp>={wanted}`: found `mcp {version}`",
            hint=_EXTRA_HINT,
        )


_check_sdk()

from ruleengine.mcp.connection import (  # noqa: E402
    MCPServerError,
    ServerConnection,
    connect_http,
    connect_stdio,
)
from ruleengine.mcp.content import result_output, result_text  # noqa: E402
from ruleengine.mcp.proxy import EnforcingProxy, enforcing_proxy, refusal, serve  # noqa: E402

__all__ = [
    "EnforcingProxy",
    "MCPServerError",
    "MCPUnavailableError",
    "ServerConnection",
    "connect_http",
    "connect_stdio",
    "enforcing_proxy",
    "refusal",
    "result_output",
    "result_text",
    "serve",
]
