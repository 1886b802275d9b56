"""A drawer's neighbours' words on PostgreSQL (ADR 0056): a `drawer_context` row with its own full-text vector and
length, beside the drawer's (`memcastle.store.sql.neighbours.ContextRows`)."""

from __future__ import annotations

from collections.abc import Iterable

from memcastle.store.postgres.fulltext import CONFIG, search_text, token_count
from memcastle.store.sql.base import Tx
from memcastle.store.sql.neighbours import Context


class PostgresContextRows:
    """The drawer's own vector never changes; its context is a row of its own, written and deleted whole."""

    def index(self, tx: Tx, seq: int, context: Context | None, *, fresh: bool) -> None:
        if context is None or (not context.text and context.before is None and context.after is None):
            return
        words = search_text(context.text)
        tx.run(
            "INSERT INTO drawer_context(seq, before_seq, after_seq, context, token_count, search) "
            f"VALUES (?, ?, ?, ?, ?, to_tsvector('{CONFIG}', ?))",
            (seq, context.before, context.after, context.text, token_count(words), words),
        )

    def unindex(self, tx: Tx, seqs: Iterable[int]) -> None:
        seqs = list(seqs)
        if seqs:
            tx.run(f"DELETE FROM drawer_context WHERE seq IN ({','.join('?' * len(seqs))})", seqs)


CONTEXT_ROWS = PostgresContextRows()
