"""The full-text index's checks on SQLite: FTS5 keeps one `drawer_fts_docsize` row per indexed drawer, so a drawer
without one is missing from the index, and a row without a drawer is left over in it."""

from __future__ import annotations

from memcastle.model.integrity import Finding
from memcastle.model.scripts import index_text
from memcastle.store.sql.integrity import EXAMPLES, IntegrityTables

_MISSING = "FROM drawer d WHERE NOT EXISTS (SELECT 1 FROM drawer_fts_docsize s WHERE s.id = d.seq)"
_EXTRA = "FROM drawer_fts_docsize s WHERE NOT EXISTS (SELECT 1 FROM drawer d WHERE d.seq = s.id)"


class SQLiteIntegrity(IntegrityTables):
    def _index_checks(self) -> tuple[str, ...]:
        return ("fts_missing", "fts_extra")

    def _find_index(self, name: str) -> Finding:
        if name == "fts_missing":
            where, example, what = (
                _MISSING,
                "d.id",
                "drawers the full-text index lacks (lexical search cannot find them)",
            )
            repair = "index them again (as stored drawers are indexed: scripts without spaces a character at a time)"
        elif name == "fts_extra":
            where, example, what = _EXTRA, "'index row ' || s.id", "full-text index rows of drawers that do not exist"
            repair = "rebuild the full-text index from the drawers, then index scripts without spaces again"
        else:
            raise KeyError(name)
        count = self._count(f"SELECT COUNT(*) AS n {where}")
        examples = tuple(str(row["x"]) for row in self._all(f"SELECT {example} AS x {where} LIMIT {EXAMPLES}"))
        return Finding(name, what, count, examples, repair)

    def _fix_index(self, name: str, batch: int) -> int:
        from memcastle.store.sqlite import rescan

        with self._write() as tx:
            if name == "fts_missing":
                rows = tx.all(
                    "SELECT d.seq, d.content, coalesce((SELECT c.context FROM drawer_context c WHERE c.seq = d.seq), "
                    f"'') AS context {_MISSING} LIMIT ?",
                    (batch,),
                )
                for row in rows:
                    tx.run(
                        "INSERT INTO drawer_fts(rowid, content, context) VALUES (?, ?, ?)",
                        (row["seq"], index_text(row["content"]), row["context"]),
                    )
                return len(rows)
            if name != "fts_extra":
                raise KeyError(name)
            left = tx.one(f"SELECT COUNT(*) AS n {_EXTRA}")
            if not left or not left["n"]:
                return 0
            # An external-content row can only be deleted with the text it was indexed from, which is gone: the
            # index is rebuilt from the drawers instead, then the rescan of migration 16 spaces what needs it.
            tx.run("INSERT INTO drawer_fts(drawer_fts) VALUES ('rebuild')")
            tx.run("DELETE FROM drawer_fts_rescan")
            tx.run("INSERT INTO drawer_fts_rescan(after_seq) VALUES (0)")
            rescan(tx)
            return int(left["n"])
