"""What every route answers, declared: the response bodies of the REST API as pydantic models.

Routes return the domain's JSON (`Drawer.to_json()` …); FastAPI checks it against these models before it is sent,
so the OpenAPI schema cannot drift from what the daemon answers. Closed shapes forbid extra keys; what is open by
nature (a metadata snapshot, a job's params and result, ranking signals, a status section) is an object."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


Open = dict[str, Any]


class ErrorBody(Shape):
    """Every error answer, REST and MCP alike."""

    error: str = Field(description="what went wrong, for a person")
    code: str = Field(description="a stable machine code: invalid_request, not_found, conflict, forbidden_origin, …")
    help: str = Field(description="what to do about it (may be empty)")
    field: str | None = Field(None, description="the request field at fault, as a path: items[1].content")
    existing_id: str | None = Field(None, description="on a conflict: the record it clashes with")
    details: list[Open] | None = Field(None, description="on a schema violation: every field at fault")
    request_id: str | None = Field(
        None, description="the request's id, also in the X-Request-Id header and on every log line it wrote"
    )


class OriginOut(Shape):
    connector: str
    source_id: str
    document: str
    chunk: int
    revision: str
    metadata: Open
    occurred_at: str | None
    lines: list[int] | None = Field(
        None, description="the chunk's first and last line in its document (files, notes, commits)"
    )


class SourceOut(Shape):
    kind: str
    uri: str | None
    agent: str | None
    origin: OriginOut | None


class ProvenanceOut(Shape):
    requested_by: str
    job_id: str | None
    reason: str | None = None


class DrawerOut(Shape):
    id: str
    wing: str
    room: str
    name: str | None
    content: str
    content_hash: str
    fingerprint: str
    source: SourceOut
    tags: list[str]
    provenance: ProvenanceOut
    valid_from: str
    valid_to: str | None
    supersedes: str | None
    superseded_by: str | None
    created_at: str = Field(description="when the palace learnt it (record time)")
    closed_at: str | None = Field(None, description="when the palace learnt that it closed (record time)")
    closed_reason: str | None = Field(None, description="why it closed without a successor: removed at source")
    pinned: bool = Field(False, description="always enters its wing's wake-up and recall")
    hidden: bool = Field(False, description="left out of search, recall and wake-up unless asked for")
    expires_at: str | None = Field(None, description="its own expiry; after it, the drawer reads as closed (expired)")


class ProgressOut(Shape):
    current: int
    total: int | None
    message: str | None


class JobOut(Shape):
    id: str
    kind: str
    status: str
    priority: int
    params: Open
    created_at: str
    started_at: str | None
    finished_at: str | None
    progress: ProgressOut
    attempt: int
    recovery_attempts: int
    max_attempts: int
    checkpoint: Open
    result: Open | None
    error: str | None
    lease_owner: str | None
    lease_expires_at: str | None
    pause_requested: bool
    cancel_requested: bool
    requested_by: str
    waiting: str | None = Field(None, description="a queued job: what it waits for and behind what")


class FactProvenanceOut(Shape):
    drawer: str | None
    extractor: str
    job_id: str | None
    origin: Open | None


class FactLinkOut(Shape):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: str
    from_: str = Field(alias="from")
    to: str
    kind: str
    origin: str
    reason: str
    at: str
    evidence_drawer: str | None = None


class CriterionOut(Shape):
    path: str
    equals: Any
    level: str


class LevelOut(Shape):
    """The preference level of a fact's evidence, its ranking adjustment, and what decided it: the evidence's
    connector (null: no connector, the default level) and the criterion that matched, if one did (ADR 048)."""

    level: str
    adjustment: float
    connector: str | None = None
    criterion: CriterionOut | None = None


class LifecycleOut(Shape):
    """The fact's state computed from its links; a conflicting fact also says which side is preferred and why."""

    state: str
    links: list[FactLinkOut]
    preferred: bool | None = None
    preferred_id: str | None = None
    basis: str | None = None
    preference: LevelOut | None = None


class FactOut(BaseModel):
    """A fact as read: the assertion, its entities' names, and its computed lifecycle (plus, for a fact read with
    its conflicts or preference basis, those sections)."""

    model_config = ConfigDict(extra="allow")

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: str
    valid_to: str | None
    provenance: FactProvenanceOut
    explicit: bool
    created_at: str
    subject_id: str | None = Field(None, description="the subject entity's id (`subject` is its name)")
    object_id: str | None = Field(None, description="the object entity's id (`object` is its name)")
    subject_name: str | None = None
    object_name: str | None = None
    lifecycle: LifecycleOut | None = None


class EntityOut(Shape):
    id: str
    name: str
    kind: str
    key: str
    aliases: list[str]
    created_at: str


class MentionOut(Shape):
    drawer: str
    spelling: str


class EntityDetailOut(EntityOut):
    mentions: list[MentionOut]
    hints: list[Open]


