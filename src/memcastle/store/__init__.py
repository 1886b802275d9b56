"""The `Store` protocol, composed of one protocol per role; each consumer depends on the role it uses.

SQL lives only below this package. Methods take and return `memcastle.model` values, never rows (the palace copy's
`export_rows`/`import_rows` excepted: a copy moves rows). Both backends build on `memcastle.store.sql`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, Unpack

import numpy as np

from memcastle.model import (
    Assertion,
    DocumentChanges,
    DocumentRecord,
    Drawer,
    DrawerLink,
    DrawerPlace,
    Entity,
    EntityHint,
    FactLink,
    ForgetReport,
    ForgetScope,
    GraphWrite,
    Job,
    JobStatus,
    LexicalQuery,
    Mention,
    MinerSpec,
    MinerState,
    NearCandidate,
    NearKeys,
    NearSubject,
    NewDrawer,
    NewJob,
    Page,
    PlaceTotals,
    Progress,
    RequestKey,
    Room,
    Scope,
    ScoredDrawer,
    SourceRecord,
    TermStatistics,
    Tombstone,
    Wing,
)
from memcastle.model.audit import ReadQuery, ReadRecord
from memcastle.model.integrity import Finding
from memcastle.model.lifecycle import Lifecycle


@dataclass(frozen=True)
class VectorChunk:
    """Passage vectors as loaded: per row the drawer's id, the row's own id, the passage's index and the drawer's
    passage count (None where it was stored whole); the matrix (rows × dimension, float32) and the last row id read."""

    ids: list[str]
    row_ids: list[int]
    passages: list[int]
    totals: list[int | None]
    matrix: np.ndarray
    last_id: int


class DrawerStore(Protocol):
    """Drawers, their places and versions."""

    @property
    def lifecycle(self) -> Lifecycle:
        """How long drawers live, applied when they are read (`memcastle.model.lifecycle`)."""
        ...

    def add_drawer(self, new: NewDrawer) -> Drawer: ...
    def get_drawer(self, drawer_id: str) -> Drawer: ...
    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]:
        """Up to `limit` ids of `kind` (drawer, job, fact, entity) starting with `prefix`, in order."""
        ...

    def get_drawers(self, drawer_ids: Sequence[str]) -> dict[str, Drawer]: ...
    def any_superseded(self, wing: str, room: str) -> bool: ...
    def corrected_lines(self, wing: str, room: str, hashes: Sequence[str]) -> dict[str, Drawer]: ...
    def find_current_copy(self, wing: str, room: str, content_hash: str, agent: str | None = None) -> Drawer | None: ...
    def supersede_drawer(self, old_id: str, replacement: NewDrawer) -> Drawer: ...
    def invalidate_drawer(self, drawer_id: str, reason: str | None = None) -> Drawer:
        """Close a current drawer with no replacement (it was wrong): it stays in history, `closed_reason` says why."""
        ...

    def create_place(self, wing: str, room: str | None = None) -> bool: ...
    def place_totals(self, wing: str, room: str | None = None) -> PlaceTotals: ...
    def drawer_history(self, drawer_id: str) -> list[Drawer]: ...
    def count_drawers(self, *, current_only: bool = False) -> int: ...
    def list_wings(self) -> list[Wing]: ...
    def wing_names(self) -> list[str]: ...
    def list_rooms(self, wing: str) -> list[Room]: ...
    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]: ...
    def latest_drawers(self, scope: Scope, limit: int) -> list[Drawer]: ...
    def mark_drawer(self, drawer_id: str, *, pinned: bool | None = None, hidden: bool | None = None) -> Drawer:
        """Pin or unpin, hide or show a drawer; its later versions inherit the marks."""
        ...

    def erasable_drawers(self, at: str, limit: int) -> list[str]:
        """The last versions a `[[lifecycle]]` rule with `forget_after` has erased by `at`."""
        ...

    def pinned_drawers(self, scope: Scope, limit: int) -> list[Drawer]:
        """The pinned drawers eligible in `scope`, newest first."""
        ...

    def rename_wing(self, wing: str, new_name: str) -> None: ...
    def rename_room(self, wing: str, room: str, new_name: str) -> None: ...


class SearchStore(Protocol):
    """The lexical leg and the eligibility every leg filters by (scope and time, before any limit)."""

    def lexical_candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]: ...
    def count_matching(self, query: LexicalQuery, scope: Scope, at_most: int) -> int:
        """How many eligible drawers the full-text index matches for `query` (each of its terms when `require_all`),
        counted up to `at_most` (a search page's "N drawers hold these words"; past it, `at_most`)."""
        ...

    def term_statistics(self, words: Sequence[str]) -> TermStatistics:
        """The full-text index's drawer count and mean length, and per word how many drawers it is found in: what
        BM25 weighs a word with, as the lexical leg does."""
        ...

    def long_contents(self, drawer_ids: Sequence[str], longer_than: int) -> dict[str, str]:
        """The text of those of the drawers longer than `longer_than` characters (what passage scoring reads)."""
        ...

    def stage_texts(self, drawer_ids: Sequence[str]) -> dict[str, tuple[str, str, str | None, str | None]]:
        """id → (text, source kind, URI, origin JSON): what the second stage reads of its candidates."""
        ...

    def content_lengths(self, drawer_ids: Sequence[str]) -> dict[str, int]: ...

    def eligible_ids(self, drawer_ids: Sequence[str], scope: Scope) -> set[str]: ...
    def all_eligible_ids(self, scope: Scope) -> set[str]: ...
    def count_in_scope(self, scope: Scope, *, missing_vectors: str | None = None, unread_by: str | None = None) -> int:
        """How many drawers the scope holds (with `missing_vectors`, those still without all their vectors for the
        model; with `unread_by`, those the extractor has not read)."""
        ...

    def count_facts_in(self, scope: Scope) -> int:
        """How many facts have their evidence drawer in the scope."""
        ...

    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, DrawerPlace]: ...


