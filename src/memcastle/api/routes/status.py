"""Health, status, the effective preference policy, the connectors, and shutting the daemon down."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from memcastle.api.access import controls, opens, palace_wide
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import (
    AcknowledgedOut,
    ConfigOut,
    ConnectorsOut,
    Ok,
    PreferencesOut,
    ShutdownOut,
    StatusOut,
)
from memcastle.api.routes.common import (
    services,
)
from memcastle.api.schemas import (
    EmptyBody,
)

router = APIRouter(prefix="/api", route_class=DeclaredRoute)


@router.get("/health", response_model=Ok, tags=["status"], dependencies=[Depends(opens)])
def health() -> dict[str, Any]:
    return {"ok": True}


@router.get("/status", response_model=StatusOut, tags=["status"], dependencies=[Depends(opens)])
def status(request: Request) -> dict[str, Any]:
    return services(request).status.status().to_json()


@router.post(
    "/status/acknowledge",
    response_model=AcknowledgedOut,
    tags=["status"],
    dependencies=[Depends(controls), Depends(palace_wide)],
)
def acknowledge(request: Request, body: EmptyBody) -> dict[str, Any]:
    """Clear the notices among the status warnings: what the daemon did on its own (a damaged vector cache
    rebuilt), shown until a person has seen it."""
    return {"acknowledged": services(request).status.acknowledge()}


@router.get("/config", response_model=ConfigOut, tags=["status"], dependencies=[Depends(opens), Depends(palace_wide)])
def config(request: Request) -> dict[str, Any]:
    """The daemon's effective settings, each with where its value came from; secrets and URL passwords masked."""
    return services(request).runtime.config()


@router.get("/preferences", response_model=PreferencesOut, tags=["preferences"], dependencies=[Depends(opens)])
def preferences(request: Request) -> dict[str, Any]:
    return services(request).policy.to_json()


@router.get("/connectors", response_model=ConnectorsOut, tags=["mining"], dependencies=[Depends(opens)])
def connectors(request: Request) -> dict[str, Any]:
    return {"connectors": services(request).mining.list_connectors()}


@router.post(
    "/shutdown",
    status_code=202,
    response_model=ShutdownOut,
    tags=["status"],
    dependencies=[Depends(controls), Depends(palace_wide)],
)
def shutdown(request: Request, body: EmptyBody) -> dict[str, Any]:
    request.app.state.request_shutdown()
    return {"ok": True, "message": "draining jobs, then exiting"}
