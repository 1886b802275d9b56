"""The palace audit's checks on the store, and their repairs (`memcastle audit`, `memcastle repair`).

Each check is a query for rows that break a rule the code relies on — a vector, tag or mention whose drawer is gone,
a link to a drawer or fact that is not there, a drawer the full-text index lacks — and a repair that fixes a batch of
them at a time, so a repair job checkpoints between batches and a crash resumes it. A repair only removes what
points at nothing, or indexes again what the index lacks; it never deletes a drawer or a fact.

The row checks are the same SQL on both backends; the full-text index is each backend's own (FTS5's per-row
`drawer_fts_docsize` on SQLite, the `search` column on PostgreSQL), so those checks are the backends'.
"""

from __future__ import annotations

from dataclasses import dataclass

from memcastle.model.integrity import Finding
from memcastle.store.sql.base import Role

EXAMPLES = 5


@dataclass(frozen=True)
class RowCheck:
    """`where` selects the bad rows (`FROM … WHERE …`, aliased); `example` names one; `fix` repairs up to `?` of
    them (its `{bad}` is replaced by `SELECT <key> {where} LIMIT ?`)."""

    name: str
    what: str
    where: str
    example: str
    key: str
    fix: str | None
    repair: str | None


_NO_DRAWER_SEQ = "NOT EXISTS (SELECT 1 FROM drawer d WHERE d.seq = {alias}.drawer_seq)"

ROW_CHECKS: tuple[RowCheck, ...] = (
    RowCheck(
        "orphan_vectors",
        "stored vectors whose drawer no longer exists",
        "FROM embedding e WHERE " + _NO_DRAWER_SEQ.format(alias="e"),
        "'vector ' || e.id || ' (drawer seq ' || e.drawer_seq || ', model ' || e.model || ')'",
        "e.id",
        "DELETE FROM embedding WHERE id IN ({bad})",
        "delete the vectors",
    ),
    RowCheck(
        "orphan_vector_marks",
        "'embedded' marks whose drawer no longer exists",
        "FROM embedded e WHERE " + _NO_DRAWER_SEQ.format(alias="e"),
        "'drawer seq ' || e.drawer_seq || ' (model ' || e.model || ')'",
        "e.model, e.drawer_seq",
        "DELETE FROM embedded WHERE (model, drawer_seq) IN ({bad})",
        "delete the marks",
    ),
    RowCheck(
        "orphan_tags",
        "tags whose drawer no longer exists",
        "FROM drawer_tag t WHERE " + _NO_DRAWER_SEQ.format(alias="t"),
        "'tag ' || t.tag || ' (drawer seq ' || t.drawer_seq || ')'",
        "t.tag, t.drawer_seq",
        "DELETE FROM drawer_tag WHERE (tag, drawer_seq) IN ({bad})",
        "delete the tags",
    ),
    RowCheck(
        "orphan_mentions",
        "entity mentions whose drawer or entity no longer exists",
        "FROM mention m WHERE NOT EXISTS (SELECT 1 FROM drawer d WHERE d.id = m.drawer_id) "
        "OR NOT EXISTS (SELECT 1 FROM entity n WHERE n.id = m.entity_id)",
        "m.spelling || ' in drawer ' || m.drawer_id",
        "m.drawer_id, m.entity_id, m.spelling",
        "DELETE FROM mention WHERE (drawer_id, entity_id, spelling) IN ({bad})",
        "delete the mentions",
    ),
    RowCheck(
        "dangling_supersession",
        "drawers whose supersedes / superseded_by names a drawer that does not exist",
        "FROM drawer d WHERE (d.supersedes IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM drawer o WHERE o.id = d.supersedes)) OR (d.superseded_by IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM drawer o WHERE o.id = d.superseded_by))",
        "d.id",
        "d.seq",
        "UPDATE drawer SET "
        "supersedes = CASE WHEN EXISTS (SELECT 1 FROM drawer o WHERE o.id = drawer.supersedes) "
        "THEN supersedes END, "
        "superseded_by = CASE WHEN EXISTS (SELECT 1 FROM drawer o WHERE o.id = drawer.superseded_by) "
        "THEN superseded_by END "
        "WHERE seq IN ({bad})",
        "clear the link to the missing drawer (the drawer and its other versions stay)",
    ),
    RowCheck(
        "dangling_drawer_links",
        "similarity links from or to a drawer that does not exist",
        "FROM drawer_link l WHERE NOT EXISTS (SELECT 1 FROM drawer d WHERE d.id = l.from_id) "
        "OR NOT EXISTS (SELECT 1 FROM drawer d WHERE d.id = l.to_id)",
        "l.from_id || ' → ' || l.to_id",
        "l.from_id, l.to_id",
        "DELETE FROM drawer_link WHERE (from_id, to_id) IN ({bad})",
        "delete the links",
    ),
    RowCheck(
        "dangling_fact_links",
        "fact links (agreement, conflict, supersession) from or to a fact that does not exist",
        "FROM fact_link f WHERE NOT EXISTS (SELECT 1 FROM assertion a WHERE a.id = f.from_id) "
        "OR NOT EXISTS (SELECT 1 FROM assertion a WHERE a.id = f.to_id)",
        "f.kind || ' ' || f.from_id || ' → ' || f.to_id",
        "f.id",
        "DELETE FROM fact_link WHERE id IN ({bad})",
        "delete the links",
    ),
    RowCheck(
        "facts_without_evidence",
        "facts whose evidence drawer does not exist",
        "FROM assertion a WHERE a.drawer_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM drawer d WHERE d.id = a.drawer_id)",
        "a.id || ' (drawer ' || a.drawer_id || ')'",
        "a.id",
        None,
        None,
    ),
)
CHECKS = {check.name: check for check in ROW_CHECKS}


