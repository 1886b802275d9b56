"""Agent memory: wake-up and the diary."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
    read_content,
)

diary_app = typer.Typer(no_args_is_help=True, help="An agent's diary: write and read entries.")
app.add_typer(diary_app, name="diary")


@app.command("wake-up")
def wake_up(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    max_items: Annotated[int, typer.Option("--max-items", help="at most this many drawers")] = 10,
    max_bytes: Annotated[int, typer.Option("--max-bytes", help="at most this many bytes of content")] = 8192,
) -> None:
    """The agent's latest diary entry and the most recent checkpoints, within a budget."""
    inv = invocation(ctx)
    data = inv.client().get("/wake-up", agent=agent, wing=wing, max_items=max_items, max_bytes=max_bytes)

    def show(data: Any) -> None:
        for drawer in data["diary"] + data["checkpoints"]:
            render.show_drawer(drawer)
        render.console.print(f"[dim]{data['bytes']} bytes; {data['omitted']} drawer(s) left out by the budget[/dim]")

    inv.emit(data, show)


@diary_app.command("write")
def diary_write(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="the entry, or - for standard input")],
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="wing (default 'default')")] = None,
) -> None:
    """Write a diary entry for an agent."""
    inv = invocation(ctx)
    data = inv.client().post("/diary", {"agent": agent, "content": read_content(content), "wing": wing})
    inv.emit(data, lambda data: render.console.print(f"written: {data['drawer']['id']}"))


@diary_app.command("read")
def diary_read(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    limit: Annotated[int, typer.Option(help="how many entries, newest first")] = 10,
) -> None:
    """Read an agent's diary, newest first."""
    inv = invocation(ctx)
    data = inv.client().get("/diary", agent=agent, wing=wing, limit=limit)

    def show(data: Any) -> None:
        for drawer in data["entries"]:
            render.show_drawer(drawer)

    inv.emit(data, show)
