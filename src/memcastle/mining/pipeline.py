"""The shared mining pipeline (SPEC §2): revision check, chunking, supersession, then the cursor.

Each document is filed in one store transaction (its drawers, its document record and the source cursor), so a
crash between documents loses nothing and a replay lands on the same records: drawer ids derive from the job, the
document and the chunk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memcastle.clock import Clock, utc_now
from memcastle.connectors.contract import (
    Candidate,
    CanonicalDocument,
    Connector,
    RawDocument,
    SkipDocument,
    SourceSpec,
    revision_of,
)
from memcastle.connectors.project import find_project_settings
from memcastle.connectors.registry import ConnectorRegistry
from memcastle.connectors.secrets import RedactionTooCostly, Redactor, redact_document
from memcastle.errors import Conflict, InvalidRequest
from memcastle.jobs.context import JobContext
from memcastle.mining.chunking import chunk_spans, document_text, line_ranges
from memcastle.mining.params import MineParams, MineTally
from memcastle.mining.roots import MiningRoots
from memcastle.model import (
    DocumentChanges,
    DocumentRecord,
    Drawer,
    NearKeys,
    NewDrawer,
    Origin,
    Provenance,
    Source,
    SourceRecord,
    content_hash,
)
from memcastle.model.jobs import JobKind
from memcastle.store import PipelineStore

KIND = JobKind.MINE.value
_ID_NAMESPACE = uuid.UUID("5b0c6f0e-8a43-4c1e-9d8f-6f1d7a0d2c11")
CHECKPOINT_SECONDS = 0.5
# Documents filed together in one transaction: a commit per batch rather than per document, and a write lock held
# only as long as a batch's inserts take (a few tens of milliseconds), never while a document is read.
BATCH_DOCUMENTS = 64
BATCH_DRAWERS = 256
REMOVED_AT_SOURCE = "removed at source"
_OPAQUE = re.compile(r"[0-9a-f]{12,}")


def drawer_id_for(job_id: str, source_id: str, document: str, chunk: int) -> str:
    """Deterministic: a replayed job writes the same ids, so it can never duplicate a drawer."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{job_id}\x00{source_id}\x00{document}\x00{chunk}"))


@dataclass(frozen=True)
class MineLimits:
    """How long a drawer's text may be (`mining.chunk_chars`), and how many new or changed documents one mine files
    before it stops (`mining.max_documents`; 0: no bound)."""

    chunk_chars: int
    max_documents: int = 0