class IntegrityTables(Role):
    """The checks every SQL backend shares; a backend adds its full-text index's (`fts_missing`, `fts_extra`)."""

    def check_names(self) -> list[str]:
        return [check.name for check in ROW_CHECKS] + list(self._index_checks())

    def _index_checks(self) -> tuple[str, ...]:
        return ()

    def find(self, name: str) -> Finding:
        """How many rows break the check `name`, with a few examples."""
        check = CHECKS.get(name)
        if check is None:
            return self._find_index(name)
        count = self._count(f"SELECT COUNT(*) AS n {check.where}")
        examples = [row["x"] for row in self._all(f"SELECT {check.example} AS x {check.where} LIMIT {EXAMPLES}")]
        return Finding(check.name, check.what, count, tuple(str(x) for x in examples), check.repair)

    def fix(self, name: str, batch: int) -> int:
        """Repair up to `batch` rows the check `name` finds, in one transaction; how many (0 when none are left or
        the check has no repair)."""
        check = CHECKS.get(name)
        if check is None:
            return self._fix_index(name, batch)
        if check.fix is None:
            return 0
        with self._write() as tx:
            return tx.run(check.fix.format(bad=f"SELECT {check.key} {check.where} LIMIT ?"), (batch,))

    def without_vectors(self, model: str) -> tuple[int, list[str]]:
        """Drawers no vector of `model` was stored for, counted one by one (the embed sweep's own count subtracts
        totals, which a leftover mark of a gone drawer would hide), and a few of their ids."""
        where = "FROM drawer d WHERE NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = ? AND e.drawer_seq = d.seq)"
        count = self._count(f"SELECT COUNT(*) AS n {where}", (model,))
        examples = [row["id"] for row in self._all(f"SELECT d.id {where} ORDER BY d.seq LIMIT {EXAMPLES}", (model,))]
        return count, examples

    def _find_index(self, name: str) -> Finding:
        raise KeyError(name)

    def _fix_index(self, name: str, batch: int) -> int:
        raise KeyError(name)