# Which drawers an embed-sweep batch takes: any, prose only, the files that test code only, or all but those.
Subset = Literal["all", "prose", "tests", "untested"]


class EmbedWalk(TypedDict, total=False):
    """Where the embed sweep's walk over drawers not fully embedded goes (`EmbeddingStore.next_to_embed`): ascending
    from `after`, or descending from `before` (newest first); only current (or only closed) drawers when `current`
    says so; `stage` "head" takes those without their first passage's vector, "rest" those with only part of theirs,
    "all" (the default) both; `subset` "prose" takes only what people write in words — notes, transcripts, commits,
    documents (`PROSE_SUFFIXES`), not code or data files —, "tests" only the files that test code (`TEST_PATHS`),
    "untested" all but those, "all" (the default) every drawer."""

    after: int | None
    before: int | None
    current: bool | None
    stage: str
    subset: Subset


class EmbeddingStore(Protocol):
    """Passage vectors beside the drawers, per model."""

    def next_to_embed(self, model: str, limit: int, **walk: Unpack[EmbedWalk]) -> list[tuple[int, Drawer]]: ...
    def last_drawer_seq(self) -> int: ...
    def count_missing_embeddings(self, model: str) -> int: ...
    def waiting_texts(self, model: str, after: int, upto: int, limit: int) -> list[tuple[int, str]]: ...
    def count_stored_of_waiting(self, model: str, after: int, upto: int) -> int: ...
    def put_embeddings(
        self,
        model: str,
        rows: Iterable[tuple[str, np.ndarray]],
        *,
        first_passage: int = 0,
        totals: Mapping[str, int] | None = None,
        supplied: bool = False,
    ) -> None:
        """Store each drawer's passage vectors (float32, shape (passages, dimension)) from passage `first_passage`
        on, and mark it embedded once all `totals[drawer]` passages are in (all of them when no total is given).
        Starting at passage 0 replaces what the drawer had; a later start adds to it. `supplied`: a caller's
        vectors (`PUT /api/drawers/{id}/embedding`), marked so; the sweep's own write clears the mark."""
        ...

    def vector_state(self, model: str, drawer_id: str) -> tuple[int, bool] | None:
        """The drawer's vectors of `model`: (dimension, supplied by a caller), or None when it has none."""
        ...

    def load_embeddings(self, model: str, after_id: int, dimension: int, *, limit: int) -> VectorChunk:
        """At most `limit` passage vectors stored after row `after_id`, in row order: a walk of the row ids past
        `after_id` only, whatever the palace's size."""
        ...

    def vectors_of_rows(self, row_ids: Sequence[int], dimension: int) -> np.ndarray:
        """The stored vectors of these rows (row ids of `load_embeddings`), in the order asked, shape
        (len(row_ids), dimension); a row the store no longer has (its drawer was embedded again, or forgotten) comes
        back as zeros, which no search counts as similar. One primary-key lookup per row."""
        ...

    def embedded_models(self) -> dict[str, int]:
        """Each model with vectors here → the drawers it has embedded."""
        ...

    def drop_other_embeddings(self, model: str) -> int: ...
    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, DrawerPlace]: ...


