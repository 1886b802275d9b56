"""The MCP interface: tools over `Services` (`server`), mounted at /mcp by the daemon; a stdio bridge (`bridge`)."""

from memcastle.mcp.server import TOOLS, build_mcp_server, mcp_transport_security

__all__ = ["TOOLS", "build_mcp_server", "mcp_transport_security"]
