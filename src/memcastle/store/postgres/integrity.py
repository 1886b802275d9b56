"""The full-text index's check on PostgreSQL: a drawer's `search` vector is computed at insert, so one that is empty
while the drawer has words was lost (a restore, a hand edit) and lexical search cannot find the drawer."""

from __future__ import annotations

from memcastle.model.integrity import Finding
from memcastle.store.postgres.fulltext import CONFIG, search_text, token_count
from memcastle.store.sql.integrity import EXAMPLES, IntegrityTables

_MISSING = "FROM drawer d WHERE length(d.search) = 0 AND d.token_count > 0"


class PostgresIntegrity(IntegrityTables):
    def _index_checks(self) -> tuple[str, ...]:
        return ("fts_missing",)

    def _find_index(self, name: str) -> Finding:
        if name != "fts_missing":
            raise KeyError(name)
        count = self._count(f"SELECT COUNT(*) AS n {_MISSING}")
        examples = tuple(str(row["x"]) for row in self._all(f"SELECT d.id AS x {_MISSING} LIMIT {EXAMPLES}"))
        what = "drawers the full-text index lacks (lexical search cannot find them)"
        return Finding(name, what, count, examples, "compute their search vectors again")

    def _fix_index(self, name: str, batch: int) -> int:
        if name != "fts_missing":
            raise KeyError(name)
        with self._write() as tx:
            rows = tx.all(f"SELECT d.seq, d.content {_MISSING} LIMIT ?", (batch,))
            for row in rows:
                words = search_text(row["content"])
                tx.run(
                    f"UPDATE drawer SET search = to_tsvector('{CONFIG}', ?), token_count = ? WHERE seq = ?",
                    (words, token_count(words), row["seq"]),
                )
            return len(rows)
