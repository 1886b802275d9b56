"""Drawers, wings and rooms: note, show, history, supersede, list, duplicates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
    read_content,
)

drawer_app = typer.Typer(no_args_is_help=True, help="Drawers: show, history, supersede, list.")
wing_app = typer.Typer(no_args_is_help=True, help="Wings of the palace.")
room_app = typer.Typer(no_args_is_help=True, help="Rooms of a wing.")
app.add_typer(drawer_app, name="drawer")
app.add_typer(wing_app, name="wing")
app.add_typer(room_app, name="room")


@app.command()
def note(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="the note text, or - to read standard input")],
    wing: Annotated[str | None, typer.Option(help="wing (default: the project's, else 'default')")] = None,
    room: Annotated[str | None, typer.Option(help="room (default: the project's, else 'notes')")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="a tag; repeat for more")] = None,
    agent: Annotated[str | None, typer.Option(help="who is writing (an agent identity)")] = None,
    name: Annotated[str | None, typer.Option(help="a name, unique among the room's current drawers")] = None,
) -> None:
    """Save a note as a drawer."""
    from memcastle.connectors.project import find_project_settings

    inv = invocation(ctx)
    project = find_project_settings(Path.cwd())
    body = {
        "content": read_content(content),
        "wing": wing or (project.wing if project else None),
        "room": room or (project.room if project else None),
        "tags": tag or [],
        "agent": agent,
        "name": name,
    }
    data = inv.client().post("/notes", body)

    def show(data: Any) -> None:
        verb = "saved" if data["created"] else "already stored (exact copy)"
        render.console.print(f"{verb}: {data['drawer']['id']} in {data['drawer']['wing']}/{data['drawer']['room']}")

    inv.emit(data, show)


@drawer_app.command("show")
def drawer_show(ctx: typer.Context, drawer_id: str) -> None:
    """Show one drawer verbatim with its provenance."""
    inv = invocation(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}")
    inv.emit(data, lambda data: render.show_drawer(data))


@drawer_app.command("history")
def drawer_history(ctx: typer.Context, drawer_id: str) -> None:
    """Every version of a drawer, oldest first."""
    inv = invocation(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/history")

    def show(data: Any) -> None:
        for version in data["versions"]:
            render.show_drawer(version)

    inv.emit(data, show)


@drawer_app.command("supersede")
def drawer_supersede(
    ctx: typer.Context,
    drawer_id: str,
    content: Annotated[str, typer.Argument(help="the replacement text, or - for standard input")],
    reason: Annotated[str | None, typer.Option(help="why, kept in the replacement's provenance")] = None,
) -> None:
    """Replace a drawer: the old version closes, the new one opens, both stay linked."""
    inv = invocation(ctx)
    body = {"content": read_content(content), **({"reason": reason} if reason is not None else {})}
    data = inv.client().post(f"/drawers/{drawer_id}/supersede", body)
    inv.emit(data, lambda data: render.show_drawer(data))


@drawer_app.command("list")
def drawer_list(
    ctx: typer.Context,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    room: Annotated[str | None, typer.Option(help="only this room")] = None,
    limit: Annotated[int, typer.Option(help="page size (1-200)")] = 50,
    after: Annotated[str | None, typer.Option(help="continue after this drawer id")] = None,
) -> None:
    """List current drawers, oldest first, a page at a time."""
    inv = invocation(ctx)
    data = inv.client().get("/drawers", wing=wing, room=room, limit=limit, after=after)

    def show(data: Any) -> None:
        render.table(
            "drawers",
            ["id", "wing/room", "name", "text"],
            [
                (d["id"], f"{d['wing']}/{d['room']}", d.get("name"), d["content"][:60].replace("\n", " "))
                for d in data["drawers"]
            ],
        )
        if data.get("next_after"):
            render.console.print(f"[dim]more: --after {data['next_after']}[/dim]")

    inv.emit(data, show)


@drawer_app.command("duplicates")
def drawer_duplicates(ctx: typer.Context, drawer_id: str) -> None:
    """Drawers linked to this one as exact, normalized or near copies (never merged)."""
    inv = invocation(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/duplicates")

    def show(data: Any) -> None:
        for item in data["duplicates"]:
            render.console.print(
                render.drawer_panel(
                    item["drawer"], title_extra=f"{item['verdict']} copy, similarity {item['similarity']}"
                )
            )

    inv.emit(data, show)


@wing_app.command("list")
def wing_list(ctx: typer.Context) -> None:
    """List the palace's wings."""
    inv = invocation(ctx)
    data = inv.client().get("/wings")

    def show(data: Any) -> None:
        render.table(
            "wings", ["wing", "drawers", "created"], [(w["name"], w["drawers"], w["created_at"]) for w in data["wings"]]
        )

    inv.emit(data, show)


@room_app.command("list")
def room_list(ctx: typer.Context, wing: str) -> None:
    """List the rooms of a wing."""
    inv = invocation(ctx)
    data = inv.client().get(f"/wings/{wing}/rooms")

    def show(data: Any) -> None:
        render.table(
            f"rooms of {wing}",
            ["room", "drawers", "created"],
            [(r["name"], r["drawers"], r["created_at"]) for r in data["rooms"]],
        )

    inv.emit(data, show)