class NearestStore(Protocol):
    """A store that searches its vectors itself, through a nearest-neighbour index of its own (PostgreSQL + pgvector);
    the semantic leg then keeps no vectors in memory (`memcastle.search.stored`)."""

    def nearest_passages(self, model: str, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]:
        """The `limit` passage vectors nearest `vector` among eligible drawers: (drawer id, cosine), best first, a
        drawer once per passage found."""
        ...

    def embedded_among(self, model: str, drawer_ids: Sequence[str]) -> set[str]:
        """Those of the drawers whose passages are all stored."""
        ...

    def nearest_passage_of(self, model: str, vector: np.ndarray, drawer_ids: Sequence[str]) -> dict[str, int]:
        """For each of the drawers with vectors, the number of its passage nearest `vector`."""
        ...

    def vector_count(self, model: str) -> tuple[int, int | None]:
        """How many passage vectors the model has, and their dimension (None when there are none)."""
        ...


class MiningStore(Protocol):
    """Sources, documents, and a document's changes applied in one transaction."""

    def upsert_source(self, source: SourceRecord) -> SourceRecord: ...
    def get_source(self, source_id: str) -> SourceRecord | None: ...
    def list_sources(self) -> list[tuple[SourceRecord, int, int]]: ...
    def sources_at(self, locator: str) -> list[SourceRecord]: ...
    def get_document(self, source_id: str, external_id: str) -> DocumentRecord | None: ...
    def document_revisions(self, source_id: str) -> dict[str, str]: ...
    def apply_document(self, changes: DocumentChanges) -> None: ...
    def apply_documents(self, batch: Sequence[DocumentChanges]) -> None: ...
    def current_documents(self, source_id: str) -> set[str]: ...
    def close_removed(self, source_id: str, document: str, reason: str) -> int: ...


class GraphStore(Protocol):
    """The knowledge graph as extraction writes it: the drawers an extractor has still to read, and one batch's
    entities, mentions, facts and links written together (`store/sql/graph.py`)."""

    def next_to_extract(self, extractor: str, limit: int, *, after_seq: int) -> tuple[list[Drawer], int]: ...
    def count_to_extract(self, extractor: str) -> int: ...
    def apply_graph(self, write: GraphWrite) -> None: ...


class EntityStore(Protocol):
    """Entities by name, alias or key variant, their mentions in drawers and their hints (`store/sql/entities.py`)."""

    def entities_named(self, name: str, key: str) -> list[Entity]: ...
    def entities_with_alias(self, key: str) -> list[Entity]: ...
    def entities_sharing_variants(self, variants: Sequence[str]) -> list[Entity]: ...
    def get_entity(self, entity_id: str) -> Entity: ...
    def get_entities(self, entity_ids: Sequence[str]) -> dict[str, Entity]: ...
    def list_entities(self, name: str | None, kind: str | None, limit: int) -> list[Entity]: ...
    def entity_mentions(self, entity_id: str, limit: int) -> list[Mention]: ...
    def entity_hints(self, entity_id: str) -> list[EntityHint]: ...
    def list_hints(self, limit: int) -> list[EntityHint]: ...
    def entities_of_drawers(self, drawer_ids: Sequence[str]) -> dict[str, set[str]]: ...
    def drawers_mentioning(self, entity_ids: Sequence[str], limit: int) -> dict[str, set[str]]: ...
    def mention_counts(self, entity_ids: Sequence[str], at_most: int) -> dict[str, int]:
        """Each entity → how many drawers mention it, counted up to `at_most` (a bounded walk of its index)."""
        ...


class FactStore(Protocol):
    """Facts, the links between them, and explicit decisions in one transaction (`store/sql/facts.py`)."""

    def get_assertion(self, assertion_id: str) -> Assertion: ...
    def get_assertions(self, assertion_ids: Sequence[str]) -> dict[str, Assertion]: ...
    def find_assertions(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        drawer_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[Assertion]: ...
    def facts_to_link(
        self, claim: Assertion, *, predecessor_drawer: str | None, rivals: bool, limit: int
    ) -> list[Assertion]: ...
    def assertions_touching(self, entity_ids: Sequence[str], limit: int = 1000) -> list[Assertion]: ...
    def links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]: ...
    def explicit_links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]: ...
    def record_decision(
        self, *, new: Assertion | None = None, close: tuple[str, str] | None = None, links: Sequence[FactLink] = ()
    ) -> None: ...
    def count_facts(self) -> int: ...


