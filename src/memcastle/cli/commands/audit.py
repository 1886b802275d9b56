"""The palace audit and its repair (`memcastle audit`, `memcastle repair`), and the read audit: who read what, and
when (`memcastle audit reads`)."""

from __future__ import annotations

from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import EXIT_ERROR, Invocation, app, pass_invocation, wait_for_job


@app.group("audit", invoke_without_command=True)
@click.option("--no-wait", is_flag=True, help="queue the audit and return; follow it with memcastle job show ID")
@click.pass_context
def audit_app(ctx: click.Context, no_wait: bool) -> None:
    """Check the palace as a background job — orphaned vectors, tags and mentions, dangling links, drawers the
    full-text index lacks or that wait for vectors, a damaged vector file — and report each finding with a count,
    examples and what `memcastle repair --apply` would do. Exit 0 clean, 1 with findings. `audit reads`: the read
    audit (who read what)."""
    if ctx.invoked_subcommand is not None:
        return
    inv = ctx.find_object(Invocation)
    assert inv is not None
    job = inv.client().post("/audit", {})["job"]
    if no_wait:
        inv.emit({"job": job}, lambda data: render.console.print(f"audit job {job['id']} queued"))
        return
    job = wait_for_job(inv, job)
    _report(inv, job, "audit")
    ctx.exit(0 if (job.get("result") or {}).get("ok") else EXIT_ERROR)


@app.command("repair")
@click.option("--apply", "apply", is_flag=True, help="repair for real, as a background job (default: a dry run)")
@click.option("--check", "checks", multiple=True, help="only this check (repeatable; names as audit shows them)")
@click.option("--no-wait", is_flag=True, help="with --apply: queue the repair and return")
@click.pass_context
def repair(ctx: click.Context, apply: bool, checks: tuple[str, ...], no_wait: bool) -> None:
    """What the audit finds, fixed: a dry run by default (the audit's findings and what each repair would do);
    with --apply a durable background job that repairs a batch per transaction (a crash resumes it), then checks
    again. It removes only what points at nothing and indexes again what an index lacks: no drawer or fact is
    deleted. Exit 0 when nothing is left, 1 otherwise."""
    inv = ctx.find_object(Invocation)
    assert inv is not None
    client = inv.client()
    if not apply:
        job = wait_for_job(inv, client.post("/audit", {})["job"])
        _report(inv, job, "dry run")
        ctx.exit(0 if (job.get("result") or {}).get("ok") else EXIT_ERROR)
    job = client.post("/repair", {"checks": list(checks)})["job"]
    if no_wait:
        inv.emit({"job": job}, lambda data: render.console.print(f"repair job {job['id']} queued"))
        return
    job = wait_for_job(inv, job)
    _report(inv, job, "repair")
    ctx.exit(0 if ((job.get("result") or {}).get("after") or {}).get("ok") else EXIT_ERROR)


def _report(inv: Invocation, job: dict[str, Any], what: str) -> None:
    """A finished audit or repair job: its findings as a table (what repair does, or did, for each)."""

    def show(data: Any) -> None:
        result = job.get("result") or {}
        if job["status"] != "completed":
            render.show_job(job)
            return
        repaired = result.get("repaired")
        report: dict[str, Any] = (result.get("after") or {}) if repaired is not None else result
        findings = [f for f in report["findings"] if f["count"]]
        if repaired:
            render.console.print("repaired: " + ", ".join(f"{n} {name}" for name, n in repaired.items()))
        if not findings:
            render.console.print(f"[green]{what}: the palace is sound[/green] ({len(report['findings'])} checks)")
            return
        verb = "would" if what == "dry run" else "repair"
        rows = [
            (f["check"], f["count"], f["what"], "; ".join(f["examples"][:3]), f["repair"] or "(a person decides)")
            for f in findings
        ]
        render.table(f"{what}: {report['problems']} problem(s)", ["check", "count", "what", "e.g.", verb], rows)

    inv.emit({"job": job}, show)


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
