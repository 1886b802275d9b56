"""The jobs page, one job's row (htmx swaps it in as events arrive), and pause / resume / cancel / retry."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.errors import InvalidRequest
from memcastle.services.reader import palace_wide
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)
ACTIONS = ("pause", "resume", "cancel", "retry")
# The kinds of job the daemon runs (the worker's handlers in `memcastle.app`), for the page's filter.
KINDS = ("mine", "embed", "extract", "link", "verify", "audit", "repair", "export", "import", "lifecycle", "checkpoint")


PAGE_SIZES = (50, 200)  # the newest 50; all that the API lists at once (its largest limit)
STATUSES = ("queued", "running", "paused", "completed", "failed", "cancelled")


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request, status: str = "", kind: str = "", limit: int = 50, before: str = "") -> HTMLResponse:
    """The newest jobs, or with `before` (a job id) the page of those created before it: "older jobs" pages on."""
    palace_wide("the jobs page")
    jobs = services_of(request).jobs
    found = jobs.list_jobs(status or None, kind or None, limit, before or None)
    listed = [{**j.to_json(), "waiting": jobs.why_waiting(j)} for j in found]
    return page(request, "jobs.html", jobs=listed, state=status, kind=kind, limit=limit, before=before,
                statuses=STATUSES, kinds=KINDS, sizes=PAGE_SIZES, full=len(found) == limit, title="Jobs")  # fmt: skip


@router.get("/jobs/{job_id}/row", response_class=HTMLResponse)
def job_row(request: Request, job_id: str) -> HTMLResponse:
    palace_wide("the jobs page")
    jobs = services_of(request).jobs
    job = jobs.get_job(job_id)
    return page(request, "_job_row.html", job={**job.to_json(), "waiting": jobs.why_waiting(job)})


@router.post("/jobs/{job_id}/{action}", response_class=HTMLResponse)
def job_control(request: Request, job_id: str, action: str, csrf: str = Form("")) -> Response:
    palace_wide("the jobs page")
    jobs = services_of(request).jobs
    check_csrf(request, csrf)
    allow(request, "control")
    if action not in ACTIONS:
        raise InvalidRequest(f"unknown action {action!r}; one of {', '.join(ACTIONS)}", field="action")
    job = jobs.control_job(job_id, action)
    if not request.headers.get("hx-request"):
        return RedirectResponse("/jobs", status_code=303)
    return page(request, "_job_row.html", job={**job.to_json(), "waiting": jobs.why_waiting(job)})
