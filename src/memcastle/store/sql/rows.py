"""Row → value mappers, one per type, for both backends: rows carry JSON as its text and flags as 0/1 or bool."""

from __future__ import annotations

import json

from memcastle.model import (
    Assertion,
    DocumentRecord,
    Drawer,
    DrawerLink,
    Entity,
    EntityHint,
    FactLink,
    Job,
    JobStatus,
    Origin,
    Progress,
    Provenance,
    Source,
    SourceRecord,
)
from memcastle.store.sql.base import Row

# Every drawer read selects this: the drawer with the names of its wing and room.
DRAWER_SELECT = (
    "SELECT d.*, w.name AS wing_name, r.name AS room_name FROM drawer d "
    "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"
)


def drawer_from_row(row: Row) -> Drawer:
    # PostgreSQL text cannot hold NUL: such content is kept exactly in `content_exact` (SQLite has no such column).
    exact = row["content_exact"] if "content_exact" in row.keys() else None
    origin = row["origin"]
    return Drawer(
        id=row["id"],
        wing=row["wing_name"],
        room=row["room_name"],
        name=row["name"],
        content=bytes(exact).decode("utf-8") if exact is not None else row["content"],
        content_hash=row["content_hash"],
        fingerprint=row["fingerprint"],
        source=Source(
            kind=row["source_kind"],
            uri=row["source_uri"],
            agent=row["source_agent"],
            origin=Origin.from_json(json.loads(origin)) if origin else None,
        ),
        tags=tuple(json.loads(row["tags"])),
        provenance=Provenance.from_json(json.loads(row["provenance"])),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        supersedes=row["supersedes"],
        superseded_by=row["superseded_by"],
        created_at=row["created_at"],
        closed_at=row["closed_at"],
        closed_reason=row["closed_reason"],
        pinned=bool(row["pinned"]),
        hidden=bool(row["hidden"]),
        expires_at=row["expires_at"],
    )


def job_from_row(row: Row) -> Job:
    progress = json.loads(row["progress"])
    return Job(
        id=row["id"],
        kind=row["kind"],
        status=JobStatus(row["status"]),
        priority=row["priority"],
        params=json.loads(row["params"]),
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        progress=Progress(
            current=progress.get("current", 0), total=progress.get("total"), message=progress.get("message")
        ),
        attempt=row["attempt"],
        recovery_attempts=row["recovery_attempts"],
        max_attempts=row["max_attempts"],
        checkpoint=json.loads(row["checkpoint"]),
        result=json.loads(row["result"]) if row["result"] else None,
        error=row["error"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        pause_requested=bool(row["pause_requested"]),
        cancel_requested=bool(row["cancel_requested"]),
        requested_by=row["requested_by"],
        coalesce_key=row["coalesce_key"],
    )


def source_from_row(row: Row) -> SourceRecord:
    return SourceRecord(
        id=row["id"],
        connector=row["connector"],
        locator=row["locator"],
        options=json.loads(row["options"]),
        cursor=row["cursor"],
        updated_at=row["updated_at"],
    )


def document_from_row(row: Row) -> DocumentRecord:
    return DocumentRecord(
        source_id=row["source_id"],
        external_id=row["external_id"],
        revision=row["revision"],
        chunk_hashes=tuple(json.loads(row["chunk_hashes"])),
        drawer_ids=tuple(json.loads(row["drawer_ids"])),
        updated_at=row["updated_at"],
    )


def entity_from_row(row: Row) -> Entity:
    return Entity(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        key=row["key"],
        aliases=tuple(json.loads(row["aliases"])),
        created_at=row["created_at"],
    )


def hint_from_row(row: Row) -> EntityHint:
    return EntityHint(row["entity_id"], row["other_id"], row["kind"], row["reason"])


def assertion_from_row(row: Row) -> Assertion:
    return Assertion(
        id=row["id"],
        subject=row["subject"],
        predicate=row["predicate"],
        object=row["object"],
        confidence=float(row["confidence"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        drawer_id=row["drawer_id"],
        extractor=row["extractor"],
        job_id=row["job_id"],
        origin=json.loads(row["origin"]) if row["origin"] else None,
        explicit=bool(row["explicit"]),
        created_at=row["created_at"],
    )


def fact_link_from_row(row: Row) -> FactLink:
    return FactLink(
        id=row["id"],
        from_id=row["from_id"],
        to_id=row["to_id"],
        kind=row["kind"],
        origin=row["origin"],
        reason=row["reason"],
        at=row["at"],
        evidence_drawer=row["evidence_drawer"],
    )


def drawer_link_from_row(row: Row) -> DrawerLink:
    return DrawerLink(row["from_id"], row["to_id"], row["verdict"], row["similarity"], row["created_at"])
