"""Background jobs: list, show, watch, pause, resume, cancel, retry."""

from __future__ import annotations

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation, wait_for_job

job_app = group("job", app, "Background jobs: list, show and control them.")


@job_app.command("list")
@click.option("--status", "status_", help="queued, running, paused, completed, …")
@click.option("--kind", help="job kind, e.g. mine, embed, verify")
@click.option("--limit", type=int, default=50, help="how many (1-200)")
@click.option("--before", metavar="JOB_ID", help="only the jobs created before this one (the next page)")
@pass_invocation
def job_list(inv: Invocation, status_: str | None, kind: str | None, limit: int, before: str | None) -> None:
    """List jobs, newest first."""
    data = inv.client().get("/jobs", status=status_, kind=kind, limit=limit, before=before)
    inv.emit(data, lambda data: render.show_jobs(data["jobs"]))


@job_app.command("show")
@click.argument("job_id")
@pass_invocation
def job_show(inv: Invocation, job_id: str) -> None:
    """Show one job: status, progress, result or error."""
    data = inv.client().get(f"/jobs/{job_id}")
    inv.emit(data, lambda data: render.show_job(data))


@job_app.command("watch")
@click.argument("job_id")
@pass_invocation
def job_watch(inv: Invocation, job_id: str) -> None:
    """Follow a job live until it ends or pauses: its progress, and while queued what it waits behind."""
    job = wait_for_job(inv, inv.client().get(f"/jobs/{job_id}"))
    inv.emit(job, lambda data: render.show_job(data))


def _control(action: str, help: str) -> None:
    @job_app.command(action, help=help)
    @click.argument("job_id")
    @pass_invocation
    def control(inv: Invocation, job_id: str) -> None:
        data = inv.client().post(f"/jobs/{job_id}/{action}")
        inv.emit(data, lambda data: render.show_job(data["job"]))


_control("pause", "Pause a running job at its next checkpoint.")
_control("resume", "Queue a paused job again; it continues from its checkpoint.")
_control("cancel", "Cancel a queued, paused or running job (a running one stops at its next checkpoint).")
_control("retry", "Queue a failed job again.")
