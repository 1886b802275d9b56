"""Configuration: every effective setting and where it came from."""

from __future__ import annotations

from typing import Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
)

config_app = typer.Typer(no_args_is_help=True, help="Configuration.")
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Every effective setting and where its value came from."""
    inv = invocation(ctx)
    settings = inv.settings()
    rows = settings.describe()

    def show(data: Any) -> None:
        render.console.print(f"[dim]config file: {settings.config_file}[/dim]")
        render.table("settings", ["key", "value", "from"], [(r["key"], r["value"], r["origin"]) for r in rows])

    inv.emit({"config_file": str(settings.config_file), "settings": rows}, show)