class MinePipeline:
    """Runs `mine` jobs on their `MineParams` (as `MiningService` queues them; the source's id is derived from
    connector, locator and options), the source checked
    against `mining.roots` again when the job starts; the job's checkpoint keeps where it was, so a crash resumes
    without duplicates."""

    def __init__(
        self,
        store: PipelineStore,
        registry: ConnectorRegistry,
        limits: MineLimits,
        *,
        roots: MiningRoots | None = None,
        link_copies: bool = True,
        redactor: Redactor | None = None,
        now: Clock = utc_now,
        on_filed: Callable[[str, Sequence[NewDrawer]], object] | None = None,
    ) -> None:
        # `mining.max_documents`: a mine stops once it has filed this many new or changed documents (0: no bound);
        # unchanged ones cost little and do not count, so the next mine goes on where this one stopped.
        self._max_documents = limits.max_documents
        self._store = store
        self._now = now
        self._on_filed = on_filed  # told of each document's new drawers (the live event stream)
        self._registry = registry
        self._roots = roots
        self._chunk_chars = limits.chunk_chars
        self._link_copies = link_copies  # queue filed drawers for the `link` sweep (`dedup.enabled`)
        self._redactor = redactor or Redactor()

    def run(self, ctx: JobContext) -> Mapping[str, Any]:
        params = MineParams.from_json(ctx.params)
        connector = self._registry.get(params.connector)
        spec = self._registry.source_spec(params.connector, params.locator, params.options)
        if self._roots is not None:
            # Checked again as the job starts: a symlink or `.git` file may point elsewhere than when it was asked.
            self._roots.check_source(connector, spec)
        source_id = connector.identify(spec)
        source = self._source(source_id, connector, spec)
        state = dict(ctx.state)
        tally = MineTally.from_json(state.get("tally", {}))
        start_cursor = state.get("start_cursor", None if params.full else source.cursor)
        try:
            candidates = list(connector.discover(spec, start_cursor))
        except SkipDocument as exc:
            tally.skip(spec.locator or connector.name, exc.reason)
            return {**tally.to_json(), "source_id": source_id}
        wing = params.wing or connector.default_wing(spec)
        default_room = _default_room(connector, spec)
        # A document is known by its external id in the palace; one holding a credential (a file named after a
        # token) is known by the redacted id, kept distinct by a digest of the original.
        keys = [self._document_key(candidate.external_id) for candidate in candidates]
        position = _resume_position(state, keys)
        if position == 0:
            tally = MineTally()  # discovery changed under a resumed job: count again from the start
        last_save = time.monotonic()
        filed = _Known(self._store, source_id)
        batch: list[_Prepared] = []  # documents read and cut, to be filed in one transaction
        batch_drawers = 0  # the new drawers of those documents
        taken, capped = int(state.get("taken", 0)), False
        for index in range(position, len(candidates)):
            candidate = candidates[index]
            if candidate.cursor_after is not None:
                # Filed with the document it follows: the cursor saved with a document is past that document.
                source = dataclasses.replace(source, cursor=candidate.cursor_after)
            target = _Target(ctx.job_id, connector, spec, source, wing, default_room)
            prepared = self._prepare(target, candidate, keys[index], tally, filed)
            if prepared is not None:
                batch.append(prepared)
                batch_drawers += prepared.drawers
                taken += 1
                capped = bool(self._max_documents) and taken >= self._max_documents
            due = time.monotonic() - last_save >= CHECKPOINT_SECONDS or index == len(candidates) - 1 or capped
            if due or len(batch) >= BATCH_DOCUMENTS or batch_drawers >= BATCH_DRAWERS:
                self._file(ctx.job_id, batch, tally)
                batch, batch_drawers = [], 0
            if due:  # what the checkpoint says was done is filed
                ctx.checkpoint(
                    {
                        "position": index + 1,
                        "last": keys[index],
                        "tally": tally.to_json(),
                        "start_cursor": start_cursor,
                        "taken": taken,
                    },
                    current=index + 1,
                    total=len(candidates),
                    message=prepared.label if prepared is not None else keys[index],
                )
                last_save = time.monotonic()
            if capped:
                break
        # Stopped by `mining.max_documents`, the listing was not gone through: nothing can be said removed.
        if not capped and notices_removal(connector, spec, params.notice_removed):
            self._close_removed(source_id, set(keys), tally)
        stopped = {"stopped": f"after {taken} new or changed documents (mining.max_documents): mine again to go on"}
        # Copies are linked by the `link` sweep that follows the mine (`knowledge.dedup`): evidence that repeats other
        # evidence is stored anyway and linked, never merged. Said here: how many drawers it still has to look at.
        pending = {"copies_pending": self._store.near.count_pending()} if self._link_copies else {}
        return {**tally.to_json(), "source_id": source_id, "wing": wing, **pending, **(stopped if capped else {})}

    def _source(self, source_id: str, connector: Connector, spec: SourceSpec) -> SourceRecord:
        """The source as the palace records it, its cursor kept from the last mine."""
        known = self._store.mining.get_source(source_id)
        return self._store.mining.upsert_source(
            SourceRecord(
                id=source_id,
                connector=connector.name,
                locator=spec.locator,
                options=dict(spec.options),
                cursor=known.cursor if known else None,
                updated_at=self._now(),
            )
        )

    def _close_removed(self, source_id: str, listed: set[str], tally: MineTally) -> None:
        """Everything the source holds was listed: a document with current drawers that is not there was removed."""
        for document in sorted(self._store.mining.current_documents(source_id) - listed):
            closed = self._store.mining.close_removed(source_id, document, REMOVED_AT_SOURCE)
            tally.counts["removed"] += closed
            tally.counts["removed_documents"] += 1

    def _document_key(self, external_id: str) -> str:
        redacted = self._redactor.text(external_id).text
        if redacted == external_id:
            return external_id
        return f"{redacted}#{hashlib.sha256(external_id.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"

    def _prepare(
        self, target: _Target, candidate: Candidate, key: str, tally: MineTally, known: _Known
    ) -> _Prepared | None:
        """Read, normalize, redact and cut one document into its changes (None when there is nothing to file)."""
        connector, spec, source = target.connector, target.spec, target.source
        tally.counts["documents"] += 1
        try:
            raw = connector.read(spec, candidate)
        except SkipDocument as exc:
            tally.skip(key, exc.reason)
            return None
        if raw.external_id != key:
            raw = replace(raw, external_id=key)
        for warning in raw.warnings:
            tally.warn(raw.external_id, warning)
        revision = revision_of(raw)
        filed_at = known.revisions.get(raw.external_id)
        if filed_at == revision:
            tally.counts["unchanged"] += 1
            return None
        record = self._store.mining.get_document(source.id, raw.external_id) if filed_at is not None else None
        try:
            document = connector.normalize(raw)
        except Exception as exc:  # noqa: BLE001 - one bad document must not abort the mine
            tally.skip(raw.external_id, f"could not be normalized: {type(exc).__name__}: {exc}")
            return None
        # Credentials never reach the store, the full-text index or the embedder.
        try:
            raw, document, found = redact_document(self._redactor, raw, document)
        except RedactionTooCostly as exc:
            tally.skip(raw.external_id, exc.reason)
            return None
        tally.redacted(found)
        reading = _Reading(target, raw, revision, document, record)
        changes = self._changes(reading, known)

        def unnamed() -> DocumentChanges:
            return self._changes(reading, known, named=False)

        room = changes_room(document, target.default_room)
        clash = f"name {document.name!r} is taken in {target.wing}/{room}; filed without a name"
        # An opaque key (a commit's hash) says nothing in a progress line: its document's name does.
        label = document.name if document.name and _OPAQUE.fullmatch(raw.external_id) else raw.external_id
        return _Prepared(raw.external_id, changes, unnamed, clash, label)

    def _file(self, job_id: str, batch: list[_Prepared], tally: MineTally) -> None:
        """File a batch of documents in one transaction (their drawers queued for the copies sweep). A name clash
        rolls the batch back, and its documents are filed one at a time: the one that clashes
        files its evidence unnamed."""
        if not batch:
            return
        try:
            self._store.mining.apply_documents([p.changes for p in batch])
            applied = [p.changes for p in batch]
        except Conflict:
            applied = []
            for prepared in batch:
                try:
                    self._store.mining.apply_document(prepared.changes)
                    applied.append(prepared.changes)
                except Conflict:
                    # A name clash with another document's drawer in the same room: file the evidence unnamed.
                    changes = prepared.unnamed()
                    self._store.mining.apply_document(changes)
                    applied.append(changes)
                    tally.warn(prepared.key, prepared.clash)
        for changes in applied:
            fresh = [*changes.created, *(new for _, new in changes.superseded)]
            tally.counts["created"] += len(changes.created)
            tally.counts["superseded"] += len(changes.superseded)
            tally.counts["invalidated"] += len(changes.invalidated)
            tally.counts["candidates"] += len(changes.candidates)
            if self._on_filed is not None and fresh:
                self._on_filed(job_id, fresh)

    def _changes(self, reading: _Reading, known: _Known, *, named: bool = True) -> DocumentChanges:
        raw, document, source, wing = reading.raw, reading.document, reading.target.source, reading.target.wing
        text = document_text(document.segments)
        spans = chunk_spans(document.segments, self._chunk_chars)
        chunks = [text[a:b] for a, b in spans]
        lines: list[tuple[int, int] | None] = (
            list(line_ranges(text, spans, raw.first_line)) if raw.first_line is not None else [None] * len(spans)
        )
        hashes = [content_hash(c) for c in chunks]
        room = changes_room(document, reading.target.default_room)
        old = self._previous_drawers(reading.record, wing, room, hashes, known)
        created: list[NewDrawer] = []
        superseded: list[tuple[str, NewDrawer]] = []
        candidates: list[tuple[str, NewDrawer]] = []
        drawer_ids: list[str] = []
        for index, chunk in enumerate(chunks):
            previous = old[index] if index < len(old) else None
            if previous is not None and _is_kept(previous, hashes[index], lines[index], raw, wing, room):
                drawer_ids.append(previous.id)
                continue
            head = self._correction_of(previous) if previous is not None and not previous.is_current else None
            if previous is not None and head is not None and previous.content_hash == hashes[index]:
                drawer_ids.append(previous.id)  # the source still says what was corrected: nothing new
                continue
            new = reading.drawer(room, index, chunk, lines[index], named=named)
            drawer_ids.append(new.id or "")
            if head is not None:
                candidates.append((head.id, new))  # the correction stays current; the source's text beside it
            elif previous is not None and previous.is_current:
                superseded.append((previous.id, new))
            else:
                created.append(new)
        invalidated = tuple(d.id for d in old[len(chunks) :] if d is not None and d.is_current)
        fresh = [*created, *(new for _, new in superseded)]
        # Queued for the copies sweep, which computes their keys (a fifth of a mine's CPU when done here).
        near = tuple(NearKeys(new.id or "") for new in fresh) if self._link_copies else ()
        closing = [d for d in old if d is not None and d.id in {*invalidated, *(i for i, _ in superseded)}]
        return DocumentChanges(
            source=source,
            record=DocumentRecord(
                source_id=source.id,
                external_id=raw.external_id,
                revision=reading.revision,
                chunk_hashes=tuple(hashes),
                drawer_ids=tuple(drawer_ids),
                updated_at=self._now(),
            ),
            created=tuple(created),
            superseded=tuple(superseded),
            invalidated=invalidated,
            candidates=tuple(candidates),
            at=self._event_time(raw, closing),
            near=near,
        )

    def _event_time(self, raw: RawDocument, closing: list[Drawer]) -> str | None:
        """When this revision happened, as the instant its drawers open and the ones it replaces close: the
        document's event time, never later than now, and only when it is after every version it closes opened (a
        source whose clock went backwards); else None, the moment of mining."""
        if raw.occurred_at is None:
            return None
        event = min(raw.occurred_at, self._now())
        if any(event <= drawer.valid_from for drawer in closing):
            return None
        return event

    def _previous_drawers(
        self, record: DocumentRecord | None, wing: str, room: str, hashes: Sequence[str], known: _Known
    ) -> list[Drawer | None]:
        """What each chunk was filed as before: the document's recorded drawers; for a document new to this source
        (a file renamed or moved back), a closed drawer of the room holding the same text whose line a correction
        took over — so the rename does not bring the corrected text back as current."""
        if record is None:
            if not known.superseded(wing, room):
                return []  # nothing closed by a supersession in the room: no line a correction took over
            corrected = self._store.drawers.corrected_lines(wing, room, hashes)
            return [corrected.get(h) for h in hashes] if corrected else []
        found = self._store.drawers.get_drawers(record.drawer_ids)
        return [found.get(drawer_id) for drawer_id in record.drawer_ids]

    def _correction_of(self, previous: Drawer) -> Drawer | None:
        """The current drawer that took over a closed one's line by a correction (an agent's or a person's
        supersession, not a mine's): the end of its `superseded_by` chain, when that end is current and no mine
        filed it (ADR 0044)."""
        node, seen = previous, {previous.id}
        while node.superseded_by and node.superseded_by not in seen:
            following = self._store.drawers.get_drawers([node.superseded_by]).get(node.superseded_by)
            if following is None:
                return None
            node = following
            seen.add(node.id)
        if node.id == previous.id or not node.is_current or node.provenance.requested_by == "job":
            return None
        return node


