"""The knowledge graph: extract, facts and entities."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation, request_sweep, wait_option

fact_app = group("fact", app, "Facts: list, history, and explicit decisions.")
entity_app = group("entity", app, "Entities of the knowledge graph.")


@app.command()
@wait_option()
@pass_invocation
def extract(inv: Invocation, wait: bool) -> None:
    """Read new drawers for entities and facts in the background (joins a queued sweep)."""
    request_sweep(inv, "/extract", wait)


@fact_app.command("list")
@click.option("--subject", help="subject entity name")
@click.option("--predicate", help="works_on, uses, located_in, …")
@click.option("--object", "object_", help="object entity name")
@click.option("--state", help="current, conflicting, superseded, invalidated, historical")
@click.option("--as-of", help="states as they were at this instant")
@click.option("--limit", type=int, default=50, help="how many (1-200)")
@pass_invocation
def fact_list(
    inv: Invocation,
    subject: str | None,
    predicate: str | None,
    object_: str | None,
    state: str | None,
    as_of: str | None,
    limit: int,
) -> None:
    """Facts with their lifecycle state; in a conflict, which one is preferred and why."""
    data = inv.client().get(
        "/facts", subject=subject, predicate=predicate, object=object_, state=state, as_of=as_of, limit=limit
    )
    inv.emit(data, lambda data: render.show_facts(data["facts"]))


@fact_app.command("history")
@click.argument("fact_id")
@pass_invocation
def fact_history(inv: Invocation, fact_id: str) -> None:
    """A fact and everything transitively linked to it, by valid_from."""
    data = inv.client().get(f"/facts/{fact_id}/history")
    inv.emit(data, lambda data: render.show_facts(data["facts"], links=True))


@fact_app.command("add")
@click.argument("subject")
@click.argument("predicate")
@click.argument("object_", metavar="OBJECT")
@click.option("--confidence", type=float, default=1.0, help="0 to 1")
@click.option("--valid-from", help="when it became true")
@click.option("--subject-kind", help="person, organization, project, tool, place, concept, other")
@click.option("--object-kind", help="person, organization, project, tool, place, concept, other")
@pass_invocation
def fact_add(
    inv: Invocation,
    subject: str,
    predicate: str,
    object_: str,
    confidence: float,
    valid_from: str | None,
    subject_kind: str | None,
    object_kind: str | None,
) -> None:
    """Record an explicit fact: SUBJECT PREDICATE OBJECT."""
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
@click.argument("fact_id")
@click.option("--object", "object_", help="the new object")
@click.option("--subject", help="the new subject")
@click.option("--confidence", type=float, help="0 to 1")
@click.option("--reason", help="why")
@pass_invocation
def fact_supersede(
    inv: Invocation,
    fact_id: str,
    object_: str | None,
    subject: str | None,
    confidence: float | None,
    reason: str | None,
) -> None:
    """Close a fact and open its replacement, linked `supersedes`, in one step."""
    body = {"object": object_, "subject": subject, "confidence": confidence, "reason": reason}
    data = inv.client().post(f"/facts/{fact_id}/supersede", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.show_facts([data["superseded"], data["fact"]]))


@fact_app.command("invalidate")
@click.argument("fact_id")
@click.option("--reason", required=True, help="why it no longer holds")
@pass_invocation
def fact_invalidate(inv: Invocation, fact_id: str, reason: str) -> None:
    """Close a fact without a replacement."""
    data = inv.client().post(f"/facts/{fact_id}/invalidate", {"reason": reason})
    inv.emit(data, lambda data: render.show_facts([data]))


@fact_app.command("link")
@click.argument("fact_id")
@click.argument("to")
@click.option("--kind", required=True, help="confirms, contradicts or refines")
@click.option("--reason", required=True, help="why")
@pass_invocation
def fact_link(inv: Invocation, fact_id: str, to: str, kind: str, reason: str) -> None:
    """Record an explicit link from FACT_ID to the fact TO."""
    data = inv.client().post(f"/facts/{fact_id}/link", {"to": to, "kind": kind, "reason": reason})
    inv.emit(data, lambda data: render.show_facts([data["from"], data["to"]], links=True))


@entity_app.command("list")
@click.option("--name", help="part of a name or alias")
@click.option("--kind", help="person, organization, project, tool, place, concept, other")
@click.option("--limit", type=int, default=50, help="how many (1-200)")
@pass_invocation
def entity_list(inv: Invocation, name: str | None, kind: str | None, limit: int) -> None:
    """List entities."""
    data = inv.client().get("/entities", name=name, kind=kind, limit=limit)

    def show(data: Any) -> None:
        render.table(
            "entities",
            ["id", "name", "kind", "aliases"],
            [(render.short_id(e["id"]), e["name"], e["kind"], ", ".join(e["aliases"])) for e in data["entities"]],
        )

    inv.emit(data, show)


@entity_app.command("show")
@click.argument("entity_id")
@pass_invocation
def entity_show(inv: Invocation, entity_id: str) -> None:
    """One entity with its aliases, mentions and possibly-same hints."""
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


@entity_app.command("alias")
@click.argument("entity_id")
@click.argument("alias")
@pass_invocation
def entity_alias(inv: Invocation, entity_id: str, alias: str) -> None:
    """Teach ENTITY_ID another spelling, ALIAS: later names in it resolve to this entity."""
    data = inv.client().post(f"/entities/{entity_id}/aliases", {"alias": alias})
    inv.emit(data, lambda data: render.console.print(f"{data['name']}: aliases {', '.join(data['aliases'])}"))


@entity_app.command("candidates")
@click.option("--limit", type=int, default=50, help="how many (1-200)")
@pass_invocation
def entity_candidates(inv: Invocation, limit: int) -> None:
    """Pairs of entities that may be one (a name one edit from another), for you to look at; nothing is merged."""
    data = inv.client().get("/entities/candidates", limit=limit)

    def show(data: Any) -> None:
        render.table(
            "possibly the same",
            ["entity", "other", "why"],
            [(c["entity_name"], c["other_name"], c["reason"]) for c in data["candidates"]],
        )

    inv.emit(data, show)


@entity_app.command("relationships")
@click.argument("entity_id")
@click.option("--limit", type=int, default=50, help="how many (1-200)")
@pass_invocation
def entity_relationships(inv: Invocation, entity_id: str, limit: int) -> None:
    """The facts ENTITY_ID takes part in, as subject or object, with their state."""
    data = inv.client().get(f"/entities/{entity_id}/relationships", limit=limit)
    inv.emit(data, lambda data: render.show_facts(data["facts"], links=True))
