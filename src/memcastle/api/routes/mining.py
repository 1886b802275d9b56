"""Mining: sources, one mine, and the miners the palace keeps."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from memcastle.api.access import palace_wide, reads, writes
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    MineOut,
    MinerAnswer,
    MinersOut,
    Ok,
    SourcesOut,
)
from memcastle.api.routes.common import (
    requester,
    services,
)
from memcastle.api.schemas import (
    EmptyBody,
    MineBody,
    MinerBody,
)
from memcastle.model.requests import MinerDefinition, MineRequest, request_of

router = APIRouter(prefix="/api", route_class=DeclaredRoute, dependencies=[Depends(palace_wide)])


@router.get("/sources", response_model=SourcesOut, tags=["mining"], dependencies=[Depends(reads)])
def sources(request: Request) -> dict[str, Any]:
    return {"sources": services(request).places.list_sources()}


@router.post("/mine", status_code=202, response_model=MineOut, tags=["mining"], dependencies=[Depends(writes)])
def mine(body: MineBody, request: Request) -> dict[str, Any]:
    submitted = services(request).mining.submit_mine(request_of(MineRequest, body), requested_by=requester(request))
    return submitted.to_json()


@router.get("/miners", response_model=MinersOut, tags=["mining"], dependencies=[Depends(reads)])
def miners(request: Request) -> dict[str, Any]:
    return {"miners": [m.to_json() for m in services(request).miners.list_miners()]}


@router.post("/miners", status_code=201, response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def define_miner(body: MinerBody, request: Request) -> dict[str, Any]:
    return {"miner": services(request).miners.define(request_of(MinerDefinition, body)).to_json()}


@router.get("/miners/{name}", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(reads)])
def get_miner(name: str, request: Request) -> dict[str, Any]:
    return {"miner": services(request).miners.get_miner(name).to_json()}


@router.delete("/miners/{name}", response_model=Ok, tags=["mining"], dependencies=[Depends(writes)])
def remove_miner(name: str, request: Request) -> dict[str, Any]:
    services(request).miners.remove(name)
    return {"ok": True}


@router.post(
    "/miners/{name}/run", status_code=202, response_model=MineOut, tags=["mining"], dependencies=[Depends(writes)]
)
def run_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    submitted = services(request).miners.run(name, requested_by=requester(request))
    return submitted.to_json()


@router.post("/miners/{name}/enable", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def enable_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"miner": services(request).miners.set_enabled(name, True).to_json()}


@router.post("/miners/{name}/disable", response_model=MinerAnswer, tags=["mining"], dependencies=[Depends(writes)])
def disable_miner(name: str, request: Request, body: EmptyBody) -> dict[str, Any]:
    return {"miner": services(request).miners.set_enabled(name, False).to_json()}
