"""Sources and documents on either SQL backend, and the one order in which a mined document's changes land."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memcastle.model import DocumentChanges, DocumentRecord, SourceRecord
from memcastle.store.sql.base import Role, SqlStore, Tx, dumps
from memcastle.store.sql.drawers import DrawerTables
from memcastle.store.sql.near import NearTables
from memcastle.store.sql.rows import document_from_row, source_from_row


class MiningTables(Role):
    """Mining records: a source's cursor, each document's revision and drawers."""

    def __init__(self, db: SqlStore, drawers: DrawerTables, near: NearTables) -> None:
        super().__init__(db)
        self.drawers = drawers
        self.near = near

    def upsert_source(self, source: SourceRecord) -> SourceRecord:
        with self._write() as tx:
            tx.run(
                "INSERT INTO source(id, connector, locator, options, cursor, updated_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT (id) DO UPDATE SET locator = excluded.locator, options = excluded.options",
                (
                    source.id,
                    source.connector,
                    source.locator,
                    dumps(dict(source.options)),
                    source.cursor,
                    source.updated_at,
                ),
            )
        found = self.get_source(source.id)
        assert found is not None
        return found

    def get_source(self, source_id: str) -> SourceRecord | None:
        row = self._one("SELECT * FROM source WHERE id = ?", (source_id,))
        return source_from_row(row) if row else None

    def list_sources(self) -> list[tuple[SourceRecord, int, int]]:
        """Every mined source with how many documents it has and how many current drawers came from it."""
        rows = self._all(
            "SELECT s.*, (SELECT COUNT(*) FROM document o WHERE o.source_id = s.id) AS documents, "
            "(SELECT COUNT(*) FROM drawer d WHERE d.source_id = s.id AND d.valid_to IS NULL) AS drawers "
            "FROM source s ORDER BY s.connector, s.locator, s.id"
        )
        return [(source_from_row(r), int(r["documents"]), int(r["drawers"])) for r in rows]

    def sources_at(self, locator: str) -> list[SourceRecord]:
        """The sources mined from this locator, by any connector, that still hold drawers (a forgotten source's
        record stays, empty)."""
        rows = self._all(
            "SELECT * FROM source s WHERE s.locator = ? "
            "AND EXISTS (SELECT 1 FROM drawer d WHERE d.source_id = s.id) ORDER BY s.id",
            (locator,),
        )
        return [source_from_row(r) for r in rows]

    def get_document(self, source_id: str, external_id: str) -> DocumentRecord | None:
        row = self._one("SELECT * FROM document WHERE source_id = ? AND external_id = ?", (source_id, external_id))
        return document_from_row(row) if row else None

    def document_revisions(self, source_id: str) -> dict[str, str]:
        """Each document of the source the palace has a record of, with the revision it was filed at: one read per
        mine, so an unchanged document or one new to the source costs no query of its own."""
        rows = self._all("SELECT external_id, revision FROM document WHERE source_id = ?", (source_id,))
        return {r["external_id"]: r["revision"] for r in rows}

    def current_documents(self, source_id: str) -> set[str]:
        """The documents of a source that still have current drawers."""
        rows = self._all(
            f"SELECT DISTINCT document FROM drawer WHERE source_id = ? AND {self.NO_INDEX}valid_to IS NULL",
            (source_id,),
        )
        return {r["document"] for r in rows}

    def close_removed(self, source_id: str, document: str, reason: str) -> int:
        """Close a document's current drawers now, with `reason`, and drop its record (a document that comes back
        is mined as new); how many drawers closed. A correction of one of its drawers (an agent's or a person's,
        keeping the document's origin) is no longer what the source says, and stays (ADR 0044)."""
        with self._write() as tx:
            at = self._now()
            rows = [
                row
                for row in tx.all(
                    "SELECT id, provenance FROM drawer WHERE source_id = ? AND document = ? "
                    f"AND {self.NO_INDEX}valid_to IS NULL",
                    (source_id, document),
                )
                if mined(row["provenance"])
            ]
            for row in rows:
                self.drawers._close_current(tx, row["id"], at, None, reason=reason)
            tx.run("DELETE FROM document WHERE source_id = ? AND external_id = ?", (source_id, document))
        return len(rows)

    def _stored(self, tx: Tx, drawer_id: str) -> bool:
        return tx.one("SELECT 1 AS found FROM drawer WHERE id = ?", (drawer_id,)) is not None

    def apply_document(self, changes: DocumentChanges) -> None:
        """Invalidate, supersede, create, record the document, then move the cursor: all in one transaction."""
        self.apply_documents([changes])

    def apply_documents(self, batch: Sequence[DocumentChanges]) -> None:
        """`apply_document` for several documents in one transaction, in order: all land or none does (a mine
        files a batch at a time, so a commit is paid per batch, not per document)."""
        rooms: dict[tuple[str, str], int] = {}
        with self._write() as tx:
            for changes in batch:
                self._apply(tx, changes, rooms)
            # Each source's cursor moves with the last of its documents: all of them land in this transaction or
            # none does.
            cursors = {changes.source.id: changes.source.cursor for changes in batch}
            recorded = self._now()
            for source_id, cursor in cursors.items():
                tx.run("UPDATE source SET cursor = ?, updated_at = ? WHERE id = ?", (cursor, recorded, source_id))
            # The new drawers' copies are linked later, a batch at a time (`knowledge.dedup`).
            self.near.insert_keys(tx, [keys for changes in batch for keys in changes.near])

    def _apply(self, tx: Tx, changes: DocumentChanges, rooms: dict[tuple[str, str], int]) -> None:
        recorded = self._now()
        at = changes.at or recorded
        record = changes.record
        # A drawer forgotten since the document was read is no longer there to close: its chunk is filed anew.
        for drawer_id in changes.invalidated:
            if self._stored(tx, drawer_id):
                self.drawers._close_current(tx, drawer_id, at, None, recorded=recorded)
        for old_id, replacement in changes.superseded:
            if self._stored(tx, old_id):
                self.drawers._supersede(tx, old_id, replacement, at, recorded)
            else:
                self.drawers._insert_drawer(tx, replacement, at, recorded=recorded, rooms=rooms)
        for new in changes.created:
            self.drawers._insert_drawer(tx, new, at, recorded=recorded, rooms=rooms)
        for head_id, new in changes.candidates:
            self.drawers._file_candidate(tx, head_id, new, at, recorded=recorded, rooms=rooms)
        tx.run(
            "INSERT INTO document(source_id, external_id, revision, chunk_hashes, drawer_ids, updated_at) "
            "VALUES (?,?,?,?,?,?) ON CONFLICT (source_id, external_id) DO UPDATE SET "
            "revision = excluded.revision, chunk_hashes = excluded.chunk_hashes, "
            "drawer_ids = excluded.drawer_ids, updated_at = excluded.updated_at",
            (
                record.source_id,
                record.external_id,
                record.revision,
                dumps(list(record.chunk_hashes)),
                dumps(list(record.drawer_ids)),
                recorded,
            ),
        )


def mined(provenance: object) -> bool:
    """Whether a drawer's provenance (its stored JSON) says a mine job filed it."""
    data = json.loads(provenance) if isinstance(provenance, str) else provenance
    return isinstance(data, dict) and data.get("requested_by") == "job"
