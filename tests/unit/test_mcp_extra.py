"""Without the MCP SDK (the optional extra ``mcp``), ``agent`` and ``ruleengine`` import and work,
and the MCP modules say which extra to install. Run in a fresh interpreter where ``import mcp``
fails, whether the SDK is installed here or not."""

from __future__ import annotations

from fresh import run_fresh


def test_the_packages_import_without_the_sdk_and_the_mcp_modules_name_the_extra() -> None:
    out = run_fresh(
        """
        import sys
        sys.modules["mcp"] = None  # `import mcp` now fails, as without the extra

        import agent, backends, ruleengine
        from ruleengine import PolicyError, Reasoner, RuleEngineError
        print(Reasoner(["a"]).decide([]).allowed)

        for name in ("ruleengine.mcp", "ruleengine.mcp.proxy", "agent.mcp"):
            try:
                __import__(name)
            except ImportError as error:
                assert isinstance(error, RuleEngineError), type(error)
                print(name, "|", error.message, "|", error.hint)
            else:
                print(name, "imported")
        """
    )
    message = "MCP support needs the MCP SDK (`mcp`), an optional extra that is not installed"
    hint = "install the extra: pip install 'ruleengine[mcp]'"
    assert out.splitlines() == [
        "('a', 'final_answer')",
        *(
            f"{name} | {message} | {hint}"
            for name in ("ruleengine.mcp", "ruleengine.mcp.proxy", "agent.mcp")
        ),
    ]
