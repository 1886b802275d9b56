"""Row → value mappers, one per type, for both backends: rows carry JSON as its text and flags as 0/1 or bool."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, Protocol, TypeVar

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


class _Dataclass(Protocol):
    """Any dataclass: what `dataclasses.fields` reads."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


T = TypeVar("T", bound=_Dataclass)

# Every drawer read selects this: the drawer with the names of its wing and room.
DRAWER_SELECT = (
    "SELECT d.*, w.name AS wing_name, r.name AS room_name FROM drawer d "
    "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"
)


def record(cls: type[T], row: Row, **read: Any) -> T:
    """A value of the dataclass `cls` whose fields are the row's columns of the same names, but those `read` gives (a
    column stored as JSON text or 0/1, or named otherwise)."""
    fields = dataclasses.fields(cls)
    return cls(**{field.name: read[field.name] if field.name in read else row[field.name] for field in fields})


def drawer_from_row(row: Row) -> Drawer:
    # PostgreSQL text cannot hold NUL: such content is kept exactly in `content_exact` (SQLite has no such column).
    exact = row["content_exact"] if "content_exact" in row.keys() else None
    origin = row["origin"]
    return record(
        Drawer,
        row,
        wing=row["wing_name"],
        room=row["room_name"],
        content=bytes(exact).decode("utf-8") if exact is not None else row["content"],
        source=Source(
            kind=row["source_kind"],
            uri=row["source_uri"],
            agent=row["source_agent"],
            origin=Origin.from_json(json.loads(origin)) if origin else None,
        ),
        tags=tuple(json.loads(row["tags"])),
        provenance=Provenance.from_json(json.loads(row["provenance"])),
        pinned=bool(row["pinned"]),
        hidden=bool(row["hidden"]),
    )


def job_from_row(row: Row) -> Job:
    progress = json.loads(row["progress"])
    return record(
        Job,
        row,
        status=JobStatus(row["status"]),
        params=json.loads(row["params"]),
        progress=Progress(
            current=progress.get("current", 0), total=progress.get("total"), message=progress.get("message")
        ),
        checkpoint=json.loads(row["checkpoint"]),
        result=json.loads(row["result"]) if row["result"] else None,
        pause_requested=bool(row["pause_requested"]),
        cancel_requested=bool(row["cancel_requested"]),
    )


def source_from_row(row: Row) -> SourceRecord:
    return record(SourceRecord, row, options=json.loads(row["options"]))


def document_from_row(row: Row) -> DocumentRecord:
    hashes, drawer_ids = json.loads(row["chunk_hashes"]), json.loads(row["drawer_ids"])
    return record(DocumentRecord, row, chunk_hashes=tuple(hashes), drawer_ids=tuple(drawer_ids))


def entity_from_row(row: Row) -> Entity:
    return record(Entity, row, aliases=tuple(json.loads(row["aliases"])))


def hint_from_row(row: Row) -> EntityHint:
    return EntityHint(row["entity_id"], row["other_id"], row["kind"], row["reason"])


def assertion_from_row(row: Row) -> Assertion:
    origin = json.loads(row["origin"]) if row["origin"] else None
    return record(Assertion, row, confidence=float(row["confidence"]), origin=origin, explicit=bool(row["explicit"]))


def fact_link_from_row(row: Row) -> FactLink:
    return record(FactLink, row)


def drawer_link_from_row(row: Row) -> DrawerLink:
    return DrawerLink(row["from_id"], row["to_id"], row["verdict"], row["similarity"], row["created_at"])
