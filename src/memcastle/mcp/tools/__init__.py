"""The MCP tools, one module per group (as `cli/commands/` is): each tool is a plain function declared with
`base.tool` beside it. Importing this package declares them all."""

from memcastle.mcp.tools import agents, corrections, facts, graph, jobs, mining, reading, session, upkeep
from memcastle.mcp.tools.base import TOOLS, Env, ToolSpec, prepare

__all__ = [
    "TOOLS",
    "Env",
    "ToolSpec",
    "agents",
    "corrections",
    "facts",
    "graph",
    "jobs",
    "mining",
    "prepare",
    "reading",
    "session",
    "upkeep",
]
