"""The jobs page, one job's row (htmx swaps it in as events arrive), and pause / resume / cancel / retry."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memcastle.errors import InvalidRequest
from memcastle.services.reader import palace_wide
from memcastle.web.pages import PageRoute, allow, check_csrf, page, services_of

router = APIRouter(include_in_schema=False, route_class=PageRoute)
ACTIONS = ("pause", "resume", "cancel", "retry")


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request) -> HTMLResponse:
    palace_wide("the jobs page")
    jobs = services_of(request).jobs
    listed = [{**j.to_json(), "waiting": jobs.why_waiting(j)} for j in jobs.list_jobs(None, None, 50)]
    return page(request, "jobs.html", jobs=listed, title="Jobs")


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