class SnippetOut(Shape):
    text: str = Field(description="the part of the drawer that matched best: drawer.content[start:end], verbatim")
    start: int
    end: int
    matches: list[list[int]] = Field(description="the query's terms in text, as [start, end) offsets (code points)")
    passage: int = Field(description="the drawer's passage (as embedded) the snippet lies in")
    lines: list[int] | None = Field(description="the snippet's first and last line in its document, when known")


class HitOut(Shape):
    drawer: DrawerOut
    score: float
    signals: Open = Field(description="the legs' scores, relevance and the preference explanation")
    origin: OriginOut | None
    snippet: SnippetOut | None = Field(description="the best-matching passage; drawer.content is the whole drawer")
    via: list[str] | None = Field(None, description="an expanded hit: the chain it was reached through")


class SearchOut(Shape):
    hits: list[HitOut]
    ranking: str
    warnings: list[str]
    pinned: list[DrawerOut] | None = Field(None, description="a recall's pinned drawers the search did not find")


class CompactSearchOut(Shape):
    """A search answered with `full: false` (the compact hits of `memcastle.services.views`), or cut by
    `max_chars`."""

    hits: list[Open] = Field(description="compact hits: id, place, origin, snippet, chars, score, signals, preference")
    ranking: str
    warnings: list[str] = []
    pinned: list[Open] | None = Field(None, description="a recall's pinned drawers the search did not find")
    omitted: int = Field(0, description="hits left out to keep within max_chars")
    note: str = Field("", description="what was left out and how to get it")


class WingOut(Shape):
    name: str
    drawers: int
    created_at: str


class RoomOut(Shape):
    wing: str
    name: str
    drawers: int
    created_at: str


# --- the answers, by route -----------------------------------------------------------------------------------


class Ok(Shape):
    ok: bool


class AcknowledgedOut(Shape):
    acknowledged: int = Field(description="how many notices were cleared from the status warnings")


class VectorIndexOut(BaseModel):
    search: Literal["exact", "graph", "pgvector"] = Field(
        description="graph once the in-memory HNSW graph is built, else exact; pgvector: searched in PostgreSQL"
    )
    vectors: int = Field(description="passage vectors (in memory, or in PostgreSQL for pgvector)")
    in_graph: int = Field(description="of them, in the graph (the others are scanned exactly beside it)")
    graph_from: int = Field(description="search.ann_min_rows: vectors from which the graph is built")
    loading: bool = Field(
        description="the stored vectors are still being read into memory after the start (`vectors` so far); "
        "searches by meaning cover those, with a warning"
    )


class EmbeddingStatusOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    provider: str
    model: str | None
    dimension: int | None
    pending: int = Field(description="drawers whose vectors are not all in yet")
    passages_done: int | None = Field(description="passages the running embed sweep has embedded")
    passages_pending: int | None = Field(description="passages still to embed; null until a batch was measured")
    passages_per_second: float | None = Field(description="the running sweep's rate")
    eta_seconds: int | None = Field(description="when the last vector should be in, at that rate")
    index: VectorIndexOut | None = Field(
        default=None, description="how searches by meaning run: an exact scan, or the HNSW graph once built"
    )


class StatusOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    ok: bool
    version: str
    palace: str
    store: Open
    drawers: int
    drawers_total: int
    jobs: dict[str, int]
    embeddings: EmbeddingStatusOut
    extraction: Open
    warnings: list[str]
    daemon: Open | None = None
    schema_: Open | None = Field(default=None, alias="schema")


class NoteOut(Shape):
    drawer: DrawerOut
    created: bool
    replayed: bool


class DrawerPage(Shape):
    drawers: list[DrawerOut]
    next_after: str | None


class DrawerVersions(Shape):
    versions: list[DrawerOut]


class PreferenceTraceOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    drawer_id: str
    result: Open
    steps: list[str]


class DuplicateOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    drawer: DrawerOut
    verdict: str


class DuplicatesOut(Shape):
    duplicates: list[DuplicateOut]


class PreferencesOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    default: Open
    sources: Open
    neutral: bool
    layers: list[Any]


class WingsOut(Shape):
    wings: list[WingOut]


class RoomsOut(Shape):
    rooms: list[RoomOut]


class ForgottenDrawerOut(Shape):
    id: str
    wing: str
    room: str
    valid_from: str
    valid_to: str | None
    document: str | None
    preview: str = Field(description="the first words, so a person can check the scope before confirming")


class TombstoneOut(Shape):
    id: str
    at: str
    requested_by: str
    scope: Open = Field(description="which scope (a search by the SHA-256 of its query, never its words)")
    counts: dict[str, int]


class ForgetOut(Shape):
    dry_run: bool
    scope: Open
    counts: dict[str, int] = Field(
        description="drawers (version chains), versions, passages, facts (removed), facts_kept (evidence removed), "
        "fact_links, mentions, entities, drawer_links, documents, rooms, wings"
    )
    drawers: list[ForgottenDrawerOut] = Field(description="the first drawers reached, oldest first")
    more: int = Field(description="drawers reached beyond those listed")
    tombstone: TombstoneOut | None


