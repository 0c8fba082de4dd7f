"""The error registry and exception classes, at their public path (:mod:`mcp_sync.protocol.errors`)."""

from .protocol.errors import (
    MCP_CODES,
    CodeRegistry,
    JsonRpcCode,
    MCPError,
    MCPProtocolError,
    MCPTransportError,
    define_codes,
    jsonrpc_code_for,
    mcp_code_for,
)

__all__ = [
    "MCP_CODES",
    "CodeRegistry",
    "JsonRpcCode",
    "MCPError",
    "MCPProtocolError",
    "MCPTransportError",
    "define_codes",
    "jsonrpc_code_for",
    "mcp_code_for",
]
