"""Forgetting on either SQL backend: a scope's drawers and everything derived from them, in one transaction.

The drawers of the scope are gathered into a temporary table first; every derived table is then cleared by a join on
it, children before parents: passage vectors, tags, near-duplicate bands and signatures, extraction markers, mentions,
duplicate links, facts whose only evidence goes (facts with other evidence stay, without it), entities nothing refers
to any more, the aliases only forgotten text taught, idempotency records of the writes, the chunk hashes of document
records, then the drawers and their full-text entries. A dry run counts the same set and rolls back.
"""

from __future__ import annotations

import json
import re
import uuid
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from memcastle.errors import NotFound
from memcastle.model import (
    DocumentScope,
    DrawerScope,
    ForgetReport,
    ForgetScope,
    ForgottenDrawer,
    LexicalQuery,
    RoomScope,
    SourceScope,
    Tombstone,
    WingScope,
    normalize_text,
)
from memcastle.model.forgetting import COUNTS, PREVIEW_DRAWERS
from memcastle.store.sql.base import Role, Tx, dumps
from memcastle.store.sql.filters import filter_sql

_SET = "(SELECT id FROM forget_set)"
_SEQS = "(SELECT seq FROM forget_set)"
_GONE_FACTS = "(SELECT id FROM forget_fact WHERE keep = 0)"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PREVIEW_CHARS = 120


class _DryRun(Exception):
    """Rolls a dry run's transaction back once its report is made."""

    def __init__(self, report: ForgetReport) -> None:
        self.report = report


