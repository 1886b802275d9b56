"""Configuration: every effective setting and where it came from; shell completion scripts."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation

config_app = group("config", app, "Configuration.")

SHELLS = ("bash", "zsh", "fish")


@config_app.command("show")
@click.option(
    "--daemon",
    "from_daemon",
    is_flag=True,
    help="the running daemon's effective settings (GET /api/config) instead of this command's",
)
@pass_invocation
def config_show(inv: Invocation, from_daemon: bool) -> None:
    """Every effective setting and where its value came from (secrets and URL passwords masked): as this command
    resolves them from the config file, MEMCASTLE_* variables and flags, or --daemon as the running daemon did."""
    if from_daemon:
        data = inv.client().get("/config")
    else:
        settings = inv.settings()
        data = {"config_file": str(settings.config_file), "settings": settings.describe()}

    def show(data: Any) -> None:
        render.console.print(f"[dim]config file: {data['config_file']}[/dim]")
        rows = [(r["key"], r["value"], r["origin"]) for r in data["settings"]]
        render.table("settings", ["key", "value", "from"], rows)

    inv.emit(data, show)


@app.command("completions")
@click.argument("shell", type=click.Choice(SHELLS))
def completions(shell: str) -> None:
    """Print the shell completion script for SHELL. Load it from your shell's start-up file:
    bash `eval "$(memcastle completions bash)"`, zsh `eval "$(memcastle completions zsh)"`,
    fish `memcastle completions fish | source`."""
    from click.shell_completion import get_completion_class

    completion = get_completion_class(shell)
    assert completion is not None  # click ships all three
    click.echo(completion(app, {}, "memcastle", "_MEMCASTLE_COMPLETE").source())
