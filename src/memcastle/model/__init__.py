"""The domain's values: frozen dataclasses and closed vocabularies, one module per concept, all importable from here.

drawers   Drawer, NewDrawer, Origin, Source, Provenance, Wing, Room, Page; content hashing and fingerprints
jobs      Job, NewJob, JobStatus, Priority, Progress; the transition table; the recovery budget
search    SearchQuery, Scope, TimeWindow, LexicalQuery, ScoredDrawer, Hit, SearchResult, DrawerPlace
mining    SourceRecord, DocumentRecord, DocumentChanges, MinerSpec
graph     Entity, Mention, EntityHint, Assertion, FactLink, DrawerLink, GraphWrite, SimilarDrawer
forgetting ForgetScope, ForgetReport, ForgottenDrawer, Tombstone
"""

from __future__ import annotations

from memcastle.model.drawers import (
    JSON,
    RANKINGS,
    REQUESTERS,
    SOURCE_KINDS,
    Drawer,
    NewDrawer,
    Origin,
    Page,
    Provenance,
    RequestKey,
    Room,
    Source,
    Wing,
    content_hash,
    fingerprint,
    normalize_text,
)
from memcastle.model.forgetting import FORGET_SCOPES, ForgetReport, ForgetScope, ForgottenDrawer, Tombstone
from memcastle.model.graph import (
    EDIT_MIN_CHARS,
    FACT_STATES,
    LINK_KINDS,
    SINGLE_VALUED_PREDICATES,
    Assertion,
    DrawerLink,
    Entity,
    EntityHint,
    FactLink,
    GraphWrite,
    Mention,
    key_variants,
)
from memcastle.model.jobs import (
    JOB_TRANSITIONS,
    PRIORITY_NAMES,
    RECOVERY_BUDGET,
    Job,
    JobStatus,
    NewJob,
    Priority,
    Progress,
    is_legal_transition,
    recovery_spent,
)
from memcastle.model.mining import DocumentChanges, DocumentRecord, MinerSpec, SourceRecord
from memcastle.model.search import (
    DrawerPlace,
    Hit,
    LexicalQuery,
    Scope,
    ScoredDrawer,
    SearchQuery,
    SearchResult,
    SimilarDrawer,
    TimeWindow,
)

__all__ = [
    "RequestKey",
    "Assertion",
    "DocumentChanges",
    "DocumentRecord",
    "Drawer",
    "DrawerLink",
    "DrawerPlace",
    "Entity",
    "EntityHint",
    "FACT_STATES",
    "FORGET_SCOPES",
    "ForgetReport",
    "ForgetScope",
    "ForgottenDrawer",
    "FactLink",
    "GraphWrite",
    "Hit",
    "JOB_TRANSITIONS",
    "JSON",
    "Job",
    "JobStatus",
    "LINK_KINDS",
    "LexicalQuery",
    "Mention",
    "MinerSpec",
    "NewDrawer",
    "NewJob",
    "Origin",
    "PRIORITY_NAMES",
    "Page",
    "Priority",
    "Progress",
    "Provenance",
    "RANKINGS",
    "RECOVERY_BUDGET",
    "REQUESTERS",
    "Room",
    "SINGLE_VALUED_PREDICATES",
    "SOURCE_KINDS",
    "Scope",
    "ScoredDrawer",
    "SearchQuery",
    "SearchResult",
    "SimilarDrawer",
    "Source",
    "SourceRecord",
    "TimeWindow",
    "Tombstone",
    "Wing",
    "content_hash",
    "fingerprint",
    "is_legal_transition",
    "normalize_text",
    "key_variants",
    "EDIT_MIN_CHARS",
    "recovery_spent",
]
