"""Search and recall: evidence with provenance and the signals that ranked it."""

from __future__ import annotations

from typing import Annotated

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
)


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to look for")],
    limit: Annotated[int, typer.Option(help="how many hits (1-200)")] = 10,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    room: Annotated[str | None, typer.Option(help="only this room")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="required tag; repeat for more")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="source kind: file, note, transcript, commit, …")] = None,
    connector: Annotated[str | None, typer.Option(help="only drawers mined by this connector")] = None,
    ranking: Annotated[str, typer.Option(help="auto, lexical, semantic or hybrid")] = "auto",
    as_of: Annotated[str | None, typer.Option("--as-of", help="what was current at this instant")] = None,
    from_: Annotated[str | None, typer.Option("--from", help="window start (with --until)")] = None,
    until: Annotated[str | None, typer.Option(help="window end (with --from)")] = None,
    historical: Annotated[bool, typer.Option("--historical", help="include closed versions")] = False,
    expand: Annotated[bool, typer.Option(help="add drawers related through the knowledge graph")] = False,
    preferences: Annotated[str, typer.Option(help="on, or off to see the ranking without source preferences")] = "on",
) -> None:
    """Search the palace: evidence with provenance and the signals that ranked it."""
    inv = invocation(ctx)
    body = {
        "query": query,
        "limit": limit,
        "wing": wing,
        "room": room,
        "tags": tag or [],
        "source_kind": kind,
        "connector": connector,
        "ranking": ranking,
        "as_of": as_of,
        "from": from_,
        "until": until,
        "include_historical": historical,
        "expand": expand,
        "preferences": preferences,
    }
    data = inv.client().post("/search", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_hits(data))


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to remember")],
    limit: Annotated[int, typer.Option(help="how many hits (1-200)")] = 10,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="required tag; repeat for more")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="source kind")] = None,
    connector: Annotated[str | None, typer.Option(help="only drawers mined by this connector")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="what was current at this instant")] = None,
    historical: Annotated[bool, typer.Option("--historical", help="include closed versions")] = False,
) -> None:
    """Search a whole wing (no room scoping): the agent-facing search."""
    inv = invocation(ctx)
    body = {
        "query": query,
        "limit": limit,
        "wing": wing,
        "tags": tag or [],
        "source_kind": kind,
        "connector": connector,
        "as_of": as_of,
        "include_historical": historical,
    }
    data = inv.client().post("/recall", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_hits(data))
