"""Source preferences: show, check, explain."""

from __future__ import annotations

from typing import Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
)

preferences_app = typer.Typer(no_args_is_help=True, help="Source preferences: show, check, explain.")
app.add_typer(preferences_app, name="preferences")


@preferences_app.command("show")
def preferences_show(ctx: typer.Context) -> None:
    """The daemon's effective source-preference policy, each field with the layer it came from."""
    inv = invocation(ctx)
    data = inv.client().get("/preferences")

    def show(data: Any) -> None:
        render.show_policy(data)

    inv.emit(data, show)


@preferences_app.command("check")
def preferences_check(ctx: typer.Context) -> None:
    """Validate every preference layer (global file and the palace's preferences.toml); exit 1 on an error."""
    from memcastle.config.layers import layers_from_settings
    from memcastle.preferences import load_policy

    inv = invocation(ctx)
    settings = inv.settings()
    layers = layers_from_settings(settings)
    policy = load_policy(layers)

    def show(data: Any) -> None:
        render.console.print(
            f"[green]ok[/green]: {len(layers)} layer(s) valid" + "".join(f"\n  {layer.name}" for layer in layers)
        )
        render.show_policy(policy.to_json())

    inv.emit({"ok": True, "layers": [layer.name for layer in layers], "policy": policy.to_json()}, show)


@preferences_app.command("explain")
def preferences_explain(ctx: typer.Context, drawer_id: str) -> None:
    """How the policy resolves one drawer: connector, each criterion tried, which matched, which won and why."""
    inv = invocation(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/preference")

    def show(data: Any) -> None:
        render.show_trace(data)

    inv.emit(data, show)
