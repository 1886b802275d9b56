"""Agent memory: wake-up and the diary."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.app import Invocation, app, group, pass_invocation, read_content

diary_app = group("diary", app, "An agent's diary: write and read entries.")


@app.command("wake-up")
@click.option("--agent", required=True, help="the agent's identity")
@click.option("--wing", help="only this wing")
@click.option("--max-items", type=int, default=10, help="at most this many drawers")
@click.option("--max-bytes", type=int, default=8192, help="at most this many bytes of content")
@pass_invocation
def wake_up(inv: Invocation, agent: str, wing: str | None, max_items: int, max_bytes: int) -> None:
    """The agent's latest diary entry and the most recent checkpoints, within a budget."""
    data = inv.client().get("/wake-up", agent=agent, wing=wing, max_items=max_items, max_bytes=max_bytes)

    def show(data: Any) -> None:
        for drawer in data.get("pinned", []) + data["diary"] + data["checkpoints"]:
            render.show_drawer(drawer)
        render.console.print(f"[dim]{data['bytes']} bytes; {data['omitted']} drawer(s) left out by the budget[/dim]")

    inv.emit(data, show)


@diary_app.command("write")
@click.argument("content")
@click.option("--agent", required=True, help="the agent's identity")
@click.option("--wing", help="wing (default 'default')")
@pass_invocation
def diary_write(inv: Invocation, content: str, agent: str, wing: str | None) -> None:
    """Write a diary entry for an agent: CONTENT, or - for standard input."""
    data = inv.client().post("/diary", {"agent": agent, "content": read_content(content), "wing": wing})
    inv.emit(data, lambda data: render.console.print(f"written: {data['drawer']['id']}"))


@diary_app.command("read")
@click.option("--agent", required=True, help="the agent's identity")
@click.option("--wing", help="only this wing")
@click.option("--limit", type=int, default=10, help="how many entries, newest first")
@pass_invocation
def diary_read(inv: Invocation, agent: str, wing: str | None, limit: int) -> None:
    """Read an agent's diary, newest first."""
    data = inv.client().get("/diary", agent=agent, wing=wing, limit=limit)

    def show(data: Any) -> None:
        for drawer in data["entries"]:
            render.show_drawer(drawer)

    inv.emit(data, show)
