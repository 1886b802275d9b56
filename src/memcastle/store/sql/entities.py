"""Entities on either SQL backend: by name, alias or key variant, their mentions in drawers and their hints."""

from __future__ import annotations

from collections.abc import Sequence

from memcastle.errors import NotFound
from memcastle.model import Entity, EntityHint, Mention
from memcastle.store.sql.base import Role
from memcastle.store.sql.rows import entity_from_row, hint_from_row


class EntityTables(Role):
    """`memcastle.store.EntityStore` on SQL."""

    def _contains(self, column: str) -> str:
        """`column` contains the bound pattern, ASCII case-insensitively (SQLite's LIKE; PostgreSQL overrides)."""
        return f"{column} LIKE ?"

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
