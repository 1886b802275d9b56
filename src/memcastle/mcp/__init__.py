"""The MCP interface: tools over `Services` (`server`), mounted at /mcp by the daemon; a stdio bridge (`bridge`)."""

from memcastle.mcp.server import (
    MCP_PATH,
    TOOLS,
    build_mcp_server,
    http_endpoint,
    mcp_transport_security,
)

__all__ = ["MCP_PATH", "TOOLS", "build_mcp_server", "http_endpoint", "mcp_transport_security"]
