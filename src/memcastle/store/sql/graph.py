"""The knowledge graph as extraction writes it, on either SQL backend: which drawers an extractor has still to read,
and one batch's entities, mentions, facts and links written together (`apply_graph`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from memcastle.model import (
    Drawer,
    GraphWrite,
    key_variants,
    normalize_text,
)
from memcastle.store.sql.base import Role, SqlStore, Tx, batches, dumps, marks
from memcastle.store.sql.drawers import DrawerTables
from memcastle.store.sql.facts import insert_assertion, insert_link

_NOT_READ = "NOT EXISTS (SELECT 1 FROM extraction_read x WHERE x.extractor = ? AND x.drawer_id = d.id)"


class GraphTables(Role):
    """The extraction's walk over unread drawers and its graph writes."""

    def __init__(self, db: SqlStore, drawers: DrawerTables) -> None:
        super().__init__(db)
        self.drawers = drawers

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
                insert_assertion(tx, assertion)
            for link in write.links:
                insert_link(tx, link)
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
