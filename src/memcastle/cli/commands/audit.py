"""The read audit: who read what, and when (`memcastle audit reads`)."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.app import Invocation, app, group, pass_invocation

audit_app = group("audit", app, "What was read from the palace, by whom: the read audit (ids, never text).")


@audit_app.command("reads")
@click.option("--token", help="reads by the bearer token of this name")
@click.option("--agent", help="reads by the MCP client of this name (its clientInfo)")
@click.option("--drawer", help="reads that returned this drawer (or fact) id: who saw it")
@click.option("--since", help="reads at or after this instant (RFC 3339)")
@click.option("--limit", type=int, default=50, show_default=True, help="at most this many (1-200), newest first")
@pass_invocation
def audit_reads(
    inv: Invocation, token: str | None, agent: str | None, drawer: str | None, since: str | None, limit: int
) -> None:
    """What was read, newest first: when, who (token, interface, MCP client), the operation, the query as redacted
    and the ids it returned."""
    data = inv.client().get("/audit/reads", token=token, agent=agent, drawer=drawer, since=since, limit=limit)

    def show(data: Any) -> None:
        render.table(
            "reads",
            ["at", "who", "operation", "query", "returned"],
            [
                (
                    r["at"],
                    " ".join(x for x in (r["interface"], r["token"], r["client"]) if x),
                    r["operation"],
                    r["query"] or "",
                    " ".join(i[:8] for i in r["drawer_ids"][:6]) + (" …" if len(r["drawer_ids"]) > 6 else ""),
                )
                for r in data["reads"]
            ],
        )

    inv.emit(data, show)
