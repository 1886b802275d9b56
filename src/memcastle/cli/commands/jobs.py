"""Background jobs: list, show, pause, resume, cancel, retry."""

from __future__ import annotations

from typing import Annotated

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    app,
    invocation,
)

job_app = typer.Typer(no_args_is_help=True, help="Background jobs: list, show and control them.")
app.add_typer(job_app, name="job")


@job_app.command("list")
def job_list(
    ctx: typer.Context,
    status_: Annotated[str | None, typer.Option("--status", help="queued, running, paused, completed, …")] = None,
    kind: Annotated[str | None, typer.Option(help="job kind, e.g. mine, embed, verify")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """List jobs, newest first."""
    inv = invocation(ctx)
    data = inv.client().get("/jobs", status=status_, kind=kind, limit=limit)
    inv.emit(data, lambda data: render.show_jobs(data["jobs"]))


@job_app.command("show")
def job_show(ctx: typer.Context, job_id: str) -> None:
    """Show one job: status, progress, result or error."""
    inv = invocation(ctx)
    data = inv.client().get(f"/jobs/{job_id}")
    inv.emit(data, lambda data: render.show_job(data))


def _control(ctx: typer.Context, job_id: str, action: str) -> None:
    inv = invocation(ctx)
    data = inv.client().post(f"/jobs/{job_id}/{action}")
    inv.emit(data, lambda data: render.show_job(data["job"]))


@job_app.command("pause")
def job_pause(ctx: typer.Context, job_id: str) -> None:
    """Pause a running job at its next checkpoint."""
    _control(ctx, job_id, "pause")


@job_app.command("resume")
def job_resume(ctx: typer.Context, job_id: str) -> None:
    """Queue a paused job again; it continues from its checkpoint."""
    _control(ctx, job_id, "resume")


@job_app.command("cancel")
def job_cancel(ctx: typer.Context, job_id: str) -> None:
    """Cancel a queued, paused or running job (a running one stops at its next checkpoint)."""
    _control(ctx, job_id, "cancel")


@job_app.command("retry")
def job_retry(ctx: typer.Context, job_id: str) -> None:
    """Queue a failed job again."""
    _control(ctx, job_id, "retry")