class TombstonesOut(Shape):
    tombstones: list[TombstoneOut]


class ReadRecordOut(Shape):
    id: int | None
    at: str
    interface: str = Field(description="http, cli, web or mcp")
    operation: str = Field(description="search, recall, wake_up, diary, drawer, history, duplicates, facts or fact")
    token: str | None = Field(description="the bearer token's name (authentication on)")
    client: str | None = Field(description="the MCP client's name, from its initialize")
    session: str | None = Field(description="the MCP session")
    query: str | None = Field(description="what was asked for, redacted like any text")
    drawer_ids: list[str] = Field(description="the drawers the answer returned (never their text)")
    fact_ids: list[str]


class ReadsOut(Shape):
    reads: list[ReadRecordOut]


class MinedSourceOut(Shape):
    id: str
    connector: str
    locator: str
    options: dict[str, str]
    updated_at: str
    documents: int
    drawers: int = Field(description="current drawers mined from it")


class SourcesOut(Shape):
    sources: list[MinedSourceOut]


class VectorStateOut(Shape):
    drawer_id: str
    model: str | None
    embedded: bool
    dimension: int | None
    supplied: bool


class WebhookOut(Shape):
    duplicate: bool
    delivery: str | None
    job: Open | None
    joined: bool | None = None
    message: str | None = None


class GraphOut(Shape):
    nodes: list[Open]
    edges: list[Open]
    truncated: bool


class PlaceOut(Shape):
    wing: str
    room: str | None = None
    created_at: str
    drawers: int
    versions: int
    rooms: int | None = None
    last_filed_at: str | None
    created: bool | None = None


class RenamedOut(Shape):
    wing: str
    room: str | None = None
    warnings: list[str]


class SweepOut(Shape):
    job: JobOut | None
    message: str | None = None


class DiaryEntryOut(Shape):
    drawer: DrawerOut


class DiaryOut(Shape):
    entries: list[DrawerOut]


class WakeUpOut(Shape):
    agent: str
    wing: str | None
    pinned: list[DrawerOut] = Field(description="pinned drawers of the wing (and of no project): first, always")
    diary: list[DrawerOut]
    checkpoints: list[DrawerOut]
    decisions: list[DrawerOut] = Field(description="the wing's decisions (items tagged decision), by any agent")
    bytes: int
    omitted: int


class CheckpointOut(Shape):
    drawers: list[DrawerOut]
    replayed: bool


class FactsOut(Shape):
    facts: list[FactOut]


class SupersededFactOut(Shape):
    fact: FactOut
    superseded: FactOut


class LinkedFactOut(Shape):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    link: FactLinkOut
    from_: FactOut = Field(alias="from")
    to: FactOut


class EntitiesOut(Shape):
    entities: list[EntityOut]


class CandidatesOut(Shape):
    candidates: list[Open]


class JobsOut(Shape):
    jobs: list[JobOut]


class JobAnswer(Shape):
    job: JobOut


class MineOut(Shape):
    job: JobOut
    joined: bool = Field(description="true when the request joined a queued mine of the same source")


class ConnectorOut(Shape):
    name: str
    source_kind: str
    options: dict[str, Open]


class ConnectorsOut(Shape):
    connectors: list[ConnectorOut]


class MinerRunOut(Shape):
    job_id: str
    status: str = Field(description="the job's status now, or `gone` once it was forgotten")
    at: str | None
    trigger: str | None = Field(description="watch, schedule or request")
    result: Open | None
    error: str | None


class MinerOut(Shape):
    name: str
    connector: str
    locator: str
    options: dict[str, str]
    wing: str | None
    full: bool
    watch: bool
    debounce: float = Field(description="seconds without a change before a watched source is mined")
    every: float | None = Field(description="the schedule's period in seconds")
    poll: float | None = Field(None, description="the change check's period in seconds (backed off while unchanged)")
    webhook: Literal["hmac", "token"] | None = Field(None, description="POST /hooks/{name} asks for a run")
    secret_env: str | None = Field(None, description="the daemon's environment variable holding the webhook's secret")
    origin: Literal["config", "api"] = Field(description="where it is defined: the config file, or the palace")
    triggers: list[str]
    enabled: bool
    state: Literal["enabled", "disabled"]
    last_run: MinerRunOut | None
    next_run: str | None = Field(description="when the schedule asks next (null: no schedule, or disabled)")
    shadowed: bool = Field(description="a palace definition hidden by a config miner of the same name")


class MinerAnswer(Shape):
    miner: MinerOut


class MinersOut(Shape):
    miners: list[MinerOut]


class SettingOut(Shape):
    key: str
    value: Any
    origin: str
    description: str


class ConfigOut(Shape):
    config_file: str | None
    settings: list[SettingOut]


class ShutdownOut(Shape):
    ok: bool
    message: str
