"""SQLite tables of the knowledge graph and of drawer similarity (mixed into `SQLiteStore`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from memcastle.clock import utc_now
from memcastle.errors import Conflict, NotFound
from memcastle.model import (
    Assertion,
    Drawer,
    DrawerLink,
    Entity,
    EntityHint,
    FactLink,
    GraphWrite,
    normalize_text,
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class GraphTables:
    """Entities, mentions, assertions, fact links, extraction markers, drawer links."""

    def _reader(self) -> sqlite3.Connection:  # provided by SQLiteStore
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
        raise NotImplementedError

    def _drawers_where(self, where: str, params: Sequence[Any], limit: int) -> list[Drawer]:
        raise NotImplementedError

    # --- extraction -----------------------------------------------------------------------------

    def drawers_to_extract(self, extractor: str, limit: int) -> list[Drawer]:
        return self._drawers_where(
            "d.valid_to IS NULL AND NOT EXISTS (SELECT 1 FROM extraction_read x WHERE x.extractor = ? "
            "AND x.drawer_id = d.id)", (extractor,), limit)

    def count_to_extract(self, extractor: str) -> int:
        row = self._reader().execute(
            "SELECT COUNT(*) FROM drawer d WHERE d.valid_to IS NULL AND NOT EXISTS (SELECT 1 FROM extraction_read x "
            "WHERE x.extractor = ? AND x.drawer_id = d.id)", (extractor,)).fetchone()
        return int(row[0])

    def apply_graph(self, write: GraphWrite) -> None:
        """Entities, mentions, facts and links first, then the read markers — in one transaction."""
        with self._write() as conn:
            for entity in write.entities:
                conn.execute("INSERT OR IGNORE INTO entity(id, name, kind, key, aliases, created_at) "
                             "VALUES (?,?,?,?,?,?)",
                             (entity.id, entity.name, entity.kind, entity.key, _dumps(list(entity.aliases)),
                              entity.created_at))
            for entity_id, alias in write.aliases:
                self._add_alias(conn, entity_id, alias)
            conn.executemany("INSERT OR IGNORE INTO entity_hint(entity_id, other_id, kind, reason) VALUES (?,?,?,?)",
                             [(h.entity_id, h.other_id, h.kind, h.reason) for h in write.hints])
            conn.executemany("INSERT OR IGNORE INTO mention(drawer_id, entity_id, spelling) VALUES (?,?,?)",
                             [(m.drawer_id, m.entity_id, m.spelling) for m in write.mentions])
            for assertion in write.assertions:
                self._insert_assertion(conn, assertion)
            for link in write.links:
                self._insert_link(conn, link)
            conn.executemany("INSERT OR IGNORE INTO extraction_read(drawer_id, extractor) VALUES (?,?)",
                             [(d, write.extractor) for d in write.read_drawers])

    def _add_alias(self, conn: sqlite3.Connection, entity_id: str, alias: str) -> None:
        row = conn.execute("SELECT aliases FROM entity WHERE id = ?", (entity_id,)).fetchone()
        if row is None:
            return
        aliases = json.loads(row[0])
        if alias not in aliases:
            aliases.append(alias)
            conn.execute("UPDATE entity SET aliases = ? WHERE id = ?", (_dumps(aliases), entity_id))
        conn.execute("INSERT OR IGNORE INTO entity_alias(entity_id, alias_key) VALUES (?,?)",
                     (entity_id, normalize_text(alias)))

    def _insert_assertion(self, conn: sqlite3.Connection, a: Assertion) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO assertion(id, subject, predicate, object, confidence, valid_from, valid_to, "
            "drawer_id, extractor, job_id, origin, explicit, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (a.id, a.subject, a.predicate, a.object, a.confidence, a.valid_from, a.valid_to, a.drawer_id,
             a.extractor, a.job_id, _dumps(dict(a.origin)) if a.origin else None, int(a.explicit), a.created_at))

    def _insert_link(self, conn: sqlite3.Connection, link: FactLink) -> None:
        # Deterministic ids: a retried request or a replayed job lands on the same record.
        conn.execute("INSERT OR IGNORE INTO fact_link(id, from_id, to_id, kind, origin, reason, at, evidence_drawer) "
                     "VALUES (?,?,?,?,?,?,?,?)",
                     (link.id, link.from_id, link.to_id, link.kind, link.origin, link.reason, link.at,
                      link.evidence_drawer))

    # --- entities -------------------------------------------------------------------------------

    def all_entities(self) -> list[Entity]:
        return [_entity(r) for r in self._reader().execute("SELECT * FROM entity ORDER BY created_at, id")]

    def entity_alias_keys(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for row in self._reader().execute("SELECT alias_key, entity_id FROM entity_alias"):
            found.setdefault(row[0], []).append(row[1])
        return found

    def get_entity(self, entity_id: str) -> Entity:
        row = self._reader().execute("SELECT * FROM entity WHERE id = ?", (entity_id,)).fetchone()
        if row is None:
            raise NotFound(f"no entity {entity_id}")
        return _entity(row)

    def get_entities(self, entity_ids: Sequence[str]) -> dict[str, Entity]:
        found: dict[str, Entity] = {}
        for batch in _chunks(list(dict.fromkeys(entity_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(f"SELECT * FROM entity WHERE id IN ({marks})", tuple(batch)):
                found[row["id"]] = _entity(row)
        return found

    def list_entities(self, name: str | None, kind: str | None, limit: int) -> list[Entity]:
        clauses, params = [], []
        if name:
            clauses.append("(name LIKE ? OR key LIKE ? OR aliases LIKE ?)")
            params.extend([f"%{name}%"] * 3)
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._reader().execute(f"SELECT * FROM entity{where} ORDER BY name, id LIMIT ?", (*params, limit))
        return [_entity(r) for r in rows]

    def entity_mentions(self, entity_id: str, limit: int) -> list[tuple[str, str]]:
        rows = self._reader().execute(
            "SELECT drawer_id, spelling FROM mention WHERE entity_id = ? ORDER BY drawer_id LIMIT ?",
            (entity_id, limit))
        return [(r[0], r[1]) for r in rows]

    def entity_hints(self, entity_id: str) -> list[EntityHint]:
        rows = self._reader().execute(
            "SELECT * FROM entity_hint WHERE entity_id = ? OR other_id = ?", (entity_id, entity_id))
        return [EntityHint(r["entity_id"], r["other_id"], r["kind"], r["reason"]) for r in rows]

    def entities_of_drawers(self, drawer_ids: Sequence[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for batch in _chunks(list(dict.fromkeys(drawer_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(
                f"SELECT drawer_id, entity_id FROM mention WHERE drawer_id IN ({marks})", tuple(batch)
            ):
                found.setdefault(row[0], set()).add(row[1])
        return found

    def drawers_mentioning(self, entity_ids: Sequence[str], limit: int) -> dict[str, set[str]]:
        """drawer id → the given entities it mentions (at most `limit` drawers per entity)."""
        found: dict[str, set[str]] = {}
        for entity_id in dict.fromkeys(entity_ids):
            for row in self._reader().execute(
                "SELECT drawer_id FROM mention WHERE entity_id = ? LIMIT ?", (entity_id, limit)
            ):
                found.setdefault(row[0], set()).add(entity_id)
        return found

    # --- facts ----------------------------------------------------------------------------------

    def get_assertion(self, assertion_id: str) -> Assertion:
        row = self._reader().execute("SELECT * FROM assertion WHERE id = ?", (assertion_id,)).fetchone()
        if row is None:
            raise NotFound(f"no fact {assertion_id}")
        return _assertion(row)

    def get_assertions(self, assertion_ids: Sequence[str]) -> dict[str, Assertion]:
        found: dict[str, Assertion] = {}
        for batch in _chunks(list(dict.fromkeys(assertion_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(f"SELECT * FROM assertion WHERE id IN ({marks})", tuple(batch)):
                found[row["id"]] = _assertion(row)
        return found

    def find_assertions(self, *, subject: str | None = None, predicate: str | None = None,
                        object: str | None = None, drawer_ids: Sequence[str] | None = None,
                        limit: int = 1000) -> list[Assertion]:
        clauses, params = [], []
        for column, value in (("subject", subject), ("predicate", predicate), ("object", object)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if drawer_ids is not None:
            if not drawer_ids:
                return []
            clauses.append(f"drawer_id IN ({','.join('?' * len(drawer_ids))})")
            params.extend(drawer_ids)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._reader().execute(
            f"SELECT * FROM assertion{where} ORDER BY valid_from, id LIMIT ?", (*params, limit))
        return [_assertion(r) for r in rows]

    def assertions_touching(self, entity_ids: Sequence[str], limit: int = 1000) -> list[Assertion]:
        found: dict[str, Assertion] = {}
        for batch in _chunks(list(dict.fromkeys(entity_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(
                f"SELECT * FROM assertion WHERE subject IN ({marks}) OR object IN ({marks}) LIMIT ?",
                (*batch, *batch, limit),
            ):
                found[row["id"]] = _assertion(row)
        return list(found.values())

    def links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        found: dict[str, FactLink] = {}
        for batch in _chunks(list(dict.fromkeys(assertion_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(
                f"SELECT * FROM fact_link WHERE from_id IN ({marks}) OR to_id IN ({marks}) ORDER BY at, id",
                (*batch, *batch),
            ):
                found[row["id"]] = _link(row)
        return sorted(found.values(), key=lambda link: (link.at, link.id))

    def record_decision(self, *, new: Assertion | None = None, close: tuple[str, str] | None = None,
                        links: Sequence[FactLink] = ()) -> None:
        """An explicit operation in one transaction: open a fact, close one (id, at), record links."""
        with self._write() as conn:
            if close is not None:
                fact_id, at = close
                row = conn.execute("SELECT valid_to FROM assertion WHERE id = ?", (fact_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no fact {fact_id}")
                if row[0] is not None:
                    raise Conflict(f"fact {fact_id} was already closed at {row[0]}", existing_id=fact_id)
                conn.execute("UPDATE assertion SET valid_to = ? WHERE id = ?", (at, fact_id))
            if new is not None:
                self._insert_assertion(conn, new)
            for link in links:
                self._insert_link(conn, link)

    def count_facts(self) -> int:
        return int(self._reader().execute("SELECT COUNT(*) FROM assertion").fetchone()[0])

    # --- drawer similarity ----------------------------------------------------------------------

    def add_drawer_links(self, links: Sequence[DrawerLink]) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO drawer_link(from_id, to_id, verdict, similarity, created_at) VALUES (?,?,?,?,?)",
                [(l.from_id, l.to_id, l.verdict, l.similarity, l.created_at or utc_now()) for l in links])

    def drawer_links(self, drawer_id: str) -> list[DrawerLink]:
        rows = self._reader().execute(
            "SELECT * FROM drawer_link WHERE from_id = ? OR to_id = ? ORDER BY created_at", (drawer_id, drawer_id))
        return [DrawerLink(r["from_id"], r["to_id"], r["verdict"], r["similarity"], r["created_at"]) for r in rows]

    def similar_in_room(self, wing: str, room: str, content_hash: str, fingerprint: str,
                        exclude: Sequence[str]) -> list[tuple[str, str]]:
        """Current drawers of the room with the same hash or fingerprint: (drawer id, exact|normalized)."""
        # Two indexed lookups rather than one OR, which would scan the whole room.
        rows = self._reader().execute(
            "WITH place AS (SELECT r.id FROM room r JOIN wing w ON w.id = r.wing_id WHERE w.name = ? AND r.name = ?) "
            "SELECT id, content_hash, seq FROM drawer WHERE room_id = (SELECT id FROM place) AND content_hash = ? "
            "AND valid_to IS NULL UNION SELECT id, content_hash, seq FROM drawer WHERE room_id = (SELECT id FROM place) "
            "AND fingerprint = ? AND valid_to IS NULL ORDER BY seq LIMIT 50",
            (wing, room, content_hash, fingerprint))
        skip = set(exclude)
        return [(r[0], "exact" if r[1] == content_hash else "normalized") for r in rows if r[0] not in skip]

    def add_drawer_bands(self, drawer_id: str, bands: Sequence[int], signature: bytes = b"") -> None:
        with self._write() as conn:
            conn.executemany("INSERT OR IGNORE INTO drawer_band(band, drawer_id) VALUES (?, ?)",
                             [(band, drawer_id) for band in bands])
            if signature:
                conn.execute("INSERT OR REPLACE INTO drawer_signature(drawer_id, signature) VALUES (?, ?)",
                             (drawer_id, signature))

    def drawer_signatures(self, drawer_ids: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for batch in _chunks(list(dict.fromkeys(drawer_ids))):
            marks = ",".join("?" * len(batch))
            for row in self._reader().execute(
                f"SELECT drawer_id, signature FROM drawer_signature WHERE drawer_id IN ({marks})", tuple(batch)
            ):
                found[row[0]] = bytes(row[1])
        return found

    def drawers_sharing_bands(self, bands: Sequence[int], limit: int, *, at_least: int = 1) -> list[str]:
        """Drawers sharing at least `at_least` of these band keys, most shared first (near-duplicate candidates)."""
        if not bands:
            return []
        marks = ",".join("?" * len(bands))
        rows = self._reader().execute(
            f"SELECT drawer_id FROM drawer_band WHERE band IN ({marks}) GROUP BY drawer_id HAVING COUNT(*) >= ? "
            "ORDER BY COUNT(*) DESC, drawer_id LIMIT ?", (*bands, at_least, limit))
        return [r[0] for r in rows]


def _entity(row: sqlite3.Row) -> Entity:
    return Entity(id=row["id"], name=row["name"], kind=row["kind"], key=row["key"],
                  aliases=tuple(json.loads(row["aliases"])), created_at=row["created_at"])


def _assertion(row: sqlite3.Row) -> Assertion:
    return Assertion(
        id=row["id"], subject=row["subject"], predicate=row["predicate"], object=row["object"],
        confidence=float(row["confidence"]), valid_from=row["valid_from"], valid_to=row["valid_to"],
        drawer_id=row["drawer_id"], extractor=row["extractor"], job_id=row["job_id"],
        origin=json.loads(row["origin"]) if row["origin"] else None, explicit=bool(row["explicit"]),
        created_at=row["created_at"],
    )


def _link(row: sqlite3.Row) -> FactLink:
    return FactLink(id=row["id"], from_id=row["from_id"], to_id=row["to_id"], kind=row["kind"], origin=row["origin"],
                    reason=row["reason"], at=row["at"], evidence_drawer=row["evidence_drawer"])
