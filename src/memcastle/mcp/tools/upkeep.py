"""Looking after the palace: an audit that reports what is wrong, a repair that fixes what the audit found."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memcastle.mcp.tools.base import REPAIRS, REQUESTER, WRITES, Env, JobId, tool
from memcastle.services.views import job_view


@tool("memcastle_audit", "Audit the palace", "control", WRITES, palace_wide=True)
def audit(env: Env) -> dict[str, Any]:
    """Check the palace in the background (nothing changes); memcastle_job_get shows the findings."""
    return {"job": job_view(env.services.jobs.submit_audit(requested_by=REQUESTER))}


@tool("memcastle_repair", "Repair the palace", "control", REPAIRS, palace_wide=True)
def repair(
    env: Env,
    dry_run: Annotated[bool, Field(description="only audit: what a repair would fix")] = True,
    checks: Annotated[tuple[str, ...], Field(description="only these audit checks")] = (),
    based_on_job: Annotated[JobId | None, Field(description="fix what this finished audit found")] = None,
) -> dict[str, Any]:
    """Fix what the audit finds, in the background; dry_run (the default) audits, or with based_on_job names what
    a repair would fix."""
    jobs = env.services.jobs
    named = jobs.known_checks(checks)
    if based_on_job is not None:
        found = jobs.checks_found(based_on_job)
        named = [name for name in found if not named or name in named]
        if not named:
            return {"job": None, "note": f"audit {based_on_job[:8]} found nothing a repair fixes"}
    if dry_run and based_on_job is not None:
        return {"would_repair": named, "dry_run": True}
    if dry_run:
        return {"job": job_view(jobs.submit_audit(requested_by=REQUESTER)), "dry_run": True}
    return {"job": job_view(jobs.submit_repair(checks=named, requested_by=REQUESTER))}
