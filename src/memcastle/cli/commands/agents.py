"""Agent memory: wake-up, the diary and checkpoints."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation, read_content, text_of

diary_app = group("diary", app, "An agent's diary: write and read entries.")


@app.command("wake-up")
@click.option("--agent", "--agent-identity", "agent", required=True, help="the agent's identity")
@click.option("--wing", help="only this wing")
@click.option("--max-items", type=int, default=10, help="at most this many drawers")
@click.option("--max-bytes", type=int, default=8192, help="at most this many bytes of content")
@pass_invocation
def wake_up(inv: Invocation, agent: str, wing: str | None, max_items: int, max_bytes: int) -> None:
    """The agent's latest diary entry, its project's decisions and its recent checkpoints, within a budget."""
    data = inv.client().get("/wake-up", agent=agent, wing=wing, max_items=max_items, max_bytes=max_bytes)

    def show(data: Any) -> None:
        for drawer in data.get("pinned", []) + data["diary"] + data.get("decisions", []) + data["checkpoints"]:
            render.show_drawer(drawer)
        render.console.print(f"[dim]{data['bytes']} bytes; {data['omitted']} drawer(s) left out by the budget[/dim]")

    inv.emit(data, show)


@diary_app.command("write")
@click.argument("content")
@click.option("--agent", "--agent-identity", "agent", required=True, help="the agent's identity")
@click.option("--wing", help="wing (default 'default')")
@pass_invocation
def diary_write(inv: Invocation, content: str, agent: str, wing: str | None) -> None:
    """Write a diary entry for an agent: CONTENT, or - for standard input."""
    data = inv.client().post("/diary", {"agent": agent, "content": read_content(content), "wing": wing})
    inv.emit(data, lambda data: render.console.print(f"written: {data['drawer']['id']}"))


@diary_app.command("read")
@click.option("--agent", "--agent-identity", "agent", required=True, help="the agent's identity")
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


@app.command("checkpoint")
@click.argument("words", nargs=-1)
@click.option(
    "--file", "from_file", type=click.File("r", encoding="utf-8"), help="read the checkpoint from this file (- stdin)"
)
@click.option("--agent", "--agent-identity", "agent", help="the agent's identity")
@click.option("--wing", help="wing (default 'default')")
@click.option("--room", help="room (default 'checkpoints')")
@click.option("--tag", "tags", multiple=True, help="a tag besides 'checkpoint'; repeat for more")
@click.option(
    "--emergency",
    is_flag=True,
    help="the session is ending: queue it as a durable job and return at once; with no daemon answering, keep it "
    "on disk for the next daemon to file",
)
@pass_invocation
def checkpoint(
    inv: Invocation,
    words: tuple[str, ...],
    from_file: Any,
    agent: str | None,
    wing: str | None,
    room: str | None,
    tags: tuple[str, ...],
    emergency: bool,
) -> None:
    """Save a decision or piece of state as a checkpoint drawer (tag `checkpoint`), from WORDS, --file or standard
    input. --emergency, for a session about to end, answers at once: the daemon has queued the write as a durable
    job (it happens even if this process is killed now), or — no daemon answering within two seconds — the
    checkpoint is kept on disk and filed when a daemon of this palace next starts."""
    item = {"content": text_of(words, from_file, False), "wing": wing, "room": room, "tags": list(tags)}
    body: dict[str, Any] = {"items": [{k: v for k, v in item.items() if v}], "agent": agent}
    if not emergency:
        data = inv.client().post("/checkpoint", body)

        def show(data: Any) -> None:
            for drawer in data["drawers"]:
                render.show_drawer(drawer)

        inv.emit(data, show)
        return
    from memcastle.errors import DaemonNotRunning

    try:
        client = inv.client()
        client.timeout = 2.0
        data = client.post("/checkpoint", {**body, "emergency": True})
    except DaemonNotRunning as exc:
        from memcastle.runtime.daemons import state_dir
        from memcastle.runtime.spool import spool

        path = spool(state_dir(), inv.settings().palace, {**body, "requested_by": "cli"})
        data = {"spooled": str(path), "why": exc.message}
        inv.emit(data, lambda data: click.echo(f"no daemon answered ({data['why']}); kept in {data['spooled']}"))
        return
    inv.emit(data, lambda data: click.echo(f"checkpoint queued as job {data['job']['id']}"))
