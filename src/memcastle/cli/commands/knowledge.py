"""The knowledge graph: extract, facts and entities."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
    request_sweep,
)

fact_app = typer.Typer(no_args_is_help=True, help="Facts: list, history, and explicit decisions.")
entity_app = typer.Typer(no_args_is_help=True, help="Entities of the knowledge graph.")
app.add_typer(fact_app, name="fact")
app.add_typer(entity_app, name="entity")


@app.command()
def extract(ctx: typer.Context, wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False) -> None:
    """Read new drawers for entities and facts in the background (joins a queued sweep)."""
    request_sweep(invocation(ctx), "/extract", wait)


@fact_app.command("list")
def fact_list(
    ctx: typer.Context,
    subject: Annotated[str | None, typer.Option(help="subject entity name")] = None,
    predicate: Annotated[str | None, typer.Option(help="works_on, uses, located_in, …")] = None,
    object_: Annotated[str | None, typer.Option("--object", help="object entity name")] = None,
    state: Annotated[str | None, typer.Option(help="current, conflicting, superseded, invalidated, historical")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="states as they were at this instant")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """Facts with their lifecycle state; in a conflict, which one is preferred and why."""
    inv = invocation(ctx)
    data = inv.client().get(
        "/facts", subject=subject, predicate=predicate, object=object_, state=state, as_of=as_of, limit=limit
    )
    inv.emit(data, lambda data: render.show_facts(data["facts"]))


@fact_app.command("history")
def fact_history(ctx: typer.Context, fact_id: str) -> None:
    """A fact and everything transitively linked to it, by valid_from."""
    inv = invocation(ctx)
    data = inv.client().get(f"/facts/{fact_id}/history")
    inv.emit(data, lambda data: render.show_facts(data["facts"], links=True))


@fact_app.command("add")
def fact_add(
    ctx: typer.Context,
    subject: str,
    predicate: str,
    object_: Annotated[str, typer.Argument(metavar="OBJECT")],
    confidence: Annotated[float, typer.Option(help="0 to 1")] = 1.0,
    valid_from: Annotated[str | None, typer.Option("--valid-from", help="when it became true")] = None,
    subject_kind: Annotated[str | None, typer.Option("--subject-kind")] = None,
    object_kind: Annotated[str | None, typer.Option("--object-kind")] = None,
) -> None:
    """Record an explicit fact."""
    inv = invocation(ctx)
    body = {
        "subject": subject,
        "predicate": predicate,
        "object": object_,
        "confidence": confidence,
        "valid_from": valid_from,
        "subject_kind": subject_kind,
        "object_kind": object_kind,
    }
    data = inv.client().post("/facts", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_facts([data]))


@fact_app.command("supersede")
def fact_supersede(
    ctx: typer.Context,
    fact_id: str,
    object_: Annotated[str | None, typer.Option("--object", help="the new object")] = None,
    subject: Annotated[str | None, typer.Option(help="the new subject")] = None,
    confidence: Annotated[float | None, typer.Option(help="0 to 1")] = None,
    reason: Annotated[str | None, typer.Option(help="why")] = None,
) -> None:
    """Close a fact and open its replacement, linked `supersedes`, in one step."""
    inv = invocation(ctx)
    body = {"object": object_, "subject": subject, "confidence": confidence, "reason": reason}
    data = inv.client().post(f"/facts/{fact_id}/supersede", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_facts([data["superseded"], data["fact"]]))


@fact_app.command("invalidate")
def fact_invalidate(
    ctx: typer.Context, fact_id: str, reason: Annotated[str, typer.Option(help="why it no longer holds")]
) -> None:
    """Close a fact without a replacement."""
    inv = invocation(ctx)
    data = inv.client().post(f"/facts/{fact_id}/invalidate", {"reason": reason})
    inv.emit(data, lambda data: render.show_facts([data]))


@fact_app.command("link")
def fact_link(
    ctx: typer.Context,
    fact_id: str,
    to: Annotated[str, typer.Argument(help="the other fact's id")],
    kind: Annotated[str, typer.Option(help="confirms, contradicts or refines")],
    reason: Annotated[str, typer.Option(help="why")],
) -> None:
    """Record an explicit link between two facts."""
    inv = invocation(ctx)
    data = inv.client().post(f"/facts/{fact_id}/link", {"to": to, "kind": kind, "reason": reason})
    inv.emit(data, lambda data: render.show_facts([data["from"], data["to"]], links=True))


@entity_app.command("list")
def entity_list(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Option(help="part of a name or alias")] = None,
    kind: Annotated[str | None, typer.Option(help="person, organization, project, tool, place, concept, other")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """List entities."""
    inv = invocation(ctx)
    data = inv.client().get("/entities", name=name, kind=kind, limit=limit)

    def show(data: Any) -> None:
        render.table(
            "entities",
            ["id", "name", "kind", "aliases"],
            [(e["id"], e["name"], e["kind"], ", ".join(e["aliases"])) for e in data["entities"]],
        )

    inv.emit(data, show)


@entity_app.command("show")
def entity_show(ctx: typer.Context, entity_id: str) -> None:
    """One entity with its aliases, mentions and possibly-same hints."""
    inv = invocation(ctx)
    data = inv.client().get(f"/entities/{entity_id}")

    def show(data: Any) -> None:
        render.console.print(f"[bold]{data['name']}[/bold] ({data['kind']}) {data['id']}")
        if data["aliases"]:
            render.console.print("aliases: " + ", ".join(data["aliases"]))
        for mention in data["mentions"]:
            render.console.print(f"  mentioned in {mention['drawer']} as {mention['spelling']!r}")
        for hint in data["hints"]:
            render.console.print(f"  [yellow]{hint['kind']}[/yellow] {hint['other']}: {hint['reason']}")

    inv.emit(data, show)
