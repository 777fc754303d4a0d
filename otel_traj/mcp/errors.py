"""The error a tool returns to the calling model: the input or the store named, and the problem."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError


class ToolInputError(ToolError):
    """An input the tool cannot use, or a store it cannot read: the result is an error whose text says
    which and why (the SDK's anticipated failure, logged without a traceback)."""
