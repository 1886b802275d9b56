"""Forgetting: forget a drawer, document, source, room, wing or search's matches; the tombstones left; wing and room
delete and rename."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation
from memcastle.cli.commands.drawers import room_app, wing_app
from memcastle.cli.search_options import SCOPE_OPTIONS, search_body, search_options

forget_app = group("forget", app, "Erase memory for good: a drawer, document, source, room, wing or search's matches.")

FORGET_SECONDS = 600.0  # a wing of a large palace takes a while to erase
_ORDER = ("drawers", "versions", "passages", "facts", "facts_kept", "fact_links", "mentions", "entities",
          "drawer_links", "documents", "rooms", "wings")  # fmt: skip


def segment(value: str) -> str:
    """One path segment of a name: slashes and spaces included."""
    return quote(value, safe="")


def show_report(data: dict[str, Any]) -> None:
    counts = data["counts"]
    said = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in _ORDER if counts.get(k))
    verb = "would forget" if data["dry_run"] else "forgot"
    render.console.print(f"{verb}: {said or 'nothing'}")
    if data["drawers"]:
        render.table(
            "drawers" + (" (would go)" if data["dry_run"] else ""),
            ["id", "wing/room", "document", "text"],
            [
                (render.short_id(d["id"]), f"{d['wing']}/{d['room']}", d["document"] or "", d["preview"][:60])
                for d in data["drawers"]
            ],
        )
    if data.get("more"):
        render.console.print(f"[dim]and {data['more']} more[/dim]")
    if data.get("tombstone"):
        render.console.print(f"tombstone {data['tombstone']['id']} at {data['tombstone']['at']}")


def run_forget(inv: Invocation, send: Callable[[bool | None], Any], *, broad: bool, dry_run: bool, yes: bool) -> None:
    """A dry run when asked; a broad scope is previewed first and needs --yes, or a yes at the prompt."""
    if dry_run or (broad and not yes):
        preview = send(True)
        if dry_run or inv.as_json or not sys.stdin.isatty() or not preview["counts"]["versions"]:
            inv.emit(preview, show_report)
            if not dry_run and preview["counts"]["versions"] and not inv.as_json:
                render.console.print("[dim]nothing was forgotten: add --yes to forget these for good[/dim]")
            return
        show_report(preview)
        if not click.confirm("Forget these for good? This cannot be undone", default=False):
            render.console.print("nothing was forgotten")
            return
    inv.emit(send(False), show_report)


def _sender(inv: Invocation, body: dict[str, Any]) -> Callable[[bool | None], Any]:
    client = inv.client()
    client.timeout = FORGET_SECONDS

    def send(dry_run: bool | None) -> Any:
        return client.post("/forget", {**body, "dry_run": dry_run})

    return send


def _flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--yes", "-y", is_flag=True, help="do not ask (broad scopes are previewed otherwise)")(fn)
    return click.option("--dry-run", is_flag=True, help="only show what would go")(fn)


# Each scope that names what it forgets: its arguments (the request's fields), whether it is broad (previewed first,
# needs --yes) and its help.
NAMED_SCOPES = (
    ("drawer", ("drawer_id",), False, "Forget one drawer with its whole version history."),
    ("document", ("source_id", "document"), False,
     "Forget every revision of a mined DOCUMENT of SOURCE_ID (both are in a drawer's origin)."),
    ("source", ("source_id",), True, "Forget every drawer mined from a source (see: memcastle source list)."),
    ("room", ("wing", "room"), True, "Forget a room with every drawer in it."),
    ("wing", ("wing",), True, "Forget a wing with every room and drawer in it."),
)  # fmt: skip


def _scope_command(scope: str, names: tuple[str, ...], broad: bool, help: str) -> None:
    """`memcastle forget SCOPE NAMES…`: a forget of the scope named by its arguments."""

    def forget(inv: Invocation, /, dry_run: bool, yes: bool, **named: str) -> None:
        send = _sender(inv, {"scope": scope, **named})
        run_forget(inv, send, broad=broad, dry_run=dry_run, yes=yes)

    command: Callable[..., Any] = pass_invocation(_flags(forget))
    for name in reversed(names):
        command = click.argument(name)(command)
    forget_app.command(scope, help=help)(command)


for _scope in NAMED_SCOPES:
    _scope_command(*_scope)


@forget_app.command("search")
@click.argument("query")
@search_options(*SCOPE_OPTIONS)
@_flags
@pass_invocation
def forget_search(inv: Invocation, /, query: str, dry_run: bool, yes: bool, **options: Any) -> None:
    """Forget the drawers whose text matches every word of QUERY, inside the filters: every version of them unless
    a time (--as-of, --from/--until, --known-at, …) is given."""
    send = _sender(inv, {"scope": "search", "search": search_body(query, options)})
    run_forget(inv, send, broad=True, dry_run=dry_run, yes=yes)


@forget_app.command("log")
@click.option("--limit", type=int, default=50, help="at most this many (1-200)")
@pass_invocation
def forget_log(inv: Invocation, limit: int) -> None:
    """The tombstones forgets left, newest first: when, by whom, which scope, how much (never the content)."""
    data = inv.client().get("/tombstones", limit=limit)

    def show(data: Any) -> None:
        render.table(
            "tombstones",
            ["at", "by", "scope", "drawers", "versions", "facts"],
            [
                (
                    t["at"],
                    t["requested_by"],
                    " ".join(f"{k}={v}" for k, v in t["scope"].items() if k not in ("filters",)),
                    t["counts"].get("drawers", 0),
                    t["counts"].get("versions", 0),
                    t["counts"].get("facts", 0),
                )
                for t in data["tombstones"]
            ],
        )

    inv.emit(data, show)


# --- wings and rooms ----------------------------------------------------------------------------------


def _delete(inv: Invocation, path: str, force: bool, yes: bool, dry_run: bool) -> None:
    client = inv.client()
    client.timeout = FORGET_SECONDS

    def send(preview: bool | None) -> Any:
        return client.call("DELETE", path, json={}, params={"force": force, "dry_run": bool(preview)})

    if not force:
        inv.emit(send(dry_run), show_report)
        return
    run_forget(inv, send, broad=True, dry_run=dry_run, yes=yes)


@wing_app.command("delete")
@click.argument("wing")
@click.option("--force", is_flag=True, help="forget the drawers it holds with it")
@_flags
@pass_invocation
def wing_delete(inv: Invocation, wing: str, force: bool, dry_run: bool, yes: bool) -> None:
    """Delete WING: an empty one, or with --force one holding drawers (they are forgotten)."""
    _delete(inv, f"/wings/{segment(wing)}", force, yes, dry_run)


@room_app.command("delete")
@click.argument("wing")
@click.argument("room")
@click.option("--force", is_flag=True, help="forget the drawers it holds with it")
@_flags
@pass_invocation
def room_delete(inv: Invocation, wing: str, room: str, force: bool, dry_run: bool, yes: bool) -> None:
    """Delete ROOM of WING: an empty one, or with --force one holding drawers (they are forgotten)."""
    _delete(inv, f"/wings/{segment(wing)}/rooms/{segment(room)}", force, yes, dry_run)


def _show_renamed(data: Any) -> None:
    where = data["wing"] + (f"/{data['room']}" if data.get("room") else "")
    render.console.print(f"renamed: now {where}")
    for warning in data["warnings"]:
        render.console.print(f"[yellow]note:[/yellow] {warning}")


@wing_app.command("rename")
@click.argument("wing")
@click.argument("new_name")
@pass_invocation
def wing_rename(inv: Invocation, wing: str, new_name: str) -> None:
    """Rename WING to NEW_NAME."""
    inv.emit(inv.client().post(f"/wings/{segment(wing)}/rename", {"name": new_name}), _show_renamed)


@room_app.command("rename")
@click.argument("wing")
@click.argument("room")
@click.argument("new_name")
@pass_invocation
def room_rename(inv: Invocation, wing: str, room: str, new_name: str) -> None:
    """Rename ROOM of WING to NEW_NAME."""
    path = f"/wings/{segment(wing)}/rooms/{segment(room)}/rename"
    inv.emit(inv.client().post(path, {"name": new_name}), _show_renamed)
