"""Background jobs: what runs, and controlling it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memcastle.mcp.tools.base import ADDS, READS, Env, JobId, Limit, tool
from memcastle.model.vocabulary import JobState
from memcastle.services.views import job_list_view, job_view

JOB_ALIASES = {"id": "job_id"}


@tool("memcastle_job_list", "List jobs", "read", READS, palace_wide=True)
def job_list(
    env: Env,
    status: JobState | None = None,
    kind: Annotated[str | None, Field(description="mine, embed, extract, ...")] = None,
    limit: Limit = 20,
) -> dict[str, Any]:
    """Background jobs, newest first (8-char ids): status, progress, when, error."""
    # No `before` cursor here (REST, the CLI and the page have one): an agent asks about recent work, the newest 200
    # at most, and every agent reads this tool list at start.
    return job_list_view(env.services.jobs.list_jobs(status, kind, limit))


@tool("memcastle_job_get", "Get a job", "read", READS, aliases=JOB_ALIASES, palace_wide=True)
def job_get(env: Env, job_id: JobId) -> dict[str, Any]:
    """A job whole: parameters, result or error, what a queued one waits for."""
    job = env.services.jobs.get_job(job_id)
    waiting = env.services.jobs.why_waiting(job)
    return {**job.to_json(), **({"waiting": waiting} if waiting else {})}


# The original MemCastle's four tools, one each action, are names of this one.
ORIGINAL_NAMES = {f"memcastle_job_{action}": {"action": action} for action in ("pause", "resume", "cancel", "retry")}


@tool(
    "memcastle_job_control",
    "Control a job",
    "write",
    ADDS,
    aliases=JOB_ALIASES,
    other_names=ORIGINAL_NAMES,
    palace_wide=True,
)
def job_control(
    env: Env,
    job_id: JobId,
    action: Literal["pause", "resume", "cancel", "retry"],
) -> dict[str, Any]:
    """Pause, resume, cancel or retry (a failed one) a job."""
    return {"job": job_view(env.services.jobs.control_job(job_id, action))}
