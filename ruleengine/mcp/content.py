"""What a tool result says, read the same way by the proxy (a step's output and error) and by the
agent's MCP tools (the tool's output, or its error).

``result_text`` is the result's content as text: text blocks as they are, the other kinds
named in one line each (``[image: image/png]``). ``result_output`` is what a step records as the
output: the structured content when the server gave one, else that text.
"""

from __future__ import annotations

from typing import Any

from mcp import types

__all__ = ["result_output", "result_text"]


def result_text(result: types.CallToolResult) -> str:
    """The content blocks as text, one block per line (``""`` when there are none)."""
    return "\n".join(_block_text(block) for block in result.content)


def result_output(result: types.CallToolResult) -> Any:
    """The structured content if the server sent one, else ``result_text``."""
    if result.structured_content is not None:
        return result.structured_content
    return result_text(result)


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}]"
    if isinstance(block, types.ResourceLink):
        return f"[resource: {block.uri}]"
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return resource.text
    mime = f" ({resource.mime_type})" if resource.mime_type else ""
    return f"[resource: {resource.uri}{mime}]"