class ForgetTables(Role):
    """`forget`: erase a scope's drawers and what derives from them; `tombstones`: what forgets left."""

    @abstractmethod
    def _match_sql(self, query: LexicalQuery) -> tuple[str, list[Any]]:
        """A predicate over `drawer d` that holds when its text matches every term (each backend's full-text)."""

    def _erase_fulltext(self, tx: Tx) -> None:
        """Remove the full-text entries of the drawers in `forget_set` (before their rows go), so that nothing of
        their words stays in the index: SQLite's external-content index needs it, PostgreSQL's lives in the row."""

    def _after_erase(self, tx: Tx) -> None:
        """Backend work once the rows of the drawers in `forget_set` are gone, in the same transaction (SQLite: the
        drawers beside them lose their words from their full-text context)."""

    def _after_forget(self) -> None:
        """Backend work once a forget has committed (SQLite: empty the write-ahead log)."""

    def forget(self, scope: ForgetScope, *, dry_run: bool, requested_by: str) -> ForgetReport:
        try:
            with self._write() as tx:
                report = self._forget(tx, scope, dry_run=dry_run, requested_by=requested_by)
                if dry_run:
                    raise _DryRun(report)
        except _DryRun as done:
            return done.report
        self._after_forget()
        return report

    def tombstones(self, limit: int) -> list[Tombstone]:
        rows = self._all("SELECT * FROM tombstone ORDER BY at DESC, id DESC LIMIT ?", (limit,))
        return [
            Tombstone(r["id"], r["at"], r["requested_by"], json.loads(r["scope"]), json.loads(r["counts"]))
            for r in rows
        ]

    # --- one forget, inside its transaction ------------------------------------------------------

    def _forget(self, tx: Tx, scope: ForgetScope, *, dry_run: bool, requested_by: str) -> ForgetReport:
        at = self._now()
        tx.run("CREATE TEMP TABLE forget_set (seq BIGINT PRIMARY KEY, id TEXT NOT NULL UNIQUE)")
        tx.run("CREATE TEMP TABLE forget_fact (id TEXT PRIMARY KEY, keep INTEGER NOT NULL)")
        tx.run("CREATE TEMP TABLE forget_entity (id TEXT PRIMARY KEY)")
        try:
            places = self._gather(tx, scope)
            counts, preview = self._tally(tx, places)
            if dry_run:
                return ForgetReport(scope, True, counts, preview)
            drawer_ids = tuple(r["id"] for r in tx.all("SELECT id FROM forget_set ORDER BY seq"))
            self._erase(tx, places)
            tombstone = Tombstone(str(uuid.uuid4()), at, requested_by, scope.to_json(), counts)
            tx.run(
                "INSERT INTO tombstone(id, at, requested_by, scope, counts) VALUES (?,?,?,?,?)",
                (tombstone.id, at, requested_by, dumps(dict(tombstone.scope)), dumps(dict(counts))),
            )
            return ForgetReport(scope, False, counts, preview, drawer_ids, tombstone)
        finally:
            for table in ("forget_set", "forget_fact", "forget_entity"):
                tx.run(f"DROP TABLE IF EXISTS {table}")

    def _gather(self, tx: Tx, scope: ForgetScope) -> dict[str, list[int]]:
        """Fill `forget_set` with the scope's drawers; the rooms and wings that go with it ({"rooms", "wings"})."""
        insert = "INSERT INTO forget_set(seq, id) SELECT d.seq, d.id FROM drawer d"
        rooms: list[int] = []
        wings: list[int] = []
        if isinstance(scope, DrawerScope):
            tx.many("INSERT INTO forget_set(seq, id) VALUES (?, ?)", self._chain(tx, scope.drawer_id))
        elif isinstance(scope, DocumentScope):
            tx.run(f"{insert} WHERE d.source_id = ? AND d.document = ?", (scope.source_id, scope.document))
            if tx.one("SELECT 1 AS found FROM forget_set") is None and self._document_unknown(tx, scope):
                raise NotFound(f"no document {scope.document!r} in source {scope.source_id}")
        elif isinstance(scope, SourceScope):
            if tx.one("SELECT 1 AS found FROM source WHERE id = ?", (scope.source_id,)) is None:
                raise NotFound(f"no source {scope.source_id}")
            tx.run(f"{insert} WHERE d.source_id = ?", (scope.source_id,))
        elif isinstance(scope, RoomScope | WingScope):
            wing = tx.one("SELECT id FROM wing WHERE name = ?", (scope.wing,))
            if wing is None:
                raise NotFound(f"no wing {scope.wing!r}")
            if isinstance(scope, RoomScope):
                room = tx.one("SELECT id FROM room WHERE wing_id = ? AND name = ?", (wing["id"], scope.room))
                if room is None:
                    raise NotFound(f"no room {scope.room!r} in wing {scope.wing!r}")
                rooms = [int(room["id"])]
            else:
                rooms = [int(r["id"]) for r in tx.all("SELECT id FROM room WHERE wing_id = ?", (wing["id"],))]
                wings = [int(wing["id"])]
            for room_id in rooms:
                tx.run(f"{insert} WHERE d.room_id = ?", (room_id,))
        else:
            match, match_params = self._match_sql(scope.query)
            where, params = filter_sql(scope.filters, self._now(), self.lifecycle, self.backend)
            tx.run(
                f"{insert} JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id WHERE {match}{where}",
                (*match_params, *params),
            )
        return {"rooms": rooms, "wings": wings}

    def _chain(self, tx: Tx, drawer_id: str) -> list[tuple[int, str]]:
        """A drawer and every version before and after it."""
        start = tx.one("SELECT seq, id, supersedes, superseded_by FROM drawer WHERE id = ?", (drawer_id,))
        if start is None:
            raise NotFound(f"no drawer {drawer_id}")
        found = {start["id"]: int(start["seq"])}
        for step in ("supersedes", "superseded_by"):
            following = start[step]
            while following and following not in found:
                node = tx.one("SELECT seq, id, supersedes, superseded_by FROM drawer WHERE id = ?", (following,))
                if node is None:
                    break
                found[node["id"]] = int(node["seq"])
                following = node[step]
        return [(seq, drawer) for drawer, seq in found.items()]

    def _document_unknown(self, tx: Tx, scope: DocumentScope) -> bool:
        return (
            tx.one(
                "SELECT 1 AS found FROM document WHERE source_id = ? AND external_id = ?",
                (scope.source_id, scope.document),
            )
            is None
        )

    def _tally(self, tx: Tx, places: dict[str, list[int]]) -> tuple[dict[str, int], tuple[ForgottenDrawer, ...]]:
        """How much goes, with the decision of which facts stay (`forget_fact`) and which entities are touched."""

        def n(sql: str, params: Sequence[Any] = ()) -> int:
            row = tx.one(sql, params)
            return int(row["n"] or 0) if row else 0

        # A fact stays when a person stated it, or when a confirming fact rests on evidence that stays.
        tx.run(
            "INSERT INTO forget_fact(id, keep) SELECT a.id, CASE WHEN a.explicit THEN 1 "
            "WHEN EXISTS (SELECT 1 FROM fact_link l JOIN assertion o ON o.id = l.to_id WHERE l.from_id = a.id "
            f"AND l.kind = 'confirms' AND (o.explicit OR o.drawer_id NOT IN {_SET})) THEN 1 "
            "WHEN EXISTS (SELECT 1 FROM fact_link l JOIN assertion o ON o.id = l.from_id WHERE l.to_id = a.id "
            f"AND l.kind = 'confirms' AND (o.explicit OR o.drawer_id NOT IN {_SET})) THEN 1 ELSE 0 END "
            f"FROM assertion a WHERE a.drawer_id IN {_SET}"
        )
        # A fact kept earlier without evidence of its own leans on its confirmations: it goes with the last of them.
        supported = f"(o.explicit OR (o.drawer_id IS NOT NULL AND o.drawer_id NOT IN {_SET}))"
        while tx.run(
            "INSERT INTO forget_fact(id, keep) SELECT a.id, 0 FROM assertion a WHERE a.drawer_id IS NULL "
            "AND NOT a.explicit AND a.id NOT IN (SELECT id FROM forget_fact) AND EXISTS (SELECT 1 FROM fact_link l "
            f"WHERE l.kind = 'confirms' AND ((l.from_id = a.id AND l.to_id IN {_GONE_FACTS}) "
            f"OR (l.to_id = a.id AND l.from_id IN {_GONE_FACTS}))) "
            "AND NOT EXISTS (SELECT 1 FROM fact_link l JOIN assertion o ON o.id = l.to_id WHERE l.from_id = a.id "
            f"AND l.kind = 'confirms' AND {supported}) "
            "AND NOT EXISTS (SELECT 1 FROM fact_link l JOIN assertion o ON o.id = l.from_id WHERE l.to_id = a.id "
            f"AND l.kind = 'confirms' AND {supported})"
        ):
            pass
        tx.run(
            "INSERT INTO forget_entity(id) SELECT DISTINCT entity_id FROM mention "
            f"WHERE drawer_id IN {_SET} "
            f"UNION SELECT subject FROM assertion WHERE id IN {_GONE_FACTS} "
            f"UNION SELECT object FROM assertion WHERE id IN {_GONE_FACTS}"
        )
        counts = dict.fromkeys(COUNTS, 0)
        counts["versions"] = n("SELECT COUNT(*) AS n FROM forget_set")
        counts["drawers"] = n(
            f"SELECT COUNT(*) AS n FROM drawer d WHERE d.seq IN {_SEQS} "
            f"AND (d.superseded_by IS NULL OR d.superseded_by NOT IN {_SET})"
        )
        counts["passages"] = n(f"SELECT COUNT(*) AS n FROM embedding WHERE drawer_seq IN {_SEQS}")
        counts["facts"] = n("SELECT COUNT(*) AS n FROM forget_fact WHERE keep = 0")
        counts["facts_kept"] = n("SELECT COUNT(*) AS n FROM forget_fact WHERE keep = 1")
        counts["fact_links"] = n(
            f"SELECT COUNT(*) AS n FROM fact_link WHERE from_id IN {_GONE_FACTS} OR to_id IN {_GONE_FACTS}"
        )
        counts["mentions"] = n(f"SELECT COUNT(*) AS n FROM mention WHERE drawer_id IN {_SET}")
        counts["entities"] = self._orphans(tx)
        counts["drawer_links"] = n(f"SELECT COUNT(*) AS n FROM drawer_link WHERE from_id IN {_SET} OR to_id IN {_SET}")
        counts["documents"] = n(
            f"SELECT COUNT(*) AS n FROM (SELECT DISTINCT source_id, document FROM drawer WHERE seq IN {_SEQS} "
            "AND source_id IS NOT NULL) AS docs"
        )
        counts["rooms"] = len(places["rooms"])
        counts["wings"] = len(places["wings"])
        rows = tx.all(
            "SELECT d.id, w.name AS wing, r.name AS room, d.valid_from, d.valid_to, d.document, "
            f"substr(d.content, 1, {_PREVIEW_CHARS}) AS preview FROM drawer d JOIN room r ON r.id = d.room_id "
            f"JOIN wing w ON w.id = r.wing_id WHERE d.seq IN {_SEQS} ORDER BY d.seq LIMIT ?",
            (PREVIEW_DRAWERS,),
        )
        preview = tuple(
            ForgottenDrawer(
                r["id"],
                r["wing"],
                r["room"],
                r["valid_from"],
                r["valid_to"],
                r["document"],
                " ".join(r["preview"].split()),
            )
            for r in rows
        )
        return counts, preview

    def _orphans(self, tx: Tx) -> int:
        """How many touched entities nothing will mention or state a fact about once the forget is done."""
        row = tx.one(
            "SELECT COUNT(*) AS n FROM forget_entity e "
            f"WHERE NOT EXISTS (SELECT 1 FROM mention m WHERE m.entity_id = e.id AND m.drawer_id NOT IN {_SET}) "
            f"AND NOT EXISTS (SELECT 1 FROM assertion a WHERE a.subject = e.id AND a.id NOT IN {_GONE_FACTS}) "
            f"AND NOT EXISTS (SELECT 1 FROM assertion a WHERE a.object = e.id AND a.id NOT IN {_GONE_FACTS})"
        )
        return int(row["n"] or 0) if row else 0

    def _erase(self, tx: Tx, places: dict[str, list[int]]) -> None:
        spellings = tx.all(f"SELECT DISTINCT entity_id, spelling FROM mention WHERE drawer_id IN {_SET}")
        for table, column in (
            ("embedding", "drawer_seq"),
            ("embedded", "drawer_seq"),
            ("drawer_tag", "drawer_seq"),
            ("drawer_band", "drawer_seq"),
            ("drawer_signature", "drawer_seq"),
            ("near_pending", "drawer_seq"),
        ):
            tx.run(f"DELETE FROM {table} WHERE {column} IN {_SEQS}")
        for table in ("extraction_read", "mention"):
            tx.run(f"DELETE FROM {table} WHERE drawer_id IN {_SET}")
        tx.run(f"DELETE FROM drawer_link WHERE from_id IN {_SET} OR to_id IN {_SET}")
        # The read audit keeps who read what as ids: a forgotten drawer's, and its facts', go from it, with the
        # queries that found them (a query is about what it found: the words of a forgotten drawer stay nowhere).
        found = f"(SELECT audit_id FROM read_audit_item WHERE item_id IN {_SET} OR item_id IN {_GONE_FACTS})"
        tx.run(f"UPDATE read_audit SET query = NULL WHERE id IN {found}")
        tx.run(f"DELETE FROM read_audit_item WHERE item_id IN {_SET} OR item_id IN {_GONE_FACTS}")
        # Facts: those with other evidence lose the forgotten one; the others go with their links.
        tx.run(
            "UPDATE assertion SET drawer_id = NULL, origin = NULL, job_id = NULL "
            "WHERE id IN (SELECT id FROM forget_fact WHERE keep = 1)"
        )
        tx.run(f"DELETE FROM fact_link WHERE from_id IN {_GONE_FACTS} OR to_id IN {_GONE_FACTS}")
        tx.run(f"UPDATE fact_link SET evidence_drawer = NULL WHERE evidence_drawer IN {_SET}")
        tx.run(f"DELETE FROM assertion WHERE id IN {_GONE_FACTS}")
        # What is left in forget_entity is what nothing refers to any more.
        tx.run(
            "DELETE FROM forget_entity WHERE EXISTS (SELECT 1 FROM mention m WHERE m.entity_id = forget_entity.id) "
            "OR EXISTS (SELECT 1 FROM assertion a WHERE a.subject = forget_entity.id) "
            "OR EXISTS (SELECT 1 FROM assertion a WHERE a.object = forget_entity.id)"
        )
        orphans = [r["id"] for r in tx.all("SELECT id FROM forget_entity")]
        gone = "(SELECT id FROM forget_entity)"
        for table, column in (("entity_alias", "entity_id"), ("entity_key_variant", "entity_id")):
            tx.run(f"DELETE FROM {table} WHERE {column} IN {gone}")
        tx.run(f"DELETE FROM entity_hint WHERE entity_id IN {gone} OR other_id IN {gone}")
        tx.run(f"DELETE FROM entity WHERE id IN {gone}")
        self._unlearn_aliases(tx, [(r["entity_id"], r["spelling"]) for r in spellings], set(orphans))
        self._erase_requests(tx)
        self._blank_documents(tx)
        # The versions that stay no longer point at forgotten ones.
        tx.run(f"UPDATE drawer SET supersedes = NULL WHERE supersedes IN {_SET} AND seq NOT IN {_SEQS}")
        tx.run(f"UPDATE drawer SET superseded_by = NULL WHERE superseded_by IN {_SET} AND seq NOT IN {_SEQS}")
        self._erase_fulltext(tx)
        tx.run(f"DELETE FROM drawer WHERE seq IN {_SEQS}")
        self._after_erase(tx)
        for room_id in places["rooms"]:
            tx.run("DELETE FROM room WHERE id = ?", (room_id,))
        for wing_id in places["wings"]:
            tx.run("DELETE FROM wing WHERE id = ?", (wing_id,))

    def _unlearn_aliases(self, tx: Tx, spellings: list[tuple[str, str]], orphans: set[str]) -> None:
        """An alias is a spelling that extraction learnt; one that only forgotten text used is forgotten too."""
        for entity_id, spelling in spellings:
            if entity_id in orphans:
                continue
            if tx.one("SELECT 1 AS found FROM mention WHERE entity_id = ? AND spelling = ?", (entity_id, spelling)):
                continue
            row = tx.one(f"SELECT name, aliases FROM entity WHERE id = ?{self.FOR_UPDATE}", (entity_id,))
            if row is None or spelling == row["name"]:
                continue
            aliases = [a for a in json.loads(row["aliases"]) if a != spelling]
            tx.run("UPDATE entity SET aliases = ? WHERE id = ?", (dumps(aliases), entity_id))
            key = normalize_text(spelling)
            if all(normalize_text(a) != key for a in aliases):
                tx.run("DELETE FROM entity_alias WHERE entity_id = ? AND alias_key = ?", (entity_id, key))

    def _erase_requests(self, tx: Tx) -> None:
        """Idempotency records answer a retry with the drawers a write made: those of forgotten drawers go."""
        rows = tx.all("SELECT key, result FROM request_key WHERE result IS NOT NULL")
        if not rows:
            return
        gone: set[str] = set()
        named = {r["key"]: set(_UUID.findall(str(r["result"]))) for r in rows}
        wanted = sorted(set().union(*named.values()))
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            gone.update(
                r["id"] for r in tx.all(f"SELECT id FROM forget_set WHERE id IN ({','.join('?' * len(batch))})", batch)
            )
        tx.many("DELETE FROM request_key WHERE key = ?", [(k,) for k, ids in named.items() if ids & gone])

    def _blank_documents(self, tx: Tx) -> None:
        """A document record keeps its revision (an unchanged document is not mined back) but no hash of a
        forgotten chunk."""
        docs = tx.all(f"SELECT DISTINCT source_id, document FROM drawer WHERE seq IN {_SEQS} AND source_id IS NOT NULL")
        for doc in docs:
            row = tx.one(
                "SELECT drawer_ids, chunk_hashes FROM document WHERE source_id = ? AND external_id = ?"
                f"{self.FOR_UPDATE}",
                (doc["source_id"], doc["document"]),
            )
            if row is None:
                continue
            ids, hashes = json.loads(row["drawer_ids"]), json.loads(row["chunk_hashes"])
            found = (
                tx.all(f"SELECT id FROM forget_set WHERE id IN ({','.join('?' * len(ids)) or 'NULL'})", ids)
                if ids
                else []
            )
            gone = {r["id"] for r in found}
            ids = ["" if i in gone else i for i in ids]
            hashes = ["" if i == "" else h for i, h in zip(ids, hashes, strict=False)]
            tx.run(
                "UPDATE document SET drawer_ids = ?, chunk_hashes = ? WHERE source_id = ? AND external_id = ?",
                (dumps(ids), dumps(hashes), doc["source_id"], doc["document"]),
            )