class NearStore(Protocol):
    """Near-duplicate bookkeeping: drawers' band keys and signatures, and the queue of drawers still to be linked
    (`store/sql/near.py`)."""

    def add_keys(self, keys: Sequence[NearKeys]) -> None: ...
    def settle(self, subjects: Sequence[int], links: Sequence[DrawerLink]) -> None: ...
    def pending(self, limit: int, drawer_ids: Sequence[str] | None = None) -> list[NearSubject]: ...
    def count_pending(self) -> int: ...
    def copies(self, subjects: Sequence[NearSubject]) -> list[NearCandidate]: ...
    def sharing_bands(self, subjects: Sequence[int], at_least: int) -> list[tuple[int, NearCandidate, int]]:
        """(subject seq, a current drawer filed before it, band keys shared) where they share `at_least`."""
        ...

    def signatures(self, seqs: Iterable[int]) -> dict[int, bytes]: ...
    def contents(self, seqs: Iterable[int]) -> dict[int, str]: ...
    def texts(self, seqs: Iterable[int]) -> dict[int, tuple[str, str, str, str]]: ...
    def drawer_links(self, drawer_id: str) -> list[DrawerLink]: ...


class ForgetStore(Protocol):
    """Forgetting: a scope's drawers and everything derived from them, leaving a tombstone (docs/lifecycle.md)."""

    def forget(self, scope: ForgetScope, *, dry_run: bool, requested_by: str) -> ForgetReport:
        """Erase the scope in one transaction (or, with `dry_run`, count what would go and change nothing)."""
        ...

    def tombstones(self, limit: int) -> list[Tombstone]: ...


class ArchiveReader(Protocol):
    """The records of one palace as of one instant (`ArchiveStore.archive_snapshot`)."""

    def records(self, kind: str) -> Iterator[dict[str, Any]]: ...


class ArchiveStore(Protocol):
    """A palace as portable records (`memcastle.store.sql.archive`): read from one snapshot, loaded idempotently."""

    def archive_snapshot(self) -> AbstractContextManager[ArchiveReader]: ...
    def archive_conflicts(self, kind: str, records: Sequence[Mapping[str, Any]]) -> list[str]: ...
    def load_records(self, kind: str, records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
        """(added, already here); a `Conflict` when a record's id holds something else here."""
        ...


class JobStore(Protocol):
    """Durable job records: status changes only through the transition table, fenced by the lease."""

    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]: ...
    def create_job(self, new: NewJob) -> tuple[Job, bool]: ...
    def get_job(self, job_id: str) -> Job: ...
    def waiting_above(self, priority: int) -> bool: ...
    def list_jobs(self, status: str | None, kind: str | None, limit: int, before: str | None = None) -> list[Job]:
        """Newest first; `before` a job's id: only the jobs created before it (the next page)."""
        ...

    def count_jobs(self) -> dict[str, int]: ...
    def transition_job(self, job_id: str, target: JobStatus, *, owner: str | None = None, **fields: Any) -> Job: ...
    def claim_next_job(self, owner: str, lease_seconds: float, kinds: Iterable[str]) -> Job | None: ...
    def save_job_checkpoint(
        self, job_id: str, owner: str, checkpoint: Mapping[str, Any], progress: Progress, lease_seconds: float
    ) -> Job: ...
    def request_job_stop(self, job_id: str, *, pause: bool = False, cancel: bool = False) -> Job: ...
    def running_jobs(self) -> list[Job]: ...
    def renew_job_lease(self, job_id: str, owner: str, lease_seconds: float) -> bool: ...


class RequestKeyStore(Protocol):
    """Idempotency keys of agent writes (see `memcastle.store.sql.idempotency`)."""

    def claim_request_key(
        self, key: str, operation: str, digest: str, *, now: str, stale_before: str, expire_before: str
    ) -> RequestKey | None: ...
    def complete_request_key(self, key: str, result: Mapping[str, Any]) -> None: ...
    def release_request_key(self, key: str) -> None: ...


class AuditStore(Protocol):
    """The read audit: who read what, when, as ids (`memcastle.services.audit`)."""

    def record_reads(self, records: Sequence[ReadRecord]) -> None: ...
    def reads(self, query: ReadQuery) -> list[ReadRecord]: ...
    def count_reads(self) -> int: ...
    def prune_reads(self, before: str, keep: int) -> int:
        """Erase the records older than `before`, and the oldest beyond the newest `keep`; how many went."""
        ...


class IntegrityStore(Protocol):
    """The palace audit's checks and repairs (`memcastle.store.sql.integrity`)."""

    def check_names(self) -> list[str]: ...
    def find(self, name: str) -> Finding:
        """How many rows break the check `name`, with a few examples."""
        ...

    def fix(self, name: str, batch: int) -> int:
        """Repair up to `batch` of them in one transaction; how many (0 when none are left or it has no repair)."""
        ...

    def without_vectors(self, model: str) -> tuple[int, list[str]]:
        """How many drawers have no vector of `model`, counted one by one, and a few of their ids."""
        ...


