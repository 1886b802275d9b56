"""An agent's own memory: waking up, its diary, notes and checkpoints."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memcastle.errors import InvalidRequest
from memcastle.mcp.tools.base import (
    ADDS,
    READS,
    REQUESTER,
    WRITES,
    AgentName,
    Env,
    IdempotencyKey,
    Limit,
    MaxChars,
    Wing,
    tool,
)
from memcastle.model.requests import CheckpointItem, request_of
from memcastle.model.vocabulary import Predicate
from memcastle.services.views import drawer_view, fit


@tool("memcastle_wake_up", "Wake up: resume from memory", "read", READS)
def wake_up(
    env: Env,
    agent: AgentName,
    wing: Annotated[str | None, Field(description="your project")] = None,
    max_items: Annotated[int, Field(ge=1, le=200)] = 10,
    max_bytes: Annotated[int, Field(ge=256, le=1_048_576)] = 8192,
    max_chars: MaxChars = None,
) -> dict[str, Any]:
    """Each session's start: your diary, checkpoints, the wing's decisions."""
    bundle = env.services.agents.wake_up_bundle(agent, wing=wing, max_items=max_items, max_bytes=max_bytes)
    out: dict[str, Any] = {"agent": bundle.agent, "wing": bundle.wing}
    if bundle.pinned:
        out["pinned"] = [drawer_view(d, content=True) for d in bundle.pinned]
    out |= {"diary": [drawer_view(d, content=True) for d in bundle.diary]}
    if bundle.decisions:
        out["decisions"] = [drawer_view(d, content=True) | {"agent": d.source.agent} for d in bundle.decisions]
    out |= {
        "checkpoints": [drawer_view(d, content=True) for d in bundle.checkpoints],
        "omitted": bundle.omitted,
    }
    fitted = fit(out, "checkpoints", max_chars)
    if "note" in fitted:
        fitted["omitted"] += bundle.omitted
    return fitted


@tool("memcastle_diary_read", "Read a diary", "read", READS)
def diary_read(env: Env, agent: AgentName, wing: Wing = None, limit: Limit = 10) -> dict[str, Any]:
    """Your diary, newest first."""
    entries = env.services.agents.read_diary(agent, wing=wing, limit=limit)
    return {"entries": [drawer_view(d, content=True) for d in entries]}


@tool("memcastle_diary_write", "Write a diary entry", "write", WRITES)
def diary_write(
    env: Env,
    agent: AgentName,
    content: Annotated[str, Field(min_length=1)],
    wing: Annotated[str | None, Field(description="your project")] = None,
) -> dict[str, Any]:
    """At a session's end: what was done, what is open, what is next."""
    drawer = env.services.agents.write_diary(agent, content, wing=wing, requested_by=REQUESTER)
    return {"drawer": drawer_view(drawer, content=False)}


@tool("memcastle_note", "Save a note", "write", WRITES, aliases={"payload": "content"})
def note(
    env: Env,
    content: Annotated[str, Field(min_length=1, description="verbatim")],
    wing: Annotated[str | None, Field()] = None,
    room: Annotated[str | None, Field(description="default notes")] = None,
    tags: Annotated[tuple[str, ...], Field()] = (),
    agent: Annotated[str | None, Field()] = None,
    name: Annotated[str | None, Field(description="unique in the room")] = None,
    expires_at: Annotated[str | None, Field(description="instant, or 7d from now")] = None,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Remember verbatim: a finding, a preference, context a later session needs."""
    written = env.services.drawers.write_note(
        content,
        idempotency_key=idempotency_key,
        wing=wing,
        room=room,
        tags=tags,
        agent=agent,
        name=name,
        requested_by=REQUESTER,
        expires_at=expires_at,
    )
    return {
        "drawer": drawer_view(written.drawer, content=False),
        "created": written.created,
        "replayed": written.replayed,
    }


class FactArgument(BaseModel):
    """An explicit fact: subject – predicate – object, entities named in words."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1)
    predicate: Predicate
    object: str = Field(min_length=1)
    confidence: float = Field(1.0, ge=0, le=1)
    valid_from: str | None = None


class CheckpointArgument(BaseModel):
    """One decision or piece of state to keep."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="with its reason")
    wing: str | None = None
    room: str | None = None
    name: str | None = None
    tags: tuple[str, ...] = ()
    expires_at: str | None = None
    fact: FactArgument | None = None


def from_payload(arguments: dict[str, Any]) -> dict[str, Any]:
    """The original MemCastle's checkpoint (`payload: {items: [{destination, wing, name, content, tags, source,
    fact}]}`, `emergency`) under this tool's names: `destination` is the room, `source.agent` the agent; a fact
    `op` other than add is refused, pointing to the tool that does it."""
    arguments = dict(arguments)
    arguments.pop("emergency", None)  # checkpoints are written at once: there is no queue to jump
    payload = arguments.pop("payload", None)
    if payload is None:
        return arguments
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            raise InvalidRequest("payload is a string that is not JSON: send an object", field="payload") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("items"), list):
        raise InvalidRequest("payload must be an object with a list of items", field="payload.items")
    if "items" in arguments:
        raise InvalidRequest("give items or payload, not both", field="payload")
    items = []
    for index, raw in enumerate(payload["items"]):
        if not isinstance(raw, dict):
            raise InvalidRequest("each item must be an object", field=f"payload.items[{index}]")
        item = {key: value for key, value in raw.items() if value is not None}
        destination = item.pop("destination", None)
        if destination is not None:
            item.setdefault("room", destination)
        source = item.pop("source", None) or {}
        if source.get("uri"):
            raise InvalidRequest(
                "a checkpoint keeps an agent's words; a file is mined with memcastle_mine to keep its provenance",
                field=f"payload.items[{index}].source.uri",
            )
        if source.get("agent"):
            arguments.setdefault("agent", source["agent"])
        fact = item.get("fact")
        if isinstance(fact, dict) and "op" in fact:
            op = fact.pop("op")
            if op != "add":
                tool_name = {"supersede": "memcastle_fact_supersede", "invalidate": "memcastle_fact_invalidate"}
                raise InvalidRequest(
                    f"fact op {op!r} is its own tool here: {tool_name.get(op, 'memcastle_fact_link')}",
                    field=f"payload.items[{index}].fact.op",
                )
        items.append(item)
    arguments["items"] = items
    return arguments


@tool("memcastle_checkpoint", "Checkpoint decisions and state", "write", ADDS,
      adapt=from_payload)  # fmt: skip
def checkpoint(
    env: Env,
    items: Annotated[list[CheckpointArgument], Field(min_length=1)],
    agent: Annotated[str | None, Field()] = None,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """Keep decisions (X because Y) and state, or before a risky step; each item is a checkpoint drawer."""
    written = env.services.agents.write_checkpoint(
        [request_of(CheckpointItem, item) for item in items],
        agent=agent,
        idempotency_key=idempotency_key,
        requested_by=REQUESTER,
    )
    return {"drawers": [drawer_view(d, content=False) for d in written.drawers], "replayed": written.replayed}
