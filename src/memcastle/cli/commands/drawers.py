"""Drawers, wings and rooms: note, show, history, supersede, list, duplicates."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation, read_content, text_of

drawer_app = group("drawer", app, "Drawers: show, history, supersede, pin, hide, list.")
wing_app = group("wing", app, "Wings of the palace.")
room_app = group("room", app, "Rooms of a wing.")


@app.command()
@click.argument("words", nargs=-1)
@click.option(
    "--file", "from_file", type=click.File("r", encoding="utf-8"), help="read the note from this file (- for stdin)"
)
@click.option("--edit", is_flag=True, help="write the note in $EDITOR (with WORDS as its start)")
@click.option("--wing", help="wing (default: the project's, else 'default')")
@click.option("--room", help="room (default: the project's, else 'notes')")
@click.option("--tag", "tags", multiple=True, help="a tag; repeat for more")
@click.option("--agent", help="who is writing (an agent identity)")
@click.option("--name", help="a name, unique among the room's current drawers")
@click.option("--expires", "expires_at", help="when it expires: an RFC 3339 instant, or a duration from now (7d, 12h)")
@pass_invocation
def note(inv: Invocation, /, words: tuple[str, ...], from_file: Any, edit: bool, **fields: Any) -> None:
    """Save a note drawer: WORDS as typed (no quotes needed), --file, --edit in $EDITOR, or standard input (`-`,
    or piped with no words)."""
    content = text_of(words, from_file, edit)
    from memcastle.connectors.project import find_project_settings

    project = find_project_settings(Path.cwd())
    # The note's fields (`NoteFields`) as the options name them; the project's wing and room where none is given.
    body = {
        "content": content,
        **{k: v for k, v in fields.items() if v is not None},
        "wing": fields["wing"] or (project.wing if project else None),
        "room": fields["room"] or (project.room if project else None),
        "tags": list(fields["tags"]),
    }
    data = inv.client().post("/notes", body)

    def show(data: Any) -> None:
        verb = "saved" if data["created"] else "already stored (exact copy)"
        render.console.print(f"{verb}: {data['drawer']['id']} in {data['drawer']['wing']}/{data['drawer']['room']}")

    inv.emit(data, show)


@drawer_app.command("invalidate")
@click.argument("drawer_id")
@click.option("--reason", required=True, help="why it is wrong (kept as the drawer's closing reason)")
@pass_invocation
def drawer_invalidate(inv: Invocation, drawer_id: str, reason: str) -> None:
    """Close a drawer that is wrong, with nothing to replace it: it leaves searches of now, stays in its history
    (and in time travel to before), with the reason. To correct it instead: drawer supersede."""
    data = inv.client().post(f"/drawers/{drawer_id}/invalidate", {"reason": reason})
    inv.emit(data, lambda data: render.show_drawer(data))


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


# The marks a person sets by hand: the command, the mark and its value, and the help.
MARKS = (
    ("pin", "pinned", True,
     "Pin a drawer: it always enters its wing's wake-up bundle and recall (its later versions stay pinned)."),
    ("unpin", "pinned", False, "Unpin a drawer."),
    ("hide", "hidden", True, "Hide a drawer: search, recall and wake-up leave it out unless asked for "
     "(--include-hidden); it stays in the palace, readable by its id."),
    ("unhide", "hidden", False, "Show a hidden drawer again."),
)  # fmt: skip


def _mark_command(name: str, mark: str, value: bool, help: str) -> None:
    """`memcastle drawer NAME DRAWER_ID`: set one mark."""

    def marked(inv: Invocation, drawer_id: str) -> None:
        _mark(inv, drawer_id, **{mark: value})

    drawer_app.command(name, help=help)(click.argument("drawer_id")(pass_invocation(marked)))


for _marking in MARKS:
    _mark_command(*_marking)


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


def _show_place(inv: Invocation, data: dict[str, Any]) -> None:
    def show(data: Any) -> None:
        place = data["wing"] + (f"/{data['room']}" if data.get("room") else "")
        verb = {True: "created ", False: "already there: "}.get(data.get("created"), "")
        rooms = f", {data['rooms']} room(s)" if data.get("rooms") is not None else ""
        render.console.print(
            f"{verb}{place}: {data['drawers']} current drawer(s), {data['versions']} version(s){rooms}; "
            f"made {render.short_time(data['created_at'])}, last filed {render.short_time(data['last_filed_at'])}"
        )

    inv.emit(data, show)


@wing_app.command("create")
@click.argument("name")
@pass_invocation
def wing_create(inv: Invocation, name: str) -> None:
    """Make an empty wing NAME (notes and mines make wings as they file; this makes one ahead of them)."""
    _show_place(inv, inv.client().post("/wings", {"name": name}))


@wing_app.command("show")
@click.argument("name")
@pass_invocation
def wing_show(inv: Invocation, name: str) -> None:
    """A wing's totals: current drawers, every version, rooms, when it was made and last filed into."""
    _show_place(inv, inv.client().get(f"/wings/{quote(name, safe='')}"))


@room_app.command("create")
@click.argument("wing")
@click.argument("name")
@pass_invocation
def room_create(inv: Invocation, wing: str, name: str) -> None:
    """Make an empty room NAME in WING (the wing too, when new)."""
    _show_place(inv, inv.client().post(f"/wings/{quote(wing, safe='')}/rooms", {"name": name}))


@room_app.command("show")
@click.argument("wing")
@click.argument("name")
@pass_invocation
def room_show(inv: Invocation, wing: str, name: str) -> None:
    """A room's totals: current drawers, every version, when it was made and last filed into."""
    _show_place(inv, inv.client().get(f"/wings/{quote(wing, safe='')}/rooms/{quote(name, safe='')}"))


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


@drawer_app.command("mention")
@click.argument("drawer_id")
@click.argument("entity")
@click.option("--kind", default="other", help="a new entity's kind: person, organization, project, tool, place, …")
@pass_invocation
def drawer_mention(inv: Invocation, drawer_id: str, entity: str, kind: str) -> None:
    """Record that DRAWER_ID mentions ENTITY (a name — made when new — or an entity id)."""
    data = inv.client().post(f"/drawers/{drawer_id}/mentions", {"entity": entity, "kind": kind})
    inv.emit(data, lambda data: render.console.print(f"{drawer_id} mentions {data['name']} ({data['id']})"))
