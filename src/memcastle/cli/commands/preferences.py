"""Source preferences: show, check, explain."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation

preferences_app = group("preferences", app, "Source preferences: show, check, explain.")


@preferences_app.command("show")
@pass_invocation
def preferences_show(inv: Invocation) -> None:
    """The daemon's effective source-preference policy, each field with the layer it came from."""
    data = inv.client().get("/preferences")

    def show(data: Any) -> None:
        render.show_policy(data)

    inv.emit(data, show)


@preferences_app.command("check")
@pass_invocation
def preferences_check(inv: Invocation) -> None:
    """Validate every preference layer (global file and the palace's preferences.toml); exit 1 on an error. Says
    whether the running daemon ranks with them: an edit takes effect when the daemon starts again."""
    from memcastle.config.layers import layers_from_settings
    from memcastle.errors import MemCastleError
    from memcastle.preferences import load_policy

    settings = inv.settings()
    layers = layers_from_settings(settings)
    policy = load_policy(layers)
    try:
        running = inv.client().get("/preferences")
    except MemCastleError:  # no daemon answers for this palace
        running = None
    daemon = "none" if running is None else ("in use" if running == policy.to_json() else "not in use")

    def show(data: Any) -> None:
        render.console.print(
            f"[green]ok[/green]: {len(layers)} layer(s) valid" + "".join(f"\n  {layer.name}" for layer in layers)
        )
        if daemon == "not in use":
            render.console.print(
                "[yellow]the running daemon ranks with what these files said when it started[/yellow]: restart it "
                "for them to take effect (memcastle shutdown, then memcastle serve)"
            )
        elif daemon == "none":
            render.console.print("[dim]no daemon is running for this palace: they take effect when one starts[/dim]")
        render.show_policy(policy.to_json())

    inv.emit(
        {"ok": True, "layers": [layer.name for layer in layers], "policy": policy.to_json(), "daemon": daemon}, show
    )


@preferences_app.command("explain")
@click.argument("drawer_id")
@pass_invocation
def preferences_explain(inv: Invocation, drawer_id: str) -> None:
    """How the policy resolves one drawer: connector, each criterion tried, which matched, which won and why."""
    data = inv.client().get(f"/drawers/{drawer_id}/preference")

    def show(data: Any) -> None:
        render.show_trace(data)

    inv.emit(data, show)