class _Known:
    """What one mine reads once rather than per document: the source's filed revisions, and which rooms hold a
    superseded drawer (only those can hold a line a correction took over)."""

    def __init__(self, store: PipelineStore, source_id: str) -> None:
        self._store = store
        self.revisions = store.mining.document_revisions(source_id)
        self._rooms: dict[tuple[str, str], bool] = {}

    def superseded(self, wing: str, room: str) -> bool:
        if (wing, room) not in self._rooms:
            self._rooms[(wing, room)] = self._store.drawers.any_superseded(wing, room)
        return self._rooms[(wing, room)]


@dataclass(frozen=True)
class _Target:
    """What one mine files into: its job, the connector and source, and the wing and room a document goes to."""

    job_id: str
    connector: Connector
    spec: SourceSpec
    source: SourceRecord
    wing: str
    default_room: str


@dataclass(frozen=True)
class _Reading:
    """One document as read for a mine: as the source has it, its revision, as normalized, and as last filed."""

    target: _Target
    raw: RawDocument
    revision: str
    document: CanonicalDocument
    record: DocumentRecord | None

    def drawer(self, room: str, index: int, chunk: str, lines: tuple[int, int] | None, *, named: bool) -> NewDrawer:
        """The drawer the document's `index`th chunk becomes, with its whole origin."""
        target, raw, document = self.target, self.raw, self.document
        return NewDrawer(
            id=drawer_id_for(target.job_id, target.source.id, raw.external_id, index),
            wing=target.wing,
            room=room,
            content=chunk,
            name=document.name if (index == 0 and named) else None,
            tags=tuple(document.tags),
            source=Source(
                kind=document.kind or target.connector.source_kind,
                uri=document.uri or raw.uri,
                origin=Origin(
                    connector=target.connector.name,
                    source_id=target.source.id,
                    document=raw.external_id,
                    chunk=index,
                    revision=self.revision,
                    metadata=dict(raw.metadata),
                    occurred_at=raw.occurred_at,
                    lines=lines,
                ),
            ),
            provenance=Provenance(requested_by="job", job_id=target.job_id),
        )


