"""Request bodies accepted over HTTP (pydantic at the edge; unknown fields are refused)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memcastle.services.validation import check_text


class Body(BaseModel):
    # Strict: JSON true is not a limit of 1 and "yes" is not a boolean; a wrong type is a 400 naming the field.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _valid_text(cls, data: Any) -> Any:
        # JSON may carry a lone surrogate ("\ud800"); no store can hold one. InvalidRequest is not a ValueError, so
        # it leaves pydantic as itself and becomes the usual 400 naming the field.
        check_text(data, "")
        return data


class NoteBody(Body):
    content: str
    wing: str | None = None
    room: str | None = None
    tags: list[str] = Field(default_factory=list)
    agent: str | None = None
    name: str | None = None
    idempotency_key: str | None = Field(
        None, description="the same key on a retry answers with the first write (also the Idempotency-Key header)"
    )


class SupersedeBody(Body):
    content: str
    reason: str | None = None


class SearchBody(Body):
    query: str
    limit: int = 10
    wing: str | None = None
    room: str | None = None
    tags: list[str] = Field(default_factory=list)
    source_kind: str | None = None
    connector: str | None = None
    ranking: str = "auto"
    as_of: str | None = None
    from_: str | None = Field(default=None, alias="from")
    until: str | None = None
    include_historical: bool = False
    expand: bool = False
    preferences: str = "on"


class VerifyBody(Body):
    batch: int = Field(default=200, ge=1, le=10_000)
    pace_ms: int = Field(default=0, ge=0, le=60_000)
    priority: str = "low"


class MineBody(Body):
    connector: str
    locator: str = ""
    options: dict[str, str] = Field(default_factory=dict)
    wing: str | None = None
    full: bool = False


class SweepBody(Body):
    pass


class DiaryBody(Body):
    agent: str
    content: str
    wing: str | None = None


class FactBody(Body):
    subject: str
    predicate: str
    object: str
    confidence: float = 1.0
    valid_from: str | None = None
    subject_kind: str | None = None
    object_kind: str | None = None
    evidence_drawer: str | None = None


class CheckpointItem(Body):
    content: str
    wing: str | None = None
    room: str | None = None
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    fact: FactBody | None = None


class CheckpointBody(Body):
    items: list[CheckpointItem]
    agent: str | None = None
    idempotency_key: str | None = Field(
        None, description="the same key on a retry answers with the first write (also the Idempotency-Key header)"
    )


class SupersedeFactBody(Body):
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    confidence: float | None = None
    subject_kind: str | None = None
    object_kind: str | None = None
    evidence_drawer: str | None = None
    reason: str | None = None


class InvalidateFactBody(Body):
    reason: str


class LinkFactBody(Body):
    to: str
    kind: str
    reason: str


class TokenBody(Body):
    name: str = Field(min_length=1, max_length=100, description="what the token is for (a client, a machine)")
