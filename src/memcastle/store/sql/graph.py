"""The knowledge graph and drawer similarity on either SQL backend: entities, mentions, facts, links, near copies."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from memcastle.errors import Conflict, NotFound
from memcastle.model import (
    Assertion,
    Drawer,
    DrawerLink,
    Entity,
    EntityHint,
    FactLink,
    GraphWrite,
    Mention,
    key_variants,
    normalize_text,
)
from memcastle.store.sql.base import Role, Row, SqlStore, Tx, batches, dumps, marks
from memcastle.store.sql.drawers import DrawerTables
from memcastle.store.sql.rows import (
    assertion_from_row,
    drawer_link_from_row,
    entity_from_row,
    fact_link_from_row,
    hint_from_row,
)

_NOT_READ = "NOT EXISTS (SELECT 1 FROM extraction_read x WHERE x.extractor = ? AND x.drawer_id = d.id)"


class GraphTables(Role):
    """Entities, mentions, assertions, fact links, extraction markers, drawer links and near-duplicate bands."""

    def __init__(self, db: SqlStore, drawers: DrawerTables) -> None:
        super().__init__(db)
        self.drawers = drawers

    def _contains(self, column: str) -> str:
        """`column` contains the bound pattern, ASCII case-insensitively (SQLite's LIKE; PostgreSQL overrides)."""
        return f"{column} LIKE ?"

    # --- extraction -----------------------------------------------------------------------------

    def next_to_extract(self, extractor: str, limit: int, *, after_seq: int) -> tuple[list[Drawer], int]:
        """The next current drawers the extractor has not read, in `seq` order after `after_seq`, and the `seq` to
        continue after. The walk follows the primary key (`NO_INDEX` keeps SQLite off the `valid_to` index, which
        would sort every current drawer), so a batch costs what it reads, not what the palace holds."""
        rows = self._all(
            f"SELECT d.seq, d.id FROM drawer d WHERE d.seq > ? AND {self.NO_INDEX}d.valid_to IS NULL AND {_NOT_READ} "
            "ORDER BY d.seq LIMIT ?",
            (after_seq, extractor, limit),
        )
        if not rows:
            return [], after_seq
        found = self.drawers.get_drawers([r["id"] for r in rows])
        return [found[r["id"]] for r in rows if r["id"] in found], int(rows[-1]["seq"])

    def count_to_extract(self, extractor: str) -> int:
        return self._count(f"SELECT COUNT(*) AS n FROM drawer d WHERE d.valid_to IS NULL AND {_NOT_READ}", (extractor,))

    def _existing(self, tx: Tx, drawer_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for batch in batches(drawer_ids):
            found.update(r["id"] for r in tx.all(f"SELECT id FROM drawer WHERE id IN ({marks(batch)})", batch))
        return found

    def _without_forgotten(self, tx: Tx, write: GraphWrite) -> GraphWrite:
        """The write less what it read from drawers forgotten since it read them: their mentions and facts, and the
        entities, aliases and hints only those taught."""
        cited = [*write.read_drawers, *(m.drawer_id for m in write.mentions)]
        cited += [a.drawer_id for a in write.assertions if a.drawer_id] + [
            lk.evidence_drawer for lk in write.links if lk.evidence_drawer
        ]
        existing = self._existing(tx, cited)
        if existing.issuperset(cited):
            return write
        mentions = tuple(m for m in write.mentions if m.drawer_id in existing)
        assertions = tuple(a for a in write.assertions if a.drawer_id is None or a.drawer_id in existing)
        kept_facts = {a.id for a in assertions}
        dropped_facts = {a.id for a in write.assertions} - kept_facts
        links = tuple(
            dataclasses.replace(lk, evidence_drawer=lk.evidence_drawer if lk.evidence_drawer in existing else None)
            for lk in write.links
            if lk.from_id not in dropped_facts and lk.to_id not in dropped_facts
        )
        used = {m.entity_id for m in mentions} | {e for a in assertions for e in (a.subject, a.object)}
        entities = tuple(e for e in write.entities if e.id in used)
        new = {e.id for e in write.entities}

        def kept(entity_id: str) -> bool:
            return entity_id in used or entity_id not in new

        spellings = {m.spelling for m in mentions}
        return dataclasses.replace(
            write,
            read_drawers=tuple(d for d in write.read_drawers if d in existing),
            entities=entities,
            aliases=tuple((e, alias) for e, alias in write.aliases if alias in spellings and kept(e)),
            hints=tuple(h for h in write.hints if kept(h.entity_id) and kept(h.other_id)),
            mentions=mentions,
            assertions=assertions,
            links=links,
        )

    def apply_graph(self, write: GraphWrite) -> None:
        """Entities, mentions, facts and links first, then the read markers — in one transaction. What was read
        from a drawer forgotten meanwhile is left out."""
        with self._write() as tx:
            write = self._without_forgotten(tx, write)
            tx.many(
                "INSERT INTO entity(id, name, kind, key, aliases, created_at) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT DO NOTHING",
                [(e.id, e.name, e.kind, e.key, dumps(list(e.aliases)), e.created_at) for e in write.entities],
            )
            tx.many(
                "INSERT INTO entity_key_variant(variant, entity_id) VALUES (?,?) ON CONFLICT DO NOTHING",
                [(variant, e.id) for e in write.entities for variant in sorted(key_variants(e.key))],
            )
            for entity_id, alias in write.aliases:
                self._add_alias(tx, entity_id, alias)
            tx.many(
                "INSERT INTO entity_hint(entity_id, other_id, kind, reason) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                [(h.entity_id, h.other_id, h.kind, h.reason) for h in write.hints],
            )
            tx.many(
                "INSERT INTO mention(drawer_id, entity_id, spelling) VALUES (?,?,?) ON CONFLICT DO NOTHING",
                [(m.drawer_id, m.entity_id, m.spelling) for m in write.mentions],
            )
            for assertion in write.assertions:
                self._insert_assertion(tx, assertion)
            for link in write.links:
                self._insert_link(tx, link)
            tx.many(
                "INSERT INTO extraction_read(drawer_id, extractor) VALUES (?,?) ON CONFLICT DO NOTHING",
                [(d, write.extractor) for d in write.read_drawers],
            )

    def _add_alias(self, tx: Tx, entity_id: str, alias: str) -> None:
        row = tx.one(f"SELECT aliases FROM entity WHERE id = ?{self.FOR_UPDATE}", (entity_id,))
        if row is None:
            return
        aliases = json.loads(row["aliases"])
        if alias not in aliases:
            aliases.append(alias)
            tx.run("UPDATE entity SET aliases = ? WHERE id = ?", (dumps(aliases), entity_id))
        tx.run(
            "INSERT INTO entity_alias(entity_id, alias_key) VALUES (?,?) ON CONFLICT DO NOTHING",
            (entity_id, normalize_text(alias)),
        )

    def _insert_assertion(self, tx: Tx, a: Assertion) -> None:
        tx.run(
            "INSERT INTO assertion(id, subject, predicate, object, confidence, valid_from, valid_to, drawer_id, "
            "extractor, job_id, origin, explicit, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT DO NOTHING",
            (
                a.id,
                a.subject,
                a.predicate,
                a.object,
                a.confidence,
                a.valid_from,
                a.valid_to,
                a.drawer_id,
                a.extractor,
                a.job_id,
                dumps(dict(a.origin)) if a.origin else None,
                bool(a.explicit),
                a.created_at,
            ),
        )

    def _insert_link(self, tx: Tx, link: FactLink) -> None:
        # Deterministic ids: a retried request or a replayed job lands on the same record.
        tx.run(
            "INSERT INTO fact_link(id, from_id, to_id, kind, origin, reason, at, evidence_drawer) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            (link.id, link.from_id, link.to_id, link.kind, link.origin, link.reason, link.at, link.evidence_drawer),
        )

    # --- entities -------------------------------------------------------------------------------

    def entities_named(self, name: str, key: str) -> list[Entity]:
        """Entities spelt `name` or with the normalized key `key` (two index lookups)."""
        rows = self._all(
            "SELECT * FROM entity WHERE name = ? UNION ALL SELECT * FROM entity WHERE key = ?", (name, key)
        )
        return list({r["id"]: entity_from_row(r) for r in rows}.values())

    def entities_with_alias(self, key: str) -> list[Entity]:
        rows = self._all(
            "SELECT e.* FROM entity_alias a JOIN entity e ON e.id = a.entity_id WHERE a.alias_key = ?", (key,)
        )
        return [entity_from_row(r) for r in rows]

    def entities_sharing_variants(self, variants: Sequence[str]) -> list[Entity]:
        """Entities with a key variant among `variants`: the candidates for a one-edit match."""
        rows = self._in(
            "SELECT * FROM entity WHERE id IN (SELECT entity_id FROM entity_key_variant WHERE variant IN ({}))",
            sorted(variants),
        )
        return list({r["id"]: entity_from_row(r) for r in rows}.values())

    def get_entity(self, entity_id: str) -> Entity:
        row = self._one("SELECT * FROM entity WHERE id = ?", (entity_id,))
        if row is None:
            raise NotFound(f"no entity {entity_id}")
        return entity_from_row(row)

    def get_entities(self, entity_ids: Sequence[str]) -> dict[str, Entity]:
        return {r["id"]: entity_from_row(r) for r in self._in("SELECT * FROM entity WHERE id IN ({})", entity_ids)}

    def list_entities(self, name: str | None, kind: str | None, limit: int) -> list[Entity]:
        clauses, params = [], []
        if name:
            clauses.append(f"({self._contains('name')} OR {self._contains('key')} OR {self._contains('aliases')})")
            params.extend([f"%{name}%"] * 3)
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._all(f"SELECT * FROM entity{where} ORDER BY name, id LIMIT ?", (*params, limit))
        return [entity_from_row(r) for r in rows]

    def entity_mentions(self, entity_id: str, limit: int) -> list[Mention]:
        rows = self._all(
            "SELECT drawer_id, entity_id, spelling FROM mention WHERE entity_id = ? ORDER BY drawer_id LIMIT ?",
            (entity_id, limit),
        )
        return [Mention(drawer_id=r["drawer_id"], entity_id=r["entity_id"], spelling=r["spelling"]) for r in rows]

    def list_hints(self, limit: int) -> list[EntityHint]:
        """Every hint left for a person (possible duplicates), newest entities first."""
        rows = self._all("SELECT * FROM entity_hint ORDER BY entity_id DESC, other_id LIMIT ?", (limit,))
        return [hint_from_row(r) for r in rows]

    def entity_hints(self, entity_id: str) -> list[EntityHint]:
        rows = self._all("SELECT * FROM entity_hint WHERE entity_id = ? OR other_id = ?", (entity_id, entity_id))
        return [hint_from_row(r) for r in rows]

    def entities_of_drawers(self, drawer_ids: Sequence[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for row in self._in("SELECT drawer_id, entity_id FROM mention WHERE drawer_id IN ({})", drawer_ids):
            found.setdefault(row["drawer_id"], set()).add(row["entity_id"])
        return found

    def drawers_mentioning(self, entity_ids: Sequence[str], limit: int) -> dict[str, set[str]]:
        """drawer id → the given entities it mentions (at most `limit` drawers per entity)."""
        found: dict[str, set[str]] = {}
        with self._read() as tx:
            for entity_id in dict.fromkeys(entity_ids):
                for row in tx.all("SELECT drawer_id FROM mention WHERE entity_id = ? LIMIT ?", (entity_id, limit)):
                    found.setdefault(row["drawer_id"], set()).add(entity_id)
        return found

    def mention_counts(self, entity_ids: Sequence[str], at_most: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._read() as tx:
            for entity_id in dict.fromkeys(entity_ids):
                row = tx.one(
                    "SELECT COUNT(*) AS n FROM (SELECT DISTINCT drawer_id FROM mention WHERE entity_id = ? LIMIT ?) m",
                    (entity_id, at_most),
                )
                counts[entity_id] = int(row["n"]) if row else 0
        return counts

    def _in(self, sql: str, ids: Sequence[str], repeat: int = 1) -> list[Row]:
        """Rows of `sql` whose `{}` placeholders each take one batch of the distinct `ids`, over all batches."""
        rows: list[Row] = []
        with self._read() as tx:
            for batch in batches(ids):
                rows.extend(tx.all(sql.format(*[marks(batch)] * repeat), batch * repeat))
        return rows

    # --- facts ----------------------------------------------------------------------------------

    def get_assertion(self, assertion_id: str) -> Assertion:
        row = self._one("SELECT * FROM assertion WHERE id = ?", (assertion_id,))
        if row is None:
            raise NotFound(f"no fact {assertion_id}")
        return assertion_from_row(row)

    def get_assertions(self, assertion_ids: Sequence[str]) -> dict[str, Assertion]:
        return {
            r["id"]: assertion_from_row(r) for r in self._in("SELECT * FROM assertion WHERE id IN ({})", assertion_ids)
        }

    def find_assertions(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        drawer_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[Assertion]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("subject", subject), ("predicate", predicate), ("object", object)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if drawer_ids is not None:
            if not drawer_ids:
                return []
            clauses.append(f"drawer_id IN ({marks(drawer_ids)})")
            params.extend(drawer_ids)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._all(f"SELECT * FROM assertion{where} ORDER BY valid_from, id LIMIT ?", (*params, limit))
        return [assertion_from_row(r) for r in rows]

    def facts_to_link(
        self, claim: Assertion, *, predecessor_drawer: str | None, rivals: bool, limit: int
    ) -> list[Assertion]:
        """What a new fact may link to, bounded: the newest `limit` facts making the same claim, the facts of the
        drawer its evidence superseded, and (for a single-valued predicate) the newest `limit` open facts of the same
        subject and predicate with another object. Each is an index walk that stops at the limit."""
        rows = list(
            self._all(
                "SELECT * FROM assertion WHERE subject = ? AND predicate = ? AND object = ? "
                "ORDER BY valid_from DESC, id DESC LIMIT ?",
                (claim.subject, claim.predicate, claim.object, limit),
            )
        )
        if predecessor_drawer is not None:
            rows += self._all(
                "SELECT * FROM assertion WHERE drawer_id = ? AND subject = ? AND predicate = ?",
                (predecessor_drawer, claim.subject, claim.predicate),
            )
        if rivals:
            rows += self._all(
                "SELECT * FROM assertion WHERE subject = ? AND predicate = ? AND valid_to IS NULL AND object <> ? "
                "ORDER BY valid_from DESC, id DESC LIMIT ?",
                (claim.subject, claim.predicate, claim.object, limit),
            )
        return list({r["id"]: assertion_from_row(r) for r in rows}.values())

    def assertions_touching(self, entity_ids: Sequence[str], limit: int = 1000) -> list[Assertion]:
        rows = self._in("SELECT * FROM assertion WHERE subject IN ({}) OR object IN ({})", entity_ids, repeat=2)
        return list({r["id"]: assertion_from_row(r) for r in rows}.values())[:limit]

    def explicit_links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        """The links a person decided among those touching `assertion_ids` (inferred ones are not read)."""
        rows = self._in(
            "SELECT * FROM fact_link WHERE origin = 'explicit' AND from_id IN ({}) "
            "UNION ALL SELECT * FROM fact_link WHERE origin = 'explicit' AND to_id IN ({})",
            assertion_ids,
            repeat=2,
        )
        return list({r["id"]: fact_link_from_row(r) for r in rows}.values())

    def links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        rows = self._in("SELECT * FROM fact_link WHERE from_id IN ({}) OR to_id IN ({})", assertion_ids, repeat=2)
        links = {r["id"]: fact_link_from_row(r) for r in rows}
        return sorted(links.values(), key=lambda link: (link.at, link.id))

    def record_decision(
        self, *, new: Assertion | None = None, close: tuple[str, str] | None = None, links: Sequence[FactLink] = ()
    ) -> None:
        """An explicit operation in one transaction: open a fact, close one (id, at), record links."""
        with self._write() as tx:
            if close is not None:
                fact_id, at = close
                row = tx.one(f"SELECT valid_to FROM assertion WHERE id = ?{self.FOR_UPDATE}", (fact_id,))
                if row is None:
                    raise NotFound(f"no fact {fact_id}")
                if row["valid_to"] is not None:
                    raise Conflict(f"fact {fact_id} was already closed at {row['valid_to']}", existing_id=fact_id)
                tx.run("UPDATE assertion SET valid_to = ? WHERE id = ?", (at, fact_id))
            if new is not None:
                self._insert_assertion(tx, new)
            for link in links:
                self._insert_link(tx, link)

    def count_facts(self) -> int:
        return self._count("SELECT COUNT(*) AS n FROM assertion")

    # --- drawer similarity ----------------------------------------------------------------------

    def drawer_links(self, drawer_id: str) -> list[DrawerLink]:
        rows = self._all(
            "SELECT * FROM drawer_link WHERE from_id = ? OR to_id = ? ORDER BY created_at", (drawer_id, drawer_id)
        )
        return [drawer_link_from_row(r) for r in rows]
