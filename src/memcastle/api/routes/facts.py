"""The knowledge graph: facts, their corrections and links, entities, and the extract sweep."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from memcastle.api.access import reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    CandidatesOut,
    EntitiesOut,
    EntityDetailOut,
    FactOut,
    FactsOut,
    GraphOut,
    LinkedFactOut,
    SupersededFactOut,
    SweepOut,
)
from memcastle.api.routes.common import (
    Limit,
    QInstant,
    QName,
    requester,
    services,
)
from memcastle.api.schemas import (
    AliasBody,
    EmptyBody,
    FactBody,
    InvalidateFactBody,
    LinkFactBody,
    MentionBody,
    SupersedeFactBody,
)
from memcastle.model.requests import FactCorrection, FactSpec, request_of
from memcastle.model.vocabulary import EntityKind, FactState, Predicate

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


@router.post("/extract", status_code=202, response_model=SweepOut, tags=["facts"], dependencies=[Depends(writes)])
def extract(request: Request, body: EmptyBody) -> dict[str, Any]:
    job = services(request).jobs.request_extraction(requested_by=requester(request))
    if job is None:
        return {"job": None, "message": "extraction is disabled (extraction.provider = none)"}
    return {"job": job.to_json()}


@router.get("/facts", response_model=FactsOut, tags=["facts"], dependencies=[Depends(reads)])
def list_facts(
    request: Request,
    subject: QName = None,
    predicate: Annotated[Predicate | None, Query()] = None,
    object: QName = None,
    state: Annotated[FactState | None, Query()] = None,
    as_of: QInstant = None,
    limit: Limit = 50,
) -> dict[str, Any]:
    return {
        "facts": [
            f.to_json()
            for f in services(request).facts.list_facts(
                subject=subject, predicate=predicate, object=object, state=state, as_of=as_of, limit=limit
            )
        ]
    }


@router.get("/facts/{fact_id}", response_model=FactOut, tags=["facts"], dependencies=[Depends(reads)])
def get_fact(fact_id: str, request: Request, as_of: QInstant = None) -> dict[str, Any]:
    return services(request).facts.get_fact(fact_id, as_of=as_of).to_json()


@router.get("/facts/{fact_id}/history", response_model=FactsOut, tags=["facts"], dependencies=[Depends(reads)])
def fact_history(fact_id: str, request: Request, as_of: QInstant = None) -> dict[str, Any]:
    return {"facts": [f.to_json() for f in services(request).facts.fact_history(fact_id, as_of=as_of)]}


@router.post("/facts", status_code=201, response_model=FactOut, tags=["facts"], dependencies=[Depends(writes)])
def add_fact(body: FactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.add(request_of(FactSpec, body), requested_by=requester(request)).to_json()


@router.post(
    "/facts/{fact_id}/supersede",
    status_code=201,
    response_model=SupersededFactOut,
    tags=["facts"],
    dependencies=[Depends(writes)],
)
def supersede_fact(fact_id: str, body: SupersedeFactBody, request: Request) -> dict[str, Any]:
    change = request_of(FactCorrection, body)
    return services(request).facts.supersede(fact_id, change, requested_by=requester(request)).to_json()


@router.post("/facts/{fact_id}/invalidate", response_model=FactOut, tags=["facts"], dependencies=[Depends(writes)])
def invalidate_fact(fact_id: str, body: InvalidateFactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.invalidate(fact_id, body.reason).to_json()


@router.post(
    "/facts/{fact_id}/link",
    status_code=201,
    response_model=LinkedFactOut,
    tags=["facts"],
    dependencies=[Depends(writes)],
)
def link_fact(fact_id: str, body: LinkFactBody, request: Request) -> dict[str, Any]:
    return services(request).facts.link(fact_id, body.to, body.kind, body.reason).to_json()


@router.get("/entities", response_model=EntitiesOut, tags=["facts"], dependencies=[Depends(reads)])
def list_entities(
    request: Request, name: str | None = None, kind: Annotated[EntityKind | None, Query()] = None, limit: Limit = 50
) -> dict[str, Any]:
    return {"entities": [e.to_json() for e in services(request).facts.list_entities(name, kind, limit)]}


@router.get("/entities/candidates", response_model=CandidatesOut, tags=["facts"], dependencies=[Depends(reads)])
def entity_candidates(request: Request, limit: Limit = 50) -> dict[str, Any]:
    """Pairs of entities that may be one (a name one edit from another): for a person to look at."""
    return {"candidates": services(request).facts.candidates(limit)}


@router.get("/entities/{entity_id}", response_model=EntityDetailOut, tags=["facts"], dependencies=[Depends(reads)])
def get_entity(entity_id: str, request: Request) -> dict[str, Any]:
    return services(request).facts.get_entity(entity_id).to_json()


@router.get("/graph", response_model=GraphOut, tags=["facts"], dependencies=[Depends(reads)])
def graph(
    request: Request,
    entity: QName = None,
    drawer: QName = None,
    depth: Annotated[int, Query(ge=1, le=2, description="steps out from the entity: 1 or 2")] = 1,
    limit: Limit = 50,
) -> dict[str, Any]:
    """The entities and facts around an entity, or around the entities a drawer mentions, as nodes and edges."""
    return services(request).facts.graph(entity=entity, drawer=drawer, depth=depth, limit=limit)


@router.post(
    "/entities/{entity_id}/aliases", response_model=EntityDetailOut, tags=["facts"], dependencies=[Depends(writes)]
)
def add_alias(entity_id: str, body: AliasBody, request: Request) -> dict[str, Any]:
    """Teach an entity another spelling (409 when another entity answers to it)."""
    return services(request).facts.add_alias(entity_id, body.alias).to_json()


@router.get(
    "/entities/{entity_id}/relationships", response_model=FactsOut, tags=["facts"], dependencies=[Depends(reads)]
)
def entity_relationships(entity_id: str, request: Request, limit: Limit = 50) -> dict[str, Any]:
    """The facts the entity takes part in, as subject or object, with their state."""
    return {"facts": [f.to_json() for f in services(request).facts.relationships(entity_id, limit=limit)]}


@router.post(
    "/drawers/{drawer_id}/mentions",
    status_code=201,
    response_model=EntityDetailOut,
    tags=["facts"],
    dependencies=[Depends(writes)],
)
def mention(drawer_id: str, body: MentionBody, request: Request) -> dict[str, Any]:
    """Record that the drawer mentions an entity (by name — a new one is made — or id)."""
    return services(request).facts.mention(drawer_id, body.entity, kind=body.kind).to_json()
