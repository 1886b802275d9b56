"""PostgreSQL tables of the knowledge graph and of drawer similarity (mixed into `PostgresStore`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

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

Row = dict[str, Any]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class GraphTables:
    """Entities, mentions, assertions, fact links, extraction markers, drawer links."""

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:  # provided by PostgresStore
        raise NotImplementedError

    def _row(self, sql: str, params: Sequence[Any] = ()) -> Row | None:  # provided by PostgresStore
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[psycopg.Connection[Row]]:  # provided by PostgresStore
        raise NotImplementedError

    def _drawers_where(self, where: str, params: Sequence[Any], limit: int) -> list[Drawer]:
        raise NotImplementedError

    # --- extraction -----------------------------------------------------------------------------

    def drawers_to_extract(self, extractor: str, limit: int) -> list[Drawer]:
        return self._drawers_where(
            "d.valid_to IS NULL AND NOT EXISTS (SELECT 1 FROM extraction_read x WHERE x.extractor = %s "
            "AND x.drawer_id = d.id)", (extractor,), limit)

    def count_to_extract(self, extractor: str) -> int:
        row = self._row(
            "SELECT COUNT(*) AS n FROM drawer d WHERE d.valid_to IS NULL AND NOT EXISTS (SELECT 1 FROM "
            "extraction_read x WHERE x.extractor = %s AND x.drawer_id = d.id)", (extractor,))
        return int(row["n"]) if row else 0

    def apply_graph(self, write: GraphWrite) -> None:
        """Entities, mentions, facts and links first, then the read markers — in one transaction."""
        with self._write() as conn, conn.cursor() as cursor:
            for entity in write.entities:
                cursor.execute("INSERT INTO entity(id, name, kind, key, aliases, created_at) "
                               "VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                               (entity.id, entity.name, entity.kind, entity.key, _dumps(list(entity.aliases)),
                                entity.created_at))
            for entity_id, alias in write.aliases:
                self._add_alias(conn, entity_id, alias)
            if write.hints:
                cursor.executemany(
                    "INSERT INTO entity_hint(entity_id, other_id, kind, reason) VALUES (%s,%s,%s,%s) "
                    "ON CONFLICT DO NOTHING", [(h.entity_id, h.other_id, h.kind, h.reason) for h in write.hints])
            if write.mentions:
                cursor.executemany(
                    "INSERT INTO mention(drawer_id, entity_id, spelling) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING",
                    [(m.drawer_id, m.entity_id, m.spelling) for m in write.mentions])
            for assertion in write.assertions:
                self._insert_assertion(conn, assertion)
            for link in write.links:
                self._insert_link(conn, link)
            if write.read_drawers:
                cursor.executemany(
                    "INSERT INTO extraction_read(drawer_id, extractor) VALUES (%s,%s) ON CONFLICT DO NOTHING",
                    [(d, write.extractor) for d in write.read_drawers])

    def _add_alias(self, conn: psycopg.Connection[Row], entity_id: str, alias: str) -> None:
        row = conn.execute("SELECT aliases FROM entity WHERE id = %s FOR UPDATE", (entity_id,)).fetchone()
        if row is None:
            return
        aliases = list(row["aliases"])
        if alias not in aliases:
            aliases.append(alias)
            conn.execute("UPDATE entity SET aliases = %s WHERE id = %s", (_dumps(aliases), entity_id))
        conn.execute("INSERT INTO entity_alias(entity_id, alias_key) VALUES (%s,%s) ON CONFLICT DO NOTHING",
                     (entity_id, normalize_text(alias)))

    def _insert_assertion(self, conn: psycopg.Connection[Row], a: Assertion) -> None:
        conn.execute(
            "INSERT INTO assertion(id, subject, predicate, object, confidence, valid_from, valid_to, drawer_id, "
            "extractor, job_id, origin, explicit, created_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT DO NOTHING",
            (a.id, a.subject, a.predicate, a.object, a.confidence, a.valid_from, a.valid_to, a.drawer_id,
             a.extractor, a.job_id, _dumps(dict(a.origin)) if a.origin else None, bool(a.explicit), a.created_at))

    def _insert_link(self, conn: psycopg.Connection[Row], link: FactLink) -> None:
        # Deterministic ids: a retried request or a replayed job lands on the same record.
        conn.execute("INSERT INTO fact_link(id, from_id, to_id, kind, origin, reason, at, evidence_drawer) "
                     "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                     (link.id, link.from_id, link.to_id, link.kind, link.origin, link.reason, link.at,
                      link.evidence_drawer))

    # --- entities -------------------------------------------------------------------------------

    def all_entities(self) -> list[Entity]:
        return [_entity(r) for r in self._rows("SELECT * FROM entity ORDER BY created_at, id")]

    def entity_alias_keys(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for row in self._rows("SELECT alias_key, entity_id FROM entity_alias"):
            found.setdefault(row["alias_key"], []).append(row["entity_id"])
        return found

    def get_entity(self, entity_id: str) -> Entity:
        row = self._row("SELECT * FROM entity WHERE id = %s", (entity_id,))
        if row is None:
            raise NotFound(f"no entity {entity_id}")
        return _entity(row)

    def get_entities(self, entity_ids: Sequence[str]) -> dict[str, Entity]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}
        return {r["id"]: _entity(r) for r in self._rows("SELECT * FROM entity WHERE id = ANY(%s)", (ids,))}

    def list_entities(self, name: str | None, kind: str | None, limit: int) -> list[Entity]:
        clauses: list[str] = []
        params: list[Any] = []
        if name:
            # As SQLite's LIKE: ASCII case-insensitive, no escape character, matched against the aliases' JSON too.
            clauses.append("(name ILIKE %s ESCAPE '' OR key ILIKE %s ESCAPE '' OR aliases::text ILIKE %s ESCAPE '')")
            params.extend([f"%{name}%"] * 3)
        if kind:
            clauses.append("kind = %s")
            params.append(kind)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(f"SELECT * FROM entity{where} ORDER BY name, id LIMIT %s", (*params, limit))
        return [_entity(r) for r in rows]

    def entity_mentions(self, entity_id: str, limit: int) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT drawer_id, spelling FROM mention WHERE entity_id = %s ORDER BY drawer_id LIMIT %s",
            (entity_id, limit))
        return [(r["drawer_id"], r["spelling"]) for r in rows]

    def entity_hints(self, entity_id: str) -> list[EntityHint]:
        rows = self._rows("SELECT * FROM entity_hint WHERE entity_id = %s OR other_id = %s", (entity_id, entity_id))
        return [EntityHint(r["entity_id"], r["other_id"], r["kind"], r["reason"]) for r in rows]

    def entities_of_drawers(self, drawer_ids: Sequence[str]) -> dict[str, set[str]]:
        ids = list(dict.fromkeys(drawer_ids))
        found: dict[str, set[str]] = {}
        if not ids:
            return found
        for row in self._rows("SELECT drawer_id, entity_id FROM mention WHERE drawer_id = ANY(%s)", (ids,)):
            found.setdefault(row["drawer_id"], set()).add(row["entity_id"])
        return found

    def drawers_mentioning(self, entity_ids: Sequence[str], limit: int) -> dict[str, set[str]]:
        """drawer id → the given entities it mentions (at most `limit` drawers per entity)."""
        ids = list(dict.fromkeys(entity_ids))
        found: dict[str, set[str]] = {}
        if not ids:
            return found
        rows = self._rows(
            "SELECT e.entity_id, m.drawer_id FROM unnest(%s::text[]) AS e(entity_id) "
            "CROSS JOIN LATERAL (SELECT drawer_id FROM mention WHERE entity_id = e.entity_id LIMIT %s) AS m",
            (ids, limit))
        for row in rows:
            found.setdefault(row["drawer_id"], set()).add(row["entity_id"])
        return found

    # --- facts ----------------------------------------------------------------------------------

    def get_assertion(self, assertion_id: str) -> Assertion:
        row = self._row("SELECT * FROM assertion WHERE id = %s", (assertion_id,))
        if row is None:
            raise NotFound(f"no fact {assertion_id}")
        return _assertion(row)

    def get_assertions(self, assertion_ids: Sequence[str]) -> dict[str, Assertion]:
        ids = list(dict.fromkeys(assertion_ids))
        if not ids:
            return {}
        return {r["id"]: _assertion(r) for r in self._rows("SELECT * FROM assertion WHERE id = ANY(%s)", (ids,))}

    def find_assertions(self, *, subject: str | None = None, predicate: str | None = None,
                        object: str | None = None, drawer_ids: Sequence[str] | None = None,
                        limit: int = 1000) -> list[Assertion]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("subject", subject), ("predicate", predicate), ("object", object)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        if drawer_ids is not None:
            if not drawer_ids:
                return []
            clauses.append("drawer_id = ANY(%s)")
            params.append(list(drawer_ids))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(f"SELECT * FROM assertion{where} ORDER BY valid_from, id LIMIT %s", (*params, limit))
        return [_assertion(r) for r in rows]

    def assertions_touching(self, entity_ids: Sequence[str], limit: int = 1000) -> list[Assertion]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        rows = self._rows("SELECT * FROM assertion WHERE subject = ANY(%s) OR object = ANY(%s) LIMIT %s",
                          (ids, ids, limit))
        return [_assertion(r) for r in rows]

    def links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        ids = list(dict.fromkeys(assertion_ids))
        if not ids:
            return []
        rows = self._rows("SELECT * FROM fact_link WHERE from_id = ANY(%s) OR to_id = ANY(%s) ORDER BY at, id",
                          (ids, ids))
        return [_link(r) for r in rows]

    def record_decision(self, *, new: Assertion | None = None, close: tuple[str, str] | None = None,
                        links: Sequence[FactLink] = ()) -> None:
        """An explicit operation in one transaction: open a fact, close one (id, at), record links."""
        with self._write() as conn:
            if close is not None:
                fact_id, at = close
                row = conn.execute("SELECT valid_to FROM assertion WHERE id = %s FOR UPDATE", (fact_id,)).fetchone()
                if row is None:
                    raise NotFound(f"no fact {fact_id}")
                if row["valid_to"] is not None:
                    raise Conflict(f"fact {fact_id} was already closed at {row['valid_to']}", existing_id=fact_id)
                conn.execute("UPDATE assertion SET valid_to = %s WHERE id = %s", (at, fact_id))
            if new is not None:
                self._insert_assertion(conn, new)
            for link in links:
                self._insert_link(conn, link)

    def count_facts(self) -> int:
        row = self._row("SELECT COUNT(*) AS n FROM assertion")
        return int(row["n"]) if row else 0

    # --- drawer similarity ----------------------------------------------------------------------

    def add_drawer_links(self, links: Sequence[DrawerLink]) -> None:
        if not links:
            return
        with self._write() as conn, conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO drawer_link(from_id, to_id, verdict, similarity, created_at) VALUES (%s,%s,%s,%s,%s) "
                "ON CONFLICT DO NOTHING",
                [(link.from_id, link.to_id, link.verdict, link.similarity, link.created_at or utc_now())
                 for link in links])

    def drawer_links(self, drawer_id: str) -> list[DrawerLink]:
        rows = self._rows("SELECT * FROM drawer_link WHERE from_id = %s OR to_id = %s ORDER BY created_at",
                          (drawer_id, drawer_id))
        return [DrawerLink(r["from_id"], r["to_id"], r["verdict"], r["similarity"], r["created_at"]) for r in rows]

    def similar_in_room(self, wing: str, room: str, content_hash: str, fingerprint: str,
                        exclude: Sequence[str]) -> list[tuple[str, str]]:
        """Current drawers of the room with the same hash or fingerprint: (drawer id, exact|normalized)."""
        rows = self._rows(
            "SELECT d.id, d.content_hash FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            "WHERE w.name = %s AND r.name = %s AND d.valid_to IS NULL AND (d.content_hash = %s OR d.fingerprint = %s) "
            "ORDER BY d.seq LIMIT 50",
            (wing, room, content_hash, fingerprint))
        skip = set(exclude)
        return [(r["id"], "exact" if r["content_hash"] == content_hash else "normalized")
                for r in rows if r["id"] not in skip]

    def add_drawer_bands(self, drawer_id: str, bands: Sequence[int], signature: bytes = b"") -> None:
        if not bands:
            return
        with self._write() as conn, conn.cursor() as cursor:
            cursor.executemany("INSERT INTO drawer_band(band, drawer_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               [(band, drawer_id) for band in bands])
            if signature:
                cursor.execute("INSERT INTO drawer_signature(drawer_id, signature) VALUES (%s, %s) "
                               "ON CONFLICT (drawer_id) DO UPDATE SET signature = EXCLUDED.signature",
                               (drawer_id, signature))

    def drawer_signatures(self, drawer_ids: Sequence[str]) -> dict[str, bytes]:
        ids = list(dict.fromkeys(drawer_ids))
        if not ids:
            return {}
        rows = self._rows("SELECT drawer_id, signature FROM drawer_signature WHERE drawer_id = ANY(%s)", (ids,))
        return {r["drawer_id"]: bytes(r["signature"]) for r in rows}

    def drawers_sharing_bands(self, bands: Sequence[int], limit: int, *, at_least: int = 1) -> list[str]:
        """Drawers sharing at least `at_least` of these band keys, most shared first (near-duplicate candidates)."""
        if not bands:
            return []
        rows = self._rows("SELECT drawer_id FROM drawer_band WHERE band = ANY(%s) GROUP BY drawer_id "
                          "HAVING COUNT(*) >= %s ORDER BY COUNT(*) DESC, drawer_id LIMIT %s",
                          (list(bands), at_least, limit))
        return [r["drawer_id"] for r in rows]


def _entity(row: Row) -> Entity:
    return Entity(id=row["id"], name=row["name"], kind=row["kind"], key=row["key"],
                  aliases=tuple(row["aliases"]), created_at=row["created_at"])


def _assertion(row: Row) -> Assertion:
    return Assertion(
        id=row["id"], subject=row["subject"], predicate=row["predicate"], object=row["object"],
        confidence=float(row["confidence"]), valid_from=row["valid_from"], valid_to=row["valid_to"],
        drawer_id=row["drawer_id"], extractor=row["extractor"], job_id=row["job_id"],
        origin=row["origin"] if row["origin"] else None, explicit=bool(row["explicit"]),
        created_at=row["created_at"],
    )


def _link(row: Row) -> FactLink:
    return FactLink(id=row["id"], from_id=row["from_id"], to_id=row["to_id"], kind=row["kind"], origin=row["origin"],
                    reason=row["reason"], at=row["at"], evidence_drawer=row["evidence_drawer"])
