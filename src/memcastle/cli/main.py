"""`memcastle` console entry point: which modules of `memcastle.cli.commands` hold each top-level command.

A call imports only the modules of the command it runs (`memcastle status` loads `daemon`, not the eleven others;
`memcastle wing …` loads `drawers` and `forgetting`, which adds `wing delete` and `wing rename`);
`memcastle --help` lists every name and loads every module for their summaries. A test checks this table against
what the modules register.
"""

from __future__ import annotations

from memcastle.cli.command_line import app, run

COMMAND_MODULES = {
    "audit": ("audit",),
    "auth": ("daemon",),
    "completions": ("config",),
    "checkpoint": ("agents",),
    "config": ("config",),
    "connector": ("connectors",),
    "daemon": ("background",),
    "diary": ("agents",),
    "doctor": ("doctor",),
    "drawer": ("drawers",),
    "embed": ("mining",),
    "entity": ("knowledge",),
    "export": ("archives",),
    "extract": ("knowledge",),
    "fact": ("knowledge",),
    "forget": ("forgetting",),
    "hook": ("hooks",),
    "hooks": ("hooks",),
    "import": ("archives",),
    "integration": ("integrations",),
    "job": ("jobs",),
    "mcp": ("daemon",),
    "migrate": ("daemon",),
    "mine": ("mining",),
    "miner": ("mining",),
    "note": ("drawers",),
    "preferences": ("preferences",),
    "recall": ("search",),
    "repair": ("audit",),
    "room": ("drawers", "forgetting"),
    "search": ("search",),
    "serve": ("daemon",),
    "shutdown": ("daemon",),
    "source": ("mining",),
    "status": ("daemon",),
    "trigger": ("mining",),
    "tui": ("doctor",),
    "verify": ("mining",),
    "wake-up": ("agents",),
    "wing": ("drawers", "forgetting"),
}
app.modules = COMMAND_MODULES

__all__ = ["COMMAND_MODULES", "app", "run"]
