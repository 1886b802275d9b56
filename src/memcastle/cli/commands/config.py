"""Configuration: every effective setting and where it came from."""

from __future__ import annotations

from typing import Any

from memcastle.cli import render
from memcastle.cli.app import Invocation, app, group, pass_invocation

config_app = group("config", app, "Configuration.")


@config_app.command("show")
@pass_invocation
def config_show(inv: Invocation) -> None:
    """Every effective setting and where its value came from."""
    settings = inv.settings()
    rows = settings.describe()

    def show(data: Any) -> None:
        render.console.print(f"[dim]config file: {settings.config_file}[/dim]")
        render.table("settings", ["key", "value", "from"], [(r["key"], r["value"], r["origin"]) for r in rows])

    inv.emit({"config_file": str(settings.config_file), "settings": rows}, show)