class MinerStore(Protocol):
    """Miners defined through the API, and every miner's enabled state and last run."""

    def list_miner_states(self) -> list[MinerState]: ...
    def get_miner_state(self, name: str) -> MinerState | None: ...
    def define_miner(self, spec: MinerSpec, *, at: str) -> MinerState: ...
    def remove_miner(self, name: str) -> bool: ...
    def set_miner_enabled(self, name: str, enabled: bool, *, at: str) -> MinerState: ...
    def note_miner_run(self, name: str, job_id: str, trigger: str, *, at: str, enabled: bool = True) -> None: ...
    def note_delivery(self, miner: str, delivery_id: str, *, at: str, forget_before: str) -> bool:
        """Keep a webhook delivery's id; False when the miner already had it (a replay)."""
        ...


class CopyStore(Protocol):
    """A whole palace out and in (`memcastle migrate`); rows are plain dicts, the one place they cross the seam."""

    def export_rows(self, table: str) -> Iterator[dict[str, Any]]: ...
    def import_rows(self, tables: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]) -> dict[str, int]: ...


class SemanticStore(Protocol):
    """What the in-memory semantic index reads: vectors, places and eligibility."""

    @property
    def embeddings(self) -> EmbeddingStore: ...
    @property
    def search(self) -> SearchStore: ...


class KnowledgeStore(Protocol):
    """What reads and writes the graph beside the drawers it was read from (extraction, expansion, facts, dedup)."""

    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]: ...

    @property
    def graph(self) -> GraphStore: ...
    @property
    def entities(self) -> EntityStore: ...
    @property
    def facts(self) -> FactStore: ...
    @property
    def drawers(self) -> DrawerStore: ...
    @property
    def search(self) -> SearchStore: ...


class PipelineStore(Protocol):
    """What the mining pipeline writes through."""

    @property
    def mining(self) -> MiningStore: ...
    @property
    def drawers(self) -> DrawerStore: ...
    @property
    def near(self) -> NearStore: ...


class Store(Protocol):
    """Persistence of one palace, composed of one object per role; each consumer is handed the roles it uses."""

    backend: str
    location: str
    lifecycle: Lifecycle  # how long drawers live, applied when they are read (`memcastle.model.lifecycle`)

    @property
    def drawers(self) -> DrawerStore: ...
    @property
    def search(self) -> SearchStore: ...
    @property
    def embeddings(self) -> EmbeddingStore: ...
    @property
    def mining(self) -> MiningStore: ...
    @property
    def graph(self) -> GraphStore: ...
    @property
    def entities(self) -> EntityStore: ...
    @property
    def facts(self) -> FactStore: ...
    @property
    def near(self) -> NearStore: ...
    @property
    def forgetting(self) -> ForgetStore: ...
    @property
    def archive(self) -> ArchiveStore: ...
    @property
    def jobs(self) -> JobStore: ...
    @property
    def request_keys(self) -> RequestKeyStore: ...
    @property
    def miners(self) -> MinerStore: ...
    @property
    def copy(self) -> CopyStore: ...
    @property
    def audit(self) -> AuditStore: ...
    @property
    def integrity(self) -> IntegrityStore: ...

    def ids_with_prefix(self, kind: str, prefix: str, limit: int) -> list[str]: ...
    def close(self) -> None: ...
    def schema_version(self) -> int: ...


# The tables a palace copy moves, parents before children (`export_rows`, `import_rows`). Rows are plain dicts keyed
# by column name, the same on both backends: ids, sequence numbers and timestamps as stored, JSON columns as their
# exact JSON text, booleans as bool or 0/1, `embedding.vector` as a float32 numpy array, drawer content verbatim.
# Columns a backend derives (its full-text index, token counts, vector dimensions) are not part of a row: the target
# computes them. Jobs (`job`) are not copied: they are this palace's work history, not its memory.
PALACE_TABLES: tuple[str, ...] = (
    "wing",
    "room",
    "drawer",
    "drawer_context",
    "drawer_tag",
    "drawer_band",
    "drawer_signature",
    "near_pending",
    "source",
    "document",
    "embedding",
    "embedded",
    "entity",
    "entity_alias",
    "entity_key_variant",
    "entity_hint",
    "mention",
    "assertion",
    "fact_link",
    "extraction_read",
    "drawer_link",
    "tombstone",
    "miner",
)