@dataclass(frozen=True)
class _Prepared:
    """A document read and cut into its changes, waiting for its batch's transaction."""

    key: str
    changes: DocumentChanges
    unnamed: Callable[[], DocumentChanges]  # the same changes with the first drawer unnamed, for a name clash
    clash: str  # the warning when it came to that
    label: str = ""  # what the progress says of it: its name (a commit's short id and subject), else its key

    @property
    def drawers(self) -> int:
        return len(self.changes.created) + len(self.changes.superseded)


def notices_removal(connector: Connector, spec: SourceSpec, asked: bool | None) -> bool:
    """Whether a mine closes the drawers of documents the source no longer holds: as asked, else the connector's
    default; never when its discovery does not list everything (`InvalidRequest` when asked for then)."""
    complete = connector.lists_everything(spec)
    if asked and not complete:
        raise InvalidRequest(
            f"the {connector.name} connector does not list every document of this source, so it cannot tell one "
            "that was removed",
            field="notice_removed",
            help="drop notice_removed (or the option that narrows the listing, such as since)",
        )
    wanted = connector.notices_removal if asked is None else asked
    return wanted and complete


def changes_room(document: CanonicalDocument, default_room: str) -> str:
    return document.room or default_room


def _is_kept(
    previous: Drawer, new_hash: str, lines: tuple[int, int] | None, raw: RawDocument, wing: str, room: str
) -> bool:
    """A chunk is kept only when its text, its lines in the document, its document's metadata snapshot and its place
    are all unchanged: evidence that moved in its file is filed anew with the lines it now has (ADR 0020). A chunk
    filed before lines were recorded has none, and is kept when the rest holds."""
    origin = previous.source.origin
    return (
        previous.is_current
        and previous.content_hash == new_hash
        and origin is not None
        and origin.lines in (lines, None)  # a chunk filed before lines were recorded is kept while it stays put
        and dict(origin.metadata) == dict(raw.metadata)
        and origin.occurred_at == raw.occurred_at
        and previous.wing == wing
        and previous.room == room
    )


def _default_room(connector: Connector, spec: SourceSpec) -> str:
    project = find_project_settings(Path(spec.locator)) if spec.locator else None
    if project and project.room:
        return project.room
    return connector.default_room or connector.name


def _resume_position(state: Mapping[str, Any], keys: list[str]) -> int:
    """Skip what a previous run of this job already filed, when discovery still lists it in the same place."""
    position = int(state.get("position", 0))
    if 0 < position <= len(keys) and keys[position - 1] == state.get("last"):
        return position
    return 0
