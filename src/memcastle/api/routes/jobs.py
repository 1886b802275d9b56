"""Background jobs: listing, reading, controlling, and the verify, audit and repair jobs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from memcastle.api.access import controls, palace_wide, reads
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    JobAnswer,
    JobOut,
    JobsOut,
)
from memcastle.api.routes.common import (
    JobAction,
    Limit,
    requester,
    services,
)
from memcastle.api.schemas import (
    AuditBody,
    EmptyBody,
    RepairBody,
    VerifyBody,
)
from memcastle.model.vocabulary import JobState

router = APIRouter(prefix="/api", route_class=DeclaredRoute, dependencies=[Depends(palace_wide)])


@router.get("/jobs", response_model=JobsOut, tags=["jobs"], dependencies=[Depends(reads)])
def list_jobs(
    request: Request,
    status: Annotated[JobState | None, Query()] = None,
    kind: str | None = None,
    limit: Limit = 50,
    before: Annotated[str | None, Query(description="a job's id: the jobs created before it (the next page)")] = None,
) -> dict[str, Any]:
    jobs = services(request).jobs
    listed = jobs.list_jobs(status, kind, limit, before)
    return {"jobs": [{**j.to_json(), "waiting": jobs.why_waiting(j)} for j in listed]}


@router.get("/jobs/{job_id}", response_model=JobOut, tags=["jobs"], dependencies=[Depends(reads)])
def get_job(job_id: str, request: Request) -> dict[str, Any]:
    jobs = services(request).jobs
    job = jobs.get_job(job_id)
    return {**job.to_json(), "waiting": jobs.why_waiting(job)}


@router.post("/jobs/{job_id}/{action}", response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def control_job(job_id: str, action: JobAction, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"job": services(request).jobs.control_job(job_id, action).to_json()}


@router.post("/verify", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def verify(body: VerifyBody, request: Request) -> dict[str, Any]:
    job = services(request).jobs.submit_verify(
        batch=body.batch, pace_ms=body.pace_ms, priority=body.priority, requested_by=requester(request)
    )
    return {"job": job.to_json()}


@router.post("/audit", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def audit(body: AuditBody, request: Request) -> dict[str, Any]:
    """Check the palace in the background: orphaned rows, dangling links, drawers the full-text index lacks or
    that wait for vectors, a damaged vector file. The job's result lists each finding; nothing is changed."""
    job = services(request).jobs.submit_audit(priority=body.priority, requested_by=requester(request))
    return {"job": job.to_json()}


@router.post("/repair", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def repair(body: RepairBody, request: Request) -> dict[str, Any]:
    """Fix what the audit finds (`checks`: only those), a batch per transaction, in the background; the result
    says what was repaired and what is left."""
    jobs = services(request).jobs
    job = jobs.submit_repair(
        checks=jobs.known_checks(body.checks), batch=body.batch, priority=body.priority, requested_by=requester(request)
    )
    return {"job": job.to_json()}
