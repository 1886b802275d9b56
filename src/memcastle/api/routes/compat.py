"""Routes a client written for the original MemCastle (Rust) calls, each an alias onto the one service operation the
native route calls (docs/http-api.md, "Compatibility with MemCastle (Rust)"): `POST /api/jobs` tagged by `type`,
and an entity's mentions and candidates on their own paths. Field names and body shapes of the original that native
routes take too (`text` and `filter`, `agent_identity`, `embedding`, `name`, `force-cancel`, `?shape=flat`) live
with those routes."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import Field

from memcastle.api.access import controls, reads
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import CandidatesOut, JobAnswer, MentionsOut
from memcastle.api.routes.common import requester, services
from memcastle.api.schemas import Body, Name
from memcastle.errors import InvalidRequest
from memcastle.model import Job
from memcastle.model.requests import MineRequest
from memcastle.services import Services

router = APIRouter(prefix="/api", route_class=DeclaredRoute)

# The fields each job type takes (beyond `type`); any other is refused by name.
JOB_FIELDS = {
    "mine": {"path", "provider", "locator", "wing", "full"},
    "audit": set(),
    "extract": set(),
    "embed": set(),
    "repair": {"dry_run"},
}


class OriginalJobBody(Body):
    """The original's job submission: a body tagged by `type`."""

    type: Literal["mine", "audit", "extract", "embed", "repair"] = Field(
        description="what to run (a checkpoint: POST /api/checkpoint)"
    )
    path: str | None = Field(None, description="mine: an absolute folder (the directory connector)")
    provider: Name | None = Field(None, description="mine: a connector by name (pi, git, notes, …)")
    locator: str | None = Field(None, description="mine: what the provider reads")
    wing: Name | None = None
    full: bool = False
    dry_run: bool = Field(True, description="repair: true (the default) only reports, as an audit")


@router.post("/jobs", status_code=202, response_model=JobAnswer, tags=["jobs"], dependencies=[Depends(controls)])
def submit_job(body: OriginalJobBody, request: Request) -> dict[str, Any]:
    """Submit a job as the original MemCastle does: `mine` (a `path`, or a `provider` with its `locator`), `audit`,
    `extract`, `embed`, `repair` (`dry_run`, true by default: an audit). Each queues what its own route queues."""
    given = {name for name in body.model_fields_set if name != "type"}
    extra = sorted(given - JOB_FIELDS[body.type])
    if extra:
        raise InvalidRequest(f"a {body.type} job takes no {extra[0]}", field=extra[0])
    return {"job": _submitted(services(request), body, requester(request)).to_json()}


def _submitted(palace: Services, body: OriginalJobBody, requested_by: str) -> Job:
    jobs = palace.jobs
    if body.type == "mine":
        if (body.path is None) == (body.provider is None):
            raise InvalidRequest("give exactly one of path and provider", field="path")
        connector = "directory" if body.path is not None else str(body.provider)
        locator = body.path if body.path is not None else (body.locator or "")
        asked = MineRequest(connector=connector, locator=locator, wing=body.wing, full=body.full)
        return palace.mining.submit_mine(asked, requested_by=requested_by).job
    if body.type == "audit" or (body.type == "repair" and body.dry_run):
        return jobs.submit_audit(requested_by=requested_by)
    if body.type == "repair":
        return jobs.submit_repair(requested_by=requested_by)
    sweep = jobs.request_extraction if body.type == "extract" else jobs.request_embedding
    job = sweep(requested_by=requested_by)
    if job is None:
        raise InvalidRequest(
            f"{'extraction' if body.type == 'extract' else 'embeddings'} are off in this palace", field="type"
        )
    return job


@router.get("/entities/{entity_id}/mentions", response_model=MentionsOut, tags=["facts"], dependencies=[Depends(reads)])
def entity_mentions(entity_id: str, request: Request) -> dict[str, Any]:
    """The drawers that mention an entity, each with the name as it spelled it (`GET /api/entities/{id}`'s
    `mentions`)."""
    return {"mentions": services(request).facts.get_entity(entity_id).to_json()["mentions"]}


@router.get(
    "/entities/{entity_id}/candidates", response_model=CandidatesOut, tags=["facts"], dependencies=[Depends(reads)]
)
def entity_candidates(entity_id: str, request: Request) -> dict[str, Any]:
    """The entities this one may be, left for a person to look at (`GET /api/entities/{id}`'s `hints`)."""
    return {"candidates": services(request).facts.get_entity(entity_id).to_json()["hints"]}
