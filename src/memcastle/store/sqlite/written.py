"""Full-text rows on SQLite: a drawer is indexed when the transaction that writes it commits, its text as the index
holds it (`index_text`: scripts without spaces a character at a time) and its neighbours' words (ADR 0056)."""

from __future__ import annotations

from collections.abc import Iterable

from memcastle.model.scripts import index_text
from memcastle.store.sql.base import Tx
from memcastle.store.sql.neighbours import Context


class SQLiteContextRows:
    """FTS5 deletes an external-content row only when told the words it indexed: a drawer whose context changes is
    taken out whole and indexed again (`memcastle.store.sql.neighbours.ContextRows`)."""

    def index(self, tx: Tx, seq: int, context: Context | None, *, fresh: bool) -> None:
        row = tx.one("SELECT content FROM drawer WHERE seq = ?", (seq,))
        if row is None:
            return
        text = context.text if context is not None else ""
        tx.run(
            "INSERT INTO drawer_fts(rowid, content, context) VALUES (?, ?, ?)", (seq, index_text(row["content"]), text)
        )
        if context is not None and (text or context.before is not None or context.after is not None):
            tx.run(
                "INSERT INTO drawer_context(seq, before_seq, after_seq, context) VALUES (?, ?, ?, ?)",
                (seq, context.before, context.after, text),
            )

    def unindex(self, tx: Tx, seqs: Iterable[int]) -> None:
        for seq in seqs:
            row = tx.one(
                "SELECT d.content, coalesce(c.context, '') AS context FROM drawer d "
                "LEFT JOIN drawer_context c ON c.seq = d.seq WHERE d.seq = ?",
                (seq,),
            )
            if row is None:
                continue
            tx.run(
                "INSERT INTO drawer_fts(drawer_fts, rowid, content, context) VALUES ('delete', ?, ?, ?)",
                (seq, index_text(row["content"]), row["context"]),
            )
            tx.run("DELETE FROM drawer_context WHERE seq = ?", (seq,))


CONTEXT_ROWS = SQLiteContextRows()
