"""Search and recall: evidence with provenance and the signals that ranked it."""

from __future__ import annotations

import click

from memcastle.cli import render
from memcastle.cli.app import Invocation, app, pass_invocation


@app.command()
@click.argument("query")
@click.option("--limit", type=int, default=10, help="how many hits (1-200)")
@click.option("--wing", help="only this wing")
@click.option("--room", help="only this room")
@click.option("--tag", "tags", multiple=True, help="required tag; repeat for more")
@click.option("--source-kind", "--kind", "kind", help="source kind: file, note, transcript, commit, …")
@click.option("--connector", help="only drawers mined by this connector")
@click.option("--ranking", default="auto", help="auto, lexical, semantic or hybrid")
@click.option("--as-of", help="what was current at this instant")
@click.option("--from", "from_", help="window start (with --until)")
@click.option("--until", help="window end (with --from)")
@click.option("--include-historical", "--historical", "historical", is_flag=True, help="include closed versions")
@click.option("--known-at", help="what the palace knew at this instant (record time)")
@click.option("--known-from", help="what the palace knew at some point of a window (with --known-until)")
@click.option("--known-until", help="record-time window end (with --known-from)")
@click.option("--expand", is_flag=True, help="add drawers related through the knowledge graph")
@click.option("--preferences", default="on", help="on, or off to see the ranking without source preferences")
@click.option("--full", is_flag=True, help="print each hit's whole drawer instead of its snippet")
@pass_invocation
def search(
    inv: Invocation,
    query: str,
    limit: int,
    wing: str | None,
    room: str | None,
    tags: tuple[str, ...],
    kind: str | None,
    connector: str | None,
    ranking: str,
    as_of: str | None,
    from_: str | None,
    until: str | None,
    historical: bool,
    known_at: str | None,
    known_from: str | None,
    known_until: str | None,
    expand: bool,
    preferences: str,
    full: bool,
) -> None:
    """Search the palace for QUERY: evidence with provenance and the signals that ranked it.

    Each hit shows the passage that matched best, with its lines in the document (`path:120-168`); `--full` prints
    whole drawers, and `memcastle drawer show ID` one drawer."""
    body = {
        "query": query,
        "limit": limit,
        "wing": wing,
        "room": room,
        "tags": list(tags),
        "source_kind": kind,
        "connector": connector,
        "ranking": ranking,
        "as_of": as_of,
        "from": from_,
        "until": until,
        "include_historical": historical,
        "known_at": known_at,
        "known_from": known_from,
        "known_until": known_until,
        "expand": expand,
        "preferences": preferences,
    }
    data = inv.client().post("/search", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_hits(data, full=full))


@app.command()
@click.argument("query")
@click.option("--limit", type=int, default=10, help="how many hits (1-200)")
@click.option("--wing", help="only this wing")
@click.option("--tag", "tags", multiple=True, help="required tag; repeat for more")
@click.option("--source-kind", "--kind", "kind", help="source kind")
@click.option("--connector", help="only drawers mined by this connector")
@click.option("--as-of", help="what was current at this instant")
@click.option("--include-historical", "--historical", "historical", is_flag=True, help="include closed versions")
@click.option("--full", is_flag=True, help="print each hit's whole drawer instead of its snippet")
@pass_invocation
def recall(
    inv: Invocation,
    query: str,
    limit: int,
    wing: str | None,
    tags: tuple[str, ...],
    kind: str | None,
    connector: str | None,
    as_of: str | None,
    historical: bool,
    full: bool,
) -> None:
    """Search a whole wing for QUERY (no room scoping): the agent-facing search."""
    body = {
        "query": query,
        "limit": limit,
        "wing": wing,
        "tags": list(tags),
        "source_kind": kind,
        "connector": connector,
        "as_of": as_of,
        "include_historical": historical,
    }
    data = inv.client().post("/recall", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_hits(data, full=full))
