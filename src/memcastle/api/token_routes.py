"""Bearer tokens over REST (`/api/auth/tokens`): list, create and revoke, for a full client that authenticated.

With authentication off there is no caller to trust with tokens, so these routes answer 403; tokens are then managed
with `memcastle auth token …` on the daemon's machine."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import Field

from memcastle.api.access import controls, palace_wide
from memcastle.api.openapi import DeclaredRoute
from memcastle.api.responses import Shape
from memcastle.api.schemas import EmptyBody, TokenBody
from memcastle.errors import AccessDenied
from memcastle.runtime.tokens import TokenStore, known_routes


class TokenOut(Shape):
    name: str
    created_at: str
    mode: str = Field(description="the most a client holding it may do")
    read: list[str] | None = Field(description="the only wings it may read (null: every wing)")
    write: list[str] | None = Field(description="the only wings it may write to (null: every wing)")
    tools: list[str] | None = Field(description="the only MCP tools it may list and call (null: every tool)")
    routes: list[str] | None = Field(description="the only REST route groups it may use (null: every group)")


class TokensOut(Shape):
    tokens: list[TokenOut]
    configured_secret: bool


class CreatedTokenOut(Shape):
    name: str
    token: str = Field(description="shown only in this answer; the palace keeps its digest")
    created_at: str
    mode: str
    read: list[str] | None
    write: list[str] | None
    tools: list[str] | None
    routes: list[str] | None


class RevokedOut(Shape):
    revoked: str


router = APIRouter(prefix="/api/auth", tags=["auth"], route_class=DeclaredRoute, dependencies=[Depends(palace_wide)])


def token_store(request: Request) -> TokenStore:
    tokens: TokenStore | None = request.app.state.tokens
    if tokens is None:
        raise AccessDenied(
            "token management over HTTP needs authentication on (auth.enabled)",
            help="on the daemon's machine: memcastle auth token list | create NAME | revoke NAME",
        )
    return tokens


@router.get("/tokens", response_model=TokensOut, dependencies=[Depends(controls)])
def list_tokens(request: Request) -> dict[str, Any]:
    tokens = token_store(request)
    return {
        "tokens": [r.to_json() for r in tokens.records()],
        "configured_secret": tokens.has_secret,
    }


@router.post("/tokens", status_code=201, response_model=CreatedTokenOut, dependencies=[Depends(controls)])
def create_token(body: TokenBody, request: Request) -> dict[str, Any]:
    from memcastle.mcp.tools.base import known_tools  # the MCP SDK loads at the first MCP request, not at start-up

    tokens = token_store(request)
    token = tokens.create(
        body.name,
        mode=body.mode,
        read=body.read,
        write=body.write,
        tools=known_tools(body.tools),
        routes=known_routes(body.routes),
    )
    record = next(r for r in tokens.records() if r.name == body.name.strip())
    return {**record.to_json(), "token": token}


@router.delete("/tokens/{name}", response_model=RevokedOut, dependencies=[Depends(controls)])
def revoke_token(name: str, request: Request, body: EmptyBody | None = None) -> dict[str, Any]:
    record = token_store(request).revoke(name)
    return {"revoked": record.name}


# The original MemCastle's one token, kept here under this name.
THE_TOKEN = "default"


@router.post("/token", status_code=201, response_model=CreatedTokenOut, dependencies=[Depends(controls)])
def create_the_token(request: Request, body: EmptyBody | None = None) -> dict[str, Any]:
    """The original MemCastle's `POST /api/auth/token`: a full token named `default`, replacing the previous one
    (`POST /api/auth/tokens` with that name)."""
    tokens = token_store(request)
    if any(record.name == THE_TOKEN for record in tokens.records()):
        tokens.revoke(THE_TOKEN)
    token = tokens.create(THE_TOKEN)
    record = next(r for r in tokens.records() if r.name == THE_TOKEN)
    return {**record.to_json(), "token": token}


@router.delete("/token", response_model=RevokedOut, dependencies=[Depends(controls)])
def revoke_the_token(request: Request, body: EmptyBody | None = None) -> dict[str, Any]:
    """The original MemCastle's `DELETE /api/auth/token`: revokes the token named `default`."""
    return {"revoked": token_store(request).revoke(THE_TOKEN).name}
