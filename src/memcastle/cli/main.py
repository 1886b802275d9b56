"""`memcastle` console entry point: every command group registered on the one click group."""

from __future__ import annotations

from memcastle.cli.app import app, run
from memcastle.cli.commands import (  # noqa: F401 - importing a group registers its commands
    agents,
    archives,
    config,
    daemon,
    drawers,
    forgetting,
    hooks,
    jobs,
    knowledge,
    mining,
    preferences,
    search,
)

__all__ = ["app", "run"]
