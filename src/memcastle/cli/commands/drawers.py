"""Drawers, wings and rooms: note, show, history, supersede, list, duplicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.app import Invocation, app, group, pass_invocation, read_content

drawer_app = group("drawer", app, "Drawers: show, history, supersede, pin, hide, list.")
wing_app = group("wing", app, "Wings of the palace.")
room_app = group("room", app, "Rooms of a wing.")


@app.command()
@click.argument("content")
@click.option("--wing", help="wing (default: the project's, else 'default')")
@click.option("--room", help="room (default: the project's, else 'notes')")
@click.option("--tag", "tags", multiple=True, help="a tag; repeat for more")
@click.option("--agent", help="who is writing (an agent identity)")
@click.option("--name", help="a name, unique among the room's current drawers")
@click.option("--expires", "expires_at", help="when it expires: an RFC 3339 instant, or a duration from now (7d, 12h)")
@pass_invocation
def note(
    inv: Invocation,
    content: str,
    wing: str | None,
    room: str | None,
    tags: tuple[str, ...],
    agent: str | None,
    name: str | None,
    expires_at: str | None,
) -> None:
    """Save CONTENT as a note drawer (- reads standard input)."""
    from memcastle.connectors.project import find_project_settings

    project = find_project_settings(Path.cwd())
    body = {
        "content": read_content(content),
        "wing": wing or (project.wing if project else None),
        "room": room or (project.room if project else None),
        "tags": list(tags),
        "agent": agent,
        "name": name,
        **({"expires_at": expires_at} if expires_at is not None else {}),
    }
    data = inv.client().post("/notes", body)

    def show(data: Any) -> None:
        verb = "saved" if data["created"] else "already stored (exact copy)"
        render.console.print(f"{verb}: {data['drawer']['id']} in {data['drawer']['wing']}/{data['drawer']['room']}")

    inv.emit(data, show)


@drawer_app.command("show")
@click.argument("drawer_id")
@pass_invocation
def drawer_show(inv: Invocation, drawer_id: str) -> None:
    """Show one drawer verbatim with its provenance."""
    data = inv.client().get(f"/drawers/{drawer_id}")
    inv.emit(data, lambda data: render.show_drawer(data))


@drawer_app.command("history")
@click.argument("drawer_id")
@pass_invocation
def drawer_history(inv: Invocation, drawer_id: str) -> None:
    """Every version of a drawer, oldest first."""
    data = inv.client().get(f"/drawers/{drawer_id}/history")

    def show(data: Any) -> None:
        for version in data["versions"]:
            render.show_drawer(version)

    inv.emit(data, show)


@drawer_app.command("supersede")
@click.argument("drawer_id")
@click.argument("content")
@click.option("--reason", help="why, kept in the replacement's provenance")
@pass_invocation
def drawer_supersede(inv: Invocation, drawer_id: str, content: str, reason: str | None) -> None:
    """Replace a drawer by CONTENT (- reads standard input): the old version closes, the new one opens, both
    stay linked."""
    body = {"content": read_content(content), **({"reason": reason} if reason is not None else {})}
    data = inv.client().post(f"/drawers/{drawer_id}/supersede", body)
    inv.emit(data, lambda data: render.show_drawer(data))


def _mark(inv: Invocation, drawer_id: str, **marks: bool) -> None:
    data = inv.client().post(f"/drawers/{drawer_id}/marks", marks)
    inv.emit(data, lambda data: render.show_drawer(data))


@drawer_app.command("pin")
@click.argument("drawer_id")
@pass_invocation
def drawer_pin(inv: Invocation, drawer_id: str) -> None:
    """Pin a drawer: it always enters its wing's wake-up bundle and recall (its later versions stay pinned)."""
    _mark(inv, drawer_id, pinned=True)


@drawer_app.command("unpin")
@click.argument("drawer_id")
@pass_invocation
def drawer_unpin(inv: Invocation, drawer_id: str) -> None:
    """Unpin a drawer."""
    _mark(inv, drawer_id, pinned=False)


@drawer_app.command("hide")
@click.argument("drawer_id")
@pass_invocation
def drawer_hide(inv: Invocation, drawer_id: str) -> None:
    """Hide a drawer: search, recall and wake-up leave it out unless asked for (--include-hidden); it stays in the
    palace, readable by its id."""
    _mark(inv, drawer_id, hidden=True)


@drawer_app.command("unhide")
@click.argument("drawer_id")
@pass_invocation
def drawer_unhide(inv: Invocation, drawer_id: str) -> None:
    """Show a hidden drawer again."""
    _mark(inv, drawer_id, hidden=False)


@drawer_app.command("list")
@click.option("--wing", help="only this wing")
@click.option("--room", help="only this room")
@click.option("--limit", type=int, default=50, help="page size (1-200)")
@click.option("--after", help="continue after this drawer id")
@pass_invocation
def drawer_list(inv: Invocation, wing: str | None, room: str | None, limit: int, after: str | None) -> None:
    """List current drawers, oldest first, a page at a time."""
    data = inv.client().get("/drawers", wing=wing, room=room, limit=limit, after=after)

    def show(data: Any) -> None:
        render.table(
            "drawers",
            ["id", "wing/room", "name", "text"],
            [
                (
                    render.short_id(d["id"]),
                    f"{d['wing']}/{d['room']}",
                    d.get("name"),
                    d["content"][:60].replace("\n", " "),
                )
                for d in data["drawers"]
            ],
        )
        if data.get("next_after"):
            render.console.print(f"[dim]more: --after {data['next_after']}[/dim]")

    inv.emit(data, show)


@drawer_app.command("duplicates")
@click.argument("drawer_id")
@pass_invocation
def drawer_duplicates(inv: Invocation, drawer_id: str) -> None:
    """Drawers linked to this one as exact, normalized or near copies (never merged)."""
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
@pass_invocation
def wing_list(inv: Invocation) -> None:
    """List the palace's wings."""
    data = inv.client().get("/wings")

    def show(data: Any) -> None:
        render.table(
            "wings", ["wing", "drawers", "created"], [(w["name"], w["drawers"], w["created_at"]) for w in data["wings"]]
        )

    inv.emit(data, show)


@room_app.command("list")
@click.argument("wing")
@pass_invocation
def room_list(inv: Invocation, wing: str) -> None:
    """List the rooms of WING."""
    data = inv.client().get(f"/wings/{wing}/rooms")

    def show(data: Any) -> None:
        render.table(
            f"rooms of {wing}",
            ["room", "drawers", "created"],
            [(r["name"], r["drawers"], r["created_at"]) for r in data["rooms"]],
        )

    inv.emit(data, show)
