"""The MCP tools, one module per group (as `cli/commands/` is): each tool is a plain function declared with
`base.tool` beside it. Importing this package declares them all."""

from memcastle.mcp.tools import agents, corrections, facts, jobs, mining, reading, session
from memcastle.mcp.tools.base import TOOLS, Env, ToolSpec, prepare

__all__ = [
    "TOOLS",
    "Env",
    "ToolSpec",
    "agents",
    "corrections",
    "facts",
    "jobs",
    "mining",
    "prepare",
    "reading",
    "session",
]
