"""Export and import: the palace as a portable archive, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import EXIT_ERROR, Invocation, app, wait_for_job


def _absolute(path: str) -> str:
    """Paths are resolved here, where the user typed them: the daemon runs from another folder."""
    return str(Path(path).expanduser().resolve())


def _finish(ctx: click.Context, inv: Invocation, job: dict[str, Any], wait: bool, show: Any) -> None:
    if not wait:
        inv.emit({"job": job}, lambda data: render.console.print(f"{job['kind']} job {job['id']} queued"))
        return
    done = wait_for_job(inv, job)
    inv.emit({"job": done}, lambda data: show(done) if done["status"] == "completed" else render.show_job(done))
    ctx.exit(0 if done["status"] == "completed" else EXIT_ERROR)


@app.command("export")
@click.argument("file")
@click.option("--vectors", is_flag=True, help="include the passage vectors (else the palace it goes to embeds again)")
@click.option("--wait/--no-wait", default=True, help="follow the job with a progress bar (default)")
@click.pass_context
def export(ctx: click.Context, file: str, vectors: bool, wait: bool) -> None:
    """Write the palace to FILE, a portable archive (a new file): drawers with their origins and history, facts,
    links, entities, tombstones and the preferences file."""
    inv = ctx.find_object(Invocation)
    assert inv is not None
    job = inv.client().post("/export", {"path": _absolute(file), "vectors": vectors})["job"]

    def show(done: dict[str, Any]) -> None:
        result = done["result"]
        counts = result["counts"]
        render.console.print(
            f"[bold]exported[/bold] {result['path']} ({result['bytes']:,} bytes): "
            + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items() if n)
        )

    _finish(ctx, inv, job, wait, show)


@app.command("import")
@click.argument("file")
@click.option("--wait/--no-wait", default=True, help="follow the job with a progress bar (default)")
@click.pass_context
def import_archive(ctx: click.Context, file: str, wait: bool) -> None:
    """Load the archive FILE into this palace: records already here are skipped, a record whose id holds other
    content here refuses the whole archive."""
    inv = ctx.find_object(Invocation)
    assert inv is not None
    job = inv.client().post("/import", {"path": _absolute(file)})["job"]

    def show(done: dict[str, Any]) -> None:
        result = done["result"]
        added = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in result["added"].items() if n)
        render.console.print(f"[bold]imported[/bold] {result['path']}: {added or 'nothing new'}")
        already = sum(result["present"].values())
        if already:
            render.console.print(f"[dim]{already} record(s) were already here[/dim]")
        for item in result["skipped_records"][:20]:
            render.console.print(f"[yellow]skipped[/yellow] {item['member']}:{item['line']}: {item['reason']}")
        for warning in result["warnings"]:
            render.console.print(f"[yellow]note:[/yellow] {warning}")

    _finish(ctx, inv, job, wait, show)
